"""Benchmarks: srcjax beside NumPy (and JAX, where it is importable), as ratios measured in one run.

Each workload is timed as the median of repeated calls after a warm-up (the MLP step: the time per step over
3 s of steps, the rate a training loop gets). A ratio below 1 means srcjax is faster.
Run: python examples/bench.py [--small] [-k NAME] [--load N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import srcjax
import srcjax.numpy as jnp

try:  # optional: `pip install jax` in the bench environment
    import jax as real_jax
    import jax.numpy as real_jnp

    real_jax.config.update("jax_threefry_partitionable", False)
except ImportError:
    real_jax = real_jnp = None


def median_time(fn, repeat: int, number: int = 1) -> float:
    """The median over ``repeat`` samples of the time per call, a sample timing ``number`` calls in a row (many,
    for calls of a few microseconds: one alone is mostly timer and scheduling noise)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def steady_time(fn, seconds: float) -> float:
    """The time per call over ``seconds`` of calls in a row after a warm-up: the rate a training loop gets,
    stalls included (on a loaded machine a median of a few calls hides them, and varies from run to run)."""
    for _ in range(3):
        fn()
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        fn()
        count += 1
    return elapsed / count


def median_times(fns, repeat: int, number: int | None = None) -> list[float]:
    """``median_time`` of each of ``fns``, their samples taken in turn. A sample times ``number`` calls in a row,
    by default as many as take about SAMPLE_SECONDS (at least one): a library's threads still spinning after its
    own calls then disturb only the first call of the next library's sample, not every one."""
    numbers = []
    for fn in fns:
        fn()
        start = time.perf_counter()
        fn()
        numbers.append(number or max(1, int(SAMPLE_SECONDS / max(time.perf_counter() - start, 1e-9))))
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, times, count in zip(fns, samples, numbers):
            start = time.perf_counter()
            for _ in range(count):
                fn()
            times.append((time.perf_counter() - start) / count)
    return [statistics.median(times) for times in samples]


SAMPLE_SECONDS = 0.005


_bandwidth: list[float] = []


def memory_bandwidth() -> float:
    """Bytes per second this machine moves, read plus written, copying 256 MB with NumPy (best of 5)."""
    if not _bandwidth:
        src = np.ones(1 << 26, np.float32)
        dst = np.empty_like(src)
        best = min(_timed_once(lambda: np.copyto(dst, src)) for _ in range(5))
        _bandwidth.append(2 * src.nbytes / best)
    return _bandwidth[0]


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _timed_once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def start_load(count: int) -> list:
    """``count`` background processes spinning on a core each until this one ends (``--load``)."""
    import atexit
    import subprocess
    import sys

    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    atexit.register(lambda: [p.kill() for p in spinners])
    return spinners


def ready(x):
    return x.block_until_ready() if hasattr(x, "block_until_ready") else x


def workloads(small: bool):
    """(name, args as NumPy arrays, f(lib_numpy, *args)) triples; each runs on srcjax, NumPy and JAX."""
    rng = np.random.default_rng(0)
    big = 100_000 if small else 1_000_000
    n = 300 if small else 3000
    v4 = rng.normal(size=4).astype(np.float32)
    v = rng.normal(size=big).astype(np.float32)
    m = rng.normal(size=(n, n)).astype(np.float32)
    m300 = rng.normal(size=(300, 300)).astype(np.float32)

    def selu(np_, x, alpha=1.67, lmbda=1.05):
        return lmbda * np_.where(x > 0, x, alpha * np_.exp(x) - alpha)

    return [
        ("add, 4 elements", (v4, v4), lambda np_, a, b: np_.add(a, b)),
        (f"add, {big:.0e} elements", (v, v), lambda np_, a, b: np_.add(a, b)),
        (f"exp, {big:.0e} elements", (v,), lambda np_, a: np_.exp(a)),
        (f"sum, {big:.0e} elements", (v,), lambda np_, a: np_.sum(a)),
        (f"selu (eager), {big:.0e}", (v,), selu),
        ("x[::2] slice, 1e6", (v,), lambda np_, a: a[::2]),
        ("dot 300x300", (m300,), lambda np_, a: np_.dot(a, a.T)),
        (f"dot {n}x{n} (x @ x.T)", (m,), lambda np_, a: np_.dot(a, a.T)),
    ]


