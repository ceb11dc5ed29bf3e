"""``srcjax.scipy.stats.truncnorm``: the standard normal restricted to [a, b] (in standardised units), shifted and
scaled (NaN for a >= b). Everything goes through log Z(a, b) = log(Phi(b) - Phi(a)), taken in whichever tail
keeps its digits."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats import norm
from srcjax.runtime.scipy.stats._common import jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _log_difference(log_p: Any, log_q: Any) -> Any:
    """log(p - q) from log p >= log q: log p + log(1 - q/p)."""
    return log_p + jnp().log1p(-jnp().exp(log_q - log_p))


def _log_mass(a: Any, b: Any) -> Any:
    """log(Phi(b) - Phi(a)) for a <= b: from the left tail when b <= 0, from the right tail (Phi(-a) - Phi(-b))
    when a > 0, and as log(1 - Phi(a) - Phi(-b)) when the interval holds 0."""
    np_ = jnp()
    left = _log_difference(special.log_ndtr(b), special.log_ndtr(a))
    right = _log_difference(special.log_ndtr(-a), special.log_ndtr(-b))
    central = np_.log1p(-special.ndtr(a) - special.ndtr(-b))
    return np_.where(b <= 0, left, np_.where(a > 0, right, central))


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log phi(z) - log Z(a, b) - log|scale| on [a, b], -inf outside (norm's density, so a negative scale acts as
    its absolute value, as in JAX)."""
    np_ = jnp()
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    z = (x - loc) / scale
    log_density = norm.logpdf(x, loc, scale) - _log_mass(a, b)
    return np_.where(a >= b, np.nan, np_.where((z < a) | (z > b), -np.inf, log_density))


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, a, b, loc, scale))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log Z(a, z) - log Z(a, b): -inf below a, 0 above b; log1p(-sf) where that is above -0.1, so that the
    right tail keeps its digits (log(1 - 1e-23) is not 0), as SciPy and JAX do."""
    np_ = jnp()
    z, _, a, b = standardize("truncnorm.logcdf", x, loc, scale, a, b)
    inside = (z > a) & (z < b)
    inner = np_.where(inside, z, b)
    log_mass = _log_mass(a, b)
    value = _log_mass(a, inner) - log_mass
    complement = _log_mass(np_.where(inside, z, a), b) - log_mass  # log sf
    # (JAX's select: a NaN z, in none of its cases, gives 0)
    value = np_.select([(z >= b) | np_.isnan(z), z <= a, value > -0.1, z > a],
                       [np_.zeros_like(z), np_.full_like(z, -np.inf), np_.log1p(-np_.exp(complement)), value])
    return np_.where(a >= b, np.nan, value)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logcdf(x, a, b, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The mirror image: logcdf(-x) of the distribution on [-b, -a] about -loc (JAX's definition)."""
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logsf(x, a, b, loc, scale))
