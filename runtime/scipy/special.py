"""``srcjax.scipy.special``: special functions of SciPy's names and signatures, over jnp and lax.

Integer and bool inputs are promoted to the default float first (as JAX does). The hard cases are built
from the primitives ``erf``, ``erfc``, ``erf_inv``, ``lgamma`` and ``digamma``; the rest are formulas.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcjax.runtime.nn import logsumexp as _nn_logsumexp
from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy._lazy import _custom_jvp, _jnp, _lax
from srcjax.runtime.scipy.special_harmonics import bessel_jn, sph_harm_y  # noqa: F401
from srcjax.runtime.scipy.special_hypergeometric import hyp1f1, hyp2f1  # noqa: F401
from srcjax.runtime.scipy.special_integrals import dawsn, expn, fresnel, owens_t, sici, wofz  # noqa: F401

__all__ = [
    "polygamma",
    "logsumexp", "expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "gamma", "gammasgn", "beta",
    "betaln", "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "softmax", "log_softmax", "ndtr", "ndtri",
    "log_ndtr", "multigammaln", "factorial", "comb", "gammainc", "gammaincc", "betainc", "i0e", "i1e", "i0", "i1",
    "zeta", "erfcx", "spence", "poch", "boxcox", "boxcox1p", "loggamma", "bernoulli", "exp1", "expi",
    "dawsn", "fresnel", "sici", "expn", "owens_t", "wofz", "hyp1f1", "hyp2f1", "bessel_jn",
    "sph_harm_y",
]


def _inexact(name: str, *args: Any) -> list[Any]:
    _core.check_arraylike(name, *args)
    return _core.promote_args_inexact(name, *args)


def _in_float32(function: Any, *args: Any) -> Any:
    """``function(*args)``, computed in float32 where the arguments are float16 and rounded back (JAX's kernels
    widen half precision too): float16's 11 bits cannot carry the large logs and terms a series or a continued
    fraction holds on the way (a log x - x at a = x = 200; a rising product past 65504)."""
    dtype = _core.aval(args[0]).dtype
    if dtype != np.float16:
        return function(*args)
    out = function(*(_core.convert(x, np.float32, _core.aval(x).weak_type) for x in args))
    return _core.convert(out, dtype, _core.aval(out).weak_type)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None) -> Any:
    """log(sum(b * exp(a))) over ``axis`` (see ``srcjax.nn.logsumexp``)."""
    return _nn_logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, where=where)


def expit(x: Any) -> Any:
    """1 / (1 + exp(-x))"""
    (x,) = _inexact("expit", x)
    return _lax().logistic(x)


def logit(x: Any) -> Any:
    """log(x / (1 - x)), the inverse of expit."""
    (x,) = _inexact("logit", x)
    return _logit(x)


def _logit_value(x: Any) -> Any:
    return _jnp().log(x / (1 - x))


def _logit_jvp(primals, tangents):
    """JAX's rule, d logit = dx / (x (1 - x)): +inf at 0 and 1, where the chain rule through the quotient gave
    NaN."""
    (x,), (x_dot,) = primals, tangents
    return _logit(x), x_dot / (x * (1 - x))


_logit = _custom_jvp()(_logit_value)
_logit.defjvp(_logit_jvp)


def erf(x: Any) -> Any:
    (x,) = _inexact("erf", x)
    return _lax().erf(x)


def erfc(x: Any) -> Any:
    (x,) = _inexact("erfc", x)
    return _lax().erfc(x)


def erfinv(x: Any) -> Any:
    (x,) = _inexact("erfinv", x)
    return _lax().erf_inv(x)


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|"""
    (x,) = _inexact("gammaln", x)
    return _lax().lgamma(x)


def digamma(x: Any) -> Any:
    """d/dx log Gamma(x); NaN at the poles 0, -1, -2, ..."""
    (x,) = _inexact("digamma", x)
    return _lax().digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """psi^(n)(x): the n-th derivative of digamma (polygamma(0, x) is digamma). ``n`` must have an integer dtype,
    as in JAX (a float n, even 1.0, is a ValueError)."""
    _core.check_arraylike("polygamma", n, x)
    if not np.issubdtype(_core.aval(n).dtype, np.integer):
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {_core.aval(n).dtype}.")
    return _lax().polygamma(n, x)


def gammasgn(x: Any) -> Any:
    """The sign of Gamma(x): +1 for x > 0, (-1)^ceil(-x) between the poles of x < 0, NaN at the poles."""
    jnp = _jnp()
    (x,) = _inexact("gammasgn", x)
    floor_x = jnp.floor(x)
    # Gamma changes sign at each non-positive integer: on (-k-1, -k) its sign is (-1)^(k+1)
    negative_sign = jnp.where(jnp.remainder(floor_x, 2) == 0, 1.0, -1.0)
    sign = jnp.where(x > 0, 1.0, negative_sign)
    sign = jnp.where(x == 0, jnp.copysign(1.0, x), sign)
    return jnp.where(((x < 0) & (x == floor_x)) | jnp.isnan(x), np.nan, sign).astype(_core.aval(x).dtype)


def gamma(x: Any) -> Any:
    """Gamma(x) = sign * exp(log|Gamma(x)|)"""
    (x,) = _inexact("gamma", x)
    return gammasgn(x) * _jnp().exp(_lax().lgamma(x))


def _stirling_remainder(x: Any) -> Any:
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2), for x >= 8: 1/(12x) - 1/(360x^3) + 1/(1260x^5)."""
    inverse_square = 1 / (x * x)
    return (1 / 12 - inverse_square * (1 / 360 - inverse_square / 1260)) / x


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)| = log|Gamma(a)| + log|Gamma(b)| - log|Gamma(a + b)|. With the larger argument L and L + s (s the
    smaller one, of either sign) >= 8, lgamma(L) - lgamma(L + s) is taken from Stirling's series as a difference,
    -(L - 1/2) log1p(s/L) - s log(L + s) + s + r(L) - r(L + s), so that the two large logs do not cancel
    (betaln(1e30, 2.5) and betaln(-10.5, 1e10) were 0 in float32)."""
    a, b = _inexact("betaln", a, b)
    return _in_float32(_betaln, a, b)


def _betaln(a: Any, b: Any) -> Any:
    jnp, lax = _jnp(), _lax()
    direct = lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)
    large, small = jnp.maximum(a, b), jnp.minimum(a, b)
    series = (large >= 8) & (large + small >= 8)
    # (the other branch's arguments kept in the series' range, so that its slopes stay finite)
    safe_large, safe_small = jnp.where(series, large, 8), jnp.where(series, small, 1)
    total = safe_large + safe_small
    difference = (-(safe_large - 0.5) * jnp.log1p(safe_small / safe_large) - safe_small * jnp.log(total)
                  + safe_small + _stirling_remainder(safe_large) - _stirling_remainder(total))
    return jnp.where(series, lax.lgamma(small) + difference, direct)


