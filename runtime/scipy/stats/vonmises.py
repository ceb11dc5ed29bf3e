"""``srcjax.scipy.stats.vonmises``: density e^(kappa cos x) / (2 pi I0(kappa)), with I0 exponentially scaled
so that large kappa does not overflow."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, kappa: Any) -> Any:
    """kappa (cos x - 1) - log(2 pi i0e(kappa)); NaN for kappa <= 0."""
    np_ = jnp()
    x, kappa = promote("vonmises.logpdf", x, kappa)
    log_density = kappa * (np_.cos(x) - 1) - math.log(2 * math.pi) - np_.log(special.i0e(kappa))
    return np_.where(kappa > 0, log_density, np.nan)


def pdf(x: Any, kappa: Any) -> Any:
    return jnp().exp(logpdf(x, kappa))
