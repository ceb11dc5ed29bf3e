"""``srcjax.scipy.stats.chi2``: the chi-squared distribution, Gamma(df/2) of scale 2."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import clamp, jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(df/2 - 1) log z - z/2 - log Gamma(df/2) - (df/2) log 2 - log(scale) for x >= loc, -inf below (the support
    decided on x, not z, as JAX)."""
    np_ = jnp()
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half_df = df / 2
    log_density = special.xlogy(half_df - 1, z) - z / 2 - special.gammaln(half_df) - half_df * math.log(2)
    return np_.where(x < loc, -np.inf, log_density - np_.log(scale))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, df, loc, scale))


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(df/2, z/2), z clamped to [0, inf]"""
    z, _, df = standardize("chi2.cdf", x, loc, scale, df)
    return special.gammainc(df / 2, clamp(z / 2, 0, np.inf))


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(cdf(x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Q(df/2, z/2), z clamped to [0, inf]"""
    z, _, df = standardize("chi2.sf", x, loc, scale, df)
    return special.gammaincc(df / 2, clamp(z / 2, 0, np.inf))


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(sf(x, df, loc, scale))
