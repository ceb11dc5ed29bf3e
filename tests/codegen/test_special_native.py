"""Native lowerings of the special functions (codegen/llvm/math.py): erf_inv, erfc, lgamma, digamma, compiled
through ``srcjax.jit`` and checked against the eager implementation (bit for bit where the algorithm is XLA's)
and against float64/high-precision oracles (``math.lgamma``, ``math.erfc``, a 40-digit digamma)."""

import contextlib
import decimal
import math

import numpy as np
import pytest

import srcjax
from srcjax import lax
from srcjax.codegen.llvm import engine
from srcjax.transpiler.primitives import special
from tests.codegen.assembly import called, packed, packed_multiply_add


@contextlib.contextmanager
def x64(enabled: bool):
    saved = srcjax.config.read("jax_enable_x64")
    srcjax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        srcjax.config.update("jax_enable_x64", saved)


def _native(fn, x: np.ndarray) -> np.ndarray:
    """fn(x) through jit, failing if it fell back to the interpreter."""
    with x64(x.dtype == np.float64):
        compiled = srcjax.jit(fn)
        out = np.asarray(compiled(x))
        entries = list(compiled._cache.values())
    assert entries and all(entry.native is not None for entry in entries), [e.native_error for e in entries]
    assert out.dtype == x.dtype
    return out


def _eager(fn, x: np.ndarray) -> np.ndarray:
    """The eager implementation (whose float32 rounding of huge results warns)."""
    with np.errstate(all="ignore"):
        return fn(x)


def _ulp_error(got, want, dtype, scale=None) -> np.ndarray:
    """|got - want| in units of the spacing of ``dtype`` at ``want``, or at ``scale`` where that is larger (the
    size of terms that cancel in the result, which bounds any float evaluation's accuracy); 0 where both agree,
    NaNs and infinities included."""
    want = np.asarray(want, np.float64)
    got = np.asarray(got, np.float64)
    with np.errstate(all="ignore"):
        rounded = want.astype(dtype).astype(np.float64)
        same = (got == want) | (got == rounded) | (np.isnan(got) & np.isnan(want))
        size = np.abs(want) if scale is None else np.maximum(np.abs(want), np.abs(scale))
        unit = np.abs(np.spacing(size.astype(dtype))).astype(np.float64)
        unit = np.maximum(np.where(np.isfinite(unit), unit, np.inf), float(np.finfo(dtype).smallest_subnormal))
        return np.where(same, 0.0, np.abs(got - want) / unit)


def _check(name, x, got, want, limit, dtype, scale=None):
    """At most ``limit`` ulp (see ``_ulp_error``) everywhere; the message names the worst input."""
    err = _ulp_error(got, want, dtype, scale)
    worst = int(np.argmax(err))
    assert err[worst] <= limit + 0.01, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]} ulp"


def _samples(dtype, low=None) -> np.ndarray:
    """Log-uniform magnitudes over the whole range, dense samples on [-30, 30] and [0, 3], near the negative
    integers, and the edge cases."""
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    top = np.log10(float(info.max))
    wide = rng.uniform(-1, 1, 4000) * 10.0 ** rng.uniform(-top - 7, top, 4000)
    near_poles = -rng.integers(1, 40, 1000) + rng.choice([-1, 1], 1000) * 10.0 ** rng.uniform(-7, -1, 1000)
    edges = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        info.tiny,
        -info.tiny,
        info.smallest_subnormal,
        info.max,
        -info.max,
        1.0,
        2.0,
        3.0,
        -1.0,
        -2.0,
        -1e6,
        0.5,
        -0.5,
        1.5,
        -2.5,
        1e-8,
        -1e-8,
        1.4616321449683622,
        13.0,
        10.0,
        4.0,
    ]
    with np.errstate(over="ignore"):
        parts = [wide, rng.uniform(-30, 30, 4000), rng.uniform(0, 3, 3000), near_poles, edges]
        return np.concatenate(parts).astype(dtype)


