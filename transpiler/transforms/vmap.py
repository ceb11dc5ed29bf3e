"""Batching: ``vmap_function(fn, in_dims, size)`` is an IR function computing ``fn`` on a whole batch at once.

The engine walks the IR with a map old value -> (new value, batch axis or None) and asks each primitive's
batching rule for its batched form; values that do not depend on a batched input stay unbatched.
Control flow: a ``cond`` whose predicate is the same for the whole batch stays a ``cond``; one whose
predicate differs between examples runs every branch and selects per example. A loop whose condition
differs between examples runs until every example is done, each example's values frozen (selected) once
its own condition is false. Collectives over the batch's named axis (``psum``, ``pmax``, ``all_gather``,
``axis_index`` ...) reduce or gather along the batch axis.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from srcjax.transpiler.builder import Builder
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.passes import clean
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.batching import bdim_at_front, moveaxis
from srcjax.transpiler.primitives.control import cond_p, for_p, scan_p, stack_get_p, stack_new_p, stack_push_p, \
    stack_size_p, while_p
from srcjax.transpiler.primitives.elementwise import convert_element_type_p, select_n_p
from srcjax.transpiler.primitives.elementwise import lt_p
from srcjax.transpiler.primitives.reduce import reduce_max_p, reduce_or_p
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p
from srcjax.transpiler.transforms.jvp import TransformError
from srcjax.transpiler.types import StackType, TensorType


def batched_aval(aval: Any, dim: int | None, size: int) -> Any:
    if dim is None:
        return aval
    if isinstance(aval, StackType):
        return StackType(batched_aval(aval.elem, dim, size))
    return aval.update(shape=(*aval.shape[:dim], size, *aval.shape[dim:]))


class Batcher:
    def __init__(self, builder: Builder, size: int, axis_name: Any):
        self.builder, self.size, self.axis_name = builder, size, axis_name
        self.env: dict[int, tuple[Any, int | None]] = {}

    def read(self, v: Value) -> tuple[Any, int | None]:
        if isinstance(v, Literal):
            return v, None
        return self.env[id(v)]

    def write(self, old: Value, new: Any, dim: int | None) -> None:
        if isinstance(new, Value) and new.name is None and old.name is not None:
            new.name = old.name
        self.env[id(old)] = (new, dim)

    def at_front(self, x: Any, dim: int | None) -> Any:
        """A value with its batch axis first; unbatched values are broadcast (stacks: a new batched stack)."""
        aval = getattr(x, "aval", None)
        if isinstance(aval, StackType):
            if dim is not None:
                return x
            fresh = Value(StackType(batched_aval(aval.elem, 0, self.size)))
            self.builder.emit(Op(stack_new_p, [], {"elem": fresh.aval.elem}, [fresh]))
            return fresh
        return bdim_at_front(x, dim, self.size)

    # -- ops ---------------------------------------------------------------------------------------------------
    def block(self, block: Block) -> None:
        for op in block.ops:
            with self.builder.at(op.loc):
                self.op(op)

    def op(self, op: Op) -> None:
        special = CONTROL_VMAP.get(op.prim)
        if special is not None:
            special(self, op)
            return
        if op.prim.name in COLLECTIVES:
            COLLECTIVES[op.prim.name](self, op)
            return
        args, dims = zip(*(self.read(v) for v in op.operands)) if op.operands else ((), ())
        if all(d is None for d in dims):
            outs = op.prim.bind(*args, **op.params)
            for r, o in zip(op.results, outs if op.prim.multiple_results else [outs]):
                self.write(r, o, None)
            return
        rule = op.prim.vmap_rule
        if rule is None:
            raise TransformError(f"no batching rule for '{op.prim.name}' ({op.prim.family})")
        out, out_dim = rule(list(args), list(dims), **op.params)
        if op.prim.multiple_results:
            for r, o, d in zip(op.results, out, out_dim):
                self.write(r, o, d)
        else:
            self.write(op.results[0], out, out_dim)

    # -- regions -------------------------------------------------------------------------------------------------
    def region_yields(self, block: Block, params: Sequence[Value], new_params: Sequence[Any],
                      dims: Sequence[int | None]) -> tuple[list[Any], list[int | None]]:
        for p, new, d in zip(params, new_params, dims):
            self.write(p, new, d)
        self.block(block)
        read = [self.read(r) for r in block.results]
        return [v for v, _ in read], [d for _, d in read]


def _cond_vmap(b: Batcher, op: Op) -> None:
    builder = b.builder
    pred, pred_dim = b.read(op.operands[0])
    if pred_dim is not None:  # examples differ in the branch they take: run all, select per example
        outs = []
        for region in op.regions:
            values, dims = b.region_yields(region, [], [], [])
            outs.append(list(zip(values, dims)))
        which = moveaxis(pred, pred_dim, 0)
        # select_n picks case k for selector k: a bool cond's regions are (then, else), so reverse them
        ordered = outs[::-1] if op.operands[0].aval.dtype.kind == "b" else outs
        for i, r in enumerate(op.results):
            cases = [b.at_front(case[i][0], case[i][1]) for case in ordered]
            shape = (b.size, *r.aval.shape)
            w = which if not r.aval.shape else broadcast_in_dim_p.bind(which, shape=shape, broadcast_dimensions=(0,))
            b.write(r, select_n_p.bind(w, *cases), 0)
        return
    blocks, outs = [], []
    for region in op.regions:
        with builder.region() as block:
            values, dims = b.region_yields(region, [], [], [])
        blocks.append(block)
        outs.append((values, dims))
    batched = [any(dims[i] is not None for _, dims in outs) for i in range(len(op.results))]
    for block, (values, dims) in zip(blocks, outs):
        with builder.reopen(block), core.interpreting(builder):
            block.results = [builder.operand(b.at_front(v, d) if bat else v)
                             for v, d, bat in zip(values, dims, batched)]
    results = [Value(batched_aval(r.aval, 0 if bat else None, b.size), r.name) for r, bat in zip(op.results, batched)]
    builder.emit(Op(cond_p, [builder.operand(pred)], {}, results, regions=blocks, loc=op.loc))
    for r, new, bat in zip(op.results, results, batched):
        b.write(r, new, 0 if bat else None)


def _loop_vmap(b: Batcher, op: Op) -> None:
    """``while``/``for`` with carried values batched (axis 0) as needed; a per-example condition masks."""
    builder = b.builder
    counted = op.prim is for_p
    body = op.regions[-1]
    operands = op.operands[1:] if counted else op.operands
    body_params = body.params[1:] if counted else body.params
    trips, trips_dim = b.read(op.operands[0]) if counted else (None, None)
    per_example_trips = counted and trips_dim is not None  # run the longest; others stop (masked) at theirs
    init = [b.read(v) for v in operands]
    batched = [d is not None for _, d in init]
    if per_example_trips:
        batched = [True] * len(batched)
    masked = False
    for _attempt in range(len(operands) + 3):
        avals = [batched_aval(v.aval, 0 if bat else None, b.size) for v, bat in zip(operands, batched)]
        pred_batched = False
        if not counted:  # does the condition differ between examples?
            with builder.region(avals) as cond_block:
                _, dims = b.region_yields(op.regions[0], op.regions[0].params, cond_block.params,
                                          [0 if bat else None for bat in batched])
            pred_batched = dims[0] is not None
        if pred_batched and not all(batched):
            batched = [True] * len(batched)
            continue
        lead = [body.params[0].aval] if counted else []
        with builder.region(lead + avals) as body_block:
            if counted:
                b.write(body.params[0], body_block.params[0], None)
            new_params = body_block.params[len(lead):]
            values, dims = b.region_yields(body, body_params, new_params, [0 if bat else None for bat in batched])
        grown = [bat or d is not None for bat, d in zip(batched, dims)]
        if grown == batched:
            masked = pred_batched
            break
        batched = grown
    else:
        raise TransformError("the batching of a loop's carried values does not settle")
    with builder.reopen(body_block), core.interpreting(builder):
        outs = [b.at_front(v, d) if bat else v for v, d, bat in zip(values, dims, batched)]
        if per_example_trips:
            trips_front = moveaxis(trips, trips_dim, 0)
            running = lt_p.bind(broadcast_in_dim_p.bind(body_block.params[0], shape=(b.size,),
                                                        broadcast_dimensions=()), trips_front)
            outs = [_select_rows(running, new, old) for new, old in zip(outs, new_params)]
        if masked:  # examples whose condition is already false keep their values
            cond = op.regions[0]
            (pred,), (pred_dim,) = b.region_yields(cond, cond.params, new_params,
                                                   [0 if bat else None for bat in batched])
            pred = b.at_front(pred, pred_dim)
            outs = [_select_rows(pred, new, old) for new, old in zip(outs, new_params)]
        body_block.results = [builder.operand(o) for o in outs]
    regions = [body_block]
    if not counted:
        with builder.region(avals) as cond_block:
            values, dims = b.region_yields(op.regions[0], op.regions[0].params, cond_block.params,
                                           [0 if bat else None for bat in batched])
            with core.interpreting(builder):
                pred = values[0] if dims[0] is None else reduce_or_p.bind(moveaxis(values[0], dims[0], 0), axes=(0,))
            cond_block.results = [builder.operand(pred)]
        regions = [cond_block, body_block]
    with core.interpreting(builder):
        init_values = [b.at_front(v, d) if bat else v for (v, d), bat in zip(init, batched)]
    with core.interpreting(builder):
        trip = reduce_max_p.bind(moveaxis(trips, trips_dim, 0), axes=(0,)) if per_example_trips else trips
    lead_operands = [builder.operand(trip)] if counted else []
    results = [Value(a, r.name) for a, r in zip(avals, op.results)]
    builder.emit(Op(op.prim, lead_operands + [builder.operand(v) for v in init_values], dict(op.params), results,
                    regions=regions, loc=op.loc))
    for r, new, bat in zip(op.results, results, batched):
        b.write(r, new, 0 if bat else None)


def _select_rows(pred: Any, new: Any, old: Any) -> Any:
    """Per example: ``new`` where the example's ``pred`` holds, else ``old`` (batch axis first)."""
    aval = new.aval
    if isinstance(aval, StackType):
        return new  # a stack only grows while its example runs: pushes are masked by what is read back
    w = pred if len(aval.shape) == 1 else broadcast_in_dim_p.bind(pred, shape=aval.shape, broadcast_dimensions=(0,))
    return select_n_p.bind(w, old, new)


