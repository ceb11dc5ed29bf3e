"""Vectorised NumPy special functions that NumPy lacks: erf, erfc, erf_inv, lgamma, digamma, logistic, clz.

Each is evaluated in float64 (float16 and float32 arguments are widened, the result rounded back), to
about 1e-15 relative accuracy, with no Python loop over elements. ``erf_inv`` is the exception: it is
XLA's polynomial (M. Giles, "Approximating the erfinv function") evaluated exactly as XLA's CPU code
does, because ``random.normal`` is ``sqrt(2) * erf_inv(uniform)`` and must match JAX bit for bit.
"""

from __future__ import annotations

import math

import numpy as np


def _horner(coefficients, x):
    """sum(c * x**k) with ``coefficients`` highest degree first."""
    out = np.zeros_like(x) + coefficients[0]
    for c in coefficients[1:]:
        out = out * x + c
    return out


def _widen(x) -> np.ndarray:
    return np.asarray(x, np.float64)


# -- erf and erfc: W. J. Cody, "Rational Chebyshev approximations for the error function" (1969) -------
# erf(x) = x P(x^2)/Q(x^2) for |x| <= 0.46875; erfc(x) = exp(-x^2) R(x)/S(x) up to |x| = 4 and
# exp(-x^2)/x (1/sqrt(pi) - T(1/x^2)/(x^2 U(1/x^2))) beyond. Coefficients highest degree first.
_ERF_P = [1.85777706184603153e-1, 3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03]
_ERF_Q = [1.0, 2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03]
_ERFC_R = [2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
           2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03,
           1.23033935479799725e03]
_ERFC_S = [1.0, 1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
           3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03]
_ERFC_T = [1.63153871373020978e-2, 3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
           1.60837851487422766e-2, 6.58749161529837803e-4]
_ERFC_U = [1.0, 2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
           6.05183413124413191e-2, 2.33520497626869185e-3]
_INV_SQRT_PI = 0.56418958354775628695
_ERF_SMALL = 0.46875


def _erf_small(x):
    """erf(x) for |x| <= 0.46875 (Cody's first interval)."""
    x2 = x * x
    return x * _horner(_ERF_P, x2) / _horner(_ERF_Q, x2)


def _erfc_large(y):
    """erfc(y) for y > 0.46875 (0 beyond y ~ 26.6, where it underflows)."""
    with np.errstate(all="ignore"):
        middle = _horner(_ERFC_R, y) / _horner(_ERFC_S, y)
        inv2 = 1.0 / (y * y)
        tail = (_INV_SQRT_PI - inv2 * _horner(_ERFC_T, inv2) / _horner(_ERFC_U, inv2)) / y
        ratio = np.where(y <= 4.0, middle, tail)
        # exp(-y^2) = exp(-h^2) exp(-(y-h)(y+h)) with h = y rounded down to 1/16: h^2 is exact, so the
        # rounding error of y^2 (amplified by y^2 in the exponential) never arises. y is capped where the
        # exponential is 0 anyway, so that y^2 never overflows (inf * 0 would give NaN).
        y = np.minimum(y, 32.0)
        h = np.trunc(y * 16.0) / 16.0
        out = np.exp(-h * h) * np.exp(-(y - h) * (y + h)) * ratio
        return np.where(y == np.inf, 0.0, out)


def erf(x):
    x64 = _widen(x)
    y = np.abs(x64)
    small = y <= _ERF_SMALL
    large = np.copysign(1.0 - _erfc_large(np.where(small, 1.0, y)), x64)
    return np.where(small, _erf_small(np.where(small, x64, 0.0)), large).astype(x.dtype)


def erfc(x):
    x64 = _widen(x)
    y = np.abs(x64)
    small = y <= _ERF_SMALL
    tail = _erfc_large(np.where(small, 1.0, y))
    out = np.where(small, 1.0 - _erf_small(np.where(small, x64, 0.0)), np.where(x64 < 0, 2.0 - tail, tail))
    return np.where(np.isnan(x64), np.nan, out).astype(x.dtype)


# -- zeta values for the series of lgamma and digamma ---------------------------------------------------
# Bernoulli numbers B_2, B_4, ..., B_18.
_BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798]


