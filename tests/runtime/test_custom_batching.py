"""``custom_batching.custom_vmap``: the user's batching rule replaces the function under vmap (JAX 0.10.2's
behaviour, its outputs recorded below)."""

import numpy as np
import pytest

import srcjax as jax
import srcjax.numpy as jnp
from srcjax.custom_batching import custom_vmap, sequential_vmap

CALLS = []


@custom_vmap
def f(x, y):
    return x + y


@f.def_vmap
def _f_rule(axis_size, in_batched, xs, ys):
    CALLS.append((axis_size, list(in_batched)))
    return (xs * ys if in_batched[1] else xs * 10), True


X, Y = jnp.arange(3.0), jnp.ones(3) * 2


def test_function_outside_vmap_rule_inside():
    CALLS.clear()
    np.testing.assert_array_equal(np.asarray(f(X, Y)), [2.0, 3.0, 4.0])
    assert CALLS == []
    np.testing.assert_array_equal(np.asarray(jax.vmap(f)(X, Y)), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(jax.vmap(f, in_axes=(0, None))(X, 2.0)), [0.0, 10.0, 20.0])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f))(X, Y)), [0.0, 2.0, 4.0])
    assert CALLS == [(3, [True, True]), (3, [True, False]), (3, [True, True])]
    # nothing batched: the function runs, broadcast (JAX: [3. 3.])
    np.testing.assert_array_equal(np.asarray(jax.vmap(f, in_axes=(None, None), axis_size=2)(1.0, 2.0)), [3.0, 3.0])
    # the derivative of the batched function is the rule's (JAX: [2. 2. 2.])
    np.testing.assert_array_equal(np.asarray(jax.grad(lambda x: jax.vmap(f)(x, Y).sum())(X)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(jax.vmap(jax.vmap(f))(jnp.ones((2, 3)), jnp.ones((2, 3)))),
                                  np.ones((2, 3)))


def test_pytrees_and_unbatched_outputs():
    @custom_vmap
    def g(d):
        return {"a": d["x"] * 2, "b": d["y"]}

    seen = []

    @g.def_vmap
    def _(axis_size, in_batched, d):
        seen.append(in_batched)
        return {"a": d["x"] * 3, "b": d["y"]}, {"a": in_batched[0]["x"], "b": in_batched[0]["y"]}

    out = jax.vmap(g, in_axes=({"x": 0, "y": None},))({"x": X, "y": 5.0})
    assert seen == [[{"x": True, "y": False}]]
    np.testing.assert_array_equal(np.asarray(out["a"]), [0.0, 3.0, 6.0])
    np.testing.assert_array_equal(np.asarray(out["b"]), [5.0, 5.0, 5.0])


def test_sequential_vmap_and_errors():
    @sequential_vmap
    def h(x, y):
        return jnp.sum(x) * y

    np.testing.assert_array_equal(np.asarray(jax.vmap(h, in_axes=(0, None))(jnp.ones((4, 2)), 3.0)), [6.0] * 4)

    @custom_vmap
    def bad(x):
        return x

    @bad.def_vmap
    def _(axis_size, in_batched, x):
        return x[0], True  # claims batched, is not

    with pytest.raises(TypeError, match="custom_vmap rule"):
        jax.vmap(bad)(X)
