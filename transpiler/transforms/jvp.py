"""Forward mode: ``jvp_function(fn)`` is an IR function computing ``fn`` and its directional derivative.

The engine walks the IR with two maps, old value -> new primal value and old value -> tangent, and asks
each primitive's JVP rule for its tangent. Tangents known to be zero stay symbolic (``Zero``) and cost
nothing; integer and bool values never have tangents. Control flow maps to control flow: a ``cond``
yields its branches' tangents, a loop carries the tangents of its carried values (found by iterating
the body to a fixed point of which tangents are non-zero).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from srcjax.transpiler.builder import Builder
from srcjax.transpiler.passes import clean
from srcjax.transpiler.interpret import Evaluator
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.ad import Zero, is_differentiable, jvp_of, tangent_aval
from srcjax.transpiler.primitives.ad import instantiate as _instantiate
from srcjax.transpiler.primitives.control import cond_p, for_p, scan_p, stack_get_p, stack_new_p, stack_push_p, \
    stack_size_p, while_p
from srcjax.transpiler.primitives.custom import custom_jvp_call_p, custom_vjp_call_p
from srcjax.transpiler.types import StackType, TensorType


class TransformError(Exception):
    """A rule a transform needs is missing (names the primitive, the transform and where to add it)."""


class Env:
    """Old values -> new values (primal) and old values -> tangents."""

    def __init__(self, builder: Builder):
        self.builder = builder
        self.primal: dict[int, Any] = {}
        self.tangent: dict[int, Any] = {}

    def read(self, v: Value) -> Any:
        if isinstance(v, Literal):
            return v
        return self.primal[id(v)]

    def tan(self, v: Value) -> Any:
        t = self.tangent.get(id(v))
        if t is None:
            return Zero(tangent_aval(v.aval))
        return t

    def write(self, v: Value, value: Any, tangent: Any = None) -> None:
        self.primal[id(v)] = value
        if tangent is not None and not isinstance(tangent, Zero) and (
                isinstance(v.aval, StackType) or is_differentiable(v.aval)):
            self.tangent[id(v)] = tangent
        else:
            self.tangent.pop(id(v), None)


def jvp_function(fn: Function, wrt: Sequence[bool] | None = None) -> Function:
    """``(*primals, *tangents) -> (*outs, *out_tangents)``; tangent params only for differentiable params in
    ``wrt`` (default: all), tangent results for every result (zeros where they do not depend on inputs)."""
    wrt = list(wrt) if wrt is not None else [True] * len(fn.params)
    builder = Builder(f"jvp_{fn.name}", fn.source)
    env = Env(builder)
    primals = [builder.param(p.aval, p.name) for p in fn.params]
    tangent_params = []
    for p, new, on in zip(fn.params, primals, wrt):
        if on and is_differentiable(p.aval):
            t = builder.param(tangent_aval(p.aval), f"{p.name}_dot" if p.name else None)
            tangent_params.append(t)
            env.write(p, new, t)
        else:
            env.write(p, new)
    with core.interpreting(builder):
        for value, data in fn.consts:
            env.write(value, builder.operand(data))
        jvp_block(fn.body, env)
        outs = [env.read(r) for r in fn.results]
        out_tangents = [instantiate(env.tan(r)) for r in fn.results]
        return clean(builder.finish(outs + out_tangents))


def instantiate(t: Any) -> Any:
    """A materialised tangent; a zero stack is a new empty stack (only loops carry stacks, empty on entry)."""
    if isinstance(t, Zero) and isinstance(t.aval, StackType):
        from srcjax.transpiler.primitives import core as _core

        builder = _core.current_interpreter()
        fresh = Value(t.aval)
        builder.emit(Op(stack_new_p, [], {"elem": t.aval.elem}, [fresh]))
        return fresh
    return _instantiate(t)


def jvp_block(block: Block, env: Env) -> None:
    for op in block.ops:
        with env.builder.at(op.loc):
            jvp_op(op, env)


def jvp_op(op: Op, env: Env) -> None:
    rule = CONTROL_JVP.get(op.prim)
    if rule is not None:
        rule(op, env)
        return
    primals = [env.read(v) for v in op.operands]
    tangents = [env.tan(v) for v in op.operands]
    differentiable_out = any(is_differentiable(r.aval) for r in op.results)
    if all(isinstance(t, Zero) for t in tangents) or not differentiable_out:
        outs = op.prim.bind(*primals, **op.params)
        outs = outs if op.prim.multiple_results else [outs]
        for r, o in zip(op.results, outs):
            env.write(r, o)
        return
    jvp = jvp_of(op.prim)
    if jvp is None:
        if "jvp" in op.prim.no_rule:
            outs = op.prim.bind(*primals, **op.params)
            outs = outs if op.prim.multiple_results else [outs]
            for r, o in zip(op.results, outs):
                env.write(r, o)
            return
        raise TransformError(f"no JVP rule for '{op.prim.name}' ({op.prim.family})")
    out, tangent = jvp(primals, tangents, **op.params)
    if op.prim.multiple_results:
        for r, o, t in zip(op.results, out, tangent):
            env.write(r, o, t)
    else:
        env.write(op.results[0], out, tangent)


# -- control flow -----------------------------------------------------------------------------------------------
def _has_tangent(aval: Any) -> bool:
    return isinstance(aval, StackType) or is_differentiable(aval)


def _region_jvp(env: Env, block: Block, params: Sequence[Value], param_tangents: Sequence[Any],
                new_params: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Run a region's JVP in the current builder block: returns its yields' primals and tangents."""
    for p, new, t in zip(params, new_params, param_tangents):
        env.write(p, new, t)
    jvp_block(block, env)
    return [env.read(r) for r in block.results], [env.tan(r) for r in block.results]


