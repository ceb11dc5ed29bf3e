"""srcjax.numpy products (dot, matmul, einsum, ...), convolve/correlate, trace, and lax's products and
convolutions: values against NumPy in float64, result dtypes and weak types as JAX gives them (integers wrap,
bools stay bool), numbers recorded from jax 0.10 where NumPy has no counterpart, and bad operands."""


import numpy as np
import pytest

import srcjax.runtime.lax as lax
import srcjax.runtime.numpy as jnp
from srcjax.runtime.lax import convolution as lc
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.primitives.core import interpreting
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(2)


def close(got, want, tol=2e-5):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def randn(*shape):
    return RNG.standard_normal(shape)


# -- values against NumPy --------------------------------------------------------------------------------
MATMULS = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
           ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (5, 3, 4)), ((5, 2, 3), (1, 3, 4)), ((2, 1, 2, 3), (1, 5, 3, 4)),
           ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((3,), (2, 3, 1))]


@pytest.mark.parametrize("sa, sb", MATMULS)
def test_matmul(sa, sb):
    a, b = randn(*sa), randn(*sb)
    close(jnp.matmul(a.astype(np.float32), b.astype(np.float32)), a @ b)
    close(jnp.asarray(a.astype(np.float32)) @ b.astype(np.float32), a @ b)


@pytest.mark.parametrize("sa, sb", [((), (3,)), ((3,), ()), ((2, 3), (3,)), ((2, 3), (4, 3, 2)), ((3,), (3,)),
                                    ((2, 3, 4), (4,)), ((), ())])
def test_dot_and_inner(sa, sb):
    a, b = randn(*sa), randn(*sb)
    close(jnp.dot(a.astype(np.float32), b.astype(np.float32)), np.dot(a, b))
    if not sa or not sb or sa[-1] == sb[-1]:
        close(jnp.inner(a.astype(np.float32), b.astype(np.float32)), np.inner(a, b))


def test_tensordot_kron_outer_vdot():
    a, b = randn(2, 3, 4), randn(4, 3, 5)
    close(jnp.tensordot(a, b, ((1, 2), (1, 0))), np.tensordot(a, b, ((1, 2), (1, 0))))
    close(jnp.tensordot(a, b, 1), np.tensordot(a, b, 1))
    close(jnp.tensordot(a, b, 0), np.tensordot(a, b, 0))
    close(jnp.tensordot(a, b, (-1, 0)), np.tensordot(a, b, (-1, 0)))
    close(jnp.kron(a[0], b[0]), np.kron(a[0], b[0]))
    close(jnp.kron(a, b[0, 0]), np.kron(a, b[0, 0]))
    close(jnp.kron(2.0, b[0, 0]), np.kron(2.0, b[0, 0]))
    close(jnp.outer(a[0], b[0]), np.outer(a[0], b[0]))
    c = randn(2, 3) + 1j * randn(2, 3)
    close(jnp.vdot(c, c[::-1]), np.vdot(c, c[::-1]))


def test_products_of_one_term_keep_negative_zero():
    # a product with nothing contracted, or a contraction of one term, is one multiplication per element in JAX
    # (jax 0.10: outer([-1, 2], [0, 3]) is [[-0, -3], [0, 6]]); NumPy's BLAS adds it to 0, making -0.0 0.0
    a, b = np.array([-1.0, 2.0]), np.array([0.0, 3.0])
    for got in (jnp.outer(a, b), jnp.kron(a, b), jnp.tensordot(a, b, 0), a[:, None] @ jnp.asarray(b[None]),
                jnp.matmul(a[None, :, None], b[None, None]), jnp.einsum("i,j->ij", a, b)):
        got = np.asarray(got).reshape(2, 2)
        np.testing.assert_array_equal(got, np.outer(a, b))
        np.testing.assert_array_equal(np.signbit(got), [[True, True], [False, False]])


def test_vecdot_matvec_vecmat_conjugate_the_vector():
    m = randn(2, 3) + 1j * randn(2, 3)
    v = randn(3) + 1j
    close(jnp.vecdot(m, v), np.vecdot(m, v))
    close(jnp.vecdot(m.T, v[:, None], axis=0), np.vecdot(m.T, v[:, None], axis=0))
    close(jnp.matvec(m, v), np.matvec(m, v))
    close(jnp.vecmat(v, m.T), np.vecmat(v, m.T))
    batch, w = randn(4, 2, 3), randn(1, 3)
    close(jnp.matvec(batch, w), np.matvec(batch, w))
    close(jnp.vecmat(w, batch.transpose(0, 2, 1)), np.vecmat(w, batch.transpose(0, 2, 1)))


