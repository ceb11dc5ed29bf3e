"""srcjax.scipy.stats (beyond norm) and the special functions its cdfs need, against float64 closed forms from
Python's math module and NumPy (scipy is not a dependency), values recorded from JAX 0.10.2 where the behaviour is
JAX's own (edges, invalid parameters), and central finite differences for gradients."""

import math

import numpy as np
import pytest

import srcjax
from srcjax.runtime import numpy as jnp
from srcjax.runtime.scipy import special
from srcjax.runtime.scipy import stats

lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
erf = np.vectorize(math.erf, otypes=[np.float64])


def f32(a):
    return jnp.asarray(np.asarray(a, np.float32))


def _betaln(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def _gammainc_integer(a, x):
    """P(a, x) for integer a: 1 - e^-x sum_{k<a} x^k / k!"""
    return 1 - np.exp(-x) * sum(x ** k / math.factorial(k) for k in range(int(a)))


def _betainc_integer(a, b, x):
    """I_x(a, b) for integer a, b: P(Binomial(a + b - 1, x) >= a)."""
    n = a + b - 1
    return sum(math.comb(n, j) * x ** j * (1 - x) ** (n - j) for j in range(a, n + 1))


def _bessel_i(order, x):
    return sum((x / 2) ** (2 * k + order) / (math.factorial(k) * math.factorial(k + order)) for k in range(80))


X = np.array([-3.0, -1.0, -0.2, 0.0, 0.3, 1.0, 2.5, 6.0])
POS = np.array([0.05, 0.3, 1.0, 2.0, 4.5, 9.0])
K = np.array([0.0, 1.0, 2.0, 3.0, 5.0])

# (distribution, function, arguments, float64 reference, rtol)
CASES = [
    ("bernoulli", "pmf", (K[:3], 0.3), np.array([0.7, 0.3, 0.0]), 1e-6),
    ("binom", "logpmf", (K, 5.0, 0.3), [math.log(math.comb(5, int(k)) * 0.3 ** k * 0.7 ** (5 - k)) for k in K], 1e-5),
    ("poisson", "logpmf", (K, 2.5), K * math.log(2.5) - lgamma(K + 1) - 2.5, 1e-5),
    ("poisson", "cdf", (K, 2.5), [sum(2.5 ** j * math.exp(-2.5) / math.factorial(j) for j in range(int(k) + 1))
                                  for k in K], 1e-5),
    ("geom", "pmf", (K[1:], 0.3), 0.7 ** (K[1:] - 1) * 0.3, 1e-5),
    ("nbinom", "logpmf", (K, 3.0, 0.4),
     lgamma(K + 3) - lgamma(3.0) - lgamma(K + 1) + 3 * math.log(0.4) + K * math.log(0.6), 1e-5),
    ("betabinom", "logpmf", (K, 5.0, 2.0, 3.0),
     [math.log(math.comb(5, int(k))) + _betaln(k + 2, 5 - k + 3) - _betaln(2.0, 3.0) for k in K], 1e-5),
    ("cauchy", "logpdf", (X, 0.5, 2.0), -np.log(np.pi * 2.0 * (1 + ((X - 0.5) / 2) ** 2)), 1e-6),
    ("cauchy", "cdf", (X, 0.5, 2.0), 0.5 + np.arctan((X - 0.5) / 2) / np.pi, 1e-6),
    ("cauchy", "logsf", (X, 0.5, 2.0), np.log(0.5 - np.arctan((X - 0.5) / 2) / np.pi), 1e-5),
    ("expon", "logpdf", (POS, 0.0, 2.0), -POS / 2 - np.log(2.0), 1e-6),
    ("expon", "logcdf", (POS,), np.log1p(-np.exp(-POS)), 1e-5),
    ("laplace", "cdf", (X, 0.5, 2.0), np.where(X < 0.5, 0.5 * np.exp((X - 0.5) / 2), 1 - 0.5 * np.exp(-(X - 0.5) / 2)),
     1e-6),
    ("logistic", "logpdf", (X, 0.5, 2.0), -(X - 0.5) / 2 - 2 * np.log1p(np.exp(-(X - 0.5) / 2)) - np.log(2.0), 1e-5),
    ("uniform", "pdf", (X, -1.0, 3.0), np.where((X >= -1) & (X <= 2), 1 / 3, 0.0), 1e-6),
    ("pareto", "logpdf", (POS + 1, 2.5), np.log(2.5) - 3.5 * np.log(POS + 1), 1e-5),
    ("gumbel_r", "logpdf", (X, 0.5, 2.0), -(X - 0.5) / 2 - np.exp(-(X - 0.5) / 2) - np.log(2.0), 1e-5),
    ("gumbel_l", "cdf", (X, 0.5, 2.0), 1 - np.exp(-np.exp((X - 0.5) / 2)), 1e-5),
    ("gennorm", "logpdf", (X, 1.5), np.log(1.5) - np.log(2) - math.lgamma(1 / 1.5) - np.abs(X) ** 1.5, 1e-5),
    ("gennorm", "cdf", (X, 2.0), 0.5 + 0.5 * erf(X), 1e-5),  # beta = 2: N(0, 1/2)
    ("t", "logpdf", (X, 3.0, 0.5, 2.0), math.lgamma(2.0) - math.lgamma(1.5) - 0.5 * math.log(3 * math.pi)
     - math.log(2.0) - 2.0 * np.log1p(((X - 0.5) / 2) ** 2 / 3), 1e-5),
    ("gamma", "logpdf", (POS, 2.5, 0.0, 1.5), 1.5 * np.log(POS / 1.5) - POS / 1.5 - math.lgamma(2.5) - math.log(1.5),
     1e-5),
    ("gamma", "cdf", (POS, 3.0), _gammainc_integer(3, POS), 2e-5),
    ("gamma", "sf", (POS, 3.0), 1 - _gammainc_integer(3, POS), 2e-5),
    ("chi2", "cdf", (POS, 4.0), _gammainc_integer(2, POS / 2), 2e-5),
    ("chi2", "logpdf", (POS, 3.0), 0.5 * np.log(POS) - POS / 2 - math.lgamma(1.5) - 1.5 * math.log(2), 1e-5),
    ("beta", "logpdf", (POS / 10, 2.0, 3.5), np.log(POS / 10) + 2.5 * np.log1p(-POS / 10) - _betaln(2.0, 3.5), 1e-5),
    ("beta", "cdf", (POS / 10, 2.0, 3.0), _betainc_integer(2, 3, POS / 10), 2e-5),
    ("beta", "sf", (POS / 10, 2.0, 3.0), 1 - _betainc_integer(2, 3, POS / 10), 2e-5),
    ("wrapcauchy", "pdf", (POS[:4], 0.4), (1 - 0.16) / (2 * np.pi * (1 + 0.16 - 0.8 * np.cos(POS[:4]))), 1e-5),
    ("vonmises", "logpdf", (X, 2.0), 2.0 * np.cos(X) - np.log(2 * np.pi * _bessel_i(0, 2.0)), 1e-5),
    ("truncnorm", "logpdf", (X[1:6], -1.0, 1.5),
     np.where(np.abs(X[1:6] - 0.25) <= 1.25, -X[1:6] ** 2 / 2 - 0.5 * np.log(2 * np.pi)
              - np.log(0.5 * (erf(1.5 / np.sqrt(2)) - erf(-1 / np.sqrt(2)))), -np.inf), 1e-5),
    ("truncnorm", "cdf", (X[1:6], -1.0, 1.5), np.clip((erf(X[1:6] / np.sqrt(2)) - erf(-1 / np.sqrt(2)))
                                                      / (erf(1.5 / np.sqrt(2)) - erf(-1 / np.sqrt(2))), 0, 1), 1e-5),
]


@pytest.mark.parametrize("dist, fn, args, reference, rtol", CASES, ids=[f"{c[0]}.{c[1]}" for c in CASES])
def test_values_against_float64_references(dist, fn, args, reference, rtol):
    got = getattr(getattr(stats, dist), fn)(*[f32(a) if isinstance(a, np.ndarray) else a for a in args])
    assert got.dtype == np.float32 and got.shape == np.shape(args[0])
    np.testing.assert_allclose(np.asarray(got), np.asarray(reference, np.float64), rtol=rtol, atol=1e-6)


# outside the support and invalid parameters, as JAX 0.10.2 gives them
EDGES = [
    ("bernoulli", "logpmf", ([-1.0, 2.0, np.nan], 0.3), [-np.inf, -np.inf, np.nan]),
    ("bernoulli", "ppf", ([0.5, 0.8, 1.1], 0.3), [0.0, 1.0, np.nan]),
    ("binom", "pmf", ([-1.0, 6.0, np.nan], 5.0, 0.3), [0.0, 0.0, 0.0]),
    ("poisson", "logpmf", ([-1.0, 2.5, np.nan], 2.0), [-np.inf, -np.inf, -np.inf]),
    ("geom", "logpmf", ([0.0, -1.0], 0.3), [-np.inf, -np.inf]),
    ("betabinom", "logpmf", ([1.0, 1.0], [-1.0, 3.0], [2.0, -1.0], 2.0), [np.nan, np.nan]),
    ("expon", "pdf", ([-1.0, -0.1], 0.0, -1.0), [0.0, 0.0]),  # the support is x >= loc, whatever the scale's sign
    ("uniform", "cdf", ([np.nan, -2.0, 5.0], 0.0, 2.0), [0.0, 0.0, 1.0]),
    ("uniform", "ppf", ([-0.1, 1.1], 0.0, 2.0), [np.nan, np.nan]),
    ("pareto", "logpdf", ([0.5], 2.0), [-np.inf]),
    ("gumbel_r", "cdf", ([1.0, 1.0], 0.0, [0.0, -1.0]), [np.nan, np.nan]),
    ("gumbel_l", "ppf", ([0.0, 1.0, 0.5], 0.0, 1.0), [np.nan, np.nan, -0.36651292]),
    ("logistic", "logpdf", ([-np.inf, np.inf], 0.0, 1.0), [-np.inf, -np.inf]),
    ("gamma", "logpdf", ([-1.0, np.nan], 2.0), [-np.inf, -np.inf]),
    ("gamma", "sf", ([-1.0, -1.0], [2.0, 0.0]), [1.0, 1.0]),
    ("beta", "logpdf", ([-0.5, 1.5, 0.5], [2.0, 2.0, 0.0], 2.0), [-np.inf, -np.inf, np.nan]),
    ("truncnorm", "pdf", ([0.0, 2.0], [3.0, -1.0], [1.0, 1.0]), [np.nan, 0.0]),
    ("t", "logpdf", ([-3.0], 3.0, 1.0, -1.0), [-4.6925426]),
    ("wrapcauchy", "logpdf", ([1.0, -0.1, 7.0, np.nan], [1.0, 0.5, 0.5, 0.5]), [np.nan, -np.inf, -np.inf, -np.inf]),
    ("vonmises", "pdf", ([0.5], [0.0]), [np.nan]),
    ("dirichlet", "logpdf", ([0.5, 0.0, 0.5], [1.0, 2.0, 0.5]), -np.inf),
]


@pytest.mark.parametrize("dist, fn, args, expected", EDGES, ids=[f"{c[0]}.{c[1]}" for c in EDGES])
def test_edges_as_jax(dist, fn, args, expected):
    got = getattr(getattr(stats, dist), fn)(*[f32(a) if isinstance(a, list) else a for a in args])
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)


