"""Reverse mode: ``vjp_function(fn)`` is an IR function computing ``fn`` and the transposed derivative.

The forward sweep re-emits the primal program. For each op that depends on a differentiated input, the
primitive's JVP rule runs under a splitting interpreter: binds on primal values go to the program (the
derivative's factors, computed once), binds on tangents are recorded as the op's *linear snippet*. The
backward sweep walks the records in reverse and transposes each snippet with the primitives' transpose
rules, accumulating cotangents. This is ``linearize`` + ``transpose``, one op at a time.

Control flow: a ``cond``'s branches keep their records; the values a branch's snippets need are exported
as extra results of the forward ``cond``, and the backward ``cond`` transposes the taken branch. A loop
saves what its body's snippets need at every iteration — into a preallocated buffer when the trip count
is known, onto a growing stack when it is not (``while``) — and the backward loop runs the iterations in
reverse, reading them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import Evaluator, eval_function
from srcjax.transpiler.ir import Block, Function, Literal, Op, SourceLoc, Value
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.ad import (
    UndefinedPrimal, Zero, add_tangents, instantiate, is_differentiable, jvp_of, tangent_aval, zeros,
)
from srcjax.transpiler.primitives.control import cond_p, for_p, stack_get_p, stack_new_p, stack_push_p, while_p
from srcjax.transpiler.primitives.custom import custom_jvp_call_p, custom_vjp_call_p
from srcjax.transpiler.primitives.elementwise import add_p, sub_p
from srcjax.transpiler.primitives.indexing import dynamic_slice_p, dynamic_update_slice_p
from srcjax.transpiler.primitives.shape import reshape_p
from srcjax.transpiler.passes import clean
from srcjax.transpiler.transforms.jvp import TransformError
from srcjax.transpiler.types import StackType, TensorType


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


# -- records of the forward sweep ----------------------------------------------------------------------------
@dataclass
class PrimRecord:
    op: Op
    placeholders: list[Value | None]  # per operand: the tangent placeholder of an active operand
    snippet: list[Op]
    tangents: list[Any]  # per result: its tangent in the snippet (a linear value), or None

    def refs(self) -> list[Value]:
        linear = {id(p) for p in self.placeholders if p is not None} | {id(r) for o in self.snippet for r in o.results}
        return [v for o in self.snippet for v in o.operands if id(v) not in linear and not isinstance(v, Literal)]


@dataclass
class CustomVJPRecord:
    """A custom-derivative call: ``backward(residuals, output cotangents)`` gives the operands' cotangents (a
    ``custom_vjp``'s ``bwd``, or the transpose of a ``custom_jvp``'s rule)."""

    op: Op
    residuals: list[Any]  # the flat residuals the user's forward function returned
    active: list[bool]
    backward: Any = None

    def refs(self) -> list[Value]:
        return [v for v in self.residuals if isinstance(v, Value) and not isinstance(v, Literal)]


@dataclass
class CondRecord:
    op: Op
    pred: Any
    branches: list[list[Any]]  # the records of each branch
    renames: list[dict[int, Value]]  # per branch: branch-local value -> the forward cond's export result
    defined: list[set[int]]  # per branch: old values defined inside it
    outer_refs: list[Value] = field(default_factory=list)

    def refs(self) -> list[Value]:
        return ([self.pred] if isinstance(self.pred, Value) else []) + [
            v for rename in self.renames for v in rename.values()] + self.outer_refs


@dataclass
class LoopRecord:
    op: Op
    trip: Any  # the trip count (a value or an int)
    records: list[Any]
    saved: dict[int, tuple[Value, Any]]  # body-local value -> (its buffer or stack after the loop, its type)
    stacked: bool
    defined: set[int]  # old values defined in the body (params included)
    active_carried: list[bool]
    outer_refs: list[Value] = field(default_factory=list)

    def refs(self) -> list[Value]:
        return ([self.trip] if isinstance(self.trip, Value) else []) + [b for b, _ in self.saved.values()] + \
            self.outer_refs


class VJP:
    def __init__(self, fn: Function, wrt: Sequence[bool]):
        self.fn = fn
        self.builder = Builder(f"vjp_{fn.name}", fn.source)
        self.linearizer = Linearizer(self.builder)
        self.primal: dict[int, Any] = {}
        self.active: set[int] = set()
        self.wrt = list(wrt)

    # -- helpers ---------------------------------------------------------------------------------------------
    def read(self, v: Value) -> Any:
        return v if isinstance(v, Literal) else self.primal[id(v)]

    def write(self, old: Value, new: Any) -> None:
        if isinstance(new, Value) and new.name is None and old.name is not None:
            new.name = old.name
        self.primal[id(old)] = new

    def is_active(self, v: Value) -> bool:
        return id(v) in self.active

    # -- forward sweep ---------------------------------------------------------------------------------------
    def forward_block(self, block: Block) -> list[Any]:
        records = []
        for op in block.ops:
            with self.builder.at(op.loc):
                record = self.forward_op(op)
            if record is not None:
                records.append(record)
        return records

    def forward_op(self, op: Op) -> Any:
        if op.prim is cond_p:
            return self.forward_cond(op)
        if op.prim in (for_p, while_p):
            return self.forward_loop(op)
        if op.prim in (custom_jvp_call_p, custom_vjp_call_p):
            return self.forward_custom(op)
        if op.prim.name.startswith("stack_"):
            if any(self.is_active(v) for v in op.operands):
                raise TransformError("reverse mode through the reverse-mode derivative of a while loop is not "
                                     "supported; take the outer derivative in forward mode (jacfwd(grad(f)))")
            return self._bind_structured(op)
        if op.prim.name == "scan":
            raise TransformError("reverse mode through 'scan' ops is not supported yet")
        primals = [self.read(v) for v in op.operands]
        active = [self.is_active(v) for v in op.operands]
        if not any(active) or not any(is_differentiable(r.aval) for r in op.results):
            return self._bind_inactive(op, primals)
        rule = jvp_of(op.prim)
        if rule is None:
            if "jvp" in op.prim.no_rule:
                return self._bind_inactive(op, primals)
            raise TransformError(f"no JVP rule for '{op.prim.name}' ({op.prim.family}), needed by grad")
        placeholders = [Value(tangent_aval(v.aval), f"{v.name}_dot" if v.name else None) if a else None
                        for v, a in zip(op.operands, active)]
        tangents = [p if p is not None else Zero(tangent_aval(v.aval)) for p, v in zip(placeholders, op.operands)]
        self.linearizer.snippet = snippet = []
        self.linearizer.linear.add_values(p for p in placeholders if p is not None)
        out, t_out = rule(primals, tangents, **op.params)
        outs = out if op.prim.multiple_results else [out]
        t_outs = t_out if op.prim.multiple_results else [t_out]
        record_tangents = []
        for r, o, t in zip(op.results, outs, t_outs):
            self.write(r, o)
            linear = isinstance(t, Value) and id(t) in self.linearizer.linear and is_differentiable(r.aval)
            record_tangents.append(t if linear else None)
            if linear:
                self.active.add(id(r))
        return PrimRecord(op, placeholders, snippet, record_tangents)

    def forward_custom(self, op: Op) -> Any:
        primals = [self.read(v) for v in op.operands]
        active = [self.is_active(v) for v in op.operands]
        if not any(active):  # the call itself, kept (a transformation of this program still finds its rules)
            for r, o in zip(op.results, Evaluator()._rebuild(self.builder, op, primals)):
                self.write(r, o)
            return None
        if op.prim is custom_jvp_call_p:
            return self.forward_custom_jvp(op, primals, active)
        with core.interpreting(self.builder):
            outs, residuals = op.params["rule"].forward(primals)
        for r, o in zip(op.results, outs):
            self.write(r, o)
            if is_differentiable(r.aval):
                self.active.add(id(r))
        return CustomVJPRecord(op, residuals, active, op.params["rule"].backward)

    def forward_custom_jvp(self, op: Op, primals: list[Any], active: list[bool]) -> CustomVJPRecord:
        """Reverse mode through a ``custom_jvp`` call: its rule, traced into a function of (primals, tangents) (its
        Python control flow included, as the front end reads it), gives the outputs; the backward pass is that
        function's transpose in the tangents (its VJP there, the rule being linear in them)."""
        rule = op.params["rule"]
        avals = [v.aval for v in op.operands]
        tangent_avals = [tangent_aval(a) for a in avals]
        traced = Builder(f"{op.name}_rule", self.fn.source)
        params = [traced.param(a) for a in avals + tangent_avals]
        with core.interpreting(traced):
            outs, touts = rule.jvp_rule(params[: len(avals)], params[len(avals):])
            jvp = clean(traced.finish(list(outs) + [instantiate(t) for t in touts]))
        n_out = len(op.results)
        wrt = [False] * len(avals) + [a and is_differentiable(v.aval) for v, a in zip(op.operands, active)]
        transposed = vjp_function(jvp, wrt)
        with core.interpreting(self.builder):
            results = eval_function(jvp, *primals, *[zeros(t) for t in tangent_avals])[:n_out]
        for r, o in zip(op.results, results):
            self.write(r, o)
            if is_differentiable(r.aval):
                self.active.add(id(r))

        def backward(residuals: list[Any], cts_out: list[Any]) -> list[Any]:
            zero_tangents = [zeros(t) for t in tangent_avals]  # (the rule is linear in them: any value will do)
            zero_outs = [zeros(tangent_aval(r.aval)) for r in jvp.results[:n_out]]
            grads = iter(eval_function(transposed, *residuals, *zero_tangents, *zero_outs, *cts_out)[len(jvp.results):])
            return [next(grads) if on else None for on in wrt[len(avals):]]

        return CustomVJPRecord(op, list(primals), active, backward)

    def _bind_structured(self, op: Op) -> None:
        """Re-emit an op that cannot be bound (a stack op), with new operands."""
        results = [Value(r.aval, r.name) for r in op.results]
        self.builder.emit(Op(op.prim, [self.builder.operand(self.read(v)) for v in op.operands], dict(op.params),
                             results, loc=op.loc))
        for r, new in zip(op.results, results):
            self.write(r, new)
        return None

    def _bind_inactive(self, op: Op, primals: list[Any]) -> None:
        outs = op.prim.bind(*primals, **op.params)
        for r, o in zip(op.results, outs if op.prim.multiple_results else [outs]):
            self.write(r, o)
        return None

    def _local_refs(self, records: list[Any], new_block: Block) -> tuple[list[Value], list[Value]]:
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

    def forward_cond(self, op: Op) -> CondRecord | None:
        builder = self.builder
        pred = self.read(op.operands[0])
        blocks, branch_records, yields = [], [], []
        for region in op.regions:
            with builder.region() as block:
                records = self.forward_block(region)
                yields.append([self.read(r) for r in region.results])
            blocks.append(block)
            branch_records.append(records)
        for i, r in enumerate(op.results):
            if any(self.is_active(region.results[i]) for region in op.regions) and is_differentiable(r.aval):
                self.active.add(id(r))
        locals_, outers = zip(*(self._local_refs(recs, blk) for recs, blk in zip(branch_records, blocks)))
        exports = [(b, v) for b, values in enumerate(locals_) for v in values]
        renames: list[dict[int, Value]] = [{} for _ in op.regions]
        export_results = []
        for b, v in exports:
            result = Value(v.aval, v.name)
            renames[b][id(v)] = result
            export_results.append(result)
        with core.interpreting(builder):
            for b, (block, ys) in enumerate(zip(blocks, yields)):
                with builder.reopen(block):
                    extra = [v if eb == b else self._placeholder(v.aval) for eb, v in exports]
                    block.results = [builder.operand(y) for y in ys + extra]
        results = [Value(r.aval, r.name) for r in op.results]
        builder.emit(Op(cond_p, [builder.operand(pred)], {}, results + export_results, regions=blocks, loc=op.loc))
        for r, new in zip(op.results, results):
            self.write(r, new)
        if not any(branch_records) and not any(self.is_active(r) for r in op.results):
            return None
        defined = [_defined_ids(region) for region in op.regions]
        outer_refs = [v for values in outers for v in values]
        return CondRecord(op, pred if isinstance(pred, Value) else None, branch_records, renames, defined, outer_refs)

    def _placeholder(self, aval: Any) -> Value:
        """What a branch exports for a value another branch's records need: zeros, or an empty stack (residuals
        of a ``while`` that this branch does not run)."""
        if not isinstance(aval, StackType):
            return zeros(aval)
        empty = Value(aval)
        self.builder.emit(Op(stack_new_p, [], {"elem": aval.elem}, [empty]))
        return empty

    def forward_loop(self, op: Op) -> LoopRecord | None:
        builder = self.builder
        counted = op.prim is for_p
        body = op.regions[-1]
        carried_ops = op.operands[1:] if counted else op.operands
        body_params = body.params[1:] if counted else body.params
        init = [self.read(v) for v in carried_ops]
        active = [self.is_active(v) for v in carried_ops]
        saved_active = set(self.active)
        while True:  # which carried values become active: a fixed point over the body
            self.active = set(saved_active)
            self.active.update(id(p) for p, a in zip(body_params, active) if a)
            lead = [body.params[0].aval] if counted else []
            with builder.region(lead + [v.aval for v in carried_ops]) as new_body:
                if counted:
                    self.write(body.params[0], new_body.params[0])
                for p, new in zip(body_params, new_body.params[len(lead):]):
                    self.write(p, new)
                with core.interpreting(self.linearizer):
                    records = self.forward_block(body)
                outs = [self.read(r) for r in body.results]
            grown = [a or (self.is_active(r) and is_differentiable(r.aval)) for a, r in zip(active, body.results)]
            if grown == active:
                break
            active = grown
        cond_block = None
        if not counted:
            cond = op.regions[0]
            with builder.region([v.aval for v in carried_ops]) as cond_block:
                for p, new in zip(cond.params, cond_block.params):
                    self.write(p, new)
                self.forward_block(cond)
                cond_block.results = [builder.operand(self.read(cond.results[0]))]
        local, outer = self._local_refs(records, new_body)
        trip = self.read(op.operands[0]) if counted else None
        static_trip = isinstance(trip, Literal) or isinstance(trip, (int, np.integer))
        stacked = not static_trip or any(isinstance(v.aval, StackType) for v in local)
        saved: dict[int, tuple[Value, Any]] = {}
        extra_init, extra_params, extra_yields, extra_results = [], [], [], []
        with core.interpreting(builder):
            k = new_body.params[0] if counted else None
            if not counted:  # count the iterations: the backward loop runs that many
                counter = Value(TensorType(np.int32, ()), "trip")
                extra_params.append(counter)
                extra_init.append(builder.operand(np.int32(0)))
                with builder.reopen(new_body):
                    extra_yields.append(add_p.bind(counter, np.int32(1)))
                extra_results.append(Value(TensorType(np.int32, ()), "trip"))
            for v in local:
                if stacked:
                    typ: Any = StackType(v.aval)
                    start = Value(typ)
                    builder.emit(Op(stack_new_p, [], {"elem": v.aval}, [start], loc=op.loc))
                    param = Value(typ)
                    with builder.reopen(new_body):
                        pushed = Value(typ)
                        builder.emit(Op(stack_push_p, [param, v], {}, [pushed], loc=op.loc))
                else:
                    n = int(np.asarray(trip.value if isinstance(trip, Literal) else trip))
                    typ = TensorType(v.aval.dtype, (n, *v.aval.shape))
                    start = zeros(typ)
                    param = Value(typ)
                    with builder.reopen(new_body):
                        row = reshape_p.bind(v, new_sizes=(1, *v.aval.shape), dimensions=None)
                        index = [k] + [np.int32(0)] * v.aval.ndim
                        pushed = dynamic_update_slice_p.bind(param, row, *index)
                extra_init.append(builder.operand(start))
                extra_params.append(param)
                extra_yields.append(pushed)
                result = Value(typ, f"{v.name}_saved" if v.name else None)
                extra_results.append(result)
                saved[id(v)] = (result, typ)
        with builder.reopen(new_body):
            new_body.params.extend(extra_params)
            new_body.results = [builder.operand(o) for o in outs] + [builder.operand(y) for y in extra_yields]
        regions = [new_body]
        if cond_block is not None:
            cond_block.params.extend(Value(p.aval) for p in extra_params)
            regions = [cond_block, new_body]
        results = [Value(r.aval, r.name) for r in op.results]
        lead_operands = [builder.operand(trip)] if counted else []
        builder.emit(Op(op.prim, lead_operands + [builder.operand(v) for v in init] + extra_init, dict(op.params),
                        results + extra_results, regions=regions, loc=op.loc))
        for r, new, a in zip(op.results, results, active):
            self.write(r, new)
            if a:
                self.active.add(id(r))
        if not records and not any(active):
            return None
        trip_value = trip if counted else extra_results[0]
        return LoopRecord(op, trip_value, records, saved, stacked, _defined_ids(body), active, outer)

    # -- backward sweep --------------------------------------------------------------------------------------
    def backward_block(self, records: list[Any], ct: dict[int, Any], resolve: Any) -> None:
        for record in reversed(records):
            with self.builder.at(record.op.loc):
                if isinstance(record, PrimRecord):
                    self.backward_prim(record, ct, resolve)
                elif isinstance(record, CustomVJPRecord):
                    self.backward_custom(record, ct, resolve)
                elif isinstance(record, CondRecord):
                    self.backward_cond(record, ct, resolve)
                else:
                    self.backward_loop(record, ct, resolve)

    def backward_prim(self, rec: PrimRecord, ct: dict[int, Any], resolve: Any) -> None:
        lin: dict[int, Any] = {}
        for r, t in zip(rec.op.results, rec.tangents):
            c = ct.pop(id(r), None)
            if t is not None and c is not None:
                lin[id(t)] = add_tangents(lin.get(id(t), Zero(t.aval)), c)
        if not lin:
            return
        linear = {id(p) for p in rec.placeholders if p is not None} | {id(r) for o in rec.snippet for r in o.results}
        for op in reversed(rec.snippet):
            cts = [lin.pop(id(r), None) for r in op.results]
            if all(c is None for c in cts):
                continue
            rule = op.prim.transpose_rule
            if rule is None:
                raise TransformError(f"no transpose rule for '{op.prim.name}' ({op.prim.family}), needed by grad "
                                     f"(it appears in the JVP of '{rec.op.prim.name}')")
            operands = [UndefinedPrimal(v.aval) if id(v) in linear else resolve(v) for v in op.operands]
            if op.prim.multiple_results:
                c_in: Any = [c if c is not None else Zero(r.aval) for c, r in zip(cts, op.results)]
            else:
                c_in = cts[0]
            out = rule(c_in, *operands, **op.params)
            for v, c in zip(op.operands, out):
                if c is not None and id(v) in linear and not isinstance(c, Zero):
                    lin[id(v)] = add_tangents(lin.get(id(v), Zero(v.aval)), c)
        for v, p in zip(rec.op.operands, rec.placeholders):
            if p is not None and id(p) in lin:
                ct[id(v)] = _named(add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), lin[id(p)]), v)

    def backward_custom(self, rec: CustomVJPRecord, ct: dict[int, Any], resolve: Any) -> None:
        cts_out = [ct.pop(id(r), None) for r in rec.op.results]
        if all(c is None for c in cts_out):
            return
        cts_out = [instantiate(c if c is not None else Zero(tangent_aval(r.aval)))
                   for c, r in zip(cts_out, rec.op.results)]
        residuals = [resolve(v) if isinstance(v, Value) else v for v in rec.residuals]
        cts_in = rec.backward(residuals, cts_out)
        for v, c, a in zip(rec.op.operands, cts_in, rec.active):
            if a and c is not None and not isinstance(c, Zero):
                ct[id(v)] = add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), c)

    def backward_cond(self, rec: CondRecord, ct: dict[int, Any], resolve: Any) -> None:
        builder = self.builder
        cts_out = [ct.pop(id(r), None) for r in rec.op.results]
        if all(c is None for c in cts_out):
            return
        blocks, branch_cts = [], []
        for b, (region, records) in enumerate(zip(rec.op.regions, rec.branches)):
            rename = rec.renames[b]
            with builder.region() as block:
                inner: dict[int, Any] = {}
                for y, c in zip(region.results, cts_out):
                    if c is not None and not isinstance(y, Literal):
                        inner[id(y)] = add_tangents(inner.get(id(y), Zero(tangent_aval(y.aval))), c)

                def inner_resolve(v: Value, rename=rename) -> Any:
                    return resolve(rename.get(id(v), v))

                self.backward_block(records, inner, inner_resolve)
            blocks.append(block)
            branch_cts.append({k: v for k, v in inner.items() if k not in rec.defined[b]})
        outer_ids = list(dict.fromkeys(k for d in branch_cts for k in d))
        outer_values = [self._old_values[k] for k in outer_ids]
        with core.interpreting(builder):
            for block, d in zip(blocks, branch_cts):
                with builder.reopen(block):
                    block.results = [builder.operand(instantiate(d.get(id(v), Zero(tangent_aval(v.aval)))))
                                     for v in outer_values]
        results = [Value(tangent_aval(v.aval), f"{v.name}_bar" if v.name else None) for v in outer_values]
        builder.emit(Op(cond_p, [builder.operand(resolve(rec.pred) if rec.pred is not None else
                                                 self.read(rec.op.operands[0]))], {}, results, regions=blocks,
                        loc=rec.op.loc))
        for v, c in zip(outer_values, results):
            ct[id(v)] = add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), c)

    def backward_loop(self, rec: LoopRecord, ct: dict[int, Any], resolve: Any) -> None:
        builder = self.builder
        op = rec.op
        counted = op.prim is for_p
        body = op.regions[-1]
        carried_ops = op.operands[1:] if counted else op.operands
        body_params = body.params[1:] if counted else body.params
        cts_out = [ct.pop(id(r), None) for r in op.results]
        if all(c is None for c in cts_out):
            return
        # the cotangents the backward loop carries: one per active carried value, plus accumulators for the
        # active values from outside the loop that the body reads
        active_pos = [i for i, a in enumerate(rec.active_carried) if a]
        free = [v for v in self._free_active(rec) if id(v) not in rec.defined]
        carried_avals = [tangent_aval(carried_ops[i].aval) for i in active_pos] + [tangent_aval(v.aval) for v in free]
        trip = resolve(rec.trip) if isinstance(rec.trip, Value) else rec.trip
        with builder.region([TensorType(np.int32, ())] + carried_avals) as block:
            k_rev, params = block.params[0], block.params[1:]
            with core.interpreting(builder):
                k = sub_p.bind(sub_p.bind(builder.operand(trip), np.int32(1)), k_rev)
                if counted:
                    self.primal[id(body.params[0])] = k
                reads: dict[int, Any] = {}

                def inner_resolve(v: Value) -> Any:
                    entry = rec.saved.get(id(v))
                    if entry is None:
                        return resolve(v)
                    if id(v) not in reads:
                        buffer, typ = entry
                        stored = resolve(buffer)
                        with builder.reopen(block):
                            if rec.stacked:
                                got = Value(typ.elem, v.name)
                                builder.emit(Op(stack_get_p, [stored, k], {}, [got]))
                            else:
                                index = [k] + [np.int32(0)] * (typ.ndim - 1)
                                row = dynamic_slice_p.bind(stored, *index, slice_sizes=(1, *typ.shape[1:]))
                                got = reshape_p.bind(row, new_sizes=typ.shape[1:], dimensions=None)
                        reads[id(v)] = got
                    return reads[id(v)]

                inner: dict[int, Any] = {}
                for i, p in zip(active_pos, params):
                    y = body.results[i]
                    if not isinstance(y, Literal):
                        inner[id(y)] = add_tangents(inner.get(id(y), Zero(tangent_aval(y.aval))), p)
                self.backward_block(rec.records, inner, inner_resolve)
                new_carried = [instantiate(inner.get(id(body_params[i]), Zero(tangent_aval(body_params[i].aval))))
                               for i in active_pos]
                accumulated = [add_tangents(acc, inner.get(id(v), Zero(acc.aval)))
                               for acc, v in zip(params[len(active_pos):], free)]
                with builder.reopen(block):
                    block.results = [builder.operand(x) for x in new_carried + accumulated]
        init = [instantiate(cts_out[i] if cts_out[i] is not None else Zero(tangent_aval(op.results[i].aval)))
                for i in active_pos]
        with core.interpreting(builder):
            init += [zeros(tangent_aval(v.aval)) for v in free]
            results = [Value(a) for a in carried_avals]
            trip_operand = builder.operand(trip)
        builder.emit(Op(for_p, [trip_operand] + [builder.operand(x) for x in init], {}, results, regions=[block],
                        loc=op.loc))
        for i, r in zip(active_pos, results[: len(active_pos)]):
            v = carried_ops[i]
            if not isinstance(v, Literal):
                ct[id(v)] = add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), r)
        for v, r in zip(free, results[len(active_pos):]):
            ct[id(v)] = add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), r)

    def _free_active(self, rec: LoopRecord) -> list[Value]:
        """Old values from outside the loop whose cotangents the body produces (loop invariants): operands of
        its records, and values it (or a ``cond`` in it) yields unchanged."""
        out, seen = [], set()

        def yielded(values: list[Value]) -> None:
            for v in values:
                if not isinstance(v, Literal) and self.is_active(v) and id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)

        yielded(rec.op.regions[-1].results)

        def visit(records: list[Any]) -> None:
            for r in records:
                if isinstance(r, PrimRecord):
                    for v, p in zip(r.op.operands, r.placeholders):
                        if p is not None and id(v) not in seen:
                            seen.add(id(v))
                            out.append(v)
                elif isinstance(r, CondRecord):
                    for region in r.op.regions:
                        yielded(region.results)
                    for branch in r.branches:
                        visit(branch)
                elif isinstance(r, CustomVJPRecord):
                    for v, active in zip(r.op.operands, r.active):
                        if active and id(v) not in seen:
                            seen.add(id(v))
                            out.append(v)
                else:
                    for v in self._free_active(r):
                        if id(v) not in seen:
                            seen.add(id(v))
                            out.append(v)

        visit(rec.records)
        return [v for v in out if id(v) not in rec.defined]