def beta(a: Any, b: Any) -> Any:
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)"""
    a, b = _inexact("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * _jnp().exp(betaln(a, b))


def _x_times_log(x: Any, y: Any, log: Any, finite: Any) -> Any:
    """x * log(y), 0 where x == 0 even if log(y) is not finite there.

    Written as x * L with L = log(y) except where x == 0 and log(y) is not finite (L = 0 there), rather than a
    select of 0: at x == 0 the derivative in x is then log(y), as JAX's rule gives, not 0; and no branch holds an
    infinite slope that reverse mode would multiply by a zero cotangent.
    """
    jnp = _jnp()
    use_log = (x != 0) | finite | jnp.isnan(y)  # a NaN y gives NaN, as JAX's does
    return x * jnp.where(use_log, log(jnp.where(use_log, y, 1)), 0) + 0  # + 0: 0 * log(y < 1) is +0, not -0


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), defined as 0 where x == 0 (even for y == 0)."""
    jnp = _jnp()
    x, y = _inexact("xlogy", x, y)
    return _x_times_log(x, y, jnp.log, (y > 0) & (y < np.inf))


def xlog1py(x: Any, y: Any) -> Any:
    """x * log(1 + y), defined as 0 where x == 0."""
    jnp = _jnp()
    x, y = _inexact("xlog1py", x, y)
    return _x_times_log(x, y, jnp.log1p, (y > -1) & (y < np.inf))


def entr(x: Any) -> Any:
    """-x log x for x > 0, 0 at 0, -inf for x < 0."""
    jnp = _jnp()
    (x,) = _inexact("entr", x)
    return jnp.where(x > 0, -xlogy(x, x), jnp.where(x == 0, jnp.zeros_like(x), jnp.where(x < 0, -np.inf, x)))


def rel_entr(p: Any, q: Any) -> Any:
    """p log(p / q) for p, q > 0; 0 for p == 0 <= q; inf otherwise."""
    jnp = _jnp()
    p, q = _inexact("rel_entr", p, q)
    both_positive = (p > 0) & (q > 0)
    safe_p, safe_q = jnp.where(both_positive, p, 1), jnp.where(both_positive, q, 1)
    zero = (p == 0) & (q >= 0)
    return jnp.where(both_positive, safe_p * jnp.log(safe_p / safe_q), jnp.where(zero, 0, np.inf)).astype(
        _core.aval(p).dtype)


def kl_div(p: Any, q: Any) -> Any:
    """rel_entr(p, q) - p + q: p log(p / q) - p + q for p, q > 0; q for p == 0 <= q; inf otherwise.

    Written as that sum everywhere (JAX's form), so that -p + q carries its slopes (-1, 1) also where rel_entr is
    a constant (at p == 0)."""
    p, q = _inexact("kl_div", p, q)
    return rel_entr(p, q) - p + q


def softmax(x: Any, /, *, axis: Any = None) -> Any:
    """SciPy's softmax: over all axes by default."""
    from srcjax.runtime import nn

    return nn.softmax(x, axis=axis)


def log_softmax(x: Any, /, *, axis: Any = None) -> Any:
    from srcjax.runtime import nn

    return nn.log_softmax(x, axis=axis)


# -- the normal distribution -----------------------------------------------------------------------------------
_SQRT_HALF = math.sqrt(0.5)


def ndtr(x: Any) -> Any:
    """Phi(x), the standard normal CDF: erfc(-x / sqrt 2) / 2, which keeps its accuracy in the left tail."""
    (x,) = _inexact("ndtr", x)
    dtype = _core.aval(x).dtype
    return np.asarray(0.5, dtype) * _lax().erfc(-x * np.asarray(_SQRT_HALF, dtype))


# Rational approximations of Phi^-1 (P. J. Acklam): central region and tails, relative error < 1.2e-9.
_NDTRI_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
            -3.066479806614716e01, 2.506628277459239e00)
_NDTRI_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
            -1.328068155288572e01, 1.0)
_NDTRI_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
            4.374664141464968e00, 2.938163982698783e00)
_NDTRI_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00, 1.0)
_NDTRI_LOW = 0.02425


def _polyval(coefficients: tuple[float, ...], x: Any) -> Any:
    out = coefficients[0]
    for c in coefficients[1:]:
        out = out * x + c
    return out


def ndtri(p: Any) -> Any:
    """Phi^-1(p): Acklam's approximation, then one Halley step on Phi for full precision.

    -inf at 0, inf at 1, NaN outside [0, 1].
    """
    jnp = _jnp()
    (p,) = _inexact("ndtri", p)
    dtype = _core.aval(p).dtype
    inside = (p > 0) & (p < 1)
    safe_p = jnp.where(inside, p, 0.5)
    # central region: a rational function of (p - 1/2)^2 times (p - 1/2)
    q = safe_p - 0.5
    r = q * q
    central = _polyval(_NDTRI_A, r) * q / _polyval(_NDTRI_B, r)
    # tails: a rational function of sqrt(-2 log p) for the smaller of p and 1 - p
    tail_p = jnp.minimum(safe_p, 1 - safe_p)
    t = jnp.sqrt(-2 * jnp.log(tail_p))
    tail = _polyval(_NDTRI_C, t) / _polyval(_NDTRI_D, t)
    tail = jnp.where(safe_p > 0.5, -tail, tail)
    x = jnp.where(tail_p < _NDTRI_LOW, tail, central)
    # Halley's step on f(x) = Phi(x) - p, with f'' / f' = -x; the lower tail works with Phi(x) directly and
    # the upper tail with 1 - Phi(x) = Phi(-x) so that neither loses digits
    upper = safe_p > 0.5
    error = jnp.where(upper, tail_p - ndtr(-x), ndtr(x) - tail_p)  # Phi(x) - p
    # (in the central region as erf(x / sqrt 2) / 2 - (p - 1/2): both near 0 there, so no digits are lost to 1/2)
    error = jnp.where(tail_p < _NDTRI_LOW, error, erf(x * np.asarray(math.sqrt(0.5), dtype)) / 2 - q)
    u = error * np.asarray(math.sqrt(2 * math.pi), dtype) * jnp.exp(x * x / 2)
    x = x - u / (1 + x * u / 2)
    out = jnp.where(p == 0, -np.inf, jnp.where(p == 1, np.inf, x))
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(p), np.nan, out).astype(dtype)