def test_dtype_promotion_and_broadcasting():
    assert stats.gamma.logpdf(1.0, 2.0).dtype == np.float32
    assert stats.cauchy.pdf(jnp.asarray([1, 2])).dtype == np.float32  # integers are promoted
    assert stats.laplace.pdf(f32([0.0]), 1.0, 2.0).dtype == np.float32  # weak scalars do not promote
    out = stats.t.logpdf(f32(X)[:, None], f32([1.0, 3.0, 30.0]))
    assert out.shape == (len(X), 3)
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        stats.expon.pdf([1.0])


def test_float64_under_x64():
    from srcjax.runtime.config import config

    config.update("jax_enable_x64", True)
    try:
        got = stats.gamma.cdf(jnp.asarray(POS), 3.0)
        assert got.dtype == np.float64
        # (the reference cancels at small x)
        np.testing.assert_allclose(np.asarray(got), _gammainc_integer(3, POS), rtol=1e-10)
        got = stats.beta.cdf(jnp.asarray(POS / 10), 2.0, 3.0)
        np.testing.assert_allclose(np.asarray(got), _betainc_integer(2, 3, POS / 10), rtol=1e-12)
    finally:
        config.update("jax_enable_x64", False)


def test_jit_and_vmap():
    x = f32([0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(srcjax.jit(stats.gamma.cdf)(x, 2.0)), np.asarray(stats.gamma.cdf(x, 2.0)),
                               rtol=1e-6)
    per_row = srcjax.vmap(stats.beta.cdf, in_axes=(0, 0, None))(x / 3, f32([1.0, 2.0, 3.0]), 2.0)
    stacked = [stats.beta.cdf(x[i] / 3, a, 2.0).item() for i, a in enumerate([1.0, 2.0, 3.0])]
    np.testing.assert_allclose(np.asarray(per_row), stacked, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.jit(stats.cauchy.logpdf)(x, 0.5)),
                               np.asarray(stats.cauchy.logpdf(x, 0.5)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(stats.poisson.logpmf)(f32(K[:3]), f32([1.0, 2.0, 3.0]))),
                               [stats.poisson.logpmf(k, m).item() for k, m in zip(K[:3], [1.0, 2.0, 3.0])], rtol=1e-6)


