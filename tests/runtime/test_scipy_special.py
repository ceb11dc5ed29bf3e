"""srcjax.scipy.special and srcjax.scipy.stats.norm against float64 references from Python's math module
(scipy is not a dependency) and a few values recorded from JAX."""

import math

import numpy as np
import pytest

from srcjax.runtime import numpy as jnp
from srcjax.runtime.config import config
from srcjax.runtime.scipy import special
from srcjax.runtime.scipy.stats import norm

X = np.array([-4.0, -2.5, -1.0, -0.3, 0.0, 0.2, 0.7, 1.0, 2.0, 3.5, 6.0])
POSITIVE = np.array([0.01, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 10.0, 31.5])


def vec(f):
    return np.vectorize(f, otypes=[np.float64])


def f32(a):
    return jnp.asarray(np.asarray(a, np.float32))


def _digamma(x):
    # central difference of lgamma, step small enough for float32 comparisons
    h = 1e-5
    return (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)


def _ndtr(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


UNARY = [
    ("erf", X, vec(math.erf), 1e-6),
    ("erfc", X, vec(math.erfc), 2e-6),
    ("expit", X, lambda x: 1 / (1 + np.exp(-x)), 1e-6),
    ("gammaln", np.concatenate([POSITIVE, [-0.5, -2.5]]), vec(math.lgamma), 2e-6),
    ("digamma", np.concatenate([POSITIVE, [-0.5, -2.5]]), vec(_digamma), 1e-5),
    ("gamma", np.array([-2.5, -1.5, -0.5, 0.5, 1.0, 2.5, 5.0, 10.0]), vec(math.gamma), 3e-6),
    ("ndtr", X, vec(_ndtr), 2e-6),
    ("logit", np.array([1e-4, 0.1, 0.25, 0.5, 0.9, 0.999]), lambda p: np.log(p / (1 - p)), 2e-6),
    ("entr", np.array([0.0, 1e-3, 0.5, 1.0, 2.5]), lambda x: np.where(x > 0, -x * np.log(np.where(x > 0, x, 1)), 0),
     1e-6),
]


@pytest.mark.parametrize("name, x, reference, rtol", UNARY)
def test_unary_special_functions(name, x, reference, rtol):
    got = getattr(special, name)(f32(x))
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(np.asarray(got), reference(x), rtol=rtol, atol=1e-7)


def test_poles_and_edges():
    assert special.gammaln(f32([0.0, -1.0])).tolist() == [np.inf, np.inf]
    assert np.isnan(np.asarray(special.digamma(f32([0.0, -1.0])))).all()
    assert special.gammasgn(f32([-2.5, -1.5, -0.5, -0.0, 0.0, 3.0])).tolist() == [-1, 1, -1, -1, 1, 1]
    assert np.isnan(special.gammasgn(f32([-2.0])).item()) and np.isnan(special.gamma(f32([-1.0])).item())
    assert special.gamma(f32([0.0])).item() == np.inf
    assert special.logit(f32([0.0, 1.0])).tolist() == [-np.inf, np.inf]
    assert special.entr(f32([-1.0])).item() == -np.inf
    assert special.erfinv(f32([-1.0, 1.0])).tolist() == [-np.inf, np.inf] and np.isnan(special.erfinv(2.0).item())


def test_erfinv_inverts_erf():
    y = np.array([-0.999, -0.7, -0.1, 0.0, 0.3, 0.5, 0.9, 0.9999])
    got = np.asarray(special.erfinv(f32(y)), np.float64)
    np.testing.assert_allclose(vec(math.erf)(got), y, rtol=2e-6, atol=1e-7)
    assert special.erfinv(0.5).item() == pytest.approx(0.47693628, rel=1e-6)


def test_binary_special_functions():
    x, y = np.array([0.0, 0.0, 1.0, 2.5, -1.0]), np.array([0.0, 3.0, 2.0, 0.5, 4.0])
    np.testing.assert_allclose(np.asarray(special.xlogy(f32(x), f32(y))), [0, 0, np.log(2), 2.5 * np.log(0.5),
                                                                           -np.log(4)], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(special.xlog1py(f32(x), f32(y - 1))), [0, 0, np.log(2), 2.5 * np.log(0.5),
                                                                                -np.log(4)], rtol=1e-6)
    a, b = np.array([1.0, 2.0, 0.5, 7.5]), np.array([1.0, 3.0, 0.5, 0.25])
    lbeta = vec(math.lgamma)(a) + vec(math.lgamma)(b) - vec(math.lgamma)(a + b)
    np.testing.assert_allclose(np.asarray(special.betaln(f32(a), f32(b))), lbeta, atol=3e-6)
    np.testing.assert_allclose(np.asarray(special.beta(f32(a), f32(b))), np.exp(lbeta), rtol=1e-5)
    # kl_div and rel_entr at their edges: JAX gives [1, 0.30685282, inf, inf, inf] and [0, -0.6931472, inf, inf, inf]
    p, q = f32([0.0, 1, 1, -1, 0]), f32([1.0, 2, 0, 1, -1])
    np.testing.assert_allclose(np.asarray(special.kl_div(p, q)), [1, 1 - np.log(2), np.inf, np.inf, np.inf], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(special.rel_entr(p, q)), [0, -np.log(2), np.inf, np.inf, np.inf], rtol=1e-6)


def test_integer_inputs_are_promoted_and_weak_types_kept():
    out = special.xlogy(jnp.asarray([0, 1]), 2)
    assert out.dtype == np.float32 and out.tolist() == pytest.approx([0.0, math.log(2)])
    out = special.expit(2)
    assert out.weak_type and out.item() == pytest.approx(0.880797, rel=1e-6)
    assert special.erf(jnp.asarray([1])).dtype == np.float32


def test_softmax_family_reduces_all_axes_by_default():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    e = np.exp(x - x.max())
    np.testing.assert_allclose(np.asarray(special.softmax(f32(x))), e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(special.log_softmax(f32(x), axis=1)),
                               x - np.log(np.exp(x).sum(1, keepdims=True)), rtol=1e-6)
    np.testing.assert_allclose(special.logsumexp(f32(x)).item(), np.log(np.exp(x).sum()), rtol=1e-6)


# -- the normal distribution ---------------------------------------------------------------------------------
def test_ndtri_inverts_ndtr():
    p = np.array([1e-30, 1e-10, 1e-5, 0.02, 0.1, 0.3, 0.5, 0.7, 0.97, 0.999, 0.9999])
    got = np.asarray(special.ndtri(f32(p)), np.float64)
    np.testing.assert_allclose(vec(_ndtr)(got), p.astype(np.float32), rtol=2e-5)
    # JAX: ndtri([0, 1e-30, 1e-7, 0.3, 0.5, 0.999, 1, 1.5])
    got = special.ndtri(f32([0.0, 1e-30, 1e-7, 0.3, 0.5, 0.999, 1.0, 1.5]))
    expected = [-np.inf, -11.464024, -5.1993375, -0.5244005, 0.0, 3.0902362, np.inf, np.nan]
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)


