"""Running a function's GPU program: its PTX loaded on the device, then per call the kernels launched and the
products handed to cuBLAS, in order on the device's stream, over buffers from the caching allocator.

Inputs and results are ``driver.DeviceBuffer``s; a call returns as soon as its work is queued. Constants are
uploaded once. Temporaries and partial results are taken from the allocator when a step first needs them and
given back after the last step that reads them (in stream order, so the next call's steps may reuse them).
From its second call, a schedule of ``GRAPH_MIN_STEPS`` steps or more is replayed as a CUDA graph captured once
over buffers of its own (``_Graph``): a few driver calls per call instead of one or more per step.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.plan import Gemm, Unsupported
from srcjax.codegen.ptx import program as programs
from srcjax.codegen.ptx import target
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
        if device.emits_ptx and any(isinstance(step, Gemm) for step in self.program.steps):
            from srcjax.codegen.ptx.cublas import library_path

            if library_path() is None:  # (its products then run on the CPU, not a failed call)
                raise Unsupported("matrix products need cuBLAS on the GPU: pip install nvidia-cublas (or set "
                                  "SRCJAX_CUBLAS to the path of libcublas.so)")
        self.arch = arch_for(device.capability)
        self.module = device.load(self.program, self.arch) if self.program.kernels else None
        self.consts = {id(buf): device.upload(np.ascontiguousarray(data, dtype=buf.dtype)) for buf, data in plan.consts}
        self.result_types = [(r.aval.shape, r.aval.dtype) for r in fn.results]
        self.param_dtypes = [p.aval.dtype for p in fn.params]
        self._schedule_for: dict[Any, list] = {}  # precision -> the schedule (products depend on it)
        self._graphs: dict[Any, Any] = {}  # precision -> its captured graph, or False
        self.calls = 0
        self._lock = threading.Lock()
        self._aliases: dict[int, int] | None = None
        # every buffer gets a slot: inputs, outputs, constants, then temporaries and scratch as steps first use them
        self._slots: dict[int, int] = {}
        for buf in [*plan.inputs, *plan.outputs, *[b for b, _ in plan.consts]]:
            self._slot(buf)
        self._output_sizes = [(self._slots[id(b)], b.size * b.dtype.itemsize) for b in plan.outputs]
        self._const_slots = [(self._slots[id(b)], self.consts[id(b)]) for b, _ in plan.consts]

    def aliases(self) -> dict[int, int]:
        """Input index -> output index where a call may write that output over that input's buffer (a donated
        argument's): the CPU's rule (``aliases.find_aliases``) on this program's plan, whose map kernels, like
        the CPU's nests, read an element before they write it."""
        if self._aliases is None:
            from srcjax.codegen.llvm.aliases import find_aliases

            self._aliases = find_aliases(self.program.plan, self.fn)
        return self._aliases

    def _slot(self, buf: Buffer) -> int:
        return self._slots.setdefault(id(buf), len(self._slots))

    def _step_buffers(self, step: Any) -> list[Buffer]:
        if isinstance(step, Gemm):
            plan = self.program.plan
            return [plan.buffers[id(step.lhs.base)], plan.buffers[id(step.rhs.base)], step.target]
        return [*step.buffers, *[b for b, _ in step.fills]]

    def _schedule(self, precision: Any) -> list:
        """Per step: (slots to allocate with their sizes, the action, its arguments, slots to free afterwards)."""
        device, plan = self.device, self.program.plan
        last: dict[int, int] = {}
        for i, step in enumerate(self.program.steps):
            for buf in self._step_buffers(step):
                if buf.kind in ("temp", "scratch"):
                    last[id(buf)] = i
        seen: set[int] = set()
        schedule = []
        for i, step in enumerate(self.program.steps):
            allocs = []
            for buf in self._step_buffers(step):
                if buf.kind in ("temp", "scratch") and id(buf) not in seen:
                    seen.add(id(buf))
                    allocs.append((self._slot(buf), buf.size * buf.dtype.itemsize))
            frees = tuple(self._slots[id(b)] for b in {id(b): b for b in self._step_buffers(step)}.values()
                          if last.get(id(b)) == i)
            if isinstance(step, Gemm):
                size = step.target.dtype.itemsize
                action = (_GEMM, device.gemm_runner(step, precision), self._slot(plan.buffers[id(step.lhs.base)]),
                          step.lhs.offset * size, self._slot(plan.buffers[id(step.rhs.base)]), step.rhs.offset * size,
                          self._slot(step.target))
            elif step.kind == "fill":
                action = (_FILL, [(self._slot(b), v, b.size, b.dtype) for b, v in step.fills])
            else:
                values = (ctypes.c_uint64 * max(len(step.buffers), 1))()
                params = (ctypes.c_void_p * max(len(step.buffers), 1))(
                    *[ctypes.addressof(values) + 8 * k for k in range(len(step.buffers))])
                fills = [(self._slot(b), v, b.size, b.dtype) for b, v in step.fills]
                action = (_LAUNCH, self.module.function(step.name), values, params, step.grid, step.block,
                          tuple(self._slot(b) for b in step.buffers), fills)
            schedule.append((tuple(allocs), action, frees))
        return schedule

    def __call__(self, inputs: list[Any], precision: Any = None, into: list[Any] | None = None) -> list[Any]:
        """Queue the call on ``inputs`` (device buffers, one per parameter); returns the result buffers. ``into``
        may give, per result, a buffer to write it over instead of a new one (a donated input's, where
        ``aliases`` allows it). Calls from several threads queue one at a time (a graph's buffers are its own)."""
        with self._lock:
            return self._call(inputs, precision, into)

    def _call(self, inputs: list[Any], precision: Any, into: list[Any] | None) -> list[Any]:
        device = self.device
        device.make_current()
        schedule = self._schedule_for.get(precision)
        if schedule is None:
            schedule = self._schedule_for[precision] = self._schedule(precision)
        self.calls += 1
        if self.calls >= GRAPH_AFTER_CALLS and len(schedule) >= GRAPH_MIN_STEPS:
            graph = self._graphs.get(precision)
            if graph is None:
                graph = self._graphs[precision] = self._capture(schedule)
            if graph is not False:
                return graph.run(inputs, into)
        allocate = device.allocator.allocate
        memory: list[Any] = [None] * len(self._slots)
        memory[: len(inputs)] = inputs
        outputs = []
        for k, (slot, nbytes) in enumerate(self._output_sizes):
            memory[slot] = out = allocate(nbytes) if into is None or into[k] is None else into[k]
            outputs.append(out)
        for slot, value in self._const_slots:
            memory[slot] = value
        # (a temporary goes back to the allocator after the last step that uses it: stream order keeps the steps
        # queued later, which may be given the same memory, after it)
        self._run(schedule, memory, allocate)
        return outputs

    def _run(self, schedule: list, memory: list[Any], allocate: Any) -> None:
        device = self.device
        launch = device.launch
        for allocs, action, frees in schedule:
            for slot, nbytes in allocs:
                if allocate is not None:
                    memory[slot] = allocate(nbytes)
            kind = action[0]
            if kind is _LAUNCH:
                _, function, values, params, grid, block, slots, fills = action
                for slot, value, count, dtype in fills:
                    device.fill(memory[slot], value, count, dtype)
                for k, slot in enumerate(slots):
                    values[k] = memory[slot].pointer
                launch(function, grid, block, values, params)
            elif kind is _GEMM:
                _, run, lhs, lhs_offset, rhs, rhs_offset, out = action
                run(memory[lhs].pointer + lhs_offset, memory[rhs].pointer + rhs_offset, memory[out].pointer)
            else:
                for slot, value, count, dtype in action[1]:
                    device.fill(memory[slot], value, count, dtype)
            if allocate is not None:
                for slot in frees:
                    memory[slot] = None

    def _capture(self, schedule: list) -> "_Graph | bool":
        """The schedule recorded once as a graph over buffers of its own (False where it cannot be: fills
        copy from the host, which a capture may not hold)."""
        if any(action[0] is _FILL or (action[0] is _LAUNCH and action[-1]) for _, action, _ in schedule):
            return False
        device, plan = self.device, self.program.plan
        allocate = device.allocator.allocate
        memory: list[Any] = [None] * len(self._slots)
        for buf in plan.inputs:  # (a call's inputs are copied into these)
            memory[self._slots[id(buf)]] = allocate(buf.size * buf.dtype.itemsize)
        for slot, nbytes in self._output_sizes:
            memory[slot] = allocate(nbytes)
        for slot, value in self._const_slots:
            memory[slot] = value
        for allocs, _, _ in schedule:  # (every temporary at once: the graph keeps them)
            for slot, nbytes in allocs:
                memory[slot] = allocate(nbytes)
        try:
            with device.capture() as captured:
                self._run(schedule, memory, None)
        except device.CaptureError:
            return False
        sizes = [buf.size * buf.dtype.itemsize for buf in plan.inputs]
        return _Graph(device, captured.graph, memory, sizes, self._output_sizes)


