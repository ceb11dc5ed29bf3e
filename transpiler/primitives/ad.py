"""The vocabulary of differentiation rules: symbolic zeros, undefined primals, and rule constructors.

JVP rule: ``rule(primals, tangents, **params) -> (primal_out, tangent_out)`` (lists for primitives with
several results). A tangent may be ``Zero(aval)``; a rule never multiplies a ``Zero``. ``defjvp`` builds
a rule from one partial derivative per operand, each called only for a non-zero tangent:
``defjvp(mul_p, lambda g, x, y: g * y, lambda g, x, y: x * g)``.

Transpose rule (for primitives that are linear in some operands): ``rule(cotangent, *operands, **params)
-> [cotangent or None per operand]``. The operands the transpose is taken with respect to are
``UndefinedPrimal(aval)``; the others are primal values. The cotangent passed in is never a ``Zero``;
``None`` in the result means a zero cotangent.

Rules are written with operators and ``bind`` on the values they receive, so one rule computes when run
eagerly and records IR while a function is transformed.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from srcjax.transpiler.primitives.core import Primitive, registered
from srcjax.transpiler.types import StackType, TensorType


class Zero:
    """A tangent or cotangent known to be zero, of a given type; never materialised unless asked."""

    __slots__ = ("aval",)

    def __init__(self, aval: TensorType):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval})"


class UndefinedPrimal:
    """In a transpose rule, the operand the cotangent flows back to (its value is not known)."""

    __slots__ = ("aval",)

    def __init__(self, aval: TensorType):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval})"


def is_zero(x: Any) -> bool:
    return isinstance(x, Zero)


def is_undefined(x: Any) -> bool:
    return isinstance(x, UndefinedPrimal)


def aval_of(x: Any) -> TensorType:
    aval = getattr(x, "aval", None)
    if isinstance(aval, TensorType):
        return aval
    from srcjax.transpiler.types import type_of_value

    return type_of_value(x)


def tangent_aval(aval: TensorType) -> TensorType:
    """Tangents of floats are floats of the same type; integers and bools have no tangent (always zero)."""
    if not isinstance(aval, TensorType):  # a stack of residuals: its tangent is a stack of tangents
        return type(aval)(tangent_aval(aval.elem))
    return aval.update(weak_type=False) if aval.dtype.kind in "fc" else aval


def is_differentiable(aval: TensorType) -> bool:
    return aval.dtype.kind in "fc"


def has_tangent(aval: Any) -> bool:
    """Floats have tangents, and so do stacks (of residuals: their tangent is the stack of tangents)."""
    return isinstance(aval, StackType) or is_differentiable(aval)


def zeros(aval: TensorType) -> Any:
    """A materialised zero of ``aval``: a broadcast of a scalar 0 (recorded, not a big constant)."""
    scalar = np.zeros((), aval.dtype)
    if aval.shape == ():
        return registered("convert_element_type").bind(scalar, new_dtype=aval.dtype, weak_type=aval.weak_type)
    return registered("broadcast_in_dim").bind(scalar, shape=aval.shape, broadcast_dimensions=())


def instantiate(t: Any) -> Any:
    return zeros(t.aval) if isinstance(t, Zero) else t


def add_tangents(a: Any, b: Any) -> Any:
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    return registered("add").bind(a, b)


def defjvp(prim: Primitive, *partials: Callable[..., Any] | None) -> None:
    """JVP from one partial per operand: ``partial(g, *primals, **params)`` is the tangent contribution of a
    non-zero tangent ``g`` of that operand (``None``: the operand is not differentiable)."""

    def rule(primals: Sequence[Any], tangents: Sequence[Any], **params: Any):
        out = prim.bind(*primals, **params)
        total: Any = Zero(tangent_aval(aval_of(out)))
        for partial, g in zip(partials, tangents):
            if partial is not None and not isinstance(g, Zero):
                total = add_tangents(total, partial(g, *primals, **params))
        return out, total

    rule.binds_primal_first = True
    prim.def_jvp(rule)


def defjvp2(prim: Primitive, *partials: Callable[..., Any] | None) -> None:
    """As ``defjvp``, but each partial also receives the primal output: ``partial(g, ans, *primals)``."""

    def rule(primals: Sequence[Any], tangents: Sequence[Any], **params: Any):
        out = prim.bind(*primals, **params)
        total: Any = Zero(tangent_aval(aval_of(out)))
        for partial, g in zip(partials, tangents):
            if partial is not None and not isinstance(g, Zero):
                total = add_tangents(total, partial(g, out, *primals, **params))
        return out, total

    rule.binds_primal_first = True
    prim.def_jvp(rule)


def linear_jvp(prim: Primitive) -> Callable[..., Any]:
    """The JVP of a primitive linear in all its operands: the primitive applied to the tangents."""

    def rule(primals: Sequence[Any], tangents: Sequence[Any], **params: Any):
        out = prim.bind(*primals, **params)
        if all(isinstance(t, Zero) for t in tangents):
            zero = [Zero(tangent_aval(aval_of(o))) for o in out] if prim.multiple_results else \
                Zero(tangent_aval(aval_of(out)))
            return out, zero
        return out, prim.bind(*(instantiate(t) for t in tangents), **params)

    rule.binds_primal_first = True
    return rule


def jvp_of(prim: Primitive) -> Callable[..., Any] | None:
    """The JVP rule the engine uses: the declared one, or the linear one for linear primitives."""
    if prim.jvp_rule is not None:
        return prim.jvp_rule
    if prim.linear:
        return linear_jvp(prim)
    return None
