"""Runs a function of the IR by binding each op's primitive through the current interpreter.

Under the runtime's eager interpreter this computes the function; under a ``Builder`` it records the ops
again (inlining the function into the one being built, folding what is concrete). Control-flow ops run
through their primitive's ``run`` hook, or, under a ``Builder`` when a value they touch is symbolic, are
rebuilt region by region so they stay structured.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from srcjax.transpiler.builder import Builder
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, free_values
from srcjax.transpiler.primitives import control, core
from srcjax.transpiler.primitives.elementwise import convert_element_type_p
from srcjax.transpiler.primitives.indexing import slice_p
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p, concatenate_p, reshape_p
from srcjax.transpiler.types import TensorType


def concrete(value: Any, aval: TensorType) -> Any:
    """``value`` (a NumPy scalar or array) as the base interpreter's array of exactly type ``aval``."""
    base = core.base_interpreter()
    x = base.canonical(value.item() if aval.weak_type and aval.shape == () else np.asarray(value, aval.dtype))
    typ = getattr(x, "aval", None)
    if not isinstance(typ, TensorType):  # the plain NumPy interpreter: values are NumPy arrays
        return np.asarray(value, aval.dtype)
    if typ != aval:  # canonicalisation changed the dtype or the weak bit: convert back, exactly
        x = base.process(convert_element_type_p, [x], {"new_dtype": aval.dtype, "weak_type": aval.weak_type})
    return x


class _Rows:
    """``xs[i]`` for a scan's run: row ``i`` through the slice and reshape primitives (any runtime)."""

    def __init__(self, x: Any, aval: TensorType):
        self.x, self.aval = x, aval

    def __getitem__(self, i: int) -> Any:
        rest = self.aval.shape[1:]
        row = slice_p.bind(self.x, start_indices=(i, *(0 for _ in rest)), limit_indices=(i + 1, *rest), strides=None)
        return reshape_p.bind(row, new_sizes=rest, dimensions=None)


