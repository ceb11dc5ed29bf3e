"""srcjax.scipy.stats.gaussian_kde against NumPy float64 formulas: the density is sum_i w_i N(x; x_i, K) with
K the weighted data covariance times factor^2 (Scott's n_eff^(-1/(d+4)) by default)."""

import math

import numpy as np
import pytest

import srcjax
from srcjax.runtime import numpy as jnp
from srcjax.runtime.scipy.stats import gaussian_kde


def _reference_density(data, weights, factor, points):
    covariance = np.atleast_2d(np.cov(data, aweights=weights)) * factor**2
    diff = points.T[:, None, :] - data.T[None, :, :]  # (m, n, d)
    mahalanobis = np.einsum("mni,ij,mnj->mn", diff, np.linalg.inv(covariance), diff)
    norm = np.sqrt((2 * np.pi) ** data.shape[0] * np.linalg.det(covariance))
    return (weights / weights.sum() * np.exp(-0.5 * mahalanobis)).sum(axis=1) / norm


def test_density_bandwidths_and_integrals():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(2, 25))
    weights = rng.uniform(0.5, 1.5, size=25)
    points = rng.normal(size=(2, 4))
    neff = weights.sum() ** 2 / (weights**2).sum()
    kde = gaussian_kde(jnp.asarray(data.astype(np.float32)), weights=jnp.asarray(weights.astype(np.float32)))
    expected = _reference_density(data, weights, neff ** (-1 / 6), points)
    np.testing.assert_allclose(np.asarray(kde(jnp.asarray(points.astype(np.float32)))), expected, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kde.logpdf(points.astype(np.float32))), np.log(expected), rtol=1e-5)
    assert kde.pdf(points[:, 0].astype(np.float32)).shape == (1,)  # one point given as (d,)
    np.testing.assert_allclose(float(kde.neff), neff, rtol=1e-5)
    # int kde(x) N(x; 0, I) dx is the density of kde convolved with N(0, I) at 0
    cov = np.atleast_2d(np.cov(data, aweights=weights)) * neff ** (-1 / 3)
    total = cov + np.eye(2)
    inverse = np.linalg.inv(total)
    values = np.exp(-0.5 * np.einsum("in,ij,jn->n", data, inverse, data))
    values /= np.sqrt((2 * np.pi) ** 2 * np.linalg.det(total))
    np.testing.assert_allclose(float(kde.integrate_gaussian(np.zeros(2, np.float32), np.eye(2, dtype=np.float32))),
                               (values * weights / weights.sum()).sum(), rtol=1e-5)
    # one dimension: Silverman's factor, a scalar factor, a callable; box integral against erf
    line = rng.normal(size=12)
    for bw, factor in [("silverman", (12 * 3 / 4) ** (-1 / 5)), (0.4, 0.4), (lambda k: 0.7, 0.7)]:
        kde1 = gaussian_kde(jnp.asarray(line), bw_method=bw)
        grid = np.linspace(-2, 2, 5)
        expected = _reference_density(line[None], np.ones(12), factor, grid[None])
        np.testing.assert_allclose(np.asarray(kde1(grid)), expected, rtol=1e-5)
    sigma = math.sqrt(np.var(line, ddof=1)) * 0.7
    box = np.mean([0.5 * (math.erf((1.0 - x) / sigma / math.sqrt(2)) - math.erf((-0.5 - x) / sigma / math.sqrt(2)))
                   for x in line])
    np.testing.assert_allclose(float(kde1.integrate_box_1d(-0.5, 1.0)), box, rtol=1e-5)
    # the product of two KDEs integrates to the sum over pairs of N(x_i - y_j; 0, K + K')
    other = gaussian_kde(jnp.asarray(line[:5]), bw_method=0.5)
    spread = sigma**2 + np.var(line[:5], ddof=1) * 0.25
    pairs = np.exp(-0.5 * (line[:, None] - line[None, :5]) ** 2 / spread) / math.sqrt(2 * np.pi * spread)
    np.testing.assert_allclose(float(kde1.integrate_kde(other)), pairs.mean(), rtol=1e-5)


def test_pytree_transforms_and_errors():
    data = jnp.asarray(np.linspace(-1.0, 2.0, 9).astype(np.float32) ** 2)
    kde = gaussian_kde(data)
    leaves, treedef = srcjax.tree_util.tree_flatten(kde)
    assert len(leaves) == 5
    rebuilt = srcjax.tree_util.tree_unflatten(treedef, leaves)
    np.testing.assert_allclose(np.asarray(rebuilt(0.5)), np.asarray(kde(0.5)), rtol=1e-6)
    # the estimator passes through vmap as a pytree argument; the density is differentiable in the data
    batched = srcjax.vmap(lambda k, x: k.pdf(x), in_axes=(None, 0))(kde, jnp.asarray([0.0, 1.0, 3.0]))
    np.testing.assert_allclose(np.asarray(batched)[:, 0], np.asarray(kde(jnp.asarray([0.0, 1.0, 3.0]))), rtol=1e-6)
    step = 1e-3
    grad = srcjax.grad(lambda d: gaussian_kde(d).pdf(0.5).sum())(data)
    shift = step * (np.arange(9) == 2)
    with srcjax.enable_x64(True):
        base = np.asarray(data).astype(np.float64)
        numeric = (gaussian_kde(base + shift).pdf(0.5)[0] - gaussian_kde(base - shift).pdf(0.5)[0]) / (2 * step)
    np.testing.assert_allclose(float(grad[2]), float(numeric), rtol=1e-3)
    draws = kde.resample(srcjax.random.key(0), (4,))
    assert draws.shape == (1, 4) and draws.dtype == np.float32
    with pytest.raises(ValueError, match="multiple elements"):
        gaussian_kde(np.ones(1))
    with pytest.raises(ValueError, match="bw_method"):
        gaussian_kde(data, bw_method="nope")
    with pytest.raises(NotImplementedError):
        kde.integrate_box([0.0], [1.0])
    with pytest.raises(ValueError, match="dimension"):
        kde(np.ones((3, 2)))
