"""Matrix products on the GPU through cuBLAS (ctypes on ``libcublas.so`` of the ``nvidia-cublas`` wheel, or
``SRCJAX_CUBLAS``).

A plan's ``Gemm`` is row-major: out[b] = op(lhs[b]) @ op(rhs[b]). cuBLAS is column-major, and a row-major
matrix read column-major is its transpose, so the call computes out^T = op(rhs)^T op(lhs)^T with the
operands swapped and their transpose flags as they are. Float32 products use TF32 tensor cores unless
``jax_default_matmul_precision`` asks for more ("highest", "float32", "fp32"), as JAX does on Ampere and later.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from typing import Any, Callable

import numpy as np

from srcjax.codegen.llvm.plan import Gemm

_OP_N, _OP_T = 0, 1
_R_32F, _R_64F = 0, 1
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32, _COMPUTE_64F = 68, 77, 70
_GEMM_DEFAULT = -1
_WORKSPACE = 32 << 20
_FULL_FLOAT32 = {"highest", "float32", "fp32", "tensorfloat32_off"}


class CublasError(RuntimeError):
    pass


def full_float32(op_precision: Any, default: Any) -> bool:
    """Whether a float32 product computes in full float32 rather than TF32: the op's ``precision`` when it has one
    (HIGHEST, or a pair whose higher is HIGHEST), else ``jax_default_matmul_precision`` ("highest", "float32")."""
    if op_precision is not None:
        levels = op_precision if isinstance(op_precision, (tuple, list)) else (op_precision,)
        return any("HIGHEST" in str(level).upper() for level in levels if level is not None)
    return default is not None and str(default).lower() in _FULL_FLOAT32


def library_path() -> str | None:
    if os.environ.get("SRCJAX_CUBLAS"):
        return os.environ["SRCJAX_CUBLAS"]
    for entry in sys.path:
        for pattern in ("nvidia/cublas/lib/libcublas.so*", "nvidia/cu*/lib/libcublas.so*"):
            found = sorted(glob.glob(os.path.join(entry or ".", pattern)))
            if found:
                return found[-1]
    for root in ("/usr/local/cuda/lib64", *sorted(glob.glob("/usr/local/cuda-*/lib64"))):
        found = sorted(glob.glob(os.path.join(root, "libcublas.so*")))
        if found:
            return found[-1]
    return None


class Cublas:
    """A cuBLAS handle on a device's stream."""

    def __init__(self, device: Any):
        path = library_path()
        if path is None:
            raise CublasError("cuBLAS is not installed: pip install nvidia-cublas (or set SRCJAX_CUBLAS to the path "
                              "of libcublas.so)")
        self.lib = ctypes.CDLL(path)
        device.make_current()
        handle = ctypes.c_void_p()
        self._check("cublasCreate_v2", self.lib.cublasCreate_v2(ctypes.byref(handle)))
        self.handle = handle
        self._check("cublasSetStream_v2", self.lib.cublasSetStream_v2(handle, device.stream))
        # a workspace of its own, so that cuBLAS allocates nothing while a graph is captured
        self.workspace = device.allocator.allocate(_WORKSPACE)
        self._check("cublasSetWorkspace_v2", self.lib.cublasSetWorkspace_v2(
            handle, ctypes.c_void_p(self.workspace.pointer), ctypes.c_size_t(_WORKSPACE)))
        self.device = device

    @staticmethod
    def _check(name: str, status: int) -> None:
        if status != 0:
            raise CublasError(f"{name} failed with cuBLAS status {status}")

    def runner(self, step: Gemm, precision: Any = None) -> Callable[[int, int, int], None]:
        """``run(lhs, rhs, out)``: ``step``'s product of the operands at device addresses ``lhs`` and ``rhs``
        (offset to the views' first elements) into ``out``; the call's other arguments are made once, here."""
        if not (step.m and step.n):
            return lambda lhs, rhs, out: None
        dtype = np.dtype(step.target.dtype)
        (lbs, lt, lld), (rbs, rt, rld) = step.lhs_layout, step.rhs_layout
        if dtype == np.float64:
            kind, compute, scalar = _R_64F, _COMPUTE_64F, ctypes.c_double
        else:
            full = full_float32(step.precision, precision)
            kind, compute, scalar = _R_32F, (_COMPUTE_32F if full else _COMPUTE_32F_FAST_TF32), ctypes.c_float
        alpha, beta = scalar(1.0), scalar(0.0)
        i64, pointer, gemm, check = ctypes.c_longlong, ctypes.c_void_p, self.lib.cublasGemmStridedBatchedEx, self._check
        head = (self.handle, _OP_T if rt else _OP_N, _OP_T if lt else _OP_N, step.n, step.m, step.k,
                ctypes.byref(alpha))
        rhs_tail, lhs_tail = (kind, rld, i64(rbs)), (kind, lld, i64(lbs))
        out_tail = (kind, step.n, i64(step.m * step.n), step.batch, compute, _GEMM_DEFAULT)
        beta_ref = ctypes.byref(beta)

        def run(lhs: int, rhs: int, out: int) -> None:
            status = gemm(*head, pointer(rhs), *rhs_tail, pointer(lhs), *lhs_tail, beta_ref, pointer(out), *out_tail)
            if status:
                check("cublasGemmStridedBatchedEx", status)

        run.keep = (alpha, beta)  # type: ignore[attr-defined] - (what the byref()s point to)
        return run
