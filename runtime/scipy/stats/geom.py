"""``srcjax.scipy.stats.geom``: the number of trials up to the first success, P(k) = (1 - p)^(k-1) p."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """(k - 1) log(1 - p) + log p for k - loc >= 1, -inf below."""
    np_ = jnp()
    k, p, loc = promote("geom.logpmf", k, p, loc)
    k = k - loc
    return np_.where(k <= 0, -np.inf, special.xlog1py(k - 1, -p) + np_.log(p))


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    return jnp().exp(logpmf(k, p, loc))
