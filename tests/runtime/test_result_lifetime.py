"""Results of pmap, vmap and shard_map are freed when the last reference goes, not at the next garbage
collection: a large result kept alive by a reference cycle makes the next call write a fresh buffer, whose pages
the kernel must supply (a pmap psum of 8 x 16M float32 took 700 ms instead of 90 ms)."""

import gc
import weakref

import numpy as np
import pytest

import srcjax
from srcjax import lax
from srcjax.sharding import Mesh, PartitionSpec as P

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")


@pytest.fixture
def no_collector():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def _freed(make):
    result = make()
    leaves = srcjax.tree_util.tree_leaves(result)
    refs = [weakref.ref(leaf) for leaf in leaves]
    del result, leaves
    return all(ref() is None for ref in refs)


@pytest.mark.parametrize("mode", ["batched", "replicas"])
def test_pmap_results_are_freed_at_once(no_collector, four_devices, monkeypatch, mode):
    monkeypatch.setenv("SRCJAX_PMAP", mode)
    x = np.ones((4, 8), np.float32)
    f = srcjax.pmap(lambda a: (lax.psum(a, "i"), {"b": a * 2}), axis_name="i", in_axes=(0,), out_axes=(0, {"b": 0}))
    assert _freed(lambda: f(x))


def test_vmap_results_are_freed_at_once(no_collector):
    x = np.ones((4, 8), np.float32)
    assert _freed(lambda: srcjax.vmap(lambda a, b: (a + b, a), in_axes=(0, None))(x, 1.0))


def test_shard_map_results_are_freed_at_once(no_collector, four_devices):
    x = np.ones((4, 8), np.float32)
    mesh = Mesh(np.array(srcjax.devices()[:4]), ("i",))
    g = srcjax.shard_map(lambda a: lax.psum(a, "i"), mesh=mesh, in_specs=(P("i"),), out_specs=P())
    assert _freed(lambda: g(x))
