"""``srcjax.scipy.stats.gaussian_kde``: a Gaussian kernel density estimate, a pytree whose leaves are the
effective sample size, the data (d, n), the normalised weights, the kernel covariance (the weighted data
covariance times factor^2) and its inverse, as JAX's class holds them.

The density at x is sum_i w_i N(x; x_i, K) with K the kernel covariance; it is evaluated in coordinates
whitened by the Cholesky factor of K^-1, so each kernel is exp(log_norm - |W^T (x - x_i)|^2 / 2).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy.stats._common import jnp
from srcjax.runtime.tree_util import register_pytree_node_class

__all__ = ["gaussian_kde"]

_LEAVES = ("neff", "dataset", "weights", "covariance", "inv_cov")


def _linalg():
    from srcjax.runtime.scipy import linalg

    return linalg


@register_pytree_node_class
@dataclasses.dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:  # noqa: N801 - SciPy's name
    """Gaussian kernel density estimator (SciPy's ``gaussian_kde``): ``dataset`` of shape (n,) or (d, n),
    ``bw_method`` "scott" (default), "silverman", a scalar factor or a callable of the estimator returning
    one, ``weights`` of shape (n,) (normalised to sum 1)."""

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None):
        np_ = jnp()
        _core.check_arraylike("gaussian_kde", dataset)
        dataset = np_.atleast_2d(dataset)
        if np.issubdtype(_core.aval(dataset).dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is None:
            (dataset,) = _core.promote_dtypes_inexact(dataset)
            weights = np_.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            _core.check_arraylike("gaussian_kde", weights)
            dataset, weights = _core.promote_dtypes_inexact(dataset, weights)
            weights = np_.atleast_1d(weights)
            weights = weights / np_.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / np_.sum(weights**2))
        factor = self._bandwidth_factor("scott" if bw_method is None else bw_method, neff, d)
        data_covariance = np_.atleast_2d(np_.cov(dataset, rowvar=1, bias=False, aweights=weights))
        self._set("covariance", data_covariance * factor**2)
        self._set("inv_cov", np_.linalg.inv(data_covariance) / factor**2)

    def _bandwidth_factor(self, bw_method: Any, neff: Any, d: int) -> Any:
        """Scott's n_eff^(-1/(d+4)), Silverman's (n_eff (d+2)/4)^(-1/(d+4)), or the factor given."""
        np_ = jnp()
        if isinstance(bw_method, str):
            if bw_method == "scott":
                return np_.power(neff, -1.0 / (d + 4))
            if bw_method == "silverman":
                return np_.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif np_.isscalar(bw_method):
            return bw_method
        elif callable(bw_method):
            return bw_method(self)
        raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")

    def _set(self, name: str, value: Any) -> Any:
        object.__setattr__(self, name, value)  # (the dataclass is frozen: its fields are set once, here)
        return value

    def tree_flatten(self) -> tuple[tuple[Any, ...], None]:
        return tuple(getattr(self, name) for name in _LEAVES), None

    @classmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> gaussian_kde:
        kde = cls.__new__(cls)
        for name, value in zip(_LEAVES, children):
            kde._set(name, value)
        return kde

    @property
    def d(self) -> int:
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        return self.dataset.shape[1]

    def evaluate(self, points: Any) -> Any:
        """The density at ``points``, of shape (d, m) (or (m,) when d == 1, or (d,) for one point)."""
        _core.check_arraylike("evaluate", points)
        return _kernel_sum(False, self.dataset.T, self.weights, self._points(points).T, self.inv_cov)

    def __call__(self, points: Any) -> Any:
        return self.evaluate(points)

    def pdf(self, x: Any) -> Any:
        return self.evaluate(x)

    def logpdf(self, x: Any) -> Any:
        """log of the density, by logsumexp over the kernels (finite far in the tails)."""
        _core.check_arraylike("logpdf", x)
        return _kernel_sum(True, self.dataset.T, self.weights, self._points(x).T, self.inv_cov)

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        """int kde(x) N(x; mean, cov) dx = sum_i w_i N(mean; x_i, K + cov)."""
        np_ = jnp()
        mean = np_.atleast_1d(np_.squeeze(mean))
        cov = np_.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        factor = _linalg().cho_factor(self.covariance + cov)
        return _convolve(factor, _inverse_norm(factor, self.d), self.dataset, self.weights, mean)

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """The probability mass between the scalars ``low`` and ``high`` (d == 1 only)."""
        from srcjax.runtime.scipy.special import ndtr

        np_ = jnp()
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = np_.squeeze(np_.sqrt(self.covariance))
        low = np_.squeeze((low - self.dataset) / sigma)
        high = np_.squeeze((high - self.dataset) / sigma)
        return np_.sum(self.weights * (ndtr(high) - ndtr(low)))

    def integrate_kde(self, other: gaussian_kde) -> Any:
        """int kde(x) other(x) dx = sum_ij w_i v_j N(x_i; y_j, K + K'), summed over the smaller set's points
        at once."""
        np_ = jnp()
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        factor = _linalg().cho_factor(self.covariance + other.covariance)
        inverse_norm = _inverse_norm(factor, self.d)
        small, large = (self, other) if self.n < other.n else (other, self)
        # every pair (large point i, small point j) at once: diff[:, i, j] = y_i - x_j
        diff = large.dataset[:, :, None] - small.dataset[:, None, :]
        alpha = _linalg().cho_solve(factor, diff.reshape(self.d, -1)).reshape(diff.shape)
        kernels = np_.exp(-0.5 * np_.sum(diff * alpha, axis=0))
        per_point = inverse_norm * np_.sum(kernels * large.weights[:, None], axis=0)
        return np_.sum(per_point * small.weights)

    def resample(self, key: Any, shape: tuple[int, ...] = ()) -> Any:
        """Draws of shape (d,) + ``shape``: a data point chosen by weight, plus N(0, K) noise."""
        from srcjax.runtime import random

        np_ = jnp()
        index_key, noise_key = random.split(key)
        index = random.choice(index_key, self.n, shape=shape, p=self.weights)
        noise = random.multivariate_normal(noise_key, np_.zeros(self.d, self.covariance.dtype), self.covariance,
                                           shape=shape, dtype=self.dataset.dtype)
        return self.dataset[:, index] + noise.T  # (.T reverses every axis, as in JAX)

    def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method: Any = None) -> Any:
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _points(self, points: Any) -> Any:
        """``points`` as (d, m); a single point of shape (d,) is taken as (d, 1)."""
        np_ = jnp()
        if np.issubdtype(_core.aval(points).dtype, np.complexfloating):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = np_.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return np_.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _inverse_norm(factor: tuple[Any, bool], d: int) -> Any:
    """1 / ((2 pi)^(d/2) det(C)^(1/2)) from C's Cholesky factor."""
    np_ = jnp()
    return 1.0 / (np_.sqrt(2 * np.pi) ** d * np_.prod(np_.diag(factor[0])))


def _convolve(factor: tuple[Any, bool], inverse_norm: Any, target: Any, weights: Any, mean: Any) -> Any:
    """sum_i w_i N(target_i; mean, C), C given by its Cholesky factor."""
    np_ = jnp()
    diff = target - mean[:, None]
    alpha = _linalg().cho_solve(factor, diff)
    return inverse_norm * np_.sum(np_.exp(-0.5 * np_.sum(diff * alpha, axis=0)) * weights)


def _kernel_sum(in_log: bool, data: Any, weights: Any, points: Any, precision: Any) -> Any:
    """sum_i w_i N(x; x_i, precision^-1) at each row x of ``points`` (its log by logsumexp if ``in_log``)."""
    np_ = jnp()
    data, weights, points, precision = _core.promote_dtypes_inexact(data, weights, points, precision)
    d = data.shape[1]
    if points.shape[1] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    whitening = _linalg().cholesky(precision, lower=True)
    data, points = np_.dot(data, whitening), np_.dot(points, whitening)
    log_norm = np_.sum(np_.log(np_.diag(whitening))) - 0.5 * d * np_.log(2 * np.pi)
    exponent = log_norm - 0.5 * np_.sum(np_.square(data[None, :, :] - points[:, None, :]), axis=-1)
    if in_log:
        from srcjax.runtime.scipy.special import logsumexp

        return logsumexp(np_.log(weights) + exponent, axis=1)
    return np_.sum(weights * np_.exp(exponent), axis=1)