# Where log_ndtr switches method: below LOWER the asymptotic series, above UPPER -Phi(-x) (= log(1 - Phi(-x))
# to first order), between them log(Phi(x)) (log1p(-Phi(-x)) right of 0).
_LOG_NDTR_BOUNDS = {np.dtype(np.float32): (-10.0, 5.0), np.dtype(np.float64): (-20.0, 8.0)}


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """log Phi(x), accurate far into both tails.

    For x -> -inf, log Phi(x) = -x^2/2 - log(-x) - log(2 pi)/2 + log(1 + sum_n (-1)^n (2n-1)!! / x^(2n)).
    """
    if not isinstance(series_order, int) or not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be an int in [0, 30], got {series_order!r}")
    (x,) = _inexact("log_ndtr", x)
    return _log_ndtr(x, series_order)


def _log_ndtr_value(x: Any, series_order: int) -> Any:
    jnp = _jnp()
    dtype = _core.aval(x).dtype
    lower, upper = _LOG_NDTR_BOUNDS.get(dtype, _LOG_NDTR_BOUNDS[np.dtype(np.float32)])
    mid_x = jnp.clip(x, lower, upper)
    # right of 0, 1 - Phi(x) = Phi(-x) is small and log1p keeps its digits
    # (each side evaluated at a safe point on the other, so the unused side's infinite slope, e.g. log1p(-1) at
    # x << 0, does not turn the selected gradient into 0 * inf = NaN)
    right = mid_x > 0
    mid = jnp.where(right, jnp.log1p(-ndtr(-jnp.where(right, mid_x, 1.0))), jnp.log(ndtr(jnp.where(right, 0.0, mid_x))))
    high = -ndtr(-jnp.maximum(x, upper))
    low_x = jnp.minimum(x, lower)
    x2 = low_x * low_x
    series, term, odd_product = 1.0, 1.0, 1.0
    for n in range(1, series_order + 1):  # (-1)^n (2n-1)!! / x^(2n)
        odd_product *= 2 * n - 1
        term = term / x2
        series = series + (-1) ** n * odd_product * term
    low = -x2 / 2 - jnp.log(-low_x) - np.asarray(0.5 * math.log(2 * math.pi), dtype) + jnp.log(series)
    return jnp.where(x > upper, high, jnp.where(x < lower, low, mid)).astype(dtype)


def _log_ndtr_jvp(series_order: int, primals, tangents):
    """d log Phi(x) = phi(x) / Phi(x) dx = exp(log phi(x) - log Phi(x)) dx (JAX's rule): exact on both sides of
    the pieces' boundaries, where the pieces' own slopes (through clip) would be halved."""
    (x,), (x_dot,) = primals, tangents
    out = _log_ndtr(x, series_order)
    log_density = -x * x / 2 - np.asarray(0.5 * math.log(2 * math.pi), _core.aval(x).dtype)
    return out, x_dot * _jnp().exp(log_density - out)


_log_ndtr = _custom_jvp()(_log_ndtr_value, nondiff_argnums=(1,))
_log_ndtr.defjvp(_log_ndtr_jvp)


def multigammaln(a: Any, d: Any) -> Any:
    """log of the multivariate gamma function: d(d-1)/4 log pi + sum_{j<d} log Gamma(a - j/2)."""
    jnp = _jnp()
    try:
        d = int(d)
    except TypeError:
        raise TypeError(f"multigammaln: d must be a static integer, got {d!r}") from None
    (a,) = _inexact("multigammaln", a)
    dtype = _core.aval(a).dtype
    constant = np.asarray(d * (d - 1) / 4 * math.log(math.pi), dtype)
    total = sum((gammaln(a - np.asarray(j / 2, dtype)) for j in range(d)), jnp.zeros_like(a))
    return total + constant


# -- factorials ----------------------------------------------------------------------------------------------------
def factorial(n: Any, exact: bool = False) -> Any:
    """n! = Gamma(n + 1) for n >= 0 (any real n), 0 for n < 0."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    jnp = _jnp()
    (n,) = _inexact("factorial", n)
    return jnp.where(n < 0, 0, jnp.exp(_lax().lgamma(n + 1))).astype(_core.aval(n).dtype)


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:  # noqa: N803 - SciPy's name
    """N choose k = Gamma(N + 1) / (Gamma(k + 1) Gamma(N - k + 1)) for 0 <= k <= N, else 0; with ``repetition``
    the number of multisets, comb(N + k - 1, k) (1 for k = 0 <= N)."""
    jnp, lax = _jnp(), _lax()
    N, k = _inexact("comb", N, k)
    if repetition:
        return jnp.where((k == 0) & (N >= 0), 1, comb(N + k - 1, k)).astype(_core.aval(N).dtype)
    valid = (k >= 0) & (k <= N) & (N >= 0)
    N, k = jnp.where(valid, N, 0), jnp.where(valid, k, 0)
    value = jnp.exp(lax.lgamma(N + 1) - lax.lgamma(k + 1) - lax.lgamma(N - k + 1))
    return jnp.where(valid, value, 0).astype(_core.aval(N).dtype)


# -- loops to convergence ----------------------------------------------------------------------------------------
_MAX_ITERATIONS = 2000


def _iterate(step: Any, state: tuple[Any, ...], done: Any) -> tuple[Any, ...]:
    """``state, converged = step(n, state)`` for n = 1, 2, ... on every element not yet ``done``, until all are
    (or ``_MAX_ITERATIONS``): one ``while_loop`` over the whole array, finished elements held fixed."""
    jnp = _jnp()

    def keep_going(carry):
        n, done, _ = carry
        return (n <= _MAX_ITERATIONS) & ~jnp.all(done)

    def body(carry):
        n, done, state = carry
        new_state, converged = step(n, state)
        state = tuple(jnp.where(done, old, new) for old, new in zip(state, new_state))
        return n + 1, done | converged, state

    n0 = jnp.asarray(1, np.int32)
    return _lax().while_loop(keep_going, body, (n0, done, tuple(state)))[2]


def _nonzero(x: Any, tiny: float) -> Any:
    """Lentz's guard against a zero denominator: x, or ``tiny`` where |x| < tiny."""
    return _jnp().where(_jnp().abs(x) < tiny, tiny, x)


