"""``srcjax.scipy.stats.nbinom``: k failures before the n-th success of probability p."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log Gamma(y + n) - log Gamma(n) - log y! + n log p + y log(1 - p) for y = k - loc >= 0, -inf below."""
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    log_comb = special.gammaln(y + n) - special.gammaln(n) - special.gammaln(y + 1)
    log_probability = log_comb + special.xlogy(n, p) + special.xlog1py(y, -p)
    return jnp().where(y < 0, -np.inf, log_probability)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    return jnp().exp(logpmf(k, n, p, loc))
