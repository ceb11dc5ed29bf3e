"""Simplification for reading: the IR the Python emitter prints, computing the same values bit for bit.

``simplify(fn)`` returns a simplified copy; ``fn`` itself is left as the transforms made it (the interpreter
and the compiler run that). Every step keeps each value exactly, and where a value's memory layout may
change the last bit of what reads it (a sum, a matrix product: ``layout_sensitive``), its layout too:

- custom-derivative calls become their function (the rules matter to transforms, not to running it);
- constants fold: an op whose operands are all known runs once, as the same primitive on the same arrays,
  and becomes a literal, a broadcast of one when all its elements are equal, or a constant array no larger
  than the constants it reads (folding never turns readable literals into a base64 blob);
- loop invariants leave their loops: an op of a loop's region that reads nothing the loop defines;
- a loop's residuals that are loop invariants (reverse mode saves what its backward loop needs each
  iteration) are read as the value itself, and not saved (``simplify_loops``);
- identities go (``x & True``, ``x + 0`` on integers, a reshape to the same shape, a cond on a literal);
- loop-carried values and cond results nothing reads are dropped;
- constants built from literals alone (``full``, ``iota``) move down to just before their first use, so a
  gradient's seed is made where the backward pass starts.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from srcjax.transpiler.interpret import concrete
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, walk
from srcjax.transpiler.passes import clean
from srcjax.transpiler import simplify_loops
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.control import ControlPrimitive
from srcjax.transpiler.primitives.custom import CustomCall
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p
from srcjax.transpiler.simplify_loops import reads, rename_uses
from srcjax.transpiler.simplify_rules import compose_broadcasts, identity, literal_broadcast
from srcjax.transpiler.types import TensorType

# Folding computes an op at emission time: beyond this many elements (operands and results) it is left to run.
MAX_FOLD_ELEMENTS = 1 << 16


def simplify(fn: Function, before_sinking: Callable[[Function], None] | None = None) -> Function:
    """A copy of ``fn`` that computes the same values with fewer, plainer ops (see the module's docstring).
    ``before_sinking`` may change what reads the constants before they move to their first use."""
    s = Simplifier(fn)
    s.inline_custom_calls(s.fn.body)
    for _ in range(2):  # a second round folds and hoists what the first one exposed
        s.fold_constants()
        s.hoist_invariants(s.fn.body)
        simplify_loops.forward_invariant_residuals(s)
        simplify_loops.drop_dead_carries(s.fn)
        clean(s.fn)
    if before_sinking is not None:
        before_sinking(s.fn)
    s.sink_constants()
    s.fn.sections = s.sections()
    return s.fn


def is_pure(op: Op) -> bool:
    """An op that may be computed anywhere its operands exist: no regions, no stack, no axis it must see, no
    effect."""
    return (not op.regions and not isinstance(op.prim, ControlPrimitive) and not op.prim.always_record
            and not op.prim.effect)


class Simplifier:
    """The copy being simplified, with each top-level op's section label (``forward``/``backward``), which
    moves with the ops: a hoisted op is in its loop's section, a sunk constant in its first user's."""

    def __init__(self, fn: Function):
        self.fn, copies = copy_function(fn)
        self.tags: dict[int, str] = {}
        self.sensitive: set[int] = set()  # values whose memory layout may matter (``layout_sensitive``)
        label = None
        for op in fn.body.ops:
            label = fn.sections.get(id(op), label)
            if label is not None:
                self.tags[id(copies[id(op)])] = label

    def sections(self) -> dict[int, str]:
        out, previous = {}, None
        for op in self.fn.body.ops:
            label = self.tags.get(id(op), previous)
            if label != previous:
                out[id(op)] = label
            previous = label
        return out

    def tag_like(self, new: Op, old: Op) -> None:
        if id(old) in self.tags:
            self.tags[id(new)] = self.tags[id(old)]

    # -- custom calls -----------------------------------------------------------------------------------------
    def inline_custom_calls(self, block: Block) -> None:
        """A ``custom_jvp_call``/``custom_vjp_call``/``checkpoint`` runs its region: its ops take the call's place."""
        inline_calls(block, self.tag_like)

    # -- constants --------------------------------------------------------------------------------------------
    def fold_constants(self) -> None:
        fn = self.fn
        self.sensitive = simplify_loops.layout_sensitive(fn)
        self._fill_uniform_constants()
        self.known: dict[int, np.ndarray] = {id(v): np.asarray(data, v.aval.dtype) for v, data in fn.consts}
        self.data = set(self.known)  # values held as constant arrays (not as literals)
        self.rename: dict[int, Value] = {}
        self.indices = {id(op.regions[0].params[0]) for op in walk(fn.body) if op.prim.name == "for"}
        self.definitions: dict[int, Op] = {}
        self._fold_block(fn.body)

    def _fill_uniform_constants(self) -> None:
        """A constant array whose elements are all equal is a fill (``jnp.ones``), and one whose leading axes
        repeat one block is that block broadcast: neither is base64 data of every element."""
        fn, ops, kept = self.fn, [], []
        for value, data in fn.consts:
            data = np.asarray(data, value.aval.dtype)
            if id(value) in self.sensitive:  # the program reads it as a contiguous array
                kept.append((value, data))
                continue
            block, lead = data, 0
            while block.ndim and block.size and _bits_equal(block, block[:1]):
                block, lead = block[0], lead + 1
            if lead == 0:
                kept.append((value, data))
                continue
            if _uniform(block):
                source: Value = Literal(block.reshape(-1)[0], value.aval.update(shape=()))
                dims: tuple[int, ...] = ()
            else:
                source = Value(value.aval.update(shape=block.shape), value.name)
                kept.append((source, block))
                dims = tuple(range(lead, data.ndim))
            ops.append(Op(broadcast_in_dim_p, [source], {"shape": data.shape, "broadcast_dimensions": dims}, [value]))
        if ops:
            if fn.body.ops:
                for op in ops:
                    self.tag_like(op, fn.body.ops[0])
            fn.consts, fn.body.ops = kept, ops + fn.body.ops

    def _fold_block(self, block: Block) -> None:
        ops: list[Op] = []
        for op in block.ops:
            op.operands = [self.rename.get(id(v), v) for v in op.operands]
            for region in op.regions:
                self._fold_block(region)
            if op.prim.name == "cond" and isinstance(op.operands[0], Literal):  # the branch it takes, in its place
                which = op.operands[0].value
                taken = op.regions[(0 if which else 1) if which.dtype.kind == "b" else
                                   min(max(int(which), 0), len(op.regions) - 1)]
                for moved in taken.ops:
                    self.tag_like(moved, op)
                ops += taken.ops
                self.rename.update((id(r), self.rename.get(id(y), y)) for r, y in zip(op.results, taken.results))
                continue
            same = identity(op, self.indices, self.definitions)
            keeps_layout = op.prim.name in ("reshape", "broadcast_in_dim", "transpose", "stop_gradient")  # x's layout
            if same is not None and (keeps_layout or id(op.results[0]) not in self.sensitive):
                self.rename[id(op.results[0])] = same
                continue
            compose_broadcasts(op, self.definitions)
            self.definitions.update((id(r), op) for r in op.results)
            replacement = self._fold(op)
            ops += [op] if replacement is None else replacement
        block.ops = ops
        block.results = [self.rename.get(id(v), v) for v in block.results]

    def _value(self, v: Value) -> np.ndarray | None:
        return v.value if isinstance(v, Literal) else self.known.get(id(v))

    def _fold(self, op: Op) -> list[Op] | None:
        """The ops that replace ``op`` when its operands are all known (None: keep it)."""
        if not is_pure(op) or op.prim.impl is None or not op.operands:
            return None
        inputs = [self._value(v) for v in op.operands]
        if any(x is None for x in inputs) or any(not isinstance(r.aval, TensorType) for r in op.results):
            return None
        if sum(x.size for x in inputs) + sum(r.aval.size for r in op.results) > MAX_FOLD_ELEMENTS:
            return None
        if literal_broadcast(op) is not None:  # already as plain as it gets; known for what reads it
            self.known[id(op.results[0])] = np.broadcast_to(inputs[0], op.results[0].aval.shape)
            return None
        try:
            outs = _evaluate(op, inputs)
        except Exception:  # noqa: BLE001 - an op that cannot run now (bad operands) is left to fail at run time
            return None
        budget = max((self.known[id(v)].size for v in op.operands if id(v) in self.data), default=0)
        plans = [_folded_form(out, r, budget, id(r) in self.sensitive) for out, r in zip(outs, op.results)]
        if any(p is None for p in plans):
            return None
        replacement = []
        for r, out, plan in zip(op.results, outs, plans):
            self.known[id(r)] = out
            if plan == "literal":
                self.rename[id(r)] = Literal(out[()], r.aval)
            elif plan == "fill":
                fill = Literal(out.reshape(-1)[0], r.aval.update(shape=()))
                new = Op(broadcast_in_dim_p, [fill], {"shape": r.aval.shape, "broadcast_dimensions": ()}, [r],
                         loc=op.loc)
                self.tag_like(new, op)
                replacement.append(new)
            else:
                self.fn.consts.append((r, out))
                self.data.add(id(r))
        return replacement

    # -- loop invariants --------------------------------------------------------------------------------------
    def hoist_invariants(self, block: Block) -> None:
        """Move the ops of loops' regions that read nothing the loop defines to just before the loop."""
        ops: list[Op] = []
        for op in block.ops:
            for region in op.regions:
                self.hoist_invariants(region)
            if op.prim.name in ("while", "for", "scan"):
                inside = _defined_inside(op)
                for region in op.regions:
                    kept = []
                    for inner in region.ops:
                        if is_pure(inner) and not any(id(v) in inside for v in inner.operands):
                            inside.difference_update(id(r) for r in inner.results)
                            self.tag_like(inner, op)
                            ops.append(inner)
                        else:
                            kept.append(inner)
                    region.ops = kept
            ops.append(op)
        block.ops = ops

    # -- constants to their first use -------------------------------------------------------------------------
    def sink_constants(self) -> None:
        """Top-level ops built from literals alone move to just before the first top-level op that reads them."""
        body = self.fn.body
        ops: list[Op] = []
        waiting: list[Op] = []
        for op in body.ops:
            if is_pure(op) and all(isinstance(v, Literal) for v in op.operands):
                waiting.append(op)
                continue
            read = reads(op)
            due = [w for w in waiting if any(id(r) in read for r in w.results)]
            for w in due:
                self.tag_like(w, op)
            ops += due
            waiting = [w for w in waiting if not any(w is d for d in due)]
            ops.append(op)
        body.ops = ops + waiting


def _evaluate(op: Op, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The op's results on concrete operands, computed as the running program would (its primitive, bound on
    the base interpreter's arrays of exactly the operands' types)."""
    base = core.base_interpreter()
    args = [concrete(x, v.aval) for x, v in zip(inputs, op.operands)]
    if core.current_interpreter() is base:
        out = op.prim.bind(*args, **op.params)
    else:
        with core.interpreting(base):
            out = op.prim.bind(*args, **op.params)
    return [np.asarray(o) for o in (out if op.prim.multiple_results else [out])]


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Every row of ``a`` has ``b``'s bits (``b`` is one row; -0.0 and 0.0 differ, NaNs are compared as bits)."""
    rows = np.ascontiguousarray(a).view(np.uint8).reshape(a.shape[0], -1)
    return bool((rows == np.ascontiguousarray(b).view(np.uint8).reshape(1, -1)).all())


def _folded_form(out: np.ndarray, result: Value, budget: int, sensitive: bool) -> str | None:
    """How a folded result is written: a ``literal`` (0-d), a ``fill`` (every element equal, bit for bit),
    ``data`` (a constant array no larger than the largest constant operand), or None (not folded). Where the
    layout matters (``sensitive``), only as what is laid out as the computed array was: a fill is a
    broadcast (zero-stride) view, a constant a contiguous array."""
    if out.shape != result.aval.shape or out.dtype != result.aval.dtype or out.size == 0:
        return None
    if out.ndim == 0:
        return "literal"
    zero_strides = 0 in out.strides
    if _uniform(out) and (zero_strides or not sensitive):
        return "fill"
    fits = out.size <= budget and (out.flags.c_contiguous or not sensitive)
    return "data" if fits else None


def _uniform(a: np.ndarray) -> bool:
    """Every element has the first one's bits."""
    return a.size > 0 and _bits_equal(a.reshape(-1), a.reshape(-1)[:1])


def _defined_inside(op: Op) -> set[int]:
    inside: set[int] = set()
    for region in op.regions:
        inside |= {id(p) for p in region.params}
        for inner in region.ops:
            inside |= {id(r) for r in inner.results} | _defined_inside(inner)
    return inside


def inline_calls(block: Block, moved: Callable[[Op, Op], None] | None = None) -> None:
    """Replace each ``custom_jvp_call``/``custom_vjp_call``/``checkpoint`` op in ``block`` (at any depth) by its
    region's ops: what they add matters to transformations only. ``moved(op, call)`` is told of each op moved
    out of a call. Changes the block in place."""
    ops: list[Op] = []
    rename: dict[int, Value] = {}
    for op in block.ops:
        op.operands = [rename.get(id(v), v) for v in op.operands]
        for region in op.regions:
            rename_uses(region, rename)
            inline_calls(region, moved)
        if not isinstance(op.prim, CustomCall):
            ops.append(op)
            continue
        (region,) = op.regions
        inner = {id(p): v for p, v in zip(region.params, op.operands)}
        rename_uses(region, inner)
        if moved is not None:
            for inner_op in region.ops:
                moved(inner_op, op)
        ops += region.ops
        for r, y in zip(op.results, region.results):
            rename[id(r)] = inner.get(id(y), y)
    block.ops = ops
    block.results = [rename.get(id(v), v) for v in block.results]


def without_calls(fn: Function) -> Function:
    """``fn``, or a copy of it with its custom-derivative calls and checkpoints inlined where it has any."""
    if not any(isinstance(op.prim, CustomCall) for op in walk(fn.body)):
        return fn
    copy, _ = copy_function(fn)
    inline_calls(copy.body)
    return copy


def copy_function(fn: Function) -> tuple[Function, dict[int, Op]]:
    """A structural copy (new values, ops and blocks; primitives, params and literals shared), and the map
    from each old op's id to its copy."""
    values: dict[int, Value] = {}
    ops: dict[int, Op] = {}

    def define(v: Value) -> Value:
        if id(v) not in values:
            values[id(v)] = Value(v.aval, v.name)
        return values[id(v)]

    def use(v: Value) -> Value:
        return v if isinstance(v, Literal) else values.get(id(v), v)

    def block(b: Block) -> Block:
        out = Block([define(p) for p in b.params])
        for op in b.ops:
            operands = [use(v) for v in op.operands]
            regions = [block(r) for r in op.regions]
            copy = Op(op.prim, operands, dict(op.params), [define(r) for r in op.results], regions, op.loc)
            ops[id(op)] = copy
            out.ops.append(copy)
        out.results = [use(v) for v in b.results]
        return out

    params = [define(p) for p in fn.params]
    consts = [(define(v), data) for v, data in fn.consts]
    body = block(fn.body)
    copy = Function(fn.name, params, body, consts, fn.source, [use(v) for v in fn.captured],
                    {id(ops[k]): label for k, label in fn.sections.items() if k in ops})
    return copy, ops


__all__ = ["simplify", "copy_function", "is_pure", "literal_broadcast", "Simplifier"]