def test_ndtri_and_log_ndtr_in_float64():
    config.update("jax_enable_x64", True)
    try:
        p = np.array([1e-300, 1e-100, 1e-20, 1e-3, 0.02425, 0.3, 0.5, 0.8, 0.999999])
        x = special.ndtri(jnp.asarray(p))
        assert x.dtype == np.float64
        np.testing.assert_allclose(vec(_ndtr)(np.asarray(x)), p, rtol=1e-12)
        z = np.array([-35.0, -25.0, -19.0, -10.0, -1.0, 0.0, 3.0, 7.9, 8.5, 20.0])
        got = np.asarray(special.log_ndtr(jnp.asarray(z)))
        reference = [math.log(_ndtr(v)) if v < 5 else math.log1p(-_ndtr(-v)) for v in z]
        # below -20 a three-term asymptotic series is used (as in JAX): relative error ~ 7!! / x^8
        np.testing.assert_allclose(got, reference, rtol=1e-11)
    finally:
        config.update("jax_enable_x64", False)


def test_log_ndtr_in_float32_tails():
    z = np.array([-30.0, -12.0, -5.0, 0.0, 3.0, 7.0, 12.0])
    got = special.log_ndtr(f32(z))
    # the asymptotic series below -10 and -Phi(-x) above 5 keep full float32 accuracy where log(Phi) would not
    # (JAX gives -454.32123, -75.410675, ..., -1.2798126e-12, -1.776496e-33)
    reference = [math.log(_ndtr(v)) if v < 0 else math.log1p(-_ndtr(-v)) for v in z]
    # far right the float32 rounding of x / sqrt(2) alone moves Phi(-x) by ~1e-5 relative
    np.testing.assert_allclose(np.asarray(got), reference, rtol=2e-5)
    with pytest.raises(ValueError, match="series_order"):
        special.log_ndtr(1.0, series_order=-1)


