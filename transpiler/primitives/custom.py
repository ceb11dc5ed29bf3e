"""Primitives that change only how a value differentiates: ``stop_gradient`` and user-defined rules.

``custom_jvp_call`` and ``custom_vjp_call`` hold the traced function as a region (what runs) and the
user's rules as parameters (opaque Python callables: they print by name and do not parse back). The
transforms call the rules (op rules, below); everything else runs the region. A call no tangent reaches is
kept as it is, so that a later transformation of the program still finds its rules.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable

from srcjax.transpiler.ir import Literal, Op, Value
from srcjax.transpiler.passes import drop_effects
from srcjax.transpiler.primitives.ad import (
    Zero, add_tangents, instantiate, is_differentiable, jvp_of, tangent_aval, zeros,
)
from srcjax.transpiler.primitives.batching import batched_aval, elementwise_rule
from srcjax.transpiler.primitives.control import ControlPrimitive
from srcjax.transpiler.primitives.core import Interpreter, Primitive, check, interpreting, register_module
from srcjax.transpiler.primitives.engine import BatchEngine, JVPEngine, VJPEngine
from srcjax.transpiler.types import TensorType

stop_gradient_p = Primitive("stop_gradient")


@stop_gradient_p.def_shape
def _stop_gradient_shape(x: TensorType) -> TensorType:
    check(isinstance(x, TensorType), "stop_gradient", f"expects an array, got {x}")
    return x


stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_zero_jvp("stop_gradient's derivative is zero by definition")
stop_gradient_p.def_zero_transpose("the identity to evaluation, the zero map to differentiation")
stop_gradient_p.def_vmap(elementwise_rule(stop_gradient_p))  # the identity, elementwise

# ``optimization_barrier``: the identity, which no simplification sees through (two computations of the same
# value on either side of it stay two: the backward pass of a checkpoint computes its values again).
optimization_barrier_p = Primitive("optimization_barrier")
optimization_barrier_p.def_shape(_stop_gradient_shape)
optimization_barrier_p.def_impl(lambda x: x)
optimization_barrier_p.def_linear(lambda ct, x: [ct])
optimization_barrier_p.def_vmap(elementwise_rule(optimization_barrier_p))


class CustomCall(ControlPrimitive):
    """A call whose region is the function and whose params carry the user's rules."""


def _custom_check(op) -> list[str]:
    (region,) = op.regions
    errors = []
    if [p.aval.strong() for p in region.params] != [v.aval.strong() for v in op.operands]:
        errors.append(f"{op.prim.name} region parameters do not match its operands")
    if [r.aval.strong() for r in region.results] != [r.aval.strong() for r in op.results]:
        errors.append(f"{op.prim.name} region results do not match the op's results")
    return errors


def _custom_run(op, operands, run_block) -> list[Any]:
    return run_block(op.regions[0], operands)


custom_jvp_call_p = CustomCall("custom_jvp_call", params=("rule", "in_tree", "out_tree", "nondiff"))
custom_vjp_call_p = CustomCall("custom_vjp_call", params=("rule", "in_tree", "out_tree", "nondiff"))
for _p in (custom_jvp_call_p, custom_vjp_call_p):
    _p.check_regions, _p.run = _custom_check, _custom_run


# -- forward mode ---------------------------------------------------------------------------------------------------
def _kept(engine: JVPEngine | VJPEngine, op: Op, primals: list[Any]) -> None:
    """The call itself, emitted again with new operands."""
    for r, o in zip(op.results, engine.rebuild(op, primals)):
        engine.write(r, o)


def _custom_jvp_call_jvp(engine: JVPEngine, op: Op) -> None:
    """The user's JVP rule (``rule.jvp_rule``, over flat primals and tangents) gives the outputs' tangents."""
    primals = [engine.read(v) for v in op.operands]
    tangents = [engine.tangent(v) for v in op.operands]
    if all(isinstance(t, Zero) for t in tangents):
        return _kept(engine, op, primals)
    outs, touts = op.params["rule"].jvp_rule(primals, tangents)
    for r, o, t in zip(op.results, outs, touts):
        engine.write(r, o, t)


