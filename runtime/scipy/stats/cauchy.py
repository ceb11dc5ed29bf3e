"""``srcjax.scipy.stats.cauchy``: density 1 / (pi scale (1 + z^2)), z = (x - loc) / scale."""

from __future__ import annotations

import math
from typing import Any

from srcjax.runtime.scipy.stats._common import jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log(pi) - log(scale) - log(1 + z^2)"""
    np_ = jnp()
    z, scale = standardize("cauchy.logpdf", x, loc, scale)
    return -math.log(math.pi) - np_.log(scale) - np_.log1p(z * z)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1/2 + arctan(z) / pi"""
    z, _ = standardize("cauchy.cdf", x, loc, scale)
    return 0.5 + jnp().arctan(z) / math.pi


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - cdf = cdf of the reflected value, 1/2 - arctan(z) / pi"""
    z, _ = standardize("cauchy.sf", x, loc, scale)
    return 0.5 - jnp().arctan(z) / math.pi


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(sf(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale tan(pi (q - 1/2))"""
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    return loc + scale * jnp().tan(math.pi * (q - 0.5))


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale tan(pi (1/2 - q))"""
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return loc + scale * jnp().tan(math.pi * (0.5 - q))
