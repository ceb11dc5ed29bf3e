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

__all__ = [
    "polygamma",
    "logsumexp", "expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "gamma", "gammasgn", "beta",
    "betaln", "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "softmax", "log_softmax", "ndtr", "ndtri",
    "log_ndtr", "multigammaln",
]


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


def _lax():
    from srcjax.runtime import lax

    return lax


def _inexact(name: str, *args: Any) -> list[Any]:
    _core.check_arraylike(name, *args)
    return _core.promote_args_inexact(name, *args)


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
    return _jnp().log(x / (1 - x))


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
    """psi^(n)(x): the n-th derivative of digamma (polygamma(0, x) is digamma)."""
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
    return jnp.where((x < 0) & (x == floor_x), np.nan, sign).astype(_core.aval(x).dtype)


def gamma(x: Any) -> Any:
    """Gamma(x) = sign * exp(log|Gamma(x)|)"""
    (x,) = _inexact("gamma", x)
    return gammasgn(x) * _jnp().exp(_lax().lgamma(x))


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)| = log|Gamma(a)| + log|Gamma(b)| - log|Gamma(a + b)|"""
    lax = _lax()
    a, b = _inexact("betaln", a, b)
    return lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b)


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
    return jnp.where(x > 0, -xlogy(x, x), jnp.where(x == 0, jnp.zeros_like(x), -np.inf))


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
    jnp = _jnp()
    if not isinstance(series_order, int) or not 0 <= series_order <= 30:
        raise ValueError(f"log_ndtr: series_order must be an int in [0, 30], got {series_order!r}")
    (x,) = _inexact("log_ndtr", x)
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