# -- erf_inv: XLA's polynomials, bit for bit with the eager path in float32 --------------------------------------
def test_erf_inv_float32_normal_samples_bit_exact():
    """Inputs ``random.normal`` produces in float32 (uniforms on 23 random bits mapped to [-1 + ulp, 1)) give the
    eager path's bits: every fourth of the 2^23, all 2^16 at either end, and the edge cases. (All 2^23 agree;
    the eager oracle is too slow to run over all of them in every test run.)"""
    bits = np.concatenate([np.arange(0, 2**23, 4), np.arange(2**16), np.arange(2**23 - 2**16, 2**23)]).astype(np.uint32)
    uniform = (bits | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)
    low = np.nextafter(np.float32(-1), np.float32(0))
    x = np.maximum(low, uniform * np.float32(2.0) + low)
    edges = [0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-30, -1e-40, 0.9999999, 0.6435, -0.6436]
    x = np.concatenate([x, np.array(edges, np.float32)])
    got, want = _native(lax.erf_inv, x), special.erf_inv(x)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{bad.size} differ, e.g. erf_inv({x[bad[0]]!r}) = {got[bad[0]]!r}, want {want[bad[0]]!r}"
    assert np.isinf(got[-12]) and got[-12] > 0 and np.isinf(got[-11]) and got[-11] < 0  # +-1
    assert np.isnan(got[-10]) and np.isnan(got[-9])  # outside [-1, 1]


def test_erf_inv_float64_against_eager():
    """float64: XLA's log is libm's, ours is the polynomial one (1 ulp): the results are the eager path's
    bits for |x| < 0.64 and within 3 ulp of them above (about 1 in 100 differs there)."""
    rng = np.random.default_rng(1)
    x = np.concatenate(
        [
            rng.uniform(-1, 1, 200_000),
            1 - 10.0 ** -rng.uniform(0, 16, 20_000),
            [0.0, -0.0, 1.0, -1.0, 2.0, -np.inf, np.nan, 1e-300, 5e-324],
        ]
    )
    got, want = _native(lax.erf_inv, x), special.erf_inv(x)
    small = np.abs(x) < 0.64
    np.testing.assert_array_equal(got[small], want[small])
    _check("erf_inv", x, got, want, 3, np.float64)
    assert (got != want).mean() < 0.02


def test_normal_sampler_matches_eager_under_jit():
    """jit(random.normal) is sqrt(2) erf_inv(uniform) compiled natively: the eager bits, and JAX's."""
    key = srcjax.random.PRNGKey(0)
    compiled = srcjax.jit(lambda k: srcjax.random.normal(k, (10,)))
    got = np.asarray(compiled(key))
    assert all(entry.native is not None for entry in compiled._cache.values())
    np.testing.assert_array_equal(got, np.asarray(srcjax.random.normal(key, (10,))))
    jax_values = [
        -0.3721109,
        0.26423115,
        -0.18252768,
        -0.7368197,
        -0.44030377,
        -0.1521442,
        -0.67135346,
        -0.5908641,
        0.73168886,
        0.5673026,
    ]  # jax 0.4 (threefry_partitionable=False), PRNGKey(0)
    np.testing.assert_array_equal(got, np.float32(jax_values))


# -- erfc ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erfc(dtype):
    x = _samples(dtype)
    got = _native(lax.erfc, x)
    want = np.array([math.erfc(v) if not np.isnan(v) else np.nan for v in x.astype(np.float64)])
    _check("erfc", x, got, want, 1 if dtype == np.float32 else 6, dtype)


_PI = decimal.Decimal("3.141592653589793238462643383279502884197169399375105820974944592307816406286")
_BERNOULLI = [
    (1, 6),
    (-1, 30),
    (1, 42),
    (-1, 30),
    (5, 66),
    (-691, 2730),
    (7, 6),
    (-3617, 510),
    (43867, 798),
    (-174611, 330),
    (854513, 138),
    (-236364091, 2730),
]


