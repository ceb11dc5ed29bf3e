"""Compiling an IR function to a native ``Executable``: plan it (``table.py``'s rows, through ``fusion.py`` for
straight-line code or ``control.py`` for control flow), emit its entry function (``entry.py``) into one LLVM
module, load the machine code, and call it with NumPy arrays.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm import blas, engine, interrupt, kernels
from srcjax.codegen.llvm.aliases import find_aliases
from srcjax.codegen.llvm.control import ControlEmitter, has_control, has_loops
from srcjax.codegen.llvm.entry import EntryEmitter, emit_tuple_entry
from srcjax.codegen.llvm.host import HostCalls
from srcjax.codegen.llvm.plan import Plan, Unsupported, describe
from srcjax.codegen.llvm.table import plan_straight_line
from srcjax.transpiler.ir import Function, walk
from srcjax.transpiler.simplify import without_calls

_contiguous, _empty = np.ascontiguousarray, np.empty


def plan_function(fn: Function, gemm_dtypes: set[np.dtype] | None = None) -> Plan:
    """The plan of ``fn``; raises ``Unsupported`` for anything the backend does not compile. A function with
    control flow gets a plan of its buffers only (its segments are planned when it is emitted; here once on a
    scratch module, to find what is unsupported)."""
    gemm_dtypes = set() if gemm_dtypes is None else gemm_dtypes
    fn = without_calls(fn)  # (custom-derivative calls and checkpoints: their regions, in place)
    if has_control(fn):
        return ControlEmitter(engine.new_module("probe"), fn, "probe", gemm_dtypes).emit()
    return plan_straight_line(fn, gemm_dtypes)


def emit_entry(module: ir.Module, plan: Plan, name: str, python_entry: bool = True, split_blas: bool = True
               ) -> list[str]:
    """Emit ``plan``'s entry ``name`` (and, ``python_entry``, its tuple entry) into ``module``; the names of the
    entries emitted. ``split_blas``: products may be split across the thread pool."""
    if plan.control:  # segments joined by branches (codegen/llvm/control.py)
        ControlEmitter(module, plan.fn, name, blas.gemm_dtypes()).emit()
        entry = module.globals[name]
    else:
        entry = EntryEmitter(module, plan, name, split_blas).emit()
    if python_entry and not plan.replicated and emit_tuple_entry(module, entry, plan, name):
        return [name, name + ".py"]
    return [name]


@dataclass
class Executable:
    """A compiled function: call it with NumPy arrays or scalars (converted to the parameters' dtypes and
    made contiguous where they are not); it returns a tuple of fresh arrays, one per result."""

    fn: Function
    plan: Plan
    llvm_ir: str
    name: str
    address: int
    py_address: int | None
    code: engine.Code  # holds the machine code at those addresses, as long as this Executable lives

    def __post_init__(self) -> None:
        self.param_dtypes = tuple(p.aval.dtype for p in self.fn.params)
        self.result_shapes = tuple(r.aval.shape for r in self.fn.results)
        self.result_dtypes = tuple(r.aval.dtype for r in self.fn.results)
        self.consts = tuple(data for _, data in self.plan.consts)
        work = sum(p.aval.size for p in self.fn.params) + sum(r.aval.size for r in self.fn.results)
        self.work = work  # elements read and written: what the runtime weighs against the cost of dispatch
        self._aliases: dict[int, int] | None = None
        if self.py_address is not None and not self.plan.replicated:
            # small calls keep the GIL (cheaper to enter); large ones release it like any ctypes call
            factory = ctypes.PYFUNCTYPE if work < 1 << 15 else ctypes.CFUNCTYPE
            self._call = factory(None, ctypes.py_object)(self.py_address)
        else:
            self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.address)
            self._call = self._call_with_pointers
        products = any(op.name in ("dot_general", "conv_general_dilated") for op in walk(self.fn.body))
        if (products and blas.find_gemm()) or (work >= kernels.PARALLEL_MIN_WORK and kernels.num_threads() > 1):
            # (OpenBLAS's threads, and the pool's, only on the cores other processes leave free)
            self._call = _fitting_blas_threads(self._call)
        if self.plan.host_ops:  # ops computed by NumPy from inside the native code (codegen/llvm/host.py)
            self._host = HostCalls(self.plan.host_ops)
            slot = self.code.global_address(self.name + ".host")
            if not slot:
                raise RuntimeError(f"the JIT has no host-call slot for {self.name}")
            ctypes.c_void_p.from_address(slot).value = self._host.address
            self._call = self._host.checked(self._call)
        if (self.plan.control and has_loops(self.fn)) or self.plan.replicated:
            # loops stop early on Ctrl-C, and so do barriers: such results are never returned
            self._call = interrupt.guard(self._call)

    def _call_with_pointers(self, arrays: tuple) -> None:
        pointers = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        self._entry(pointers)

    def run_replica(self, args: list, outs: tuple[np.ndarray, ...], replica: np.ndarray) -> None:
        """One replica of a function with collectives (``plan.replicated``): ``replica`` is the i64 pair (the
        address of the replicas' context, this replica's index). Runs without the GIL, for the other replicas'
        threads to run meanwhile."""
        self._call(tuple(map(_contiguous, args, self.param_dtypes)) + self.consts + outs + (replica,))

    def __call__(self, *args: Any) -> tuple[np.ndarray, ...]:
        # (``map`` of builtins over prebuilt tuples: this is the whole Python-side cost of a call)
        outs = tuple(map(_empty, self.result_shapes, self.result_dtypes))
        self.run(args, outs)
        return outs

    def run(self, args: list, outs: tuple[np.ndarray, ...]) -> None:
        """Compute into ``outs`` (C-contiguous arrays of the result types, allocated by the caller; one may be
        an input's buffer, where ``aliases`` allows it)."""
        self._call(tuple(map(_contiguous, args, self.param_dtypes)) + self.consts + outs)

    def aliases(self) -> dict[int, int]:
        """Input index -> output index: where the entry may write that output over that input's buffer (the
        donated buffer of an argument). Only where it is plainly safe: a straight-line plan whose one map nest
        writing the output reads the input only at the element it writes (each iteration computes all its
        values before it stores any), and no later step reads the input."""
        if self._aliases is None:
            self._aliases = find_aliases(self.plan, self.fn)
        return self._aliases

    def __repr__(self) -> str:
        types = lambda values: ", ".join(str(v.aval) for v in values)  # noqa: E731
        host = f", {len(self.plan.host_ops)} host calls" if self.plan.host_ops else ""
        return f"Executable({self.name}: ({types(self.fn.params)}) -> ({types(self.fn.results)}){host})"

    def assembly(self) -> str:
        return engine.emit_assembly(self.llvm_ir)

    @property
    def steps(self) -> str:
        return describe(self.plan)


def _fitting_blas_threads(call: Callable) -> Callable:
    fit = blas.fit_threads_to_load

    def fitted(arrays):
        fit()
        call(arrays)

    return fitted


def compile_function(fn: Function, plan: Plan | None = None, name: str | None = None,
                     load: Callable[[Callable[[], tuple[ir.Module, list[str]]]], engine.CompiledModule] | None = None
                     ) -> Executable | None:
    """Compile ``fn`` natively, or None when it uses something the backend does not lower yet. The disk cache
    passes the ``plan`` it keyed, the entry's symbol ``name`` and ``load(build)``, which returns the machine
    code of its entry and calls ``build() -> (module, entry names)`` only when there is none."""
    if plan is None:
        try:
            plan = plan_function(fn, blas.gemm_dtypes())
        except Unsupported:
            return None
    name = name or engine.unique_name(f"srcjax_{_safe(fn.name)}")

    def build() -> tuple[ir.Module, list[str]]:
        module = engine.new_module(name)
        return module, emit_entry(module, plan, name)

    compiled = load(build) if load is not None else engine.compile_module(*build())
    return Executable(fn, plan, compiled.llvm_ir, name, compiled.addresses[name], compiled.addresses.get(name + ".py"),
                      compiled.code)


def unsupported_reason(fn: Function) -> str | None:
    """Why ``fn`` is not compiled natively (None if it is)."""
    try:
        plan_function(fn, blas.gemm_dtypes())
    except Unsupported as e:
        return str(e)
    return None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fn"


