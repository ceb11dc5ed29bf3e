"""Functions with control flow on the GPU: the IR interpreter over GPU arrays, straight-line runs compiled.

The GPU backend compiles straight-line functions (``codegen/ptx/program.py``). A function with ``cond``,
``while``, ``for`` or ``scan`` runs here: each block (the function's body, a loop's body, a branch) is cut
into runs of ops the GPU backend compiles, each run one ``GpuExecutable`` (made once, kept), and the ops
between them: control flow, run by its primitive's rule with its regions evaluated the same way (a loop body
of kernels runs on the GPU, trip after trip; a predicate is read back to the host, as XLA's loops do), and
the ops no kernel computes (run-time slices, stacks, sorts, ...), each as an eager operation (its kernels
where it has them, else NumPy on host copies, uploaded again where a later run needs them).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from srcjax.codegen.llvm.plan import Unsupported
from srcjax.codegen.llvm.table import Kind, kind, lowers
from srcjax.runtime.config import config
from srcjax.transpiler.interpret import Evaluator
from srcjax.transpiler.ir import Block, Function, Op, free_values, walk
from srcjax.transpiler.passes import has_effect
from srcjax.transpiler.primitives import control
from srcjax.transpiler.simplify import without_calls
from srcjax.transpiler.types import TensorType

AHEAD_MAX_WORK = 1 << 22  # elements a trip computes, under which a while loop runs a trip ahead


def _compiles(op: Op) -> bool:
    return not op.regions and lowers(op) and kind(op.name) not in (Kind.BETWEEN, Kind.COLLECTIVE, Kind.HOST,
                                                                   Kind.CONTROL, Kind.INLINED)


class SegmentedProgram:
    """A function's blocks cut into compiled runs; ``run(leaves)`` evaluates it on GPU arrays."""

    def __init__(self, fn: Function, device: Any):
        self.fn, self.device = without_calls(fn), device
        self._runs: dict[tuple[int, int], tuple[Any, list, list] | None] = {}
        self._plans: dict[int, list] = {}  # id(block) -> [op, or (start, stop) of a run]
        self._ahead: dict[int, bool] = {}  # id(while op) -> whether it runs a trip ahead
        self._trips: dict[int, tuple[Any, list] | None] = {}  # id(while op) -> its trip compiled (``trip``)

    def ahead(self, op: Op) -> bool:
        """Whether while loop ``op`` runs a trip ahead of its predicate (``_while_ahead``): where running a trip
        more changes nothing but the time (no effects, no collectives, NaN checks off), where that trip surely
        ends (no loop inside: the trip after the last may start one that runs for ever) and is short
        (the ops' results under ``AHEAD_MAX_WORK`` elements a trip: where the device's work is long, the wait for
        the predicate is a small part of it)."""
        key = id(op)
        if key not in self._ahead:
            ops = [inner for region in op.regions for inner in walk(region)]
            self._ahead[key] = (not has_effect(op) and not any(kind(o.name) is Kind.COLLECTIVE for o in ops)
                                and not any(o.prim in (control.while_p, control.for_p) for o in ops)
                                and sum(r.aval.size for o in ops for r in o.results
                                        if isinstance(r.aval, TensorType)) < AHEAD_MAX_WORK)
        return self._ahead[key] and not config.jax_debug_nans and not config.jax_debug_infs

    def trip(self, op: Op) -> tuple[Any, list] | None:
        """While loop ``op``'s body followed by its predicate as one ``GpuExecutable`` (parameters: the carried
        values, then the values both read from outside), with those outside values; None where some op of
        either does not compile."""
        key = id(op)
        if key not in self._trips:
            self._trips[key] = self._build_trip(op)
        return self._trips[key]

    def _build_trip(self, op: Op) -> tuple[Any, list] | None:
        from srcjax.codegen.ptx.executor import GpuExecutable
        from srcjax.transpiler.builder import Builder
        from srcjax.transpiler.passes import clean
        from srcjax.transpiler.primitives import core

        cond_block, body = op.regions
        if not all(_compiles(o) for block in op.regions for o in block.ops):
            return None
        free = list({id(v): v for block in (body, cond_block) for v in free_values(block)}.values())
        if not all(isinstance(v.aval, TensorType) for v in free):
            return None
        builder = Builder(f"{self.fn.name}_trip", None)
        carried = [builder.param(v.aval) for v in body.params]
        evaluator = Evaluator()
        for value in free:
            evaluator.env[id(value)] = builder.param(value.aval)
        with core.interpreting(builder):
            after = evaluator.run_block(body, carried)
            predicate = evaluator.run_block(cond_block, after)[0]
            fn = builder.finish([*after, predicate])
        try:
            return GpuExecutable(clean(fn), self.device.driver()), free
        except Unsupported:
            return None

    def plan(self, block: Block) -> list:
        key = id(block)
        if key not in self._plans:
            items: list = []
            start = None
            for i, op in enumerate(block.ops):
                if _compiles(op):
                    start = i if start is None else start
                    continue
                if start is not None:
                    items.append((start, i))
                    start = None
                items.append(op)
            if start is not None:
                items.append((start, len(block.ops)))
            self._plans[key] = items
        return self._plans[key]

    def executable(self, block: Block, start: int, stop: int) -> tuple[Any, list, list] | None:
        """The run ``block.ops[start:stop]`` compiled: (executable, its parameters, its results), or None where
        the GPU backend does not take it (its ops then run one by one)."""
        key = (id(block), start)
        if key not in self._runs:
            self._runs[key] = self._compile(block, start, stop)
        return self._runs[key]

    def _compile(self, block: Block, start: int, stop: int) -> tuple[Any, list, list] | None:
        from srcjax.codegen.ptx.executor import GpuExecutable

        ops = block.ops[start:stop]
        params = [v for v in free_values(Block([], ops, [])) if isinstance(v.aval, TensorType)]
        defined = {id(r) for op in ops for r in op.results}
        later: set[int] = {id(v) for v in block.results}
        for op in block.ops[stop:]:
            later.update(id(v) for v in op.operands)
            for region in op.regions:
                later.update(id(v) for v in free_values(region))
        results = [r for op in ops for r in op.results if id(r) in later and id(r) in defined]
        if not results:
            return None
        fn = Function(f"{self.fn.name}_run{start}", list(params), Block(list(params), list(ops), list(results)))
        try:
            return GpuExecutable(fn, self.device.driver()), params, results
        except Unsupported:
            return None

    def run(self, leaves: Sequence[Any], collectives: Any = None) -> list[Any]:
        """The results on GPU arrays ``leaves``; ``collectives(op, operands)`` computes the collectives (a pmap
        replica's: ``gpu_pmap.py``), giving None for an op it leaves to the evaluator."""
        from srcjax.runtime import gpu

        evaluator = _GpuEvaluator(self, collectives)
        for value, data in self.fn.consts:  # (constants: on the device once per call)
            evaluator.env[id(value)] = gpu.put(data, value.aval.weak_type, self.device)
        body = self.fn.body
        if not body.params:
            for param, leaf in zip(self.fn.params, leaves):
                evaluator.env[id(param)] = leaf
        return evaluator.run_block(body, list(leaves) if body.params else [])