def _custom_vjp_call_jvp(engine: JVPEngine, op: Op) -> None:
    primals = [engine.read(v) for v in op.operands]
    if not all(isinstance(engine.tangent(v), Zero) for v in op.operands):
        raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")  # (JAX's words)
    _kept(engine, op, primals)


# -- reverse mode ---------------------------------------------------------------------------------------------------
@dataclass
class CustomVJPRecord:
    """A custom-derivative call: ``backward(residuals, output cotangents)`` gives the operands' cotangents (a
    ``custom_vjp``'s ``bwd``, or the transpose of a ``custom_jvp``'s rule)."""

    op: Op
    residuals: list[Any]  # the flat residuals the user's forward function returned
    active: list[bool]
    backward_rule: Callable[[list[Any], list[Any]], list[Any]]

    def refs(self) -> list[Value]:
        return [v for v in self.residuals if isinstance(v, Value) and not isinstance(v, Literal)]

    def targets(self, engine: VJPEngine) -> list[Value]:
        return [v for v, active in zip(self.op.operands, self.active) if active]

    def backward(self, engine: VJPEngine, ct: dict[int, Any], resolve: Callable[[Value], Any]) -> None:
        cts_out = [ct.pop(id(r), None) for r in self.op.results]
        if all(c is None for c in cts_out):
            return
        cts_out = [instantiate(c if c is not None else Zero(tangent_aval(r.aval)))
                   for c, r in zip(cts_out, self.op.results)]
        residuals = [resolve(v) if isinstance(v, Value) else v for v in self.residuals]
        cts_in = self.backward_rule(residuals, cts_out)
        for v, c, a in zip(self.op.operands, cts_in, self.active):
            if a and c is not None and not isinstance(c, Zero):
                ct[id(v)] = add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), c)


def _outputs(engine: VJPEngine, op: Op, outs: list[Any]) -> None:
    for r, o in zip(op.results, outs):
        engine.write(r, o)
        if is_differentiable(r.aval):
            engine.activate(r)


def _custom_vjp_call_vjp(engine: VJPEngine, op: Op) -> CustomVJPRecord | None:
    """The user's ``fwd`` runs in the forward sweep; its ``bwd`` is the backward sweep."""
    primals = [engine.read(v) for v in op.operands]
    active = [engine.is_active(v) for v in op.operands]
    if not any(active):
        return _kept(engine, op, primals)
    rule = op.params["rule"]
    with interpreting(engine.builder):
        outs, residuals = rule.forward(primals)
    _outputs(engine, op, outs)
    return CustomVJPRecord(op, residuals, active, rule.backward)


_transposing: set = set()  # the custom_jvp functions whose rules reverse mode is transposing now


def _custom_jvp_call_vjp(engine: VJPEngine, op: Op) -> CustomVJPRecord | None:
    """Reverse mode through a ``custom_jvp`` call: its rule, traced into a function of (primals, tangents) (its
    Python control flow included, as the front end reads it), gives the outputs; the backward pass is that
    function's transpose in the tangents (its VJP there, the rule being linear in them)."""
    primals = [engine.read(v) for v in op.operands]
    active = [engine.is_active(v) for v in op.operands]
    if not any(active):
        return _kept(engine, op, primals)
    rule = op.params["rule"]
    avals = [v.aval for v in op.operands]
    tangent_avals = [tangent_aval(a) for a in avals]

    def traced(params: list[Value]) -> list[Any]:
        outs, touts = rule.jvp_rule(params[: len(avals)], params[len(avals):])
        return list(outs) + [instantiate(t) for t in touts]

    call = rule
    while hasattr(call, "inner"):  # (a rule batched by vmap wraps the call's)
        call = call.inner
    custom = getattr(call, "custom", call)
    if custom in _transposing:  # (the rule applies its own function to the tangents: it would recurse forever)
        raise NotImplementedError(
            f"reverse mode through the custom_jvp function {call.name}: its JVP rule applies {call.name} to the "
            "tangents, which is not linear in them, so it cannot be transposed (JAX raises too)")
    jvp = engine.trace(f"{op.name}_rule", avals + tangent_avals, traced)
    n_out = len(op.results)
    wrt = [False] * len(avals) + [a and is_differentiable(v.aval) for v, a in zip(op.operands, active)]
    with interpreting(engine.builder):
        _outputs(engine, op, engine.evaluate(jvp, *primals, *[zeros(t) for t in tangent_avals])[:n_out])
    # the backward pass computes the rule again: its debug prints were made by the forward pass
    _transposing.add(custom)
    try:
        transposed = engine.vjp(drop_effects(jvp), wrt, linear=True)
    finally:
        _transposing.discard(custom)

    def backward(residuals: list[Any], cts_out: list[Any]) -> list[Any]:
        zero_tangents = [zeros(t) for t in tangent_avals]  # (the rule is linear in them, checked: any will do)
        zero_outs = [zeros(tangent_aval(r.aval)) for r in jvp.results[:n_out]]
        args = [*residuals, *zero_tangents, *zero_outs, *cts_out]
        grads = iter(engine.evaluate(transposed, *args)[len(jvp.results):])
        return [next(grads) if on else None for on in wrt[len(avals):]]

    return CustomVJPRecord(op, list(primals), active, backward)