def test_multigammaln():
    a = np.array([2.5, 3.0, 7.25])
    reference = [3 * 2 / 4 * math.log(math.pi) + sum(math.lgamma(v - j / 2) for j in range(3)) for v in a]
    np.testing.assert_allclose(np.asarray(special.multigammaln(f32(a), 3)), reference, rtol=2e-6)


NORM = [
    ("pdf", lambda x, m, s: np.exp(-0.5 * ((x - m) / s) ** 2) / (s * np.sqrt(2 * np.pi))),
    ("logpdf", lambda x, m, s: -0.5 * ((x - m) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi)),
    ("cdf", lambda x, m, s: vec(_ndtr)((x - m) / s)),
    ("logcdf", lambda x, m, s: np.log(vec(_ndtr)((x - m) / s))),
    ("sf", lambda x, m, s: vec(_ndtr)(-(x - m) / s)),
    ("logsf", lambda x, m, s: np.log(vec(_ndtr)(-(x - m) / s))),
]


@pytest.mark.parametrize("name, reference", NORM)
@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (1.5, 0.5), (-2.0, 3.0)])
def test_norm_functions(name, reference, loc, scale):
    got = getattr(norm, name)(f32(X), loc, scale)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), reference(X, loc, scale), rtol=1e-5, atol=1e-7)


def test_norm_quantiles():
    q = np.array([0.001, 0.025, 0.3, 0.5, 0.975, 0.999])
    for loc, scale in [(0.0, 1.0), (1.0, 2.0)]:
        x = np.asarray(norm.ppf(f32(q), loc, scale), np.float64)
        np.testing.assert_allclose(vec(_ndtr)((x - loc) / scale), q, rtol=3e-6)
        x = np.asarray(norm.isf(f32(q), loc, scale), np.float64)
        np.testing.assert_allclose(vec(_ndtr)(-(x - loc) / scale), q, rtol=3e-6)
    assert norm.ppf(0.975).item() == pytest.approx(1.9599643, rel=1e-6)  # JAX
    assert norm.isf(0.025, 1, 2).item() == pytest.approx(4.9199286, rel=1e-6)  # JAX
    assert norm.logcdf(-30.0).item() == pytest.approx(-454.32123, rel=1e-6)


def test_bad_inputs():
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        special.erf([1.0, 2.0])
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        norm.pdf("x")


def test_polygamma_below_one_poles_and_infinities():
    """Below 1 by reflection (values recorded from JAX 0.10.2), with JAX's poles: inf for odd orders and NaN for even
    ones at 0, the negative integers and -inf; NaN at +inf. A large negative argument returns at once (the shifting
    loop ran once per unit of it). psi'(x) is a sum of squares, so at -999999.5 it is near pi^2, where JAX's float32
    gives -1e-6."""
    import time

    x = f32([-np.inf, -1e20, -2.5, -2.0, -0.5, 0.0, 0.5, np.inf, np.nan])
    np.testing.assert_allclose(np.asarray(special.polygamma(1, x)),
                               [np.inf, np.inf, 9.539247, np.inf, 8.934802, np.inf, 4.934802, np.nan, np.nan],
                               rtol=2e-6)
    np.testing.assert_allclose(np.asarray(special.polygamma(2, x)),
                               [np.nan, np.nan, -0.10820418, np.nan, -0.82879686, np.nan, -16.828798, np.nan, np.nan],
                               rtol=5e-6)
    started = time.perf_counter()
    far = np.asarray(special.polygamma(1, f32([-999999.5, -1e6 + 0.25])))
    assert time.perf_counter() - started < 1.0
    np.testing.assert_allclose(far[0], np.pi**2, rtol=1e-5)


