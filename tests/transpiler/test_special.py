"""Special functions (transpiler/primitives/special.py): erf, erfc, lgamma and digamma to about 1e-15
relative in float64 against the ``math`` module and exact identities, including next to the zeros of
lgamma (1 and 2) and of digamma (1.4616...), the poles and the infinities; erf_inv bit for bit against
values recorded from JAX 0.10.2 (``random.normal`` is ``sqrt(2) * erf_inv(uniform)``)."""

import math

import numpy as np
import pytest

from srcjax.transpiler.primitives import special as S

RNG = np.random.default_rng(0)
EULER = 0.5772156649015329


def rel_error(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return np.max(np.abs(actual - expected) / np.maximum(np.abs(expected), 1e-300))


def vectorized(fn, x):
    return np.array([fn(float(v)) for v in np.ravel(x)]).reshape(np.shape(x))


# -- erf, erfc ------------------------------------------------------------------------------------------------
ERF_POINTS = np.concatenate([RNG.uniform(-6, 6, 4000), RNG.uniform(-0.6, 0.6, 2000), np.logspace(-300, 1.4, 400),
                             [0.46875, 0.5, 4.0, 26.0]])


def test_erf_matches_math_to_a_few_ulps():
    assert rel_error(S.erf(ERF_POINTS), vectorized(math.erf, ERF_POINTS)) < 2e-15


def test_erfc_matches_math_including_the_far_tail():
    x = np.concatenate([ERF_POINTS, RNG.uniform(4, 26.5, 2000)])
    assert rel_error(S.erfc(x), vectorized(math.erfc, x)) < 2e-15


def test_erf_special_values_and_dtypes():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 1e300, -1.7976931348623157e308])
    np.testing.assert_array_equal(S.erf(x), [0.0, -0.0, 1.0, -1.0, np.nan, 1.0, -1.0, 1.0, -1.0])
    np.testing.assert_array_equal(S.erfc(x), [1.0, 1.0, 0.0, 2.0, np.nan, 0.0, 2.0, 0.0, 2.0])  # (y^2 overflows)
    assert np.signbit(S.erf(x)[1])
    for dtype in (np.float16, np.float32):
        x = RNG.uniform(-3, 3, 100).astype(dtype)
        out = S.erf(x)
        assert out.dtype == dtype and out.shape == x.shape
        np.testing.assert_array_equal(out, vectorized(math.erf, x).astype(dtype))  # correctly rounded from float64
    assert S.erfc(np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert S.erf(np.array(0.5)).shape == ()


# -- lgamma ---------------------------------------------------------------------------------------------------
def test_lgamma_matches_math_away_from_its_zeros():
    x = np.concatenate([RNG.uniform(2.5, 30, 3000), RNG.uniform(0.01, 0.9, 1000), np.logspace(-300, 300, 300)])
    assert rel_error(S.lgamma(x), vectorized(math.lgamma, x)) < 1e-14


@pytest.mark.parametrize("center", [1.0, 2.0])
def test_lgamma_keeps_relative_accuracy_next_to_its_zeros(center):
    # lgamma(1 + z) = -gamma z + zeta(2)/2 z^2 - zeta(3)/3 z^3 + ..., lgamma(2 + z) = lgamma(1 + z) + log1p(z)
    z = np.concatenate([np.arange(-50, 51) * 2.0**-52, np.logspace(-12, -5, 30), -np.logspace(-12, -5, 30)])
    z = z[z != 0]
    x = center + z
    z = x - center  # exact: the point actually evaluated
    series = -EULER * z + math.pi**2 / 12 * z**2 - 1.2020569031595942 / 3 * z**3 + math.pi**4 / 360 * z**4
    expected = series + (np.log1p(z) if center == 2.0 else 0.0)
    assert rel_error(S.lgamma(x), expected) < 5e-15


def test_lgamma_exact_values():
    assert S.lgamma(np.array([0.5]))[0] == pytest.approx(0.5 * math.log(math.pi), rel=1e-15)
    assert S.lgamma(np.array([1.5]))[0] == pytest.approx(math.log(math.sqrt(math.pi) / 2), rel=1e-15)
    n = np.arange(1.0, 40.0)
    assert rel_error(S.lgamma(n + 1)[1:], [math.log(math.factorial(int(k))) for k in n[1:]]) < 1e-15
    np.testing.assert_array_equal(S.lgamma(np.array([1.0, 2.0])), [0.0, 0.0])


def test_lgamma_reflection_for_negative_arguments():
    x = -RNG.uniform(0.01, 30, 2000)
    x = x[np.abs(x - np.round(x)) > 1e-3]
    expected = np.log(np.pi / np.abs(np.sin(np.pi * (x - np.round(x))))) - vectorized(math.lgamma, 1 - x)
    got = S.lgamma(x)
    assert np.max(np.abs(got - expected) / np.maximum(1, np.abs(expected))) < 1e-13
    assert rel_error(got, vectorized(math.lgamma, x)) < 1e-9  # loose only next to the zeros on the negative axis


def test_lgamma_poles_and_infinities():
    x = np.array([0.0, -0.0, -1.0, -7.0, -1e20, np.inf, -np.inf, np.nan, 1e306])
    out = S.lgamma(x)
    np.testing.assert_array_equal(out[:7], np.inf)
    assert np.isnan(out[7]) and out[8] == np.inf


# -- digamma --------------------------------------------------------------------------------------------------
def harmonic(n):
    return math.fsum(1.0 / k for k in range(1, n))


def test_digamma_exact_values():
    n = np.arange(1, 60)
    assert rel_error(S.digamma(n.astype(float)), [harmonic(int(k)) - EULER for k in n]) < 2e-15
    assert S.digamma(np.array([0.5]))[0] == pytest.approx(-EULER - 2 * math.log(2), rel=1e-15)
    assert S.digamma(np.array([0.25]))[0] == pytest.approx(-EULER - math.pi / 2 - 3 * math.log(2), rel=1e-15)


def test_digamma_recurrence_and_reflection():
    x = RNG.uniform(0.5, 40, 3000)
    x = x[np.abs(x - 0.4616321449683622) > 0.05]  # psi(x + 1) is 0 there: a relative check means nothing
    assert rel_error(S.digamma(x + 1), S.digamma(x) + 1 / x) < 1e-14
    y = -RNG.uniform(0.01, 20, 2000)
    y = y[np.abs(y - np.round(y)) > 1e-3]
    expected = S.digamma(1 - y) - np.pi / np.tan(np.pi * (y - np.round(y)))  # (tan has period 1)
    np.testing.assert_allclose(S.digamma(y), expected, rtol=1e-14, atol=1e-14)
    assert rel_error(S.digamma(np.array([-0.5, -1.5])), [0.03648997397857652, 0.7031566406452432]) < 1e-15


def test_digamma_keeps_relative_accuracy_at_its_positive_zero():
    # psi(x0 + t) = psi'(x0) t + psi''(x0) t^2 / 2 + psi'''(x0) t^3 / 6 + ...; x0 = hi + lo beyond double
    hi, lo = 1.4616321449683622, 9.549995429965697e-17
    derivatives = [0.9676722454476214, -0.8855263379671843, 1.5509985657339072]
    x = hi + np.arange(-200, 201) * 2.0**-52
    t = (x - hi) - lo  # x - hi is exact
    expected = t * (derivatives[0] + t * (derivatives[1] / 2 + t * derivatives[2] / 6))
    assert rel_error(S.digamma(x), expected) < 1e-14
    x = hi + np.logspace(-12, -4, 20)
    t = (x - hi) - lo
    assert rel_error(S.digamma(x), t * (derivatives[0] + t * (derivatives[1] / 2 + t * derivatives[2] / 6))) < 1e-12


def test_digamma_asymptotics_poles_and_infinities():
    x = np.array([1e5, 1e15, 1e300])
    assert rel_error(S.digamma(x), np.log(x) - 0.5 / x - 1 / (12 * x) / x) < 1e-15
    out = S.digamma(np.array([0.0, -0.0, -1.0, -5.0, np.inf, -np.inf, np.nan]))
    assert np.isnan(out[[0, 1, 2, 3, 5, 6]]).all() and out[4] == np.inf
    assert S.digamma(np.array([1e-300]))[0] == pytest.approx(-1e300, rel=1e-15)


def test_float32_results_are_the_float64_results_rounded():
    x = RNG.uniform(0.1, 10, 200).astype(np.float32)
    for fn in (S.lgamma, S.digamma, S.erfc):
        out = fn(x)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, fn(x.astype(np.float64)).astype(np.float32))


