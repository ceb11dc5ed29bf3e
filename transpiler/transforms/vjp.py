"""Reverse mode: ``vjp_function(fn)`` is an IR function computing ``fn`` and the transposed derivative.

The forward sweep re-emits the primal program. For each op that depends on a differentiated input, the
primitive's JVP rule runs under a splitting interpreter: binds on primal values go to the program (the
derivative's factors, computed once), binds on tangents are recorded as the op's *linear snippet*. The
backward sweep walks the records in reverse and transposes each snippet with the primitives' transpose
rules, accumulating cotangents. This is ``linearize`` + ``transpose``, one op at a time.

Ops that hold regions (control flow, custom-derivative calls) have reverse-mode hooks instead, registered as
their transpose rules (``primitives/control_vjp.py``, ``custom.py``): a hook re-emits its op in the forward
sweep through this engine and returns a record whose ``backward`` emits the transposed op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import Evaluator, eval_function
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, free_values
from srcjax.transpiler.passes import clean
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.ad import (
    UndefinedPrimal, Zero, add_tangents, instantiate, is_differentiable, jvp_of, tangent_aval, zeros,
)
from srcjax.transpiler.primitives.engine import Record


class Linearizer(core.Interpreter):
    """Sends binds that touch a tangent to the current linear snippet, and the rest to the program."""

    def __init__(self, builder: Builder):
        self.builder = builder
        self.linear = _IdSet()  # tangent values, by identity (held, so their ids are never reused)
        self.snippet: list[Op] = []

    def canonical(self, x: Any) -> Any:
        return self.builder.canonical(x) if hasattr(self.builder, "canonical") else x

    def process(self, prim: core.Primitive, operands: Sequence[Any], params: dict[str, Any]) -> Any:
        if not any(isinstance(x, Value) and id(x) in self.linear for x in operands):
            return self.builder.process(prim, operands, params)
        values = [self.builder.operand(x) for x in operands]
        out = prim.abstract_eval(*(v.aval for v in values), **params)
        results = [Value(t) for t in out] if prim.multiple_results else [Value(out)]
        self.linear.add_values(results)
        self.snippet.append(Op(prim, values, dict(params), results, loc=self.builder.loc))
        return results if prim.multiple_results else results[0]


class _IdSet(dict):
    """A set of values by identity that keeps them alive (a freed value's id may be reused)."""

    def add_values(self, values: Any) -> None:
        for v in values:
            self[id(v)] = v


@dataclass
class PrimRecord:
    """A primitive's linear snippet: its JVP's binds on tangents, transposed in the backward sweep."""

    op: Op
    placeholders: list[Value | None]  # per operand: the tangent placeholder of an active operand
    snippet: list[Op]
    tangents: list[Any]  # per result: its tangent in the snippet (a linear value), or None

    def refs(self) -> list[Value]:
        linear = {id(p) for p in self.placeholders if p is not None} | {id(r) for o in self.snippet for r in o.results}
        return [v for o in self.snippet for v in o.operands if id(v) not in linear and not isinstance(v, Literal)]

    def targets(self, engine: VJP) -> list[Value]:
        return [v for v, p in zip(self.op.operands, self.placeholders) if p is not None]

    def backward(self, engine: VJP, ct: dict[int, Any], resolve: Callable[[Value], Any]) -> None:
        lin: dict[int, Any] = {}
        for r, t in zip(self.op.results, self.tangents):
            c = ct.pop(id(r), None)
            if t is not None and c is not None:
                lin[id(t)] = add_tangents(lin.get(id(t), Zero(t.aval)), c)
        if not lin:
            return
        linear = {id(p) for p in self.placeholders if p is not None} | {id(r) for o in self.snippet for r in o.results}
        for op in reversed(self.snippet):
            cts = [lin.pop(id(r), None) for r in op.results]
            if all(c is None for c in cts):
                continue
            state = op.prim.rule_state("transpose")
            if state == core.ZERO:
                continue
            if state != core.RULE or "transpose" in op.prim.op_rules:
                raise op.prim.rule_error("transpose", f"it appears in the JVP of '{self.op.prim.name}'")
            operands = [UndefinedPrimal(v.aval) if id(v) in linear else resolve(v) for v in op.operands]
            if op.prim.multiple_results:
                c_in: Any = [c if c is not None else Zero(r.aval) for c, r in zip(cts, op.results)]
            else:
                c_in = cts[0]
            out = op.prim.transpose_rule(c_in, *operands, **op.params)
            for v, c in zip(op.operands, out):
                if c is not None and id(v) in linear and not isinstance(c, Zero):
                    lin[id(v)] = add_tangents(lin.get(id(v), Zero(v.aval)), c)
        for v, p in zip(self.op.operands, self.placeholders):
            if p is not None and id(p) in lin:
                ct[id(v)] = _named(add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), lin[id(p)]), v)


