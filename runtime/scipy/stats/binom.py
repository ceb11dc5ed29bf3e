"""``srcjax.scipy.stats.binom``: k successes in n trials of probability p."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log C(n, y) + y log p + (n - y) log(1 - p) for y = k - loc in [0, n + 1), -inf elsewhere."""
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    log_comb = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
    log_probability = log_comb + special.xlogy(y, p) + special.xlog1py(n - y, -p)
    return jnp().where((y >= 0) & (y < n + 1), log_probability, -np.inf)  # (NaN k too: -inf, as JAX)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return jnp().exp(logpmf(k, n, p, loc))
