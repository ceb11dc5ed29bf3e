"""``srcjax.scipy.stats.bernoulli``: P(k = 1) = p, P(k = 0) = 1 - p."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """k log p + (1 - k) log(1 - p) on k - loc in [0, 1], -inf elsewhere."""
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    k = k - loc
    log_probability = special.xlogy(k, p) + special.xlog1py(1 - k, -p)
    return jnp().where((k < 0) | (k > 1), -np.inf, log_probability)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return jnp().exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any) -> Any:
    """0 below 0, 1 - p on [0, 1), 1 from 1 on; NaN for p outside [0, 1]."""
    np_ = jnp()
    k, p = promote("bernoulli.cdf", k, p)
    value = np_.where(k < 0, 0, np_.where(k < 1, 1 - p, 1))
    return np_.where(np_.isnan(k) | np_.isnan(p) | (p < 0) | (p > 1), np.nan, value).astype(p.dtype)


def ppf(q: Any, p: Any) -> Any:
    """The smallest k in {0, 1} with cdf(k) >= q; NaN for q or p outside [0, 1]."""
    np_ = jnp()
    q, p = promote("bernoulli.ppf", q, p)
    invalid = np_.isnan(q) | np_.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return np_.where(invalid, np.nan, np_.where(q <= 1 - p, 0, 1)).astype(p.dtype)
