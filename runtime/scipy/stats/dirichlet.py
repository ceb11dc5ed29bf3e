"""``srcjax.scipy.stats.dirichlet``: density prod_i x_i^(alpha_i - 1) / B(alpha) on the simplex, the categories
along the first axis of x (which may leave out the last: it is then 1 - sum of the others)."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp

__all__ = ["logpdf", "pdf"]


def _on_simplex(x: Any) -> Any:
    np_ = jnp()
    return np_.all(x > 0, axis=0) & (np_.abs(np_.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x: Any, alpha: Any) -> Any:
    """sum_i (alpha_i - 1) log x_i - log B(alpha), log B(alpha) = sum_i log Gamma(alpha_i) - log Gamma(sum alpha);
    -inf off the simplex."""
    np_ = jnp()
    x, alpha = promote_no_broadcast("dirichlet.logpdf", x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one entry fewer; "
                         f"got x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] != alpha.shape[0]:
        x = np_.concatenate([x, 1 - np_.sum(x, axis=0, keepdims=True)], axis=0)
    log_beta = np_.sum(special.gammaln(alpha)) - special.gammaln(np_.sum(alpha))
    alpha = np_.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    log_density = np_.sum(special.xlogy(alpha - 1, x), axis=0) - log_beta
    return np_.where(_on_simplex(x), log_density, -np.inf)


def pdf(x: Any, alpha: Any) -> Any:
    return jnp().exp(logpdf(x, alpha))


def promote_no_broadcast(name: str, *args: Any) -> list[Any]:
    """Checked and promoted to one inexact dtype, shapes kept (x and alpha are aligned on the first axis)."""
    from srcjax.runtime.numpy import _core

    _core.check_arraylike(name, *args)
    return _core.promote_dtypes_inexact(*args)
