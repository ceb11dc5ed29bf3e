"""``srcjax.scipy.stats.poisson``: P(k) = mu^k e^-mu / k!."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """y log mu - log y! - mu for y = k - loc >= 0 and k an integer, -inf elsewhere."""
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    y = k - loc
    np_ = jnp()
    log_probability = special.xlogy(y, mu) - special.gammaln(y + 1) - mu
    return np_.where((y >= 0) & (np_.round(k) == k), log_probability, -np.inf)  # (NaN k: -inf, as JAX)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return jnp().exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """P(K <= y) = Q(floor(y) + 1, mu), the regularized upper incomplete gamma function; 0 for y < 0."""
    np_ = jnp()
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    y = k - loc
    return np_.where(y < 0, 0, special.gammaincc(np_.floor(y) + 1, mu)).astype(y.dtype)


def entropy(mu: Any, loc: Any = 0) -> Any:
    """-sum_k p(k) log p(k), JAX's way: the terms k < 35 (up to mu + 20) summed for mu < 10, k < 250 (up to
    mu + 10 sqrt(mu) + 20) for mu < 100, and log(2 pi e mu) / 2 - 1 / (12 mu) beyond; 0 at mu = 0. ``loc``
    shifts the distribution, so it only broadcasts."""
    np_ = jnp()
    mu, loc = promote("poisson.entropy", mu, loc)
    flat = np_.ravel(mu)

    def summed(count: int, upper: Any) -> Any:
        k = np_.arange(count, dtype=flat.dtype)[:, None]
        probabilities = np_.where(k < np_.ceil(upper)[None, :], pmf(k, flat), 0)
        return np_.sum(special.entr(probabilities), axis=0)

    large = 0.5 * np_.log(2 * np.pi * np.e * flat) - 1 / (12 * flat)
    result = np_.where(flat < 100, summed(250, flat + 10 * np_.sqrt(flat) + 20), large)
    result = np_.where(flat < 10, summed(35, flat + 20), result)
    result = np_.where(flat == 0, 0, result).astype(flat.dtype)
    return np_.broadcast_to(result.reshape(mu.shape), np_.broadcast_shapes(mu.shape, np_.shape(loc)))