# -- erf_inv: XLA's ErfInv32 / ErfInv64, bit for bit ---------------------------------------------------------
# (input bits, output bits) recorded from jax.lax.erf_inv in JAX 0.10.2 on CPU; the float32 inputs are
# those random.normal draws (uniform on [nextafter(-1, 0), 1)) plus edge cases.
F32 = [
    (0xBF78182F, 0xBFC35FDC), (0x3EBABA72, 0x3EABB5B1), (0x3E3E5B64, 0x3E2A4164), (0xBF647193, 0xBF919E94),
    (0x3F5173D5, 0x3F71B044), (0xBF0F2CFF, 0xBF0B8FE0), (0xBEFAC9CE, 0xBEEE6C7D), (0xBF219A07, 0xBF22B49C),
    (0xBEAA607E, 0xBE9BA884), (0xBF25EFAB, 0xBF288B2C), (0xBE9BD9A6, 0xBE8DA6B9), (0x3F1FCAD9, 0x3F205170),
    (0xBDC71918, 0xBDB0E288), (0x3F58C0AD, 0x3F813DFC), (0xBDCEFCF8, 0xBDB7EE8A), (0xBEE4C9AE, 0xBED6B4DB),
    (0x3F13D891, 0x3F11338D), (0x3F23B6DD, 0x3F25878D), (0x3F394C01, 0x3F451E20), (0x3F47A001, 0x3F5DEC07),
    (0xBF7329C7, 0xBFB148D5), (0x3CD48220, 0x3CBC5D1F), (0xBEED6576, 0xBEDFDF2C), (0xBF0293FF, 0xBEF9F590),
    (0xBF7FFFFF, 0xC07547CA), (0x00000000, 0x00000000), (0x80000000, 0x80000000), (0x3F000000, 0x3EF430FE),
    (0xBF000000, 0xBEF430FE), (0x3F7FFFFE, 0x406F9C68), (0x0DA24260, 0x0D8FCC6C), (0x3ED413CC, 0x3EC54B34),
    (0x3F7D70A4, 0x3FE92333), (0xBF7FBE77, 0xC014E999),
]
F64 = [
    (0x3FE4C05FD2CF7032, 0x3FE514B34575EF08), (0xBFE251B525CD4E8C, 0xBFE1F40D3115859C),
    (0x3FDEE86472346DD4, 0x3FDD51C8B860E048), (0x3FD0A1E17092F924, 0x3FCE0587BFC0854D),
    (0x3FEB5AA3F95C122E, 0x3FF07B32A57E4CE2), (0xBFE1286A8E90B176, 0xBFE0938A43077AC3),
    (0x3FE324DDB9357174, 0x3FE2F91CE97EB800), (0x3FA299DAFCDA27C0, 0x3FA07D8B343952A4),
    (0xBFE12E31510D2CA2, 0xBFE09A3CDCA0530C), (0xBFE561D437B05526, 0xBFE5F59CCF6A3138),
    (0xBF721CDE7FC1C000, 0xBF700D56DD7023BE), (0x3FC52D712A042290, 0x3FC2E7966C8997C5),
    (0xBFE433CE712563DE, 0xBFE4574F8B392C39), (0xBFEF0BF630E8D79E, 0xBFF895506A1B5B85),
    (0xBFAD8F40376D2580, 0xBFAA382A0C50A58C), (0x3FDD3713CF09E518, 0x3FDB7E220F6E86B3),
    (0x3FE0000000000000, 0x3FDE861FBB24C008), (0xBFEFFFFFFF768FA1, 0xC01147AF7E10DB16),
    (0x3FEFFFFFFFFFFFF7, 0x4016B42341743885), (0x3FEE666666666666, 0x3FF62CA97D0FBB2B),
    (0x01A56E1FC2F8F359, 0x01A2FDF36BF69BA0), (0x3FD3333333333333, 0x3FD1700774485ED3),
]


