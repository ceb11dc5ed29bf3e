"""GPU benchmarks: srcjax beside JAX on the same GPU, as ratios measured in one run (skipped without a GPU).

Workloads: ``jit(selu)`` on 1e6 float32; ``x * x + x * 2.0`` on 8192x8192 float32, judged against the card's
memory bandwidth (bytes read and written over the time, against the peak the driver's memory clock and bus
width give); ``x @ x.T`` on 8192x8192 float32; the MLP SGD step of bench.py; and the dispatch of a cached
call on a small GPU array. Each time is the median of repeated samples; a sample is one call waited for, or
for the two large workloads several calls queued back to back and the last waited for (the GPU's
throughput, as a training loop sees it).
Run: python examples/bench_gpu.py [--small]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import srcjax  # noqa: E402
import srcjax.numpy as jnp  # noqa: E402
from bench import mlp_step  # noqa: E402

try:
    import jax as real_jax
    import jax.numpy as real_jnp

    if real_jax.default_backend() != "gpu":
        real_jax = real_jnp = None
except ImportError:
    real_jax = real_jnp = None


def timed(fn, repeat: int, number: int = 1) -> float:
    """The median over ``repeat`` samples of the time per call; a sample queues ``number`` calls and waits for
    the last (``number`` > 1: the GPU's throughput, dispatch overlapping the work before it)."""
    fn()
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number - 1):
            fn(wait=False)
        fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def ready(x):
    return x.block_until_ready()


def peak_bandwidth() -> float | None:
    """Bytes per second the card's memory moves at most: 2 (double data rate) x memory clock x bus width."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuInit(0)
        dev, clock, width = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        lib.cuDeviceGet(ctypes.byref(dev), 0)
        lib.cuDeviceGetAttribute(ctypes.byref(clock), 36, dev)  # memory clock, kHz
        lib.cuDeviceGetAttribute(ctypes.byref(width), 37, dev)  # global memory bus width, bits
        return 2.0 * clock.value * 1e3 * width.value / 8
    except OSError:
        return None


def row(name: str, ours: float, theirs: float | None, extra: str = "") -> None:
    line = f"{name:40s} {ours * 1e3:9.3f}ms"
    if theirs is not None:
        line += f"  jax {theirs * 1e3:9.3f}ms  ratio {ours / theirs:5.2f}"
    print(line + extra, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    if srcjax.default_backend() != "gpu":
        print("bench_gpu: no GPU (srcjax.default_backend() is not 'gpu'): skipped")
        return
    device = srcjax.devices()[0]
    print(f"srcjax on {device.device_kind}" + (f", JAX {real_jax.__version__} on {real_jax.devices()[0].device_kind}"
                                               if real_jax is not None else ", JAX: not on a GPU here"))
    repeat = 5 if args.small else 30
    rng = np.random.default_rng(0)
    libs = [("srcjax", srcjax, jnp)] + ([("jax", real_jax, real_jnp)] if real_jax is not None else [])

    def both(make, host_args, number=1):
        out = {}
        for label, lib, np_ in libs:
            fn = make(lib, np_)
            dev_args = [lib.device_put(a) for a in host_args]

            def call(wait=True, fn=fn, dev_args=dev_args):
                result = fn(*dev_args)
                return ready(result) if wait else result

            out[label] = timed(call, repeat, number)
        return out["srcjax"], out.get("jax")

    def selu(lib, np_):
        return lib.jit(lambda x: 1.05 * np_.where(x > 0, x, 1.67 * np_.exp(x) - 1.67))

    x = rng.standard_normal(10**6).astype(np.float32)
    row("jit(selu), 1e6 float32", *both(selu, [x]))

    n = 2048 if args.small else 8192
    big = rng.standard_normal((n, n)).astype(np.float32)

    def poly(lib, np_):
        return lib.jit(lambda x: x * x + x * 2.0)

    ours, theirs = both(poly, [big], number=10)
    peak = peak_bandwidth()
    moved = 2 * big.nbytes
    extra = f"   {moved / ours / 1e9:7.1f} GB/s"
    if peak:
        extra += f" = {moved / ours / peak:5.1%} of the card's {peak / 1e9:.0f} GB/s"
    row(f"x*x + x*2.0, {n}x{n} float32", ours, theirs, extra)

    def gram(lib, np_):
        return lib.jit(lambda x: x @ x.T)

    ours, theirs = both(gram, [big], number=3)
    row(f"x @ x.T, {n}x{n} float32", ours, theirs, f"   {2 * n**3 / ours / 1e12:7.1f} TFLOP/s")

    sizes = [784, 512, 512, 10]
    params = [(rng.normal(size=(m, k)).astype(np.float32) / np.sqrt(m), np.zeros(k, np.float32))
              for m, k in zip(sizes[:-1], sizes[1:])]
    xb = rng.normal(size=(128, 784)).astype(np.float32)
    yb = rng.normal(size=(128, 10)).astype(np.float32)
    times = {}
    for label, lib, np_ in libs:
        step = mlp_step(lib, np_)
        dev = lib.device_put((params, xb, yb))
        times[label] = timed(lambda wait=True, step=step, dev=dev: ready(step(*dev)[1]) if wait else step(*dev),
                             repeat)
    row("MLP 784-512-512-10 SGD step, batch 128", times["srcjax"], times.get("jax"))

    def tiny(lib, np_):
        return lib.jit(lambda x: x + 1.0)

    small = np.ones(4, np.float32)
    ours, theirs = both(tiny, [small])
    row("dispatch: jit(x + 1) on f32[4], waited", ours, theirs)


if __name__ == "__main__":
    main()
