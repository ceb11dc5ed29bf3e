"""``srcjax.scipy.stats.gennorm``: the generalized normal distribution, density beta e^(-|x|^beta) /
(2 Gamma(1/beta))."""

from __future__ import annotations

import math
from typing import Any

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x: Any, beta: Any) -> Any:
    """log(beta) - log 2 - log Gamma(1/beta) - |x|^beta"""
    np_ = jnp()
    x, beta = promote("gennorm.logpdf", x, beta)
    return np_.log(beta) - math.log(2) - special.gammaln(1 / beta) - np_.abs(x) ** beta


def pdf(x: Any, beta: Any) -> Any:
    return jnp().exp(logpdf(x, beta))


def cdf(x: Any, beta: Any) -> Any:
    """1/2 + sign(x) P(1/beta, |x|^beta) / 2"""
    np_ = jnp()
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 + 0.5 * np_.sign(x) * special.gammainc(1 / beta, np_.abs(x) ** beta)