def _hurwitz_zeta(s: int, a: float) -> float:
    """zeta(s, a) = sum_{n>=0} (a+n)^-s by Euler-Maclaurin summation after 12 terms (double accurate)."""
    n = 12
    b = a + n
    terms = [(a + k) ** -s for k in range(n)] + [b ** (1 - s) / (s - 1), 0.5 * b**-s]
    rising = float(s)  # s (s+1) ... (s+2j-2)
    for j, bern in enumerate(_BERNOULLI, start=1):
        terms.append(bern / math.factorial(2 * j) * rising * b ** (-s - 2 * j + 1))
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return math.fsum(terms)


_EULER_GAMMA = 0.57721566490153286061
_SERIES_TERMS = 30
# zeta(k) - 1 = zeta(k, 2), k = 2 .. _SERIES_TERMS + 1
_ZETA_MINUS_ONE = [_hurwitz_zeta(k, 2.0) for k in range(2, _SERIES_TERMS + 2)]

# lgamma(2 + z) = (1 - gamma) z + sum_{k>=2} (-1)^k (zeta(k) - 1) / k z^k, used for |z| <= 0.5.
_LGAMMA_AT_2 = [(-1) ** k * zm1 / k for k, zm1 in zip(range(_SERIES_TERMS + 1, 1, -1), reversed(_ZETA_MINUS_ONE))]
_LGAMMA_AT_2 += [1.0 - _EULER_GAMMA, 0.0]

# Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum_j B_2j / (2j (2j-1) x^(2j-1)).
_STIRLING = [b / (2 * j * (2 * j - 1)) for j, b in enumerate(_BERNOULLI, start=1)][::-1]
_HALF_LOG_2PI = 0.91893853320467274178
_LOG_PI = 1.14472988584940017414


def _sin_pi_abs(x):
    """|sin(pi x)|, exact at integers: reduce x to r = x - round(x) in [-1/2, 1/2] (r is exact)."""
    return np.abs(np.sin(np.pi * (x - np.round(x))))


def _lgamma_positive(x):
    """lgamma for x > 0: the series at 2 (in an exactly computed z), Stirling from 13 on."""
    big = x >= 13.0
    small = np.where(big, 2.0, x)
    # Below 1.5, lgamma(x) = lgamma(x + 1) - log x with lgamma(x + 1) = lgamma(2 + z) - log1p(z), z = x - 1;
    # below 0.5, once more. z is exact (x + 1 would round, and near x = 1 lose the tiny result).
    tiny, low = small < 0.5, (small >= 0.5) & (small < 1.5)
    z = np.where(low, small - 1.0, small)
    correction = np.where(tiny, -np.log1p(z) - np.log(np.where(tiny, small, 1.0)), 0.0)
    correction = np.where(low, -np.log1p(z), correction)
    # Above 2.5, lgamma(x) = lgamma(x - 1) + log(x - 1); x - 1 is exact for x >= 2.
    product = np.ones_like(small)
    for _ in range(11):
        down = z > 2.5
        z = np.where(down, z - 1.0, z)
        product = product * np.where(down, z, 1.0)
    z = np.where(tiny | low, z, z - 2.0)
    series = _horner(_LGAMMA_AT_2, z) + correction + np.log(product)
    xb = np.where(big, x, 13.0)
    inv = 1.0 / xb
    stirling = (xb - 0.5) * (np.log(xb) - 1.0) + (_HALF_LOG_2PI - 0.5) + inv * _horner(_STIRLING, inv * inv)
    return np.where(big, stirling, series)


def lgamma(x):
    """log |Gamma(x)|; +inf at the poles (0, -1, -2, ...) and at +-inf."""
    x64 = _widen(x)
    with np.errstate(all="ignore"):
        negative = x64 < 0
        positive = _lgamma_positive(np.where(negative, 1.0 - x64, np.where(x64 > 0, x64, 1.0)))
        # reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x)
        reflected = _LOG_PI - np.log(_sin_pi_abs(x64)) - positive
        out = np.where(negative, reflected, positive)
        pole = (x64 <= 0) & (x64 == np.floor(x64))
        out = np.where(pole | np.isinf(x64), np.inf, out)
    return np.where(np.isnan(x64), np.nan, out).astype(x.dtype)


# -- digamma ----------------------------------------------------------------------------------------------
# psi has its one positive zero at x0; around it psi(x0 + t) = sum_{k>=1} (-1)^(k+1) zeta(k+1, x0) t^k,
# which converges for |t| < x0 and keeps full relative accuracy next to the zero. x0 = _ROOT_HI + _ROOT_LO.
_ROOT_HI = 1.4616321449683622
_ROOT_LO = 9.549995429965697e-17
_ROOT_TERMS = 42
_DIGAMMA_AT_ROOT = [(-1) ** (k + 1) * _hurwitz_zeta(k + 1, _ROOT_HI) for k in range(_ROOT_TERMS, 0, -1)] + [0.0]
# Asymptotic: psi(x) = log x - 1/(2x) - sum_j B_2j / (2j x^2j), used for x >= 10.
_DIGAMMA_ASYMPTOTIC = [b / (2 * j) for j, b in enumerate(_BERNOULLI, start=1)][::-1]


