"""``flatten_util.ravel_pytree``: the flat vector and its inverse, eagerly and under jit, grad and vmap, with
JAX's dtype rules (one dtype: the inverse keeps its input's dtype; several: it casts back and checks).
Expected values: NumPy, and JAX 0.10.2's behaviour for the dtypes and errors."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.flatten_util import ravel_pytree


def test_round_trip_keeps_structure_shapes_and_dtypes():
    tree = {"b": jnp.arange(3.0), "a": (jnp.ones((2, 2)), jnp.array(2, jnp.int32)), "c": None}
    flat, unravel = ravel_pytree(tree)
    assert flat.dtype == np.float32 and flat.shape == (8,)
    np.testing.assert_array_equal(flat, [1, 1, 1, 1, 2, 0, 1, 2])  # leaves in sorted-key order
    back = unravel(flat)
    assert back["c"] is None and back["a"][1].dtype == np.int32 and back["a"][0].shape == (2, 2)
    np.testing.assert_array_equal(back["b"], [0, 1, 2])


def test_under_jit_grad_and_vmap():
    params = {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)}

    def loss(p):
        flat, unravel = ravel_pytree(p)
        return jnp.sum(flat ** 2) + jnp.sum(unravel(flat * 2)["w"])

    for g in (srcjax.grad(loss)(params), srcjax.jit(srcjax.grad(loss))(params)):
        np.testing.assert_allclose(g["w"], np.full((2, 3), 4.0))
        np.testing.assert_allclose(g["b"], np.zeros(3))
    flat, unravel = ravel_pytree(params)
    batch = srcjax.vmap(unravel)(jnp.stack([flat, flat + 1]))
    assert batch["w"].shape == (2, 2, 3)
    np.testing.assert_allclose(batch["b"][1], np.ones(3))
    np.testing.assert_allclose(srcjax.jit(lambda v: unravel(v)["w"])(flat), np.ones((2, 3)))


def test_empty_tree_and_dtype_rules():
    flat, unravel = ravel_pytree([])
    assert flat.shape == (0,) and flat.dtype == np.float32 and unravel(flat) == []
    mixed, unravel_mixed = ravel_pytree((jnp.ones(2, jnp.float16), jnp.ones(1, jnp.float32)))
    assert mixed.dtype == np.float32
    assert [x.dtype for x in unravel_mixed(mixed)] == [np.float16, np.float32]
    with pytest.raises(TypeError, match="dtype int32"):
        unravel_mixed(mixed.astype(jnp.int32))
    _, unravel_one = ravel_pytree({"a": jnp.ones(2, jnp.float16)})
    assert unravel_one(jnp.ones(2, jnp.float32))["a"].dtype == np.float32  # one dtype: the input's is kept
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        unravel_one(jnp.ones(3))
