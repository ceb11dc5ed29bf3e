"""The GPU column of the rule matrix: for each primitive, how the GPU backend computes it.

The GPU backend plans with the CPU's table (``codegen/llvm/table.py``): what the CPU fuses into nests becomes
kernels here (``kernels.py``), float products go to cuBLAS; control flow and what the CPU emits between
segments (run-time slices, stacks) are run by the GPU evaluator between compiled runs (``runtime/gpu_eval.py``);
collectives are NCCL's among a pmap's replicas (``runtime/gpu_pmap.py``); what the CPU calls the host for
runs on the host, with the reason below. tests/codegen/test_gpu_matrix.py prints the column
and checks that every primitive has a row.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from srcjax.codegen.llvm.table import CPU, Kind
from srcjax.codegen.llvm.rules import ELEMENTWISE


class How(enum.Enum):
    KERNEL = "kernel"
    LIBDEVICE = "kernel, libdevice"  # an elementwise kernel calling CUDA's libdevice (tan, asin, pow, ...)
    CUBLAS = "cuBLAS"
    VIEW = "view"  # index maps of the kernels that read it: no kernel of its own
    HOST_DRIVEN = "host-driven"  # the GPU evaluator runs it between compiled runs (runtime/gpu_eval.py)
    NCCL = "NCCL"  # a collective among the replicas of a pmap over GPUs (runtime/gpu_pmap.py)
    CPU = "CPU fallback"  # the function runs on the CPU


@dataclass(frozen=True)
class GpuRow:
    how: How
    note: str = ""


_LIBDEVICE = {"tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "cbrt", "nextafter",
              "pow"}
_CONTROL = ("driven from the host (runtime/gpu_eval.py): the regions' ops run as compiled runs of kernels, a "
            "loop's predicate is read back every trip; a loop body is not one kernel")
_BETWEEN = ("run between compiled runs (runtime/gpu_eval.py): as an eager operation, by its kernel where it has one, "
            "else by NumPy on a host copy")
_COLLECTIVE = ("pmap over GPUs (runtime/gpu_pmap.py): NCCL's all-reduce, all-gather and reduce-scatter; all_to_all "
               "and ppermute as the batching rule on gathered operands")


def _row(name: str) -> GpuRow:
    cpu = CPU[name]
    if cpu.kind is Kind.ELEMENTWISE:
        if name in _LIBDEVICE:
            return GpuRow(How.LIBDEVICE, f"__nv_{name}")
        return GpuRow(How.KERNEL, "elementwise, fused (grid-stride map)")
    if cpu.kind is Kind.VIEW:
        return GpuRow(How.VIEW)
    if cpu.kind is Kind.REDUCTION:
        if name.startswith("cum"):
            return GpuRow(How.KERNEL, "a scan per row, one thread each")
        return GpuRow(How.KERNEL, "block reduction (warp shuffles, shared memory, partials in a second pass) or "
                                  "one thread per result")
    if name == "dot_general":
        return GpuRow(How.CUBLAS, "float32 (TF32 by default) and float64; integer products: a reduction kernel; "
                                  "boolean: " + cpu.reason)
    if name == "conv_general_dilated":
        return GpuRow(How.CUBLAS, "patches gathered by the kernels' index maps, then a product; " + cpu.reason)
    if cpu.kind is Kind.INDEXED:
        if name.startswith("scatter"):
            return GpuRow(How.KERNEL, "atomics where updates combine; with repeated indices, scatter keeps any one")
        return GpuRow(How.KERNEL, cpu.reason or "fused into the kernels that read it")
    if cpu.kind is Kind.INLINED:
        return GpuRow(How.KERNEL, "its function is compiled in its place")
    if cpu.kind is Kind.CONTROL:
        return GpuRow(How.HOST_DRIVEN, _CONTROL)
    if cpu.kind is Kind.BETWEEN:
        return GpuRow(How.HOST_DRIVEN, _BETWEEN)
    if cpu.kind is Kind.COLLECTIVE:
        return GpuRow(How.NCCL, _COLLECTIVE)
    return GpuRow(How.CPU, cpu.reason)


GPU: dict[str, GpuRow] = {name: _row(name) for name in CPU}
assert all(name in ELEMENTWISE for name in _LIBDEVICE)
