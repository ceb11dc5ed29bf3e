"""``srcjax.scipy.stats.gamma``: density z^(a-1) e^-z / (Gamma(a) scale) on z = (x - loc) / scale >= 0."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(a - 1) log z - z - log Gamma(a) - log(scale) for z >= 0, -inf below."""
    np_ = jnp()
    z, scale, a = standardize("gamma.logpdf", x, loc, scale, a)
    log_density = special.xlogy(a - 1, z) - z - special.gammaln(a) - np_.log(scale)
    return np_.where(z >= 0, log_density, -np.inf)  # (NaN x too: -inf, as JAX)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(a, max(z, 0)), the regularized lower incomplete gamma function."""
    z, _, a = standardize("gamma.cdf", x, loc, scale, a)
    return special.gammainc(a, jnp().maximum(z, 0))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(cdf(x, a, loc, scale))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Q(a, z), the regularized upper incomplete gamma function, for z >= 0; 1 below."""
    np_ = jnp()
    z, _, a = standardize("gamma.sf", x, loc, scale, a)
    return np_.where(z < 0, 1, special.gammaincc(a, np_.maximum(z, 0))).astype(z.dtype)


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(sf(x, a, loc, scale))