class _Graph:
    """A schedule captured once: a call copies its inputs into the graph's input buffers (unless it passes the
    very buffers of the call before, which are immutable), launches the graph and copies the results out into
    fresh buffers: a few driver calls in place of one per step (cuBLAS's host-side work included)."""

    def __init__(self, device: Any, graph: Any, memory: list[Any], input_sizes: list[int],
                 output_sizes: list[tuple[int, int]]):
        self.device, self.graph, self.memory = device, graph, memory
        self.input_sizes, self.output_sizes = input_sizes, output_sizes
        self.last_inputs: list[Any] = [None] * len(input_sizes)

    def run(self, inputs: list[Any], into: list[Any] | None = None) -> list[Any]:
        device, memory, last = self.device, self.memory, self.last_inputs
        for i, (value, nbytes) in enumerate(zip(inputs, self.input_sizes)):
            if value is not last[i]:
                device.copy(memory[i], value, nbytes)
                last[i] = value  # (held: its memory cannot be given to another array meanwhile)
        device.launch_graph(self.graph)
        outputs = []
        for k, (slot, nbytes) in enumerate(self.output_sizes):
            out = device.allocator.allocate(nbytes) if into is None or into[k] is None else into[k]
            device.copy(out, memory[slot], nbytes)
            if into is not None:  # (a donated input written over is no longer what the graph holds a copy of)
                last[:] = [None if held is out else held for held in last]
            outputs.append(out)
        return outputs


GRAPH_MIN_STEPS = 4  # steps from which a schedule is replayed as a graph ...
GRAPH_AFTER_CALLS = 2  # ... from its second call on (a function called once is not worth capturing)


_LAUNCH, _GEMM, _FILL = "launch", "gemm", "fill"


def assemble_all(fn: Function) -> dict[str, bytes]:
    """Every kernel of ``fn`` assembled by ptxas for each of ``target.ARCHES`` (what CI checks)."""
    prog = programs.build(fn, device=True)
    return {arch: target.assemble(prog.ptx(arch), arch) for arch in target.ARCHES} if prog.kernels else {}
