"""``checkify``: a function's checks (and, on request, automatic ones) turned into an ``Error`` value it returns.

``checkify(f)`` reads ``f`` into IR and evaluates that IR again through the current interpreter (``_Checkify``, an
IR interpreter as JAX's ``checkify_jaxpr`` is a jaxpr interpreter), with the error threaded through it: a ``check``
op merges its error in; an op that an enabled automatic check covers (a NaN made, an integer division by zero, an
index out of bounds) adds one; ``cond``, ``while``, ``for`` and ``scan`` carry the error as extra values. Every slot
the program can set is made before it starts, so a loop carries a fixed set of values. The error is a pytree of
arrays, so ``jit``, ``vmap`` and ``grad`` compose with ``checkify`` as with any function. As in JAX, Python numbers
among the arguments stay Python numbers (JAX closes over the arguments); arrays are traced.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator

import numpy as np

from srcjax.runtime import numpy as jnp
from srcjax.runtime import tree_util
from srcjax.runtime.api import abstractify
from srcjax.runtime.array import Array
from srcjax.runtime.checks import (
    DivisionByZeroError, Error, ErrorEffect, FailedCheckError, NaNError, OOBError, effect_of, next_code,
    update_slot,
)
from srcjax.transpiler.builder import Builder, differentiation_depths
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.frontend.calls import enclosing_trace
from srcjax.transpiler.frontend.concrete import TraceContext
from srcjax.transpiler.interpret import Evaluator, concrete
from srcjax.transpiler.ir import Block, Function, Op, Value
from srcjax.transpiler.primitives import control, core
from srcjax.transpiler.primitives.debug import check_p
from srcjax.transpiler.types import TensorType

user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks

# the primitives whose results JAX's nan_checks look at (``div`` too, after its division check)
NAN_PRIMITIVES = frozenset("""acos acosh add asin asinh atan2 atan atanh bessel_i0e bessel_i1e cbrt conv_general_dilated
    cos cosh cumlogsumexp cummax cummin cumprod cumsum digamma dot_general erf_inv erf erfc exp expm1 fft igamma_grad_a
    igamma igammac integer_pow lgamma linear_solve log1p log logistic mul pad pow psum reduce reduce_prod reduce_sum
    reduce_window reduce_window_sum regularized_incomplete_beta rem rng_uniform rsqrt sin sinh sqrt sub tan tanh
    div""".split())
_SCATTERS = frozenset({"scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"})
_INDEXED = frozenset({"dynamic_slice", "dynamic_update_slice", "gather"}) | _SCATTERS
_OOB_PAYLOAD = (((3,), "int32"),)


def checkify(f: Callable[..., Any], errors: frozenset = user_checks) -> Callable[..., tuple[Error, Any]]:
    """``f`` returning ``(error, out)``: ``error`` records the first failed check (``err.get()``, ``err.throw()``);
    ``errors`` chooses the checks (``user_checks``, ``nan_checks``, ``div_checks``, ``index_checks``, unions)."""
    if not callable(f):
        raise TypeError(f"checkify expects a callable, got {type(f).__name__}")

    @functools.wraps(f)
    def checked(*args: Any, **kwargs: Any) -> tuple[Error, Any]:
        leaves, treedef = tree_util.tree_flatten((list(args), kwargs))
        # (JAX closes over the arguments, so a Python int stays static; a Python float is traced here, as the ops
        # JAX stages on a closed-over float are checked: ``checkify(f, errors=nan_checks)(jnp.inf)``)
        traced = [isinstance(x, (Array, Value, np.ndarray, np.generic, float, complex)) for x in leaves]
        abstract = [abstractify(x) if t else x for x, t in zip(leaves, traced)]
        dynamic = [x for x, t in zip(leaves, traced) if t]
        a_args, a_kwargs = tree_util.unflatten_containers(treedef, abstract)
        ir, out_tree = trace_function(f, a_args, a_kwargs, differentiated=differentiation_depths(dynamic),
                                      context=TraceContext("jit", outer=enclosing_trace()))
        error, outs = _Checkify(frozenset(errors)).run(ir, [*dynamic, *ir.captured])
        return error, tree_util.tree_unflatten(out_tree, outs)

    return checked


class _Checkify(Evaluator):
    """Evaluates IR with an error threaded through: ``slots`` holds, per effect, (pred, code, *payload) now."""

    def __init__(self, enabled: frozenset):
        super().__init__()
        self.enabled = enabled
        self.slots: dict[ErrorEffect, list[Any]] = {}
        self.reports: dict[int, Any] = {}
        self.codes: dict[tuple[int, str], int] = {}  # an automatic check's code, by op: a loop's trips share it
        self.quiet = 0  # evaluating only for values (a while loop's condition as the loop tests it)
        self._holds: dict[int, bool] = {}

    def run(self, fn: Function, args: list[Any]) -> tuple[Error, list[Any]]:
        for effect in sorted(self._effects(fn.body)):
            self.slots[effect] = effect.placeholder()
        for value, array in fn.consts:
            self.env[id(value)] = concrete(np.asarray(array), value.aval)
        for param, arg in zip(fn.params, args):
            self.env[id(param)] = arg
        outs = self.run_block(fn.body, args if fn.body.params else [])
        error = Error({e: s[0] for e, s in self.slots.items()}, {e: s[1] for e, s in self.slots.items()},
                      self.reports, {e: s[2:] for e, s in self.slots.items()})
        return error, outs

    # -- what the program can set, found before it runs --------------------------------------------------------
    def _effects(self, block: Block) -> set[ErrorEffect]:
        found: set[ErrorEffect] = set()
        for op in block.ops:
            if op.prim is check_p:
                found.update(e for e in op.params["error"].effects if e.error_type in self.enabled)
            if DivisionByZeroError in self.enabled and op.name == "div":
                found.add(ErrorEffect(DivisionByZeroError, ()))
            if NaNError in self.enabled and (op.name in NAN_PRIMITIVES or op.name in _SCATTERS and OOBError in
                                             self.enabled):
                found.add(ErrorEffect(NaNError, ()))
            if OOBError in self.enabled and op.name in _INDEXED:
                found.add(ErrorEffect(OOBError, _OOB_PAYLOAD))
            for region in op.regions:
                found |= self._effects(region)
        return found

    def _holds_checks(self, op: Op) -> bool:
        if id(op) not in self._holds:
            self._holds[id(op)] = any(self._effects(region) for region in op.regions)
        return self._holds[id(op)]

    # -- evaluation ------------------------------------------------------------------------------------------
    def eval_op(self, op: Op) -> None:
        if self.quiet:
            if op.prim is not check_p:
                super().eval_op(op)
            return
        if op.prim is check_p:
            self._discharge(op, [self.read(v) for v in op.operands])
            return
        interpreter = core.current_interpreter()
        if op.regions and self._holds_checks(op) and isinstance(interpreter, Builder):
            operands = [self.read(v) for v in op.operands]
            if op.prim in _THREADED:
                if self._stays_structured(op, operands):
                    outs = _THREADED[op.prim](self, interpreter, op, operands)
                    for result, out in zip(op.results, outs):
                        self.env[id(result)] = out
                    return
            elif len(op.regions) == 1 and len(op.regions[0].params) == len(operands):
                # a custom-derivative call or a checkpoint holding checks: its function, inlined (the rule is lost)
                for result, out in zip(op.results, self.run_block(op.regions[0], operands)):
                    self.env[id(result)] = out
                return
        super().eval_op(op)
        if not op.regions and op.name in _AUTOMATIC:
            _AUTOMATIC[op.name](self, op, [self.read(v) for v in op.operands], [self.read(r) for r in op.results])

    def _discharge(self, op: Op, operands: list[Any]) -> None:
        """A ``check`` op: its error merged into the slots (the kinds of error not enabled are dropped)."""
        error = op.params["error"].error(operands)
        for effect in error._pred:
            if effect.error_type in self.enabled:
                self.slots[effect] = update_slot(self.slots[effect], error._pred[effect], error._code[effect],
                                                 error._payload[effect])
        self.reports.update(error._metadata)

    def assert_(self, op: Op, tag: str, pred: Any, report: Any, payload: list[Any], error_type: type) -> None:
        code = self.codes.setdefault((id(op), tag), next_code())
        effect = effect_of(error_type, payload)
        self.slots[effect] = update_slot(self.slots[effect], pred, code, payload)
        self.reports[code] = report

    @contextlib.contextmanager
    def quieted(self) -> Iterator[None]:
        self.quiet += 1
        try:
            yield
        finally:
            self.quiet -= 1

    # -- the slots as the values a region carries ----------------------------------------------------------------
    def state(self) -> list[Any]:
        return [x for slot in self.slots.values() for x in slot]

    def state_types(self) -> list[TensorType]:
        return [t for e in self.slots for t in (TensorType(np.bool_, ()), TensorType(np.int32, ()),
                                                *(TensorType(np.dtype(d), s) for s, d in e.shape_dtypes))]

    def set_state(self, values: list[Any]) -> None:
        it = iter(values)
        for effect, slot in self.slots.items():
            self.slots[effect] = [next(it) for _ in slot]


# -- control flow on traced values: the error as extra carried values --------------------------------------------
def _region(builder: Builder, types: list[Any], body: Callable[[list[Value]], list[Any]]) -> Block:
    with builder.region(types) as block:
        block.results = [builder.operand(x) for x in body(block.params)]
    return block


def _emit(ev: _Checkify, builder: Builder, op: Op, operands: list[Any], regions: list[Block],
          params: dict[str, Any]) -> list[Value]:
    """The op again with the error's values first among its results; the slots become those."""
    n = len(ev.state_types())
    results = [Value(t) for t in ev.state_types()] + [Value(r.aval, r.name) for r in op.results]
    builder.emit(Op(op.prim, [builder.operand(x) for x in operands], params, results, regions,
                    loc=op.loc or builder.loc))
    ev.set_state(results[:n])
    return results[n:]


