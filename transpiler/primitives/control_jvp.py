"""Forward mode of the ops that hold regions (``cond``, ``while``, ``for``, ``scan``) and of stacks: op rules.

Control flow maps to control flow: a ``cond`` yields its branches' tangents as extra results; a loop carries
the tangents of its carried values, those that can become non-zero (found by transforming the body until
the set of non-zero tangents stops growing); a stack's tangent is a stack of the tangents, pushed and read
in step with it. Tangents known to be zero are never materialised, so they cost nothing.
"""

from __future__ import annotations

from typing import Any, Sequence

from srcjax.transpiler.ir import Block, Op, Value
from srcjax.transpiler.primitives.ad import Zero, has_tangent, is_differentiable, tangent_aval
from srcjax.transpiler.primitives.ad import instantiate as _instantiate
from srcjax.transpiler.primitives.control import cond_p, for_p, scan_p, stack_add_p, stack_get_p, stack_new_p, \
    stack_push_p, stack_size_p, while_p
from srcjax.transpiler.primitives.engine import JVPEngine
from srcjax.transpiler.types import StackType, TensorType


def instantiate(engine: JVPEngine, t: Any) -> Any:
    """A materialised tangent; a zero stack is a new empty stack (only loops carry stacks, empty on entry)."""
    if isinstance(t, Zero) and isinstance(t.aval, StackType):
        fresh = Value(t.aval)
        engine.builder.emit(Op(stack_new_p, [], {"elem": t.aval.elem}, [fresh]))
        return fresh
    return _instantiate(t)


def _nonzero(t: Any, aval: Any) -> bool:
    return not isinstance(t, Zero) and has_tangent(aval)