@pytest.mark.parametrize("sa, sb, axes", [((3,), (3,), {}), ((2,), (3,), {}), ((2,), (2,), {}), ((4, 3), (3,), {}),
                                          ((4, 2), (1, 3), {}), ((3, 4, 5), (4, 5, 2), dict(axisa=0, axisb=2, axisc=1)),
                                          ((4, 3), (4, 3), dict(axis=1))])
def test_cross(sa, sb, axes):
    a, b = randn(*sa), randn(*sb)
    close(jnp.cross(a, b, **axes), _numpy_cross(a, b, **axes))


def _numpy_cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``np.cross``, 2-vectors included (NumPy 2 deprecates, then refuses, them; JAX keeps them)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
    if a.shape[-1] == b.shape[-1] == 2:  # the z component alone
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    pad = lambda v: np.concatenate([v, np.zeros((*v.shape[:-1], 1))], -1) if v.shape[-1] == 2 else v  # noqa: E731
    return np.moveaxis(np.cross(pad(a), pad(b)), -1, axisc)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->", [(3, 4)]), ("ij->ji", [(3, 4)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("i,j,k", [(2,), (3,), (4,)]),
    ("ijk,kl,lm->im", [(2, 3, 4), (4, 5), (5, 6)]), ("iij->j", [(3, 3, 4)]), ("ijk,ijk->", [(2, 3, 4), (2, 3, 4)]),
    ("i,i", [(3,), (3,)]), ("ab,bc,cd,de", [(2, 3), (3, 4), (4, 5), (5, 2)]), ("iji->j", [(3, 4, 3)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("i->", [(0,)]), ("", [()]),
    ("ij,jk", [(2, 0), (0, 3)]), ("ba", [(2, 3)]), ("i...->...", [(3, 2, 4)]), ("ij,i->j", [(1, 3), (4,)]),
]


@pytest.mark.parametrize("subscripts, shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum(subscripts, shapes):
    ops = [randn(*s) for s in shapes]
    if subscripts == "ij,i->j":  # a size-1 label broadcasts against a larger one
        want = np.einsum("ij,i->j", np.broadcast_to(ops[0], (4, 3)), ops[1])
    else:
        want = np.einsum(subscripts, *ops)
    close(jnp.einsum(subscripts, *[o.astype(np.float32) for o in ops]), want)
    close(jnp.einsum(subscripts, *[o.astype(np.float32) for o in ops], optimize=False), want)


def test_einsum_interleaved_form_and_path():
    x, y = randn(2, 3), randn(3, 4)
    close(jnp.einsum(x, [0, 1], y, [1, 2], [0, 2]), x @ y)
    close(jnp.einsum(x, [0, 1], y, [1, 2]), x @ y)
    close(jnp.einsum(x, [Ellipsis, 1], y, [1, 2], [Ellipsis, 2]), x @ y)
    path, text = jnp.einsum_path("ij,jk,kl->il", randn(2, 3), randn(3, 4), randn(4, 5))
    # JAX 0.10.2 gives [(0, 1), (0, 1)] here (a list of pairs, no NumPy 'einsum_path' header), and left to
    # right without optimizing
    assert path == [(0, 1), (0, 1)] and "ij,jk,kl->il" in text
    assert jnp.einsum_path("ij,jk,kl->il", randn(2, 3), randn(3, 4), randn(4, 5), optimize=False)[0] == [(0, 1)] * 2
    assert jnp.einsum_path("ij->i", randn(2, 3))[0] == [(0,)]


def test_einsum_contracts_with_dot_general_not_loops():
    builder = Builder("f")
    with interpreting(builder):
        a = builder.param(TensorType(np.float32, (8, 16)))
        b = builder.param(TensorType(np.float32, (16, 32)))
        c = builder.param(TensorType(np.float32, (32, 4)))
        assert jnp.einsum("ij,jk,kl->il", a, b, c).aval == TensorType(np.float32, (8, 4))
    assert [op.prim.name for op in builder.function.body.ops].count("dot_general") == 2


# -- dtypes ----------------------------------------------------------------------------------------------
def test_integer_products_wrap_and_bool_products_stay_bool():
    x = jnp.arange(10**7, dtype=np.int32)
    assert int(jnp.dot(x, x)) == -1039031360  # recorded from JAX
    small = jnp.full(3, 100, dtype=np.int8)
    out = jnp.dot(small, small)
    assert out.dtype == np.int8 and int(out) == 48  # 30000 mod 256, as a signed byte
    assert jnp.einsum("i,i", small, small).dtype == np.int8
    assert jnp.einsum("ij->", jnp.ones((3, 3), np.int8)).dtype == np.int8
    t = jnp.asarray([True, False])
    assert jnp.dot(t, t).dtype == np.bool_ and bool(jnp.dot(t, t))
    assert jnp.outer(t, t).dtype == np.bool_ and jnp.einsum("i,i", t, t).dtype == np.bool_
    assert jnp.einsum("ij->", jnp.ones((2, 2), bool)).dtype == np.bool_
    assert jnp.matmul(jnp.ones((2, 2), np.int8), jnp.ones(2, np.int32)).dtype == np.int32


def test_precision_is_accepted_in_jax_spellings():
    a = randn(3, 3)
    for precision in (None, "highest", "bfloat16", lax.Precision.HIGH, ("high", "default")):
        close(jnp.dot(a, a, precision=precision), a @ a)
        close(lax.dot(a, a, precision=precision), a @ a)


def test_weak_types_and_preferred_element_type():
    assert jnp.dot(2.0, 3.0).weak_type and jnp.dot(2.0, 3.0).dtype == np.float32
    assert not jnp.dot(jnp.ones(3), 3.0).weak_type
    out = jnp.dot(jnp.ones(3, np.int8), jnp.ones(3, np.int8), preferred_element_type=np.float32)
    assert out.dtype == np.float32 and float(out) == 3.0
    big = jnp.full(4, 100, dtype=np.int8)
    assert int(jnp.matmul(big, big, preferred_element_type=np.int32)) == 40000
    assert int(jnp.einsum("i,i", big, big, preferred_element_type=np.int32)) == 40000
    assert jnp.dot(jnp.ones(3, np.int32), jnp.ones(3, np.float32)).dtype == np.float32


def test_integer_preferred_element_type_of_float_operands_converts_the_sums():
    # JAX sums float operands as floats and converts the result (0.6 + 0.7 -> 1; jax 0.10: [[1]]), where
    # rounding the operands to integers first gives 0
    import srcjax

    a, b = np.array([[0.6, 0.7], [-2.5, 1.25]], np.float32), np.ones((2, 1), np.float32)
    want = np.trunc(a.astype(np.float64) @ b).astype(np.int32)
    for dot in (lambda x, y: lax.dot(x, y, preferred_element_type=np.int32),
                lambda x, y: jnp.matmul(x, y, preferred_element_type=np.int32),
                lambda x, y: jnp.einsum("ij,jk->ik", x, y, preferred_element_type=np.int32)):
        for f in (dot, srcjax.jit(dot)):
            out = f(a, b)
            assert out.dtype == np.int32 and np.array_equal(np.asarray(out), want), np.asarray(out)
    half = jnp.dot(a.astype(np.float16), b.astype(np.float16), preferred_element_type=np.int16)
    assert half.dtype == np.int16 and np.array_equal(np.asarray(half), want)
    # operands of two dtypes are both converted to the preferred one first, as JAX lowers them (jax 0.10: [[0]]
    # for int8 [[1, 2]] and float32 [[0.6], [0.7]]; [[2]] when both are float32)
    x, y = np.array([[1, 2]], np.int8), np.array([[0.6], [0.7]], np.float32)
    for dot in (lambda x, y: lax.dot(x, y, preferred_element_type=np.int32),
                lambda x, y: jnp.matmul(x, y, preferred_element_type=np.int32),
                lambda x, y: jnp.einsum("ij,jk->ik", x, y, preferred_element_type=np.int32)):
        assert np.asarray(dot(x, y)).tolist() == [[0]] and np.asarray(srcjax.jit(dot)(x, y)).tolist() == [[0]]
        assert np.asarray(dot(x.astype(np.float32), y)).tolist() == [[2]]
    # an integer product's preferred type may not be narrower (JAX's TypeError)
    for narrower in (np.bool_, np.int8, np.float16):
        with pytest.raises(TypeError, match="narrower"):
            lax.dot(jnp.ones((2, 2), np.int32), jnp.ones((2, 2), np.int32), preferred_element_type=narrower)


# -- convolve, correlate, trace --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_all_length_pairs(mode):
    for n in range(1, 6):
        for m in range(1, 6):
            a, v = randn(n), randn(m)
            close(jnp.convolve(a, v, mode), np.convolve(a, v, mode), 1e-5)
            close(jnp.correlate(a, v, mode), np.correlate(a, v, mode), 1e-5)


def test_convolve_dtypes_and_complex_correlate():
    out = jnp.convolve(jnp.arange(5), jnp.arange(3))
    assert out.dtype == np.float32 and out.tolist() == [0, 0, 1, 4, 7, 10, 8]  # recorded from JAX
    a, v = np.array([1 + 1j, 2, 3j]), np.array([1j, 2.0])
    close(jnp.correlate(a, v, "full"), np.correlate(a, v, "full"))
    close(jnp.correlate(a, v, "full"), [2 + 2j, 5 - 1j, 4j, 3])  # recorded from JAX
    with pytest.raises(ValueError, match="1-dimensional"):
        jnp.convolve(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="cannot be empty"):
        jnp.correlate(np.ones(0), np.ones(2))
    with pytest.raises(ValueError, match="mode"):
        jnp.convolve(np.ones(3), np.ones(2), "middle")


@pytest.mark.parametrize("shape, offset, axis1, axis2", [((3, 3), 0, 0, 1), ((3, 4), 1, 0, 1), ((3, 4), -2, 0, 1),
                                                          ((2, 3, 4), 1, 0, 2), ((2, 3, 4), 0, -1, -2),
                                                          ((3, 3), 5, 0, 1), ((0, 2), 0, 0, 1)])
def test_trace(shape, offset, axis1, axis2):
    a = randn(*shape)
    close(jnp.trace(a.astype(np.float32), offset, axis1, axis2), np.trace(a, offset, axis1, axis2))


def test_trace_dtypes_recorded_from_jax():
    assert jnp.trace(jnp.ones((3, 3), bool)).dtype == np.int32
    assert jnp.trace(jnp.ones((3, 3), np.int8)).dtype == np.int32
    assert jnp.trace(jnp.ones((3, 3), np.uint8)).dtype == np.uint32
    assert jnp.trace(jnp.ones((3, 3)), dtype=np.int32).dtype == np.int32
    assert float(jnp.asarray(np.eye(3, dtype=np.float32)).trace()) == 3.0
    with pytest.raises(ValueError, match="at least 2 axes"):
        jnp.trace(jnp.ones(3))


# -- bad operands ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, message", [
    (lambda: jnp.matmul(jnp.ones(3), 2.0), ValueError, "must have ndim at least 1"),
    (lambda: jnp.matmul(jnp.ones((2, 3)), jnp.ones((2, 3))), ValueError, "mismatch in its core dimension"),
    (lambda: jnp.matmul(jnp.ones((2, 2, 3)), jnp.ones((3, 3, 2))), ValueError, "cannot be broadcast"),
    (lambda: jnp.dot(jnp.ones((2, 3)), jnp.ones((2, 3))), TypeError, "not aligned"),
    (lambda: jnp.tensordot(jnp.ones((2, 3)), jnp.ones((2, 3)), 1), TypeError, "differ in size"),
    (lambda: jnp.tensordot(jnp.ones((2, 3)), jnp.ones((2, 3)), 3), TypeError, "between 0 and"),
    (lambda: jnp.tensordot(jnp.ones((2, 3)), jnp.ones((2, 3)), ((0,), (0, 1))), TypeError, "equal length"),
    (lambda: jnp.einsum("ij,jk", jnp.ones((2, 3)), jnp.ones((2, 3))), ValueError, "Size of label 'j' for operand 1"),
    (lambda: jnp.einsum("ij,k", jnp.ones((2, 3))), ValueError, "2 operand subscripts for 1 operands"),
    (lambda: jnp.einsum("ij->k", jnp.ones((2, 3))), ValueError, "does not appear"),
    (lambda: jnp.einsum("i", jnp.ones((2, 3))), ValueError, "name 1 axes"),
    (lambda: jnp.einsum("i%", jnp.ones((2, 3))), ValueError, "invalid subscript"),
    (lambda: jnp.cross(jnp.ones(4), jnp.ones(3)), ValueError, "either 2 or 3"),
    (lambda: jnp.vdot(jnp.ones(4), jnp.ones(3)), ValueError, "4 and 3 elements"),
    (lambda: jnp.vecdot(jnp.ones(4), jnp.ones(3)), ValueError, "axes must match"),
    (lambda: jnp.dot([1, 2], jnp.ones(2)), TypeError, "convert lists and tuples"),
    (lambda: jnp.outer(jnp.ones(2), jnp.ones(2), out=jnp.ones((2, 2))), NotImplementedError, "out"),
    (lambda: jnp.dot(jnp.ones(2), jnp.ones(2), precision="fast"), ValueError, "Precision argument"),
])
def test_bad_operands(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- lax -------------------------------------------------------------------------------------------------
def test_lax_dot_general_dot_and_batch_matmul():
    a, b = randn(2, 3, 4), randn(2, 4, 5)
    close(lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), a @ b)
    close(lax.batch_matmul(a, b), a @ b)
    close(lax.dot(a[0], b[0]), a[0] @ b[0])
    close(lax.dot(a[0, 0], b[0, :, 0]), a[0, 0] @ b[0, :, 0])
    # recorded from JAX: lax.dot_general promotes mixed operands (int32 with float16 gives float16)
    assert lax.dot_general(jnp.ones(3, np.int32), jnp.ones(3, np.float16), (((0,), (0,)), ((), ()))).dtype == \
        np.float16
    with pytest.raises(TypeError, match="vectors or matrices"):
        lax.dot(a, b)
    with pytest.raises(TypeError, match="dimension_numbers must be"):
        lax.dot_general(a, b, (2, 1))


