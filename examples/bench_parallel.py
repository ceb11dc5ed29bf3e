"""Benchmarks of pmap and its collectives: srcjax beside JAX's pmap on as many host devices
(``--xla_force_host_platform_device_count``), and MPI between processes beside mpi4py's own ``Allreduce``.

Run: python examples/bench_parallel.py [--small]  (``make bench`` runs it after bench.py). A ratio below 1 means
srcjax is faster; the psum lines also give the time the memory's bandwidth allows (a psum over n devices reads n
buffers and writes n, so it moves at least 2n buffers: the bound is that traffic at the bandwidth of a large NumPy
copy, measured in the same run).
"""

from __future__ import annotations

import os
import sys

DEVICES = 8
os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={DEVICES}")  # (before JAX loads)

import argparse  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import srcjax  # noqa: E402
from srcjax import lax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import median_times, ready  # noqa: E402

try:
    import jax as real_jax
except ImportError:
    real_jax = None


def copy_bandwidth(nbytes: int) -> float:
    """Bytes per second a large NumPy copy moves (read + write), the best of a few."""
    a = np.ones(nbytes // 4, np.float32)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - start)
    return 2 * nbytes / best


def line(name: str, times: list[float], extra: str = "") -> None:
    text = f"{name:40s} {times[0] * 1e3:9.3f}ms"
    if len(times) > 1:
        text += f" {times[1] * 1e3:9.3f}ms {times[0] / times[1]:7.2f}"
    print(text + extra)


def pmaps(small: bool, repeat: int) -> None:
    srcjax.config.update("jax_num_cpu_devices", DEVICES)
    print(f"{'pmap workload':40s} {'srcjax':>10s}" + (f" {'jax':>10s} {'ratio':>7s}" if real_jax else "")
          + f" {'bound':>10s}")
    for n in (2, DEVICES):  # the cached call of a small pmap: what a call costs beyond its work
        x = np.ones((n, 4), np.float32)
        ours = srcjax.pmap(lambda a: a + 1.0)
        calls = [lambda ours=ours, x=x: ready(ours(x))]
        if real_jax:
            theirs, xj = real_jax.pmap(lambda a: a + 1.0), real_jax.device_put(x)
            calls.append(lambda theirs=theirs, xj=xj: ready(theirs(xj)))
        line(f"pmap call overhead, {n} devices", median_times(calls, repeat, 200))
    size = (1 << 20) if small else (16 << 20)
    bandwidth = copy_bandwidth(size * 4 * 4)
    for n in (2, DEVICES):
        x = np.random.default_rng(0).random((n, size), dtype=np.float32)
        ours = srcjax.pmap(lambda a: lax.psum(a, "i"), axis_name="i")
        xs = srcjax.device_put(x)
        calls = [lambda ours=ours, xs=xs: ready(ours(xs))]
        if real_jax:
            theirs = real_jax.pmap(lambda a: real_jax.lax.psum(a, "i"), axis_name="i")
            xj = real_jax.pmap(lambda a: a)(x)  # (laid out over the devices as pmap's inputs are)
            calls.append(lambda theirs=theirs, xj=xj: ready(theirs(xj)))
        times = median_times(calls, max(3, repeat // 3))
        bound = 2 * n * size * 4 / bandwidth
        line(f"psum {size >> 20}M float32, {n} devices", times,
             f" {bound * 1e3:9.3f}ms  (srcjax at {bound / times[0]:.0%} of the bound)")


MPI_WORKER = "--mpi-worker"


def mpi(small: bool, repeat: int) -> None:
    """psum of 64 MB between 2 processes under mpiexec, beside mpi4py's Allreduce of the same buffers."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        print("\n(no mpiexec beside the interpreter: pip install 'srcjax[mpi]' for the MPI benchmark)")
        return
    args = [str(mpiexec), "-n", "2", sys.executable, __file__, MPI_WORKER, str(repeat)] + (["--small"] if small else [])
    print()
    subprocess.run(args, check=True)


def mpi_worker(small: bool, repeat: int) -> None:
    from mpi4py import MPI

    srcjax.distributed.initialize()
    size = (1 << 20) if small else (16 << 20)
    x = np.random.default_rng(srcjax.process_index()).random((1, size), dtype=np.float32)
    ours = srcjax.pmap(lambda a: lax.psum(a, "i"), axis_name="i")
    xs = srcjax.device_put(x)
    comm = MPI.COMM_WORLD
    flat, out = x[0], np.empty(size, np.float32)

    def theirs():
        comm.Allreduce(flat, out, op=MPI.SUM)

    def mine():
        ready(ours(xs))

    np.testing.assert_allclose(np.asarray(ours(xs))[0], (theirs(), out)[1], rtol=1e-6)
    comm.Barrier()
    times = median_times([mine, theirs], repeat)
    if srcjax.process_index() == 0:
        print(f"{'MPI workload, 2 processes':40s} {'srcjax':>10s} {'mpi4py':>10s} {'ratio':>7s}")
        line(f"psum {size * 4 >> 20} MB (mpi4py: Allreduce)", times,
             f"  (srcjax at {times[1] / times[0]:.2f}x mpi4py's speed)")
    srcjax.distributed.shutdown()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == MPI_WORKER:
        mpi_worker("--small" in sys.argv, int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    repeat = 5 if args.small else 21
    pmaps(args.small, repeat)
    mpi(args.small, repeat)


if __name__ == "__main__":
    main()