def _digamma_positive(x):
    """psi for x > 0: the root series on [1, 2], recurrences to reach it below 10, asymptotic above."""
    big = x >= 10.0
    z = np.where(big, 1.5, x)
    shift = np.zeros_like(x)
    up = z < 1.0  # psi(x) = psi(x + 1) - 1/x
    shift = shift - np.where(up, 1.0 / np.where(up, z, 1.0), 0.0)
    z = np.where(up, z + 1.0, z)
    for _ in range(8):  # psi(x) = psi(x - 1) + 1/(x - 1)
        down = z > 2.0
        z = np.where(down, z - 1.0, z)
        shift = shift + np.where(down, 1.0 / z, 0.0)
    near_root = _horner(_DIGAMMA_AT_ROOT, (z - _ROOT_HI) - _ROOT_LO) + shift
    xb = np.where(big, x, 10.0)
    inv2 = 1.0 / (xb * xb)
    asymptotic = np.log(xb) - 0.5 / xb - inv2 * _horner(_DIGAMMA_ASYMPTOTIC, inv2)
    return np.where(big, asymptotic, near_root)


def digamma(x):
    """psi(x) = d/dx lgamma(x); NaN at the poles (0, -1, -2, ...) and at -inf, as XLA returns."""
    x64 = _widen(x)
    with np.errstate(all="ignore"):
        negative = x64 < 0
        positive = _digamma_positive(np.where(negative, 1.0 - x64, np.where(x64 > 0, x64, 1.0)))
        # reflection: psi(1 - x) - psi(x) = pi cot(pi x); cot has period 1, so reduce x exactly first
        r = x64 - np.round(x64)  # in [-1/2, 1/2]; cos(pi r) = sin(pi (1/2 - |r|)) is exactly 0 at the halves
        reflected = positive - np.pi * np.sin(np.pi * (0.5 - np.abs(r))) / np.sin(np.pi * r)
        out = np.where(negative, reflected, positive)
        pole = (x64 <= 0) & (x64 == np.floor(x64))
        out = np.where(pole | (x64 == -np.inf), np.nan, out)
        out = np.where(x64 == np.inf, np.inf, out)
    return np.where(np.isnan(x64), np.nan, out).astype(x.dtype)


# -- erf_inv: XLA's ErfInv32 and ErfInv64 (Giles), reproduced operation by operation ---------------------
# erf_inv(x) = x p(t) with w = -log1p(-x^2); float32: t = w - 2.5 for w < 5, else sqrt(w) - 3; float64:
# t = w - 3.125 for w < 6.25, sqrt(w) - 3.25 for w < 16, else sqrt(w) - 5. Bit-identical results need
# XLA's CPU code as it runs: its own log1p (a Cephes rational below sqrt(2) - 1, else log(1 + x)), its
# own float32 log, and every multiply-add of a polynomial step fused into one FMA (one rounding).
# Coefficients highest degree first.
_ERF_INV32_SMALL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERF_INV32_LARGE = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]
_ERF_INV64_SMALL = [
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
    -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
    -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356,
]
_ERF_INV64_MIDDLE = [
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06, -4.013867526981545969e-06, 2.9234449089955446044e-06, 1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
    0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635,
]
_ERF_INV64_LARGE = [
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09, -3.7894654401267369937e-09,
    7.6157012080783393804e-09, -1.4960026627149240478e-08, 2.9147953450901080826e-08, -6.7711997758452339498e-08,
    2.2900482228026654717e-07, -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221,
]


_LOG1P_NUMERATOR = [4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
                    2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
                    2.0039553499201281259648e1]
_LOG1P_DENOMINATOR = [1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
                      3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1]
_SPLIT = 134217729.0  # 2^27 + 1, Dekker's splitting constant for float64


