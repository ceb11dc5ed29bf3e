"""``srcjax.scipy.stats.t``: Student's t distribution with df degrees of freedom."""

from __future__ import annotations

import math
from typing import Any

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, standardize

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log Gamma((df + 1)/2) - log Gamma(df/2) - log(df pi)/2 - log|scale| - (df + 1)/2 log(1 + z^2/df)"""
    np_ = jnp()
    z, scale, df = standardize("t.logpdf", x, loc, scale, df)
    normalizer = special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * np_.log(df * math.pi)
    return normalizer - 0.5 * np_.log(scale * scale) - (df + 1) / 2 * np_.log1p(z * z / df)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    return jnp().exp(logpdf(x, df, loc, scale))