def _sin_cos(y: decimal.Decimal) -> tuple[decimal.Decimal, decimal.Decimal]:
    """Taylor series, |y| <= pi/2."""
    s, c, term, k = decimal.Decimal(0), decimal.Decimal(0), decimal.Decimal(1), 0
    while k < 80:
        if k % 2 == 0:
            c += term if k % 4 == 0 else -term
        else:
            s += term if k % 4 == 1 else -term
        k += 1
        term = term * y / k
    return s, c


# -- lgamma ---------------------------------------------------------------------------------------------------
def _lgamma_exact(x: float) -> float:
    """log|Gamma(x)| to 45 digits: Stirling's series at x + n >= 40 less the log of x (x + 1) ... (x + n - 1),
    reflection below 0. (``math.lgamma`` is off by up to 1e-11 relative next to its zeros at 1 and 2.)"""
    if math.isnan(x):
        return math.nan
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    if x in (1.0, 2.0):  # exactly 0, which the sum of large terms below only comes within 1e-37 of
        return 0.0
    with decimal.localcontext() as ctx:
        ctx.prec = 45
        v = decimal.Decimal(x)
        reflection = decimal.Decimal(0)
        if v < 0:  # lgamma(x) = log(pi) - log|sin(pi x)| - lgamma(1 - x)
            s, _ = _sin_cos(_PI * (v - round(v)))
            reflection = _PI.ln() - abs(s).ln()
            v = 1 - v
        product = decimal.Decimal(1)
        while v < 40:
            product *= v
            v += 1
        series = (v - decimal.Decimal("0.5")) * v.ln() - v + (2 * _PI).ln() / 2
        for j, (num, den) in enumerate(_BERNOULLI, start=1):
            series += decimal.Decimal(num) / den / (2 * j * (2 * j - 1)) / v ** (2 * j - 1)
        value = series - product.ln()
        return float(reflection - value if reflection else value)


def _lgamma_scale(x: np.ndarray) -> np.ndarray:
    """Below 0 the result is log(pi) - log|sin(pi x)| - lgamma(1 - x): near its zeros these terms cancel."""
    with np.errstate(all="ignore"):
        sin_pi = np.abs(np.sin(np.pi * (x - np.round(x))))
        positive = np.array([_lgamma_exact(1 - v) if v < 0 and np.isfinite(v) else 0.0 for v in x])
        return np.where(x < 0, np.abs(np.log(sin_pi)) + np.abs(positive) + math.log(math.pi), 0.0)