# -- batching -------------------------------------------------------------------------------------------------------
def _custom_vmap(engine: BatchEngine, op: Op) -> None:
    """A custom-rule call (or a checkpoint) stays one, over the batched function, with the rules batched as well
    (the rule object's ``batched(dims, size)`` maps the per-example rules over the batch)."""
    builder = engine.builder
    (region,) = op.regions
    args = [engine.read(v) for v in op.operands]
    batched = any(d is not None for _, d in args)
    with interpreting(builder):
        values = [engine.at_front(v, d) if d is not None else v for v, d in args]
    dims = [0 if d is not None else None for _, d in args]
    with builder.region([getattr(v, "aval", None) or batched_aval(p.aval, None, engine.size)
                         for v, p in zip(values, region.params)]) as block:
        outs, out_dims = engine.region_yields(region, region.params, block.params, dims)
        # (a checkpoint's region may read batched values from outside it: an output can be batched by those)
        out_batched = [batched or d is not None for d in out_dims]
        with interpreting(builder):
            outs = [engine.at_front(v, d) if b else v for v, d, b in zip(outs, out_dims, out_batched)]
        block.results = [builder.operand(v) for v in outs]
    params = dict(op.params)
    if batched and "rule" in params:
        params["rule"] = params["rule"].batched(dims, engine.size, engine.axis_name)
    results = [Value(r.aval, r.name) for r in block.results]
    builder.emit(Op(op.prim, [builder.operand(v) for v in values], params, results, regions=[block], loc=op.loc))
    for r, new, b in zip(op.results, results, out_batched):
        engine.write(r, new, 0 if b else None)


custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)
custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)
custom_jvp_call_p.def_transpose(_custom_jvp_call_vjp)
custom_vjp_call_p.def_transpose(_custom_vjp_call_vjp)
for _p in (custom_jvp_call_p, custom_vjp_call_p):
    _p.def_vmap(_custom_vmap)


# -- custom batching ------------------------------------------------------------------------------------------------
# ``custom_vmap_call[rule]`` holds a function as its region and, in ``rule``, the user's batching rule (JAX's
# ``custom_batching.custom_vmap``): ``rule.batch(size, operands, batched)`` gives the outputs over the batch and,
# per output, whether it is batched (along axis 0). Differentiation sees the region (as a checkpoint: the rule
# is for batching only); everything else runs the region.
custom_vmap_call_p = CustomCall("custom_vmap_call", params=("rule",))
custom_vmap_call_p.check_regions, custom_vmap_call_p.run = _custom_check, _custom_run


def _custom_vmap_call_vmap(engine: BatchEngine, op: Op) -> None:
    """The user's rule, given the operands with their batch axes first (or unbatched); an op no batched value
    reaches stays as it is."""
    args = [engine.read(v) for v in op.operands]
    if all(d is None for _, d in args):
        return _custom_vmap(engine, op)
    with interpreting(engine.builder):
        values = [engine.at_front(v, d) if d is not None else v for v, d in args]
        outs, out_batched = op.params["rule"].batch(engine.size, values, [d is not None for _, d in args])
        outs = [engine.builder.operand(o) for o in outs]
    for r, new, b in zip(op.results, outs, out_batched):
        expected = (engine.size, *r.aval.shape) if b else r.aval.shape
        if tuple(new.aval.shape) != tuple(expected) or new.aval.dtype != r.aval.dtype:
            raise TypeError(f"the custom_vmap rule of {op.params['rule']!r} returned an output of type "
                            f"{new.aval.strong()} where {'a batched' if b else 'an unbatched'} "
                            f"{r.aval.strong()} (shape {tuple(expected)}) was expected")
        engine.write(r, new, 0 if b else None)