def test_nan_and_huge_inputs():
    """NaN stays NaN (heaviside, gammasgn, entr: their tests of x > 0 and x < 0 both fail for it), and i0 of a huge
    argument is inf (2 pi x overflowed first, giving NaN), as NumPy and JAX give them."""
    x = f32([np.nan, -1.0, 0.0, 2.0])
    np.testing.assert_array_equal(np.asarray(jnp.heaviside(x, 0.5)), [np.nan, 0.0, 0.5, 1.0])
    np.testing.assert_array_equal(np.asarray(special.gammasgn(x)), [np.nan, np.nan, 1.0, 1.0])
    assert np.isnan(np.asarray(special.entr(x))[0])
    np.testing.assert_array_equal(np.asarray(jnp.i0(f32([3e38, -3e38]))), [np.inf, np.inf])


def test_betaln_keeps_its_digits_for_a_large_argument():
    """Against math.lgamma in float64 (and, for 1e30 and 3e38, SciPy's values: -172.4092 and -221.20743, where
    lgamma(a) - lgamma(a + b) cancelled to 0 and NaN, and JAX's float32 gives -218.7 at 3e38)."""
    a = np.array([8, 8.5, 20, 1e3, 1e5, 1e6, 1e7, 0.5, 3, 7.9, 100], np.float32)
    b = np.array([0.5, 8, 19, 2.5, 1e-3, 2.5, 2.5, 0.5, 30, 7.9, 1e4], np.float32)
    want = [math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y) for x, y in zip(a.astype(float), b.astype(float))]
    np.testing.assert_allclose(np.asarray(special.betaln(f32(a), f32(b))), want, rtol=5e-7, atol=1e-6)
    np.testing.assert_allclose(np.asarray(special.betaln(f32([1e30, 3e38]), f32([2.5, 2.5]))), [-172.4092, -221.20743],
                               rtol=1e-6)


def test_ndtri_near_one_half_in_float64():
    """The Halley step works with erf(x / sqrt 2) / 2 - (p - 1/2) in the central region: through Phi(x) - p, near
    p = 1/2 it lost the digits below 1/2's last one (ndtri(0.5 + 1e-9) was off by millions of ulp)."""
    from statistics import NormalDist

    import srcjax

    with srcjax.enable_x64(True):
        p = np.array([0.5 + 1e-9, 0.50001, 0.5000740223772768, 0.49999, 0.7, 0.3])
        want = np.array([NormalDist().inv_cdf(float(v)) for v in p])
        got = np.asarray(special.ndtri(jnp.asarray(p)))
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=4e-15)


def test_hurwitz_zeta():
    """zeta(x, q) against values recorded from JAX 0.10.2 (its poles, inf at x = 1, NaN below and at x = inf), the
    identity zeta(2, q) = polygamma(1, q), and its derivative in q: -x zeta(x + 1, q)."""
    x = f32([2.0, 3.0, 1.5, 1.0, 0.5, -1.0, 2.0, 2.0, 2.0, 4.0, 10.0, np.inf, np.nan])
    q = f32([1.0, 2.0, 0.5, 1.0, 1.0, 1.0, -0.5, 0.0, 100.0, 1e-3, 1.0, 2.0, 1.0])
    want = [1.6449341, 0.20205691, 4.7765384, np.inf, np.nan, np.nan, 8.9348021, np.inf, 1.0050166e-02, 9.999998e11,
            1.0009946, np.nan, np.nan]
    np.testing.assert_allclose(np.asarray(special.zeta(x, q)), want, rtol=2e-6)
    qs = f32([0.3, 1.0, 2.5, 7.0, 40.0])
    np.testing.assert_allclose(np.asarray(special.zeta(2.0, qs)), np.asarray(special.polygamma(1, qs)), rtol=2e-6)
    import srcjax

    np.testing.assert_allclose(float(srcjax.grad(lambda q: special.zeta(3.0, q))(1.5)),
                               -3 * float(special.zeta(4.0, 1.5)), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="pass q"):
        special.zeta(2.0)


