"""The differentiation API against JAX's semantics: grad and value_and_grad (argnums, has_aux, holomorphic,
allow_int, pytrees), vjp, jvp, linearize, jacfwd/jacrev/hessian, custom_jvp, custom_vjp, checkpoint,
stop_gradient, their errors, their composition with jit and Python control flow, and trace caching.

Oracles: derivatives written out in NumPy (float64), central finite differences in float64 for the
Jacobians and Hessians, and numbers and error messages recorded from JAX 0.10 where the semantics are
JAX's own (complex conventions, ``float0``, user rules applied at every order).
"""

import collections
import functools
import sys

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax, tree_util
from srcjax.test_util import check_grads

FLOAT0 = np.dtype([("float0", "V")])
X = np.array([1.0, 2.0, 3.0], np.float32)
Y = np.array([4.0, 5.0, 6.0], np.float32)


def close(got, want, rtol=1e-5, atol=1e-6):
    """Same pytree structure, leaves equal to float32 precision (``want`` in float64)."""
    assert tree_util.tree_structure(got) == tree_util.tree_structure(want), (got, want)
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def dtype_of(x):
    return np.asarray(x).dtype


# -- grad: argnums -------------------------------------------------------------------------------------------------
def _f_xy(x, y):
    return jnp.sum(x * y**2)


# d/dx sum(x y^2) = y^2, d/dy = 2 x y
ARGNUMS = [
    (0, Y.astype(float) ** 2),
    (1, 2 * X.astype(float) * Y),
    (-1, 2 * X.astype(float) * Y),
    (-2, Y.astype(float) ** 2),
    ((0, 1), (Y.astype(float) ** 2, 2 * X.astype(float) * Y)),
    ((1, 0), (2 * X.astype(float) * Y, Y.astype(float) ** 2)),
    ([1], (2 * X.astype(float) * Y,)),
    ((-1,), (2 * X.astype(float) * Y,)),
]


@pytest.mark.parametrize("argnums, want", ARGNUMS, ids=[str(a) for a, _ in ARGNUMS])
def test_grad_argnums(argnums, want):
    close(srcjax.grad(_f_xy, argnums)(X, Y), want)
    value, g = srcjax.value_and_grad(_f_xy, argnums)(X, Y)
    close(value, np.sum(X * Y.astype(float) ** 2))
    close(g, want)


def test_grad_python_scalars_keyword_arguments_and_static_arguments():
    # keyword arguments are never differentiated; non-array arguments pass through as Python values
    assert float(srcjax.grad(lambda x, y: x * y)(2.0, y=3.0)) == 3.0
    assert float(srcjax.grad(lambda x, mode: x * 2 if mode == "a" else x * 3)(2.0, "b")) == 3.0
    assert float(srcjax.grad(lambda x, d: x * len(d))(2.0, {1, 2})) == 2.0  # an unhashable argument
    assert float(srcjax.grad(lambda x, n: x**n)(2.0, 3)) == 12.0  # an integer argument not differentiated
    g = srcjax.grad(lambda x: x * x)(np.float16(3.0))
    assert dtype_of(g) == np.float16 and float(g) == 6.0
    g = srcjax.grad(lambda x: jnp.sum(x))(jnp.zeros((0,)))
    assert g.shape == (0,) and g.dtype == np.float32
    assert float(srcjax.grad(lambda x: 2.0)(3.0)) == 0.0  # an output that does not depend on the input
    close(srcjax.grad(lambda x, y: jnp.sum(y))(X, 2.0), np.zeros(3))


def test_gradient_of_a_weak_input_is_weak():
    # JAX keeps the input's type: a Python float's gradient is a weakly typed float32
    assert srcjax.grad(lambda x: x * x)(3.0).weak_type
    assert not srcjax.grad(lambda x: x * x)(np.float32(3.0)).weak_type
    assert srcjax.jvp(lambda x: x * 2.0, (2.0,), (1.0,))[1].weak_type
    # jacfwd's blocks have the output's type, jacrev's the input's, so hessian's of a weak scalar is weak; and a
    # weak primal's transpose is weak (JAX 0.10.2's, recorded)
    cube = lambda x: x ** 3  # noqa: E731
    for jac in (srcjax.jacfwd, srcjax.jacrev, srcjax.hessian):
        assert jac(cube)(2.0).weak_type and not jac(cube)(np.float32(2.0)).weak_type, jac
    assert not srcjax.jacfwd(lambda x: x * np.float32(2.0))(2.0).weak_type  # (a strong output)
    assert srcjax.jacrev(lambda x: x * np.float32(2.0))(2.0).weak_type  # (a weak input)
    (t,) = srcjax.linear_transpose(lambda x: 3 * x, 1.0)(2.0)
    assert t.weak_type and float(t) == 6.0
    assert not srcjax.linear_transpose(lambda x: 3 * x, np.float32(1.0))(np.float32(2.0))[0].weak_type


# -- grad: has_aux -------------------------------------------------------------------------------------------------
def test_has_aux_returns_auxiliary_data_without_differentiating_it():
    def loss(w):
        pred = jnp.tanh(w)
        return jnp.sum(pred**2), {"pred": pred, "count": 3}

    g, aux = srcjax.grad(loss, has_aux=True)(X)
    t = np.tanh(X.astype(float))
    close(g, 2 * t * (1 - t**2))
    close(aux, {"pred": t, "count": 3})
    (value, aux2), g2 = srcjax.value_and_grad(loss, has_aux=True)(X)
    close(value, np.sum(t**2))
    close((aux2, g2), (aux, g))
    # a list pair is accepted, as in JAX
    g, aux = srcjax.grad(lambda x: [x * x, x], has_aux=True)(1.0)
    assert (float(g), float(aux)) == (2.0, 1.0)


def test_aux_output_is_differentiated_by_an_outer_transformation():
    # has_aux keeps the auxiliary data out of this derivative only: a transformation of the result sees it as
    # any other output (JAX: d aux / dx = x cos x + sin x here; srcjax gave zeros in reverse mode)
    def loss(x):
        aux = jnp.sin(x) * x
        return jnp.sum(aux * jnp.cos(x)), aux

    x = X / 4
    want = x * np.cos(x.astype(float)) + np.sin(x.astype(float))
    close(srcjax.grad(lambda x: jnp.sum(srcjax.grad(loss, has_aux=True)(x)[1]))(x), want)
    close(srcjax.jacrev(lambda x: srcjax.value_and_grad(loss, has_aux=True)(x)[0][1])(x), np.diag(want))
    ones = np.ones(3, np.float32)
    for inner in (srcjax.grad, srcjax.jacrev, srcjax.jacfwd):
        tangent = srcjax.jvp(lambda x, inner=inner: inner(loss, has_aux=True)(x)[1], (x,), (ones,))[1]
        close(tangent, want)
    close(srcjax.vjp(lambda x: srcjax.vjp(loss, x, has_aux=True)[2], x)[1](ones), (want,))


# -- grad: complex numbers -------------------------------------------------------------------------------------
Z = np.array([1 + 1j, 2 - 0.5j], np.complex64)


def test_holomorphic_grad_is_the_complex_derivative():
    # f(z) = (1 + 2j) z^2: f'(z) = 2 (1 + 2j) z
    g = srcjax.grad(lambda z: jnp.sum(z * z * (1 + 2j)), holomorphic=True)(Z)
    assert dtype_of(g) == np.complex64
    close(g, 2 * (1 + 2j) * Z.astype(complex))
    assert complex(srcjax.grad(lambda z: z * z, holomorphic=True)(np.complex64(1 + 2j))) == 2 + 4j  # recorded


def test_grad_of_a_real_function_of_complex_inputs_is_conjugated():
    # JAX's convention: grad f = df/dx - i df/dy; for f = |z|^2 that is 2 conj(z) (recorded: [2-2j, 4+1j])
    g = srcjax.grad(lambda z: jnp.sum(jnp.abs(z) ** 2))(Z)
    close(g, 2 * np.conj(Z.astype(complex)), rtol=1e-5)
    g = srcjax.grad(lambda z: jnp.real(z * z))(np.complex64(1 + 2j))  # x^2 - y^2: 2x + 2iy
    assert complex(g) == 2 + 4j


