"""A function for the GPU: its fusion plan as a list of kernel launches and cuBLAS products, the kernels in one
NVPTX module (or, for the host emulation, in one CPU module: ``emulated.py`` runs it).

The plan is the CPU's (``codegen/llvm/table.py`` through ``fusion.py``), with every float32 and float64 matrix
product a ``Gemm`` step: on the GPU, a cuBLAS call; in the emulation, NumPy's product of the same strided
operands. The GPU column of the rule matrix (``codegen/ptx/table.py``) says what lowers how; a function with
control flow, a host call or a collective is ``Unsupported`` here and runs on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from srcjax.codegen.llvm import engine
from srcjax.codegen.llvm.control import has_control
from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.nodes import collapse, instantiate
from srcjax.codegen.llvm.plan import Gemm, Plan, Unsupported
from srcjax.codegen.llvm.table import plan_straight_line
from srcjax.codegen.ptx import target
from srcjax.codegen.ptx.kernels import Kernel, KernelEmitter
from srcjax.transpiler.ir import Function
from srcjax.transpiler.simplify import without_calls

GEMM_DTYPES = {np.dtype(np.float32), np.dtype(np.float64)}


@dataclass
class Program:
    """``steps`` in order: kernels (``Kernel``) and products (``Gemm``); ``scratch`` the buffers of partial
    results the launcher allocates per call; ``module`` the kernels' LLVM module (NVPTX or host)."""

    fn: Function
    plan: Plan
    name: str
    steps: list
    scratch: list[Buffer]
    module: object
    device: bool
    _ptx: dict[str, str] = field(default_factory=dict)

    def ptx(self, arch: str = target.DEFAULT_ARCH) -> str:
        """The kernels' PTX for compute capability ``arch``."""
        if arch not in self._ptx:
            assert self.device, "the host emulation's module has no PTX"
            self._ptx[arch] = target.compile_ptx(self.module, arch)[0]
        return self._ptx[arch]

    @property
    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel) and s.kind != "fill"]

    def describe(self) -> str:
        lines = []
        for step in self.steps:
            if isinstance(step, Gemm):
                lines.append(f"cublas gemm {step.batch}x[{step.m},{step.k}]@[{step.k},{step.n}] {step.target.dtype}")
            elif step.kind == "fill":
                lines.append(f"fill {step.fills[0][0].kind}")
            else:
                lines.append(f"{step.kind} kernel {step.name} grid={step.grid} block={step.block}")
        return "\n".join(lines)


def plan_for_gpu(fn: Function) -> Plan:
    """The fusion plan of ``fn`` with every float product through cuBLAS; ``Unsupported`` where the GPU backend
    does not compile ``fn`` (control flow, host calls, collectives: they run on the CPU)."""
    fn = without_calls(fn)
    if has_control(fn):
        raise Unsupported("control flow, run-time slices, stacks, collectives or host calls: the GPU backend "
                          "compiles straight-line functions of kernels and products")
    return plan_straight_line(fn, GEMM_DTYPES)


def build(fn: Function, device: bool = True, name: str | None = None) -> Program:
    """``fn``'s kernels and products, for the GPU (``device``) or the host emulation."""
    plan = plan_for_gpu(fn)
    name = name or engine.unique_name("srcjax_gpu_" + "".join(c if c.isalnum() else "_" for c in fn.name))
    module = target.new_module(name) if device else engine.new_module(name)
    steps: list = []
    scratch: list[Buffer] = []
    with engine.assume_fma():  # (the GPU fuses multiply-adds; the emulation computes what it computes)
        for i, step in enumerate(plan.steps):
            if isinstance(step, Gemm):
                steps.append(step)
                continue
            body = collapse(instantiate(plan, step))
            emitter = KernelEmitter(module, body, f"{name}_k{i}", device, scratch_index=len(scratch))
            steps.extend(emitter.emit())
            if emitter.scratch is not None:
                scratch.append(emitter.scratch)
    return Program(fn, plan, name, steps, scratch, module, device)
