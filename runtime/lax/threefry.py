"""``lax.threefry2x32``: the counter-based hash under ``srcjax.random``, by a public name.

srcjax-specific (JAX keeps its primitive internal, ``jax._src.prng.threefry2x32_p``): the Python emitter
writes a program's random bits with it, so an emitted module needs no internals.
"""

from __future__ import annotations

from typing import Any

from srcjax.transpiler.primitives.random import threefry2x32_p

__all__ = ["threefry2x32"]


def threefry2x32(k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Threefry-2x32 (20 rounds) of the counter words ``(x0, x1)`` under the key ``(k0, k1)``: two uint32
    arrays. The four operands are uint32 arrays of one shape (broadcast a key to the counters' shape)."""
    y0, y1 = threefry2x32_p.bind(k0, k1, x0, x1)
    return y0, y1
