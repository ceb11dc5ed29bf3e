"""Rewrites of single ops that keep values exactly (part of ``simplify``): identities (``x & True``,
``x * 1.0``, a reshape to its own shape, ``k < 0`` on a loop's iteration number) and broadcasts of broadcasts.
"""

from __future__ import annotations

from typing import Any

from srcjax.transpiler.ir import Literal, Op, Value
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p


def literal_broadcast(op: Op) -> Literal | None:
    """The literal an op fills its result with (``broadcast_in_dim`` of a scalar literal), else None."""
    if op.prim is broadcast_in_dim_p and isinstance(op.operands[0], Literal) and not op.params["broadcast_dimensions"]:
        return op.operands[0]
    return None


def identity(op: Op, counters: set[int], definitions: dict[int, Op]) -> Value | None:
    """The value an op gives back unchanged, when it is one of its operands: ``x & True``, ``x + 0`` on
    integers, ``x * 1.0``, a broadcast or reshape to ``x``'s own shape, a select between equal cases, ``k < 0``
    on a loop's iteration number (``counters``; it counts from 0). Exact: floats' ``x + 0.0`` is not ``x``
    (-0.0 + 0.0 is 0.0)."""
    name, operands = op.prim.name, op.operands
    if len(op.results) != 1 or op.regions:
        return None
    result = op.results[0].aval
    if name in _NEUTRAL and len(operands) == 2:
        kinds, neutral, sides = _NEUTRAL[name]
        for i in sides:
            x, other = operands[1 - i], _as_literal(operands[i], definitions)
            if (other is not None and other.value == neutral and x.aval.shape == result.shape
                    and x.aval.dtype == result.dtype and result.dtype.kind in kinds):
                return x
    if name in ("broadcast_in_dim", "reshape", "transpose", "convert_element_type"):
        x = operands[0]
        keeps = {
            "broadcast_in_dim": lambda: tuple(op.params["broadcast_dimensions"]) == tuple(range(x.aval.ndim)),
            "reshape": lambda: op.params.get("dimensions") is None,
            "transpose": lambda: tuple(op.params["permutation"]) == tuple(range(x.aval.ndim)),
            "convert_element_type": lambda: True,
        }[name]
        return x if x.aval.shape == result.shape and x.aval.dtype == result.dtype and keeps() else None
    if name == "stop_gradient":  # the identity to evaluation (it means something to differentiation only)
        return operands[0]
    if name == "select_n":
        which, *cases = operands
        if isinstance(which, Literal):
            return cases[min(max(int(which.value), 0), len(cases) - 1)]
        return cases[0] if all(c is cases[0] for c in cases) else None
    if name in ("lt", "ge") and id(operands[0]) in counters and isinstance(operands[1], Literal):
        if operands[1].value <= 0:
            return Literal(name == "ge", result)
    return None


def compose_broadcasts(op: Op, definitions: dict[int, Op]) -> None:
    """A broadcast of a broadcast is one broadcast of the first operand (x's axis i lands on axis
    ``outer[inner[i]]``); the inner one goes if nothing else reads it."""
    inner = definitions.get(id(op.operands[0])) if op.prim is broadcast_in_dim_p else None
    if inner is None or inner.prim is not broadcast_in_dim_p:
        return
    outer_dims = op.params["broadcast_dimensions"]
    op.operands = [inner.operands[0]]
    op.params = dict(op.params, broadcast_dimensions=tuple(outer_dims[d] for d in inner.params["broadcast_dimensions"]))


def _as_literal(v: Value, definitions: dict[int, Op]) -> Literal | None:
    """The literal ``v`` is, or fills its elements with."""
    if isinstance(v, Literal):
        return v
    op = definitions.get(id(v))
    return literal_broadcast(op) if op is not None else None


# primitive -> (the dtype kinds it applies to, its neutral element, which operand may be that element)
_NEUTRAL: dict[str, tuple[str, Any, tuple[int, ...]]] = {
    "and": ("b", True, (0, 1)), "or": ("b", False, (0, 1)), "xor": ("b", False, (0, 1)),
    "ne": ("b", False, (0, 1)), "eq": ("b", True, (0, 1)),
    # x * 1.0 is x for every float but a signaling NaN (which no arithmetic makes); x + 0.0 is not (-0.0)
    "add": ("iu", 0, (0, 1)), "sub": ("iu", 0, (1,)), "mul": ("iuf", 1, (0, 1)), "div": ("iu", 1, (1,)),
}


__all__ = ["identity", "compose_broadcasts", "literal_broadcast"]
