"""``srcjax.scipy.stats.poisson``: P(k) = mu^k e^-mu / k!."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpmf", "pmf", "cdf"]


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """y log mu - log y! - mu for y = k - loc >= 0 and k an integer, -inf elsewhere."""
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    y = k - loc
    np_ = jnp()
    log_probability = special.xlogy(y, mu) - special.gammaln(y + 1) - mu
    return np_.where((y >= 0) & (np_.round(k) == k), log_probability, -np.inf)  # (NaN k: -inf, as JAX)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return jnp().exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """P(K <= y) = Q(floor(y) + 1, mu), the regularized upper incomplete gamma function; 0 for y < 0."""
    np_ = jnp()
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    y = k - loc
    return np_.where(y < 0, 0, special.gammaincc(np_.floor(y) + 1, mu)).astype(y.dtype)
