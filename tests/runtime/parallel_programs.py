"""Programs that run the same in one process over several devices and in several processes under ``mpiexec``.

``collectives(x)`` applies every collective under ``pmap`` to this process's rows of ``x``; ``train(...)`` trains
the MLP example (examples/mlp.py) data-parallel with ``pmap``, its gradients averaged with ``pmean``. Run as a
script (``mpiexec -n N python parallel_programs.py OUT LOCAL``) each process joins the others
(``srcjax.distributed.initialize``), takes its share of the rows and of the data, and writes its results to
``OUT.<rank>.npz``; tests/runtime/test_distributed.py compares them with one process over every device.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import mlp  # noqa: E402 - the MLP example, from examples/

DEVICES = 4  # in all, over every process
X = (np.arange(DEVICES * 4 * 3, dtype=np.float32).reshape(DEVICES, 4, 3) - 20.0) / 7.0


def collectives(x: np.ndarray) -> dict[str, np.ndarray]:
    """Every collective over the pmap's axis, of ``x`` (this process's rows of ``X``): the results' rows."""
    def run(f, *args, **kw):
        return np.asarray(srcjax.pmap(f, axis_name="i", **kw)(*args))

    ring = [(j, (j + 1) % DEVICES) for j in range(DEVICES - 1)]  # (the last device receives nothing: zeros)
    out = {
        "psum": run(lambda a: lax.psum(a, "i"), x),
        "pmean": run(lambda a: lax.pmean(a, "i"), x),
        "pmax": run(lambda a: lax.pmax(a, "i"), x),
        "pmin": run(lambda a: lax.pmin(a * a, "i"), x),
        "all_gather": run(lambda a: lax.all_gather(a, "i"), x),
        "all_gather_tiled": run(lambda a: lax.all_gather(a, "i", axis=1, tiled=True), x),
        "axis_index": run(lambda a: a * lax.axis_index("i"), x),
        "axis_size": run(lambda a: a * lax.axis_size("i"), x),
        "psum_scatter": run(lambda a: lax.psum_scatter(a, "i"), x),
        "psum_scatter_tiled": run(lambda a: lax.psum_scatter(a.T, "i", scatter_dimension=1, tiled=True), x),
        "all_to_all": run(lambda a: lax.all_to_all(a, "i", 0, 1), x),
        "all_to_all_tiled": run(lambda a: lax.all_to_all(a.reshape(1, 12), "i", 1, 0, tiled=True), x),
        "ppermute": run(lambda a: lax.ppermute(a, "i", ring), x),
        "pshuffle": run(lambda a: lax.pshuffle(a, "i", [2, 3, 1, 0]), x),
        "broadcast_in": run(lambda a, b: a + lax.psum(b, "i"), x, np.float32(2.0), in_axes=(0, None)),
        # derivatives through collectives, inside the pmap and of it
        "grad_psum": run(srcjax.grad(lambda a: jnp.sum(jnp.sin(a) * lax.psum(a, "i"))), x),
        "grad_all_gather": run(srcjax.grad(lambda a: jnp.sum(lax.all_gather(a, "i") ** 2)), x),
        "grad_ppermute": run(srcjax.grad(lambda a: jnp.sum(jnp.cos(lax.ppermute(a, "i", ring)) * a)), x),
        "grad_all_to_all": run(srcjax.grad(lambda a: jnp.sum(jnp.tanh(lax.all_to_all(a, "i", 0, 1)) * a.T)), x),
        "grad_pmax": run(srcjax.grad(lambda a: jnp.sum(lax.pmax(jnp.round(a), "i"))), x),
        "grad_of_pmap": np.asarray(srcjax.grad(lambda v: jnp.sum(srcjax.pmap(
            lambda a: jnp.exp(a / 4) * lax.pmean(a, "i"), axis_name="i")(v)))(x)),
        "jit_of_pmap": np.asarray(srcjax.jit(srcjax.pmap(lambda a: lax.psum(a * a, "i") + lax.axis_index("i"),
                                                         axis_name="i"))(x)),
        "vmap_in_pmap": run(srcjax.vmap(lambda r: lax.psum(r, "i") * lax.psum(r, "j"), axis_name="j"), x),
    }
    return out


