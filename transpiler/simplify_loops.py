"""Loops for reading (part of ``simplify``): residuals that are loop invariants are not saved, and carried
values nothing reads are dropped.

Reverse mode saves, at every iteration of a loop, the values its backward loop reads: onto a stack (a
``while``) or into a row of a buffer (a ``for`` of known trip count). When what is saved is the same value
at every iteration (after hoisting, a loop invariant), every read gives that value back, so the reads
become the value itself; the stack or buffer is then read by nothing and ``drop_dead_carries`` removes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, walk
from srcjax.transpiler.passes import eliminate_dead_code, has_effect, uses
from srcjax.transpiler.primitives.control import for_p, stack_get_p, stack_push_p
from srcjax.transpiler.primitives.indexing import dynamic_slice_p, dynamic_update_slice_p
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p, reshape_p
from srcjax.transpiler.types import StackType, TensorType

if TYPE_CHECKING:
    from srcjax.transpiler.simplify import Simplifier


def reads(op: Op) -> set[int]:
    """Every value an op reads, by id, its regions' included."""
    used = {id(v) for v in op.operands}
    for region in op.regions:
        used |= {id(v) for v in region.results}
        for inner in region.ops:
            used |= reads(inner)
    return used


def rename_uses(block: Block, rename: dict[int, Value]) -> None:
    """Replace every use of a renamed value, nested regions included."""
    if not rename:
        return
    for op in block.ops:
        op.operands = [rename.get(id(v), v) for v in op.operands]
        for region in op.regions:
            rename_uses(region, rename)
    block.results = [rename.get(id(v), v) for v in block.results]


# Ops whose results may depend, in the last bit, on how their operands are laid out in memory (NumPy sums
# and BLAS products take other paths for broadcast, zero-stride views than for contiguous arrays), and ops
# that pass a view of their operand on (so the layout reaches what reads their result).
LAYOUT_SENSITIVE = frozenset({"dot_general", "conv_general_dilated", "reduce_sum", "reduce_prod", "cumsum",
                              "cumprod", "cumlogsumexp", "reduce_window_sum", "fft", "triangular_solve"})
VIEWS = frozenset({"broadcast_in_dim", "reshape", "transpose", "slice", "rev", "squeeze", "expand_dims",
                   "dynamic_slice"})


def layout_sensitive(fn: Function) -> set[int]:
    """The values whose memory layout may change what the program computes: operands of layout-sensitive
    ops, and what views of them are taken from. Simplification does not replace these by a value laid out
    otherwise (a fill is a broadcast view; a constant is contiguous)."""
    sensitive: set[int] = set()
    ops = list(walk(fn.body))
    for op in ops:
        if op.prim.name in LAYOUT_SENSITIVE:
            sensitive |= {id(v) for v in op.operands}
    for op in reversed(ops):  # a view's operand is read wherever the view is (definitions come first)
        if op.prim.name in VIEWS and any(id(r) in sensitive for r in op.results):
            sensitive.add(id(op.operands[0]))
    return sensitive


class Scopes:
    """Where each value is defined and where each op sits, to tell whether a value is visible at an op."""

    def __init__(self, fn: Function):
        self.defined: dict[int, tuple[int, int] | None] = {}  # value -> (block, op index); None: everywhere
        self.path: dict[int, list[tuple[int, int]]] = {}  # op -> the (block, index) of it and of its enclosing ops
        self.definition: dict[int, Op] = {}  # value -> the op that defines it
        for v in fn.params + [v for v, _ in fn.consts]:
            self.defined[id(v)] = None
        self._visit(fn.body, [])

    def _visit(self, block: Block, path: list[tuple[int, int]]) -> None:
        for p in block.params:
            self.defined.setdefault(id(p), (id(block), -1))
        for i, op in enumerate(block.ops):
            here = path + [(id(block), i)]
            self.path[id(op)] = here
            for region in op.regions:
                self._visit(region, here)
            for r in op.results:
                self.defined[id(r)] = (id(block), i)
                self.definition[id(r)] = op

    def visible(self, v: Value, op: Op) -> bool:
        """``v`` is defined before ``op`` in a block that holds ``op`` (or is a literal, param or constant)."""
        if isinstance(v, Literal):
            return True
        if id(v) not in self.defined:
            return False
        where = self.defined[id(v)]
        return where is None or any(b == where[0] and i > where[1] for b, i in self.path[id(op)])


def loop_slots(op: Op) -> list[list[Value]]:
    """The values that hold one carried value of a loop, or one result of a cond: its init operand (loops),
    result, the region params that alias it and the yields that become it."""
    name = op.prim.name
    if name == "while":
        cond, body = op.regions
        return [[x, r, c, b, y] for x, r, c, b, y in zip(op.operands, op.results, cond.params, body.params,
                                                          body.results)]
    if name == "for":
        (body,) = op.regions
        return [[x, r, p, y] for x, r, p, y in zip(op.operands[1:], op.results, body.params[1:], body.results)]
    if name == "scan":
        (body,) = op.regions
        n = op.params["num_carry"]
        return [[x, r, p, y] for x, r, p, y in zip(op.operands[:n], op.results[:n], body.params[:n], body.results[:n])]
    if name == "cond":
        return [[r, *(region.results[i] for region in op.regions)] for i, r in enumerate(op.results)]
    return []