class _GpuEvaluator(Evaluator):
    def __init__(self, program: SegmentedProgram, collectives: Any = None):
        super().__init__()
        self.program, self.collectives = program, collectives

    def _bind(self, op: Op, operands: list[Any]) -> list[Any]:
        if self.collectives is not None and kind(op.name) is Kind.COLLECTIVE:
            out = self.collectives(op, operands)
            if out is not None:
                return out
        return super()._bind(op, operands)

    def _run_control(self, op: Op, operands: list[Any]) -> list[Any]:
        if op.prim is control.while_p and self.program.ahead(op):
            return self._while_ahead(op, operands)
        return super()._run_control(op, operands)

    def _while_ahead(self, op: Op, operands: list[Any]) -> list[Any]:
        """A while loop one trip ahead: trip k+1 and its predicate are queued before the host waits for the copy
        of predicate k (that copy alone, not the work queued after it), so that the host's work of queuing a
        trip overlaps the device's. The loop's last trip runs once more, for nothing."""
        cond_block, body = op.regions
        carried = list(operands)
        predicate = self._predicate(self.run_block(cond_block, carried)[0])
        trip = self._trip(op)
        while True:
            try:
                if trip is not None:  # (the body and the next predicate: one compiled call)
                    *ahead, ahead_predicate = trip(carried)
                    ahead_predicate = self._predicate(ahead_predicate)
                else:
                    ahead = self.run_block(body, carried)
                    ahead_predicate = self._predicate(self.run_block(cond_block, ahead)[0])
            except Exception:
                if not predicate():  # (the trip should not have run: its failure does not count)
                    return carried
                raise
            if not predicate():
                return carried
            carried, predicate = ahead, ahead_predicate

    def _trip(self, op: Op) -> Any:
        """A while loop's trip as one call, ``trip(carried) -> [*carried, predicate]``: its body and then its
        predicate compiled together (one schedule, replayed as a graph), where every op of both compiles; else
        None. The values the loop reads from outside are put on the device once."""
        from srcjax.runtime import gpu

        built = self.program.trip(op)
        if built is None:
            return None
        executable, free = built
        device = self.program.device
        outside = [gpu._memory(self.read(v), v.aval.dtype, device) for v in free]
        dtypes, results = executable.param_dtypes, [*op.results, op.regions[0].results[0]]

        def trip(carried: list[Any]) -> list[Any]:
            inputs = [gpu._memory(x, dtype, device) for x, dtype in zip(carried, dtypes)] + outside
            outputs = executable(inputs, precision=gpu.config.jax_default_matmul_precision)
            return [gpu._array(device, memory, r.aval) for memory, r in zip(outputs, results)]

        return trip

    def _predicate(self, value: Any) -> Any:
        """A function giving ``value``'s truth: a GPU scalar's copy to the host is queued now."""
        from srcjax.runtime import gpu

        state = gpu.resident(value)
        if state is None or state.size_bytes() > 16:
            return lambda: bool(value)
        read = state.device.driver().read_later(state.memory, state.size_bytes())
        dtype = state.dtype
        return lambda: bool(np.frombuffer(read(), dtype)[0])

    def run_block(self, block: Block, args: Sequence[Any]) -> list[Any]:
        from srcjax.runtime import gpu

        if len(args) != len(block.params):
            raise ValueError(f"a block with {len(block.params)} parameters got {len(args)} arguments")
        for param, arg in zip(block.params, args):
            self.env[id(param)] = arg
        program, device = self.program, self.program.device
        for item in program.plan(block):
            if isinstance(item, Op):
                self.eval_op(item)
                continue
            start, stop = item
            compiled = program.executable(block, start, stop)
            if compiled is None:
                for op in block.ops[start:stop]:
                    self.eval_op(op)
                continue
            executable, params, results = compiled
            inputs = [gpu._memory(self.read(v), v.aval.dtype, device) for v in params]
            outputs = executable(inputs, precision=gpu.config.jax_default_matmul_precision)
            for value, memory in zip(results, outputs):
                self.env[id(value)] = gpu._array(device, memory, value.aval)
        return [self.read(v) for v in block.results]
