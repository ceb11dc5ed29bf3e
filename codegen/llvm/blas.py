"""Finds CBLAS ``?gemm``, ``?syrk`` and ``?gemv`` at run time: the OpenBLAS that NumPy's wheel bundles (ILP64
symbols such as ``scipy_cblas_sgemm64_`` in ``numpy.libs/libscipy_openblas64_*.so``), or one already loaded in
the process.

Compiled code calls it through symbols of our own (``srcjax_sgemm``, ``srcjax_dsyrk``, ...) bound to the
routine's address, so the generated IR does not depend on which library was found. ``SRCJAX_BLAS=0``
turns BLAS off (matrix products then use the loop-nest fallback).
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from srcjax.codegen.llvm import engine
from srcjax.codegen.settings import environ_int

# (library file patterns, symbol pattern with {t} for s/d, integer width of its blasint)
_CANDIDATES = [
    ("libscipy_openblas64_*", "scipy_cblas_{t}gemm64_", 64),
    ("libscipy_openblas*", "scipy_cblas_{t}gemm", 32),
    ("libopenblas64_*", "cblas_{t}gemm64_", 64),
    ("libopenblas*", "cblas_{t}gemm", 32),
]


# OpenBLAS's thread-count controls, bound as ``srcjax_blas_set_threads``/``srcjax_blas_get_threads``
_THREAD_CONTROLS = [
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
]
SET_THREADS, GET_THREADS = "srcjax_blas_set_threads", "srcjax_blas_get_threads"
# an i32 of the host's: the thread count BLAS is given back after a product split across the pool (each block
# runs BLAS on one thread); ``fit_threads_to_load`` keeps it. (Restoring what each split read before it set 1
# would leave BLAS on one thread for good when two threads of the process split products at once.)
THREADS_WANTED = "srcjax_blas_threads_wanted"
_threads_wanted = ctypes.c_int32(1)


@dataclass(frozen=True)
class Gemm:
    int_bits: int  # width of M, N, K, lda, ... (64 for ILP64 builds)
    symbols: dict  # dtype -> our symbol name of its gemm (its syrk, gemv: the same with "syrk", "gemv")
    origin: str
    # whether SET_THREADS/GET_THREADS are bound: compiled code then runs BLAS on one thread per chunk of a
    # product split across its own pool (two pools on the same cores stall each other)
    thread_control: bool = False
    # whether OpenBLAS's AVX-512 kernels for small products are bound (``_bind_small_kernels``): our symbol of
    # one is ``small_kernel(dtype, transposes)``
    small: bool = False


_found: list = []
_search_lock = threading.Lock()


def _library_dirs() -> list[str]:
    numpy_dir = os.path.dirname(np.__file__)
    return [os.path.join(numpy_dir, os.pardir, "numpy.libs"), os.path.join(numpy_dir, ".dylibs"), numpy_dir]


def find_gemm() -> Gemm | None:
    """The process's GEMM, loaded and bound on first use (None when there is none or it is turned off)."""
    if _found:
        return _found[0]
    with _search_lock:
        if not _found:
            _found.append(_search() if os.environ.get("SRCJAX_BLAS", "1") != "0" else None)
    return _found[0]


def _search() -> Gemm | None:
    for pattern, symbol, bits in _CANDIDATES:
        for directory in _library_dirs():
            for path in sorted(glob.glob(os.path.join(directory, pattern + ".so*"))):
                try:
                    lib = ctypes.CDLL(path)
                    addresses = {
                        (t, r): ctypes.cast(getattr(lib, symbol.format(t=t).replace("gemm", r)), ctypes.c_void_p).value
                        for t in "sd"
                        for r in ("gemm", "syrk", "gemv")
                    }
                except (OSError, AttributeError):
                    continue
                for (t, routine), address in addresses.items():
                    engine.add_symbol(f"srcjax_{t}{routine}", address)
                symbols = {np.dtype(np.float32): "srcjax_sgemm", np.dtype(np.float64): "srcjax_dgemm"}
                return Gemm(bits, symbols, f"{path}:{symbol}", _bind_thread_control(lib), _bind_small_kernels(lib))
    return None


# OpenBLAS's kernels for small products read the operands where they lie, with no packing into panels and no
# pass zeroing the result first (its ``?gemm`` does both on every call). It exports them, one per core type; ours
# are the SKYLAKEX (AVX-512) ones, bound when OpenBLAS chose one of the cores they are built for (so the CPU has
# their instructions). Each block of a product split across the pool of a size they suit is one of these calls.
# SRCJAX_BLAS_SMALL=0 turns them off.
SMALL_KERNELS = environ_int("SRCJAX_BLAS_SMALL", 1)
_SMALL_CORES = ("skylakex", "cooperlake", "sapphirerapids")
_CORENAMES = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
              "openblas_get_corename")


