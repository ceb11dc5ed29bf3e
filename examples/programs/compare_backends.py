"""Runs each program under JAX and under srcjax, alternating (the machine's load drifts), and prints the
per-epoch times (first epoch, with compilation, apart) and the last epoch's metric of each.

Run with a Python that has jax installed and srcjax on the path:
    PYTHONPATH=/work/main /work/jaxenv/bin/python compare_backends.py [--rounds 2] [PROGRAM ...]
JAX_THREEFRY_PARTITIONABLE=1 is set for both, so they draw the same random numbers (JAX 0.5+ defaults to it).
srcjax's disk cache is off (SRCJAX_CACHE=0): the first epoch includes compilation for both, as JAX's has no
persistent cache by default.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

# moderate sizes: tens of seconds per run
RUNS = {
    "mnist_classifier_fromscratch": ["--num-train", "12800", "--epochs", "3"],
    "mnist_classifier": ["--num-train", "12800", "--epochs", "3"],
    "mnist_vae": ["--num-train", "6400", "--epochs", "3"],
    "differentially_private_sgd": ["--num-train", "5120", "--epochs", "3"],
}


def run(program: str, backend: str, args: list[str]) -> tuple[list[float], str]:
    env = dict(os.environ, JAX_THREEFRY_PARTITIONABLE="1", SRCJAX_CACHE="0")
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, os.path.join(here, program + ".py"), "--backend", backend, *args],
                         capture_output=True, text=True, env=env, cwd=here)
    if out.returncode:
        return [], "FAILED: " + out.stderr.strip().splitlines()[-1]
    times = [float(t) for t in re.findall(r"time ([\d.]+)s", out.stdout)]
    last = [line for line in out.stdout.splitlines() if line.startswith("epoch")][-1]
    return times, re.sub(r"^epoch \d+\s+time [\d.]+s\s+", "", last)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="*", default=list(RUNS))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    for program in args.programs:
        results: dict[str, list[list[float]]] = {"jax": [], "srcjax": []}
        metric = {}
        for _ in range(args.rounds):
            for backend in ("jax", "srcjax"):
                times, metric[backend] = run(program, backend, RUNS[program])
                results[backend].append(times)
        print(f"{program}  ({' '.join(RUNS[program])})")
        for backend, runs in results.items():
            later = [t for times in runs for t in times[1:]]
            first = [times[0] for times in runs if times]
            summary = (f"epoch 1 (compiles) {min(first):7.2f}s   later epochs: median {statistics.median(later):7.2f}s"
                       f"  min {min(later):7.2f}s") if later else ""
            print(f"  {backend:7s} {summary}   last: {metric[backend]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