def _fma(a, b, c):
    """a * b + c with one rounding (what an FMA instruction computes), in a's dtype."""
    if a.dtype == np.float32:  # the float32 product is exact in float64; the sum rounds there, then to float32
        return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)
    p = a * b  # float64: Dekker's exact product p + e, Knuth's exact sum s + t, then one final addition
    a_hi = a * _SPLIT
    a_hi = a_hi - (a_hi - a)
    b_hi = b * _SPLIT
    b_hi = b_hi - (b_hi - b)
    e = ((a_hi * b_hi - p) + a_hi * (b - b_hi) + (a - a_hi) * b_hi) + (a - a_hi) * (b - b_hi)
    s = p + c
    v = s - p
    t = (p - (s - v)) + (c - v)
    return s + (t + e)


def _fma_horner(coefficients, x):
    out = np.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        out = _fma(out, x, x.dtype.type(c))
    return out


def _bits_to_f32(bits: int) -> np.float32:
    return np.uint32(bits).view(np.float32)


# XLA's float32 log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log x = e log 2 + log1p(m - 1), the latter
# (m - 1) - (m - 1)^2 / 2 + (m - 1)^3 q(m - 1) with a degree 8 polynomial q evaluated in three interleaved
# parts; log 2 is split into 0.693359375 - 2.12194440e-4. Constants as bit patterns, as XLA has them.
_LOG_Q = [[0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A], [0xBDFE5D4F, 0x3E11E9BF, 0xBE2AAE50],
          [0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA]]


