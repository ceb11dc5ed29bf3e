"""``srcjax.scipy.stats.logistic``: cdf expit(z), density e^-z / (scale (1 + e^-z)^2)."""

from __future__ import annotations

from typing import Any

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote, standardize

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-2 log(e^(z/2) + e^(-z/2)) - log(scale): symmetric in z, so finite (or -inf) in both tails."""
    np_ = jnp()
    z, scale = standardize("logistic.logpdf", x, loc, scale)
    return -2 * np_.logaddexp(z / 2, -z / 2) - np_.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _ = standardize("logistic.cdf", x, loc, scale)
    return special.expit(z)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _ = standardize("logistic.sf", x, loc, scale)
    return special.expit(-z)


def ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale logit(q)"""
    q, loc, scale = promote("logistic.ppf", x, loc, scale)
    return loc + scale * special.logit(q)


def isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc - scale logit(q)"""
    q, loc, scale = promote("logistic.isf", x, loc, scale)
    return loc - scale * special.logit(q)