def compiled_workloads(small: bool):
    """(name, args, make(lib) -> callable): the compiled workloads; ``lib`` is srcjax or jax."""
    rng = np.random.default_rng(1)
    big = 100_000 if small else 1_000_000
    n = 500 if small else 5000
    v = rng.normal(size=big).astype(np.float32)
    m = rng.normal(size=(n, n)).astype(np.float32)
    tiny = rng.normal(size=4).astype(np.float32)

    def selu(np_):
        return lambda x, alpha=1.67, lmbda=1.05: lmbda * np_.where(x > 0, x, alpha * np_.exp(x) - alpha)

    def sum_logistic(np_):
        return lambda x: np_.sum(1.0 / (1.0 + np_.exp(-x)))

    return [
        (f"jit(selu), {big:.0e}", (v,), lambda lib, np_: lib.jit(selu(np_)), lambda x: selu(np)(x)),
        (f"jit(x*x + x*2.0), {n}x{n}", (m,), lambda lib, np_: lib.jit(lambda x: x * x + x * 2.0),
         lambda x: x * x + x * 2.0),
        (f"jit(grad(sum_logistic)), {big:.0e}", (v,), lambda lib, np_: lib.jit(lib.grad(sum_logistic(np_))),
         lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
        ("jit dispatch, 4 elements", (tiny,), lambda lib, np_: lib.jit(lambda x: x + 1.0), lambda x: x + 1.0),
    ]


def run_compiled(small: bool, key: str, repeat: int) -> None:
    print(f"\n{'compiled workload':32s} {'srcjax':>10s} {'numpy':>10s} {'ratio':>7s}"
          + (f" {'jax':>10s} {'ratio':>7s}" if real_jax is not None else ""))
    for name, host_args, make, numpy_fn in compiled_workloads(small):
        if key not in name:
            continue
        ours = [srcjax.device_put(a) for a in host_args]
        f = make(srcjax, jnp)
        calls = [lambda: ready(f(*ours)), lambda: numpy_fn(*host_args)]
        if real_jax is not None:
            theirs = [real_jax.device_put(a) for a in host_args]
            g = make(real_jax, real_jnp)
            calls.append(lambda: ready(g(*theirs)))
        # (samples interleaved, so a change in the machine's load hits every library alike)
        times = median_times(calls, repeat, 1000 if "dispatch" in name else None)
        t_ours, t_np = times[:2]
        line = f"{name:32s} {t_ours * 1e3:9.3f}ms {t_np * 1e3:9.3f}ms {t_ours / t_np:7.2f}"
        if real_jax is not None:
            line += f" {times[2] * 1e3:9.3f}ms {t_ours / times[2]:7.2f}"
        if "x*x" in name:  # (a streaming loop: bytes read and written against the machine's copy bandwidth)
            bound = 2 * host_args[0].nbytes / memory_bandwidth()
            line += f"   {t_ours / bound:5.2f}x the memory bound ({bound * 1e3:.3f}ms)"
        if "selu" in name and cpu_hz():  # (arithmetic: cycles per element against the loop's instructions)
            count = loop_instructions(f.lower(*ours).compile().native.assembly())
            if count:
                bound = count[0] / VECTOR_ISSUE * host_args[0].size / cpu_hz() / _cores()
                line += f"   {t_ours / bound:5.2f}x the arithmetic bound ({bound * 1e3:.3f}ms)"
        print(line)


# -- bounds: the machine's BLAS rate, and the instruction count of fused transcendental loops ----------------
_blas: list[float] = []


def blas_rate() -> float:
    """Multiply-adds x 2 per second of NumPy's BLAS on a 2048x2048 float32 product (best of 3): what the
    machine's BLAS does here, the bound of the product workloads."""
    if not _blas:
        a = np.random.default_rng(5).standard_normal((2048, 2048)).astype(np.float32)
        a @ a
        _blas.append(2 * 2048**3 / min(_timed_once(lambda: a @ a) for _ in range(3)))
    return _blas[0]


def mlp_flops(sizes: list[int], batch: int) -> int:
    """The MLP step's float operations in its products: each layer's forward product, its weight gradient,
    and the gradient of its input except the first layer's."""
    pairs = list(zip(sizes[:-1], sizes[1:]))
    forward = sum(2 * batch * m * k for m, k in pairs)
    return 2 * forward + sum(2 * batch * m * k for m, k in pairs[1:])


def cpu_hz() -> float | None:
    """The cores' clock as the kernel reports it now (the highest), or None."""
    try:
        with open("/proc/cpuinfo") as f:
            return max(float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")) * 1e6
    except (OSError, ValueError):
        return None


VECTOR_ISSUE = 2  # vector instructions a core completes per cycle at best (two FMA/ALU pipes for 512 and 256 bits)


def loop_instructions(assembly: str) -> tuple[float, int] | None:
    """(instructions per element, loop length) of a compiled elementwise function of one float32 input: its
    innermost loop with the most vector instructions, whose vector loads of the input give the elements it
    covers per trip (16 a zmm load, 8 a ymm, 4 an xmm)."""
    import re

    lines = [line.strip() for line in assembly.splitlines()]
    where = {line[:-1]: i for i, line in enumerate(lines) if re.fullmatch(r"\.?L\w+:", line)}
    best = None
    for i, line in enumerate(lines):
        jump = re.fullmatch(r"j\w+\s+(\.?L\w+)", line)
        if not jump or where.get(jump.group(1), i) >= i:
            continue
        body = lines[where[jump.group(1)] + 1:i + 1]
        if any(re.fullmatch(r"\.?L\w+:", b) for b in body):
            continue  # (not innermost)
        code = [b for b in body if b and not b.startswith((".", "#"))]
        vector = sum(bool(re.search(r"%[xyz]mm", b)) for b in code)
        # (the input's loads: an indexed memory operand read into a vector register; widened to float64, half)
        lanes = sum({"z": 16, "y": 8, "x": 4}[m.group(1)] // (2 if "ps2pd" in b else 1) for b in code
                    for m in [re.fullmatch(r"v\w+\s+(?:\$\w+,\s*)?-?\w*\(%\w+,%\w+(?:,\d)?\),.*%([xyz])mm\d+", b)]
                    if m)
        if lanes and (best is None or vector > best[2]):
            best = (len(code) / lanes, len(code), vector)
    return None if best is None else best[:2]


def run_transcendental(small: bool, key: str, repeat: int) -> None:
    """Fused transcendental loops on 1e6 float32 (in cache: the bound is arithmetic): cycles per element
    against the loop's instructions per element over VECTOR_ISSUE, on one core and on two."""
    import os

    hz = cpu_hz()
    x = np.random.default_rng(3).uniform(-3, 3, 100_000 if small else 1_000_000).astype(np.float32)
    print(f"\n{'fused loop, 1e6 float32':24s} {'instr/elem':>10s} {'bound':>9s} {'1 core':>16s} {'2 cores':>16s}"
          f"   (cycles per element per core at {hz / 1e9 if hz else float('nan'):.2f} GHz; "
          f"bound: {VECTOR_ISSUE} vector instructions a cycle)")
    loops = [("exp", jnp.exp), ("tanh", jnp.tanh), ("logistic", srcjax.nn.sigmoid), ("log", lambda v: jnp.log(v + 4.0)),
             ("erf", srcjax.scipy.special.erf)]
    for name, fn in loops:
        if key not in name and key not in "transcendental":
            continue
        cells, count = [], None
        for threads in ("1", "2"):
            os.environ["SRCJAX_NUM_THREADS"] = threads
            try:
                compiled = srcjax.jit(lambda v, fn=fn: fn(v)).lower(x).compile()
            finally:
                del os.environ["SRCJAX_NUM_THREADS"]
            if count is None:
                count = loop_instructions(compiled.native.assembly())
            arg = srcjax.device_put(x)
            seconds = median_time(lambda: ready(compiled(arg)), repeat)
            cycles = seconds * hz * int(threads) / x.size if hz else float("nan")
            cells.append(f"{seconds * 1e3:6.3f}ms {cycles:5.2f}c")
        per, _ = count if count else (float("nan"), 0)
        bound = per / VECTOR_ISSUE
        print(f"{name:24s} {per:10.2f} {bound:8.2f}c {cells[0]:>16s} {cells[1]:>16s}")


def mlp_step(lib, np_, lr: float = 0.01):
    """One SGD step of a tanh MLP: value_and_grad of the mean squared error, then the update."""

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_.tanh(h @ w + b)
        w, b = params[-1]
        return np_.mean((h @ w + b - y) ** 2)

    def step(params, x, y):
        value, grads = lib.value_and_grad(loss)(params, x, y)
        return [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)], value

    return lib.jit(step)


def run_programs(small: bool, key: str, repeat: int) -> None:
    """Whole-program workloads: an MLP training step, the first call in a fresh process, loop compile time."""
    rng = np.random.default_rng(2)
    sizes = [784, 128, 128, 10] if small else [784, 512, 512, 10]
    params = [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(128, 784)).astype(np.float32)
    y = rng.normal(size=(128, 10)).astype(np.float32)
    name = f"MLP {'-'.join(map(str, sizes))} SGD step, batch 128"
    if key in name:
        libs = [("srcjax", srcjax, jnp)] + ([("jax", real_jax, real_jnp)] if real_jax is not None else [])
        times = {}
        for label, lib, np_ in libs:
            step = mlp_step(lib, np_)
            args = lib.device_put((params, x, y))
            times[label] = steady_time(lambda: ready(step(*args)[1]), 0.2 if small else 3.0)
        line = f"{name:44s} {times['srcjax'] * 1e3:9.3f}ms"
        if "jax" in times:
            line += f"   jax {times['jax'] * 1e3:9.3f}ms  ratio {times['srcjax'] / times['jax']:5.2f}"
        bound = mlp_flops(sizes, 128) / blas_rate()  # (its products at the BLAS's own rate)
        print(line + f"   {times['srcjax'] / bound:5.2f}x the BLAS bound ({bound * 1e3:.3f}ms)")
    if key in "import + first jit(selu) call":
        print(f"{'import + first jit(selu) call':44s} " + "   ".join(
            f"{lib} {first_call_time(lib):6.3f}s" for lib in ["srcjax"] + (["jax"] if real_jax is not None else [])))
    if key in "compile a Python for loop":
        loop_compile_time(2)  # (the first compilation also sets up LLVM)
        short, long_ = loop_compile_time(10), loop_compile_time(10_000)
        print(f"{'compile a Python for loop, 10 / 10k steps':44s} {short * 1e3:9.1f}ms {long_ * 1e3:9.1f}ms"
              f"  ratio {long_ / short:5.2f}")


FIRST_CALL = """
import time
start = time.perf_counter()
import {lib} as jax
import {lib}.numpy as jnp
import numpy as np
selu = jax.jit(lambda x, alpha=1.67, lmbda=1.05: lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha))
selu(np.ones(1000, np.float32)).block_until_ready()
print(time.perf_counter() - start)
"""


def first_call_time(lib: str) -> float:
    """``import`` plus the first ``jit(selu)`` call in a fresh process (compile cache off), best of 3."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "SRCJAX_CACHE": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (imports from .pyc, as an installed package does)
    runs = [float(subprocess.run([sys.executable, "-c", FIRST_CALL.format(lib=lib)], env=env, check=True,
                                 capture_output=True, text=True).stdout) for _ in range(3)]
    return min(runs)


def loop_compile_time(steps: int) -> float:
    """Tracing and compiling a function with a ``steps``-iteration Python ``for`` loop (cache off)."""
    import os

    def f(x):
        for _ in range(steps):
            x = x * 0.999 + jnp.sin(x) * 0.001
        return x

    saved = os.environ.get("SRCJAX_CACHE")
    os.environ["SRCJAX_CACHE"] = "0"
    try:
        start = time.perf_counter()
        ready(srcjax.jit(f)(np.ones(16, np.float32)))
        return time.perf_counter() - start
    finally:
        if saved is None:
            del os.environ["SRCJAX_CACHE"]
        else:
            os.environ["SRCJAX_CACHE"] = saved


SCAN_PROGRAM = """
import time
import numpy as np
import {lib} as jax
import {lib}.numpy as jnp

steps, hidden = {steps}, 64
rng = np.random.default_rng(0)
W = (rng.normal(size=(hidden, hidden)) / 8).astype(np.float32)
U = (rng.normal(size=(hidden, 32)) / 8).astype(np.float32)
xs = rng.normal(size=(steps, 32)).astype(np.float32)


def loss(W, U, xs):
    def cell(h, x):  # an RNN cell: the hidden state carried, its values stacked
        h = jnp.tanh(W @ h + U @ x)
        return h, h

    h, hs = jax.lax.scan(cell, jnp.zeros(hidden, np.float32), xs)
    return jnp.sum(hs * hs) + jnp.sum(h)


fn = jax.jit(jax.grad(loss, argnums=(0, 1)) if {grad} else loss)
start = time.perf_counter()
jax.block_until_ready(fn(W, U, xs))
first = time.perf_counter() - start
times = []
for _ in range({repeat}):
    start = time.perf_counter()
    jax.block_until_ready(fn(W, U, xs))
    times.append(time.perf_counter() - start)
print(first, sorted(times)[len(times) // 2])
"""


def scan_times(lib: str, steps: int, grad: bool, repeat: int) -> tuple[float, float]:
    """(first call: trace and compile included, then a median call) of an RNN ``lax.scan``, in a fresh process
    with the compile cache off."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "SRCJAX_CACHE": "0"}
    code = SCAN_PROGRAM.format(lib=lib, steps=steps, grad=grad, repeat=repeat)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    first, median = map(float, out.split())
    return first, median


def run_scans(key: str, repeat: int) -> None:
    """lax.scan stays a loop: compile time at 10 and 10k steps, and the 10k-step run time, beside JAX."""
    libs = ["srcjax"] + (["jax"] if real_jax is not None else [])
    for grad in (False, True):
        name = f"{'jit(grad(scan))' if grad else 'jit(scan)'} RNN 64, 10k steps"
        if key not in name:
            continue
        short = {lib: scan_times(lib, 10, grad, 3)[0] for lib in libs}
        long_ = {lib: scan_times(lib, 10_000, grad, repeat) for lib in libs}
        line = f"{name:44s} compile 10/10k {short['srcjax']:6.2f}s {long_['srcjax'][0]:6.2f}s" \
               f"  run {long_['srcjax'][1] * 1e3:8.2f}ms"
        if "jax" in long_:
            line += f"   jax compile {short['jax']:6.2f}s {long_['jax'][0]:6.2f}s run {long_['jax'][1] * 1e3:8.2f}ms" \
                    f"  run ratio {long_['srcjax'][1] / long_['jax'][1]:5.2f}"
        print(line)


def run_vae(key: str) -> None:
    """JAX's VAE example (programs/mnist_vae.py: 6400 synthetic images, batch 32, its update jitted and called
    from Python per batch) in fresh processes, the libraries alternating: the median epoch after the first,
    which compiles."""
    import os
    import sys

    name = "VAE epoch, 6400 images, batch 32"
    if key not in name:
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs"))
    import compare_backends

    libs = ["srcjax"] + (["jax"] if real_jax is not None else [])
    later: dict[str, list[float]] = {lib: [] for lib in libs}
    for _ in range(2):
        for lib in libs:
            times, last = compare_backends.run("mnist_vae", lib, ["--num-train", "6400", "--epochs", "4"])
            if not times:
                print(f"{name:44s} {lib}: {last}")
                return
            later[lib] += times[1:]
    median = {lib: statistics.median(t) for lib, t in later.items()}
    line = f"{name:44s} {median['srcjax']:9.3f}s "
    if "jax" in median:
        line += f"   jax {median['jax']:9.3f}s   ratio {median['srcjax'] / median['jax']:5.2f}"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("-k", default="")
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="run with N background processes spinning (a loaded machine)")
    args = parser.parse_args()
    repeat = 5 if args.small else 21
    if args.load:
        start_load(args.load)
        print(f"(with {args.load} background process{'es' if args.load > 1 else ''} spinning)")
    print(f"memory bandwidth (NumPy copy, read + written): {memory_bandwidth() / 1e9:.1f} GB/s")
    header = f"{'workload':32s} {'srcjax':>10s} {'numpy':>10s} {'ratio':>7s}"
    if real_jax is not None:
        header += f" {'jax':>10s} {'ratio':>7s}"
    print(header)
    print(f"BLAS (NumPy's, 2048x2048 float32): {blas_rate() / 1e9:.0f} GFLOP/s")
    for name, host_args, fn in workloads(args.small):
        if args.k not in name:
            continue
        ours = [srcjax.device_put(a) for a in host_args]
        t_ours = median_time(lambda: ready(fn(jnp, *ours)), repeat)
        t_np = median_time(lambda: fn(np, *host_args), repeat)
        line = f"{name:32s} {t_ours * 1e3:9.3f}ms {t_np * 1e3:9.3f}ms {t_ours / t_np:7.2f}"
        if real_jax is not None:
            theirs = [real_jax.device_put(a) for a in host_args]
            t_jax = median_time(lambda: ready(fn(real_jnp, *theirs)), repeat)
            line += f" {t_jax * 1e3:9.3f}ms {t_ours / t_jax:7.2f}"
        if "x.T" in name:  # (a product: against the BLAS's rate; srcjax's x @ x.T computes half, as syrk)
            bound = 2 * host_args[0].shape[0] ** 3 / blas_rate()
            line += f"   {t_ours / bound:5.2f}x the BLAS bound ({bound * 1e3:.3f}ms)"
        print(line)
    run_compiled(args.small, args.k, repeat)
    run_transcendental(args.small, args.k, repeat)
    print()
    run_programs(args.small, args.k, repeat)
    run_scans(args.k, repeat)
    run_vae(args.k)


if __name__ == "__main__":
    main()