def _stack_vmap(b: Batcher, op: Op) -> None:
    builder = b.builder
    args = [b.read(v) for v in op.operands]
    lanes = op.prim is stack_get_p and args[1][1] is not None  # each example reads its own entry
    batched = any(d is not None for _, d in args)
    with core.interpreting(builder):
        if op.prim is stack_push_p and batched:
            operands = [b.at_front(*args[0]), b.at_front(*args[1])]
        elif lanes:
            operands = [b.at_front(*args[0]), moveaxis(*args[1], 0)]
        else:
            operands = [v for v, _ in args]
    out_avals = [r.aval for r in op.results]
    if batched and op.prim in (stack_push_p, stack_get_p):
        elem = operands[0].aval
        out_avals = [elem] if op.prim is stack_push_p else [elem.elem]
    results = [Value(a, r.name) for a, r in zip(out_avals, op.results)]
    params = dict(op.params, lanes=True) if lanes else dict(op.params)
    builder.emit(Op(op.prim, [builder.operand(x) for x in operands], params, results, loc=op.loc))
    dim = 0 if batched and op.prim in (stack_push_p, stack_get_p) else None
    for r, new in zip(op.results, results):
        b.write(r, new, dim)


def _scan_vmap(b: Batcher, op: Op) -> None:
    raise TransformError("vmap of 'scan' ops is not supported yet (lax.scan compiles to 'for' loops)")