# -- grad: integer inputs -----------------------------------------------------------------------------------------
def test_allow_int_gives_float0_gradients():
    g = srcjax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(3, 2.0)
    assert g[0].dtype == FLOAT0 and g[0].shape == ()
    assert float(g[1]) == 3.0
    g = srcjax.grad(lambda p: p["x"] * jnp.sum(p["n"]), allow_int=True)({"x": 2.0, "n": np.arange(3)})
    assert g["n"].dtype == FLOAT0 and g["n"].shape == (3,)
    assert float(g["x"]) == 3.0
    g = srcjax.grad(lambda x, b: jnp.where(b, x, 0.0), argnums=1, allow_int=True)(2.0, True)
    assert g.dtype == FLOAT0


def test_float0_derivatives_under_jit_and_vmap():
    """A float0 derivative (of an integer input) returned from a jit, a vmap or taken by an outer vjp: JAX gives
    float0 zeros of the batched shape; these had been refused (float0 is no array dtype of the IR)."""
    f = lambda x, n: jnp.sin(x) * n  # noqa: E731
    x, n = np.array([0.3, -0.5, 0.9], np.float32), np.array([1, 2, 3], np.int32)
    pullback = lambda x, n: srcjax.vjp(f, x, n)[1](jnp.ones_like(x))  # noqa: E731
    for gx, gn in (srcjax.jit(pullback)(x, n), srcjax.vmap(pullback)(x, n),
                   srcjax.jit(srcjax.vmap(srcjax.grad(f, argnums=(0, 1), allow_int=True)))(x, n)):
        np.testing.assert_allclose(np.asarray(gx), np.cos(x) * n, rtol=1e-6)
        assert gn.dtype == FLOAT0 and gn.shape == (3,)
    gx, gn = srcjax.vmap(pullback, out_axes=1)(x[None].repeat(2, 0), n[None].repeat(2, 0))
    assert gx.shape == (3, 2) and gn.dtype == FLOAT0 and gn.shape == (3, 2)
    # an outer vjp takes a float0 cotangent for the inner one's float0 output
    _, outer = srcjax.vjp(pullback, x, n)
    gx, gn = outer((np.ones(3, np.float32), np.zeros(3, FLOAT0)))
    np.testing.assert_allclose(np.asarray(gx), -np.sin(x) * n, rtol=1e-6)
    assert gn.dtype == FLOAT0
    # float0 tangents as arguments of a jit (traced as the constants they are) and unmapped by a vmap
    tangent = srcjax.jit(lambda x, n, tx, tn: srcjax.jvp(f, (x, n), (tx, tn))[1])
    for k in (3, 2, 3):
        np.testing.assert_allclose(np.asarray(tangent(x[:k], n[:k], 2 * x[:k], np.zeros(k, FLOAT0))),
                                   2 * x[:k] * np.cos(x[:k]) * n[:k], rtol=1e-6)
    t, y = srcjax.jit(lambda t, y: (t, y * 2))(np.zeros((2, 2), FLOAT0), 1.0)
    assert t.dtype == FLOAT0 and t.shape == (2, 2) and float(y) == 2.0
    mapped = srcjax.vmap(lambda x, n, tn: srcjax.jvp(f, (x, n), (x, tn))[1], in_axes=(0, 0, None))
    np.testing.assert_allclose(np.asarray(mapped(x, n, np.zeros((), FLOAT0))), x * np.cos(x) * n, rtol=1e-6)


# -- grad: pytrees ------------------------------------------------------------------------------------------------
Point = collections.namedtuple("Point", "w b")


@tree_util.register_pytree_node_class
class Affine:
    """A registered pytree node: two children and static metadata."""

    def __init__(self, scale, shift, name="affine"):
        self.scale, self.shift, self.name = scale, shift, name

    def tree_flatten(self):
        return (self.scale, self.shift), self.name

    @classmethod
    def tree_unflatten(cls, name, children):
        return cls(*children, name=name)

    def __eq__(self, other):
        return isinstance(other, Affine) and self.name == other.name


PYTREES = [
    ("dict", lambda p: p["a"] * jnp.sum(p["b"] ** 2), {"a": 2.0, "b": X},
     lambda p: {"a": np.sum(p["b"] ** 2), "b": 2 * p["a"] * p["b"]}),
    ("tuple", lambda p: p[0] * p[1][0] + p[1][1] ** 3, (2.0, (3.0, 4.0)),
     lambda p: (p[1][0], (p[0], 3 * p[1][1] ** 2))),
    ("list", lambda p: jnp.sum(p[0] * p[1]), [X, Y], lambda p: [p[1], p[0]]),
    ("nested", lambda p: jnp.sum(p["layers"][0]["w"] * p["layers"][1]["w"]) + p["s"][0],
     {"layers": [{"w": X}, {"w": Y}], "s": (1.0, None)},
     lambda p: {"layers": [{"w": p["layers"][1]["w"]}, {"w": p["layers"][0]["w"]}], "s": (1.0, None)}),
    ("namedtuple", lambda p: jnp.sum(jnp.tanh(p.w) * p.b), Point(X, 0.5),
     lambda p: Point((1 - np.tanh(p.w) ** 2) * p.b, np.sum(np.tanh(p.w)))),
    ("registered", lambda a: jnp.sum(a.scale * X + a.shift) ** 2, Affine(2.0, 1.0),
     lambda a: Affine(2 * np.sum(a.scale * X + a.shift) * np.sum(X), 2 * np.sum(a.scale * X + a.shift) * 3)),
]


@pytest.mark.parametrize("f, tree, derivative", [c[1:] for c in PYTREES], ids=[c[0] for c in PYTREES])
def test_grad_of_pytree_arguments_has_their_structure(f, tree, derivative):
    want = derivative(tree_util.tree_map(lambda v: np.asarray(v, np.float64), tree))
    close(srcjax.grad(f)(tree), want)
    close(srcjax.jit(srcjax.grad(f))(tree), want)


def test_pytree_outputs_of_jvp_vjp_and_jacobians():
    f = lambda a: Affine(a.scale * X, jnp.sum(a.shift * Y), name="out")  # noqa: E731
    a = Affine(2.0, 1.0)
    out, tangent = srcjax.jvp(f, (a,), (Affine(1.0, 0.5),))
    assert out == Affine(None, None, name="out")
    close((tangent.scale, tangent.shift), (X, 0.5 * np.sum(Y)))
    out, f_vjp = srcjax.vjp(f, a)
    (ct,) = f_vjp(Affine(np.ones(3, np.float32), 2.0, name="out"))
    close((ct.scale, ct.shift), (np.sum(X), 2 * np.sum(Y)))
    jac = srcjax.jacrev(lambda x: {"twice": x * 2, "sum": (jnp.sum(x),)})(X)
    close(jac, {"twice": 2 * np.eye(3), "sum": (np.ones(3),)})