class Evaluator:
    """The environment of one evaluation: every value of the function bound to what it computed."""

    def __init__(self) -> None:
        self.env: dict[int, Any] = {}
        self._literals: dict[int, Any] = {}

    def read(self, v: Value) -> Any:
        if isinstance(v, Literal):
            if id(v) not in self._literals:
                self._literals[id(v)] = concrete(v.value, v.aval)
            return self._literals[id(v)]
        try:
            return self.env[id(v)]
        except KeyError:
            raise ValueError(f"{v!r} is used before it is defined (run the verifier)") from None

    def run_block(self, block: Block, args: Sequence[Any]) -> list[Any]:
        if len(args) != len(block.params):
            raise ValueError(f"a block with {len(block.params)} parameters got {len(args)} arguments")
        for param, arg in zip(block.params, args):
            self.env[id(param)] = arg
        for op in block.ops:
            self.eval_op(op)
        return [self.read(v) for v in block.results]

    def eval_op(self, op: Op) -> None:
        operands = [self.read(v) for v in op.operands]
        interpreter = core.current_interpreter()
        if isinstance(op.prim, control.ControlPrimitive):
            if isinstance(interpreter, Builder) and self._stays_structured(op, operands):
                outs = self._rebuild(interpreter, op, operands)
            else:
                outs = self._run_control(op, operands)
        elif isinstance(interpreter, Builder) and op.loc is not None:
            with interpreter.at(op.loc):
                outs = self._bind(op, operands)
        else:
            try:
                outs = self._bind(op, operands)
            except FloatingPointError as e:  # (jax_debug_nans: say which line of the user's made the NaN)
                if op.loc is not None and not getattr(e, "_srcjax_located", False):
                    e._srcjax_located = True
                    e.add_note(f"{op.loc.file}:{op.loc.line}: {op.loc.text.strip()}")
                raise
        if len(outs) != len(op.results):
            raise ValueError(f"'{op.name}' gave {len(outs)} results, the op has {len(op.results)}")
        for result, out in zip(op.results, outs):
            if isinstance(out, Value) and not isinstance(out, Literal) and out.name is None:
                out.name = result.name  # keep the source's names when inlining
            self.env[id(result)] = out

    def _bind(self, op: Op, operands: list[Any]) -> list[Any]:
        out = op.prim.bind(*operands, **op.params)
        return list(out) if op.prim.multiple_results else [out]

    def _run_control(self, op: Op, operands: list[Any]) -> list[Any]:
        if op.prim.run is None:
            raise NotImplementedError(f"no run rule for '{op.name}' ({op.prim.family})")
        if op.prim is control.scan_p:
            n = op.params["num_carry"]
            xs = [_Rows(x, v.aval) for x, v in zip(operands[n:], op.operands[n:])]
            return op.prim.run(op, [*operands[:n], *xs], self.run_block, stack=self._stacker(op))
        return op.prim.run(op, operands, self.run_block)

    def _stacker(self, op: Op):
        """Stacks a scan's per-step outputs along a new axis 0 with primitives; a zero-length scan gives an
        empty array of the result type."""
        result_types = iter(r.aval for r in op.results[op.params["num_carry"] :])

        def stack(column: list[Any]) -> Any:
            aval = next(result_types)
            if not column:
                zero = concrete(np.zeros((), aval.dtype), aval.update(shape=()))
                return broadcast_in_dim_p.bind(zero, shape=aval.shape, broadcast_dimensions=())
            rank = aval.ndim - 1
            rows = [
                broadcast_in_dim_p.bind(y, shape=(1, *aval.shape[1:]), broadcast_dimensions=tuple(range(1, rank + 1)))
                for y in column
            ]
            return concatenate_p.bind(*rows, dimension=0)

        return stack

    def _stays_structured(self, op: Op, operands: list[Any]) -> bool:
        """Whether a control op must be recorded as one (rather than run) while building: some operand is
        symbolic, or a value its regions use is (a cond on a concrete predicate just takes its branch)."""
        if any(isinstance(x, Value) for x in operands):
            return True
        if any(not isinstance(v.aval, TensorType) for v in (*op.operands, *op.results)):
            return True  # stacks only exist inside the compiled function
        if op.prim is control.cond_p:
            return False
        return any(isinstance(self.env.get(id(v)), Value) for region in op.regions for v in free_values(region))

    def _rebuild(self, builder: Builder, op: Op, operands: list[Any]) -> list[Value]:
        """Record ``op`` again in ``builder`` with its regions evaluated into new blocks."""
        regions = []
        for region in op.regions:
            with builder.region([p.aval for p in region.params], [p.name for p in region.params]) as block:
                block.results = [builder.operand(r) for r in self.run_block(region, block.params)]
            regions.append(block)
        results = [Value(r.aval, r.name) for r in op.results]
        new_op = Op(
            op.prim,
            [builder.operand(x) for x in operands],
            dict(op.params),
            results,
            regions,
            loc=op.loc or builder.loc,
        )
        builder.emit(new_op)
        return results


def eval_function(fn: Function, *args: Any, consts: Sequence[Any] | None = None) -> list[Any]:
    """Run ``fn`` on ``args`` through the current interpreter; returns the list of its results.

    ``consts`` replaces the function's constant data (one array per ``fn.consts`` entry) when given.
    """
    if len(args) != len(fn.params):
        raise TypeError(f"@{fn.name} takes {len(fn.params)} arguments, got {len(args)}")
    for i, (param, arg) in enumerate(zip(fn.params, args)):
        typ = getattr(arg, "aval", None)
        if isinstance(typ, TensorType) and typ.strong() != param.aval.strong():
            raise TypeError(f"@{fn.name} argument {i} has type {typ}, the parameter is {param.aval}")
    data = [d for _, d in fn.consts] if consts is None else list(consts)
    if len(data) != len(fn.consts):
        raise TypeError(f"@{fn.name} has {len(fn.consts)} constants, got {len(data)} arrays")
    evaluator = Evaluator()
    for (value, _), array in zip(fn.consts, data):
        evaluator.env[id(value)] = concrete(np.asarray(array), value.aval)
    if not fn.body.params:
        for param, arg in zip(fn.params, args):
            evaluator.env[id(param)] = arg
    return evaluator.run_block(fn.body, args if fn.body.params else [])
