"""``srcjax.scipy.stats.expon``: density e^-z / scale on z = (x - loc) / scale >= 0."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy.stats._common import jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _below(x: Any, loc: Any) -> Any:
    """x < loc, the outside of the support (decided on x, not z, as JAX: a negative scale does not flip it)."""
    x, loc = promote("expon", x, loc)
    return x < loc


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-z - log(scale) for z >= 0, -inf below."""
    np_ = jnp()
    z, scale = standardize("expon.logpdf", x, loc, scale)
    return np_.where(_below(x, loc), -np.inf, -z - np_.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - e^-z (as -expm1(-z)) for z >= 0, 0 below."""
    np_ = jnp()
    z, _ = standardize("expon.cdf", x, loc, scale)
    below = _below(x, loc)
    return np_.where(below, 0, -np_.expm1(-z)).astype(z.dtype)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(1 - e^-z) (as log1p(-e^-z)) for z >= 0, -inf below."""
    np_ = jnp()
    z, _ = standardize("expon.logcdf", x, loc, scale)
    below = _below(x, loc)
    return np_.where(below, -np.inf, np_.log1p(-np_.exp(-z)))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """e^-z for z >= 0, 1 below."""
    np_ = jnp()
    z, _ = standardize("expon.sf", x, loc, scale)
    below = _below(x, loc)
    return np_.where(below, 1, np_.exp(-z)).astype(z.dtype)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-z for z >= 0, 0 below."""
    z, _ = standardize("expon.logsf", x, loc, scale)
    below = _below(x, loc)
    return jnp().where(below, 0, -z).astype(z.dtype)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc - scale log(1 - q) for q in [0, 1], NaN outside."""
    np_ = jnp()
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    return np_.where((q < 0) | (q > 1), np.nan, loc - scale * np_.log1p(-q))