def _erfcx(x):
    """exp(x^2) erfc(x) in float64: directly up to 5, the asymptotic series (20 terms, error < 1e-20) beyond."""
    if x <= 5:
        return math.exp(x * x) * math.erfc(x)
    term, total = 1.0, 1.0
    for k in range(1, 20):
        term *= -(2 * k - 1) / (2 * x * x)
        total += term
    return total / (math.sqrt(math.pi) * x)


def test_erfcx_values_and_derivative():
    """Against float64 references in both precisions, finite past where exp(x^2) overflows; JAX 0.10.2's float32
    values recorded; the derivative 2 x erfcx(x) - 2 / sqrt(pi), eager and compiled."""
    import srcjax

    x = np.array([-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 5.0, 9.0, 12.0, 27.0, 100.0, 1e5, 1e20])
    got = special.erfcx(f32(x))
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), vec(_erfcx)(x), rtol=2e-6)
    np.testing.assert_allclose(np.asarray(special.erfcx(f32([-3.0, -0.5, 0.0, 1.0, 5.0, 12.0, 100.0, 1e20]))),
                               [1.6205989e04, 1.9523604, 1.0, 4.2758363e-01, 1.1070464e-01, 4.6854217e-02,
                                5.6416136e-03, 5.6418956e-21], rtol=2e-6)  # JAX
    with srcjax.enable_x64(True):
        got = special.erfcx(jnp.asarray(x))
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), vec(_erfcx)(x), rtol=1e-13)
        small = x[:7]
        want = 2 * small * vec(_erfcx)(small) - 2 / math.sqrt(math.pi)
        slope = srcjax.vmap(srcjax.grad(special.erfcx))
        np.testing.assert_allclose(np.asarray(slope(jnp.asarray(small))), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.jit(slope)(jnp.asarray(small))), want, rtol=1e-12)
    assert special.erfcx(3).dtype == np.float32
    with pytest.raises(NotImplementedError, match="complex"):
        special.erfcx(jnp.asarray(np.complex64(1 + 1j)))


def _spence(x):
    """SciPy's spence(x) = Li2(1 - x) in float64, by the series of Li2 where it converges fast and the
    reflections Li2(z) + Li2(1 - z) = pi^2/6 - log z log(1 - z) and spence(x) = -spence(1/x) - log(x)^2 / 2."""
    def li2(z):
        return sum(z**k / k**2 for k in range(1, 200))

    if x > 1.5:
        return -_spence(1 / x) - math.log(x) ** 2 / 2
    if x >= 0.5:
        return li2(1 - x)
    return math.pi**2 / 6 - math.log(x) * math.log(1 - x) - li2(x) if x > 0 else math.pi**2 / 6


def test_spence_values_and_derivative():
    """spence against float64 references, NaN below 0, and its derivative log(x) / (1 - x); 0 at x = 0 and 1,
    where JAX takes the constants (JAX 0.10.2 gives NaN over (1, 2], from the reflection's log(1 - x))."""
    import srcjax

    x = np.array([0.0, 1e-8, 1e-3, 0.3, 0.5, 0.7, 1.0, 1.2, 1.5, 2.0, 2.5, 10.0, 1e6])
    np.testing.assert_allclose(np.asarray(special.spence(f32(x))), vec(_spence)(x), rtol=2e-6, atol=1e-7)
    assert np.isnan(np.asarray(special.spence(f32([-1.0, -1e-30])))).all()
    with srcjax.enable_x64(True):
        got = special.spence(jnp.asarray(x))
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), vec(_spence)(x), rtol=1e-14, atol=1e-15)
        inside = jnp.asarray(x[1:])
        want = [0.0 if v == 1 else math.log(v) / (1 - v) for v in x[1:]]
        slope = srcjax.vmap(srcjax.grad(special.spence))
        # (the derivative of Cephes' rational approximation: ~3e-10 off near 0)
        np.testing.assert_allclose(np.asarray(slope(inside)), want, rtol=1e-9)
        np.testing.assert_allclose(np.asarray(srcjax.jit(slope)(inside)), want, rtol=1e-9)
        np.testing.assert_array_equal(np.asarray(slope(jnp.asarray([-1.0, 0.0]))), [0.0, 0.0])
    with pytest.raises(TypeError, match="int32 is not supported"):
        special.spence(2)


