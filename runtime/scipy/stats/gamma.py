"""``srcjax.scipy.stats.gamma``: density z^(a-1) e^-z / (Gamma(a) scale) on z = (x - loc) / scale >= 0."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import clamp, jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(a - 1) log z - z - log Gamma(a) - log(scale) for x >= loc, -inf below (the support decided on x, not z, as
    JAX: a negative scale does not flip it)."""
    np_ = jnp()
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    inside = x >= loc  # (NaN x: -inf, as JAX)
    z = np_.where(inside, (x - loc) / scale, 1)
    log_density = special.xlogy(a - 1, z) - z - special.gammaln(a) - np_.log(scale)
    return np_.where(inside, log_density, -np.inf)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(a, z), the regularized lower incomplete gamma function, with z clamped to [0, inf]."""
    z, _, a = standardize("gamma.cdf", x, loc, scale, a)
    return special.gammainc(a, clamp(z, 0, np.inf))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(cdf(x, a, loc, scale))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Q(a, z), the regularized upper incomplete gamma function, for z >= 0; 1 below."""
    np_ = jnp()
    z, _, a = standardize("gamma.sf", x, loc, scale, a)
    return np_.where(z < 0, 1, special.gammaincc(a, np_.maximum(z, 0))).astype(z.dtype)


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(sf(x, a, loc, scale))
