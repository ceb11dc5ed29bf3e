"""pmap over virtual CPU devices, against JAX 0.10.2's recorded results (8 host devices)."""

from functools import partial

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")


@pytest.fixture(autouse=True)
def eight_devices():
    saved = srcjax.config.jax_num_cpu_devices
    srcjax.config.update("jax_num_cpu_devices", 8)
    yield
    srcjax.config.update("jax_num_cpu_devices", saved)


X = np.arange(12.0, dtype=np.float32).reshape(4, 3)


def test_results_are_laid_out_over_the_devices_as_jax_lays_them_out():
    y = srcjax.pmap(lambda v: v * 2 + lax.axis_index("i"), axis_name="i")(X)
    np.testing.assert_array_equal(np.asarray(y), X * 2 + np.arange(4)[:, None])
    assert y.shape == (4, 3) and len(y.addressable_shards) == 4
    shard = y.addressable_shards[2]
    assert shard.index == (slice(2, 3), slice(None)) and shard.data.shape == (1, 3)
    np.testing.assert_array_equal(np.asarray(shard.data), [[14.0, 16.0, 18.0]])
    assert y.devices() == set(srcjax.devices()[:4])
    assert y.sharding.spec == ("_internal_pmap_axis_name",)


def test_collectives():
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda v: lax.psum(v, "i"), "i")(X)),
                                  np.tile(X.sum(0), (4, 1)))
    mean, top = srcjax.pmap(lambda v: (lax.pmean(v, "i"), lax.pmax(v, "i")), "i")(X)
    np.testing.assert_allclose(np.asarray(mean), np.tile(X.mean(0), (4, 1)))
    np.testing.assert_array_equal(np.asarray(top), np.tile(X[-1], (4, 1)))
    assert srcjax.pmap(lambda v: lax.all_gather(v, "i"), "i")(X).shape == (4, 4, 3)


def test_axis_index_over_several_names():
    """Over a tuple of names, the index over them together, the last varying fastest (JAX 0.10's numbers)."""
    inner = srcjax.vmap(srcjax.vmap(lambda x: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(inner(np.zeros((2, 3)))), [[0, 1, 2], [3, 4, 5]])
    swapped = srcjax.vmap(srcjax.vmap(lambda x: lax.axis_index(("j", "i")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(swapped(np.zeros((2, 3)))), [[0, 2, 4], [1, 3, 5]])
    outer = srcjax.pmap(srcjax.vmap(lambda x: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(outer(np.zeros((2, 3)))), [[0, 1, 2], [3, 4, 5]])


def test_static_broadcast_and_unmapped_arguments_and_out_axes():
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda v, k: v * k, static_broadcasted_argnums=1)(X, 3)),
                                  X * 3)
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda v, w: v + w, in_axes=(0, None))(X, np.ones(3))),
                                  X + 1)
    moved = srcjax.pmap(lambda v: v * 2, out_axes=1)(X)
    assert moved.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(moved), (X * 2).T)


def test_compositions():
    # recorded from JAX: grad through a pmap, pmap of a grad with a psum (psum's transpose is psum: 4 * 2 v)
    np.testing.assert_allclose(
        np.asarray(srcjax.grad(lambda v: jnp.sum(srcjax.pmap(jnp.sin)(v)))(X)), np.cos(X), rtol=1e-6)
    np.testing.assert_array_equal(
        np.asarray(srcjax.pmap(srcjax.grad(lambda v: lax.psum(v * v, "i").sum()), axis_name="i")(X)), 8 * X)
    np.testing.assert_array_equal(np.asarray(srcjax.jit(srcjax.pmap(lambda v: v * 3))(X)), X * 3)
    assert srcjax.vmap(srcjax.pmap(lambda v: v * 3))(np.ones((5, 4, 3))).shape == (5, 4, 3)
    assert srcjax.pmap(srcjax.vmap(lambda v: v * 3))(np.ones((4, 5, 3))).shape == (4, 5, 3)
    assert srcjax.pmap(srcjax.pmap(lambda v: v + 1))(np.ones((2, 4, 3))).shape == (2, 4, 3)


def test_seed_normalize_with_psum():
    @partial(srcjax.pmap, axis_name="i")
    def normalize(x):
        return x / lax.psum(x, "i")

    np.testing.assert_allclose(np.asarray(normalize(jnp.arange(4.0))), [0.0, 1 / 6, 1 / 3, 0.5], rtol=1e-6)


def test_more_replicas_than_devices_is_an_error():
    with pytest.raises(ValueError, match="requires 9 logical devices, but only 8"):
        srcjax.pmap(lambda v: v)(np.ones((9, 2)))


# -- replicas on threads, collectives in shared memory (codegen/llvm/replicas.py) -------------------------------------
def _both_ways(monkeypatch, f, *args):
    """``f(*args)`` as replicas on threads and as one batched call: the results must agree (bit for bit)."""
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    threaded = srcjax.pmap(f, axis_name="i")
    got = threaded(*args)
    assert any(s is not None for s in threaded._spmd.values()), "the replicas did not run natively"
    monkeypatch.setenv("SRCJAX_PMAP", "batched")
    want = srcjax.pmap(f, axis_name="i")(*args)
    for g, w in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    return got


@pytest.mark.parametrize("size", [6, 40_000])  # (the second shares the reduction out by slices)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_replicas_meet_for_every_collective(monkeypatch, size, dtype):
    x = (np.random.default_rng(0).normal(size=(4, size)) * 10).astype(dtype)

    def f(v):
        return (lax.psum(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"), lax.pmean(v, "i"), lax.all_gather(v, "i"),
                lax.axis_index("i"))

    total, top, bottom, mean, gathered, index = _both_ways(monkeypatch, f, x)
    np.testing.assert_array_equal(np.asarray(top)[2], x.max(0))
    np.testing.assert_array_equal(np.asarray(gathered)[1], x)
    np.testing.assert_array_equal(np.asarray(index), np.arange(4))
    for row in np.asarray(total):  # every replica holds the same bits
        np.testing.assert_array_equal(row, np.asarray(total)[0])


def test_replicas_in_loops_and_branches(monkeypatch):
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2) + 1.0

    def f(v):
        while lax.psum(jnp.sum(v), "i") < 1000.0:  # a loop every replica leaves on the same trip
            v = v * 2.0
        if lax.axis_index("i") % 2 == 0:
            v = v + lax.pmax(v, "i")
        else:
            v = v - lax.pmax(v, "i")
        return v

    _both_ways(monkeypatch, f, x)


def test_pytree_prefix_in_axes_and_keyword_arguments():
    """in_axes may be a prefix of an argument's tree (a dict or tuple entry per leaf), as vmap's; keyword
    arguments are mapped over their axis 0. Values as JAX 0.10.2's."""
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    b = np.float32(1.0)
    f = srcjax.pmap(lambda p: p["a"] + p["b"], in_axes=({"a": 0, "b": None},))
    np.testing.assert_array_equal(np.asarray(f({"a": x, "b": b})), x + 1)
    g = srcjax.pmap(lambda p: p[0] + p[1], in_axes=((0, None),))
    np.testing.assert_array_equal(np.asarray(g((x, b))), x + 1)
    h = srcjax.pmap(lambda v, s=None: v * s)
    v, s = np.arange(12.0, dtype=np.float32).reshape(4, 3), np.arange(4.0, dtype=np.float32)[:, None] * np.ones(3)
    np.testing.assert_array_equal(np.asarray(h(v, s=s.astype(np.float32))), v * s)
