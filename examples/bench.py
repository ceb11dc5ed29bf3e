"""Benchmarks: srcjax beside NumPy (and JAX, where it is importable), as ratios measured in one run.

Each workload is timed as the median of repeated calls after a warm-up. A ratio below 1 means srcjax is
faster. Run: python examples/bench.py [--small] [-k NAME]
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


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
        t_ours = median_time(lambda: ready(f(*ours)), repeat)
        t_np = median_time(lambda: numpy_fn(*host_args), repeat)
        line = f"{name:32s} {t_ours * 1e3:9.3f}ms {t_np * 1e3:9.3f}ms {t_ours / t_np:7.2f}"
        if real_jax is not None:
            theirs = [real_jax.device_put(a) for a in host_args]
            g = make(real_jax, real_jnp)
            t_jax = median_time(lambda: ready(g(*theirs)), repeat)
            line += f" {t_jax * 1e3:9.3f}ms {t_ours / t_jax:7.2f}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("-k", default="")
    args = parser.parse_args()
    repeat = 5 if args.small else 21
    header = f"{'workload':32s} {'srcjax':>10s} {'numpy':>10s} {'ratio':>7s}"
    if real_jax is not None:
        header += f" {'jax':>10s} {'ratio':>7s}"
    print(header)
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
        print(line)
    run_compiled(args.small, args.k, repeat)


if __name__ == "__main__":
    main()