def _cond_jvp(op: Op, env: Env) -> None:
    builder = env.builder
    pred = env.read(op.operands[0])
    blocks, outs = [], []
    for branch in op.regions:
        with builder.region() as block:
            primals, tangents = _region_jvp(env, branch, [], [], [])
        blocks.append(block)
        outs.append((primals, tangents))
    nonzero = [any(not isinstance(t[i], Zero) for _, t in outs) for i in range(len(op.results))]
    for block, (primals, tangents) in zip(blocks, outs):
        with builder.reopen(block):
            block.results = [builder.operand(p) for p in primals] + [
                builder.operand(instantiate(t)) for t, nz in zip(tangents, nonzero) if nz]
    results = [Value(r.aval, r.name) for r in op.results]
    tangent_results = [Value(tangent_aval(r.aval), f"{r.name}_dot" if r.name else None)
                       for r, nz in zip(op.results, nonzero) if nz]
    builder.emit(Op(cond_p, [builder.operand(pred)], {}, results + tangent_results, regions=blocks, loc=op.loc))
    it = iter(tangent_results)
    for r, new, nz in zip(op.results, results, nonzero):
        env.write(r, new, next(it) if nz else None)


def _loop_jvp(op: Op, env: Env) -> None:
    """``while``/``for``: carry the tangents of the carried values that can become non-zero."""
    builder = env.builder
    counted = op.prim is for_p
    operands = op.operands[1:] if counted else op.operands
    body = op.regions[-1]
    body_params = body.params[1:] if counted else body.params
    init = [env.read(v) for v in operands]
    init_t = [env.tan(v) for v in operands]
    nonzero = [not isinstance(t, Zero) and _has_tangent(v.aval) for t, v in zip(init_t, operands)]
    while True:  # the fixed point of which carried tangents are non-zero
        carried_avals = [v.aval for v in operands] + [tangent_aval(v.aval) for v, nz in zip(operands, nonzero) if nz]
        lead = [TensorType(body.params[0].aval.dtype, ())] if counted else []
        with builder.region(lead + carried_avals) as new_body:
            params = new_body.params[1:] if counted else new_body.params
            if counted:
                env.write(body.params[0], new_body.params[0])
            primal_params, tangent_params = params[: len(operands)], iter(params[len(operands):])
            tangents = [next(tangent_params) if nz else None for nz in nonzero]
            out_p, out_t = _region_jvp(env, body, body_params, tangents, primal_params)
        grown = [nz or (not isinstance(t, Zero) and _has_tangent(v.aval))
                 for nz, t, v in zip(nonzero, out_t, operands)]
        if grown == nonzero:
            break
        nonzero = grown
    with builder.reopen(new_body):
        new_body.results = [builder.operand(p) for p in out_p] + [
            builder.operand(instantiate(t)) for t, nz in zip(out_t, nonzero) if nz]
    regions = [new_body]
    if op.prim is while_p:
        cond = op.regions[0]
        with builder.region(carried_avals) as new_cond:
            for p, new in zip(cond.params, new_cond.params[: len(operands)]):
                env.write(p, new)
            jvp_block(cond, env)
            new_cond.results = [builder.operand(env.read(cond.results[0]))]
        regions = [new_cond, new_body]
    results = [Value(r.aval, r.name) for r in op.results]
    tangent_results = [Value(tangent_aval(r.aval), f"{r.name}_dot" if r.name else None)
                       for r, nz in zip(op.results, nonzero) if nz]
    init_tangents = [builder.operand(instantiate(t)) for t, nz in zip(init_t, nonzero) if nz]
    lead_operands = [builder.operand(env.read(op.operands[0]))] if counted else []
    builder.emit(Op(op.prim, lead_operands + [builder.operand(v) for v in init] + init_tangents, dict(op.params),
                    results + tangent_results, regions=regions, loc=op.loc))
    it = iter(tangent_results)
    for r, new, nz in zip(op.results, results, nonzero):
        env.write(r, new, next(it) if nz else None)


