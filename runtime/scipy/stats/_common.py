"""What the distributions share: argument checks and promotion (to one inexact dtype, broadcast), the
standardised value z = (x - loc) / scale, and lazy access to srcjax.numpy (which imports the runtime)."""

from __future__ import annotations

from typing import Any

import numpy as np
from srcjax.runtime.numpy import _core


def jnp():
    from srcjax.runtime import numpy

    return numpy


def promote(name: str, *args: Any) -> list[Any]:
    """The arguments checked, promoted to one inexact dtype (weak Python scalars do not promote) and broadcast."""
    _core.check_arraylike(name, *args)
    return _core.promote_args_inexact(name, *args)


def standardize(name: str, x: Any, loc: Any, scale: Any, *params: Any) -> list[Any]:
    """[z, scale, *params] with z = (x - loc) / scale, all of one dtype and shape."""
    x, loc, scale, *params = promote(name, x, loc, scale, *params)
    return [(x - loc) / scale, scale, *params]


def clamp(z: Any, low: float, high: float) -> Any:
    """z limited to [low, high] by ``lax.clamp``, as JAX's distributions limit their argument: its slope is 0 at
    and beyond the bounds (where ``maximum`` would pass half or all of a cotangent to an infinite slope there)."""
    from srcjax.runtime import lax

    return lax.clamp(np.asarray(low, dtype(z)), z, np.asarray(high, dtype(z)))


def dtype(x: Any) -> Any:
    return _core.aval(x).dtype