def _region(engine: JVPEngine, block: Block, params: Sequence[Value], param_tangents: Sequence[Any],
            new_params: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Transform a region into the builder's current block: its yields' primals and tangents."""
    for p, new, t in zip(params, new_params, param_tangents):
        engine.write(p, new, t)
    engine.block(block)
    return [engine.read(r) for r in block.results], [engine.tangent(r) for r in block.results]


def _tangent_results(results: Sequence[Value], nonzero: Sequence[bool]) -> list[Value]:
    return [Value(tangent_aval(r.aval), f"{r.name}_dot" if r.name else None) for r, nz in zip(results, nonzero) if nz]


def _cond_jvp(engine: JVPEngine, op: Op) -> None:
    builder = engine.builder
    pred = engine.read(op.operands[0])
    blocks, outs = [], []
    for branch in op.regions:
        with builder.region() as block:
            primals, tangents = _region(engine, branch, [], [], [])
        blocks.append(block)
        outs.append((primals, tangents))
    nonzero = [any(not isinstance(t[i], Zero) for _, t in outs) for i in range(len(op.results))]
    for block, (primals, tangents) in zip(blocks, outs):
        with builder.reopen(block):
            block.results = [builder.operand(p) for p in primals] + [
                builder.operand(instantiate(engine, t)) for t, nz in zip(tangents, nonzero) if nz]
    results = [Value(r.aval, r.name) for r in op.results]
    tangent_results = _tangent_results(op.results, nonzero)
    builder.emit(Op(cond_p, [builder.operand(pred)], {}, results + tangent_results, regions=blocks, loc=op.loc))
    it = iter(tangent_results)
    for r, new, nz in zip(op.results, results, nonzero):
        engine.write(r, new, next(it) if nz else None)


def _loop_jvp(engine: JVPEngine, op: Op) -> None:
    """``while``/``for``: carry the tangents of the carried values that can become non-zero."""
    builder = engine.builder
    counted = op.prim is for_p
    operands = op.operands[1:] if counted else op.operands
    body = op.regions[-1]
    body_params = body.params[1:] if counted else body.params
    init = [engine.read(v) for v in operands]
    init_t = [engine.tangent(v) for v in operands]
    nonzero = [_nonzero(t, v.aval) for t, v in zip(init_t, operands)]
    while True:  # the fixed point of which carried tangents are non-zero
        carried_avals = [v.aval for v in operands] + [tangent_aval(v.aval) for v, nz in zip(operands, nonzero) if nz]
        lead = [TensorType(body.params[0].aval.dtype, ())] if counted else []
        with builder.region(lead + carried_avals) as new_body:
            params = new_body.params[1:] if counted else new_body.params
            if counted:
                engine.write(body.params[0], new_body.params[0])
            primal_params, tangent_params = params[: len(operands)], iter(params[len(operands):])
            tangents = [next(tangent_params) if nz else None for nz in nonzero]
            out_p, out_t = _region(engine, body, body_params, tangents, primal_params)
        grown = [nz or _nonzero(t, v.aval) for nz, t, v in zip(nonzero, out_t, operands)]
        if grown == nonzero:
            break
        nonzero = grown
    with builder.reopen(new_body):
        new_body.results = [builder.operand(p) for p in out_p] + [
            builder.operand(instantiate(engine, t)) for t, nz in zip(out_t, nonzero) if nz]
    regions = [new_body]
    if op.prim is while_p:
        cond = op.regions[0]
        with builder.region(carried_avals) as new_cond:
            for p, new in zip(cond.params, new_cond.params[: len(operands)]):
                engine.write(p, new)
            engine.block(cond)
            new_cond.results = [builder.operand(engine.read(cond.results[0]))]
        regions = [new_cond, new_body]
    results = [Value(r.aval, r.name) for r in op.results]
    tangent_results = _tangent_results(op.results, nonzero)
    init_tangents = [builder.operand(instantiate(engine, t)) for t, nz in zip(init_t, nonzero) if nz]
    lead_operands = [builder.operand(engine.read(op.operands[0]))] if counted else []
    builder.emit(Op(op.prim, lead_operands + [builder.operand(v) for v in init] + init_tangents, dict(op.params),
                    results + tangent_results, regions=regions, loc=op.loc))
    it = iter(tangent_results)
    for r, new, nz in zip(op.results, results, nonzero):
        engine.write(r, new, next(it) if nz else None)


def _scan_jvp(engine: JVPEngine, op: Op) -> None:
    """The body's params are (carry, carry tangents, xs slices, xs tangents); its yields (carry, carry tangents,
    ys, ys tangents): carried tangents join the carry, those of the slices and outputs the scanned values."""
    builder = engine.builder
    n = op.params["num_carry"]
    (body,) = op.regions
    init, xs = op.operands[:n], op.operands[n:]
    carry_t = [engine.tangent(v) for v in init]
    xs_t = [engine.tangent(v) for v in xs]
    nz_carry = [not isinstance(t, Zero) and is_differentiable(v.aval) for t, v in zip(carry_t, init)]
    nz_xs = [not isinstance(t, Zero) and is_differentiable(v.aval) for t, v in zip(xs_t, xs)]
    while True:
        slice_avals = [v.aval.update(shape=v.aval.shape[1:]) for v in xs]
        avals = ([v.aval for v in init] + slice_avals + [tangent_aval(v.aval) for v, nz in zip(init, nz_carry) if nz]
                 + [tangent_aval(a) for a, nz in zip(slice_avals, nz_xs) if nz])
        with builder.region(avals) as new_body:
            params = list(new_body.params)
            primal = params[: n + len(xs)]
            rest = iter(params[n + len(xs):])
            tangents = [next(rest) if nz else None for nz in nz_carry] + [next(rest) if nz else None for nz in nz_xs]
            out_p, out_t = _region(engine, body, body.params, tangents, primal)
        grown = [nz or (not isinstance(t, Zero) and is_differentiable(v.aval))
                 for nz, t, v in zip(nz_carry, out_t[:n], init)]
        if grown == nz_carry:
            break
        nz_carry = grown
    nz_ys = [not isinstance(t, Zero) and is_differentiable(r.aval) for t, r in zip(out_t[n:], body.results[n:])]
    with builder.reopen(new_body):
        new_body.results = ([builder.operand(p) for p in out_p[:n]]
                            + [builder.operand(instantiate(engine, t)) for t, nz in zip(out_t[:n], nz_carry) if nz]
                            + [builder.operand(p) for p in out_p[n:]]
                            + [builder.operand(instantiate(engine, t)) for t, nz in zip(out_t[n:], nz_ys) if nz])
    # the body's params were made as (carry, xs slices, carry tangents, xs tangents): reorder them
    k = n + sum(nz_carry)
    p = new_body.params
    carry_params = p[:n] + [p[n + len(xs) + i] for i in range(sum(nz_carry))]
    xs_params = p[n: n + len(xs)] + p[n + len(xs) + sum(nz_carry):]
    new_body.params = carry_params + xs_params
    operands = ([builder.operand(engine.read(v)) for v in init]
                + [builder.operand(instantiate(engine, t)) for t, nz in zip(carry_t, nz_carry) if nz]
                + [builder.operand(engine.read(v)) for v in xs]
                + [builder.operand(instantiate(engine, t)) for t, nz in zip(xs_t, nz_xs) if nz])
    carry_results = [Value(r.aval, r.name) for r in op.results[:n]]
    carry_tangents = [Value(tangent_aval(r.aval)) for r, nz in zip(op.results[:n], nz_carry) if nz]
    ys_results = [Value(r.aval, r.name) for r in op.results[n:]]
    ys_tangents = [Value(tangent_aval(r.aval)) for r, nz in zip(op.results[n:], nz_ys) if nz]
    builder.emit(Op(scan_p, operands, dict(op.params, num_carry=k), carry_results + carry_tangents + ys_results
                    + ys_tangents, regions=[new_body], loc=op.loc))
    ct, yt = iter(carry_tangents), iter(ys_tangents)
    for r, new, nz in zip(op.results[:n], carry_results, nz_carry):
        engine.write(r, new, next(ct) if nz else None)
    for r, new, nz in zip(op.results[n:], ys_results, nz_ys):
        engine.write(r, new, next(yt) if nz else None)


def _stack_jvp(engine: JVPEngine, op: Op) -> None:
    """A stack's tangent is a stack of the tangents, pushed and read in step with it."""
    builder = engine.builder
    operands = [builder.operand(engine.read(v)) for v in op.operands]
    results = [Value(r.aval, r.name) for r in op.results]
    builder.emit(Op(op.prim, operands, dict(op.params), results, loc=op.loc))
    tangents = [engine.tangent(v) for v in op.operands]
    if op.prim is stack_push_p and not all(isinstance(t, Zero) for t in tangents):
        stack_t = _tangent_stack(engine, op.operands[0], tangents[0])
        pushed = Value(stack_t.aval)
        builder.emit(Op(stack_push_p, [stack_t, builder.operand(instantiate(engine, tangents[1]))], {}, [pushed]))
        engine.write(op.results[0], results[0], pushed)
        return
    if op.prim is stack_add_p and not all(isinstance(t, Zero) for t in (tangents[0], tangents[2])):
        stack_t = _tangent_stack(engine, op.operands[0], tangents[0])  # (an empty stack is all zeros)
        added = stack_t
        if not isinstance(tangents[2], Zero):
            added = Value(stack_t.aval)
            builder.emit(Op(stack_add_p, [stack_t, operands[1], builder.operand(tangents[2])], dict(op.params),
                            [added]))
        engine.write(op.results[0], results[0], added)
        return
    if op.prim is stack_get_p and not isinstance(tangents[0], Zero):
        got = Value(tangent_aval(op.results[0].aval))
        builder.emit(Op(stack_get_p, [tangents[0], operands[1]], dict(op.params), [got]))  # lanes too
        engine.write(op.results[0], results[0], got)
        return
    for r, new in zip(op.results, results):
        engine.write(r, new)


def _tangent_stack(engine: JVPEngine, stack: Value, tangent: Any) -> Value:
    """The tangent stack of ``stack``: a new empty one when the stack had none (pushes start together)."""
    if not isinstance(tangent, Zero):
        return tangent
    fresh = Value(tangent_aval(stack.aval))  # (a stack of stacks too: of their tangent stacks)
    engine.builder.emit(Op(stack_new_p, [], {"elem": fresh.aval.elem}, [fresh]))
    return fresh


cond_p.def_jvp(_cond_jvp)
while_p.def_jvp(_loop_jvp)
for_p.def_jvp(_loop_jvp)
scan_p.def_jvp(_scan_jvp)
for _p in (stack_new_p, stack_push_p, stack_get_p, stack_size_p, stack_add_p):
    _p.def_jvp(_stack_jvp)