# -- grad: errors --------------------------------------------------------------------------------------------------
GRAD_ERRORS = [
    ("argnums_past_the_end", lambda: srcjax.grad(_f_xy, 2)(X, Y), TypeError,
     r"argnums=2 requires at least 3 positional arguments to be passed by the caller, but got only 2"),
    ("argnums_keyword_only_call", lambda: srcjax.grad(lambda x, y: x * y)(x=2.0, y=3.0), TypeError,
     r"argnums=0 requires at least 1 positional arguments.*got only 0"),
    ("argnums_too_negative", lambda: srcjax.grad(_f_xy, -3)(X, Y), ValueError,
     r"greater than or equal to -len\(args\).*-3 for len\(args\) == 2"),
    ("argnums_not_int", lambda: srcjax.grad(_f_xy, "a")(X, Y), TypeError, r"argnums must be an int"),
    ("argnums_float", lambda: srcjax.grad(_f_xy, 1.0)(X, Y), TypeError, r"argnums must be an int"),
    ("not_callable", lambda: srcjax.grad(3), TypeError, r"callable"),
    ("non_scalar_output", lambda: srcjax.grad(lambda x: x**2)(X), TypeError,
     r"Gradient only defined for scalar-output functions\. Output had shape: \(3,\)"),
    ("tuple_output", lambda: srcjax.grad(lambda x: (x, x))(1.0), TypeError,
     r"Gradient only defined for scalar-output functions"),
    ("none_output", lambda: srcjax.grad(lambda x: None)(1.0), TypeError,
     r"Gradient only defined for scalar-output functions"),
    ("int_input", lambda: srcjax.grad(lambda x: x * 2.0)(3), TypeError,
     r"grad requires real- or complex-valued inputs \(input dtype that is a sub-dtype of np\.inexact\), but got "
     r"int32\. If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to True"),
    ("bool_input", lambda: srcjax.grad(lambda x: 1.0)(True), TypeError, r"inexact\), but got bool"),
    ("int_leaf_in_pytree", lambda: srcjax.grad(lambda p: p["x"] * p["n"])({"x": 2.0, "n": 3}), TypeError,
     r"but got int32"),
    ("int_output", lambda: srcjax.grad(lambda x: jnp.int32(3))(1.0), TypeError,
     r"grad requires real-valued outputs \(output dtype that is a sub-dtype of np\.floating\), but got int32\. "
     r"For differentiation of functions with integer outputs, use vjp directly"),
    ("complex_output", lambda: srcjax.grad(lambda x: x * (1 + 1j))(1.0), TypeError,
     r"but got complex64\. For holomorphic differentiation, pass holomorphic=True"),
    ("holomorphic_real_input", lambda: srcjax.grad(lambda z: z * z, holomorphic=True)(1.0), TypeError,
     r"grad with holomorphic=True requires inputs with complex dtype, but got float32"),
    ("holomorphic_real_output", lambda: srcjax.grad(jnp.real, holomorphic=True)(np.complex64(1j)), TypeError,
     r"grad with holomorphic=True requires outputs with complex dtype, but got float32"),
    ("has_aux_single_output", lambda: srcjax.grad(lambda x: x * x, has_aux=True)(1.0), TypeError,
     r"expected function with aux output to return a two-element tuple"),
    ("has_aux_three_outputs", lambda: srcjax.grad(lambda x: (x, x, x), has_aux=True)(1.0), TypeError,
     r"two-element tuple, but got a tuple of 3 elements"),
    ("has_aux_non_scalar", lambda: srcjax.grad(lambda x: (x, x), has_aux=True)(X), TypeError,
     r"Output had shape: \(3,\)"),
    ("string_in_differentiated_pytree", lambda: srcjax.grad(lambda p: p[0])((1.0, "s")), TypeError,
     r"not a valid JAX type"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in GRAD_ERRORS], ids=[c[0] for c in GRAD_ERRORS])
def test_grad_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- vjp ------------------------------------------------------------------------------------------------------------
def test_vjp_of_pytrees_with_integer_inputs():
    def f(x, n, p):
        return x * p["s"] * n, {"sum": jnp.sum(x)}

    out, f_vjp = srcjax.vjp(f, X, 3, {"s": 2.0})
    close(out, (X * 6.0, {"sum": np.sum(X)}))
    ct_x, ct_n, ct_p = f_vjp((np.ones(3, np.float32), {"sum": 1.0}))
    close(ct_x, np.full(3, 7.0))
    assert ct_n.dtype == FLOAT0 and ct_n.shape == ()
    close(ct_p, {"s": np.sum(X) * 3})
    # a Python-scalar cotangent for a float32 output, and a second call with another cotangent
    close(srcjax.vjp(lambda x: jnp.sum(x * x), X)[1](2.0), (4 * X.astype(float),))


def test_vjp_has_aux_and_integer_outputs():
    out, f_vjp, aux = srcjax.vjp(lambda x: (jnp.sin(x), {"x": x}), X, has_aux=True)
    close(aux, {"x": X})
    close(f_vjp(np.ones(3, np.float32)), (np.cos(X.astype(float)),))
    # an integer output takes a float0 (or zero) cotangent and contributes nothing
    _, f_vjp = srcjax.vjp(lambda x: (x * 2, (x * 2).astype(jnp.int32)), X)
    close(f_vjp((np.ones(3, np.float32), np.zeros(3, FLOAT0))), (np.full(3, 2.0),))


VJP_ERRORS = [
    ("structure", lambda f: f(np.ones(3, np.float32)), ValueError, r"tree structure"),
    ("dict_keys", lambda f: f((np.ones(3, np.float32), {"t": 1.0})), ValueError, r"tree structure"),
    ("shape", lambda f: f((np.ones(2, np.float32), {"s": 1.0})), ValueError,
     r"got float32\[2\], but expected float32\[3\]"),
    ("dtype", lambda f: f((np.ones(3, np.int32), {"s": 1.0})), ValueError,
     r"got int32\[3\], but expected float32\[3\]"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in VJP_ERRORS], ids=[c[0] for c in VJP_ERRORS])
def test_vjp_cotangent_errors(call, error, message):
    _, f_vjp = srcjax.vjp(lambda x: (x * 2, {"s": jnp.sum(x)}), X)
    with pytest.raises(error, match=message):
        call(f_vjp)


def test_vjp_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match="two-element tuple"):
        srcjax.vjp(lambda x: x * 2, X, has_aux=True)


# -- jvp --------------------------------------------------------------------------------------------------------------
def test_jvp_values_pytrees_and_has_aux():
    out, tangent = srcjax.jvp(lambda x, y: x * y, (X, 2.0), (np.ones(3, np.float32), 1.0))
    close((out, tangent), (2 * X, 2 + X))
    out, tangent = srcjax.jvp(lambda x: x * 2, [X], [np.ones(3)])  # lists; float64 tangent with x64 off
    close((out, tangent), (2 * X, np.full(3, 2.0)))
    out, tangent, aux = srcjax.jvp(lambda x: (jnp.sin(x), {"x": x}), (X,), (Y,), has_aux=True)
    close((out, tangent, aux), (np.sin(X), np.cos(X) * Y, {"x": X}), rtol=1e-6)
    out, tangent = srcjax.jvp(lambda p: {"a": p["w"] ** 2, "b": (p["w"], 3.0)}, ({"w": X},), ({"w": Y},))
    close(tangent, {"a": 2 * X * Y, "b": (Y, 0.0)})


def test_jvp_integer_inputs_and_outputs_use_float0():
    out, tangent = srcjax.jvp(lambda x, n: x * n, (X, 3), (Y, np.zeros((), FLOAT0)))
    close((out, tangent), (3 * X, 3 * Y))
    (_, ints), (_, int_tangent) = srcjax.jvp(lambda x: (x * 2, (x * 2).astype(jnp.int32)), (X,), (Y,))
    assert int_tangent.dtype == FLOAT0 and int_tangent.shape == (3,)
    np.testing.assert_array_equal(ints, [2, 4, 6])


JVP_ERRORS = [
    ("primals_not_tuple", lambda f: srcjax.jvp(f, X, Y), TypeError,
     r"primal and tangent arguments to jvp must be tuples or lists; found ndarray and ndarray"),
    ("tangents_not_tuple", lambda f: srcjax.jvp(f, (X,), Y), TypeError, r"must be tuples or lists; found tuple"),
    ("count", lambda f: srcjax.jvp(f, (X,), (Y, Y)), TypeError,
     r"must have the same tree structure; primals have tree structure PyTreeDef\(\(\*,\)\) whereas tangents have "
     r"tree structure PyTreeDef\(\(\*, \*\)\)"),
    ("structure", lambda f: srcjax.jvp(lambda p: p["a"] * 2, ({"a": X},), ({"b": Y},)), TypeError,
     r"same tree structure"),
    ("shape", lambda f: srcjax.jvp(f, (X,), (np.ones(2, np.float32),)), ValueError,
     r"different primal and tangent shapes; got primal shape \(3,\) and tangent shape \(2,\)"),
    ("dtype", lambda f: srcjax.jvp(f, (X,), (np.ones(3, np.float16),)), TypeError,
     r"dtypes must be equal.*expected tangent dtype float32, but got tangent dtype float16"),
    ("int_tangent_for_float", lambda f: srcjax.jvp(f, (1.0,), (1,)), TypeError, r"but got tangent dtype int32"),
    ("float_tangent_for_int", lambda f: srcjax.jvp(f, (np.arange(3),), (Y,)), TypeError,
     r"expected tangent dtype float0, but got tangent dtype float32"),
    ("has_aux_single_output", lambda f: srcjax.jvp(f, (X,), (Y,), has_aux=True), TypeError, r"two-element tuple"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in JVP_ERRORS], ids=[c[0] for c in JVP_ERRORS])
def test_jvp_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(lambda x: x * 2)