LOGPDFS = [
    ("cauchy", (0.3, 2.0)), ("expon", (0.0, 2.0)), ("laplace", (0.3, 2.0)), ("logistic", (0.3, 2.0)),
    ("gumbel_r", (0.3, 2.0)), ("gumbel_l", (0.3, 2.0)), ("t", (3.0, 0.3, 2.0)), ("gamma", (2.5,)), ("chi2", (3.0,)),
    ("beta", (2.0, 3.0, 0.0, 5.0)), ("pareto", (2.5, 0.0, 0.5)), ("gennorm", (1.5,)), ("vonmises", (2.0,)),
    ("truncnorm", (-1.0, 3.0)),
]


@pytest.mark.parametrize("dist, params", LOGPDFS, ids=[c[0] for c in LOGPDFS])
def test_logpdf_gradient_against_differences(dist, params):
    logpdf = getattr(stats, dist).logpdf
    x, h = 1.3, 1e-3
    grad = srcjax.grad(logpdf)(x, *params).item()
    difference = (logpdf(x + h, *params).item() - logpdf(x - h, *params).item()) / (2 * h)
    assert grad == pytest.approx(difference, rel=2e-3, abs=2e-3)


def test_discrete_multivariate_families():
    p = np.array([0.2, 0.3, 0.5])
    got = stats.multinomial.logpmf(jnp.asarray([1, 2, 3]), 6, f32(p)).item()
    assert got == pytest.approx(math.log(60 * 0.2 * 0.09 * 0.125), rel=1e-5)
    assert stats.multinomial.pmf(jnp.asarray([1, 2, 2]), 6, f32(p)).item() == 0.0
    with pytest.raises(ValueError, match="integer type"):
        stats.multinomial.logpmf(f32([1.0, 2.0, 3.0]), 6, f32(p))
    alpha, x = np.array([1.0, 2.0, 1.5]), np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
    reference = np.sum((alpha[:, None] - 1) * np.log(x), 0) - (lgamma(alpha).sum() - math.lgamma(alpha.sum()))
    np.testing.assert_allclose(np.asarray(stats.dirichlet.logpdf(f32(x), f32(alpha))), reference, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(stats.dirichlet.logpdf(f32(x[:2]), f32(alpha))), reference, rtol=1e-5)


