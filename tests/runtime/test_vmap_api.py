"""srcjax.vmap: axes specifications, named axes and collectives, composition, errors."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from tests.corpus import vmap_programs as p


def test_in_axes_forms():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    y = np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(srcjax.vmap(p.add)(x, x), x + x)
    np.testing.assert_allclose(srcjax.vmap(p.add, in_axes=(0, None))(x, y), x + y)
    np.testing.assert_allclose(srcjax.vmap(p.add, in_axes=[1, None])(x.T, y), x + y)
    np.testing.assert_allclose(srcjax.vmap(p.add, in_axes=(-1, 0))(x.T, x), x + x)
    np.testing.assert_allclose(srcjax.vmap(p.add, out_axes=1)(x, x), (x + x).T)
    np.testing.assert_allclose(srcjax.vmap(p.add, out_axes=-1)(x, x), (x + x).T)


def test_pytree_prefixes():
    params = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32)}
    xs = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    out = srcjax.vmap(p.affine, in_axes=({"w": None, "b": None}, 0))(params, xs)
    np.testing.assert_allclose(out, xs @ params["w"])
    out = srcjax.vmap(p.affine, in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(out, xs @ params["w"])
    pair = srcjax.vmap(p.pair, out_axes=(0, None))(xs)
    np.testing.assert_allclose(pair[0], xs * 2)
    np.testing.assert_allclose(pair[1], 7.0)


def test_registered_nodes_in_axes_prefixes():
    """in_axes may hold a registered node (a dataclass, a class with its own flatten) as a prefix of the
    argument of that type, its children giving the axes of theirs (JAX allows any pytree prefix)."""
    import dataclasses

    @srcjax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Pair:
        a: object
        b: object
        tag: str = dataclasses.field(default="t", metadata=dict(static=True))

    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    out = srcjax.vmap(lambda p: p.a.sum() * p.b, in_axes=(Pair(0, None),))(Pair(x, np.float32(2)))
    np.testing.assert_allclose(out, x.sum(1) * 2)
    out = srcjax.vmap(lambda p: p.a + p.b, in_axes=(Pair(1, 0),))(Pair(x.T, x[:, 0]))
    np.testing.assert_allclose(out, x + x[:, :1])
    with pytest.raises(ValueError, match="tree prefix"):
        srcjax.vmap(lambda p: p.a, in_axes=(Pair(0, None, "other"),))(Pair(x, x))
    # and out_axes, for a result of a registered type
    out = srcjax.vmap(lambda r: Pair(r, r.sum()), out_axes=Pair(1, 0))(x)
    assert isinstance(out, Pair) and out.a.shape == (2, 3) and out.b.shape == (3,)
    np.testing.assert_allclose(out.a, x.T)


def test_nested_vmap_is_an_outer_product():
    a, b = np.arange(3.0, dtype=np.float32), np.arange(4.0, dtype=np.float32)
    out = srcjax.vmap(srcjax.vmap(p.mul, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(out, np.outer(a, b))


def test_named_axis_collectives():
    x = np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(srcjax.vmap(p.normalize, axis_name="i")(x), x / x.sum())
    np.testing.assert_allclose(srcjax.vmap(p.center, axis_name="i")(x), x - x.mean())
    np.testing.assert_allclose(srcjax.vmap(p.scaled_by_max, axis_name="i")(x), x / x.max())
    np.testing.assert_array_equal(srcjax.vmap(p.rank, axis_name="i")(x), np.arange(4))
    gathered = srcjax.vmap(p.gather_all, axis_name="i")(x)
    np.testing.assert_allclose(gathered, np.tile(x, (4, 1)))
    with pytest.raises(NameError, match="unbound axis name: i"):
        p.normalize(jnp.arange(3.0))


def test_data_dependent_control_flow_per_example():
    xs = jnp.array([-2.0, 0.5, 3.0, 40.0])
    np.testing.assert_allclose(srcjax.vmap(p.branchy)(xs), [p.branchy(float(x)) for x in xs])
    np.testing.assert_allclose(srcjax.vmap(p.halvings)(xs), [p.halvings(float(x)) for x in xs])


def test_composition():
    xs = jnp.array([0.3, -1.2, 2.0])
    per_example = [srcjax.grad(p.smooth)(float(x)) for x in xs]
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(p.smooth))(xs), per_example, rtol=1e-6)
    np.testing.assert_allclose(srcjax.jit(srcjax.vmap(srcjax.grad(p.smooth)))(xs), per_example, rtol=1e-6)
    np.testing.assert_allclose(srcjax.vmap(srcjax.jit(srcjax.grad(p.smooth)))(xs), per_example, rtol=1e-6)
    # per-example gradients of a loss over a batch
    w = jnp.array([0.5, -0.25])
    data = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
    grads = srcjax.vmap(srcjax.grad(p.example_loss), in_axes=(None, 0))(w, data)
    want = [srcjax.grad(p.example_loss)(w, d) for d in data]
    np.testing.assert_allclose(grads, np.stack(want), rtol=1e-6)
    # the gradient of a batched function
    g = srcjax.grad(lambda w: jnp.sum(srcjax.vmap(p.example_loss, in_axes=(None, 0))(w, data)))(w)
    np.testing.assert_allclose(g, np.sum(np.stack(want), axis=0), rtol=1e-5)


def test_errors():
    x = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="inconsistent sizes for array axes to be mapped"):
        srcjax.vmap(p.add)(x, np.ones((4, 2), np.float32))
    # each axis named as JAX names it: the parameter, the path inside it, or the keyword argument
    with pytest.raises(ValueError, match=r"(?s)size 3: axis 0 of argument t\[0\] of type float32\[3,2\];.*"
                                         r"size 4: axis 0 of argument t\[1\]"):
        srcjax.vmap(lambda t: t[0] + t[1][:3])((x, np.ones((4, 2), np.float32)))
    with pytest.raises(ValueError, match=r"size 5: axis 0 of kwargs\['b'\] of type float32\[5\]"):
        srcjax.vmap(lambda a, b: a)(x, b=np.ones(5, np.float32))
    with pytest.raises(ValueError, match="map its argument along axis 2"):
        srcjax.vmap(p.add, in_axes=2)(x, x)
    with pytest.raises(ValueError, match="in_axes must be an int, None, or a tuple"):
        srcjax.vmap(p.add, in_axes=(0, 0, 0))(x, x)
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        srcjax.vmap(p.add, in_axes=None)(x, x)
    with pytest.raises(TypeError, match="vmap expects a callable"):
        srcjax.vmap(3)


def test_lax_control_flow_under_vmap():
    xs = jnp.array([1.0, 2.0, 30.0])
    np.testing.assert_allclose(srcjax.vmap(p.with_lax_while)(xs), [p.with_lax_while(float(x)) for x in xs])
    np.testing.assert_allclose(srcjax.vmap(p.with_lax_cond)(xs), [p.with_lax_cond(float(x)) for x in xs])
    np.testing.assert_allclose(srcjax.vmap(p.with_fori)(xs), [p.with_fori(float(x)) for x in xs], rtol=1e-6)


def test_lax_is_used():  # the programs module really goes through lax
    assert p.lax is lax


def test_custom_rules_survive_vmap():
    xs = jnp.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(p.softplus))(xs), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(p.clipped))(xs), [10.0, 10.0, 10.0])
    np.testing.assert_allclose(srcjax.vmap(p.softplus)(xs), np.log1p(np.exp(np.asarray(xs))), rtol=1e-6)
    np.testing.assert_allclose(srcjax.jacrev(lambda v: p.clipped(v) * 1.0)(xs), np.eye(3) * 10.0)


def _sqrt_step_if_small(x):
    if x < 100.0:
        x = x + jnp.sqrt(100.0 - x)  # nan for the examples that do not take the branch
    return x


def _scale_by_max_if_mean_large(x):  # tests/fuzz/regressions/compose_grad_vmap_grad_nan.py
    if jnp.mean(x) > 1.0:
        x = x * jnp.max(x)  # max's derivative splits among ties: 0 / 0 where its residuals are not computed
    return jnp.mean(x)


def _sqrt_steps_while_small(x):
    while x < 100.0:
        x = x + jnp.sqrt(100.0 - x) + 1.0  # nan for the examples that have finished
    return x


def _sqrt_steps(x, n):
    for _ in range(n):
        x = x + jnp.sqrt(4.0 - x)  # nan for the examples past their own trip count
    return x


def test_untaken_branches_and_finished_examples_add_nothing_to_derivatives(x64):
    """A batched predicate runs a branch (a loop's body) for examples that do not take it (have finished) and
    throws the values away; inf or nan there must not reach a derivative either (0 * nan): JAX's rule reads a
    batched branch's operands through select(taken, x, stop_gradient(x)). Numbers from JAX 0.10.2 (lax.cond,
    vmap(jacfwd) of lax.while_loop / fori_loop, which JAX cannot reverse)."""
    def summed(f, *rest):
        return lambda x: jnp.sum(srcjax.vmap(f)(x, *rest))

    x = np.array([1.1, 150.0])
    for grad in (srcjax.grad, lambda f: srcjax.jit(srcjax.grad(f))):
        np.testing.assert_allclose(grad(summed(_sqrt_step_if_small))(x), [0.94972271, 1.0], rtol=1e-7)
        np.testing.assert_allclose(grad(summed(_sqrt_steps_while_small))(x), [-0.03160285, 1.0], rtol=1e-6)
        n = np.array([3, 1])
        np.testing.assert_allclose(grad(summed(_sqrt_steps, n))(np.array([1.0, 3.9])), [-0.12941832, -0.58113883],
                                   rtol=1e-7)
        xs = np.array([[0.3, -0.2], [0.1, 0.4], [1.5, 2.5]])
        hess = grad(lambda x: jnp.sum(srcjax.vmap(srcjax.grad(_scale_by_max_if_mean_large))(x)))(xs)
        np.testing.assert_allclose(hess, [[0.0, 0.0], [0.0, 0.0], [0.5, 1.5]], rtol=1e-12)
    # forward mode and the values themselves are unchanged
    np.testing.assert_allclose(srcjax.jacfwd(srcjax.vmap(_sqrt_step_if_small))(x), np.diag([0.94972271, 1.0]),
                               rtol=1e-7)
    np.testing.assert_allclose(srcjax.vmap(_sqrt_steps_while_small)(x), [_sqrt_steps_while_small(v) for v in x])


def _constant_early_return(x):  # tests/fuzz/regressions/vmap_jacrev_early_return_constant.py
    if x > -0.2:
        return 0.5
    k = 0
    while k < 2 and x < 0.5:
        k = k + 1
        x = x + 0.5 * jnp.tanh(x)
    return x


def _loop_in_each_branch(x):
    if x > 0.0:
        while x < 2.0:
            x = x + 0.5 + jnp.sin(x) ** 2
    else:
        while x > -2.0:
            x = x - 0.3 - jnp.cos(x) ** 2
    return x


def test_reverse_mode_through_loops_in_per_example_branches(x64):
    """A loop inside a branch keeps its residuals in a stack the branch yields (the other branches: an empty one);
    batched on a per-example predicate, the filled stack serves every example. Numbers: JAX 0.10.2, vmap(jacfwd)
    of lax.cond of lax.while_loop (JAX cannot reverse them)."""
    xs = np.array([0.3, -1.0, -0.1, 0.2, -3.0])
    want = [0.0, 1.34527014, 0.0, 0.0, 1.00677149]
    for d in (srcjax.jacrev, srcjax.grad):
        np.testing.assert_allclose(srcjax.vmap(d(_constant_early_return))(xs), want, rtol=1e-7)
        np.testing.assert_allclose(srcjax.jit(srcjax.vmap(d(_constant_early_return)))(xs), want, rtol=1e-7)
    xs = np.array([0.3, -1.0, 1.9, -0.5])
    want = [0.80007189, 0.15122901, 0.38814211, 0.24755259]
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(_loop_in_each_branch))(xs), want, rtol=1e-7)
    np.testing.assert_allclose(srcjax.jit(srcjax.vmap(srcjax.grad(_loop_in_each_branch)))(xs), want, rtol=1e-7)


def _squares_while_above(x):  # tests/fuzz/regressions/compose_vmap_vmap_grad_while.py
    k = 0
    while k < 3 and x > -0.2:
        k = k + 1
        x = x * x
    return x


def test_nested_vmaps_of_a_reverse_mode_loop_read_their_own_residuals():
    """Each vmap around grad of a loop adds an axis of examples that read their own entries of the residual stack
    (stack_get[lanes] with an index of one axis per vmap), whichever axis each vmap maps."""
    xs = np.array([[[0.5, -0.5, 1.1], [0.9, 0.1, -0.3]], [[-0.1, 0.7, 2.0], [1.0, -0.2, 0.3]]], np.float32)
    want = np.array([[[float(srcjax.grad(_squares_while_above)(float(v))) for v in r] for r in m] for m in xs])
    np.testing.assert_allclose(want[0, 0], [0.0625, 1.0, 8 * 1.1 ** 7], rtol=1e-6)
    g = srcjax.grad(_squares_while_above)
    np.testing.assert_allclose(srcjax.vmap(srcjax.vmap(g))(xs[0]), want[0], rtol=1e-6)
    np.testing.assert_allclose(srcjax.vmap(srcjax.vmap(srcjax.vmap(g)))(xs), want, rtol=1e-6)
    np.testing.assert_allclose(srcjax.jit(srcjax.vmap(srcjax.vmap(srcjax.vmap(g))))(xs), want, rtol=1e-6)
    np.testing.assert_allclose(srcjax.vmap(srcjax.vmap(g), in_axes=1, out_axes=1)(xs[1]), want[1], rtol=1e-6)