def _cond(ev: _Checkify, builder: Builder, op: Op, operands: list[Any]) -> list[Value]:
    outer = ev.state()

    def branch(region: Block) -> Callable[[list[Value]], list[Any]]:
        def body(_: list[Value]) -> list[Any]:
            ev.set_state(outer)  # each branch starts from the error before the cond
            outs = ev.run_block(region, [])
            return ev.state() + outs
        return body

    regions = [_region(builder, [], branch(r)) for r in op.regions]
    return _emit(ev, builder, op, operands, regions, dict(op.params))


def _while(ev: _Checkify, builder: Builder, op: Op, operands: list[Any]) -> list[Value]:
    # as JAX's: the condition's checks run on the initial values, then after each trip of the body
    test, body = op.regions
    n, carried = len(ev.state_types()), [p.aval for p in test.params]
    ev.run_block(test, operands)
    init = ev.state()

    def test_body(params: list[Value]) -> list[Any]:
        with ev.quieted():
            return ev.run_block(test, params[n:])

    def loop_body(params: list[Value]) -> list[Any]:
        ev.set_state(params[:n])
        outs = ev.run_block(body, params[n:])
        ev.run_block(test, outs)
        return ev.state() + outs

    types = ev.state_types() + carried
    regions = [_region(builder, types, test_body), _region(builder, types, loop_body)]
    return _emit(ev, builder, op, init + operands, regions, dict(op.params))


