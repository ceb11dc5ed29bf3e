"""``srcjax.scipy.stats.betabinom``: the binomial distribution with p drawn from Beta(a, b)."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """log C(n, y) + log B(y + a, n - y + b) - log B(a, b) for y = floor(k) - loc in [0, n], with
    C(n, y) = 1 / ((n + 1) B(n - y + 1, y + 1)); -inf outside, NaN for n < 0 or a, b <= 0."""
    np_ = jnp()
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = np_.floor(k) - loc
    log_comb = -np_.log1p(n) - special.betaln(n - y + 1, y + 1)
    log_probability = log_comb + special.betaln(y + a, n - y + b) - special.betaln(a, b)
    log_probability = np_.where((y == 0) & (n == 0), 0, log_probability)
    log_probability = np_.where((y < -loc) | (y > n) | (y + a <= 0), -np.inf, log_probability)
    return np_.where((n < 0) | (a <= 0) | (b <= 0), np.nan, log_probability)


def pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    return jnp().exp(logpmf(k, n, a, b, loc))