def _custom_vmap(b: Batcher, op: Op) -> None:
    """A custom-rule call stays one, over the batched function, with the rules batched as well (the rule
    object's ``batched(dims, size)`` maps the per-example rules over the batch)."""
    builder = b.builder
    (region,) = op.regions
    args = [b.read(v) for v in op.operands]
    batched = any(d is not None for _, d in args)
    with core.interpreting(builder):
        values = [b.at_front(v, d) if d is not None else v for v, d in args]
    dims = [0 if d is not None else None for _, d in args]
    with builder.region([getattr(v, "aval", None) or batched_aval(p.aval, None, b.size)
                         for v, p in zip(values, region.params)]) as block:
        outs, out_dims = b.region_yields(region, region.params, block.params, dims)
        with core.interpreting(builder):
            outs = [b.at_front(v, d) if batched else v for v, d in zip(outs, out_dims)]
        block.results = [builder.operand(v) for v in outs]
    rule = op.params["rule"]
    params = dict(op.params, rule=rule.batched(dims, b.size)) if batched else dict(op.params)
    results = [Value(r.aval, r.name) for r in block.results]
    builder.emit(Op(op.prim, [builder.operand(v) for v in values], params, results, regions=[block], loc=op.loc))
    for r, new in zip(op.results, results):
        b.write(r, new, 0 if batched else None)