# -- residuals ------------------------------------------------------------------------------------------------
def forward_invariant_residuals(s: Simplifier) -> None:
    fn = s.fn
    s.sensitive = layout_sensitive(fn)
    scopes = Scopes(fn)
    rename: dict[int, Value] = {}
    _forward_stacks(fn, scopes, rename)
    buffers: dict[int, Value] = {}  # buffer after its loop -> the value in every row
    _forward_buffers(s, fn.body, scopes, buffers, rename)
    if buffers:
        _read_rows(fn, buffers, rename)
    rename_uses(fn.body, rename)


def _forward_stacks(fn: Function, scopes: Scopes, rename: dict[int, Value]) -> None:
    """A stack whose every push pushes one value ``x`` gives ``x`` at every read (lanes included: each
    example's entry of ``x`` is ``x``'s)."""
    parent: dict[int, int] = {}

    def find(k: int) -> int:
        while parent.setdefault(k, k) != k:
            k = parent[k]
        return k

    def union(values: list[Value]) -> None:
        keys = [find(id(v)) for v in values if not isinstance(v, Literal)]
        for k in keys[1:]:
            parent[k] = keys[0]

    pushes: list[Op] = []
    gets: list[Op] = []
    escaped: list[Value] = [v for v in fn.results if isinstance(v.aval, StackType)]
    for op in walk(fn.body):
        if op.prim is stack_push_p:
            union([op.operands[0], op.results[0]])
            pushes.append(op)
        elif op.prim is stack_get_p:
            gets.append(op)
        elif op.prim.name in ("while", "for", "scan", "cond"):
            for slot in loop_slots(op):
                if isinstance(slot[0].aval, StackType):
                    union(slot)
        else:  # stack_size and anything else that reads a stack: the family is left alone
            escaped += [v for v in op.operands if isinstance(v.aval, StackType)]
    left_alone = {find(id(v)) for v in escaped}
    families: dict[int, list[Op]] = {}
    for op in pushes:
        families.setdefault(find(id(op.operands[0])), []).append(op)
    for root, family in families.items():
        x = family[0].operands[1]
        if root in left_alone or not all(_same(op.operands[1], x) for op in family):
            continue
        reads = [g for g in gets if find(id(g.operands[0])) == root]
        if all(scopes.visible(x, g) for g in reads):
            for g in reads:
                rename[id(g.results[0])] = x


def _same(a: Value, b: Value) -> bool:
    if a is b:
        return True
    return (isinstance(a, Literal) and isinstance(b, Literal) and a.aval == b.aval
            and a.value.tobytes() == b.value.tobytes())


def _forward_buffers(s: Simplifier, block: Block, scopes: Scopes, buffers: dict[int, Value],
                     rename: dict[int, Value]) -> None:
    """A ``for`` of trip count n that writes one value ``x`` into row k of an n-row buffer at iteration k
    leaves every row equal to ``x``: after the loop the buffer is ``x`` broadcast."""
    ops: list[Op] = []
    for op in block.ops:
        for region in op.regions:
            _forward_buffers(s, region, scopes, buffers, rename)
        ops.append(op)
        if op.prim is not for_p or not isinstance(op.operands[0], Literal):
            continue
        for result, row in _invariant_buffers(op, scopes):
            if s.sensitive & ({id(result)} | _row_reads(result, scopes)):
                continue  # the buffer's rows are contiguous, x may be a view: keep what reads them as it was
            x = _reshaped_from(row, scopes)
            if x is None:  # the row itself, as one row of the buffer reads
                x = Value(row.aval.update(shape=row.aval.shape[1:]))
                ops.append(Op(reshape_p, [row], {"new_sizes": x.aval.shape, "dimensions": None}, [x], loc=op.loc))
                s.tag_like(ops[-1], op)
            full = Value(result.aval, result.name)
            dims = tuple(range(result.aval.ndim))
            ops.append(Op(broadcast_in_dim_p, [row], {"shape": result.aval.shape, "broadcast_dimensions": dims},
                          [full], loc=op.loc))
            s.tag_like(ops[-1], op)
            rename[id(result)] = full
            buffers[id(result)] = x
    block.ops = ops