# ``name[name]``: the identity, naming a value for the policies of ``checkpoint`` (``save_only_these_names``...).
name_p = Primitive("name", params=("name",))
name_p.def_shape(lambda x, *, name: _stop_gradient_shape(x))
name_p.def_impl(lambda x, *, name: x)
name_p.def_jvp(lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0]))
name_p.def_transpose(lambda ct, x, *, name: [ct])  # (its JVP passes the tangent on unnamed: never reached)
name_p.def_vmap(elementwise_rule(name_p))


# -- checkpoint (remat) ------------------------------------------------------------------------------------------
# ``checkpoint[policy, prevent_cse]`` holds a function as its region. Reverse mode keeps only its inputs for the
# backward pass and computes the region's forward part again there (``CheckpointRecord``), so the values inside
# it are not stored; ``policy`` (JAX's ``checkpoint_policies``: ``policy(prim, *avals, **params)`` says whether
# an op's result may be saved) names the ops of the region whose results are saved rather than recomputed.
# Everything else runs the region in its place.
checkpoint_p = CustomCall("checkpoint", params=("policy", "prevent_cse"))
checkpoint_p.check_regions, checkpoint_p.run = _custom_check, _custom_run


def _checkpoint_jvp(engine: JVPEngine, op: Op) -> None:
    """Forward mode stores nothing for later: the region, transformed in place."""
    (region,) = op.regions
    for p, v in zip(region.params, op.operands):
        engine.write(p, engine.read(v), engine.tangent(v))
    engine.block(region)
    for r, y in zip(op.results, region.results):
        engine.write(r, engine.read(y), engine.tangent(y))


@dataclass
class CheckpointRecord:
    """A checkpointed region: its inputs (the operands, and the values it reads from outside) are what the
    backward pass keeps, with the results of the ops the policy saves; the backward pass runs the region's
    forward sweep again from them and then its backward sweep."""

    op: Op
    inputs: list[Value]  # old values: the region's parameters' operands and its free values
    primal: list[Any]  # the forward sweep's values of ``inputs``
    saved: dict[int, Any]  # per op of the region whose result the policy saves: that result (new value)

    def refs(self) -> list[Value]:
        kept = [*self.primal, *self.saved.values()]
        return [v for v in kept if isinstance(v, Value) and not isinstance(v, Literal)]

    def targets(self, engine: VJPEngine) -> list[Value]:
        return [v for v in self.inputs if not isinstance(v, Literal) and engine.is_active(v)]

    def backward(self, engine: VJPEngine, ct: dict[int, Any], resolve: Callable[[Value], Any]) -> None:
        cts_out = [ct.pop(id(r), None) for r in self.op.results]
        if all(c is None for c in cts_out):
            return
        (region,) = self.op.regions
        params = list(region.params) + self.inputs[len(region.params):]
        before = [engine.read(v) for v in params]
        barrier = self.op.params.get("prevent_cse", True)
        with interpreting(engine.builder):
            for v, x in zip(params, self.primal):
                x = resolve(x) if isinstance(x, Value) else x
                if barrier and isinstance(x, Value) and isinstance(x.aval, TensorType):
                    x = optimization_barrier_p.bind(x)  # (not merged with the forward pass's computation)
                engine.write(v, x, keep_name=False)
        try:  # the forward sweep again, here: what the backward sweep reads is computed now
            with interpreting(engine.linearizer):
                records = []
                for inner in region.ops:
                    kept = self.saved.get(id(inner))
                    if kept is not None:  # a saved result: not computed again, and what follows it is
                        kept = resolve(kept)
                        if barrier and isinstance(kept, Value) and isinstance(kept.aval, TensorType):
                            kept = optimization_barrier_p.bind(kept)  # (else what follows merges into the forward)
                    reuse = kept is not None and "transpose" not in inner.prim.op_rules and \
                        getattr(jvp_of(inner.prim), "binds_primal_first", False)
                    given = _FirstBindGives(engine.linearizer, inner.prim, kept) if reuse else None
                    with engine.builder.at(inner.loc), interpreting(given) if given else nullcontext():
                        record = engine.forward_op(inner)
                    if record is not None:
                        records.append(record)
                    if kept is not None:  # (a result computed again goes unused and is dropped)
                        engine.write(inner.results[0], kept, keep_name=False)
            inner_ct: dict[int, Any] = {}
            for y, c in zip(region.results, cts_out):
                if c is not None and not isinstance(y, Literal):
                    inner_ct[id(y)] = add_tangents(inner_ct.get(id(y), Zero(tangent_aval(y.aval))), c)
            engine.backward_block(records, inner_ct, lambda v: v)
        finally:
            for v, x in zip(params, before):
                engine.write(v, x, keep_name=False)
        for p, v in zip(params, self.inputs):
            c = inner_ct.get(id(p))
            if c is not None and not isinstance(c, Zero) and engine.is_active(v):
                ct[id(v)] = add_tangents(ct.get(id(v), Zero(tangent_aval(v.aval))), c)


