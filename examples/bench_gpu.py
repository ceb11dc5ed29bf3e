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

    def loop(lib, np_):
        def grow(x):
            return lib.lax.while_loop(lambda x: np_.max(x) < 100.0, lambda x: x * 1.02 + 0.01, x)
        return lib.jit(grow)

    start = np.abs(rng.standard_normal(1 << 16)).astype(np.float32)
    ours, theirs = both(loop, [start])
    from srcjax.runtime import gpu_eval

    saved, gpu_eval.AHEAD_MAX_WORK = gpu_eval.AHEAD_MAX_WORK, 0
    try:
        behind_fn, behind_arg = loop(srcjax, jnp), srcjax.device_put(start)
        behind = timed(lambda wait=True: ready(behind_fn(behind_arg)) if wait else behind_fn(behind_arg), repeat)
    finally:
        gpu_eval.AHEAD_MAX_WORK = saved
    trips = int(np.ceil(np.log(100.0 / start.max()) / np.log(1.02)))
    row(f"while loop, ~{trips} trips of f32[65536]", ours, theirs, f"   {ours / trips * 1e6:6.1f} us/trip; "
        f"without running ahead {behind * 1e3:.3f} ms")

    transfers(big, libs, repeat)


def transfers(host: np.ndarray, libs: list, repeat: int) -> None:
    """device_put and device_get of ``host`` (a fresh GPU array each time: a read is not cached), against the
    host link; srcjax's downloads through pinned chunks and, for comparison, straight into pageable memory."""
    from srcjax.codegen.ptx import driver

    def put(lib):
        return lambda wait=True: lib.device_put(host).block_until_ready()

    def get(lib, fresh):
        def call(wait=True):
            value = fresh()
            start = time.perf_counter()
            np.asarray(lib.device_get(value))
            return time.perf_counter() - start
        return call

    def timed_get(call):
        call()
        return statistics.median(call() for _ in range(repeat))

    gb = host.nbytes / 1e9
    theirs = {label: lib for label, lib, _ in libs}
    jax_put = timed(put(theirs["jax"]), repeat) if "jax" in theirs else None
    ours_put = timed(put(srcjax), repeat)
    row(f"device_put {host.nbytes >> 20} MB", ours_put, jax_put, f"   {gb / ours_put:6.1f} GB/s")
    srcjax_fresh = srcjax.jit(lambda x: x + 0.0)
    on_gpu = srcjax.device_put(host)
    fresh = lambda: srcjax_fresh(on_gpu).block_until_ready()  # noqa: E731
    jax_get = None
    if "jax" in theirs:
        jax_fresh = theirs["jax"].jit(lambda x: x + 0.0)
        jax_on = theirs["jax"].device_put(host)
        jax_get = timed_get(get(theirs["jax"], lambda: jax_fresh(jax_on).block_until_ready()))
    pinned = timed_get(get(srcjax, fresh))
    row(f"device_get {host.nbytes >> 20} MB, pinned chunks", pinned, jax_get, f"   {gb / pinned:6.1f} GB/s")
    saved, driver.PINNED_DOWNLOADS = driver.PINNED_DOWNLOADS, False
    try:
        pageable = timed_get(get(srcjax, fresh))
    finally:
        driver.PINNED_DOWNLOADS = saved
    row(f"device_get {host.nbytes >> 20} MB, pageable", pageable, jax_get, f"   {gb / pageable:6.1f} GB/s")


if __name__ == "__main__":
    main()