@pytest.mark.parametrize("lhs, rhs, want", [  # recorded from JAX 0.10.2: the operand of higher precision,
    ("int8", "uint8", [106, "int8"]),      # compared as XLA does (float range, then bits, then sign),
    ("uint32", "int8", [106, "uint32"]),   # not the promotion lattice (int8 with uint8 would be int16)
    ("uint16", "int8", [106, "uint16"]),
    ("int32", "uint32", [106, "int32"]),
    ("int32", "float16", [106.0, "float16"]),
    ("bool", "int8", [3, "int8"]),
])
def test_lax_dot_of_mixed_dtypes_computes_in_the_more_precise_one(lhs, rhs, want):
    a = jnp.asarray(np.array([100, 3], lhs) if lhs != "bool" else np.array([True, True]))
    got = lax.dot(a, jnp.asarray(np.array([1, 2], rhs)))
    assert [got.tolist(), got.dtype.name] == want and not got.weak_type
    wrapped = lax.dot(jnp.asarray(np.array([100, 3], np.int8)), jnp.asarray(np.array([200, 2], np.uint8)))
    assert wrapped.tolist() == 38  # (JAX: 20006 wraps in int8)
    assert lax.dot_general(jnp.asarray(np.array([1, 2], np.int8)), 2, (((), ()), ((), ()))).dtype == np.int32