# -- regularized incomplete gamma functions ------------------------------------------------------------------------
def _igamma_series(a: Any, x: Any, skip: Any) -> Any:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)), for x < a + 1."""
    jnp = _jnp()
    eps = float(np.finfo(_core.aval(x).dtype).eps)

    def step(n, state):
        term, total = state
        term = term * x / (a + n)
        return (term, total + term), jnp.abs(term) <= eps * jnp.abs(total)

    one = jnp.ones_like(x)
    _, total = _iterate(step, (one, one), skip)
    return jnp.exp(a * jnp.log(x) - x - _lax().lgamma(a + 1)) * total


def _igammac_fraction(a: Any, x: Any, skip: Any) -> Any:
    """Q(a, x) = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))),
    for x >= a + 1, by the modified Lentz method (Numerical Recipes' gcf)."""
    jnp = _jnp()
    dtype = _core.aval(x).dtype
    eps, tiny = float(np.finfo(dtype).eps), float(np.finfo(dtype).tiny) * 1e3

    def step(n, state):
        b, c, d, h = state
        an = -n * (n - a)
        b = b + 2
        d = 1 / _nonzero(an * d + b, tiny)
        c = _nonzero(b + an / c, tiny)
        delta = d * c
        return (b, c, d, h * delta), jnp.abs(delta - 1) <= eps

    b = x + 1 - a
    d = 1 / _nonzero(b, tiny)
    c = jnp.full_like(x, 1 / tiny)
    _, _, _, h = _iterate(step, (b, c, d, d), skip)
    return jnp.exp(a * jnp.log(x) - x - _lax().lgamma(a)) * h


def _igamma_pair(a: Any, x: Any) -> tuple[Any, Any]:
    """(P(a, x), Q(a, x)) of broadcast float arrays: the series where x < a + 1 (P is then accurate), the continued
    fraction elsewhere (Q is). NaN for a < 0, x < 0 and NaN inputs."""
    jnp = _jnp()
    invalid = (a < 0) | (x < 0) | jnp.isnan(a) | jnp.isnan(x)
    regular = ~invalid & (a > 0) & (a < np.inf) & (x > 0) & (x < np.inf)
    series = x < a + 1
    safe_a, safe_x = jnp.where(regular, a, 1), jnp.where(regular, x, 1)
    p_series = _igamma_series(safe_a, safe_x, ~(regular & series))
    q_fraction = _igammac_fraction(safe_a, safe_x, ~(regular & ~series))
    p = jnp.where(series, p_series, 1 - q_fraction)
    q = jnp.where(series, 1 - p_series, q_fraction)
    # the edges, as JAX has them: P(a, 0) = 0 and P(a, inf) = 1; a = 0 gives Q = 0 but P = NaN below x = 1 (its
    # series divides by a), a = inf gives P = 0 below x = 1 and NaN from there to inf
    p = jnp.where(x == 0, 0, jnp.where((x == np.inf) | ((a == 0) & (x >= 1)), 1, p))
    q = jnp.where(x == 0, 1, jnp.where((x == np.inf) | (a == 0), 0, q))
    p = jnp.where((a == np.inf) & (x > 0) & (x < np.inf), jnp.where(x < 1, 0, np.nan), p)
    q = jnp.where((a == np.inf) & (x > 0) & (x < np.inf), jnp.where(x < 1, 1, np.nan), q)
    p = jnp.where((a == 0) & (x < 1), np.nan, p)
    q = jnp.where((a == 0) & (x == 0), np.nan, q)
    return jnp.where(invalid, np.nan, p), jnp.where(invalid, np.nan, q)


def _gamma_density(a: Any, x: Any) -> Any:
    """dP(a, x)/dx = x^(a-1) e^-x / Gamma(a), NaN for x < 0 where P is (xlogy(0, x) is 0 there), and its limits
    at x = 0 and x = inf where JAX's exp(-x + (a-1) log x - lgamma(a)) makes 0 * inf = NaN."""
    jnp = _jnp()
    return jnp.where(x < 0, np.nan, jnp.exp(xlogy(a - 1, x) - x - _lax().lgamma(a)))


def _difference(function: Any, a: Any) -> Any:
    """d function(a) / da by a central difference, the step relative to a (the scale on which P(a, x) and
    I_x(a, b) change with a), for the parameters JAX differentiates by series of its own."""
    h = float(np.finfo(_core.aval(a).dtype).eps) ** (1 / 3) * _jnp().maximum(_jnp().abs(a), 1e-3)
    return (function(a + h) - function(a - h)) / (2 * h)


def _igamma_jvp(which: int, sign: int) -> Any:
    """The JVP of P (which 0) or Q (which 1): in x the closed form (JAX's, dQ/dx = -dP/dx); in a a difference of
    the smaller of P and Q, which holds its digits (dP/da = -dQ/da). (The rule calls the loops directly, not the
    custom function: reverse mode cannot re-emit a loop nested in a custom call.)"""

    def jvp(primals, tangents):
        (a, x), (a_dot, x_dot) = primals, tangents
        return _igamma_pair(a, x)[which], a_dot * sign * igamma_da(a, x) + sign * x_dot * _gamma_density(a, x)

    return jvp


def igamma_da(a: Any, x: Any) -> Any:
    """dP(a, x)/da, a difference of the smaller of P and Q (dP/da = -dQ/da), which holds its digits."""
    p, q = _igamma_pair(a, x)
    dp_da = _difference(lambda a: _igamma_pair(a, x)[0], a)
    dq_da = _difference(lambda a: _igamma_pair(a, x)[1], a)
    return _jnp().where(p < q, dp_da, -dq_da)


def _sample_grad_series(a: Any, x: Any, skip: Any) -> Any:
    """-(dP/da) / (dP/dx) for x <= max(a, 1), with P's series sum_n c_n, c_n = x^n / ((a + 1) ... (a + n)), and
    its derivative in a carried term by term (XLA's IgammaSeries, sample-derivative mode)."""
    jnp = _jnp()
    eps = float(np.finfo(_core.aval(x).dtype).eps)

    def step(n, state):
        r, c, total, dc_da, dtotal_da = state
        r = r + 1
        dc_da = dc_da * (x / r) - c * x / (r * r)
        c = c * (x / r)
        dtotal_da = dtotal_da + dc_da
        return (r, c, total + c, dc_da, dtotal_da), ~(jnp.abs(dc_da / dtotal_da) > eps)

    one, zero = jnp.ones_like(x), jnp.zeros_like(x)
    _, _, total, _, dtotal_da = _iterate(step, (a, one, one, zero, zero), skip)
    dlog_prefactor_da = jnp.log(x) - _lax().digamma(a + 1)  # P = total x^a e^-x / Gamma(a + 1)
    return -(dtotal_da + total * dlog_prefactor_da) * x / a


def _sample_grad_fraction(a: Any, x: Any, skip: Any) -> Any:
    """(dQ/da) / (dP/dx) for x > max(a, 1), from Q's continued fraction (Cephes' igamc convergents p_k / q_k)
    with the derivatives of p_k and q_k in a carried along (XLA's IgammacContinuedFraction, sample-derivative
    mode); the convergents are rescaled by eps when they grow past 1 / eps."""
    jnp = _jnp()
    eps = float(np.finfo(_core.aval(x).dtype).eps)

    def step(n, state):
        ans, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans = state
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk != 0
        ans = jnp.where(nonzero, pk / qk, ans)
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        dans_new = jnp.where(nonzero, (dpk - ans * dqk) / qk, dans)
        change = jnp.where(nonzero, jnp.abs(dans_new - dans), 1)
        rescale = jnp.abs(pk) > 1 / eps
        shrink = lambda v: jnp.where(rescale, v * eps, v)  # noqa: E731
        state = (ans, y, z, c, shrink(pk), shrink(qk), shrink(pkm1), shrink(qkm1), shrink(dpkm1), shrink(dqkm1),
                 shrink(dpk), shrink(dqk), dans_new)
        return state, ~(change > eps)

    y = 1 - a
    z = x + y + 1
    pkm1, qkm1 = x + 1, z * x
    ans = pkm1 / qkm1
    zero = jnp.zeros_like(x)
    dqkm1 = -x
    state = (ans, y, z, zero, pkm1, qkm1, jnp.ones_like(x), x, zero, zero, zero, dqkm1, -ans * dqkm1 / qkm1)
    ans, dans = (lambda s: (s[0], s[12]))(_iterate(step, state, skip))
    dlog_prefactor_da = jnp.log(x) - _lax().digamma(a)  # Q = ans x^a e^-x / Gamma(a)
    return (dans + ans * dlog_prefactor_da) * x


def gamma_sample_grad(a: Any, x: Any) -> Any:
    """d x / d a for a Gamma(a, 1) sample x held at its quantile: -(dP/da) / (dP/dx) (implicit
    reparameterisation, what JAX's ``random_gamma_grad`` computes, by XLA's algorithm: P's series or Q's
    continued fraction differentiated term by term). 0 at x = 0, NaN for x < 0 or a <= 0."""
    jnp = _jnp()
    dtype = _core.aval(x).dtype
    is_nan = jnp.isnan(a) | jnp.isnan(x)
    domain_error = (x < 0) | (a <= 0)
    log_prefactor = a * jnp.log(x) - x - _lax().lgamma(a)
    underflow = log_prefactor < -float(np.log(np.finfo(dtype).max))
    usable = ~((x == 0) | domain_error | is_nan)
    enabled = usable & ~underflow  # an underflowing prefactor leaves the sums at their first terms
    fraction = (x > 1) & (x > a)
    safe_a, safe_x = jnp.where(usable, a, 1), jnp.where(usable, x, 1)
    out = jnp.where(fraction, _sample_grad_fraction(safe_a, safe_x, ~(enabled & fraction)),
                    _sample_grad_series(safe_a, safe_x, ~(enabled & ~fraction)))
    out = jnp.where(x == 0, 0, out)
    return jnp.where(domain_error | is_nan, np.nan, out)


@_custom_jvp()
def _gammainc(a: Any, x: Any) -> Any:
    return _igamma_pair(a, x)[0]


@_custom_jvp()
def _gammaincc(a: Any, x: Any) -> Any:
    return _igamma_pair(a, x)[1]


_gammainc.defjvp(_igamma_jvp(0, 1))
_gammaincc.defjvp(_igamma_jvp(1, -1))


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x) = 1/Gamma(a) int_0^x t^(a-1) e^-t dt."""
    a, x = _inexact("gammainc", a, x)
    return _in_float32(_gammainc, a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = _inexact("gammaincc", a, x)
    return _in_float32(_gammaincc, a, x)


# -- the regularized incomplete beta function ----------------------------------------------------------------------
def _betainc_fraction(a: Any, b: Any, x: Any, skip: Any) -> Any:
    """I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * 1 / (1 + d1 / (1 + d2 / (1 + ...))), with
    d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m)), d_2m+1 = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)),
    by the modified Lentz method (Numerical Recipes' betacf); it converges fast for x < (a + 1) / (a + b + 2)."""
    jnp = _jnp()
    dtype = _core.aval(x).dtype
    eps, tiny = float(np.finfo(dtype).eps), float(np.finfo(dtype).tiny) * 1e3

    def lentz(c, d, h, coefficient):
        d = 1 / _nonzero(1 + coefficient * d, tiny)
        c = _nonzero(1 + coefficient / c, tiny)
        return c, d, h * d * c, d * c

    def step(m, state):
        c, d, h = state
        m2 = 2 * m
        c, d, h, _ = lentz(c, d, h, m * (b - m) * x / ((a + m2 - 1) * (a + m2)))
        c, d, h, delta = lentz(c, d, h, -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)))
        return (c, d, h), jnp.abs(delta - 1) <= eps

    d = 1 / _nonzero(1 - (a + b) * x / (a + 1), tiny)
    _, _, h = _iterate(step, (jnp.ones_like(x), d, d), skip)
    return jnp.exp(xlogy(a, x) + xlog1py(b, -x) - betaln(a, b)) * h / a


