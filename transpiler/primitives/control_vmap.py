"""Batching of the ops that hold regions (``cond``, ``while``, ``for``) and of stacks: op rules.

A ``cond`` whose predicate is the same for the whole batch stays a ``cond``; one whose predicate differs
between examples runs every branch and selects per example. A loop whose condition differs between
examples runs until every example is done, each example's values frozen (selected) once its own condition
is false; a ``for`` whose trip count differs runs the longest, each example stopping at its own.

A region that runs for examples that do not take it (a branch not taken, an iteration past an example's
end) computes values that are thrown away, and may be inf or nan there. So that they stay out of derivatives
too, the region reads what it is given through ``select(taken, x, stop_gradient(x))`` (JAX's rule for a
batched ``cond``, jax#1052): a cotangent the region sends back is zeroed for the examples that do not take
it, where ``0 * inf`` would otherwise have made it nan.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from srcjax.transpiler.ir import Block, Op, Value, free_values
from srcjax.transpiler.primitives.batching import batched_aval, bdim_at_front, moveaxis
from srcjax.transpiler.primitives.control import cond_p, for_p, scan_p, stack_add_p, stack_get_p, stack_new_p, \
    stack_push_p, stack_size_p, while_p
from srcjax.transpiler.primitives.core import TransformError, interpreting
from srcjax.transpiler.primitives.custom import stop_gradient_p
from srcjax.transpiler.primitives.elementwise import and_p, eq_p, lt_p, max_p, min_p, not_p, select_n_p
from srcjax.transpiler.primitives.engine import BatchEngine
from srcjax.transpiler.primitives.reduce import reduce_max_p, reduce_or_p
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p
from srcjax.transpiler.types import StackType, TensorType


def _at_front(engine: BatchEngine, x: Any, dim: int | None) -> Any:
    """A value with its batch axis first; unbatched values are broadcast (stacks: a new batched stack)."""
    aval = getattr(x, "aval", None)
    if isinstance(aval, StackType):
        if dim is not None:
            return x
        fresh = Value(StackType(batched_aval(aval.elem, 0, engine.size)))
        engine.builder.emit(Op(stack_new_p, [], {"elem": fresh.aval.elem}, [fresh]))
        return fresh
    return bdim_at_front(x, dim, engine.size)


def _full_like(x: Any, value: int) -> Any:
    """``value`` in ``x``'s dtype, broadcast to its shape."""
    aval = x.aval
    return broadcast_in_dim_p.bind(np.asarray(value, aval.dtype), shape=aval.shape, broadcast_dimensions=())


def _cond_vmap(engine: BatchEngine, op: Op) -> None:
    builder = engine.builder
    pred, pred_dim = engine.read(op.operands[0])
    if pred_dim is not None:  # examples differ in the branch they take: run all, select per example
        outs = []
        which = moveaxis(pred, pred_dim, 0)
        boolean = op.operands[0].aval.dtype.kind == "b"
        if not boolean:  # an index picks branch clamp(index, 0, n - 1), as unbatched (and as JAX's switch)
            which = max_p.bind(min_p.bind(which, _full_like(which, len(op.regions) - 1)), _full_like(which, 0))
        for k, region in enumerate(op.regions):
            taken = (which if k == 0 else not_p.bind(which)) if boolean else eq_p.bind(which, _full_like(which, k))
            with _only_where(engine, taken, [region]):
                values, dims = engine.region_yields(region, [], [], [])
            outs.append(list(zip(values, dims)))
        # select_n picks case k for selector k: a bool cond's regions are (then, else), so reverse them
        ordered = outs[::-1] if boolean else outs
        for i, r in enumerate(op.results):
            if isinstance(r.aval, StackType):
                engine.write(r, _one_stack(engine, op, i, outs), 0)
                continue
            cases = [_at_front(engine, case[i][0], case[i][1]) for case in ordered]
            shape = (engine.size, *r.aval.shape)
            w = which if not r.aval.shape else broadcast_in_dim_p.bind(which, shape=shape, broadcast_dimensions=(0,))
            engine.write(r, select_n_p.bind(w, *cases), 0)
        return
    blocks, outs = [], []
    for region in op.regions:
        with builder.region() as block:
            values, dims = engine.region_yields(region, [], [], [])
        blocks.append(block)
        outs.append((values, dims))
    batched = [any(dims[i] is not None for _, dims in outs) for i in range(len(op.results))]
    for block, (values, dims) in zip(blocks, outs):
        with builder.reopen(block), interpreting(builder):
            block.results = [builder.operand(_at_front(engine, v, d) if bat else v)
                             for v, d, bat in zip(values, dims, batched)]
    results = [Value(batched_aval(r.aval, 0 if bat else None, engine.size), r.name)
               for r, bat in zip(op.results, batched)]
    builder.emit(Op(cond_p, [builder.operand(pred)], {}, results, regions=blocks, loc=op.loc))
    for r, new, bat in zip(op.results, results, batched):
        engine.write(r, new, 0 if bat else None)