def _mvn_logpdf(x, mean, cov):
    y = x - mean
    log_det = np.linalg.slogdet(cov)[1]
    return -0.5 * y @ np.linalg.solve(cov, y) - 0.5 * len(mean) * math.log(2 * math.pi) - 0.5 * log_det


def test_multivariate_normal():
    cov = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.3], [0.0, 0.3, 1.5]])
    mean, xs = np.array([0.0, 1.0, 0.0]), np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]])
    got = stats.multivariate_normal.logpdf(f32(xs), f32(mean), f32(cov))
    np.testing.assert_allclose(np.asarray(got), [_mvn_logpdf(x, mean, cov) for x in xs], rtol=1e-5)
    # mean and cov broadcast against x's leading axes
    got = stats.multivariate_normal.logpdf(f32(xs)[:, None], f32([mean, mean + 1]), f32([cov, 2 * cov]))
    assert got.shape == (2, 2)
    assert got[1, 1].item() == pytest.approx(_mvn_logpdf(xs[1], mean + 1, 2 * cov), rel=1e-5)
    assert stats.multivariate_normal.logpdf(f32(xs), f32(mean), 2.0).shape == (2,)  # cov a multiple of I
    assert stats.multivariate_normal.pdf(0.5, 0.2, 2.0).item() == pytest.approx(
        math.exp(-0.09 / 4) / math.sqrt(4 * math.pi), rel=1e-6)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(f32(xs), f32(mean), f32(cov), allow_singular=True)
    with pytest.raises(ValueError, match="incompatible shapes"):
        stats.multivariate_normal.logpdf(f32(xs), f32(mean), f32(cov[:2, :2]))