def _betainc_value(a: Any, b: Any, x: Any) -> Any:
    jnp = _jnp()
    invalid = (a < 0) | (b < 0) | ((a == 0) & (b == 0)) | (x < 0) | (x > 1)
    invalid = invalid | jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x)
    regular = ~invalid & (a > 0) & (b > 0) & (x > 0) & (x < 1)
    # I_x(a, b) = 1 - I_(1-x)(b, a): the fraction is evaluated where it converges fast
    swap = x > (a + 1) / (a + b + 2)
    a2, b2, x2 = jnp.where(swap, b, a), jnp.where(swap, a, b), jnp.where(swap, 1 - x, x)
    a2, b2, x2 = jnp.where(regular, a2, 1), jnp.where(regular, b2, 1), jnp.where(regular, x2, 0.5)
    fraction = _betainc_fraction(a2, b2, x2, ~regular)
    value = jnp.where(swap, 1 - fraction, fraction)
    # the edges: I_0 = 0, I_1 = 1; a = 0 puts all mass at 0 (I = 1), b = 0 at 1 (I = 0)
    value = jnp.where(x == 0, 0, jnp.where(x == 1, 1, jnp.where(b == 0, 0, jnp.where(a == 0, 1, value))))
    return jnp.where(invalid, np.nan, value)