def _for(ev: _Checkify, builder: Builder, op: Op, operands: list[Any]) -> list[Value]:
    (body,) = op.regions
    n, state = len(ev.state_types()), ev.state()
    trip, *init = operands

    def loop_body(params: list[Value]) -> list[Any]:
        ev.set_state(params[1:n + 1])
        outs = ev.run_block(body, [params[0], *params[n + 1:]])
        return ev.state() + outs

    types = [body.params[0].aval, *ev.state_types(), *(p.aval for p in body.params[1:])]
    return _emit(ev, builder, op, [trip, *state, *init], [_region(builder, types, loop_body)], dict(op.params))


def _scan(ev: _Checkify, builder: Builder, op: Op, operands: list[Any]) -> list[Value]:
    (body,) = op.regions
    n, state = len(ev.state_types()), ev.state()

    def loop_body(params: list[Value]) -> list[Any]:
        ev.set_state(params[:n])
        outs = ev.run_block(body, params[n:])
        return ev.state() + outs

    types = ev.state_types() + [p.aval for p in body.params]
    params = {**op.params, "num_carry": op.params["num_carry"] + n}
    return _emit(ev, builder, op, state + operands, [_region(builder, types, loop_body)], params)


_THREADED = {control.cond_p: _cond, control.while_p: _while, control.for_p: _for, control.scan_p: _scan}


# -- automatic checks: one rule per primitive (JAX's ``error_checks``) ---------------------------------------------
def _any_nan(outs: list[Any]) -> Any:
    found = [jnp.any(jnp.isnan(x)) for x in outs if jnp.issubdtype(x.dtype, jnp.inexact)]
    return functools.reduce(jnp.logical_or, found) if found else None


def _nan_rule(ev: _Checkify, op: Op, operands: list[Any], outs: list[Any]) -> None:
    if NaNError in ev.enabled and (pred := _any_nan(outs)) is not None:
        name = op.name
        ev.assert_(op, "nan", pred, lambda payload: NaNError(None, name), [], NaNError)