# -- linearize ----------------------------------------------------------------------------------------------------
def test_linearize():
    out, f_jvp = srcjax.linearize(lambda x: jnp.sin(x) * x, X)
    x = X.astype(float)
    close(out, np.sin(x) * x)
    derivative = np.cos(x) * x + np.sin(x)
    close(f_jvp(np.ones(3, np.float32)), derivative, rtol=1e-5)
    close(f_jvp(Y), derivative * Y, rtol=1e-5)  # linear in the tangent, reusable
    out, f_jvp = srcjax.linearize(lambda x, y: x * y, X, 2.0)
    close(f_jvp(Y, 1.0), 2 * Y + X)
    out, f_jvp, aux = srcjax.linearize(lambda x: (x * 2, x + 1), X, has_aux=True)
    close((out, f_jvp(Y), aux), (2 * X, 2 * Y, X + 1))
    close(srcjax.jit(lambda x: srcjax.linearize(jnp.sin, x)[1](Y))(X), np.cos(x) * Y)
    with pytest.raises(ValueError, match=r"inconsistent with the original primal values: got tangent type "
                                         r"float32\[2\] for primal type float32\[3\]"):
        srcjax.linearize(lambda x: x * 2.0, X)[1](np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"tangents of structure"):
        srcjax.linearize(lambda x: x * 2.0, X)[1](Y, 1.0)


# -- Jacobians and Hessians vs finite differences ----------------------------------------------------------------
EPS = 1e-6


def _shifted(f, args, i, j, index, h):
    """The leaves of ``f(np, *args)`` with element ``index`` of leaf ``j`` of argument ``i`` moved by ``h``."""
    leaves, tree = tree_util.tree_flatten(args[i])
    leaves = [np.array(v, np.float64) for v in leaves]
    leaves[j][index] += h
    moved = list(args)
    moved[i] = tree_util.tree_unflatten(tree, leaves)
    return [np.asarray(v, np.float64) for v in tree_util.tree_leaves(f(np, *moved))]