# -- the special functions the cdfs use ---------------------------------------------------------------------------
def test_incomplete_gamma_and_beta():
    a, x = np.array([1.0, 2.0, 3.0, 7.0, 7.0]), np.array([0.5, 3.0, 0.2, 2.0, 15.0])
    np.testing.assert_allclose(np.asarray(special.gammainc(f32(a), f32(x))),
                               [_gammainc_integer(ai, xi) for ai, xi in zip(a, x)], rtol=2e-5)
    np.testing.assert_allclose(np.asarray(special.gammaincc(f32(a), f32(x))),
                               [1 - _gammainc_integer(ai, xi) for ai, xi in zip(a, x)], rtol=2e-5)
    # JAX: gammainc(29.661425, 30.258684) = 0.567533; its edges (a = 0 is NaN below x = 1 in JAX's series)
    assert special.gammainc(29.661425, 30.258684).item() == pytest.approx(0.567533, rel=2e-5)
    got = special.gammainc(f32([0.0, 0.0, 1.0, -1.0, 1.0, 2.0]), f32([0.0, 1.0, 0.0, 1.0, -1.0, np.inf]))
    np.testing.assert_array_equal(np.asarray(got), [np.nan, 1.0, 0.0, np.nan, np.nan, 1.0])
    b, y = np.array([1, 2, 5, 3]), np.array([0.3, 0.9, 0.5, 0.01])
    np.testing.assert_allclose(np.asarray(special.betainc(f32([2, 1, 3, 4]), f32(b), f32(y))),
                               [_betainc_integer(ai, bi, yi) for ai, bi, yi in zip([2, 1, 3, 4], b, y)], rtol=2e-5)
    a, b, y = [0.0, 2.0, 2.0, -1.0, 2.0], [1.0, 0.0, 0.0, 1.0, 3.0], [0.5, 0.5, 1.0, 0.5, 1.1]
    got = special.betainc(f32(a), f32(b), f32(y))
    np.testing.assert_array_equal(np.asarray(got), [1.0, 0.0, 1.0, np.nan, np.nan])  # JAX