def _xla_log_f32(y):
    f = np.float32
    smallest = _bits_to_f32(0x00800000)
    bits = np.where(y > smallest, y, smallest).astype(f).view(np.uint32)
    m = ((bits & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(f)  # mantissa in [1/2, 1)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 127).astype(f) + f(1)
    below = m < _bits_to_f32(0x3F3504F3)  # sqrt(1/2)
    r = (m - f(1)) + np.where(below, m, f(0))
    e = e - np.where(below, f(1), f(0))
    r2 = r * r
    r3 = r2 * r
    q0, q1, q2 = ([_fma(_fma(r, _bits_to_f32(a), _bits_to_f32(b)), r, _bits_to_f32(c))] for a, b, c in _LOG_Q)
    q = _fma(_fma(q0[0], r3, q1[0]), r3, q2[0])
    out = _fma(e, _bits_to_f32(0x3F318000), (r - r2 * f(0.5)) + _fma(q, r3, e * _bits_to_f32(0xB95E8083)))
    out = np.where(y == 0, f(-np.inf), np.where(y == np.inf, f(np.inf), out))
    return np.where((y < 0) | np.isnan(y), f(np.nan), out).astype(f)


def _xla_log1p(v):
    x2 = v * v
    ratio = _fma_horner(_LOG1P_NUMERATOR, v) / _fma_horner(_LOG1P_DENOMINATOR, v)
    small = v + (x2 * v.dtype.type(-0.5) + (v * x2) * ratio)
    one = v + v.dtype.type(1)
    large = _xla_log_f32(one) if v.dtype == np.float32 else np.log(one)
    return np.where(np.abs(v) < v.dtype.type(0.41421356237309504880), small, large)


def _erf_inv_xla(x, pieces, bounds, centers):
    dtype = x.dtype
    with np.errstate(all="ignore"):
        w = -_xla_log1p(x * -x)
        region = np.searchsorted(np.asarray(bounds, dtype), w, side="right")
        root = np.sqrt(w)
        out = np.zeros_like(x)
        for i, (coefficients, center) in enumerate(zip(pieces, centers)):
            t = (w if i == 0 else root) - dtype.type(center)
            out = np.where(region == i, _fma_horner(coefficients, t), out)
        return (x * np.where(np.abs(x) == 1, dtype.type(np.inf), out)).astype(dtype)


def erf_inv(x):
    if x.dtype == np.float64:
        pieces = [_ERF_INV64_SMALL, _ERF_INV64_MIDDLE, _ERF_INV64_LARGE]
        return _erf_inv_xla(x, pieces, [6.25, 16.0], [3.125, 3.25, 5.0])
    # float32 (float16 is computed in float32 and rounded, as XLA does)
    x32 = np.asarray(x, np.float32)
    return _erf_inv_xla(x32, [_ERF_INV32_SMALL, _ERF_INV32_LARGE], [5.0], [2.5, 3.0]).astype(x.dtype)


# -- the rest --------------------------------------------------------------------------------------------
def logistic(x):
    """1 / (1 + exp(-x)), through exp(-|x|) so that nothing overflows."""
    with np.errstate(all="ignore"):
        if x.dtype.kind == "c":
            return (1 / (1 + np.exp(-x))).astype(x.dtype)
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def population_count(x):
    """Set bits of each element's two's complement pattern (np.bitwise_count counts those of |x|)."""
    return np.bitwise_count(x.view(f"u{x.dtype.itemsize}")).astype(x.dtype)


def count_leading_zeros(x):
    """Leading zero bits of each element's two's complement pattern, by binary search on the shifts."""
    bits = x.dtype.itemsize * 8
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    u = x.view(unsigned)
    count = np.zeros(x.shape, np.int64)
    shift = bits // 2
    while shift:
        empty = (u >> unsigned.type(bits - shift)) == 0  # the top ``shift`` bits are all zero
        count = count + np.where(empty, shift, 0)
        u = np.where(empty, u << unsigned.type(shift), u).astype(unsigned)
        shift //= 2
    count = count + (u == 0)  # only the last bit is left to test
    return count.astype(x.dtype)


# Bernoulli numbers B_2k (k = 1..10), for the asymptotic series of polygamma
_BERNOULLI_2K = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330]


def _polygamma_positive(n: int, y: np.ndarray) -> np.ndarray:
    """psi^(n)(y) for n >= 1 and finite y >= 1: shifted up to 20 (at most 19 steps), then the asymptotic series."""
    from math import factorial

    acc = np.zeros_like(y)
    sign = (-1.0) ** (n + 1)
    while True:
        small = y < 20
        if not small.any():
            break
        acc = acc + np.where(small, sign * factorial(n) / y ** (n + 1), 0.0)
        y = np.where(small, y + 1, y)
    series = factorial(n - 1) / y**n + factorial(n) / (2 * y ** (n + 1))
    for k, b in enumerate(_BERNOULLI_2K, start=1):
        series = series + b * factorial(2 * k + n - 1) / (factorial(2 * k) * y ** (2 * k + n))
    return acc + sign * series


def _polygamma_of_order(n: int, y: np.ndarray) -> np.ndarray:
    """psi^(n)(y), n >= 1, float64. Below 1 by the reflection psi^(n)(y) = (-1)^n psi^(n)(1 - y) - pi D, with D the
    n-th derivative of cot(pi y), a polynomial in cot(pi y) (d/dy cot = -pi (1 + cot^2)): no shifting loop, so a
    large negative y costs nothing more. At the poles (0 and the negative integers, -inf too) it is inf for odd n
    and NaN for even n, and NaN at +inf, as JAX has it."""
    pole = (y <= 0) & (y == np.floor(y))
    below = (y < 1) & ~pole & np.isfinite(y)
    positive = np.isfinite(y) & ~pole & ~below
    out = np.full(y.shape, np.nan)
    out[positive] = _polygamma_positive(n, y[positive])
    z = y[below]
    derivative = np.polynomial.Polynomial([0.0, 1.0])  # cot itself, then n derivatives in cot
    for _ in range(n):
        derivative = derivative.deriv() * np.polynomial.Polynomial([-np.pi, 0.0, -np.pi])
    offset = z - np.round(z)  # (cot has period 1: reduced exactly first, so that pi * offset is not rounded much)
    cot = np.cos(np.pi * offset) / np.sin(np.pi * offset)
    out[below] = (-1.0) ** n * _polygamma_positive(n, 1.0 - z) - np.pi * derivative(cot)
    out[pole] = np.inf if n % 2 else np.nan
    return out


def polygamma(m, x):
    """psi^(m)(x), the m-th derivative of digamma, for integer m >= 0 (given as an array of m's dtype x's).

    For m >= 1: shift x up with psi^(m)(x) = psi^(m)(x + 1) + (-1)^(m+1) m! / x^(m+1) until x >= 20, then
    the asymptotic series (-1)^(m+1) [(m-1)!/x^m + m!/(2 x^(m+1)) + sum_k B_2k (2k+m-1)!/((2k)! x^(2k+m))];
    below 1 by reflection (``_polygamma_of_order``).
    """
    x64, m64 = _widen(x), np.asarray(m, np.float64)
    out = np.empty(np.broadcast_shapes(x64.shape, m64.shape))
    xb, mb = np.broadcast_to(x64, out.shape), np.broadcast_to(m64, out.shape)
    for order in np.unique(mb):
        where = mb == order
        if order == 0:
            out[where] = _widen(digamma(np.asarray(xb[where], x.dtype)))
            continue
        if order < 0 or order != np.floor(order):
            out[where] = np.nan
            continue
        n = int(order)
        y = xb[where]
        with np.errstate(all="ignore"):
            out[where] = _polygamma_of_order(n, y)
    return out.astype(x.dtype)
