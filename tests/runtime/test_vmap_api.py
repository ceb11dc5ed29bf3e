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