def numeric_jacobian(f, args, argnums, eps=EPS):
    """Central differences of ``f(np, *args)`` in float64, laid out as JAX lays out Jacobians (the output's
    structure outside, the differentiated arguments' inside)."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else argnums
    out_leaves, out_tree = tree_util.tree_flatten(f(np, *args))
    blocks = {}  # (output leaf, argument, argument leaf) -> block of shape out.shape + in.shape
    for i in nums:
        for j, leaf in enumerate(tree_util.tree_leaves(args[i])):
            for k, o in enumerate(out_leaves):
                blocks[k, i, j] = np.zeros(np.shape(o) + np.shape(leaf))
            for index in np.ndindex(*np.shape(leaf)):
                up, down = _shifted(f, args, i, j, index, eps), _shifted(f, args, i, j, index, -eps)
                for k in range(len(out_leaves)):
                    blocks[k, i, j][(Ellipsis, *index)] = (up[k] - down[k]) / (2 * eps)
    per_output = []
    for k in range(len(out_leaves)):
        per_arg = []
        for i in nums:
            in_tree = tree_util.tree_structure(args[i])
            per_arg.append(tree_util.tree_unflatten(in_tree, [blocks[k, i, j] for j in range(in_tree.num_leaves)]))
        per_output.append(per_arg[0] if single else tuple(per_arg))
    return tree_util.tree_unflatten(out_tree, per_output)


def as_f32(tree):
    return tree_util.tree_map(lambda v: np.asarray(v, np.float32), tree)


A = np.array([[0.5, -1.0], [2.0, 0.3], [-0.7, 1.1]])
V = np.array([0.3, -1.2, 2.0])
P = {"w": A, "b": np.array(0.4)}
# (name, f(module, *args) written once for srcjax.numpy and numpy, args in float64, argnums)
JACOBIANS = [
    ("vector_to_vector", lambda m, x: m.sin(x) * x[0], (V,), 0),
    ("vector_to_scalar", lambda m, x: m.sum(x**3) * x[1], (V,), 0),
    ("scalar_to_vector", lambda m, s: s * m.cos(V * s), (np.array(0.7),), 0),
    ("matrix_to_matrix", lambda m, a: m.matmul(a, a.T), (A,), 0),
    ("matrix_vector", lambda m, a, x: m.tanh(m.matmul(x, a)), (A, V), 1),
    ("argnums_tuple", lambda m, a, x: m.tanh(m.matmul(x, a)), (A, V), (0, 1)),
    ("negative_argnums", lambda m, a, x: m.exp(x) * m.sum(a), (A, V), (-1, -2)),
    ("pytree_input", lambda m, p, x: m.tanh(m.matmul(x, p["w"]) + p["b"]), (P, V), 0),
    ("pytree_output", lambda m, x: {"sq": x**2, "pair": (m.sum(x), x[0] * x[2])}, (V,), 0),
    ("empty_input", lambda m, x: x * 2, (np.zeros(0),), 0),
    ("empty_output", lambda m, x: x[:0], (V,), 0),
]


@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("f, args, argnums", [c[1:] for c in JACOBIANS], ids=[c[0] for c in JACOBIANS])
def test_jacobians_match_finite_differences(mode, f, args, argnums):
    want = numeric_jacobian(f, args, argnums)
    jac = getattr(srcjax, mode)(functools.partial(f, jnp), argnums)
    close(jac(*as_f32(args)), want, rtol=2e-3, atol=2e-3)


HESSIANS = [
    ("vector", lambda m, x: m.sum(x**3) * x[0], (V,), 0),
    ("matrix", lambda m, a: m.sum(m.sin(a) ** 2) * a[0, 1], (A,), 0),
    ("pytree", lambda m, p, x: m.sum(m.tanh(m.matmul(x, p["w"]) + p["b"]) ** 2), (P, V), 0),
    ("argnums_tuple", lambda m, a, x: m.sum(m.matmul(x, a) ** 2) * x[1], (A, V), (0, 1)),
]


@pytest.mark.parametrize("f, args, argnums", [c[1:] for c in HESSIANS], ids=[c[0] for c in HESSIANS])
def test_hessian_matches_finite_differences(f, args, argnums):
    def gradient(m, *a):
        return numeric_jacobian(f, a, argnums, eps=1e-5)

    want = numeric_jacobian(gradient, args, argnums, eps=1e-4)
    got = srcjax.hessian(functools.partial(f, jnp), argnums)(*as_f32(args))
    close(got, want, rtol=2e-3, atol=2e-3)


def test_jacobian_options():
    x = X.astype(float)
    jac, aux = srcjax.jacfwd(lambda x: (x * 2, x + 1), has_aux=True)(X)
    close((jac, aux), (2 * np.eye(3), x + 1))
    jac, aux = srcjax.jacrev(lambda x: (x * 2, x + 1), has_aux=True)(X)
    close((jac, aux), (2 * np.eye(3), x + 1))
    h, aux = srcjax.hessian(lambda x: (jnp.sum(x**3), x), has_aux=True)(X)
    close((h, aux), (np.diag(6 * x), x))
    close(srcjax.jacfwd(lambda x, y: x * y)(X, y=2.0), 2 * np.eye(3))  # keyword arguments pass through
    # holomorphic Jacobians are the complex derivative (recorded: [[2+2j, 0], [0, 4j]] at [1+1j, 2j])
    z = np.array([1 + 1j, 2j], np.complex64)
    for jac in (srcjax.jacfwd, srcjax.jacrev):
        close(jac(lambda z: z * z, holomorphic=True)(z), np.diag(2 * z.astype(complex)))
    # forward mode from real inputs to complex outputs needs no holomorphic flag
    close(srcjax.jacfwd(lambda x: x * (1 + 1j))(X), (1 + 1j) * np.eye(3))
    # reverse mode from complex inputs to real outputs: the conjugated gradient (recorded: [[2j, 0], [0, 4]])
    close(srcjax.jacrev(lambda z: jnp.real(z * z))(np.array([1j, 2], np.complex64)), np.diag([2j, 4]))
    # an integer input's block is zeros of its dtype, weak for a Python int (recorded from JAX 0.10.2), not float0
    jac = srcjax.jacrev(lambda x, n: x * n, argnums=1, allow_int=True)(X, 3)
    assert jac.dtype == jnp.asarray(3).dtype and jac.weak_type and jac.shape == (3,) and not np.any(jac)
    jac = srcjax.jacrev(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(X, jnp.int16(3))
    close(jac[0], 3 * np.eye(3))
    assert jac[1].dtype == np.int16 and not jac[1].weak_type and jac[1].shape == (3,) and not np.any(jac[1])
    jac = srcjax.jacrev(lambda x: x * 2.0, allow_int=True)(jnp.arange(3))
    assert jac.dtype == jnp.arange(3).dtype and jac.shape == (3, 3) and not np.any(jac)
    # argnums a NumPy integer: jacrev (so hessian) gives a 1-tuple, jacfwd and grad the block (JAX 0.10.2's layout)
    f = lambda x, y: jnp.sin(x) * y  # noqa: E731
    for transform, wrapped in [(srcjax.jacrev, True), (srcjax.hessian, True), (srcjax.jacfwd, False),
                               (srcjax.grad, False)]:
        jac = transform(f, argnums=np.int32(0))(1.0, 2.0)
        assert isinstance(jac, tuple) == wrapped and not isinstance(transform(f, argnums=0)(1.0, 2.0), tuple)
    # jacfwd's block of an integer output is zeros of its dtype too (recorded from JAX 0.10.2: int8[2, 3] zeros)
    _, jac = srcjax.jacfwd(lambda x: (x * 2, jnp.arange(2, dtype=jnp.int8)))(X)
    assert jac.dtype == np.int8 and jac.shape == (2, 3) and not np.any(jac)


JACOBIAN_ERRORS = [
    ("jacfwd_int_input", lambda: srcjax.jacfwd(lambda x: x * 2.0)(np.arange(3)), TypeError,
     r"jacfwd requires real-valued inputs \(input dtype that is a sub-dtype of np\.floating\), but got int32"),
    ("jacfwd_complex_input", lambda: srcjax.jacfwd(jnp.real)(np.array([1j, 2], np.complex64)), TypeError,
     r"jacfwd requires real-valued inputs.*but got complex64\. For holomorphic differentiation"),
    ("jacfwd_holomorphic_real_input", lambda: srcjax.jacfwd(lambda z: z, holomorphic=True)(X), TypeError,
     r"jacfwd with holomorphic=True requires inputs with complex dtype, but got float32"),
    ("jacfwd_holomorphic_real_output", lambda: srcjax.jacfwd(jnp.real, holomorphic=True)(Z), TypeError,
     r"jacfwd with holomorphic=True requires outputs with complex dtype, but got float32"),
    ("jacrev_int_input", lambda: srcjax.jacrev(lambda x: x * 2.0)(np.arange(3)), TypeError,
     r"jacrev requires real- or complex-valued inputs.*but got int32.*set allow_int to True"),
    ("jacrev_int_output", lambda: srcjax.jacrev(lambda x: (x * 2).astype(jnp.int32))(X), TypeError,
     r"jacrev requires real-valued outputs.*but got int32"),
    ("jacrev_complex_output", lambda: srcjax.jacrev(lambda x: x * (1 + 1j))(X), TypeError,
     r"jacrev requires real-valued outputs.*but got complex64\. For holomorphic differentiation"),
    ("jacrev_holomorphic_real_output", lambda: srcjax.jacrev(jnp.real, holomorphic=True)(Z), TypeError,
     r"jacrev with holomorphic=True requires outputs with complex dtype, but got float32"),
    ("argnums", lambda: srcjax.jacfwd(lambda x: x, argnums=3)(X), TypeError, r"argnums=3 requires at least 4"),
    ("has_aux", lambda: srcjax.jacrev(lambda x: x, has_aux=True)(X), TypeError, r"two-element tuple"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in JACOBIAN_ERRORS],
                         ids=[c[0] for c in JACOBIAN_ERRORS])
def test_jacobian_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- custom_jvp ---------------------------------------------------------------------------------------------------
@srcjax.custom_jvp
def scaled_sin(x, y):
    return jnp.sin(x) * y


@scaled_sin.defjvp
def _scaled_sin_jvp(primals, tangents):
    # deliberately not the true derivative (10x and 100x), so the tests see which rule ran
    x, y = primals
    x_dot, y_dot = tangents
    return scaled_sin(x, y), 10.0 * jnp.cos(x) * x_dot * y + 100.0 * jnp.sin(x) * y_dot


def _custom_dx(x, y):
    return 10.0 * np.cos(x) * y


def test_custom_jvp_rule_is_used_by_every_transform():
    x, y = 1.0, 2.0
    assert float(scaled_sin(x, y)) == pytest.approx(np.sin(1.0) * 2)
    dx, dy = _custom_dx(x, y), 100.0 * np.sin(x)
    close(srcjax.grad(scaled_sin, (0, 1))(x, y), (dx, dy))
    close(srcjax.jvp(scaled_sin, (x, y), (1.0, 0.0))[1], dx)
    close(srcjax.jit(srcjax.grad(scaled_sin))(x, y), dx)
    close(srcjax.grad(srcjax.jit(scaled_sin))(x, y), dx)
    close(srcjax.jit(scaled_sin)(x, y), np.sin(x) * y)
    close(srcjax.grad(lambda x: scaled_sin(x, y=2.0) * 3)(x), 3 * dx)  # keyword arguments resolved
    close(srcjax.grad(lambda v: jnp.sum(scaled_sin(v, 2.0)))(X), _custom_dx(X.astype(float), 2.0))
    close(srcjax.jacrev(lambda v: scaled_sin(v, 2.0))(X), np.diag(_custom_dx(X.astype(float), 2.0)))


@srcjax.custom_jvp
def square10(x):
    return x * x


@square10.defjvp
def _square10_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    ans = square10(x)
    return ans, 10.0 * ans * x_dot  # d square10 := 10 square10, at every order


def test_custom_jvp_applies_at_higher_orders():
    # the rule calls square10 again, so its output is differentiated by the rule too (recorded from JAX:
    # grad = 10 x^2 = 90 at 3, and the second derivative is 10 * 10 x^2 = 900)
    assert float(srcjax.grad(square10)(3.0)) == pytest.approx(90.0)
    assert float(srcjax.grad(srcjax.grad(square10))(3.0)) == pytest.approx(900.0)
    assert float(srcjax.jvp(srcjax.grad(square10), (3.0,), (1.0,))[1]) == pytest.approx(900.0)
    assert float(srcjax.jacfwd(srcjax.jacrev(square10))(3.0)) == pytest.approx(900.0)
    assert float(srcjax.jit(srcjax.grad(srcjax.grad(square10)))(3.0)) == pytest.approx(900.0)


@srcjax.custom_jvp
def sin_and_floor(x):
    return jnp.sin(x), jnp.floor(x).astype(jnp.int32)


@sin_and_floor.defjvp
def _sin_and_floor_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    y, n = sin_and_floor(x)
    return (y, n), (jnp.cos(x) * x_dot, np.zeros(np.shape(n), srcjax.dtypes.float0))  # JAX's integer tangent


def test_custom_jvp_rule_may_give_float0_tangents_for_integer_outputs():
    def first(x):
        return sin_and_floor(x)[0]

    dx = np.cos(np.float32(1.5))
    assert float(srcjax.grad(first)(np.float32(1.5))) == pytest.approx(dx)
    assert float(srcjax.jit(srcjax.grad(first))(np.float32(1.5))) == pytest.approx(dx)
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(first))(jnp.array([1.5, 1.5])), [dx, dx], rtol=1e-6)
    (y, n), (y_dot, n_dot) = srcjax.jvp(sin_and_floor, (np.float32(1.5),), (np.float32(1.0),))
    assert int(n) == 1 and float(y_dot) == pytest.approx(dx) and n_dot.dtype == FLOAT0

    @srcjax.custom_jvp
    def wrong(x):
        return jnp.sin(x)

    wrong.defjvp(lambda p, t: (wrong(p[0]), np.zeros((), srcjax.dtypes.float0)))  # a float output's tangent
    with pytest.raises(TypeError, match=r"Expected f32\[\] \(tangent type of f32\[\]\) but got float0\[\]"):
        srcjax.grad(wrong)(np.float32(1.5))


def test_custom_jvp_defjvps_and_nondiff_argnums():
    @srcjax.custom_jvp
    def cube(x):
        return x**3

    cube.defjvps(lambda t, ans, x: 3 * x**2 * t)
    assert float(srcjax.grad(cube)(2.0)) == 12.0
    assert float(srcjax.grad(srcjax.grad(cube))(2.0)) == 12.0  # d/dx 3x^2
    close(srcjax.jvp(cube, (2.0,), (1.0,)), (8.0, 12.0))

    @srcjax.custom_jvp
    def product(x, y):
        return x * y

    product.defjvps(lambda t, ans, x, y: 2 * t * y, None)  # no rule for y: its tangent contributes zero
    close(srcjax.grad(product, (0, 1))(2.0, 3.0), (6.0, 0.0))

    @functools.partial(srcjax.custom_jvp, nondiff_argnums=(0,))
    def apply(fn, x):
        return fn(x)

    @apply.defjvp
    def _apply_jvp(fn, primals, tangents):
        return apply(fn, primals[0]), 2.0 * tangents[0]

    assert float(srcjax.grad(lambda x: apply(jnp.sin, x))(1.0)) == 2.0
    assert float(srcjax.jit(srcjax.grad(lambda x: apply(jnp.sin, x)))(1.0)) == 2.0
    assert float(apply(jnp.sin, 1.0)) == pytest.approx(np.sin(1.0))
    with pytest.raises(TypeError, match="defjvps with nondiff_argnums"):
        apply.defjvps(None)


def test_custom_jvp_errors_and_printing():
    with pytest.raises(AttributeError, match=r"No JVP defined for custom_jvp function <lambda> using defjvp"):
        srcjax.grad(srcjax.custom_jvp(lambda x: x * 2))(1.0)

    @srcjax.custom_jvp
    def f(x):
        return x * 2

    f.defjvp(lambda p, t: ((p[0] * 2, 1.0), t[0]))
    with pytest.raises(TypeError, match=r"equal container \(pytree\) structures"):
        srcjax.jvp(f, (1.0,), (1.0,))
    f.defjvp(lambda p, t: (p[0] * 2, jnp.ones(3)))
    with pytest.raises(TypeError, match=r"corresponding shapes and dtypes\. Expected f32\[\] .* but got f32\[3\]"):
        srcjax.jvp(f, (1.0,), (1.0,))
    # the IR prints the call with its function's name
    assert "custom_jvp_call\"[rule=_CustomJVPCall(name='square10')" in str(srcjax.make_jaxpr(square10)(1.0))


# -- custom_vjp ---------------------------------------------------------------------------------------------------
@srcjax.custom_vjp
def scaled_sin_v(x, y):
    return jnp.sin(x) * y


def _scaled_sin_fwd(x, y):
    return scaled_sin_v(x, y), (jnp.cos(x), jnp.sin(x), y)


def _scaled_sin_bwd(residuals, g):
    cos_x, sin_x, y = residuals
    return 10.0 * cos_x * g * y, 100.0 * sin_x * g


scaled_sin_v.defvjp(_scaled_sin_fwd, _scaled_sin_bwd)


def _cond_branch(x):
    return lax.cond(x > 0, lambda v: scaled_sin_v(v, 2.0), lambda v: v * 3.0, x)


def _python_if(x):
    if x > 0:
        y = scaled_sin_v(x, 2.0)
    else:
        y = x * 3.0
    return y


def test_custom_vjp_rule_is_used_by_reverse_mode():
    x, y = 1.0, 2.0
    dx, dy = _custom_dx(x, y), 100.0 * np.sin(x)
    assert float(scaled_sin_v(x, y)) == pytest.approx(np.sin(1.0) * 2)
    close(srcjax.grad(scaled_sin_v, (0, 1))(x, y), (dx, dy))
    close(srcjax.vjp(scaled_sin_v, x, y)[1](1.0), (dx, dy))
    close(srcjax.jit(srcjax.grad(scaled_sin_v))(x, y), dx)
    close(srcjax.grad(srcjax.jit(scaled_sin_v))(x, y), dx)
    for f in (_cond_branch, _python_if):
        close(srcjax.grad(f)(0.5), _custom_dx(0.5, 2.0))
        close(srcjax.grad(f)(-0.5), 3.0)
        close(srcjax.jit(srcjax.grad(f))(0.5), _custom_dx(0.5, 2.0))
    # second order differentiates the bwd rule: d/dx 20 cos x (recorded: -16.829418 at 1)
    close(srcjax.grad(srcjax.grad(lambda x: scaled_sin_v(x, 2.0)))(1.0), -20 * np.sin(1.0))


def test_custom_vjp_pytrees_and_nondiff_argnums():
    @srcjax.custom_vjp
    def weighted(p):
        return p["a"] * p["b"]

    weighted.defvjp(lambda p: (weighted(p), p), lambda p, g: ({"a": 2 * g * p["b"], "b": None},))
    close(srcjax.grad(weighted)({"a": 2.0, "b": 3.0}), {"a": 6.0, "b": 0.0})

    @functools.partial(srcjax.custom_vjp, nondiff_argnums=(0,))
    def clip_gradient(limit, x):
        return x

    clip_gradient.defvjp(lambda limit, x: (x, None), lambda limit, _, g: (jnp.clip(g, -limit, limit),))
    assert float(srcjax.grad(lambda x: clip_gradient(0.5, x) * 3.0)(1.0)) == 0.5
    assert float(srcjax.jit(srcjax.grad(lambda x: clip_gradient(0.5, x) * 3.0))(1.0)) == 0.5
    # a traced value in a non-differentiable position reaches bwd too
    got = srcjax.grad(lambda x, limit: clip_gradient(limit, x) * 3.0)(1.0, 2.0)
    assert float(got) == 2.0


def test_custom_rules_around_transformed_functions():
    # a custom function wrapping a vmap of a custom function keeps its own function (the vmap carries the inner
    # one's attributes, as functools.wraps copies them; copying them again had replaced the outer function by
    # the inner one: the vmap was skipped)
    def spread(v):
        return v * jnp.sum(v)

    inner = srcjax.custom_vjp(spread)
    inner.defvjp(lambda v: (spread(v), v), lambda v, g: (3.0 * g,))
    xs = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    want = xs * xs.sum(axis=0)
    batched = srcjax.vmap(inner, in_axes=-1, out_axes=-1)
    by_vjp = srcjax.custom_vjp(batched)
    by_vjp.defvjp(lambda x: (batched(x), x), lambda x, g: (5.0 * g,))
    close(by_vjp(xs), want)
    close(srcjax.grad(lambda x: jnp.sum(by_vjp(x)))(xs), np.full((2, 3), 5.0))
    by_jvp = srcjax.custom_jvp(batched)
    by_jvp.defjvp(lambda p, t: (batched(p[0]), 11.0 * t[0]))
    close(by_jvp(xs), want)
    close(srcjax.jvp(by_jvp, (xs,), (np.ones_like(xs),)), (want, np.full((2, 3), 11.0)))


def test_outputs_of_vjp_and_linearize_come_from_the_custom_rules():
    # JAX's vjp runs fwd (and linearize the JVP rule) for the primal output, so a transformation of the result
    # differentiates that output through the rule's own code (x**3 here), not through the custom derivative
    # (half the true one here). JAX 0.10.2 gives 1.6143048 at x = 0.7 for each: 3x cos x^3 - 4.5 x^4 sin x^3.
    by_vjp = srcjax.custom_vjp(lambda x: x**3)
    by_vjp.defvjp(lambda x: (x**3, x), lambda x, g: (1.5 * x**2 * g,))
    by_jvp = srcjax.custom_jvp(lambda x: x**3)
    by_jvp.defjvp(lambda p, t: (p[0] ** 3, 1.5 * p[0] ** 2 * t[0]))

    def through_vjp(x):
        out, pullback = srcjax.vjp(by_vjp, x)
        return pullback(jnp.cos(out))[0]

    def through_linearize(x):
        out, f_jvp = srcjax.linearize(by_jvp, x)
        return jnp.cos(out) * f_jvp(1.0)

    want = 3 * 0.7 * np.cos(0.7**3) - 4.5 * 0.7**4 * np.sin(0.7**3)
    for f in (through_vjp, through_linearize):
        close(srcjax.grad(f)(0.7), want)
        close(srcjax.jvp(f, (0.7,), (1.0,))[1], want)


def test_custom_vjp_errors():
    @srcjax.custom_vjp
    def f(x):
        return x * 2

    with pytest.raises(AttributeError, match=r"No VJP defined for custom_vjp function f using defvjp"):
        srcjax.grad(f)(1.0)
    f.defvjp(lambda x: (x * 2, None), lambda r, g: g)
    with pytest.raises(TypeError, match=r"must produce a tuple of length equal to the number of arguments"):
        srcjax.grad(f)(1.0)
    f.defvjp(lambda x: (x * 2, None), lambda r, g: (g, g))
    with pytest.raises(TypeError, match=r"bwd output structure PyTreeDef\(\(\*, \*\)\) for primal input structure "
                                        r"PyTreeDef\(\(\*,\)\)"):
        srcjax.grad(f)(1.0)
    f.defvjp(lambda x: (x * 2, None), lambda r, g: (jnp.ones(3),))
    with pytest.raises(ValueError, match=r"at output\[0\] the bwd rule produced an output of type f32\[3\] "
                                         r"corresponding to an input of type f32\[\]"):
        srcjax.grad(f)(1.0)
    f.defvjp(lambda x: ((x, x), None), lambda r, g: (g,))
    # differentiated, f is not run (as in JAX): fwd's output is the function's, here not a scalar
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions"):
        srcjax.grad(f)(1.0)
    with pytest.raises(TypeError, match=r"fwd rule .* must produce a pair"):
        srcjax.grad(lambda x: lax.fori_loop(0, 1, lambda i, c: f(c), x))(1.0)  # traced in the loop first, as in JAX


@srcjax.custom_vjp
def _identity(x):
    return x


_identity.defvjp(lambda x: (x, None), lambda _, g: (2.0 * g,))


@pytest.mark.parametrize("loop", ["fori_loop", "python_for", "python_while"])
def test_custom_vjp_inside_loops(loop):
    def fori(x):
        return lax.fori_loop(0, 2, lambda i, c: _identity(c), x)

    def python_for(x):
        for _ in range(2):
            x = _identity(x) * 1.0
        return x

    def python_while(x):
        while x < 3.0:
            x = _identity(x) + 1.0
        return x

    f = {"fori_loop": fori, "python_for": python_for, "python_while": python_while}[loop]
    assert float(srcjax.grad(f)(0.5)) == {"fori_loop": 4.0, "python_for": 4.0, "python_while": 8.0}[loop]


def test_forward_mode_of_custom_vjp_is_an_error():
    with pytest.raises(TypeError, match="forward-mode"):
        srcjax.jvp(scaled_sin_v, (1.0, 2.0), (1.0, 0.0))


# -- checkpoint, stop_gradient ----------------------------------------------------------------------------------
def test_checkpoint_keeps_values_and_derivatives():
    def g(x):
        return jnp.sin(jnp.cos(x)) * x

    def dg(x):
        return np.cos(np.cos(x)) * -np.sin(x) * x + np.sin(np.cos(x))

    for wrapped in (srcjax.checkpoint(g), srcjax.remat(g), srcjax.checkpoint(g, policy=None, prevent_cse=False)):
        close(wrapped(0.7), g(0.7))
        close(srcjax.grad(wrapped)(0.7), dg(0.7))
        close(srcjax.jit(srcjax.grad(wrapped))(0.7), dg(0.7))
        close(srcjax.grad(lambda x, h=wrapped: h(x) ** 2)(0.7), 2 * g(0.7) * dg(0.7))
    power = srcjax.checkpoint(lambda x, n: x**n, static_argnums=(1,))
    assert float(srcjax.grad(power)(2.0, 3)) == 12.0


def test_stop_gradient():
    assert float(srcjax.grad(lambda x: x * lax.stop_gradient(x))(3.0)) == 3.0
    close(srcjax.jvp(lambda x: x * lax.stop_gradient(x), (3.0,), (1.0,)), (9.0, 3.0))
    close(srcjax.grad(lambda x: jnp.sum(x * lax.stop_gradient({"a": x})["a"]))(X), X)
    np.testing.assert_array_equal(lax.stop_gradient(jnp.arange(3)), [0, 1, 2])  # integers pass unchanged
    close(srcjax.jit(srcjax.grad(lambda x: x**2 + lax.stop_gradient(x**3)))(2.0), 4.0)


# -- composition ----------------------------------------------------------------------------------------------------
def _cube(x):
    return x**3


COMPOSITIONS = [
    ("grad", lambda: srcjax.grad(_cube), 27.0),
    ("grad_jit", lambda: srcjax.grad(srcjax.jit(_cube)), 27.0),
    ("jit_grad", lambda: srcjax.jit(srcjax.grad(_cube)), 27.0),
    ("grad_grad", lambda: srcjax.grad(srcjax.grad(_cube)), 18.0),
    ("grad_grad_grad", lambda: srcjax.grad(srcjax.grad(srcjax.grad(_cube))), 6.0),
    ("jit_grad_jit_grad", lambda: srcjax.jit(srcjax.grad(srcjax.jit(srcjax.grad(_cube)))), 18.0),
    ("jacfwd_grad", lambda: srcjax.jacfwd(srcjax.grad(_cube)), 18.0),
    ("jacrev_grad", lambda: srcjax.jacrev(srcjax.grad(_cube)), 18.0),
    ("jvp_of_grad", lambda: lambda x: srcjax.jvp(srcjax.grad(_cube), (x,), (1.0,))[1], 18.0),
    ("vjp_of_jvp", lambda: lambda x: srcjax.vjp(lambda y: srcjax.jvp(_cube, (y,), (1.0,))[1], x)[1](1.0)[0], 18.0),
    ("jit_vjp", lambda: srcjax.jit(lambda x: srcjax.vjp(_cube, x)[1](1.0)[0]), 27.0),
    ("jit_jvp", lambda: srcjax.jit(lambda x: srcjax.jvp(_cube, (x,), (1.0,))[1]), 27.0),
    ("jit_hessian", lambda: srcjax.jit(srcjax.hessian(_cube)), 18.0),
]


@pytest.mark.parametrize("make, want", [c[1:] for c in COMPOSITIONS], ids=[c[0] for c in COMPOSITIONS])
def test_composition(make, want):
    assert float(make()(3.0)) == pytest.approx(want)


def test_grad_of_a_closure_over_a_traced_value():
    # d/dy (x y) at y = x is x; the inner function captures the outer jit's traced x
    assert float(srcjax.jit(lambda x: srcjax.grad(lambda y: x * y)(x))(3.0)) == 3.0
    assert float(srcjax.jit(lambda x: srcjax.grad(lambda y: jnp.sin(x * y))(2.0))(3.0)) == pytest.approx(
        3 * np.cos(6.0))
    # d/dx [d/dy x y^2 at y = x] = d/dx 2 x^2 = 4 x
    assert float(srcjax.grad(lambda x: srcjax.grad(lambda y: x * y * y)(x))(3.0)) == 12.0
    # each outer call sees its own x (a captured trace is never reused)
    f = srcjax.jit(lambda x: srcjax.grad(lambda y: x * y)(1.0))
    assert (float(f(2.0)), float(f(5.0))) == (2.0, 5.0)


# -- Python control flow on data ------------------------------------------------------------------------------------
def _piecewise(x):
    if x > 0:
        return x**2
    return -3.0 * x


def _grow(x):
    y = x
    while y < 10.0:
        y = y * x
    return y


def _sum_sines(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc + jnp.sin(x * i)
    return acc


def _doubling(x):
    for i in range(20):
        if x > 100.0:
            break
        x = x * 2.0 + i
    return x


def _vector_branch(x):
    if jnp.sum(x) > 0:
        return jnp.sum(x**3)
    else:
        return jnp.sum(x**2)


CONTROL = [
    ("if_true", _piecewise, (2.0,), 4.0),
    ("if_false", _piecewise, (-2.0,), -3.0),
    ("while_x2", _grow, (2.0,), 4 * 2.0**3),  # 2^4 = 16 is the first power past 10: d x^4 = 4 x^3
    ("while_x3", _grow, (3.0,), 3 * 3.0**2),  # 3^3 = 27: d x^3 = 3 x^2
    ("for_static_count", _sum_sines, (0.5, 4), sum(i * np.cos(0.5 * i) for i in range(4))),
    ("for_break", _doubling, (1.0,), 64.0),  # 7 doublings before 100 is passed
]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("f, args, want", [c[1:] for c in CONTROL], ids=[c[0] for c in CONTROL])
def test_grad_through_python_control_flow_on_data(f, args, want, jit):
    g = srcjax.grad(f)
    if jit:
        g = srcjax.jit(g, static_argnums=tuple(i for i, a in enumerate(args) if isinstance(a, int)))
    assert float(g(*args)) == pytest.approx(want, rel=1e-5)


def test_jacobians_through_python_control_flow():
    x = X.astype(float)
    close(srcjax.hessian(_vector_branch)(X), np.diag(6 * x))
    close(srcjax.hessian(_vector_branch)(-X), 2 * np.eye(3))
    close(srcjax.jit(srcjax.hessian(_vector_branch))(X), np.diag(6 * x))
    close(srcjax.jacfwd(srcjax.grad(_grow))(1.5), 30 * 1.5**4)  # 1.5^6 is the first power past 10


def test_second_order_reverse_mode_through_a_while_loop():
    assert float(srcjax.grad(srcjax.grad(_grow))(1.5)) == pytest.approx(30 * 1.5**4)
    assert float(srcjax.jit(srcjax.grad(srcjax.grad(_grow)))(1.5)) == pytest.approx(30 * 1.5**4)
    assert float(srcjax.grad(srcjax.grad(srcjax.grad(_grow)))(1.5)) == pytest.approx(120 * 1.5**3)


# -- caching -----------------------------------------------------------------------------------------------------
def test_transformed_functions_trace_once_per_signature():
    traces = []

    def f(x):
        traces.append(1)  # runs while the function is read, not when its IR runs
        return jnp.sum(x**2)

    g = srcjax.grad(f)
    close(g(X), 2 * X)
    close(g(Y), 2 * Y)
    srcjax.grad(f)(X)  # a new grad of the same function hits the same cache
    srcjax.value_and_grad(f)(X)
    srcjax.jvp(f, (X,), (Y,))
    srcjax.vjp(f, X)
    srcjax.jacrev(f)(X)
    srcjax.hessian(f)(X)
    assert len(traces) == 1
    g(np.ones(4, np.float32))  # a new shape is a new signature
    g(np.ones(4, np.float64))  # float64 narrows to float32 with x64 off: the same signature
    assert len(traces) == 2
    jg = srcjax.jit(srcjax.grad(f))
    jg(X), jg(Y)
    assert len(traces) == 2
    gj = srcjax.grad(srcjax.jit(f))
    gj(X), gj(Y)
    assert len(traces) == 3


SCALE = np.float32(1.0)


def _scaled(x):
    return x * SCALE


def test_rebinding_a_global_traces_again():
    global SCALE
    assert float(srcjax.grad(_scaled)(1.0)) == 1.0
    saved, SCALE = SCALE, np.float32(2.0)
    try:
        assert float(srcjax.grad(_scaled)(1.0)) == 2.0
        assert float(srcjax.grad(lambda x: _scaled(x) * 3.0)(1.0)) == 6.0  # through a called function
    finally:
        SCALE = saved


class _Model:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return self.w * x


def test_rebinding_an_attribute_of_a_callable_object_traces_again():
    model = _Model(2.0)
    loss = model.__call__  # the same bound method object both times
    assert (float(srcjax.grad(model)(1.0)), float(srcjax.grad(loss)(1.0))) == (2.0, 2.0)
    model.w = 5.0
    assert (float(srcjax.grad(model)(1.0)), float(srcjax.grad(loss)(1.0))) == (5.0, 5.0)


_CONFIG = {"scale": 2.0}
_WEIGHTS = np.full(3, 2.0, np.float32)


class _Settings:
    scale = 2.0


def _read_in_place(x):
    return jnp.sum(x * _CONFIG["scale"] * _WEIGHTS * _Settings.scale)


def test_changing_a_global_in_place_traces_again():
    # JAX's transformations trace at every call, so they see a dict item, an array's values or a class attribute
    # changed in place; a reused trace must too (each value read is one factor of the derivative: 2 * 2 * 2)
    x = np.ones(3, np.float32)
    for transform in (srcjax.grad, lambda f: lambda x: srcjax.jvp(f, (x,), (x,))[1],
                      lambda f: lambda x: srcjax.vjp(f, x)[1](np.float32(1.0))[0]):
        _CONFIG["scale"], _WEIGHTS[:], _Settings.scale = 2.0, 2.0, 2.0
        assert float(np.sum(transform(_read_in_place)(x))) == 24.0
        try:
            for change, expected in ((lambda: _CONFIG.update(scale=3.0), 36.0),
                                     (lambda: _WEIGHTS.__setitem__(1, 5.0), 54.0),
                                     (lambda: setattr(_Settings, "scale", 0.5), 13.5)):
                change()
                assert float(np.sum(transform(_read_in_place)(x))) == expected
        finally:
            _CONFIG["scale"], _WEIGHTS[:], _Settings.scale = 2.0, 2.0, 2.0


def test_changing_a_closure_or_bound_value_in_place_traces_again():
    weights, settings = np.full(3, 2.0, np.float32), {"scale": 2.0}

    def loss(w, x):
        return jnp.sum(x * w * settings["scale"])

    bound = functools.partial(loss, weights)
    model = _Model(np.array(2.0, np.float32))
    x = np.ones(3, np.float32)
    assert (float(srcjax.grad(bound)(x)[0]), float(srcjax.grad(model)(1.0))) == (4.0, 2.0)
    weights[0], settings["scale"] = 3.0, 5.0
    model.w[...] = 7.0
    assert (float(srcjax.grad(bound)(x)[0]), float(srcjax.grad(model)(1.0))) == (15.0, 7.0)


def _chain(depth):
    f = lambda x: x * SCALE  # noqa: E731
    for _ in range(depth):
        f = (lambda g: lambda x: g(x) + 0.0)(f)
    return f


def test_rebinding_a_global_read_many_calls_deep_traces_again():
    global SCALE
    loss = _chain(100)  # (more functions than the check once followed: the last one's global went unchecked)
    assert float(srcjax.grad(loss)(1.0)) == 1.0
    saved, SCALE = SCALE, np.float32(3.0)
    try:
        assert float(srcjax.grad(loss)(1.0)) == 3.0
    finally:
        SCALE = saved


class _Scaler:
    def _factor(self):
        return _CONFIG["scale"]

    def __call__(self, x):
        return x * self._factor()


def _through_this_module(x):
    return _THIS_MODULE._scaled(x)


_THIS_MODULE = sys.modules[__name__]


def test_a_change_read_by_a_method_or_a_module_function_traces_again():
    global SCALE
    scaler = _Scaler()
    assert (float(srcjax.grad(scaler)(1.0)), float(srcjax.grad(_through_this_module)(1.0))) == (2.0, 1.0)
    saved, SCALE = SCALE, np.float32(4.0)
    _CONFIG["scale"] = 3.0  # (read by a method the object's class holds; SCALE by a function read off a module)
    try:
        assert (float(srcjax.grad(scaler)(1.0)), float(srcjax.grad(_through_this_module)(1.0))) == (3.0, 4.0)
    finally:
        SCALE, _CONFIG["scale"] = saved, 2.0


def test_a_custom_rule_reading_a_changed_value_traces_again():
    settings = {"slope": 2.0}

    @srcjax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (f(x), None), lambda _, ct: (settings["slope"] * ct,))
    assert float(srcjax.grad(f)(1.0)) == 2.0
    settings["slope"] = 9.0  # (JAX runs the rule again at each call and reads 9)
    assert float(srcjax.grad(f)(1.0)) == 9.0
    settings = {"slope": 4.0}  # (rebinding the closure's variable too)
    assert float(srcjax.grad(f)(1.0)) == 4.0


# -- check_grads ------------------------------------------------------------------------------------------------
def test_check_grads_accepts_true_derivatives_and_rejects_wrong_rules():
    check_grads(lambda x, p: {"a": jnp.sin(x) * p["s"], "b": (x**2, p["s"] ** 3)}, (X, {"s": 0.5}), order=2)
    check_grads(lambda z: z * z * (1 + 2j), (Z,), order=2)
    check_grads(lambda z: jnp.sum(jnp.abs(z) ** 2), (Z,), order=1, modes=["rev"])
    with pytest.raises(AssertionError):
        check_grads(lambda x: scaled_sin(x, 2.0), (np.float32(0.3),), order=1, modes=["fwd"])
    with pytest.raises(AssertionError):
        check_grads(lambda x: scaled_sin_v(x, 2.0), (np.float32(0.3),), order=1, modes=["rev"])
    with pytest.raises(ValueError, match="unknown mode"):
        check_grads(jnp.sin, (X,), order=1, modes=["sideways"])
