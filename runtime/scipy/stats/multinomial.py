"""``srcjax.scipy.stats.multinomial``: counts x (over the last axis) of n draws with probabilities p."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp

__all__ = ["logpmf", "pmf"]


def logpmf(x: Any, n: Any, p: Any) -> Any:
    """log n! + sum_i (x_i log p_i - log x_i!) where the counts sum to n, -inf elsewhere; x and n are integers."""
    np_ = jnp()
    _core.check_arraylike("multinomial.logpmf", x, n, p)
    (p,) = _core.promote_dtypes_inexact(p)
    x, n = np_.asarray(x), np_.asarray(n)
    if x.dtype.kind not in "iu" or n.dtype.kind not in "iu":
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}")
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probability = special.gammaln(n + 1) + np_.sum(special.xlogy(x, p) - special.gammaln(x + 1), axis=-1)
    return np_.where(np_.sum(x) == n, log_probability, -np.inf)


def pmf(x: Any, n: Any, p: Any) -> Any:
    return jnp().exp(logpmf(x, n, p))