def _one_stack(engine: BatchEngine, op: Op, i: int, outs: list[list[tuple[Any, int | None]]]) -> Any:
    """The stack a batched-predicate ``cond`` gives as its result ``i``, all of its branches having run. Stacks
    hold a loop's residuals for the backward pass: the branch with the loop yields the stack it filled, the
    others a new empty one (their examples read none of it, their trip counts being 0), so the filled one
    serves every example. A stack filled by two branches would need merging per example: refused."""
    def made_empty(region: Any) -> bool:
        result = region.results[i]
        return any(o.prim is stack_new_p and o.results[0] is result for o in region.ops)

    filled = [k for k, region in enumerate(op.regions) if not made_empty(region)]
    distinct = {id(outs[k][i][0]) for k in filled}
    if len(distinct) > 1:
        raise TransformError(f"vmap: a 'cond' on a per-example predicate whose branches {filled} each fill the "
                             f"stack it gives as result {i}; merging stacks per example is not supported")
    k = filled[0] if filled else 0
    return _at_front(engine, *outs[k][i])


@contextmanager
def _only_where(engine: BatchEngine, taken: Any, blocks: Sequence[Block],
                params: Sequence[Any] = ()) -> Iterator[list[Any]]:
    """While ``blocks`` are batched, the arrays they read from outside (and ``params``, given back batched
    along axis 0) reach differentiation only for the examples where ``taken`` (bool, batch axis first)
    holds: ``select(taken, x, stop_gradient(x))``. The values are unchanged."""
    builder = engine.builder

    def guard(x: Any, dim: int | None) -> Any:
        front = _at_front(engine, x, dim)
        w = taken if front.aval.ndim == 1 else broadcast_in_dim_p.bind(taken, shape=front.aval.shape,
                                                                       broadcast_dimensions=(0,))
        return select_n_p.bind(w, stop_gradient_p.bind(front), front)

    def differentiable(x: Any) -> bool:
        aval = getattr(x, "aval", None)
        return isinstance(aval, TensorType) and aval.dtype.kind in "fc"

    saved = []
    with interpreting(builder):
        free = {id(v): v for b in blocks for v in free_values(b)}
        for v in free.values():
            x, dim = engine.read(v)
            if differentiable(x):
                saved.append((v, x, dim))
                engine.write(v, guard(x, dim), 0)
        guarded = [guard(p, 0) if differentiable(p) else p for p in params]
    engine.masks.append(taken)  # (writes into cotangent stacks are masked by it: ``_stack_vmap``)
    try:
        yield guarded
    finally:
        engine.masks.pop()
        for v, x, dim in saved:
            engine.write(v, x, dim)


def _loop_vmap(engine: BatchEngine, op: Op) -> None:
    """``while``/``for`` with carried values batched (axis 0) as needed; a per-example condition masks."""
    builder, size = engine.builder, engine.size
    counted = op.prim is for_p
    body = op.regions[-1]
    operands = op.operands[1:] if counted else op.operands
    body_params = body.params[1:] if counted else body.params
    trips, trips_dim = engine.read(op.operands[0]) if counted else (None, None)
    per_example_trips = counted and trips_dim is not None  # run the longest; others stop (masked) at theirs
    init = [engine.read(v) for v in operands]
    batched = [d is not None for _, d in init]
    if per_example_trips:
        batched = [True] * len(batched)
    for _attempt in range(len(operands) + 3):  # which carried values are batched: a fixed point over the body
        avals = [batched_aval(v.aval, 0 if bat else None, size) for v, bat in zip(operands, batched)]
        pred_batched = False
        if not counted:  # does the condition differ between examples?
            with builder.region(avals) as cond_block:
                _, dims = engine.region_yields(op.regions[0], op.regions[0].params, cond_block.params,
                                               [0 if bat else None for bat in batched])
            pred_batched = dims[0] is not None
        if pred_batched and not all(batched):
            batched = [True] * len(batched)
            continue
        lead = [body.params[0].aval] if counted else []
        with builder.region(lead + avals) as body_block:
            if counted:
                engine.write(body.params[0], body_block.params[0], None)
            new_params = body_block.params[len(lead):]
            running = None  # per example (all carried values batched then): does this iteration count?
            with interpreting(builder):
                if per_example_trips:
                    trips_front = moveaxis(trips, trips_dim, 0)
                    running = lt_p.bind(broadcast_in_dim_p.bind(body_block.params[0], shape=(size,),
                                                                broadcast_dimensions=()), trips_front)
                elif pred_batched and all(batched):
                    cond = op.regions[0]
                    (running,), (running_dim,) = engine.region_yields(cond, cond.params, new_params,
                                                                      [0] * len(batched))
                    running = _at_front(engine, running, running_dim)
            if running is None:
                values, dims = engine.region_yields(body, body_params, new_params,
                                                    [0 if bat else None for bat in batched])
            else:
                with _only_where(engine, running, [body], new_params) as guarded:
                    values, dims = engine.region_yields(body, body_params, guarded, [0] * len(batched))
        grown = [bat or d is not None for bat, d in zip(batched, dims)]
        if grown == batched:
            break
        batched = grown
    else:
        raise TransformError("the batching of a loop's carried values does not settle")
    with builder.reopen(body_block), interpreting(builder):
        outs = [_at_front(engine, v, d) if bat else v for v, d, bat in zip(values, dims, batched)]
        if running is not None:  # examples past their end (trip count, condition false) keep their values
            outs = [_select_rows(running, new, old) for new, old in zip(outs, new_params)]
        body_block.results = [builder.operand(o) for o in outs]
    regions = [body_block]
    if not counted:
        with builder.region(avals) as cond_block:
            values, dims = engine.region_yields(op.regions[0], op.regions[0].params, cond_block.params,
                                                [0 if bat else None for bat in batched])
            with interpreting(builder):
                pred = values[0] if dims[0] is None else reduce_or_p.bind(moveaxis(values[0], dims[0], 0), axes=(0,))
            cond_block.results = [builder.operand(pred)]
        regions = [cond_block, body_block]
    with interpreting(builder):
        init_values = [_at_front(engine, v, d) if bat else v for (v, d), bat in zip(init, batched)]
    with interpreting(builder):
        trip = reduce_max_p.bind(moveaxis(trips, trips_dim, 0), axes=(0,)) if per_example_trips else trips
    lead_operands = [builder.operand(trip)] if counted else []
    results = [Value(a, r.name) for a, r in zip(avals, op.results)]
    builder.emit(Op(op.prim, lead_operands + [builder.operand(v) for v in init_values], dict(op.params), results,
                    regions=regions, loc=op.loc))
    for r, new, bat in zip(op.results, results, batched):
        engine.write(r, new, 0 if bat else None)


