"""Running a function's GPU program: its PTX loaded on the device, then per call the kernels launched and the
products handed to cuBLAS, in order on the device's stream, over buffers from the caching allocator.

Inputs and results are ``driver.DeviceBuffer``s; a call returns as soon as its work is queued. Constants are
uploaded once. Temporaries and partial results are taken from the allocator when a step first needs them and
given back after the last step that reads them (in stream order, so the next call's steps may reuse them).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.plan import Gemm
from srcjax.codegen.ptx import program as programs
from srcjax.codegen.ptx import target
from srcjax.codegen.ptx.kernels import Kernel
from srcjax.transpiler.ir import Function

# the newest compute capability llvmlite's NVPTX target and the PTX ISA we emit know; newer devices JIT it
_NEWEST_ARCH = (9, 0)


def arch_for(capability: tuple[int, int]) -> str:
    major, minor = min(tuple(capability), _NEWEST_ARCH)
    return f"sm_{major}{minor}"


class GpuExecutable:
    """``fn`` compiled for ``device`` (a ``driver.Device``)."""

    def __init__(self, fn: Function, device: Any):
        self.fn, self.device = fn, device
        self.program = programs.build(fn, device=device.emits_ptx)
        plan = self.program.plan
        self.arch = arch_for(device.capability)
        self.module = device.load(self.program, self.arch) if self.program.kernels else None
        self.consts = {id(buf): device.upload(np.ascontiguousarray(data, dtype=buf.dtype)) for buf, data in plan.consts}
        self.result_types = [(r.aval.shape, r.aval.dtype) for r in fn.results]
        self.param_dtypes = [p.aval.dtype for p in fn.params]
        # per kernel: its function, and argument slots reused every call (``void**`` to u64 values)
        self._launches: list[tuple[ctypes.c_void_p, Any, Any]] = []
        for step in self.program.steps:
            if isinstance(step, Kernel) and step.kind != "fill":
                values = (ctypes.c_uint64 * max(len(step.buffers), 1))()
                params = (ctypes.c_void_p * max(len(step.buffers), 1))(
                    *[ctypes.addressof(values) + 8 * i for i in range(len(step.buffers))])
                self._launches.append((self.module.function(step.name), values, params))
            else:
                self._launches.append((None, None, None))
        self._last_use = self._lifetimes()

    def _lifetimes(self) -> dict[int, int]:
        """Temporary or scratch buffer id -> the index of the last step that uses it."""
        last: dict[int, int] = {}
        for i, step in enumerate(self.program.steps):
            for buf in self._step_buffers(step):
                if buf.kind in ("temp", "scratch"):
                    last[id(buf)] = i
        return last

    def _step_buffers(self, step: Any) -> list[Buffer]:
        if isinstance(step, Gemm):
            plan = self.program.plan
            return [plan.buffers[id(step.lhs.base)], plan.buffers[id(step.rhs.base)], step.target]
        return [*step.buffers, *[b for b, _ in step.fills]]

    def __call__(self, inputs: list[Any], precision: Any = None) -> list[Any]:
        """Queue the call on ``inputs`` (device buffers, one per parameter); returns the result buffers."""
        device, plan = self.device, self.program.plan
        device.make_current()
        allocate = device.allocator.allocate
        memory: dict[int, Any] = dict(self.consts)
        for buf, value in zip(plan.inputs, inputs):
            memory[id(buf)] = value
        outputs = [allocate(buf.size * buf.dtype.itemsize) for buf in plan.outputs]
        for buf, value in zip(plan.outputs, outputs):
            memory[id(buf)] = value
        for i, step in enumerate(self.program.steps):
            for buf in self._step_buffers(step):
                if id(buf) not in memory:
                    memory[id(buf)] = allocate(buf.size * buf.dtype.itemsize)
            if isinstance(step, Gemm):
                self._gemm(step, memory, precision)
            else:
                for buf, value in step.fills:
                    device.fill(memory[id(buf)], value, buf.size, buf.dtype)
                function, values, params = self._launches[i]
                if function is not None:
                    for k, buf in enumerate(step.buffers):
                        values[k] = memory[id(buf)].pointer
                    device.launch(function, step.grid, step.block, values, params)
            for buf in self._step_buffers(step):  # (back to the allocator: stream order keeps later users after)
                if self._last_use.get(id(buf)) == i:
                    del memory[id(buf)]
        return outputs

    def _gemm(self, step: Gemm, memory: dict[int, Any], precision: Any) -> None:
        plan, size = self.program.plan, step.target.dtype.itemsize
        lhs = memory[id(plan.buffers[id(step.lhs.base)])].pointer + step.lhs.offset * size
        rhs = memory[id(plan.buffers[id(step.rhs.base)])].pointer + step.rhs.offset * size
        self.device.gemm(step, lhs, rhs, memory[id(step.target)].pointer, precision)


def assemble_all(fn: Function) -> dict[str, bytes]:
    """Every kernel of ``fn`` assembled by ptxas for each of ``target.ARCHES`` (what CI checks)."""
    prog = programs.build(fn, device=True)
    return {arch: target.assemble(prog.ptx(arch), arch) for arch in target.ARCHES} if prog.kernels else {}
