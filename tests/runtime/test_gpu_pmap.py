"""pmap over GPUs (runtime/gpu_pmap.py): one replica per GPU, its collectives through NCCL, against the same
pmap over as many CPU devices.

Four GPUs are emulated on the host (``SRCJAX_GPU=emulate:4``: the emulated kernels, and an emulated NCCL that
meets at barriers), so that this runs in CI and on a machine with one GPU. Where a real GPU and NCCL are
present, the last test runs a replica on it through NCCL itself.
"""

import os

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.runtime import gpu, gpu_pmap, nccl
from srcjax.runtime.config import config

N = 4


@pytest.fixture(autouse=True)
def four_gpus(monkeypatch):
    monkeypatch.setenv("SRCJAX_GPU", f"emulate:{N}")
    gpu.reset()
    saved = config.jax_platforms, config.jax_num_cpu_devices
    config.update("jax_platforms", None)
    config.update("jax_num_cpu_devices", N)
    yield
    config.update("jax_platforms", saved[0])
    config.update("jax_num_cpu_devices", saved[1])
    gpu.reset()


def on_cpu(f, *args, **kwargs):
    """The oracle: ``pmap(f, **kwargs)(*args)`` over N CPU devices."""
    saved = config.jax_platforms
    config.update("jax_platforms", "cpu")
    try:
        out = srcjax.pmap(f, **kwargs)(*[np.asarray(a) if isinstance(a, srcjax.Array) else a for a in args])
        return srcjax.tree_util.tree_map(np.asarray, out)
    finally:
        config.update("jax_platforms", saved)


def same(f, *args, rtol=1e-5, replicas=True, **kwargs):
    """pmap over the GPUs gives what pmap over CPU devices gives (types too), and ran as replicas on them (or,
    ``replicas=False``, batched)."""
    pmapped = srcjax.pmap(f, **kwargs)
    got = pmapped(*args)
    want = on_cpu(f, *args, **kwargs)
    ran = list(pmapped._gpu_spmd.values())
    assert ran and all((r is not None) == replicas for r in ran), ran
    got_leaves, want_leaves = srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        scale = float(np.max(np.abs(w), initial=1.0)) if w.dtype.kind == "f" else 1.0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)
    return got


rng = np.random.default_rng(0)
X = rng.standard_normal((N, 6, 5)).astype(np.float32)


def test_the_devices_are_gpus_and_results_are_laid_out_over_them():
    assert [d.platform for d in srcjax.devices()] == ["gpu"] * N
    out = same(lambda x: jnp.sin(x) * 2.0, X, axis_name="i")
    assert out.sharding.device_set == set(srcjax.devices())


@pytest.mark.parametrize("name", ["psum", "pmean", "pmax", "pmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.int16, np.float16])
def test_all_reduces_over_every_type(name, dtype):
    if dtype == np.bool_ and name != "psum" and name != "pmax":
        pytest.skip("min of booleans is pmax's mirror")
    x = (X * 4).astype(dtype)
    same(lambda x: getattr(lax, name)(x, "i"), x, axis_name="i", rtol=2e-3 if dtype == np.float16 else 1e-5)
    # (float16: NCCL adds in float16, a rounding per replica; the batched sum adds in float32)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("tiled", [False, True])
def test_all_gather(axis, tiled):
    if tiled and axis == 2:
        pytest.skip("the operand has rank 2")
    same(lambda x: lax.all_gather(x, "i", axis=axis, tiled=tiled), X, axis_name="i")


@pytest.mark.parametrize("dimension", [0, 1])
@pytest.mark.parametrize("tiled", [False, True])
def test_psum_scatter(dimension, tiled):
    shape = [8, 8]
    if not tiled:
        shape[dimension] = N
    x = rng.standard_normal((N, *shape)).astype(np.float32)
    same(lambda x: lax.psum_scatter(x, "i", scatter_dimension=dimension, tiled=tiled), x, axis_name="i")


def test_axis_index_ppermute_and_all_to_all():
    def f(x):
        shifted = lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3)])  # (replica 0 receives nothing: zeros)
        swapped = lax.all_to_all(x[:4], "i", 0, 1)
        return lax.axis_index("i") * 10 + 1, shifted, swapped

    same(f, X, axis_name="i")


def test_collectives_inside_control_flow_run_batched():
    """A collective inside a branch or a loop, whose branch or trip count may differ between replicas (a
    replica would wait in a collective the others never reach): the pmap runs batched, as on the CPU."""
    def f(x):
        def body(i, c):
            return c + lax.psum(c * 0.1, "i")

        y = lax.fori_loop(0, 3, body, x)
        while lax.pmax(jnp.max(y), "i") < 50.0:  # (a traced while whose predicate is collective)
            y = y * 2.0 + 1.0
        return y

    def diverging(x):
        return lax.cond(lax.axis_index("i") == 0, lambda v: lax.psum(v, "i"), lambda v: v * 2, x)

    same(f, np.abs(X), axis_name="i", rtol=1e-4, replicas=False)
    same(diverging, X, axis_name="i", replicas=False)


def test_a_collective_after_a_loop_runs_as_replicas():
    def f(x):
        y = lax.fori_loop(0, 3, lambda i, c: c * 1.1 + 0.5, x)
        return lax.psum(y, "i") + lax.pmax(jnp.max(y), "i")

    same(f, X, axis_name="i")