class VJP:
    """The engine (``primitives/engine.py``'s ``VJPEngine``)."""

    def __init__(self, fn: Function, wrt: Sequence[bool]):
        self.fn = fn
        self.source = fn.source
        self.builder = Builder(f"vjp_{fn.name}", fn.source)
        self.linearizer = Linearizer(self.builder)
        self.primal: dict[int, Any] = {}
        self.active: set[int] = set()
        self.wrt = list(wrt)
        self._old_values = _all_values(fn)

    # -- the protocol op rules use ----------------------------------------------------------------------------------
    def read(self, v: Value) -> Any:
        return v if isinstance(v, Literal) else self.primal[id(v)]

    def write(self, old: Value, new: Any, keep_name: bool = True) -> None:
        """``old`` is now ``new``; a new value without a name takes ``old``'s (with ``keep_name``)."""
        if keep_name and isinstance(new, Value) and new.name is None and old.name is not None:
            new.name = old.name
        self.primal[id(old)] = new

    def is_active(self, v: Value) -> bool:
        return id(v) in self.active

    def activate(self, v: Value) -> None:
        self.active.add(id(v))

    def old_value(self, key: int) -> Value:
        return self._old_values[key]

    def rebuild(self, op: Op, operands: Sequence[Any]) -> list[Value]:
        evaluator = Evaluator()
        for v in {id(v): v for region in op.regions for v in free_values(region)}.values():
            evaluator.env[id(v)] = self.read(v)  # (values from outside the op that its regions use)
        with core.interpreting(self.builder):  # (so that control flow in the regions is recorded, not run)
            return evaluator._rebuild(self.builder, op, list(operands))

    def trace(self, name: str, avals: Sequence[Any], body: Callable[[list[Value]], list[Any]]) -> Function:
        traced = Builder(name, self.source)
        params = [traced.param(a) for a in avals]
        with core.interpreting(traced):
            return clean(traced.finish(body(params)))

    def vjp(self, fn: Function, wrt: Sequence[bool], linear: bool = False) -> Function:
        return vjp_function(fn, wrt, linear=linear)

    def evaluate(self, fn: Function, *args: Any) -> list[Any]:
        return eval_function(fn, *args)

    def local_refs(self, records: list[Record], new_block: Block) -> tuple[list[Value], list[Value]]:
        """Split what records reference into values defined in ``new_block`` and values from outside it."""
        defined = {id(p) for p in new_block.params} | {id(r) for o in new_block.ops for r in o.results}
        local, outer, seen = [], [], set()
        for record in records:
            for v in record.refs():
                if id(v) in seen:
                    continue
                seen.add(id(v))
                (local if id(v) in defined else outer).append(v)
        return local, outer

    # -- forward sweep -------------------------------------------------------------------------------------------
    def forward_block(self, block: Block) -> list[Record]:
        records = []
        for op in block.ops:
            with self.builder.at(op.loc):
                record = self.forward_op(op)
            if record is not None:
                records.append(record)
        return records

    def forward_op(self, op: Op) -> Record | None:
        prim = op.prim
        if "transpose" in prim.op_rules:  # a reverse-mode hook
            if prim.transpose_rule is None:
                raise prim.rule_error("transpose")
            return prim.transpose_rule(self, op)
        primals = [self.read(v) for v in op.operands]
        active = [self.is_active(v) for v in op.operands]
        state = prim.rule_state("jvp")
        if not any(active) or not any(is_differentiable(r.aval) for r in op.results) or state == core.ZERO:
            outs = prim.bind(*primals, **op.params)
            for r, o in zip(op.results, outs if prim.multiple_results else [outs]):
                self.write(r, o)
            return None
        if state != core.RULE:
            raise prim.rule_error("jvp")
        placeholders = [Value(tangent_aval(v.aval), f"{v.name}_dot" if v.name else None) if a else None
                        for v, a in zip(op.operands, active)]
        tangents = [p if p is not None else Zero(tangent_aval(v.aval)) for p, v in zip(placeholders, op.operands)]
        self.linearizer.snippet = snippet = []
        self.linearizer.linear.add_values(p for p in placeholders if p is not None)
        out, t_out = jvp_of(prim)(primals, tangents, **op.params)
        outs = out if prim.multiple_results else [out]
        t_outs = t_out if prim.multiple_results else [t_out]
        record_tangents = []
        for r, o, t in zip(op.results, outs, t_outs):
            self.write(r, o)
            linear = isinstance(t, Value) and id(t) in self.linearizer.linear and is_differentiable(r.aval)
            record_tangents.append(t if linear else None)
            if linear:
                self.active.add(id(r))
        return PrimRecord(op, placeholders, snippet, record_tangents)

    # -- backward sweep ------------------------------------------------------------------------------------------
    def backward_block(self, records: list[Record], ct: dict[int, Any], resolve: Callable[[Value], Any]) -> None:
        for record in reversed(records):
            with self.builder.at(record.op.loc):
                record.backward(self, ct, resolve)


