"""``srcjax.scipy.stats.uniform``: density 1 / scale on [loc, loc + scale]."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log(scale) on [loc, loc + scale], -inf outside."""
    np_ = jnp()
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    return np_.where((x < loc) | (x > loc + scale), -np.inf, -np_.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """0 below loc, 1 above loc + scale, (x - loc) / scale between; 0 where none holds (NaN x)."""
    np_ = jnp()
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    cases = [x < loc, x > loc + scale, (x >= loc) & (x <= loc + scale)]
    return np_.select(cases, [np_.zeros_like(x), np_.ones_like(x), (x - loc) / scale])


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + q scale for q in [0, 1], NaN outside."""
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return jnp().where((q < 0) | (q > 1), np.nan, loc + q * scale)
