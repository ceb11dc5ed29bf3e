"""Clean-up passes over the IR, run after the front end and after every transform."""

from __future__ import annotations

from srcjax.transpiler.ir import Block, Function, Literal, Op, Value


def eliminate_dead_code(fn: Function) -> Function:
    """Drop ops whose results nobody uses and that have no effect (``has_effect``), and unused constants."""
    used: set[int] = set()

    def mark_uses(block: Block) -> None:
        used.update(id(v) for v in block.results)

    def sweep(block: Block) -> None:
        mark_uses(block)
        kept = []
        for op in reversed(block.ops):
            if not any(id(r) in used for r in op.results) and not has_effect(op):
                continue
            kept.append(op)
            for region in op.regions:
                sweep(region)
            used.update(id(v) for v in op.operands if not isinstance(v, Literal))
        block.ops = kept[::-1]

    sweep(fn.body)
    fn.consts = [(v, data) for v, data in fn.consts if id(v) in used]
    return fn


def has_effect(op: Op) -> bool:
    """Whether running ``op`` does more than compute its results: a primitive with an effect (``debug_callback``),
    or an op whose regions hold one (a loop that prints on each trip). Such an op is kept though nothing reads its
    results, runs where the program put it, and is never merged with an equal one."""
    return op.prim.effect or any(has_effect(inner) for region in op.regions for inner in region.ops)


def drop_effects(fn: Function) -> Function:
    """Remove ``fn``'s ops with an effect and no results (in place), then what only they read: for a function that
    computes again what has run once (a pullback that recomputes its forward pass), whose prints JAX makes once.
    (An ``io_callback``, whose results the rest reads, stays.)"""

    def strip(block: Block) -> None:
        block.ops = [op for op in block.ops if not (op.prim.effect and not op.results)]
        for op in block.ops:
            for region in op.regions:
                strip(region)

    strip(fn.body)
    return eliminate_dead_code(fn)


def uses(fn: Function) -> dict[int, int]:
    """How many times each value is used (by id), regions included."""
    counts: dict[int, int] = {}

    def visit(block: Block) -> None:
        for op in block.ops:
            for v in op.operands:
                counts[id(v)] = counts.get(id(v), 0) + 1
            for region in op.regions:
                visit(region)
        for v in block.results:
            counts[id(v)] = counts.get(id(v), 0) + 1

    visit(fn.body)
    return counts


def eliminate_common_subexpressions(fn: Function) -> Function:
    """Ops that repeat an earlier op (same primitive, operands and params) reuse its results.

    A value is reused in the block that defines it and in blocks nested inside it, never across sibling
    regions. Ops with regions are kept whole (their regions are cleaned inside), and ops with an effect run each
    time the program reaches them.
    """
    from srcjax.transpiler.primitives.control import ControlPrimitive

    rename: dict[int, Value] = {}

    def resolve(v: Value) -> Value:
        return rename.get(id(v), v)

    def operand_key(v: Value):
        if isinstance(v, Literal):
            return ("literal", v.value.dtype.str, v.value.tobytes(), v.aval.weak_type)
        return id(v)

    def visit(block: Block, table: dict) -> None:
        kept = []
        for op in block.ops:
            op.operands = [resolve(v) for v in op.operands]
            if op.regions or isinstance(op.prim, ControlPrimitive) or op.prim.effect:
                for region in op.regions:
                    visit(region, dict(table))
                kept.append(op)
                continue
            try:
                key = (op.prim.name, tuple(operand_key(v) for v in op.operands),
                       tuple(sorted((k, _freeze(p)) for k, p in op.params.items())))
                hash(key)
            except TypeError:
                kept.append(op)
                continue
            earlier = table.get(key)
            if earlier is not None and all(a.aval == b.aval for a, b in zip(earlier, op.results)):
                for new, old in zip(op.results, earlier):
                    rename[id(new)] = old
                continue
            table[key] = op.results
            kept.append(op)
        block.ops = kept
        block.results = [resolve(v) for v in block.results]

    visit(fn.body, {})
    return fn


def _freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def clean(fn: Function) -> Function:
    """The clean-up every producer of IR runs: common subexpressions, then dead code."""
    return eliminate_dead_code(eliminate_common_subexpressions(fn))


__all__ = ["eliminate_dead_code", "eliminate_common_subexpressions", "clean", "drop_effects", "has_effect", "uses",
           "Value"]