@_custom_jvp()
def _betainc(a: Any, b: Any, x: Any) -> Any:
    return _betainc_value(a, b, x)


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    """In x the closed form dI_x(a, b)/dx = x^(a-1) (1-x)^(b-1) / B(a, b); in a and b, where JAX raises
    (ValueError), differences rather than a silent zero."""
    a, b, x = primals
    a_dot, b_dot, x_dot = tangents
    density = _jnp().exp(xlogy(a - 1, x) + xlog1py(b - 1, -x) - betaln(a, b))
    d_da = _difference(lambda a: _betainc_value(a, b, x), a)
    d_db = _difference(lambda b: _betainc_value(a, b, x), b)
    return _betainc_value(a, b, x), a_dot * d_da + b_dot * d_db + x_dot * density


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function I_x(a, b) = 1/B(a, b) int_0^x t^(a-1) (1-t)^(b-1) dt."""
    a, b, x = _inexact("betainc", a, b, x)
    return _in_float32(_betainc, a, b, x)


# -- modified Bessel functions of orders 0 and 1 -------------------------------------------------------------------
# Cephes' Chebyshev coefficients: exp(-x) I0(x) and exp(-x) I1(x) / x on [0, 8] (argument x/2 - 2), and
# exp(-x) sqrt(x) I0(x) and exp(-x) sqrt(x) I1(x) on (8, inf) (argument 32/x - 2).
_I0E_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16, 1.71539128555513303061e-15,
    -1.16853328779934516808e-14, 7.67618549860493561688e-14, -4.85644678311192946090e-13, 2.95505266312963983461e-12,
    -1.72682629144155570723e-11, 9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7, 1.11738753912010371815e-6,
    -4.41673835845875056359e-6, 1.64484480707288970893e-5, -5.75419501008210370398e-5, 1.88502885095841655729e-4,
    -5.76375574538582365885e-4, 1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2, 1.71620901522208775349e-1,
    -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0E_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17, 3.46122286769746109310e-17,
    -2.82762398051658348494e-16, -3.42548561967721913462e-16, 1.77256013305652638360e-15, 3.81168066935262242075e-15,
    -9.55484669882830764870e-15, -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11, -3.14991652796324136454e-11,
    1.18891471078464383424e-11, 4.94060238822496958910e-10, 3.39623202570838634515e-9, 2.26666899049817806459e-8,
    2.04891858946906374183e-7, 2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)
_I1E_A = (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16, -1.10559694773538630805e-15,
    7.60068429473540693410e-15, -5.04218550472791168711e-14, 3.22379336594557470981e-13, -1.98397439776494371520e-12,
    1.17361862988909016308e-11, -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
    9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7, -8.56872026469545474066e-7,
    3.47025130813767847674e-6, -1.32731636560394358279e-5, 4.78156510755005422638e-5, -1.61760815825896745588e-4,
    5.12285956168575772895e-4, -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
    2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1, -1.76416518357834055153e-1,
    2.52587186443633654823e-1)
_I1E_B = (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17, -3.20952592199342395980e-17,
    2.96262899764595013876e-16, 3.30820231092092828324e-16, -1.88035477551078244854e-15, -3.81440307243700780478e-15,
    1.04202769841288027642e-14, 4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11, 3.25260358301548823856e-11,
    -1.89749581235054123450e-11, -5.58974346219658380687e-10, -3.83538038596423702205e-9, -2.63146884688951950684e-8,
    -2.51223623787020892529e-7, -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
    7.78576235018280120474e-1)


def _chebyshev(coefficients: tuple[float, ...], t: Any) -> Any:
    """Cephes' chbevl: sum_i c_i T_i(t / 2) by Clenshaw's recurrence, coefficients from the highest order."""
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = t * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _bessel_scaled(x: Any, small: tuple[float, ...], large: tuple[float, ...]) -> tuple[Any, Any, Any]:
    """(|x| <= 8, the [0, 8] expansion at |x|, the (8, inf) expansion over sqrt|x|), each at a safe |x|."""
    jnp = _jnp()
    ax = jnp.abs(x)
    inside = ax <= 8
    near = _chebyshev(small, jnp.where(inside, ax, 0) / 2 - 2)
    far_x = jnp.where(inside, 8, ax)
    return inside, near, _chebyshev(large, 32 / far_x - 2) / jnp.sqrt(far_x)


@_custom_jvp()
def _i0e(x: Any) -> Any:
    inside, near, far = _bessel_scaled(x, _I0E_A, _I0E_B)
    return _jnp().where(inside, near, far).astype(_core.aval(x).dtype)


@_i0e.defjvp
def _i0e_jvp(primals, tangents):
    """JAX's rule, d i0e = i1e(x) - sign(x) i0e(x): 0 at the kink x = 0, where |x|'s slope is taken as sign(0)."""
    (x,), (x_dot,) = primals, tangents
    y = _i0e(x)
    return y, x_dot * (i1e(x) - _jnp().sign(x) * y)


def i0e(x: Any) -> Any:
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""
    (x,) = _inexact("i0e", x)
    return _i0e(x)


def i1e(x: Any) -> Any:
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1 (odd in x)."""
    jnp = _jnp()
    (x,) = _inexact("i1e", x)
    inside, near, far = _bessel_scaled(x, _I1E_A, _I1E_B)
    return jnp.where(inside, x * near, jnp.sign(x) * far).astype(_core.aval(x).dtype)


def i0(x: Any) -> Any:
    """I0(x) = exp(|x|) i0e(x)"""
    (x,) = _inexact("i0", x)
    return _jnp().exp(_jnp().abs(x)) * i0e(x)


def i1(x: Any) -> Any:
    """I1(x) = exp(|x|) i1e(x)"""
    (x,) = _inexact("i1", x)
    return _jnp().exp(_jnp().abs(x)) * i1e(x)


_ZETA_TERMS = 12  # the terms summed before Euler-Maclaurin's tail
_ZETA_BERNOULLI = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798]


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function sum_k (q + k)^-x, for x > 1: the first terms, then Euler-Maclaurin's tail at
    a = q + 12, (a^(1-x))/(x-1) + a^-x/2 + sum_j B_2j/(2j)! x (x+1)...(x+2j-2) a^(-x-2j+1). inf at x = 1 and at
    the poles q = 0, -1, ...; NaN for x < 1 and where q + 12 is not positive. ``q`` is required, as in JAX."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to compute the Hurwitz "
                                  "Zeta function.")
    x, q = _inexact("zeta", x, q)
    return _in_float32(_zeta, x, q)


