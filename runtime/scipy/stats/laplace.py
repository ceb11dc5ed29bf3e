"""``srcjax.scipy.stats.laplace``: density e^-|z| / (2 scale)."""

from __future__ import annotations

import math
from typing import Any

from srcjax.runtime.scipy.stats._common import jnp, standardize

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-|z| - log(2 scale)"""
    np_ = jnp()
    z, scale = standardize("laplace.logpdf", x, loc, scale)
    return -np_.abs(z) - math.log(2) - np_.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """e^z / 2 up to 0, 1 - e^-z / 2 above: each side its own formula (as JAX), so the slope at z = 0 is the
    density 1/2 (through |z|, whose slope at 0 is 1, it came out -1/2); each side evaluated at a safe point on the
    other, so that its unused exponential cannot overflow into the gradient."""
    np_ = jnp()
    z, _ = standardize("laplace.cdf", x, loc, scale)
    left = z <= 0
    return np_.where(left, 0.5 * np_.exp(np_.where(left, z, 0)), 1 - 0.5 * np_.exp(-np_.where(left, 0, z)))