def test_data_parallel_training_step():
    """The step pmap is for: per-device gradients of a batch shard, averaged with pmean, applied to replicated
    parameters; products and reductions on each GPU."""
    def loss(params, x, y):
        w, b = params
        return jnp.mean((jnp.tanh(x @ w + b) - y) ** 2)

    def step(params, x, y):
        grads = srcjax.grad(loss)(params, x, y)
        grads = lax.pmean(grads, "batch")
        return [p - 0.1 * g for p, g in zip(params, grads)], lax.pmean(loss(params, x, y), "batch")

    w = rng.standard_normal((5, 3)).astype(np.float32)
    b = np.zeros(3, np.float32)
    params = [np.stack([w] * N), np.stack([b] * N)]
    x = rng.standard_normal((N, 8, 5)).astype(np.float32)
    y = rng.standard_normal((N, 8, 3)).astype(np.float32)
    new, value = same(step, params, x, y, axis_name="batch")
    for p in new:  # (replicated after the averaged update)
        np.testing.assert_allclose(np.asarray(p)[0], np.asarray(p)[3], rtol=1e-6)


def test_in_axes_out_axes_static_and_fewer_devices():
    def f(x, scale, k):
        return lax.psum(x * scale, "i") + k, x

    same(f, X[:3], np.float32(2.0), 3, axis_name="i", in_axes=(0, None, None), out_axes=(None, 1),
         static_broadcasted_argnums=2)
    same(lambda x: lax.psum(x, "i"), X[:, :2].transpose(1, 0, 2), axis_name="i", in_axes=1)


def test_without_collectives_each_gpu_runs_its_replica():
    same(lambda x: jnp.cumsum(jnp.exp(x), axis=0) @ x.T, X)


def test_a_failing_replica_does_not_hang_the_others():
    """A replica that fails before a collective leaves the others waiting in it: their communicators are
    aborted, the error is raised, and the next call makes new ones."""
    bad = srcjax.pmap(lambda x: lax.psum(jnp.linalg.cholesky(x), "i"), axis_name="i")
    comms = gpu_pmap.communicators(srcjax.devices())
    clique = comms[0].clique
    original = clique.comms[2].all_reduce

    def fails(*args, **kwargs):
        raise RuntimeError("replica 2 failed")

    clique.comms[2].all_reduce = fails
    clique.barrier._timeout = 60.0
    eye = np.stack([np.eye(3, dtype=np.float32) * (k + 1) for k in range(N)])
    with pytest.raises(RuntimeError, match="replica 2 failed"):
        bad(eye)
    clique.comms[2].all_reduce = original
    assert gpu_pmap.communicators(srcjax.devices())[0].clique is not clique
    np.testing.assert_allclose(np.asarray(bad(eye))[0], np.linalg.cholesky(eye).sum(0), rtol=1e-5)


def test_an_unmapped_result_is_the_first_devices():
    """JAX 0.10 returns device 0's value for out_axes None, unchecked (the batched pmap does the same)."""
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda x: x * 2.0, axis_name="i", out_axes=None)(X)),
                                  np.asarray(X)[0] * 2.0)
    same(lambda x: x * 2.0 + lax.axis_index("i"), X, axis_name="i", out_axes=None)
    same(lambda x: lax.psum(x, "i"), X, axis_name="i", out_axes=None)


def test_two_pmaps_over_the_same_gpus_from_two_threads():
    """Their collectives do not meet each other's: one pmap call at a time holds the GPUs' communicators."""
    import threading

    f = srcjax.pmap(lambda x: lax.psum(x, "i"), axis_name="i")
    g = srcjax.pmap(lambda x: lax.pmax(x, "i"), axis_name="i")
    f(X), g(X)
    wrong = []

    def loop(fn, want):
        for _ in range(10):
            if not np.allclose(np.asarray(fn(X)), want):
                wrong.append(fn)

    threads = [threading.Thread(target=loop, args=(f, np.broadcast_to(X.sum(0), X.shape))),
               threading.Thread(target=loop, args=(g, np.broadcast_to(X.max(0), X.shape)))]
    [t.start() for t in threads]
    [t.join(timeout=120) for t in threads]
    assert not any(t.is_alive() for t in threads) and not wrong


def test_donated_arguments_are_deleted():
    x = srcjax.device_put(X)
    srcjax.pmap(lambda x: lax.psum(x, "i"), axis_name="i", donate_argnums=0)(x)
    assert x.is_deleted()


@pytest.mark.skipif(not os.path.exists("/dev/nvidia0") or nccl.library_path() is None,
                    reason="needs a GPU and NCCL (srcjax[cuda])")
def test_a_replica_on_a_real_gpu_through_nccl(monkeypatch):
    """On the machine's GPUs (one is enough: forced to run as replicas), NCCL's own collectives."""
    monkeypatch.setenv("SRCJAX_GPU", "1")
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    gpu.reset()
    n = len(srcjax.devices())
    x = rng.standard_normal((n, 64, 32)).astype(np.float32)

    def f(x):
        return (lax.psum(x, "i"), lax.pmean(x * 2.0, "i"), lax.pmax(x, "i"), lax.all_gather(x, "i"),
                lax.psum_scatter(jnp.concatenate([x] * n), "i", tiled=True), lax.axis_index("i"))

    pmapped = srcjax.pmap(f, axis_name="i")
    got = pmapped(x)
    assert pmapped._gpu_spmd
    want = [x.sum(0), (2 * x).mean(0), x.max(0), x, x.sum(0)]
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(np.asarray(g)[0], w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got[3])[0], x, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(got[5]), np.arange(n))
