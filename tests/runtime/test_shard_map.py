"""shard_map over 1-D and 2-D meshes against JAX 0.10.2's recorded results, and data-parallel training (pmap over
4 virtual devices, and shard_map) ending where single-device training ends."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.sharding import Mesh, PartitionSpec as P

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")


@pytest.fixture(autouse=True)
def eight_devices():
    saved = srcjax.config.jax_num_cpu_devices
    srcjax.config.update("jax_num_cpu_devices", 8)
    yield
    srcjax.config.update("jax_num_cpu_devices", saved)


X = np.arange(32.0, dtype=np.float32).reshape(4, 8)


def mesh_2x4():
    return Mesh(np.array(srcjax.devices()).reshape(2, 4), ("x", "y"))


def test_a_two_axis_mesh():
    mesh = mesh_2x4()
    y = srcjax.shard_map(lambda a: a * 2 + lax.axis_index("y"), mesh=mesh, in_specs=P("x", "y"),
                         out_specs=P("x", "y"))(X)
    np.testing.assert_array_equal(np.asarray(y), X * 2 + np.repeat(np.arange(4), 2)[None, :])
    assert tuple(y.sharding.spec) == ("x", "y") and y.sharding.mesh == mesh
    summed = srcjax.shard_map(lambda a: lax.psum(a, "y"), mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", None))(X)
    np.testing.assert_array_equal(np.asarray(summed), [[12, 16], [44, 48], [76, 80], [108, 112]])
    total = srcjax.shard_map(lambda a: lax.psum(jnp.sum(a), ("x", "y")), mesh=mesh, in_specs=P("x", "y"),
                             out_specs=P())(X)
    assert float(total) == 496.0
    transposed = srcjax.shard_map(lambda a: a.T, mesh=mesh, in_specs=P("x", "y"), out_specs=P("y", "x"))(X)
    np.testing.assert_array_equal(np.asarray(transposed), X.T)


def test_replicated_arguments_and_a_one_axis_mesh():
    mesh = mesh_2x4()
    out = srcjax.shard_map(lambda a, b: a + b, mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"))(
        np.ones((4, 3), np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(out), np.full((4, 3), 2.0))
    line = Mesh(np.array(srcjax.devices()[:4]), ("d",))
    centred = srcjax.shard_map(lambda a: a - lax.pmean(a, "d"), mesh=line, in_specs=P("d"), out_specs=P("d"))(
        np.arange(8.0, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(centred), [-3.0, -3.0, -1.0, -1.0, 1.0, 1.0, 3.0, 3.0])
    grad = srcjax.grad(lambda v: jnp.sum(srcjax.shard_map(lambda a: jnp.sin(a) * lax.psum(a, "d"), mesh=line,
                                                          in_specs=P("d"), out_specs=P("d"))(v)))
    np.testing.assert_allclose(np.asarray(grad(np.arange(8.0, dtype=np.float32))),
                               [11.873079, 9.32549, -5.1206827, -15.159226, -7.970644, 5.2192483, 11.395123, 12.74309],
                               rtol=1e-5)  # JAX 0.10.2


def test_a_result_that_varies_along_an_axis_its_spec_does_not_name_is_an_error():
    with pytest.raises(ValueError):
        srcjax.shard_map(lambda a: a, mesh=mesh_2x4(), in_specs=P("x", "y"), out_specs=P("x"))(X)


# -- data parallelism ends where single-device training ends ----------------------------------------------------
def _training_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 10)).astype(np.float32)
    y = (x @ rng.normal(size=(10, 3))).astype(np.float32)
    w = (rng.normal(size=(10, 3)) * 0.1).astype(np.float32)
    return x, y, w


def _loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


def _single(w, x, y, steps=20):
    step = srcjax.jit(lambda w: w - 0.5 * srcjax.grad(_loss)(w, x, y))
    for _ in range(steps):
        w = step(w)
    return np.asarray(w)


def test_pmap_data_parallel_training_matches_single_device():
    x, y, w = _training_data()
    reference = _single(w, x, y)
    step = srcjax.pmap(lambda w, x, y: w - 0.5 * lax.pmean(srcjax.grad(_loss)(w, x, y), "batch"),
                       axis_name="batch", in_axes=(None, 0, 0))
    shards_x, shards_y = x.reshape(4, 16, 10), y.reshape(4, 16, 3)
    for _ in range(20):
        w = np.asarray(step(w, shards_x, shards_y))[0]
    np.testing.assert_allclose(w, reference, rtol=2e-5, atol=2e-6)


def test_shard_map_data_parallel_training_matches_single_device():
    x, y, w = _training_data()
    reference = _single(w, x, y)
    mesh = Mesh(np.array(srcjax.devices()[:4]), ("batch",))
    grads = srcjax.shard_map(lambda w, x, y: lax.pmean(srcjax.grad(_loss)(w, x, y), "batch"), mesh=mesh,
                             in_specs=(P(), P("batch"), P("batch")), out_specs=P())
    step = srcjax.jit(lambda w: w - 0.5 * grads(w, x, y))
    for _ in range(20):
        w = step(w)
    np.testing.assert_allclose(np.asarray(w), reference, rtol=2e-5, atol=2e-6)


def test_results_under_jit_are_laid_out_by_out_specs():
    """jit(shard_map(...)) gives its results the out_specs' NamedSharding, as the eager call does and as JAX does."""
    mesh = Mesh(np.array(srcjax.devices()[:4]), ("i",))
    f = srcjax.shard_map(lambda a: (a * 2, lax.psum(a.sum(0, keepdims=True), "i")), mesh=mesh,
                         in_specs=(P("i"),), out_specs=(P("i"), P()))
    x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    for call in (f, srcjax.jit(f)):
        doubled, total = call(x)
        np.testing.assert_array_equal(np.asarray(doubled), 2 * x)
        assert doubled.sharding.spec == P("i") and [s.data.shape for s in doubled.addressable_shards] == [(2, 4)] * 4
        assert total.sharding.spec == P()