def data(n: int = 256, dim: int = 16, classes: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(classes, dim)) * 2
    y = rng.integers(0, classes, n)
    return (centers[y] + rng.normal(size=(n, dim))).astype(np.float32), np.eye(classes, dtype=np.float32)[y]


def initial_params(dim: int = 16, classes: int = 4) -> list:
    return mlp.init_params(srcjax.random.PRNGKey(0), [dim, 32, classes])


def train_single(steps: int, lr: float = 0.2) -> list:
    """The reference: plain gradient descent on the whole batch."""
    x, labels = data()

    @srcjax.jit
    def step(params):
        grads = srcjax.grad(mlp.loss)(params, (x, labels))
        return [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)]

    params = initial_params()
    for _ in range(steps):
        params = step(params)
    return params


def train_data_parallel(steps: int, x: np.ndarray, labels: np.ndarray, lr: float = 0.2) -> list:
    """The same descent with the batch split over the devices (``x``, ``labels``: this process's shards, the device
    axis first), each device's gradient averaged over all of them with ``pmean``."""
    def step(params, x, labels):
        grads = lax.pmean(srcjax.grad(mlp.loss)(params, (x, labels)), "batch")
        return [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)]

    parallel = srcjax.pmap(step, axis_name="batch", in_axes=(None, 0, 0), out_axes=None)
    params = initial_params()
    for _ in range(steps):
        params = parallel(params, x, labels)
    return params


def shards(per_process: int, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """This process's shards of the data, ``(per_process, n / DEVICES, ...)``."""
    x, labels = data()
    x, labels = x.reshape(DEVICES, -1, x.shape[1]), labels.reshape(DEVICES, -1, labels.shape[1])
    rows = slice(rank * per_process, (rank + 1) * per_process)
    return x[rows], labels[rows]


STEPS = 25


def flat(params: list) -> dict[str, np.ndarray]:
    return {f"param{i}_{j}": np.asarray(p) for i, layer in enumerate(params) for j, p in enumerate(layer)}


def multihost(rank: int) -> dict[str, np.ndarray]:
    """``experimental.multihost_utils`` across the processes: gathered ranks, process 0's value broadcast,
    whether ``assert_equal`` of values that differ per process raised, and the preemption sync point."""
    from srcjax.experimental import multihost_utils

    multihost_utils.sync_global_devices("parallel_programs")
    try:
        multihost_utils.assert_equal(np.array([rank]), "ranks differ")
        raised = False
    except AssertionError:
        raised = True
    reached = []  # a preemption notice (SIGTERM) to the last process at step 1: all checkpoint at step 2
    for step in range(3):
        if step == 1 and rank == srcjax.process_count() - 1:
            os.kill(os.getpid(), signal.SIGTERM)
        reached.append(multihost_utils.reached_preemption_sync_point(step))
    return {"multihost_stacked": multihost_utils.process_allgather(np.array([rank, 10 * rank])),
            "multihost_preemption": np.array(reached),
            "multihost_tiled": multihost_utils.process_allgather(np.float32(rank), tiled=True),
            "multihost_broadcast": multihost_utils.broadcast_one_to_all(np.array([rank + 1.0])),
            "multihost_raised": np.array(raised)}


def main(out: str, local: int) -> None:
    srcjax.config.update("jax_num_cpu_devices", local)
    srcjax.distributed.initialize()
    rank, count = srcjax.process_index(), srcjax.process_count()
    assert count * local == DEVICES, (count, local)
    results = collectives(X[rank * local:(rank + 1) * local])
    results.update(flat(train_data_parallel(STEPS, *shards(local, rank))))
    results.update(multihost(rank))
    results["devices"] = np.array([d.id for d in srcjax.devices()])
    results["local_devices"] = np.array([d.id for d in srcjax.local_devices()])
    results["counts"] = np.array([srcjax.process_index(), srcjax.process_count(), srcjax.device_count(),
                                  srcjax.local_device_count()])
    np.savez(f"{out}.{rank}.npz", **results)
    srcjax.distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