def test_incomplete_gamma_gradients():
    # in x the closed form; in a (JAX's values) by differences: -0.27619603 and -0.0034310843
    assert srcjax.grad(special.gammainc, 1)(2.0, 1.0).item() == pytest.approx(math.exp(-1), rel=1e-6)
    assert srcjax.grad(special.gammaincc, 1)(2.0, 3.0).item() == pytest.approx(-3 * math.exp(-3), rel=1e-6)
    assert srcjax.grad(special.gammainc, 0)(2.0, 1.0).item() == pytest.approx(-0.27619603, rel=1e-4)
    assert srcjax.grad(special.gammainc, 0)(0.3, 5.0).item() == pytest.approx(-0.0034310843, rel=1e-3)
    assert srcjax.grad(special.betainc, 2)(2.0, 3.0, 0.4).item() == pytest.approx(12 * 0.4 * 0.36, rel=1e-5)
    assert srcjax.grad(lambda x: stats.gamma.cdf(x, 2.0))(1.5).item() == pytest.approx(1.5 * math.exp(-1.5), rel=1e-5)


def test_bessel_and_factorials():
    x = np.array([-9.0, -3.0, 0.0, 0.5, 2.0, 7.9, 8.1, 20.0])
    i0 = np.array([_bessel_i(0, abs(v)) for v in x])
    i1 = np.array([math.copysign(_bessel_i(1, abs(v)), v) for v in x])
    np.testing.assert_allclose(np.asarray(special.i0e(f32(x))), i0 * np.exp(-np.abs(x)), rtol=2e-6)
    np.testing.assert_allclose(np.asarray(special.i1e(f32(x))), i1 * np.exp(-np.abs(x)), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(special.i0(f32(x))), i0, rtol=3e-6)
    np.testing.assert_allclose(np.asarray(special.i1(f32(x))), i1, rtol=3e-6)
    assert srcjax.grad(special.i0)(1.0).item() == pytest.approx(_bessel_i(1, 1.0), rel=1e-5)
    np.testing.assert_allclose(np.asarray(special.factorial(f32([-1.0, 0.0, 3.0, 3.5]))),
                               [0.0, 1.0, 6.0, math.gamma(4.5)], rtol=2e-6)
    with pytest.raises(NotImplementedError, match="exact=True"):
        special.factorial(3, exact=True)
    got = special.comb(f32([5.0, 5.0, 5.0, -1.0, 4.5]), f32([2.0, 6.0, -1.0, 1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(got), [10.0, 0.0, 0.0, 0.0, 7.875], rtol=2e-6)
    assert special.comb(5.0, 2.0, repetition=True).item() == pytest.approx(15.0, rel=2e-6)
    assert special.comb(0.0, 0.0, repetition=True).item() == 1.0  # JAX


def test_cdf_slopes_are_zero_below_the_support():
    """gamma/chi2/beta cdfs clamp their argument (JAX's lax.clamp), so below the support and at its edge the slope
    in x is 0 (JAX's value), not 0 * inf = NaN through the density at 0 (or 1/2 of it through a tie of max)."""
    for f in (lambda x: stats.gamma.cdf(x, 0.5), lambda x: stats.chi2.cdf(x, 0.5), lambda x: stats.chi2.sf(x, 0.5),
              lambda x: stats.gamma.cdf(x, 1.0), lambda x: stats.beta.cdf(x, 0.5, 0.5)):
        for x in (-3.0, 0.0):
            assert srcjax.grad(f)(x).item() == 0.0
    assert srcjax.grad(lambda x: stats.gamma.cdf(x, 2.0))(1.0).item() == pytest.approx(math.exp(-1), rel=1e-5)


def test_support_is_decided_on_x_not_z():
    """gamma, chi2 and pareto put -inf density below loc (loc + scale) whatever the sign of scale, as JAX does;
    a zero scale gives NaN at x == loc (0/0), as JAX's (recorded from JAX 0.10.2)."""
    x = f32([-1.0, 0.0, 2.0])
    got = np.asarray(stats.gamma.logpdf(x, 0.5, 0.0, -1.0))
    assert got[0] == -np.inf and np.isnan(got[1:]).all()
    assert np.isnan(np.asarray(stats.gamma.logpdf(0.0, 0.5, 0.0, 0.0))).all()
    got = np.asarray(stats.chi2.logpdf(x, 3.0, 0.0, -1.0))
    assert got[0] == -np.inf and np.isnan(got[1:]).all()
    got = np.asarray(stats.pareto.logpdf(f32([-2.0, -0.5, 0.5]), 3.0, 0.0, -1.0))
    assert got[0] == -np.inf and np.isnan(got[1:]).all()
    assert stats.pareto.ppf(0.0, 0.0, 0.0, 2.5).item() == 2.5  # JAX: 1^(-1/0) = 1


def test_truncnorm_tails_and_negative_scale():
    """logcdf near 0 keeps its digits through log1p(-sf) (JAX and SciPy: -9.0567e-24, not 0); logsf mirrors it;
    a negative scale acts as its absolute value in the density (norm.logpdf's log(scale^2)), and a NaN x gives
    JAX's select default 0 (recorded from JAX 0.10.2)."""
    # Phi(-10) / (1 - Phi(-1)) = 7.6199e-24 / 0.841345
    tail = math.erfc(10 / math.sqrt(2)) / 2 / (1 - math.erfc(1 / math.sqrt(2)) / 2)
    assert stats.truncnorm.logcdf(10.0, -1.0, np.inf).item() == pytest.approx(-tail, rel=1e-5)
    assert stats.truncnorm.logsf(-10.0, -np.inf, 1.0).item() == pytest.approx(-tail, rel=1e-5)
    got = np.asarray(stats.truncnorm.pdf(f32([0.0, 0.5, -0.25, 1.5]), -1.0, 2.0, 0.0, -1.0))
    np.testing.assert_allclose(got, [0.48735029, 0.43008512, 0.47235608, 0.0], rtol=1e-5)  # JAX
    assert stats.truncnorm.logcdf(np.nan, -1.0, 2.0).item() == 0.0
    assert stats.truncnorm.logsf(np.nan, -1.0, 2.0).item() == 0.0


def test_gumbel_r_logsf_left_tail():
    """log(1 - exp(-e^3)) = -1.892179e-9, not log(1) = 0 (float32)."""
    assert stats.gumbel_r.logsf(f32(-3.0)).item() == pytest.approx(-math.exp(-math.exp(3)), rel=1e-5)


def test_poisson_entropy():
    """-sum p log p, against a float64 sum; 0 at mu = 0; loc only broadcasts; the large-mu formula beyond 100."""
    mu = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 50.0, 99.0, 100.0, 1e4])

    def reference(m):
        if m == 0:
            return 0.0
        k = np.arange(0, int(m + 20 * math.sqrt(m) + 40))
        logp = k * math.log(m) - m - lgamma(k + 1.0)
        return float(-np.sum(np.exp(logp) * logp))

    got = np.asarray(stats.poisson.entropy(f32(mu)))
    np.testing.assert_allclose(got, [reference(m) for m in mu], rtol=2e-5)
    assert stats.poisson.entropy(f32([1.0, 2.0]), np.zeros((3, 1))).shape == (3, 2)
    assert srcjax.jit(stats.poisson.entropy)(f32(3.0)).item() == pytest.approx(reference(3.0), rel=1e-5)


