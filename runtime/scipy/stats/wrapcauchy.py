"""``srcjax.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution on [0, 2 pi] with shape c in (0, 1)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, c: Any) -> Any:
    """log(1 - c^2) - log(2 pi) - log(1 + c^2 - 2 c cos x) on [0, 2 pi], -inf outside; NaN unless 0 < c < 1."""
    np_ = jnp()
    x, c = promote("wrapcauchy.logpdf", x, c)
    log_density = np_.log1p(-c * c) - math.log(2 * math.pi) - np_.log(1 + c * c - 2 * c * np_.cos(x))
    log_density = np_.where((x >= 0) & (x <= 2 * math.pi), log_density, -np.inf)
    return np_.where((c > 0) & (c < 1), log_density, np.nan)


def pdf(x: Any, c: Any) -> Any:
    return jnp().exp(logpdf(x, c))