@pytest.mark.parametrize("table, bits", [(F32, np.uint32), (F64, np.uint64)], ids=["float32", "float64"])
def test_erf_inv_is_bit_identical_to_xla(table, bits):
    inputs = np.array([a for a, _ in table], bits).view(np.dtype(f"f{np.dtype(bits).itemsize}"))
    expected = np.array([b for _, b in table], bits)
    np.testing.assert_array_equal(S.erf_inv(inputs).view(bits), expected)


def test_erf_inv_inverts_erf():
    y = np.concatenate([RNG.uniform(-0.99, 0.99, 2000), [0.0, 1e-300, -1e-20]])
    assert np.max(np.abs(vectorized(math.erf, S.erf_inv(y)) - y)) < 2e-15
    # near 1, XLA's formula loses digits to the rounding of y * y in log1p(-y * y), as JAX does
    tail = 1 - np.logspace(-15, -2, 50)
    assert rel_error(vectorized(math.erfc, S.erf_inv(tail)), 1 - tail) < 1e-8
    tail = 1 - np.logspace(-4, -2, 50)
    assert rel_error(vectorized(math.erfc, S.erf_inv(tail)), 1 - tail) < 1e-11
    y32 = RNG.uniform(-0.999, 0.999, 2000).astype(np.float32)
    assert rel_error(S.erf_inv(y32), S.erf_inv(y32.astype(np.float64))) < 4e-6  # a few float32 ulps


