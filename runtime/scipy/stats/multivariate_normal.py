"""``srcjax.scipy.stats.multivariate_normal``: N(mean, cov) over the last axis, through the Cholesky factor L of
cov: log density -|L^-1 (x - mean)|^2 / 2 - n log(2 pi) / 2 - sum log diag L. Leading axes broadcast."""

from __future__ import annotations

import math
from typing import Any

from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy.stats._common import jnp

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    """The log density; a scalar mean makes it univariate (cov its variance), a scalar cov is a multiple of the
    identity. ``allow_singular`` is not supported (as in JAX)."""
    np_ = jnp()
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    _core.check_arraylike("multivariate_normal.logpdf", x, mean, cov)
    x, mean, cov = _core.promote_dtypes_inexact(x, mean, cov)
    log_2pi = math.log(2 * math.pi)
    if not mean.shape:  # univariate
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (log_2pi + np_.log(cov))
    n = mean.shape[-1]
    if not np_.shape(cov):  # cov * identity
        y = x - mean
        return -0.5 * np_.sum(y * y, axis=-1) / cov - 0.5 * n * (log_2pi + np_.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    from srcjax.runtime.scipy.linalg import solve_triangular

    factor = np_.linalg.cholesky(cov)
    y = x - mean
    batch = _core.broadcast_shapes(factor.shape[:-2], y.shape[:-1])
    factor = np_.broadcast_to(factor, batch + (n, n))
    y = np_.broadcast_to(y, batch + (n,))
    whitened = solve_triangular(factor, y[..., None], lower=True)[..., 0]
    log_det = np_.sum(np_.log(np_.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * np_.sum(whitened * whitened, axis=-1) - 0.5 * n * log_2pi - log_det


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    return jnp().exp(logpdf(x, mean, cov))
