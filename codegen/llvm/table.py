"""The CPU lowering table: for each primitive, one row that says whether and how native code computes it.

A row gives the primitive's *kind* (how it lowers), the planner step that plans it (straight-line kinds),
what it accepts (an op it does not accept runs as a host call, for the row's reason), the combination it
performs (reductions, scans, scatters, windows) and its cost per element (what fusion weighs before
computing a value twice). Elementwise rows come from the LLVM rules of ``rules.py``, one entry per
primitive. The planner (``fusion.py``), the control-flow emitter (``control.py``) and the CPU column of the
rule matrix (tests/codegen/test_cpu_matrix.py) read this table; nothing else decides what lowers.
A primitive without a row has no native lowering: it runs as a host call (its NumPy implementation, called
from inside the native code: ``host.py``), and the rule matrix requires it to have a ``HOST`` row that says why.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

import numpy as np

from srcjax.codegen.llvm import indexed, products
from srcjax.codegen.llvm.fusion import (
    EXPENSIVE, Planner, plan_elementwise, plan_identity, plan_multi_result, plan_reduction, plan_view,
)
from srcjax.codegen.llvm.plan import SUPPORTED_DTYPES, Plan
from srcjax.codegen.llvm.rules import ELEMENTWISE, Rule
from srcjax.transpiler.ir import Function, Op
from srcjax.transpiler.types import TensorType


class Kind(enum.Enum):
    ELEMENTWISE = "fused elementwise"  # an expression, computed where it is used
    VIEW = "view"  # new strides over a buffer, or a new index map of an expression
    REDUCTION = "reduction"  # a reduce nest (arg-reductions: two; cumulative scans: a running value)
    PRODUCT = "product"  # BLAS, or a loop nest
    INDEXED = "indexed"  # gathers, scatters, small windows, concatenation and padding
    CONTROL = "control"  # branches between straight-line segments (control.py)
    BETWEEN = "between segments"  # slices at run-time starts and stacks, emitted between segments (control.py)
    INLINED = "inlined"  # a custom-derivative call: its function is compiled in its place
    COLLECTIVE = "collective"  # replicas meet at barriers in shared memory (replicas.py, from control.py)
    HOST = "host call"  # the primitive's NumPy implementation, called from the native code


PLANNED = frozenset({Kind.ELEMENTWISE, Kind.VIEW, Kind.REDUCTION, Kind.PRODUCT, Kind.INDEXED})


@dataclass(frozen=True)
class Row:
    kind: Kind
    plan: Callable[[Planner, Op, "Row"], None] | None = None  # the planner step (planned kinds)
    rule: Rule | None = None  # elementwise: the LLVM rule (rules.py)
    combine: str | None = None  # the combination (reductions, scans, scatters, windows)
    cost: int = 1  # work per element against an add's
    accepts: Callable[[Op], bool] | None = None  # the ops it lowers; the others run as host calls
    reason: str = ""  # why an op runs as a host call (HOST rows: every op; others: those not accepted)
    many_results: bool = False


# work per element of the elementwise primitives that cost more than an add: transcendental functions (values
# computed from them are shared, never computed twice), then divisions and roots
_COSTS = {
    **{name: EXPENSIVE for name in (
        "exp exp2 log log1p expm1 tanh logistic sin cos erf tan asin acos atan atan2 sinh cosh asinh acosh "
        "atanh cbrt erfc erf_inv lgamma digamma pow nextafter").split()},
    **{name: 4 for name in ("div", "rem", "sqrt", "rsqrt")},
}

_LAPACK = "LAPACK through NumPy (no native kernel would beat it)"
_COMPLEX = "complex numbers are not in the nests' dtypes"


def _host(reason: str) -> Row:
    return Row(Kind.HOST, reason=reason)


def _bitcast_keeps_width(op: Op) -> bool:
    return op.operands[0].aval.dtype.itemsize == op.results[0].aval.dtype.itemsize


def _floats_of_one_dtype(op: Op) -> bool:
    dtype = op.results[0].aval.dtype
    return dtype.kind == "f" and all(v.aval.dtype == dtype for v in op.operands)


CPU: dict[str, Row] = {
    **{
        name: Row(Kind.ELEMENTWISE, plan_elementwise, rule=rule, cost=_COSTS.get(name, 1))
        for name, rule in ELEMENTWISE.items()
        if "." not in name  # ("threefry2x32.0": a result of a multi-result primitive)
    },
    "bitcast_convert_type": Row(
        Kind.ELEMENTWISE, plan_elementwise, rule=ELEMENTWISE["bitcast_convert_type"], accepts=_bitcast_keeps_width,
        reason="a bitcast between widths changes the shape: through NumPy",
    ),
    "iota": Row(Kind.ELEMENTWISE, plan_elementwise),
    "threefry2x32": Row(Kind.ELEMENTWISE, plan_multi_result, many_results=True),
    **{name: Row(Kind.VIEW, plan_view)
       for name in ("broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "slice", "rev")},
    "stop_gradient": Row(Kind.VIEW, plan_identity),  # (it only matters to transformations)
    "optimization_barrier": Row(Kind.VIEW, plan_identity),  # (it only matters to simplifications)
    "name": Row(Kind.VIEW, plan_identity),  # (it only matters to checkpoint policies)
    **{f"reduce_{name}": Row(Kind.REDUCTION, plan_reduction, combine=combine)
       for name, combine in [("sum", "add"), ("prod", "mul"), ("max", "max"), ("min", "min"), ("and", "and"),
                             ("or", "or"), ("xor", "xor")]},
    "argmax": Row(Kind.REDUCTION, indexed.plan_arg_reduction, combine="max"),
    "argmin": Row(Kind.REDUCTION, indexed.plan_arg_reduction, combine="min"),
    **{name: Row(Kind.REDUCTION, indexed.plan_scan, combine=combine)
       for name, combine in [("cumsum", "add"), ("cumprod", "mul"), ("cummax", "max"), ("cummin", "min"),
                             ("cumlogsumexp", "logaddexp")]},
    "dot_general": Row(Kind.PRODUCT, products.plan_dot, accepts=lambda op: op.results[0].aval.dtype.kind != "b",
                       reason="boolean matrix products run through NumPy"),
    "conv_general_dilated": Row(Kind.PRODUCT, products.plan_conv, accepts=_floats_of_one_dtype,
                                reason="integer and mixed-dtype convolutions run through NumPy"),
    "concatenate": Row(Kind.INDEXED, indexed.plan_assemble),
    "pad": Row(Kind.INDEXED, indexed.plan_assemble,
               accepts=lambda op: all(int(c) >= 0 for dims in op.params["padding_config"] for c in dims),
               reason="negative padding (cropping) runs through NumPy"),
    **{name: Row(Kind.INDEXED, indexed.plan_window, combine=combine, accepts=indexed.small_window,
                 reason=f"fused when the window has at most {indexed.WINDOW_MAX_ELEMENTS} elements and no padding; "
                        "larger windows through NumPy")
       for name, combine in [("reduce_window_max", "max"), ("reduce_window_min", "min"), ("reduce_window_sum", "add")]},
    "gather": Row(Kind.INDEXED, indexed.plan_gather),
    **{name: Row(Kind.INDEXED, indexed.plan_scatter, combine=combine)
       for name, combine in [("scatter", None), ("scatter_add", "add"), ("scatter_mul", "mul"),
                             ("scatter_min", "min"), ("scatter_max", "max")]},
    **{name: Row(Kind.CONTROL) for name in ("cond", "while", "for", "scan")},
    **{name: Row(Kind.BETWEEN) for name in ("dynamic_slice", "dynamic_update_slice", "stack_new", "stack_push",
                                            "stack_get", "stack_size", "stack_add")},
    **{name: Row(Kind.INLINED) for name in ("custom_jvp_call", "custom_vjp_call", "custom_vmap_call", "checkpoint")},
    **{name: _host(_LAPACK) for name in ("cholesky", "eig", "eigh", "lu", "qr", "svd", "triangular_solve")},
    "lu_pivots_to_permutation": _host("a short serial loop beside LAPACK's LU"),
    "fft": _host("NumPy's pocketfft"),
    "sort": _host("NumPy's sorts"),
    "top_k": _host("NumPy's partial sort"),
    **{name: _host(_COMPLEX) for name in ("complex", "conj", "real", "imag")},
    "polygamma": _host("rare; per order m, a recurrence and an asymptotic series in NumPy"),
    "debug_callback": _host("it calls the user's Python callback (srcjax.debug.print) with the operands' values"),
    "pure_callback": _host("it calls the user's Python function (srcjax.pure_callback) for its results"),
    "io_callback": _host("it calls the user's Python function (srcjax.experimental.io_callback) for its results"),
    "check": _host("a debug_check outside checkify, which does nothing (jit refuses a check checkify did not "
                   "functionalize)"),
    **{name: Row(Kind.COLLECTIVE)
       for name in ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "ppermute",
                    "all_to_all")},
    **{name: _host("MPI's collectives on the buffers (runtime/distributed.py)")
       for name in ("process_allreduce", "process_allgather", "process_reduce_scatter", "process_alltoall",
                    "process_permute")},
}


def kind(name: str) -> Kind:
    """How the primitive ``name`` lowers (``HOST`` when it has no row)."""
    row = CPU.get(name)
    return Kind.HOST if row is None else row.kind


def lowers(op: Op) -> bool:
    """Whether the straight-line planner compiles ``op`` into nests or BLAS calls; an op without regions that
    does not lower, and is not emitted between segments, runs as a host call (``control.ControlEmitter``)."""
    row = CPU.get(op.name)
    if row is None or row.kind not in PLANNED or op.regions:
        return False
    values = (*op.operands, *op.results)
    if any(isinstance(v.aval, TensorType) and v.aval.dtype not in SUPPORTED_DTYPES for v in values):
        return False
    if len(op.results) != 1 and not row.many_results:
        return False
    return row.accepts is None or row.accepts(op)


def expensive(name: str) -> bool:
    """Whether computing the primitive ``name`` costs as much as a transcendental function."""
    row = CPU.get(name)
    return row is not None and row.cost >= EXPENSIVE


def plan_straight_line(fn: Function, gemm_dtypes: set[np.dtype]) -> Plan:
    """The fusion plan of a function without control flow (``gemm_dtypes``: those BLAS multiplies)."""
    return Planner(fn, set(gemm_dtypes), CPU).run()
