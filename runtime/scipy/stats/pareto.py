"""``srcjax.scipy.stats.pareto``: density b / (scale z^(b+1)) on z = (x - loc) / scale >= 1, the support decided
on x >= loc + scale, not on z (as JAX: a negative scale does not flip it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log b - log(scale) - (b + 1) log z for x >= loc + scale, -inf below."""
    np_ = jnp()
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    z = (x - loc) / scale
    return np_.where(x < loc + scale, -np.inf, np_.log(b) - np_.log(scale) - (b + 1) * np_.log(z))


def pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, b, loc, scale))


def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-b log z for x >= loc + scale, 0 below."""
    np_ = jnp()
    x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
    z = (x - loc) / scale
    return np_.where(x < loc + scale, 0, -b * np_.log(z)).astype(z.dtype)


def sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logsf(x, b, loc, scale))


def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(1 - z^-b) for x >= loc + scale, -inf below."""
    np_ = jnp()
    return np_.log1p(-np_.exp(logsf(x, b, loc, scale)))


def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - z^-b for x >= loc + scale, 0 below."""
    return -jnp().expm1(logsf(x, b, loc, scale))


def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale (1 - q)^(-1/b) for q in [0, 1], NaN outside (a power, as JAX: 1^(-1/0) is 1)."""
    np_ = jnp()
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    return np_.where((q < 0) | (q > 1) | np_.isnan(q), np.nan, loc + scale * np_.power(1 - q, -1 / b))
