"""Forward mode: ``jvp_function(fn)`` is an IR function computing ``fn`` and its directional derivative.

The engine walks the IR with two maps, old value -> new primal value and old value -> tangent, and asks
each primitive's JVP rule for its tangent. Tangents known to be zero stay symbolic (``Zero``) and cost
nothing; integer and bool values never have tangents. A primitive whose derivative is declared zero gets a
zero tangent; one whose JVP is unsupported or missing is an error. Ops that hold regions have op rules
(``primitives/control_jvp.py``, ``custom.py``), which transform their regions through this engine.
"""

from __future__ import annotations

from typing import Any, Sequence

from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import Evaluator
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, free_values
from srcjax.transpiler.passes import clean
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.ad import Zero, has_tangent, instantiate, is_differentiable, jvp_of, tangent_aval


class JVP:
    """The engine (``primitives/engine.py``'s ``JVPEngine``): old values -> new primal values and tangents."""

    def __init__(self, builder: Builder):
        self.builder = builder
        self.primal: dict[int, Any] = {}
        self.tangents: dict[int, Any] = {}

    def read(self, v: Value) -> Any:
        if isinstance(v, Literal):
            return v
        return self.primal[id(v)]

    def tangent(self, v: Value) -> Any:
        t = self.tangents.get(id(v))
        return Zero(tangent_aval(v.aval)) if t is None else t

    def write(self, v: Value, value: Any, tangent: Any = None) -> None:
        self.primal[id(v)] = value
        if tangent is not None and not isinstance(tangent, Zero) and has_tangent(v.aval):
            self.tangents[id(v)] = tangent
        else:
            self.tangents.pop(id(v), None)

    def block(self, block: Block) -> None:
        for op in block.ops:
            with self.builder.at(op.loc):
                self.op(op)

    def rebuild(self, op: Op, operands: Sequence[Any]) -> list[Value]:
        evaluator = Evaluator()
        for v in {id(v): v for region in op.regions for v in free_values(region)}.values():
            evaluator.env[id(v)] = self.read(v)  # (values from outside the op that its regions use)
        with core.interpreting(self.builder):  # (so that control flow in the regions is recorded, not run)
            return evaluator._rebuild(self.builder, op, list(operands))

    def op(self, op: Op) -> None:
        prim = op.prim
        if "jvp" in prim.op_rules:
            if prim.jvp_rule is None:
                raise prim.rule_error("jvp")
            prim.jvp_rule(self, op)
            return
        primals = [self.read(v) for v in op.operands]
        tangents = [self.tangent(v) for v in op.operands]
        differentiable_out = any(is_differentiable(r.aval) for r in op.results)
        state = prim.rule_state("jvp")
        if all(isinstance(t, Zero) for t in tangents) or not differentiable_out or state == core.ZERO:
            outs = prim.bind(*primals, **op.params)
            for r, o in zip(op.results, outs if prim.multiple_results else [outs]):
                self.write(r, o)
            return
        if state != core.RULE:
            raise prim.rule_error("jvp")
        out, tangent = jvp_of(prim)(primals, tangents, **op.params)
        if prim.multiple_results:
            for r, o, t in zip(op.results, out, tangent):
                self.write(r, o, t)
        else:
            self.write(op.results[0], out, tangent)


def jvp_function(fn: Function, wrt: Sequence[bool] | None = None) -> Function:
    """``(*primals, *tangents) -> (*outs, *out_tangents)``; tangent params only for differentiable params in
    ``wrt`` (default: all), tangent results for every result (zeros where they do not depend on inputs)."""
    wrt = list(wrt) if wrt is not None else [True] * len(fn.params)
    builder = Builder(f"jvp_{fn.name}", fn.source)
    engine = JVP(builder)
    primals = [builder.param(p.aval, p.name) for p in fn.params]
    for p, new, on in zip(fn.params, primals, wrt):
        if on and is_differentiable(p.aval):
            engine.write(p, new, builder.param(tangent_aval(p.aval), f"{p.name}_dot" if p.name else None))
        else:
            engine.write(p, new)
    with core.interpreting(builder):
        for value, data in fn.consts:
            engine.write(value, builder.constant(value, data))
        engine.block(fn.body)
        outs = [engine.read(r) for r in fn.results]
        out_tangents = [instantiate(engine.tangent(r)) for r in fn.results]
        return clean(builder.finish(outs + out_tangents))


__all__ = ["jvp_function", "JVP"]