def _subset(x: np.ndarray) -> np.ndarray:
    """Fewer samples of each kind, for the slow high-precision oracles."""
    return np.concatenate([x[:1500], x[4000:5500], x[8000:9000], x[-2000:]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lgamma(dtype):
    x = _subset(_samples(dtype))
    got = _native(lax.lgamma, x)
    want = np.array([_lgamma_exact(float(v)) for v in x])
    scale = _lgamma_scale(x.astype(np.float64))
    _check("lgamma", x, got, want, 1 if dtype == np.float32 else 6, dtype, scale)
    normal = ~(np.abs(x) < 2.0**-1000)  # the eager path loses bits below 0 where pi x is subnormal
    _check(
        "lgamma vs eager",
        x[normal],
        got[normal],
        _eager(special.lgamma, x[normal]),
        0 if dtype == np.float32 else 4,
        dtype,
        scale[normal],
    )


def test_lgamma_special_values():
    x = np.array([0.0, -0.0, -1.0, -7.0, -1e30, np.inf, -np.inf, np.nan, 1.0, 2.0, 1e-45, 3e38], np.float32)
    got = _native(lax.lgamma, x)
    want = [np.inf, np.inf, np.inf, np.inf, np.inf, np.inf, np.inf, np.nan, 0.0, 0.0, 103.27893, np.inf]
    np.testing.assert_allclose(got, np.float32(want), rtol=1e-7)
    assert not np.signbit(got[8]) and not np.signbit(got[9])


# -- digamma -------------------------------------------------------------------------------------------------
def _digamma_exact(x: float) -> float:
    """psi(x) to 40 digits: recurrence up to 40, the asymptotic series, reflection below 0."""
    if math.isnan(x) or x == -math.inf or (x <= 0 and x == math.floor(x)):
        return math.nan
    if x == math.inf:
        return math.inf
    with decimal.localcontext() as ctx:
        ctx.prec = 45
        v = decimal.Decimal(x)
        reflection = decimal.Decimal(0)
        if v < 0:  # psi(x) = psi(1 - x) - pi cot(pi x), cot at x - round(x)
            s, c = _sin_cos(_PI * (v - round(v)))
            reflection = _PI * c / s
            v = 1 - v
        shift = decimal.Decimal(0)
        while v < 40:
            shift += 1 / v
            v += 1
        series = v.ln() - 1 / (2 * v)
        for j, (num, den) in enumerate(_BERNOULLI, start=1):
            series -= decimal.Decimal(num) / den / (2 * j) / v ** (2 * j)
        return float(series - shift - reflection)


def _digamma_scale(x: np.ndarray) -> np.ndarray:
    """Below 0 the result is psi(1 - x) - pi cot(pi x): the two terms cancel near its zeros."""
    with np.errstate(all="ignore"):
        r = x - np.round(x)
        cot = np.abs(np.pi / np.tan(np.pi * r))
        return np.where(x < 0, cot + np.abs(np.log(np.abs(1 - x))) + 1, 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_digamma(dtype):
    x = _subset(_samples(dtype))
    got = _native(lax.digamma, x)
    want = np.array([_digamma_exact(float(v)) for v in x])
    scale = _digamma_scale(x.astype(np.float64))
    _check("digamma", x, got, want, 1 if dtype == np.float32 else 4, dtype, scale)
    normal = ~(np.abs(x) < 2.0**-1000)  # the eager path loses bits below 0 where pi x is subnormal
    _check(
        "digamma vs eager",
        x[normal],
        got[normal],
        _eager(special.digamma, x[normal]),
        0 if dtype == np.float32 else 4,
        dtype,
        scale[normal],
    )


def test_digamma_special_values():
    x = np.array([0.0, -0.0, -1.0, -3.0, -1e30, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1.4616321], np.float32)
    got = _native(lax.digamma, x)
    assert np.isnan(got[[0, 1, 2, 3, 4, 6, 7]]).all()
    assert got[5] == np.inf
    np.testing.assert_allclose(got[8:10], np.float32([-1e30, 1e30]), rtol=1e-6)
    assert abs(got[10]) < 1e-6


# -- the code vectorises ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_functions_vectorise(dtype):
    """A fused loop of all four calls no libm function and computes on full vector registers."""

    def all_functions(x):
        return lax.erf_inv(x), lax.erfc(x), lax.lgamma(x), lax.digamma(x)

    x = np.linspace(-0.9, 0.9, 1000).astype(dtype)
    with x64(dtype == np.float64):
        executable = srcjax.jit(all_functions).lower(x).compile().native
    assembly = executable.assembly()
    assert called(assembly) <= {"malloc@PLT", "free@PLT", "malloc", "free"}, called(assembly)
    # (float32 arguments are evaluated in float64 in part: below AVX-512 a vector of doubles fills the registers and
    # the float32 steps beside it take half of them, so there the float32 check is on the doubles)
    wide = "avx512f" in engine.target().enabled
    assert packed_multiply_add(assembly, "ps" if dtype == np.float32 and wide else "pd")
    assert packed(assembly, "v?divpd")  # the float64 evaluation is packed too