def test_mode_rankdata_sem():
    """JAX's mode (smallest of the tied values, NaNs one value), rankdata (its five methods, NaN slices) and sem,
    against NumPy."""
    x = np.array([[3, 1, 2, 1], [2, 2, 5, 5], [0, 7, 7, 0]])
    m = stats.mode(x, axis=1)
    np.testing.assert_array_equal(np.asarray(m.mode), [1, 2, 0])
    np.testing.assert_array_equal(np.asarray(m.count), [2, 2, 2])
    assert np.asarray(m.mode).dtype == np.int32
    m = stats.mode(x, axis=None, keepdims=True)
    assert m.mode.shape == (1, 1) and m.mode.item() == 2 and m.count.item() == 3
    nan = np.array([3.0, np.nan, 2.0, np.nan], np.float32)
    assert np.isnan(stats.mode(nan).mode.item()) and stats.mode(nan).count.item() == 2
    assert np.isnan(stats.mode(np.zeros(0, np.float32)).mode.item())
    np.testing.assert_array_equal(np.asarray(srcjax.jit(stats.mode)(x).mode), [0, 1, 2, 0])
    with pytest.raises(NotImplementedError):
        stats.mode(x, nan_policy="omit")

    r = np.array([[3.0, 1, 2, 1, 4], [2, 2, 5, 5, 5]], np.float32)
    want = {"average": [[4, 1.5, 3, 1.5, 5], [1.5, 1.5, 4, 4, 4]], "min": [[4, 1, 3, 1, 5], [1, 1, 3, 3, 3]],
            "max": [[4, 2, 3, 2, 5], [2, 2, 5, 5, 5]], "dense": [[3, 1, 2, 1, 4], [1, 1, 2, 2, 2]],
            "ordinal": [[4, 1, 3, 2, 5], [1, 2, 3, 4, 5]]}
    for method, ranks in want.items():
        np.testing.assert_array_equal(np.asarray(stats.rankdata(r, method, axis=1)), ranks)
    np.testing.assert_array_equal(np.asarray(stats.rankdata(r)), [6, 1.5, 4, 1.5, 7, 4, 4, 9, 9, 9])
    got = np.asarray(stats.rankdata(np.array([[1.0, np.nan], [2.0, 1.0]]), axis=1))
    assert np.isnan(got[0]).all() and (got[1] == [2, 1]).all()
    with pytest.raises(ValueError, match="unknown method"):
        stats.rankdata(r, "foo")

    np.testing.assert_allclose(np.asarray(stats.sem(r, axis=1)), np.std(r, axis=1, ddof=1) / math.sqrt(5), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(stats.sem(r, axis=None)), np.std(r, ddof=1) / math.sqrt(10), rtol=1e-6)
    got = stats.sem(np.array([[1.0, np.nan, 3.0]]), axis=1, nan_policy="omit")
    np.testing.assert_allclose(np.asarray(got), [math.sqrt(2) / math.sqrt(2)], rtol=1e-6)


def test_laplace_cdf_slope_at_loc_and_far_out():
    """The cdf's slope is the density: 1/(2 scale) at x == loc (was -1/2 through |z|'s slope at 0), and finite far
    out (e^-100 / 2, where a single formula's unused side would overflow)."""
    assert srcjax.grad(stats.laplace.cdf)(1.5, 1.5, 2.5).item() == pytest.approx(0.2, rel=1e-6)
    assert srcjax.jit(srcjax.grad(stats.laplace.cdf))(0.0).item() == pytest.approx(0.5, rel=1e-6)
    assert srcjax.grad(stats.laplace.cdf)(100.0).item() == pytest.approx(0.5 * math.exp(-100), rel=1e-3)
    assert srcjax.grad(stats.laplace.cdf)(-3.0).item() == pytest.approx(0.5 * math.exp(-3), rel=1e-6)