def test_lax_conv_general_dilated_takes_operands_of_one_dtype():
    """JAX 0.10.2 refuses a convolution of an int32 by a float32 (or float32 by float16); lax does not promote."""
    x, w = jnp.arange(3).reshape(1, 1, 3), jnp.ones((1, 1, 2))
    with pytest.raises(TypeError, match="same dtypes, got int32, float32"):
        lax.conv_general_dilated(x, w, (1,), "VALID")
    with pytest.raises(TypeError, match="same dtypes, got float32, float16"):
        lax.conv_general_dilated(w, jnp.ones((1, 1, 2), np.float16), (1,), "VALID")
    assert lax.conv_general_dilated(np.ones((1, 1, 3)), w, (1,), "VALID").tolist() == [[[2.0, 2.0]]]


def test_lax_convolutions_recorded_from_jax():
    x = jnp.arange(1.0, 7.0).reshape(1, 3, 2, 1)  # NHWC
    w = jnp.asarray([1.0, 2.0, -1.0, 0.5]).reshape(2, 2, 1, 1)  # HWIO
    same = lax.conv_transpose(x, w, (2, 1), "SAME")
    assert same.shape == (1, 6, 2, 1)
    assert same.reshape(-1).tolist() == [0.5, 0.0, 2.0, 5.0, 1.5, -1.0, 6.0, 11.0, 2.5, -2.0, 10.0, 17.0]
    valid = lax.conv_transpose(x, w, (2, 1), "VALID")
    assert valid.shape == (1, 6, 3, 1) and valid.reshape(-1).tolist()[:6] == [0.5, 0.0, -2.0, 2.0, 5.0, 2.0]
    explicit = lax.conv_transpose(x, w, (2, 1), [(1, 0), (0, 1)])
    assert explicit.reshape(-1).tolist() == [0.0, -2.0, 5.0, 2.0, -1.0, -4.0, 11.0, 4.0, -2.0, -6.0]
    flipped = lax.conv_transpose(x, w, (2, 1), "SAME", transpose_kernel=True)
    assert flipped.reshape(-1).tolist() == [1.0, 4.0, -1.0, -1.5, 3.0, 10.0, -3.0, -2.5, 5.0, 16.0, -5.0, -3.5]
    line = jnp.arange(1.0, 11.0).reshape(1, 1, 10)
    kernel = jnp.asarray([1.0, 0.0, -1.0]).reshape(1, 1, 3)
    assert lax.conv(line, kernel, (2,), "SAME").reshape(-1).tolist() == [-2.0, -2.0, -2.0, -2.0, 9.0]
    assert lax.conv_general_dilated(line, kernel, (3,), "SAME_LOWER", rhs_dilation=(2,)).reshape(-1).tolist() == \
        [-3.0, -4.0, -4.0, 8.0]
    dilated = lax.conv_with_general_padding(line, kernel, (1,), [(1, 1)], (2,), None).reshape(-1).tolist()
    assert dilated == [0.0, -1.0] * 9 + [0.0]
    with pytest.raises(ValueError, match="String padding is not implemented"):
        lax.conv_general_dilated(line, kernel, (1,), "SAME", lhs_dilation=(2,))