def _scan_jvp(op: Op, env: Env) -> None:
    builder = env.builder
    n = op.params["num_carry"]
    (body,) = op.regions
    init, xs = op.operands[:n], op.operands[n:]
    carry_t = [env.tan(v) for v in init]
    xs_t = [env.tan(v) for v in xs]
    nz_carry = [not isinstance(t, Zero) and is_differentiable(v.aval) for t, v in zip(carry_t, init)]
    nz_xs = [not isinstance(t, Zero) and is_differentiable(v.aval) for t, v in zip(xs_t, xs)]
    n_ys = len(op.results) - n
    while True:
        slice_avals = [v.aval.update(shape=v.aval.shape[1:]) for v in xs]
        avals = ([v.aval for v in init] + slice_avals + [tangent_aval(v.aval) for v, nz in zip(init, nz_carry) if nz]
                 + [tangent_aval(a) for a, nz in zip(slice_avals, nz_xs) if nz])
        with builder.region(avals) as new_body:
            params = list(new_body.params)
            primal = params[: n + len(xs)]
            rest = iter(params[n + len(xs):])
            tangents = [next(rest) if nz else None for nz in nz_carry] + [next(rest) if nz else None for nz in nz_xs]
            out_p, out_t = _region_jvp(env, body, body.params, tangents, primal)
        grown = [nz or (not isinstance(t, Zero) and is_differentiable(v.aval))
                 for nz, t, v in zip(nz_carry, out_t[:n], init)]
        if grown == nz_carry:
            break
        nz_carry = grown
    nz_ys = [not isinstance(t, Zero) and is_differentiable(r.aval) for t, r in zip(out_t[n:], body.results[n:])]
    with builder.reopen(new_body):
        new_body.results = ([builder.operand(p) for p in out_p[:n]]
                            + [builder.operand(instantiate(t)) for t, nz in zip(out_t[:n], nz_carry) if nz]
                            + [builder.operand(p) for p in out_p[n:]]
                            + [builder.operand(instantiate(t)) for t, nz in zip(out_t[n:], nz_ys) if nz])
    # the body's params are (carry, carry tangents) then (xs slices, xs tangents): reorder to match
    k = n + sum(nz_carry)
    p = new_body.params
    carry_params = p[:n] + [p[n + len(xs) + i] for i in range(sum(nz_carry))]
    xs_params = p[n: n + len(xs)] + p[n + len(xs) + sum(nz_carry):]
    new_body.params = carry_params + xs_params
    operands = ([builder.operand(env.read(v)) for v in init]
                + [builder.operand(instantiate(t)) for t, nz in zip(carry_t, nz_carry) if nz]
                + [builder.operand(env.read(v)) for v in xs]
                + [builder.operand(instantiate(t)) for t, nz in zip(xs_t, nz_xs) if nz])
    carry_results = [Value(r.aval, r.name) for r in op.results[:n]]
    carry_tangents = [Value(tangent_aval(r.aval)) for r, nz in zip(op.results[:n], nz_carry) if nz]
    ys_results = [Value(r.aval, r.name) for r in op.results[n:]]
    ys_tangents = [Value(tangent_aval(r.aval)) for r, nz in zip(op.results[n:], nz_ys) if nz]
    params = dict(op.params, num_carry=k)
    builder.emit(Op(scan_p, operands, params, carry_results + carry_tangents + ys_results + ys_tangents,
                    regions=[new_body], loc=op.loc))
    ct, yt = iter(carry_tangents), iter(ys_tangents)
    for r, new, nz in zip(op.results[:n], carry_results, nz_carry):
        env.write(r, new, next(ct) if nz else None)
    for r, new, nz in zip(op.results[n:], ys_results, nz_ys):
        env.write(r, new, next(yt) if nz else None)
    assert n_ys == len(ys_results)