def _named(cotangent: Any, v: Value) -> Any:
    """Cotangents read as ``x_bar`` in the printed IR and the generated Python."""
    if isinstance(cotangent, Value) and cotangent.name is None and v.name and not v.name.startswith("$"):
        cotangent.name = f"{v.name}_bar"
    return cotangent


def _all_values(fn: Function) -> dict[int, Value]:
    """Every value of a function by id, in definition order (params first)."""
    out: dict[int, Value] = {}

    def visit(block: Block) -> None:
        for p in block.params:
            out[id(p)] = p
        for op in block.ops:
            for region in op.regions:
                visit(region)
            for r in op.results:
                out[id(r)] = r

    for v, _ in fn.consts:
        out[id(v)] = v
    visit(fn.body)
    return out


def vjp_function(fn: Function, wrt: Sequence[bool] | None = None, seed_ones: bool = False,
                 seeded: int | None = None, linear: bool = False) -> Function:
    """``(*primals, *cotangents) -> (*outs, *param_cotangents)`` for the params in ``wrt`` (default all).

    With ``seed_ones`` there are no cotangent params: each output's cotangent is 1 (``grad``). Only the first
    ``seeded`` outputs (default all) get a cotangent; the others (``has_aux``'s auxiliary data) are outputs only,
    still differentiable by a transformation of the result. With ``linear``, ``fn`` must be linear in the params
    of ``wrt`` (its transpose is wanted: ``linear_transpose``, a ``custom_jvp`` rule in its tangents), else
    ``check_linear`` raises.
    """
    wrt = list(wrt) if wrt is not None else [True] * len(fn.params)
    t, records, outs = _forward_sweep(fn, wrt)
    if linear:
        check_linear(t, records)
    builder = t.builder
    main = fn.results[:seeded]
    if seed_ones:
        seeds = [np.ones((), r.aval.dtype) for r in main]
    else:
        seeds = [builder.param(tangent_aval(r.aval), f"{r.name}_bar" if r.name else "out_bar") for r in main]
    ct: dict[int, Any] = {}
    forward_ops = {id(op) for op in builder.function.body.ops}
    with core.interpreting(builder):
        for r, s in zip(main, seeds):
            if t.is_active(r) and not isinstance(r, Literal):
                seed = s if isinstance(s, Value) else add_tangents(zeros(tangent_aval(r.aval)), s)  # ones, as r
                ct[id(r)] = add_tangents(ct.get(id(r), Zero(tangent_aval(r.aval))), seed)
        t.backward_block(records, ct, lambda v: v)
        grads = [instantiate(ct.get(id(p), Zero(tangent_aval(p.aval)))) for p, on in zip(fn.params, wrt)
                 if on and is_differentiable(p.aval)]
        result = clean(builder.finish(outs + grads))
    # the generated Python labels its two halves
    ops = result.body.ops
    backward = next((op for op in ops if id(op) not in forward_ops), None)
    if ops and backward is not None:
        result.sections = {id(ops[0]): "forward", id(backward): "backward"}
    return result