def _zeta(x: Any, q: Any) -> Any:
    jnp = _jnp()
    total = sum(jnp.power(q + k, -x) for k in range(_ZETA_TERMS))
    a = q + _ZETA_TERMS
    tail = jnp.power(a, 1 - x) / (x - 1) + jnp.power(a, -x) / 2
    rising, factorial_2j = x, 2.0  # x (x+1) ... (x+2j-2), (2j)!
    for j, bernoulli in enumerate(_ZETA_BERNOULLI, start=1):
        tail = tail + bernoulli / factorial_2j * rising * jnp.power(a, -x - 2 * j + 1)
        rising = rising * (x + 2 * j - 1) * (x + 2 * j)
        factorial_2j *= (2 * j + 1) * (2 * j + 2)
    out = jnp.where(a > 0, total + tail, np.nan)
    pole = (q <= 0) & (q == jnp.floor(q))
    out = jnp.where(pole | (x == 1), np.inf, out)
    return jnp.where((x < 1) | jnp.isnan(x) | jnp.isnan(q) | (x == np.inf), np.nan, out)


# erfcx(x) ~ P(1/x^2) / (sqrt(pi) x) for large x, P(t) = sum_k (-1)^k (2k-1)!! / 2^k t^k (highest degree first)
_ERFCX_ASYMPTOTIC = (7918.06640625, -1055.7421875, 162.421875, -29.53125, 6.5625, -1.875, 0.75, -0.5, 1.0)


@_custom_jvp()
def _erfcx(x: Any) -> Any:
    """exp(x^2) erfc(x) directly while exp(x^2) is finite, then the asymptotic series (JAX's split: 9 terms in
    float64 past x ~ 26.6, 5 in float32 past ~ 9.4, where the first omitted term is far below eps)."""
    jnp = _jnp()
    dtype = np.dtype(_core.aval(x).dtype)
    work = dtype if dtype in (np.dtype(np.float32), np.dtype(np.float64)) else np.dtype(np.float32)
    x_work = x.astype(work)
    large = x_work > float(np.sqrt(np.log(np.finfo(work).max)))
    safe = jnp.where(large, 1, x_work)
    direct = jnp.exp(safe * safe) * _lax().erfc(safe)
    terms = 9 if work == np.dtype(np.float64) else 5
    asymptotic = jnp.polyval(np.array(_ERFCX_ASYMPTOTIC[-terms:], work), 1 / (x_work * x_work))
    asymptotic = asymptotic / (x_work * float(np.sqrt(np.pi)))
    return jnp.where(large, asymptotic, direct).astype(dtype)


@_erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    """d erfcx = 2 x erfcx(x) - 2 / sqrt(pi)"""
    (x,), (x_dot,) = primals, tangents
    y = _erfcx(x)
    return y, x_dot * (2 * x * y - 2 / math.sqrt(math.pi))


def erfcx(x: Any) -> Any:
    """exp(x^2) erfc(x), the scaled complementary error function (real x; finite where exp(x^2) overflows)."""
    (x,) = _inexact("erfcx", x)
    if np.issubdtype(_core.aval(x).dtype, np.complexfloating):
        raise NotImplementedError("erfcx of a complex argument (the Faddeeva function) is not implemented")
    return _erfcx(x)


# Cephes' rational approximation of spence on [0.5, 1.5] in w = x - 1 (numerator and denominator)
_SPENCE_A = (4.65128586073990045278e-5, 7.31589045238094711071e-3, 1.33847639578309018650e-1,
             8.79691311754530315341e-1, 2.71149851196553469920e0, 4.25697156008121755724e0,
             3.29771340985225106936e0, 1.00000000000000000126e0)
_SPENCE_B = (6.90990488912553276999e-4, 2.54043763932544379113e-2, 2.82974860602568089943e-1,
             1.41172597751831069617e0, 3.63800533345137075418e0, 5.03278880143316990390e0,
             3.54771340985225096217e0, 9.99999999999999998740e-1)


def _spence_positive(x: Any) -> Any:
    """Cephes' reductions to [0.5, 1.5]: x -> 1/x above 2 (and 1/x - 1 above 1.5) with -log(x)^2 / 2 - y, and
    the reflection pi^2/6 - log(x) log(1 - x) - y below 0.5."""
    jnp = _jnp()
    dtype = _core.aval(x).dtype
    inverted = x > 2.0
    x = jnp.piecewise(x, [inverted], [lambda v: 1.0 / v, lambda v: v])
    above, below = x > 1.5, x < 0.5
    inverted = inverted | above
    w = jnp.piecewise(x, [above, below], [lambda v: 1.0 / v - 1.0, lambda v: -v, lambda v: v - 1.0])
    y = -w * jnp.polyval(np.array(_SPENCE_A, dtype), w) / jnp.polyval(np.array(_SPENCE_B, dtype), w)
    reflected = jnp.where(below, x, 0.25)  # log(1 - x) is NaN above 1: kept out of the other branches' gradients
    y = jnp.where(below, np.pi**2 / 6.0 - jnp.log(reflected) * jnp.log(1.0 - reflected) - y, y)
    return jnp.where(inverted, -0.5 * jnp.log(x) ** 2 - y, y)


def spence(x: Any) -> Any:
    """SciPy's spence, the integral of log(t) / (1 - t) from 1 to x, for real x >= 0 (NaN below 0, as in JAX)."""
    jnp = _jnp()
    x = jnp.asarray(x)
    dtype = np.dtype(_core.aval(x).dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"x.dtype={dtype} is not supported, see docstring for supported types.")
    special = (x < 0.0) | (x == 1.0) | (x == 0.0)
    # the formula runs at a harmless point where a constant is taken, so their gradient is 0 (as in JAX, whose
    # piecewise differentiates only the branch taken)
    value = _spence_positive(jnp.where(special, 0.5, x))
    return jnp.piecewise(x, [~special, x < 0.0, x == 1.0, x == 0.0], [value, np.nan, 0, np.pi**2 / 6])


# -- small formulas of JAX's --------------------------------------------------------------------------------------
def poch(z: Any, m: Any) -> Any:
    """The rising factorial (Pochhammer symbol) Gamma(z + m) / Gamma(z); 1 for m == 0 (real arguments)."""
    jnp = _jnp()
    z, m = _inexact("poch", z, m)
    if np.issubdtype(_core.aval(z).dtype, np.complexfloating):
        raise ValueError("jnp.poch does not support complex-valued inputs.")
    return jnp.where(m == 0, jnp.ones_like(z), gamma(z + m) / gamma(z))


def _boxcox(name: str, x: Any, lmbda: Any, log: Any) -> Any:
    """(e^(lmbda L) - 1) / lmbda with L = log(x) (or log1p), as expm1; L itself at lmbda == 0."""
    jnp = _jnp()
    x, lmbda = _inexact(name, x, lmbda)
    zero = lmbda == 0
    safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)  # (no 0/0 in the unused branch, nor in its slope)
    log_x = log(x)
    return jnp.where(zero, log_x, jnp.expm1(safe * log_x) / safe)