def _select_rows(pred: Any, new: Any, old: Any) -> Any:
    """Per example: ``new`` where the example's ``pred`` holds, else ``old`` (batch axis first)."""
    aval = new.aval
    if isinstance(aval, StackType):
        return new  # a stack only grows while its example runs: pushes are masked by what is read back
    w = pred if len(aval.shape) == 1 else broadcast_in_dim_p.bind(pred, shape=aval.shape, broadcast_dimensions=(0,))
    return select_n_p.bind(w, old, new)


def _stack_vmap(engine: BatchEngine, op: Op) -> None:
    """A batched stack holds batched entries; ``stack_get[lanes]`` reads one entry per example."""
    builder = engine.builder
    args = [engine.read(v) for v in op.operands]
    # each example reads its own entry; a read that already has lanes (an inner vmap's) gets one more axis of
    # them when its stack is batched again, the index broadcast along it if it is not
    indexed = op.prim in (stack_get_p, stack_add_p)
    lanes = indexed and (args[1][1] is not None or (op.params.get("lanes") and args[0][1] is not None))
    batched = any(d is not None for _, d in args)
    if op.prim is stack_add_p and batched and engine.masks:  # an example not running here adds nothing
        lanes = True
    with interpreting(builder):
        if op.prim is stack_add_p and batched:  # (a stack_add's index is broadcast only for lanes)
            operands = [_at_front(engine, *args[0]), _at_front(engine, *args[1]) if lanes else args[1][0],
                        _at_front(engine, *args[2])]
            if engine.masks:
                operands[1] = _masked_index(engine, operands[1])
        elif (op.prim is stack_push_p and batched) or lanes:
            operands = [_at_front(engine, *args[0]), _at_front(engine, *args[1])]
        else:
            operands = [v for v, _ in args]
    out_avals = [r.aval for r in op.results]
    if batched and op.prim in (stack_push_p, stack_get_p, stack_add_p):
        elem = operands[0].aval
        out_avals = [elem] if op.prim is not stack_get_p else [elem.elem]
    results = [Value(a, r.name) for a, r in zip(out_avals, op.results)]
    params = dict(op.params, lanes=True) if lanes else dict(op.params)
    builder.emit(Op(op.prim, [builder.operand(x) for x in operands], params, results, loc=op.loc))
    dim = 0 if batched and op.prim in (stack_push_p, stack_get_p, stack_add_p) else None
    for r, new in zip(op.results, results):
        engine.write(r, new, dim)


def _masked_index(engine: BatchEngine, index: Any) -> Any:
    """Per-example entries of a ``stack_add``, -1 (nothing added) for the examples the masks exclude."""
    mask = engine.masks[0]
    for m in engine.masks[1:]:
        mask = and_p.bind(mask, m)
    shape = index.aval.shape
    if len(shape) > 1:  # (lanes of an inner vmap as well: the mask is along the first axis)
        mask = broadcast_in_dim_p.bind(mask, shape=shape, broadcast_dimensions=(0,))
    none = broadcast_in_dim_p.bind(np.asarray(-1, index.aval.dtype), shape=shape, broadcast_dimensions=())
    return select_n_p.bind(mask, none, index)


cond_p.def_vmap(_cond_vmap)
while_p.def_vmap(_loop_vmap)
for_p.def_vmap(_loop_vmap)
scan_p.def_unsupported("vmap", "not implemented for 'scan' ops yet (lax.scan compiles to 'for' loops)")
for _p in (stack_new_p, stack_push_p, stack_get_p, stack_size_p, stack_add_p):
    _p.def_vmap(_stack_vmap)
