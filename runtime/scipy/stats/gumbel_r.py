"""``srcjax.scipy.stats.gumbel_r``: the right-skewed Gumbel (maximum) distribution, cdf exp(-e^-z);
NaN unless scale > 0, quantiles NaN outside (0, 1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy.stats._common import jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-z - e^-z - log(scale)"""
    np_ = jnp()
    z, scale = standardize("gumbel_r.logpdf", x, loc, scale)
    return np_.where(scale > 0, -z - np_.exp(-z) - np_.log(scale), np.nan)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-e^-z"""
    z, scale = standardize("gumbel_r.logcdf", x, loc, scale)
    return jnp().where(scale > 0, -jnp().exp(-z), np.nan)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logcdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - exp(-e^-z), as -expm1(-e^-z)"""
    return -jnp().expm1(logcdf(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(1 - exp(-e^-z)), as log1mexp(e^-z): log(sf) would round 1 - 2e-9 to 1 (0 at z = -3 in float32)."""
    from srcjax.runtime import nn

    z, scale = standardize("gumbel_r.logsf", x, loc, scale)
    return jnp().where(scale > 0, nn.log1mexp(jnp().exp(-z)), np.nan)


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc - scale log(-log p)"""
    np_ = jnp()
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    return np_.where((p > 0) & (p < 1), loc - scale * np_.log(-np_.log(p)), np.nan)