def _named(cotangent: Any, v: Value) -> Any:
    """Cotangents read as ``x_bar`` in the printed IR and the generated Python."""
    if isinstance(cotangent, Value) and cotangent.name is None and v.name and not v.name.startswith("$"):
        cotangent.name = f"{v.name}_bar"
    return cotangent


def _defined_ids(block: Block) -> set[int]:
    ids = {id(p) for p in block.params}
    for op in block.ops:
        ids.update(id(r) for r in op.results)
        for region in op.regions:
            ids |= _defined_ids(region)
    ids.update(id(r) for r in block.results if not isinstance(r, Literal) and id(r) in ids)
    return ids


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


def vjp_function(fn: Function, wrt: Sequence[bool] | None = None, seed_ones: bool = False) -> Function:
    """``(*primals, *cotangents) -> (*outs, *param_cotangents)`` for the params in ``wrt`` (default all).

    With ``seed_ones`` there are no cotangent params: each output's cotangent is 1 (``grad``).
    """
    wrt = list(wrt) if wrt is not None else [True] * len(fn.params)
    t = VJP(fn, wrt)
    t._old_values = _all_values(fn)
    builder = t.builder
    params = [builder.param(p.aval, p.name) for p in fn.params]
    for p, new, on in zip(fn.params, params, wrt):
        t.write(p, new)
        if on and is_differentiable(p.aval):
            t.active.add(id(p))
    with core.interpreting(t.linearizer):
        for value, data in fn.consts:
            t.write(value, builder.operand(data))
        records = t.forward_block(fn.body)
        outs = [t.read(r) for r in fn.results]
    if seed_ones:
        seeds = [np.ones((), r.aval.dtype) for r in fn.results]
    else:
        seeds = [builder.param(tangent_aval(r.aval), f"{r.name}_bar" if r.name else "out_bar")
                 for r in fn.results]
    ct: dict[int, Any] = {}
    forward_ops = {id(op) for op in builder.function.body.ops}
    with core.interpreting(builder):
        for r, s in zip(fn.results, seeds):
            if t.is_active(r) and not isinstance(r, Literal):
                seed = s if isinstance(s, Value) else add_p.bind(zeros(tangent_aval(r.aval)), s)
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


__all__ = ["vjp_function", "TransformError", "SourceLoc"]
