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
    """e^z / 2 below 0, 1 - e^-z / 2 above."""
    np_ = jnp()
    z, _ = standardize("laplace.cdf", x, loc, scale)
    half_tail = 0.5 * np_.exp(-np_.abs(z))
    return np_.where(z <= 0, half_tail, 1 - half_tail)