def small_kernel(dtype: np.dtype, transposes: str) -> str:
    """Our symbol of the small-product kernel of ``dtype`` (float32/float64) for ``transposes`` ("nn", "nt",
    "tn", "tt": of its column-major operands). Its arguments: M, N, K, A, lda, alpha, B, ldb, C, ldc (the integers
    64-bit), C = alpha op(A) op(B), column-major."""
    return _small_symbol("s" if np.dtype(dtype) == np.float32 else "d", transposes)


def _small_symbol(t: str, transposes: str) -> str:
    return f"srcjax_{t}gemm_small_{transposes}"


def _bind_small_kernels(lib: ctypes.CDLL) -> bool:
    if not SMALL_KERNELS:
        return False
    for name in _CORENAMES:
        getter = getattr(lib, name, None)
        if getter is not None:
            getter.restype = ctypes.c_char_p
            core = (getter() or b"").decode(errors="replace").lower()
            break
    else:
        return False
    if core not in _SMALL_CORES:
        return False
    try:
        addresses = {(t, ops): ctypes.cast(getattr(lib, f"{t}gemm_small_kernel_b0_{ops}_SKYLAKEX"),
                                           ctypes.c_void_p).value
                     for t in "sd" for ops in ("nn", "nt", "tn", "tt")}
    except AttributeError:
        return False
    for (t, ops), address in addresses.items():
        engine.add_symbol(_small_symbol(t, ops), address)
    return True


def _bind_thread_control(lib: ctypes.CDLL) -> bool:
    for setter, getter in _THREAD_CONTROLS:
        try:
            addresses = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in (setter, getter)]
        except AttributeError:
            continue
        engine.add_symbol(SET_THREADS, addresses[0])
        engine.add_symbol(GET_THREADS, addresses[1])
        _load.set, _load.get = getattr(lib, setter), getattr(lib, getter)
        _threads_wanted.value = max(1, int(_load.get()))
        engine.add_symbol(THREADS_WANTED, ctypes.addressof(_threads_wanted))
        return True
    return False


# -- BLAS's threads on a loaded machine ---------------------------------------------------------------------
class _Load:
    """What ``fit_threads_to_load`` last saw and set."""

    set: Any = None
    get: Any = None
    most: int | None = None  # OpenBLAS's own thread count (what it gets back when the cores are free)
    current: int | None = None
    crowded = False  # what the thread pool was last told (``pool.set_crowded``)
    checked = 0.0


_load = _Load()
LOAD_CHECK_SECONDS = 0.05


def fit_threads_to_load() -> None:
    """Give OpenBLAS only the cores other processes leave free, and tell the thread pool when at most one is
    (it then keeps sharing its nests however slow a call was: see ``pool.CROWDED``), checked at most every
    ``LOAD_CHECK_SECONDS``.

    OpenBLAS's threads wait for each other spinning: where another process keeps a core busy, the thread that
    shares it is descheduled and every product stalls on it (one MLP step on 2 cores with one process
    spinning: 6.4 ms with OpenBLAS's 2 threads, 3.7 with 1, where JAX takes 3.6). The cores others keep busy
    are the runnable count of ``/proc/loadavg`` less this process's running threads."""
    now = time.monotonic()
    if now - _load.checked < LOAD_CHECK_SECONDS:
        return
    _load.checked = now
    try:
        others = _others_running()
    except (OSError, ValueError, IndexError):
        return
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    free = cpus - others
    crowded = free <= 1 and cpus > 1
    if crowded != _load.crowded:
        from srcjax.codegen.llvm import pool

        pool.set_crowded(crowded)
        _load.crowded = crowded
    if _load.set is None:
        return
    if _load.most is None:
        _load.most = _load.current = max(1, int(_load.get()))
    want = max(1, min(_load.most, free))
    if want != _load.current:
        _load.set(want)
        _load.current = _threads_wanted.value = want


def _others_running() -> int:
    """Threads of other processes running or waiting for a core now."""
    with open("/proc/loadavg") as f:
        runnable = int(f.read().split()[3].split("/")[0])
    ours = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as f:
                ours += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(0, runnable - ours)


def gemm_dtypes() -> set[np.dtype]:
    found = find_gemm()
    return set(found.symbols) if found else set()