def _div_rule(ev: _Checkify, op: Op, operands: list[Any], outs: list[Any]) -> None:
    if DivisionByZeroError in ev.enabled:
        pred = jnp.any(jnp.equal(operands[1], 0))
        ev.assert_(op, "div", pred, lambda payload: DivisionByZeroError(None), [], DivisionByZeroError)
    _nan_rule(ev, op, operands, outs)


def _oob(ev: _Checkify, op: Op, mask: Any, indices: Any, dims_map: Any, operand_shape: tuple) -> None:
    """JAX's ``oob_payload``: the first out-of-bounds index, its axis and that axis's size."""
    flat = jnp.argmin(jnp.logical_not(mask).reshape(-1))
    last = jnp.unravel_index(flat, mask.shape)[-1] if mask.ndim else flat
    axis = jnp.asarray(np.asarray(dims_map, np.int32))[last]
    size = jnp.asarray(np.asarray(operand_shape, np.int32))[axis]
    payload = jnp.stack([indices.reshape(-1)[flat].astype(np.int32), axis, size]).astype(np.int32)
    name, shape = op.name, tuple(operand_shape)
    ev.assert_(op, "oob", jnp.any(mask), lambda p: OOBError(None, name, shape, p[0]), [payload], OOBError)


def _slice_rule(ev: _Checkify, op: Op, operands: list[Any], outs: list[Any]) -> None:
    if OOBError not in ev.enabled:
        return
    x, *rest = operands
    sizes = op.params["slice_sizes"] if op.name == "dynamic_slice" else rest[0].shape
    starts = rest if op.name == "dynamic_slice" else rest[1:]
    if not starts:
        return
    indices = jnp.stack([jnp.asarray(i).astype(np.int64 if _wide(starts) else np.int32) for i in starts])
    mask = (indices < 0) | (indices + np.asarray(sizes, indices.dtype) > np.asarray(x.shape, indices.dtype))
    _oob(ev, op, mask, indices, range(x.ndim), x.shape)


def _wide(values: list[Any]) -> bool:
    return any(np.dtype(v.dtype).itemsize > 4 for v in values)


def _gather_rule(ev: _Checkify, op: Op, operands: list[Any], outs: list[Any]) -> None:
    if OOBError not in ev.enabled:
        return
    x, indices = operands
    index_map = np.asarray(op.params["dimension_numbers"].start_index_map, np.int64)
    bound = np.asarray(x.shape)[index_map] - np.asarray(op.params["slice_sizes"])[index_map]
    mask = (indices < 0) | (indices > bound.astype(indices.dtype))
    _oob(ev, op, mask, indices, index_map, x.shape)


def _scatter_rule(ev: _Checkify, op: Op, operands: list[Any], outs: list[Any]) -> None:
    if OOBError not in ev.enabled:
        return
    x, indices, updates = operands
    dnums = op.params["dimension_numbers"]
    windows = iter(dnums.update_window_dims)
    sizes = [1 if i in dnums.inserted_window_dims else updates.shape[next(windows)] for i in range(x.ndim)]
    bound = np.asarray([x.shape[i] - sizes[i] for i in dnums.scatter_dims_to_operand_dims], np.int64)
    bound = np.minimum(bound, np.iinfo(indices.dtype).max).astype(indices.dtype)
    mask = (indices < 0) | (indices > bound)
    _oob(ev, op, mask, indices, dnums.scatter_dims_to_operand_dims, x.shape)
    _nan_rule(ev, op, operands, outs)


_AUTOMATIC: dict[str, Callable[..., None]] = {
    **{name: _nan_rule for name in NAN_PRIMITIVES}, "div": _div_rule, "dynamic_slice": _slice_rule,
    "dynamic_update_slice": _slice_rule, "gather": _gather_rule, **{name: _scatter_rule for name in _SCATTERS},
}


def refuse_unfunctionalized(fn: Function) -> None:
    """Before ``fn`` is compiled: a ``check`` that ``checkify`` did not functionalize is JAX's error; a
    ``debug_check`` is dropped (it does nothing outside ``checkify``)."""

    def visit(block: Block) -> None:
        for op in block.ops:
            if op.prim is check_p and not op.params["debug"]:
                raise ValueError("Cannot abstractly evaluate a checkify.check which was not functionalized. This "
                                 "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
                                 "functionalizing it through `checkify.checkify`.")
            for region in op.regions:
                visit(region)
        block.ops = [op for op in block.ops if op.prim is not check_p]

    visit(fn.body)


__all__ = ["all_checks", "automatic_checks", "checkify", "div_checks", "float_checks", "index_checks",
           "nan_checks", "refuse_unfunctionalized", "user_checks"]