def boxcox(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log x at lmbda == 0."""
    return _boxcox("boxcox", x, lmbda, _jnp().log)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform of 1 + x: ((1 + x)^lmbda - 1) / lmbda, log1p(x) at lmbda == 0."""
    return _boxcox("boxcox1p", x, lmbda, _jnp().log1p)


def loggamma(x: Any) -> Any:
    """The principal branch of log Gamma(x): lgamma for x > 0, NaN for x <= 0 (real arguments only here)."""
    (x,) = _inexact("loggamma", x)
    if np.issubdtype(_core.aval(x).dtype, np.complexfloating):
        raise NotImplementedError("loggamma of a complex argument is not implemented")
    return _jnp().where(x > 0, _lax().lgamma(x), np.nan)


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers B_0 ... B_n (B_1 = -1/2) in the default float dtype, by Chowla and Hartung's series
    for the even ones, B_2k = (-1)^(k+1) 2 (2k)! / (2 pi)^2k zeta(2k), as JAX computes them. ``n`` is static."""
    import operator

    jnp = _jnp()
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"bernoulli: n must be a static non-negative integer, got {n!r}") from None
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    first = jnp.array([1, -1 / 2, 1 / 6])
    if n < 3:
        return first[:n + 1]
    numbers = jnp.zeros(n + 1).at[:3].set(first)
    m = jnp.arange(4, n + 1, 2, dtype=numbers.dtype)
    q1 = (1.0 / np.pi**2) * jnp.cumprod(-(m - 1) * m / 4 / np.pi**2)
    k = jnp.arange(2, 50, dtype=numbers.dtype)  # 2^-50 < 1e-15
    q2 = jnp.sum(k[:, None] ** -m[None, :], axis=0)
    return numbers.at[4::2].set(q1 * (1 + q2))


# -- exponential integrals -----------------------------------------------------------------------------------------
_EULER = 0.5772156649015329


def _exp1_value(x: Any) -> Any:
    """E1(x) = int_x^inf e^-t / t dt for x > 0 (Numerical Recipes' expint): -gamma - log x - sum_k (-x)^k / (k k!)
    up to x = 1, e^-x / (x + 1 - 1 / (x + 3 - 4 / (x + 5 - ...))) by Lentz's method beyond. inf at 0, NaN below."""
    jnp = _jnp()
    dtype = _core.aval(x).dtype
    eps, tiny = float(np.finfo(dtype).eps), float(np.finfo(dtype).tiny) * 1e3
    regular = (x > 0) & (x < np.inf)
    series_x = jnp.where(regular & (x <= 1), x, 0.5)
    fraction_x = jnp.where(regular & (x > 1), x, 2.0)

    def series_step(k, state):
        term, total = state
        term = -term * series_x / k
        return (term, total - term / k), jnp.abs(term / k) <= eps * jnp.abs(total)

    start = -_EULER - jnp.log(series_x)
    _, series = _iterate(series_step, (jnp.ones_like(x), start), ~(regular & (x <= 1)))

    def fraction_step(i, state):
        b, c, d, h = state
        an = -(i * i).astype(dtype)
        b = b + 2
        d = 1 / _nonzero(an * d + b, tiny)
        c = _nonzero(b + an / c, tiny)
        return (b, c, d, h * c * d), jnp.abs(c * d - 1) <= eps

    b = fraction_x + 1
    _, _, _, h = _iterate(fraction_step, (b, jnp.full_like(x, 1 / tiny), 1 / b, 1 / b), ~(regular & (x > 1)))
    out = jnp.where(x <= 1, series, h * jnp.exp(-fraction_x))
    out = jnp.where(x == 0, np.inf, jnp.where(x == np.inf, 0, out))
    return jnp.where((x < 0) | jnp.isnan(x), np.nan, out)


def _expi_value(x: Any) -> Any:
    """Ei(x) = -E1(-x) for x < 0; for x > 0 gamma + log x + sum_k x^k / (k k!) up to x = -log(eps), then the
    asymptotic e^x / x (1 + 1/x + 2!/x^2 + ...) summed while its terms fall (Numerical Recipes' ei). -inf at 0."""
    jnp = _jnp()
    dtype = _core.aval(x).dtype
    eps = float(np.finfo(dtype).eps)
    limit = -math.log(eps)
    positive = (x > 0) & (x < np.inf)
    series_x = jnp.where(positive & (x < limit), x, 1.0)

    def series_step(k, state):
        fact, total = state
        fact = fact * series_x / k
        return (fact, total + fact / k), fact / k < eps * total

    _, series = _iterate(series_step, (jnp.ones_like(x), jnp.zeros_like(x)), ~(positive & (x < limit)))
    series = series + _EULER + jnp.log(series_x)
    far_x = jnp.where(positive & (x >= limit), x, limit)

    def asymptotic_step(k, state):
        term, total, done = state
        new_term = term * k / far_x
        grows = new_term >= term
        total = jnp.where(done, total, jnp.where(grows, total - term, total + new_term))
        return (new_term, total, done | grows | (new_term < eps)), done | grows | (new_term < eps)

    one, zero = jnp.ones_like(x), jnp.zeros_like(x)
    _, total, _ = _iterate(asymptotic_step, (one, zero, ~(positive & (x >= limit))), ~(positive & (x >= limit)))
    asymptotic = jnp.exp(far_x) * (1 + total) / far_x
    out = jnp.where(x < limit, series, asymptotic)
    out = jnp.where(x < 0, -_exp1_value(-x), out)
    out = jnp.where(x == 0, -np.inf, jnp.where(x == np.inf, np.inf, out))
    return jnp.where(jnp.isnan(x), np.nan, out)


def _exp1_jvp(primals, tangents):
    """d E1 = -e^-x / x dx (the rule calls the value's loops, not the custom function)"""
    (x,), (x_dot,) = primals, tangents
    return _exp1_value(x), -x_dot * _jnp().exp(-x) / x


def _expi_jvp(primals, tangents):
    """d Ei = e^x / x dx"""
    (x,), (x_dot,) = primals, tangents
    return _expi_value(x), x_dot * _jnp().exp(x) / x


_exp1 = _custom_jvp()(_exp1_value)
_exp1.defjvp(_exp1_jvp)
_expi = _custom_jvp()(_expi_value)
_expi.defjvp(_expi_jvp)


def exp1(x: Any) -> Any:
    """The exponential integral E1(x) = int_x^inf e^-t / t dt (real x; NaN for x < 0, inf at 0)."""
    (x,) = _inexact("exp1", x)
    return _in_float32(_exp1, x)


def expi(x: Any) -> Any:
    """The exponential integral Ei(x) = -int_-x^inf e^-t / t dt (real x; -inf at 0)."""
    (x,) = _inexact("expi", x)
    return _in_float32(_expi, x)