def check_linear(t: VJP, records: list[Record]) -> None:
    """Raise unless the forward sweep ``t`` is linear in its differentiated params: an op's derivative (the
    factors its linear snippet reads) must not depend on them, as ``x * x``'s (``x``) or ``sin``'s (``cos x``)
    does, and none may have a declared zero derivative and an inexact result (``round``, ``stop_gradient``), nor
    hold regions and read a predicate or index computed from them; JAX's transposition fails on such an op. (The
    linear parts inside regions are not looked into.)"""
    dependent = {id(t.primal[id(p)]) for p in t.fn.params if t.is_active(p)}
    _depend(t.builder.function.body.ops, dependent)
    for record in records:
        if isinstance(record, PrimRecord):
            if any(id(v) in dependent for v in record.refs()):
                _not_linear(record.op)
        elif any(id(t.read(v)) in dependent and not is_differentiable(v.aval) for v in record.op.operands):
            _not_linear(record.op)  # (a branch index or predicate computed from the inputs)


def _depend(ops: list[Op], dependent: set[int]) -> None:
    """Add to ``dependent`` (ids) the results of ``ops`` that depend on it. A region's params depend on the op's
    operands position by position where they match (a loop's carries, which its body's results feed back), else
    on any of them; an op's result on the regions' results at its position where they match, else on anything
    the op reads."""
    for op in ops:
        if not op.regions:
            if any(id(v) in dependent for v in op.operands):
                dependent.update(id(r) for r in op.results)
                if op.prim.rule_state("jvp") == core.ZERO and any(is_differentiable(r.aval) for r in op.results):
                    _not_linear(op)
            continue
        operands = [id(v) in dependent for v in op.operands]
        changed = True
        while changed:
            changed = False
            for region in op.regions:
                positional = len(region.params) == len(op.operands)
                dependent.update(id(p) for i, p in enumerate(region.params)
                                 if (operands[i] if positional else any(operands)))
                _depend(region.ops, dependent)
                if len(region.results) == len(region.params):  # (a carry the body makes depend)
                    for p, r in zip(region.params, region.results):
                        if id(r) in dependent and id(p) not in dependent:
                            dependent.add(id(p))
                            changed = True
        matching = [region for region in op.regions if len(region.results) == len(op.results)]
        reads = any(operands) or any(id(v) in dependent for region in op.regions for v in free_values(region))
        for i, r in enumerate(op.results):
            if any(id(region.results[i]) in dependent for region in matching) or (not matching and reads):
                dependent.add(id(r))


def _not_linear(op: Op) -> None:
    where = f" at {op.loc.file}:{op.loc.line}" if op.loc is not None else ""
    raise NotImplementedError(  # (JAX: "Transpose rule (for reverse-mode differentiation) for ...")
        f"cannot transpose '{op.prim.name}'{where}: it is not linear in a value that depends on the inputs of a "
        "function that must be linear in them (the function given to linear_transpose, or a custom_jvp rule in "
        "its tangents, under reverse mode)")


def _forward_sweep(fn: Function, wrt: Sequence[bool]) -> tuple[VJP, list[Record], list[Any]]:
    t = VJP(fn, wrt)
    builder = t.builder
    params = [builder.param(p.aval, p.name) for p in fn.params]
    for p, new, on in zip(fn.params, params, wrt):
        t.write(p, new)
        if on and is_differentiable(p.aval):
            t.active.add(id(p))
    with core.interpreting(t.linearizer):
        for value, data in fn.consts:
            t.write(value, builder.constant(value, data))
        records = t.forward_block(fn.body)
        outs = [t.read(r) for r in fn.results]
    return t, records, outs


def forward_function(fn: Function, wrt: Sequence[bool]) -> Function:
    """``fn`` as reverse mode's forward sweep computes it: a custom-derivative call that depends on ``wrt`` gives
    the outputs of its rule (a ``custom_vjp``'s ``fwd``, a ``custom_jvp``'s JVP rule), which a transformation of
    the result differentiates as ordinary code, as it does JAX's ``vjp`` outputs."""
    t, _, outs = _forward_sweep(fn, list(wrt))
    with core.interpreting(t.builder):
        return clean(t.builder.finish(outs))


__all__ = ["check_linear", "forward_function", "vjp_function", "VJP"]