class _FirstBindGives(Interpreter):
    """Answers the first bind of ``prim`` with ``value`` and sends every other bind on to ``inner``: a JVP rule
    that binds its primal first (``binds_primal_first``) then differentiates at a saved result, not a new one."""

    def __init__(self, inner: Interpreter, prim: Primitive, value: Any):
        self.inner, self.prim, self.value = inner, prim, value

    def canonical(self, x: Any) -> Any:
        return self.inner.canonical(x)

    def process(self, prim: Primitive, operands: Any, params: dict[str, Any]) -> Any:
        if prim is self.prim and self.value is not None:
            value, self.value = self.value, None
            return value
        return self.inner.process(prim, operands, params)


def _checkpoint_vjp(engine: VJPEngine, op: Op) -> CheckpointRecord | None:
    """The region's forward sweep runs for its results; its records are dropped (the backward pass makes them
    again), so nothing computed inside it is kept but what the policy saves."""
    from srcjax.transpiler.ir import free_values

    (region,) = op.regions
    free = [v for v in free_values(region) if not isinstance(v, Literal)]
    inputs = list(op.operands) + free
    primal = [engine.read(v) for v in op.operands] + [engine.read(v) for v in free]
    if not any(engine.is_active(v) for v in inputs):
        return _kept(engine, op, primal[: len(op.operands)])
    for p, x, v in zip(region.params, primal, op.operands):
        engine.write(p, x)
        if engine.is_active(v):
            engine.activate(p)
    policy = op.params.get("policy")
    saved: dict[int, Any] = {}
    with interpreting(engine.linearizer):
        for inner in region.ops:
            with engine.builder.at(inner.loc):
                engine.forward_op(inner)
            # (only arrays are saved: a stack of a loop's residuals is filled in place, so the backward pass's
            # second forward sweep must make its own rather than push onto the one the first sweep filled)
            if policy is not None and not inner.regions and len(inner.results) == 1 and isinstance(
                    inner.results[0].aval, TensorType) and policy(
                    inner.prim, *(v.aval for v in inner.operands), **inner.params):
                saved[id(inner)] = engine.read(inner.results[0])
    for r, y in zip(op.results, region.results):
        engine.write(r, engine.read(y))
        if engine.is_active(y) and is_differentiable(r.aval):
            engine.activate(r)
    return CheckpointRecord(op, inputs, primal, saved)


checkpoint_p.def_jvp(_checkpoint_jvp)
checkpoint_p.def_transpose(_checkpoint_vjp)
checkpoint_p.def_vmap(_custom_vmap)
custom_vmap_call_p.def_jvp(_checkpoint_jvp)
custom_vmap_call_p.def_transpose(_checkpoint_vjp)
custom_vmap_call_p.def_vmap(_custom_vmap_call_vmap)

register_module(globals())
