"""Reverse mode of the ops that hold regions (``cond``, ``while``, ``for``) and of stacks: reverse-mode hooks.

A hook re-emits its op in the forward sweep and returns a record (``primitives/engine.py``'s ``Record``)
whose ``backward`` emits the transposed op. A ``cond``'s branches keep their records; the values a branch's
records need are exported as extra results of the forward ``cond``, and the backward ``cond`` transposes
the taken branch. A loop saves what its body's records need at every iteration, into a preallocated buffer
when the trip count is known, onto a growing stack when it is not (``while``), and the backward loop runs
the iterations in reverse, reading them back. Differentiated again in reverse mode, those stacks get
cotangent stacks (``StackRecord`` below).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from srcjax.transpiler.ir import Block, Literal, Op, Value
from srcjax.transpiler.passes import has_effect
from srcjax.transpiler.primitives.ad import Zero, add_tangents, instantiate, is_differentiable, tangent_aval, zeros
from srcjax.transpiler.primitives.control import cond_p, for_p, scan_p, stack_add_p, stack_get_p, stack_new_p, \
    stack_push_p, stack_size_p, while_p
from srcjax.transpiler.primitives.core import TransformError, interpreting
from srcjax.transpiler.primitives.elementwise import add_p, sub_p
from srcjax.transpiler.primitives.engine import Record, VJPEngine
from srcjax.transpiler.primitives.indexing import dynamic_slice_p, dynamic_update_slice_p
from srcjax.transpiler.primitives.shape import reshape_p
from srcjax.transpiler.types import StackType, TensorType

Resolve = Callable[[Value], Any]


def defined_ids(block: Block) -> set[int]:
    """The ids of the values defined in ``block`` (params, results of its ops and of their regions)."""
    ids = {id(p) for p in block.params}
    for op in block.ops:
        ids.update(id(r) for r in op.results)
        for region in op.regions:
            ids |= defined_ids(region)
    ids.update(id(r) for r in block.results if not isinstance(r, Literal) and id(r) in ids)
    return ids


def _accumulate(ct: dict[int, Any], v: Value, c: Any) -> None:
    before = ct.get(id(v), Zero(tangent_aval(v.aval)))
    if isinstance(v.aval, StackType) and not isinstance(before, Zero) and not isinstance(c, Zero) and before is not c:
        # a stack is used linearly: its cotangent stack is threaded through the records, never summed
        raise TransformError("reverse mode: two cotangent stacks for one stack (a stack of residuals used twice)")
    ct[id(v)] = add_tangents(before, c)


def _defining_op(block: Block, v: Any) -> Op | None:
    return next((op for op in reversed(block.ops) if any(r is v for r in op.results)), None)


def _is_zeros(block: Block, v: Any) -> bool:
    if isinstance(v, Literal):
        return not np.any(v.value)
    op = _defining_op(block, v)
    return op is not None and op.prim.name == "broadcast_in_dim" and _is_zeros(block, op.operands[0])


def _accumulated(block: Block, acc: Value, c: Any) -> Any:
    """``acc + c`` in a backward loop's body. Where ``c`` is zeros with one window updated (the cotangent of a
    ``dynamic_slice`` of a value from outside the loop, such as a scan's ``xs[i]``), that window of ``acc`` is
    updated instead: a row per trip rather than the whole array."""
    op = _defining_op(block, c) if isinstance(c, Value) else None
    if op is None or op.prim is not dynamic_update_slice_p or not _is_zeros(block, op.operands[0]):
        return add_tangents(acc, c)
    update, starts = op.operands[1], op.operands[2:]
    window = dynamic_slice_p.bind(acc, *starts, slice_sizes=update.aval.shape)
    return dynamic_update_slice_p.bind(acc, add_p.bind(window, update), *starts)


def _differentiable(aval: Any) -> bool:
    """Floats have cotangents, and so do stacks of them (cotangent stacks: ``primitives/control.py``)."""
    return _differentiable(aval.elem) if isinstance(aval, StackType) else is_differentiable(aval)


def _materialise(engine: VJPEngine, t: Any) -> Any:
    """A cotangent as a value: zeros, or for a stack an empty cotangent stack (all of its entries zero)."""
    if isinstance(t, Zero) and isinstance(t.aval, StackType):
        return _placeholder(engine, t.aval)
    return instantiate(t)


def _outer_stacks(engine: VJPEngine, records: list[Any], defined: set[int], ct: dict[int, Any]) -> dict[int, Any]:
    """The cotangent stacks, taken out of ``ct``, of stacks from outside a region that its records add to: the
    region threads them (a region's records add to a cotangent stack in place; two stacks are never summed)."""
    out = {}
    for record in records:
        for v in record.targets(engine):
            if isinstance(v.aval, StackType) and id(v) not in defined and id(v) in ct:
                out[id(v)] = ct.pop(id(v))
    return out


def _active_yields(engine: VJPEngine, values: list[Value]) -> list[Value]:
    return [v for v in values if not isinstance(v, Literal) and engine.is_active(v)]


# -- cond ------------------------------------------------------------------------------------------------------------
@dataclass
class CondRecord:
    op: Op
    pred: Any
    branches: list[list[Record]]  # the records of each branch
    renames: list[dict[int, Value]]  # per branch: branch-local value -> the forward cond's export result
    defined: list[set[int]]  # per branch: old values defined inside it
    outer_refs: list[Value] = field(default_factory=list)

    def refs(self) -> list[Value]:
        return ([self.pred] if isinstance(self.pred, Value) else []) + [
            v for rename in self.renames for v in rename.values()] + self.outer_refs

    def targets(self, engine: VJPEngine) -> list[Value]:
        out = [v for region in self.op.regions for v in _active_yields(engine, region.results)]
        return out + [v for branch in self.branches for record in branch for v in record.targets(engine)]

    def backward(self, engine: VJPEngine, ct: dict[int, Any], resolve: Resolve) -> None:
        builder = engine.builder
        cts_out = [ct.pop(id(r), None) for r in self.op.results]
        if all(c is None for c in cts_out):
            return
        blocks, branch_cts = [], []
        threaded = _outer_stacks(engine, [r for branch in self.branches for r in branch], set().union(*self.defined),
                                 ct)
        for b, (region, records) in enumerate(zip(self.op.regions, self.branches)):
            rename = self.renames[b]
            with builder.region() as block:
                inner: dict[int, Any] = dict(threaded)
                for y, c in zip(region.results, cts_out):
                    if c is not None and not isinstance(y, Literal):
                        _accumulate(inner, y, c)

                def inner_resolve(v: Value, rename=rename) -> Any:
                    return resolve(rename.get(id(v), v))

                engine.backward_block(records, inner, inner_resolve)
            blocks.append(block)
            branch_cts.append({k: v for k, v in inner.items() if k not in self.defined[b]})
        outer_ids = list(dict.fromkeys(k for d in branch_cts for k in d))
        outer_values = [engine.old_value(k) for k in outer_ids]
        with interpreting(builder):
            for block, d in zip(blocks, branch_cts):
                with builder.reopen(block):
                    block.results = [builder.operand(_materialise(engine, d.get(id(v), Zero(tangent_aval(v.aval)))))
                                     for v in outer_values]
        results = [Value(tangent_aval(v.aval), f"{v.name}_bar" if v.name else None) for v in outer_values]
        pred = resolve(self.pred) if self.pred is not None else engine.read(self.op.operands[0])
        builder.emit(Op(cond_p, [builder.operand(pred)], {}, results, regions=blocks, loc=self.op.loc))
        for v, c in zip(outer_values, results):
            _accumulate(ct, v, c)


def _placeholder(engine: VJPEngine, aval: Any) -> Value:
    """What a branch exports for a value another branch's records need: zeros, or an empty stack (residuals
    of a ``while`` that this branch does not run)."""
    if not isinstance(aval, StackType):
        return zeros(aval)
    empty = Value(aval)
    engine.builder.emit(Op(stack_new_p, [], {"elem": aval.elem}, [empty]))
    return empty


def _cond_vjp(engine: VJPEngine, op: Op) -> CondRecord | None:
    builder = engine.builder
    pred = engine.read(op.operands[0])
    blocks, branch_records, yields = [], [], []
    for region in op.regions:
        with builder.region() as block:
            records = engine.forward_block(region)
            yields.append([engine.read(r) for r in region.results])
        blocks.append(block)
        branch_records.append(records)
    for i, r in enumerate(op.results):
        if any(engine.is_active(region.results[i]) for region in op.regions) and _differentiable(r.aval):
            engine.active.add(id(r))
    locals_, outers = zip(*(engine.local_refs(recs, blk) for recs, blk in zip(branch_records, blocks)))
    exports = [(b, v) for b, values in enumerate(locals_) for v in values]
    renames: list[dict[int, Value]] = [{} for _ in op.regions]
    export_results = []
    for b, v in exports:
        result = Value(v.aval, v.name)
        renames[b][id(v)] = result
        export_results.append(result)
    with interpreting(builder):
        for b, (block, ys) in enumerate(zip(blocks, yields)):
            with builder.reopen(block):
                extra = [v if eb == b else _placeholder(engine, v.aval) for eb, v in exports]
                block.results = [builder.operand(y) for y in ys + extra]
    results = [Value(r.aval, r.name) for r in op.results]
    builder.emit(Op(cond_p, [builder.operand(pred)], {}, results + export_results, regions=blocks, loc=op.loc))
    for r, new in zip(op.results, results):
        engine.write(r, new)
    if not any(branch_records) and not any(engine.is_active(r) for r in op.results):
        return None
    defined = [defined_ids(region) for region in op.regions]
    outer_refs = [v for values in outers for v in values]
    return CondRecord(op, pred if isinstance(pred, Value) else None, branch_records, renames, defined, outer_refs)


# -- while and for -----------------------------------------------------------------------------------------------------
@dataclass
class LoopRecord:
    op: Op
    trip: Any  # the trip count (a value or an int)
    records: list[Record]
    saved: dict[int, tuple[Value, Any]]  # body-local value -> (its buffer or stack after the loop, its type)
    stacked: bool
    defined: set[int]  # old values defined in the body (params included)
    active_carried: list[bool]
    outer_refs: list[Value] = field(default_factory=list)
    constants: dict[int, Op] = field(default_factory=dict)  # body-local constants: made again, not saved

    def refs(self) -> list[Value]:
        return ([self.trip] if isinstance(self.trip, Value) else []) + [b for b, _ in self.saved.values()] + \
            self.outer_refs

    def targets(self, engine: VJPEngine) -> list[Value]:
        """Old values from outside the loop whose cotangents the body produces (loop invariants): those its
        records send cotangents to, and values it (or a ``cond`` in it) yields unchanged."""
        found = _active_yields(engine, self.op.regions[-1].results)
        found += [v for record in self.records for v in record.targets(engine)]
        unique: dict[int, Value] = {}  # (by identity: values overload ==)
        for v in found:
            unique.setdefault(id(v), v)
        return [v for key, v in unique.items() if key not in self.defined]

    def backward(self, engine: VJPEngine, ct: dict[int, Any], resolve: Resolve) -> None:
        builder = engine.builder
        op = self.op
        counted = op.prim is for_p
        body = op.regions[-1]
        carried_ops = op.operands[1:] if counted else op.operands
        body_params = body.params[1:] if counted else body.params
        cts_out = [ct.pop(id(r), None) for r in op.results]
        if all(c is None for c in cts_out):
            return
        # the cotangents the backward loop carries: one per active carried value, plus accumulators for the
        # active values from outside the loop that the body reads
        active_pos = [i for i, a in enumerate(self.active_carried) if a]
        free = self.targets(engine)
        threaded = _outer_stacks(engine, self.records, self.defined, ct)  # (carried, starting where they are)
        carried_avals = [tangent_aval(carried_ops[i].aval) for i in active_pos] + [tangent_aval(v.aval) for v in free]
        trip = resolve(self.trip) if isinstance(self.trip, Value) else self.trip
        with builder.region([TensorType(np.int32, ())] + carried_avals) as block:
            k_rev, params = block.params[0], block.params[1:]
            with interpreting(builder):
                k = sub_p.bind(sub_p.bind(builder.operand(trip), np.int32(1)), k_rev)  # iteration trip - 1 - k_rev
                if counted:
                    engine.write(body.params[0], k, keep_name=False)
                inner_resolve = self._reader(engine, block, k, resolve)
                inner: dict[int, Any] = {}
                for i, p in zip(active_pos, params):
                    y = body.results[i]
                    if not isinstance(y, Literal):
                        _accumulate(inner, y, p)
                for acc, v in zip(params[len(active_pos):], free):
                    if isinstance(v.aval, StackType):
                        inner[id(v)] = acc  # a cotangent stack: the records add to it where it is
                engine.backward_block(self.records, inner, inner_resolve)
                new_carried = [_materialise(engine, inner.get(id(body_params[i]),
                                                              Zero(tangent_aval(body_params[i].aval))))
                               for i in active_pos]
                accumulated = [inner.get(id(v), acc) if isinstance(v.aval, StackType) else
                               _accumulated(block, acc, inner.get(id(v), Zero(acc.aval)))
                               for acc, v in zip(params[len(active_pos):], free)]
                with builder.reopen(block):
                    block.results = [builder.operand(x) for x in new_carried + accumulated]
        init = [_materialise(engine, cts_out[i] if cts_out[i] is not None else Zero(tangent_aval(op.results[i].aval)))
                for i in active_pos]
        with interpreting(builder):
            init += [threaded[id(v)] if id(v) in threaded else _materialise(engine, Zero(tangent_aval(v.aval)))
                     for v in free]
            results = [Value(a) for a in carried_avals]
            trip_operand = builder.operand(trip)
        builder.emit(Op(for_p, [trip_operand] + [builder.operand(x) for x in init], {}, results, regions=[block],
                        loc=op.loc))
        for i, r in zip(active_pos, results[: len(active_pos)]):
            v = carried_ops[i]
            if not isinstance(v, Literal):
                _accumulate(ct, v, r)
        for v, r in zip(free, results[len(active_pos):]):
            _accumulate(ct, v, r)

    def _reader(self, engine: VJPEngine, block: Block, k: Any, resolve: Resolve) -> Resolve:
        """Where the backward body reads a forward value: iteration ``k``'s entry of what the loop saved, read
        once at the top of the body; values from outside the loop as the enclosing code reads them."""
        builder = engine.builder
        reads: dict[int, Any] = {}

        def inner_resolve(v: Value) -> Any:
            entry = self.saved.get(id(v))
            if entry is None and id(v) in self.constants:
                if id(v) not in reads:
                    made = self.constants[id(v)]
                    operands = [x if isinstance(x, Literal) else inner_resolve(x) for x in made.operands]
                    with builder.reopen(block), interpreting(builder):
                        reads[id(v)] = made.prim.bind(*operands, **made.params)
                return reads[id(v)]
            if entry is None:
                return resolve(v)
            if id(v) not in reads:
                buffer, typ = entry
                stored = resolve(buffer)
                with builder.reopen(block):
                    if self.stacked:
                        got = Value(typ.elem, v.name)
                        builder.emit(Op(stack_get_p, [stored, k], {}, [got]))
                    else:
                        index = [k] + [np.int32(0)] * (typ.ndim - 1)
                        row = dynamic_slice_p.bind(stored, *index, slice_sizes=(1, *typ.shape[1:]))
                        got = reshape_p.bind(row, new_sizes=typ.shape[1:], dimensions=None)
                reads[id(v)] = got
            return reads[id(v)]

        return inner_resolve


def _loop_vjp(engine: VJPEngine, op: Op) -> LoopRecord | None:
    builder = engine.builder
    counted = op.prim is for_p
    body = op.regions[-1]
    carried_ops = op.operands[1:] if counted else op.operands
    body_params = body.params[1:] if counted else body.params
    init = [engine.read(v) for v in carried_ops]
    active = [engine.is_active(v) for v in carried_ops]
    saved_active = set(engine.active)
    while True:  # which carried values become active: a fixed point over the body
        engine.active = set(saved_active)
        engine.active.update(id(p) for p, a in zip(body_params, active) if a)
        lead = [body.params[0].aval] if counted else []
        with builder.region(lead + [v.aval for v in carried_ops]) as new_body:
            if counted:
                engine.write(body.params[0], new_body.params[0])
            for p, new in zip(body_params, new_body.params[len(lead):]):
                engine.write(p, new)
            with interpreting(engine.linearizer):
                records = engine.forward_block(body)
            outs = [engine.read(r) for r in body.results]
        grown = [a or (engine.is_active(r) and _differentiable(r.aval)) for a, r in zip(active, body.results)]
        if grown == active:
            break
        active = grown
    cond_block = None
    if not counted:
        cond = op.regions[0]
        with builder.region([v.aval for v in carried_ops]) as cond_block:
            for p, new in zip(cond.params, cond_block.params):
                engine.write(p, new)
            engine.forward_block(cond)
            cond_block.results = [builder.operand(engine.read(cond.results[0]))]
    local, outer = engine.local_refs(records, new_body)
    constants = _constants(new_body, local)  # (made again in the backward body rather than saved per trip)
    local = [v for v in local if id(v) not in constants]
    trip = engine.read(op.operands[0]) if counted else None
    static_trip = isinstance(trip, Literal) or isinstance(trip, (int, np.integer))
    stacked = not static_trip or any(isinstance(v.aval, StackType) for v in local)
    saved, extra = _save_residuals(engine, op, new_body, local, trip, stacked)
    extra_init, extra_params, extra_yields, extra_results = extra
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
        engine.write(r, new)
        if a:
            engine.active.add(id(r))
    if not records and not any(active):
        return None
    trip_value = trip if counted else extra_results[0]
    return LoopRecord(op, trip_value, records, saved, stacked, defined_ids(body), active, outer, constants)


def _constants(block: Block, values: list[Value]) -> dict[int, Op]:
    """Of ``values``, those ``block`` makes from literals alone (a broadcast constant): by id, the op making each."""
    made: dict[int, Op] = {}  # (through chains: a broadcast literal converted)
    for op in block.ops:
        if not op.regions and op.operands and not op.prim.multiple_results and not has_effect(op) and all(
                isinstance(x, Literal) or id(x) in made for x in op.operands):
            made[id(op.results[0])] = op
    out: dict[int, Op] = {}
    todo = [v for v in values if id(v) in made]
    while todo:  # (with the constants they are made from, to be made again first)
        v = todo.pop()
        if id(v) not in out:
            out[id(v)] = made[id(v)]
            todo += [x for x in made[id(v)].operands if id(x) in made]
    return out


def _save_residuals(engine: VJPEngine, op: Op, new_body: Block, local: list[Value], trip: Any, stacked: bool):
    """Extra carried values of the forward loop: its trip count (a ``while``'s), and per value the backward
    body reads, a buffer with a row per iteration (a stack when the trip count is not known)."""
    builder = engine.builder
    counted = op.prim is for_p
    saved: dict[int, tuple[Value, Any]] = {}
    extra_init, extra_params, extra_yields, extra_results = [], [], [], []
    with interpreting(builder):
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
                # (a loop of no trips still gets a row: the body, never run, must type-check writing one)
                n = max(int(np.asarray(trip.value if isinstance(trip, Literal) else trip)), 1)
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
    return saved, (extra_init, extra_params, extra_yields, extra_results)


# -- stacks ------------------------------------------------------------------------------------------------------------
# Reverse mode over a reverse-mode derivative of a ``while`` (grad(grad(f))) differentiates the stacks of its
# residuals. The cotangent of a stack is a cotangent stack (``primitives/control.py``): entry i holds the
# cotangent of the i-th pushed value. A push's cotangent is read from its entry (the stack's size before the
# push, saved in the forward sweep), a read ``stack_get %s, %k`` adds its cotangent into entry k, and
# ``stack_add`` (third order) is the transpose of a filling read. The cotangent stack itself passes through.
@dataclass
class StackRecord:
    op: Op
    index: Any  # the entry the op pushes, reads or adds to (a value of the forward sweep)

    def refs(self) -> list[Value]:
        return [self.index] if isinstance(self.index, Value) else []

    def targets(self, engine: VJPEngine) -> list[Value]:
        stack, *rest = self.op.operands
        value = rest[-1] if self.op.prim is not stack_get_p else None
        return [v for v in (stack, value) if v is not None and not isinstance(v, Literal) and engine.is_active(v)]

    def backward(self, engine: VJPEngine, ct: dict[int, Any], resolve: Resolve) -> None:
        c = ct.pop(id(self.op.results[0]), None)
        if c is None or isinstance(c, Zero):
            return
        builder, op = engine.builder, self.op
        index = resolve(self.index) if isinstance(self.index, Value) else self.index
        lanes = bool(op.params.get("lanes"))
        stack = op.operands[0]
        with interpreting(builder):
            if op.prim is stack_get_p:  # entry k of the stack's cotangent gets c
                before = ct.pop(id(stack), None)
                if before is None or isinstance(before, Zero):
                    before = _placeholder(engine, tangent_aval(stack.aval))
                after = Value(before.aval)
                builder.emit(Op(stack_add_p, [before, builder.operand(index), builder.operand(instantiate(c))],
                                {"lanes": lanes}, [after], loc=op.loc))
                ct[id(stack)] = after
                return
            value = op.operands[-1]
            if engine.is_active(value) and _differentiable(value.aval):  # its cotangent: the entry it went to
                got = Value(tangent_aval(value.aval))
                builder.emit(Op(stack_get_p, [c, builder.operand(index)], {"lanes": lanes, "fill": True}, [got],
                                loc=op.loc))
                _accumulate(ct, value, got)
            if engine.is_active(stack):
                _accumulate(ct, stack, c)


def _stack_vjp(engine: VJPEngine, op: Op) -> StackRecord | None:
    """Stack ops are re-emitted; with an active stack or value, a record differentiates them."""
    builder = engine.builder
    results = [Value(r.aval, r.name) for r in op.results]
    operands = [engine.read(v) for v in op.operands]
    active = [engine.is_active(v) and _differentiable(v.aval) for v in op.operands]
    index = None
    if any(active) and op.prim is stack_push_p:  # the entry it fills: the stack's size before it
        index = Value(TensorType(np.int32, ()), "entry")
        builder.emit(Op(stack_size_p, [builder.operand(operands[0])], {}, [index], loc=op.loc))
    elif any(active) and op.prim in (stack_get_p, stack_add_p):
        index = operands[1]
    builder.emit(Op(op.prim, [builder.operand(x) for x in operands], dict(op.params), results, loc=op.loc))
    for r, new in zip(op.results, results):
        engine.write(r, new)
    if not any(active) or op.prim in (stack_new_p, stack_size_p):
        return None
    engine.activate(op.results[0])
    return StackRecord(op, index)


cond_p.def_transpose(_cond_vjp)
while_p.def_transpose(_loop_vjp)
for_p.def_transpose(_loop_vjp)
scan_p.def_unsupported("transpose", "not implemented for 'scan' ops yet (lax.scan compiles to 'for' loops)")
for _p in (stack_new_p, stack_push_p, stack_get_p, stack_size_p, stack_add_p):
    _p.def_transpose(_stack_vjp)
