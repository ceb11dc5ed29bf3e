"""``srcjax.scipy.integrate``: ``trapezoid`` (the composite trapezoidal rule; JAX's one name here)."""

from __future__ import annotations

from typing import Any

import srcjax.runtime.numpy as jnp

__all__ = ["trapezoid"]


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """``sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2)`` along ``axis``; spacing ``dx`` where ``x`` is None."""
    return jnp.trapezoid(y, x, dx, axis)