def _custom_jvp(op: Op, env: Env) -> None:
    """A custom_jvp call uses the user's rule; forward mode of a custom_vjp call is an error, as in JAX."""
    primals = [env.read(v) for v in op.operands]
    tangents = [env.tan(v) for v in op.operands]
    if op.prim is custom_jvp_call_p and not all(isinstance(t, Zero) for t in tangents):
        outs, touts = op.params["rule"].jvp_rule(primals, tangents)
        for r, o, t in zip(op.results, outs, touts):
            env.write(r, o, t)
        return
    if op.prim is custom_vjp_call_p and not all(isinstance(t, Zero) for t in tangents):
        raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")
    # no tangent flows in: the call itself, kept (a transformation of this program still finds its rules)
    for r, o in zip(op.results, Evaluator()._rebuild(env.builder, op, primals)):
        env.write(r, o)


def _stack_jvp(op: Op, env: Env) -> None:
    """A stack's tangent is a stack of the tangents, pushed and read in step with it."""
    builder = env.builder
    operands = [builder.operand(env.read(v)) for v in op.operands]
    results = [Value(r.aval, r.name) for r in op.results]
    builder.emit(Op(op.prim, operands, dict(op.params), results, loc=op.loc))
    tangents = [env.tan(v) for v in op.operands]
    if op.prim is stack_push_p and not all(isinstance(t, Zero) for t in tangents):
        stack_t = _tangent_stack(env, op.operands[0], tangents[0])
        pushed = Value(stack_t.aval)
        builder.emit(Op(stack_push_p, [stack_t, builder.operand(instantiate(tangents[1]))], {}, [pushed]))
        env.write(op.results[0], results[0], pushed)
        env.tangent[id(op.results[0])] = pushed
        return
    if op.prim is stack_get_p and not isinstance(tangents[0], Zero):
        got = Value(op.results[0].aval.update(weak_type=False))
        builder.emit(Op(stack_get_p, [tangents[0], operands[1]], {}, [got]))
        env.write(op.results[0], results[0], got)
        return
    for r, new in zip(op.results, results):
        env.write(r, new)


def _tangent_stack(env: Env, stack: Value, tangent: Any) -> Value:
    """The tangent stack of ``stack``: a new empty one when the stack had none (pushes start together)."""
    if not isinstance(tangent, Zero):
        return tangent
    fresh = Value(StackType(stack.aval.elem.update(weak_type=False)))
    env.builder.emit(Op(stack_new_p, [], {"elem": fresh.aval.elem}, [fresh]))
    return fresh


CONTROL_JVP: dict[core.Primitive, Callable[[Op, Env], None]] = {
    stack_new_p: _stack_jvp,
    stack_push_p: _stack_jvp,
    stack_get_p: _stack_jvp,
    stack_size_p: _stack_jvp,
    custom_jvp_call_p: _custom_jvp,
    custom_vjp_call_p: _custom_jvp,
    cond_p: _cond_jvp,
    while_p: _loop_jvp,
    for_p: _loop_jvp,
    scan_p: _scan_jvp,
}
