"""Shared by the example programs: the --small switch (used by the tests) and a %timeit stand-in."""

import sys
import time

SMALL = "--small" in sys.argv


def size(full: int, small: int) -> int:
    """The problem size: ``full`` as in the tutorial, ``small`` when run by the test suite."""
    return small if SMALL else full


def timeit(label: str, fn, repeat: int = 7) -> float:
    """Print the best of ``repeat`` runs, like IPython's %timeit prints its mean."""
    fn()  # warm up (and compile, where a function is compiled)
    best = float("inf")
    for _ in range(1 if SMALL else repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    unit, scale = ("ms", 1e3) if best >= 1e-3 else ("us", 1e6)
    print(f"{label}: {best * scale:.1f} {unit} per loop (best of {repeat})")
    return best