def test_betaln_with_a_negative_smaller_argument():
    """betaln(-10.5, 1e10) = log|Gamma(-10.5)| + 10.5 log(1e10) + ...: the large logs taken as a difference for a
    negative smaller argument too (was 0 in float32: lgamma(1e10) - lgamma(1e10 - 10.5) cancelled)."""
    want = math.lgamma(-10.5) - (math.lgamma(1e10 - 10.5) - math.lgamma(1e10))
    # (math.lgamma's own difference is exact enough at 1e10 in float64: about 1e-6 absolute)
    assert special.betaln(f32(-10.5), f32(1e10)).item() == pytest.approx(want, rel=1e-5)
    assert special.betaln(f32(-0.5), f32(10.0)).item() == pytest.approx(
        math.lgamma(-0.5) + math.lgamma(10.0) - math.lgamma(9.5), rel=1e-5)


def test_float16_is_computed_in_float32():
    """The series, fractions and sums of gammainc, gammaincc, betainc, betaln and zeta run in float32 for float16
    arguments (as JAX's do) and are rounded back: P(200, 200) = 0.5094 (was 0.3296), zeta(2, 1) = pi^2/6 (was
    NaN: a rising product past 65504)."""
    h = lambda v: jnp.asarray(np.asarray(v, np.float16))  # noqa: E731
    got = special.gammainc(h(200.0), h(200.0))
    assert got.dtype == np.float16 and got.item() == pytest.approx(0.50940, abs=1e-3)
    assert special.gammaincc(h(200.0), h(200.0)).item() == pytest.approx(0.49060, abs=1e-3)
    assert special.zeta(h(2.0), h(1.0)).item() == pytest.approx(math.pi**2 / 6, rel=1e-3)
    assert special.beta(h(30.0), h(-1.5)).item() == pytest.approx(
        math.gamma(30.0) * math.gamma(-1.5) / math.gamma(28.5), rel=2e-3)
    assert special.betainc(h(2.0), h(3.0), h(0.4)).item() == pytest.approx(0.5248, rel=1e-3)
    assert special.betainc(h(2.0), h(3.0), h(0.4)).dtype == np.float16


def test_polygamma_needs_an_integer_order():
    """JAX's check: a float n (even 1.0) is a ValueError, not a silent NaN for 0.5."""
    with pytest.raises(ValueError, match="integer type"):
        special.polygamma(1.0, 2.0)
    with pytest.raises(ValueError, match="integer type"):
        special.polygamma(f32([0.5]), 2.0)
    assert special.polygamma(np.array([1]), 1.0).item() == pytest.approx(math.pi**2 / 6, rel=1e-6)


def test_logit_derivative_at_the_ends():
    """JAX's rule dx / (x (1 - x)): +inf at 0 and 1 (the quotient's chain rule gave NaN), 4 at 1/2."""
    import srcjax

    got = np.asarray(srcjax.vmap(srcjax.grad(special.logit))(f32([0.0, 0.5, 1.0])))
    np.testing.assert_array_equal(got, [np.inf, 4.0, np.inf])
    assert special.logit(0.25).item() == pytest.approx(math.log(1 / 3), rel=1e-6)


