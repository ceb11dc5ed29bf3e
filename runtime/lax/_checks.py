"""Argument checks shared by the lax modules: operands, int sequences and axes, with lax's messages."""

from __future__ import annotations

import operator
from typing import Any

from srcjax.runtime.numpy._core import asarray, is_arraylike
from srcjax.transpiler.ir import ConcretizationError

PY_SCALARS = (bool, int, float, complex)


def operand(x: Any, name: str) -> Any:
    if not is_arraylike(x):
        raise TypeError(f"lax.{name}: expected an array or a scalar, got {type(x).__name__}")
    return x


def unchanged(x: Any) -> Any:
    """What an operation that changes nothing gives: ``x`` as an array, as JAX's (a NumPy operand becomes an array
    of its canonical dtype, float64 as float32 unless x64 is on), never the caller's own NumPy array."""
    return asarray(x)


def ints(xs: Any, name: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(d) for d in xs)
    except TypeError as e:  # (a traced one stays a ConcretizationError: a loop whose index it is retries unrolled)
        raise (ConcretizationError if isinstance(e, ConcretizationError) else TypeError)(
            f"lax.{name}: {what} must be a sequence of ints, got {xs!r}") from None


def axis(axis: int, ndim: int, name: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"lax.{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim
