"""``srcjax.scipy.stats.pareto``: density b / (scale z^(b+1)) on z = (x - loc) / scale >= 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy.stats._common import jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log b - log(scale) - (b + 1) log z for z >= 1, -inf below."""
    np_ = jnp()
    z, scale, b = standardize("pareto.logpdf", x, loc, scale, b)
    return np_.where(z < 1, -np.inf, np_.log(b) - np_.log(scale) - (b + 1) * np_.log(z))


def pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, b, loc, scale))


def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-b log z for z >= 1, 0 below."""
    np_ = jnp()
    z, _, b = standardize("pareto.logsf", x, loc, scale, b)
    return np_.where(z < 1, 0, -b * np_.log(z)).astype(z.dtype)


def sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logsf(x, b, loc, scale))


def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(1 - z^-b) for z >= 1, -inf below."""
    np_ = jnp()
    return np_.log1p(-np_.exp(logsf(x, b, loc, scale)))


def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - z^-b for z >= 1, 0 below."""
    return -jnp().expm1(logsf(x, b, loc, scale))


def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale (1 - q)^(-1/b) for q in [0, 1], NaN outside."""
    np_ = jnp()
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    return np_.where((q < 0) | (q > 1), np.nan, loc + scale * np_.exp(-np_.log1p(-q) / b))