def test_poch_boxcox_loggamma_bernoulli():
    """JAX's formulas: poch = Gamma(z + m) / Gamma(z) (1 at m == 0), the Box-Cox transforms (log at lmbda == 0),
    the real loggamma (NaN for x <= 0) and the Bernoulli numbers (B_1 = -1/2)."""
    import srcjax

    assert special.poch(f32(2.5), f32(1.5)).item() == pytest.approx(math.gamma(4.0) / math.gamma(2.5), rel=1e-6)
    assert special.poch(f32(-0.5), f32(0.0)).item() == 1.0
    x = np.array([0.5, 1.0, 2.5, 10.0])
    np.testing.assert_allclose(np.asarray(special.boxcox(f32(x), f32(0.5))), (x**0.5 - 1) / 0.5, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(special.boxcox(f32(x), f32(0.0))), np.log(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(special.boxcox1p(f32(x), f32(-1.0))), (1 - (1 + x) ** -1.0), rtol=1e-6)
    assert srcjax.grad(special.boxcox, 1)(2.5, 0.0).item() == 0.0  # JAX's: the lmbda == 0 branch is log x
    got = np.asarray(special.loggamma(f32([-2.0, 0.0, 0.5, 10.0])))
    assert np.isnan(got[:2]).all()
    np.testing.assert_allclose(got[2:], [math.lgamma(0.5), math.lgamma(10.0)], rtol=1e-6)
    want = [1, -1 / 2, 1 / 6, 0, -1 / 30, 0, 1 / 42, 0, -1 / 30, 0, 5 / 66]
    np.testing.assert_allclose(np.asarray(special.bernoulli(10)), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(special.bernoulli(1)), [1, -0.5])
    with pytest.raises(ValueError, match="non-negative"):
        special.bernoulli(-1)


def test_exponential_integrals():
    """exp1 and expi against float64 series (and SciPy's values, recorded): each method of theirs (series, Lentz's
    fraction, the asymptotic sum) and the edges; derivatives -e^-x/x and e^x/x; jit agrees."""
    import srcjax

    def e1(x):  # -gamma - log x - sum (-x)^k / (k k!), enough terms at these x
        return -0.5772156649015329 - math.log(x) - sum((-x) ** k / (k * math.factorial(k)) for k in range(1, 80))

    def ei(x):
        return 0.5772156649015329 + math.log(abs(x)) + sum(x**k / (k * math.factorial(k)) for k in range(1, 150))

    with srcjax.enable_x64(True):
        x = np.array([1e-8, 0.3, 0.999, 1.0, 1.001, 2.0, 5.0])
        np.testing.assert_allclose(np.asarray(special.exp1(x)), [e1(v) for v in x], rtol=1e-11)
        assert special.exp1(20.0).item() == pytest.approx(9.835525290649882e-11, rel=1e-13)  # SciPy
        x = np.array([-5.0, -1.0, 0.3, 1.0, 5.0, 20.0, 36.0])
        np.testing.assert_allclose(np.asarray(special.expi(x)), [ei(v) for v in x], rtol=1e-11)
        # the asymptotic side (SciPy: expi(60) = 1.9361822139292765e+24, exp1(100) = 3.683597891582298e-46)
        assert special.expi(60.0).item() == pytest.approx(1.9361822139292765e24, rel=1e-13)
        assert special.exp1(100.0).item() == pytest.approx(3.683597891582298e-46, rel=1e-13)
    got = np.asarray(special.exp1(f32([0.0, -1.0, np.inf, np.nan])))
    assert got[0] == np.inf and np.isnan(got[1]) and got[2] == 0 and np.isnan(got[3])
    got = np.asarray(special.expi(f32([0.0, -np.inf, np.inf, np.nan])))
    assert got[0] == -np.inf and got[1] == 0 and got[2] == np.inf and np.isnan(got[3])
    assert srcjax.grad(special.exp1)(2.0).item() == pytest.approx(-math.exp(-2) / 2, rel=1e-6)
    assert srcjax.grad(special.expi)(-2.0).item() == pytest.approx(math.exp(-2) / -2, rel=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.jit(special.expi)(f32([0.3, 2.0, 40.0]))),
                               [ei(0.3), ei(2.0), 6.039718896477586e15], rtol=3e-6)
    assert special.exp1(jnp.asarray(np.float16(1.0))).dtype == np.float16
