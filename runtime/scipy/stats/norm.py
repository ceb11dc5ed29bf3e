"""``srcjax.scipy.stats.norm``: the normal distribution N(loc, scale^2), through ``scipy.special``'s
``ndtr``, ``log_ndtr`` and ``ndtri`` of the standardised value z = (x - loc) / scale."""

from __future__ import annotations

import math
from typing import Any

from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy import special

__all__ = ["pdf", "logpdf", "cdf", "logcdf", "ppf", "sf", "logsf", "isf"]


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


def _standardize(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
    _core.check_arraylike(name, x, loc, scale)
    x, loc, scale = _core.promote_args_inexact(name, x, loc, scale)
    return (x - loc) / scale, loc, scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-z^2/2 - log|scale| - log(2 pi)/2 (log(scale^2)/2, as JAX: a negative scale acts as its absolute value)"""
    z, _, scale = _standardize("norm.logpdf", x, loc, scale)
    return -0.5 * z * z - 0.5 * _jnp().log(scale * scale) - 0.5 * math.log(2 * math.pi)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return _jnp().exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = _standardize("norm.cdf", x, loc, scale)
    return special.ndtr(z)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = _standardize("norm.logcdf", x, loc, scale)
    return special.log_ndtr(z)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - cdf = Phi(-z), computed without cancellation."""
    z, _, _ = _standardize("norm.sf", x, loc, scale)
    return special.ndtr(-z)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    z, _, _ = _standardize("norm.logsf", x, loc, scale)
    return special.log_ndtr(-z)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function: loc + scale * Phi^-1(q)."""
    _core.check_arraylike("norm.ppf", q, loc, scale)
    q, loc, scale = _core.promote_args_inexact("norm.ppf", q, loc, scale)
    return special.ndtri(q) * scale + loc


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse survival function: loc + scale * Phi^-1(1 - q) = loc - scale * Phi^-1(q)."""
    _core.check_arraylike("norm.isf", q, loc, scale)
    q, loc, scale = _core.promote_args_inexact("norm.isf", q, loc, scale)
    return -special.ndtri(q) * scale + loc