def vmap_function(fn: Function, in_dims: Sequence[int | None], size: int, axis_name: Any = None,
                  out_dims: Sequence[int | None] | None = None) -> Function:
    """``fn`` over a batch of ``size``: param i is batched along ``in_dims[i]`` (``None``: shared). Each
    result is batched along ``out_dims[i]`` (default 0; ``None`` only for results that are not batched)."""
    builder = Builder(f"vmap_{fn.name}", fn.source)
    batcher = Batcher(builder, size, axis_name)
    for p, d in zip(fn.params, in_dims):
        new = builder.param(batched_aval(p.aval, d, size), p.name)
        batcher.write(p, new, d)
    with core.interpreting(builder):
        for value, data in fn.consts:
            batcher.write(value, builder.operand(data), None)
        batcher.block(fn.body)
        outs = []
        wanted = list(out_dims) if out_dims is not None else [0] * len(fn.results)
        for r, want in zip(fn.results, wanted):
            v, d = batcher.read(r)
            if want is None:
                if d is not None:
                    raise ValueError("vmap has mapped output but out_axes is None")
                outs.append(v)
                continue
            v = bdim_at_front(v, d, size)
            outs.append(moveaxis(v, 0, want) if want != 0 else v)
        return clean(builder.finish(outs))


# -- collectives over the batch's named axis -----------------------------------------------------------------------
def _named(b: Batcher, op: Op) -> bool:
    axes = op.params.get("axes", op.params.get("axis_name"))
    axes = axes if isinstance(axes, tuple) else (axes,)
    return b.axis_name is not None and b.axis_name in axes


def _collective(reduce: Callable[[Any], Any]) -> Callable[[Batcher, Op], None]:
    def rule(b: Batcher, op: Op) -> None:
        (x, d), = [b.read(v) for v in op.operands]
        if not _named(b, op):
            out = op.prim.bind(x, **op.params)
            b.write(op.results[0], out, d)
            return
        x = b.at_front(x, d)
        b.write(op.results[0], reduce(x), None)

    return rule


def _psum(x: Any) -> Any:
    from srcjax.transpiler.primitives.reduce import reduce_sum_p

    return reduce_sum_p.bind(x, axes=(0,))


def _pmax(x: Any) -> Any:
    from srcjax.transpiler.primitives.reduce import reduce_max_p

    return reduce_max_p.bind(x, axes=(0,))


def _pmin(x: Any) -> Any:
    from srcjax.transpiler.primitives.reduce import reduce_min_p

    return reduce_min_p.bind(x, axes=(0,))


def _pmean(x: Any) -> Any:
    from srcjax.transpiler.primitives.elementwise import div_p

    total = _psum(x)
    count = np.asarray(x.aval.shape[0], total.aval.dtype)
    return div_p.bind(total, convert_element_type_p.bind(count, new_dtype=total.aval.dtype, weak_type=False)
                      if total.aval.shape == () else broadcast_in_dim_p.bind(count, shape=total.aval.shape,
                                                                             broadcast_dimensions=()))


def _axis_index(b: Batcher, op: Op) -> None:
    from srcjax.transpiler.primitives.shape import iota_p

    if not _named(b, op):
        b.write(op.results[0], op.prim.bind(**op.params), None)
        return
    b.write(op.results[0], iota_p.bind(dtype=np.dtype(np.int32), shape=(b.size,), dimension=0), 0)


def _all_gather(b: Batcher, op: Op) -> None:
    (x, d), = [b.read(v) for v in op.operands]
    if not _named(b, op):
        b.write(op.results[0], op.prim.bind(x, **op.params), d)
        return
    b.write(op.results[0], b.at_front(x, d), None)


COLLECTIVES: dict[str, Callable[[Batcher, Op], None]] = {
    "psum": _collective(_psum),
    "pmax": _collective(_pmax),
    "pmin": _collective(_pmin),
    "pmean": _collective(_pmean),
    "all_gather": _all_gather,
    "axis_index": _axis_index,
}

CONTROL_VMAP: dict[core.Primitive, Callable[[Batcher, Op], None]] = {
    cond_p: _cond_vmap,
    while_p: _loop_vmap,
    for_p: _loop_vmap,
    scan_p: _scan_vmap,
    stack_new_p: _stack_vmap,
    stack_push_p: _stack_vmap,
    stack_get_p: _stack_vmap,
    stack_size_p: _stack_vmap,
}


def _register_custom() -> None:
    from srcjax.transpiler.primitives.custom import custom_jvp_call_p, custom_vjp_call_p

    CONTROL_VMAP[custom_jvp_call_p] = _custom_vmap
    CONTROL_VMAP[custom_vjp_call_p] = _custom_vmap


_register_custom()

__all__ = ["vmap_function", "batched_aval", "TensorType"]