def test_lax_convolution_helpers_recorded_from_jax():
    assert lc.padtype_to_pads((10, 7), (3, 4), (2, 3), "SAME") == [(0, 1), (1, 2)]
    assert lc.padtype_to_pads((10, 7), (3, 4), (2, 3), "same_lower") == [(1, 0), (2, 1)]
    assert lc.padtype_to_pads((10,), (3,), (2,), "VALID") == [(0, 0)]
    with pytest.raises(RuntimeError, match="Unrecognized padding"):
        lc.padtype_to_pads((10,), (3,), (2,), "FULL")
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NCHW")) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 1, 2, 3))
    assert lax.conv_general_permutations(("NWHC", "HWIO", "NCWH")) == ((0, 3, 2, 1), (3, 2, 0, 1), (0, 1, 3, 2))
    with pytest.raises(TypeError, match="exactly once"):
        lax.conv_general_permutations(("NHWC", "HWIX", "NCHW"))
    dn = lax.conv_dimension_numbers((1, 8, 8, 3), (3, 3, 3, 4), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 4), (2, 2), "SAME", ("NHWC", "HWIO", "NCHW")) == \
        (1, 4, 4, 4)
    layouts = ("NCHW", "OIHW", "NCHW")
    assert lax.conv_transpose_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (2, 2), "SAME", layouts) == (1, 4, 16, 16)
    assert lax.conv_transpose_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (2, 2), [(1, 0), (2, 2)], layouts) == \
        (1, 4, 14, 17)
    assert lax.conv_shape_tuple((2, 3, 10), (4, 3, 3), (2,), [(1, 1)]) == (2, 4, 5)


def test_lax_conv_general_dilated_patches_recorded_from_jax():
    x = np.arange(2 * 3 * 5 * 4, dtype=np.float32).reshape(2, 3, 5, 4)
    out = lax.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME")
    assert out.shape == (2, 18, 5, 2)
    assert out.reshape(-1)[:20].tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19]
    y = np.arange(2 * 5 * 4 * 3, dtype=np.float32).reshape(2, 5, 4, 3)
    out = lax.conv_general_dilated_patches(y, (2, 2), (1, 1), "VALID", dimension_numbers=("NHWC", "OIHW", "NHWC"))
    assert out.shape == (2, 4, 3, 12) and float(out.sum()) == 17136.0
    assert out[1, 2, 1].tolist() == [87, 90, 99, 102, 88, 91, 100, 103, 89, 92, 101, 104]