def _invariant_buffers(op: Op, scopes: Scopes) -> list[tuple[Value, Value]]:
    """The buffers a loop writes one loop-invariant row ``(1, ...)`` into at every iteration, with the row."""
    trip = int(op.operands[0].value)
    (body,) = op.regions
    index = body.params[0]
    found = []
    for _, result, param, yielded in loop_slots(op):
        aval = result.aval
        if trip <= 0 or not isinstance(aval, TensorType) or aval.ndim == 0 or aval.shape[0] != trip:
            continue
        update = scopes.definition.get(id(yielded))
        if (update is None or update.prim is not dynamic_update_slice_p or update.operands[0] is not param
                or update.operands[2] is not index
                or not all(isinstance(i, Literal) and int(i.value) == 0 for i in update.operands[3:])):
            continue
        row = update.operands[1]
        if not isinstance(row, Literal) and scopes.visible(row, op) and row.aval.shape == (1, *aval.shape[1:]):
            found.append((result, row))
    return found


def _row_reads(buffer: Value, scopes: Scopes) -> set[int]:
    """The values read out of a buffer after its loop (the slices and their reshapes)."""
    out: set[int] = set()
    for value_id, op in scopes.definition.items():
        if op.prim is dynamic_slice_p and op.operands[0] is buffer:
            out.add(value_id)
    for value_id, op in scopes.definition.items():
        if op.prim is reshape_p and id(op.operands[0]) in out:
            out.add(value_id)
    return out


def _reshaped_from(row: Value, scopes: Scopes) -> Value | None:
    """The value ``row`` reshapes to (1, ...), when it is one (it is then visible where the row is)."""
    definition = scopes.definition.get(id(row))
    if definition is None or definition.prim is not reshape_p or definition.params.get("dimensions") is not None:
        return None
    x = definition.operands[0]
    return x if tuple(definition.params["new_sizes"]) == (1, *x.aval.shape) else None


def _read_rows(fn: Function, buffers: dict[int, Value], rename: dict[int, Value]) -> None:
    """``reshape(dynamic_slice(buffer, k, 0..., sizes=(1, ...)))``: one row of a forwarded buffer, its value."""
    definitions = {id(r): o for o in walk(fn.body) for r in o.results}
    for op in walk(fn.body):
        if op.prim is not reshape_p or isinstance(op.operands[0], Literal):
            continue
        sliced = definitions.get(id(op.operands[0]))
        if sliced is None or sliced.prim is not dynamic_slice_p or id(sliced.operands[0]) not in buffers:
            continue
        x = buffers[id(sliced.operands[0])]
        if tuple(sliced.params["slice_sizes"]) == (1, *x.aval.shape) and tuple(op.params["new_sizes"]) == x.aval.shape:
            rename[id(op.results[0])] = x


# -- dead carried values ---------------------------------------------------------------------------------------
def drop_dead_carries(fn: Function) -> None:
    """Drop the carried values of loops, and the results of conds, that nothing reads (a carried value read
    only to compute itself is read by nothing), then the ops that computed them."""
    while _prune(fn.body, uses(fn)):
        eliminate_dead_code(fn)


def _prune(block: Block, counts: dict[int, int]) -> bool:
    changed = False
    for op in block.ops:
        for region in op.regions:
            changed |= _prune(region, counts)
        if op.prim.name in ("while", "for"):
            changed |= _prune_loop(op, counts)
        elif op.prim.name == "cond":
            dead = [i for i, r in enumerate(op.results) if not counts.get(id(r))]
            for i in reversed(dead):
                op.results.pop(i)
                for region in op.regions:
                    region.results.pop(i)
            changed |= bool(dead)
    return changed


def _prune_loop(op: Op, counts: dict[int, int]) -> bool:
    slots = loop_slots(op)
    lead = 1 if op.prim.name == "for" else 0
    params = [[v for v in slot[2:-1]] for slot in slots]  # the region params of each carried value
    needed = {i for i, slot in enumerate(slots) if counts.get(id(slot[1]))}
    while True:
        roots = {id(v) for v in op.regions[0].results} if op.prim.name == "while" else set()
        roots |= {id(slots[i][-1]) for i in needed}
        live = _live(op.regions, roots)
        grown = needed | {i for i, ps in enumerate(params) if any(id(p) in live for p in ps)}
        if grown == needed:
            break
        needed = grown
    dead = [i for i in range(len(slots)) if i not in needed]
    for i in reversed(dead):
        op.operands.pop(lead + i)
        op.results.pop(i)
        for region in op.regions:
            region.params.pop(lead + i)
        op.regions[-1].results.pop(i)
    return bool(dead)


def _live(regions: list[Block], roots: set[int]) -> set[int]:
    """The values the regions read to compute ``roots`` and to run their ops with effects (a nested op counts as
    reading all it reads)."""
    live = set(roots)
    for region in regions:
        for op in reversed(region.ops):
            if has_effect(op) or any(id(r) in live for r in op.results):
                live |= reads(op)
    return live


__all__ = ["layout_sensitive", "LAYOUT_SENSITIVE", "VIEWS", "forward_invariant_residuals", "drop_dead_carries",
           "loop_slots", "reads", "rename_uses", "Scopes"]
