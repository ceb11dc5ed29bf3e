"""``srcjax.scipy.stats.beta``: density z^(a-1) (1-z)^(b-1) / (B(a, b) scale) on z = (x - loc) / scale in [0, 1]."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import clamp, jnp, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(a - 1) log z + (b - 1) log(1 - z) - log B(a, b) - log(scale) on [0, 1], -inf outside;
    NaN unless a, b and scale are positive."""
    np_ = jnp()
    z, scale, a, b = standardize("beta.logpdf", x, loc, scale, a, b)
    log_density = special.xlogy(a - 1, z) + special.xlog1py(b - 1, -z) - special.betaln(a, b) - np_.log(scale)
    log_density = np_.where((z < 0) | (z > 1), -np.inf, log_density)
    return np_.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, log_density)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, a, b, loc, scale))


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """I_z(a, b) with z clipped to [0, 1]."""
    z, _, a, b = standardize("beta.cdf", x, loc, scale, a, b)
    return special.betainc(a, b, clamp(z, 0, 1))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(cdf(x, a, b, loc, scale))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - I_z(a, b) = I_(1-z)(b, a), z clipped to [0, 1]."""
    z, _, a, b = standardize("beta.sf", x, loc, scale, a, b)
    return special.betainc(b, a, 1 - clamp(z, 0, 1))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().log(sf(x, a, b, loc, scale))