def test_erf_inv_edges_and_float16():
    for dtype in (np.float16, np.float32, np.float64):
        out = S.erf_inv(np.array([-1.0, 1.0, 1.5, np.nan, 0.0, -0.0], dtype))
        assert out.dtype == dtype
        np.testing.assert_array_equal(out[:2], [-np.inf, np.inf])
        assert np.isnan(out[2:4]).all() and out[4] == 0 and np.signbit(out[5])
    x16 = np.array([0.1, -0.5, 0.9], np.float16)
    np.testing.assert_array_equal(S.erf_inv(x16), S.erf_inv(x16.astype(np.float32)).astype(np.float16))


# -- logistic, counting bits -----------------------------------------------------------------------------------
def test_logistic_never_overflows_and_is_symmetric():
    x = np.array([-1e4, -800.0, -50.0, -1.0, 0.0, 1.0, 50.0, 800.0, 1e4])
    with np.errstate(over="raise", invalid="raise"):
        out = S.logistic(x)
    np.testing.assert_allclose(out + S.logistic(-x), 1.0, rtol=1e-15)
    np.testing.assert_allclose(out[3], 1 / (1 + math.e), rtol=1e-15)
    assert out[0] == 0.0 and out[-1] == 1.0
    z = np.array([0.5 + 1j], np.complex64)
    np.testing.assert_allclose(S.logistic(z), 1 / (1 + np.exp(-z.astype(np.complex128))), rtol=1e-6)


def test_bit_counting_of_negative_and_wide_integers():
    np.testing.assert_array_equal(S.population_count(np.array([-1, -128, 0], np.int8)), [8, 1, 0])
    np.testing.assert_array_equal(S.population_count(np.array([-1], np.int64)), [64])
    np.testing.assert_array_equal(S.count_leading_zeros(np.array([0, 1, -1, 2**40], np.int64)), [64, 63, 0, 23])
    assert S.count_leading_zeros(np.array(5, np.uint16)).shape == ()


def test_polygamma_known_values():
    """psi_1(1) = pi^2/6, psi_1(1/2) = pi^2/2, psi_3(1) = pi^4/15, psi_2(1) = -2 zeta(3); reflection region too."""
    import math

    from srcjax.transpiler.primitives import special as S

    x = np.array([1.0, 0.5, 1.0, 1.0, 2.5])
    m = np.array([1.0, 1.0, 3.0, 2.0, 1.0])
    want = [math.pi**2 / 6, math.pi**2 / 2, math.pi**4 / 15, -2 * 1.2020569031595942, 0.4903577561002349]
    np.testing.assert_allclose(S.polygamma(m, x), want, rtol=1e-12)
    assert np.isposinf(S.polygamma(np.array([1.0]), np.array([-2.0]))).all()  # a pole: inf for odd orders (JAX's)
    assert np.isnan(S.polygamma(np.array([2.0]), np.array([-2.0]))).all()  # NaN for even ones
    # psi_1(x) = psi_1(x + 1) + 1/x^2, at a negative argument
    np.testing.assert_allclose(S.polygamma(np.array([1.0]), np.array([-1.5])),
                               S.polygamma(np.array([1.0]), np.array([-0.5])) + 1 / 1.5**2, rtol=1e-12)
