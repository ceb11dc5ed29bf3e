"""The confluent and Gauss hypergeometric functions ``hyp1f1`` and ``hyp2f1`` of ``srcjax.scipy.special``, by
JAX's methods (Pearson, Olver and Porter 2014: Taylor series, the asymptotic series of 1F1, the terminating
series and the digamma transformation near x = 1 of 2F1, AMS 55 15.3.10-12), so that the values agree with
JAX's, including its conventions (1F1(0, 0, x) = 1, 2F1 = inf for x > 1). Every series runs elementwise to
JAX's stopping rule (the relative size of the last term, at most 250 terms).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy._lazy import _custom_jvp, _jnp
from srcjax.runtime.scipy.special_integrals import _while

__all__ = ["hyp1f1", "hyp2f1"]

_MAX_TERMS = 250


def _special():
    from srcjax.runtime.scipy import special

    return special


def _eps(x: Any) -> float:
    return float(np.finfo(_core.aval(x).dtype).eps)


def _real_arguments(name: str, *args: Any) -> list[Any]:
    """The arguments promoted to one inexact dtype and broadcast together (JAX's ``vectorize``)."""
    _core.check_arraylike(name, *args)
    args = _core.promote_args_inexact(name, *args)
    if np.issubdtype(_core.aval(args[-1]).dtype, np.complexfloating):
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return list(_jnp().broadcast_arrays(*args))


def _sum_terms(first_term: Any, ratio: Any, weight: Any = None, active: Any = True) -> Any:
    """sum_k t_k w_k, t_1 = ``first_term``, t_(k+1) = t_k ratio(k), from k = 1 while k < 250 and |t_k| > eps |sum|.
    Without ``weight`` the sum starts at 1 (the k = 0 term of a hypergeometric series), with it at 0 (a series of
    derivatives, whose k = 0 term vanishes)."""
    jnp = _jnp()
    eps = _eps(first_term)
    start = jnp.zeros_like(first_term) if weight is not None else jnp.ones_like(first_term)

    def body(state):
        total, k, term = state
        total = total + (term if weight is None else term * weight(k))
        return total, k + 1, term * ratio(k)

    def cond(state):
        total, k, term = state
        return active & (k < _MAX_TERMS) & (jnp.abs(term) / jnp.abs(total) > eps)

    return _while(cond, body, (start, jnp.ones_like(first_term), first_term))[0]


# -- 1F1 -----------------------------------------------------------------------------------------------------------
def _hyp1f1_value(a: Any, b: Any, x: Any) -> Any:
    """The Taylor series for |x| < 100, else the asymptotic series Gamma(b)/Gamma(a) e^x x^(a-b) sum_k
    (b-a)_k (1-a)_k / (k! x^k); then JAX's values at a = 0 (1), a = b (e^x) and b = 0 (inf)."""
    jnp, special = _jnp(), _special()
    near = jnp.abs(x) < 100
    series = _sum_terms(a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1), active=near)
    asymptotic = _sum_terms((b - a) * (1 - a) / x, lambda k: (b - a + k) * (1 - a + k) / (k + 1) / x, active=~near)
    asymptotic = special.gamma(b) / special.gamma(a) * jnp.exp(x) * x ** (a - b) * asymptotic
    out = jnp.where(near, series, asymptotic)
    out = jnp.where(a == 0, 1.0, jnp.where(a == b, jnp.exp(x), jnp.where(b == 0, np.inf, out)))
    return out.astype(_core.aval(x).dtype)


def _hyp1f1_da(a: Any, b: Any, x: Any) -> Any:
    """d 1F1 / da = sum_k (a)_k / ((b)_k k!) x^k (psi(a + k) - psi(a))"""
    digamma = _special().digamma
    return _sum_terms(a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1), lambda k: digamma(a + k) - digamma(a))


def _hyp1f1_db(a: Any, b: Any, x: Any) -> Any:
    """d 1F1 / db = sum_k (a)_k / ((b)_k k!) x^k (psi(b) - psi(b + k))"""
    digamma = _special().digamma
    return _sum_terms(a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1), lambda k: digamma(b) - digamma(b + k))


@_custom_jvp()
def _hyp1f1(a: Any, b: Any, x: Any) -> Any:
    return _hyp1f1_value(a, b, x)


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
    """JAX's partials: the two derivative series, and d 1F1 / dx = a/b 1F1(a + 1, b + 1, x). (The rule calls the
    loops directly: reverse mode cannot re-emit a loop nested in a custom call.)"""
    (a, b, x), (a_dot, b_dot, x_dot) = primals, tangents
    out = _hyp1f1_value(a, b, x)
    d_dx = a / b * _hyp1f1_value(a + 1, b + 1, x)
    return out, _hyp1f1_da(a, b, x) * a_dot + _hyp1f1_db(a, b, x) * b_dot + d_dx * x_dot


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """The confluent hypergeometric function 1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k! (real arguments; JAX's
    convention 1F1(0; 0; x) = 1). Large values lose digits in float32, as JAX's do."""
    a, b, x = _real_arguments("hyp1f1", a, b, x)
    return _hyp1f1(a, b, x)


# -- 2F1 -----------------------------------------------------------------------------------------------------------
def _is_nonpositive_integer(v: Any, eps: float) -> Any:
    jnp = _jnp()
    return (v <= 0) & (jnp.abs(v - jnp.round(v)) < eps)


def _hyp2f1_series(a: Any, b: Any, c: Any, x: Any, active: Any) -> Any:
    """sum_k (a)_k (b)_k / (c)_k x^k / k!, while |term| > eps |sum| (at most 250 terms)."""
    jnp = _jnp()
    eps = _eps(x)

    def body(state):
        total, k, term = state
        return total + term, k + 1, term * ((a + k - 1) * (b + k - 1) / (c + k - 1) / k * x)

    def cond(state):
        total, k, term = state
        return active & (k < _MAX_TERMS) & (jnp.abs(term) > eps * jnp.abs(total))

    return _while(cond, body, (jnp.zeros_like(x), jnp.ones_like(x), jnp.ones_like(x)))[0]


def _hyp2f1_terminating(a: Any, b: Any, c: Any, x: Any, active: Any) -> Any:
    """The polynomial of a non-positive integer a or b: its |a| + 1 terms (b and a swapped where b is the
    integer of larger magnitude that keeps clear of a pole of (c)_k)."""
    jnp = _jnp()
    eps = _eps(x) * 50
    c_pole_before_b = (c % 1 == 0) & (c <= 0) & (c > b)
    swap = (b < a) & (jnp.abs(b - jnp.round(b)) < eps) & ~c_pole_before_b
    a, b = jnp.abs(jnp.where(swap, b, a)), jnp.where(swap, a, b)

    def body(state):
        i, total, term = state
        term = term * (-(a - i + 1) / (c + i - 1) * (b + i - 1) / i * x)
        return i + 1, total + term, term

    one = jnp.ones_like(x)
    return _while(lambda s: active & (s[0] < a + 1), body, (one, one, one))[1]


def _hyp2f1_near_one(a: Any, b: Any, c: Any, x: Any, active: Any) -> Any:
    """2F1 for x near 1 with d = c - a - b near an integer m (AMS 55 15.3.10-12): a series in s = 1 - x with
    digamma coefficients, plus for m != 0 a finite sum of |m| - 1 terms, in JAX's order of operations."""
    jnp, special = _jnp(), _special()
    digamma, gamma = special.digamma, special.gamma
    eps = _eps(x)
    d = c - a - b
    s = 1 - x
    rd = jnp.round(d)
    nonnegative = rd >= 0
    e = jnp.where(nonnegative, d, -d)
    d1, d2 = jnp.where(nonnegative, d, 0), jnp.where(nonnegative, 0, d)
    log_s = jnp.log(s)
    y = digamma(1.0) + digamma(1.0 + e) - digamma(a + d1) - digamma(b + d1) - log_s
    y = y / gamma(e + 1.0)
    p = (a + d1) * (b + d1) * s / gamma(e + 2.0)

    def body(state):
        p, q, t, y = state
        r = digamma(1.0 + t) + digamma(1.0 + t + e) - digamma(a + t + d1) - digamma(b + t + d1) - log_s
        q = p * r
        p = p * (s * (a + t + d1) / (t + 1.0))
        p = p * ((b + t + d1) / (t + 1.0 + e))
        return p, q, t + 1.0, y + q

    def cond(state):
        _, q, t, y = state
        return active & (t < _MAX_TERMS) & (jnp.abs(q) >= eps * jnp.abs(y))

    y = _while(cond, body, (p, y, jnp.ones_like(x), y))[3]
    # the finite sum of the |m| - 1 terms after the first
    count = jnp.where(nonnegative, rd, -rd).astype(np.int32)

    def finite_body(state):
        i, p, t, total = state
        p = p * (s * (a + t + d2) * (b + t + d2) / (1.0 - e + t))
        t = t + 1.0
        p = p / t
        return i + 1, p, t, total + p

    one = jnp.ones_like(x)
    start = (jnp.ones_like(count), one, jnp.zeros_like(x), one)
    y1 = _while(lambda st: active & (st[0] < count), finite_body, start)[3]
    gamma_c = gamma(c)
    y1 = y1 * (gamma(e) * gamma_c / (gamma(a + d1) * gamma(b + d1)))
    y_sum = y * (gamma_c / (gamma(a + d2) * gamma(b + d2)))
    y_sum = jnp.where((count & 1) != 0, -y_sum, y_sum)
    q = s**rd
    summed = jnp.where(rd > 0, y_sum * q + y1, y_sum + y1 * q)
    return jnp.where(rd == 0, y * gamma(c) / (gamma(a) * gamma(b)), summed)


def _hyp2f1_any(a: Any, b: Any, c: Any, x: Any, active: Any) -> Any:
    """The terminating series for a non-positive integer a or b; the digamma transformation for x > 0.9 with
    c - a - b within 50 eps of an integer; the Taylor series otherwise."""
    jnp = _jnp()
    eps = _eps(x) * 50
    d = c - a - b
    terminating = _is_nonpositive_integer(a, eps) | _is_nonpositive_integer(b, eps)
    transform = (x > 0.9) & ~terminating & (jnp.abs(d - jnp.round(d)) < eps)
    series = active & ~terminating & ~transform
    return jnp.where(terminating, _hyp2f1_terminating(a, b, c, x, active & terminating),
                     jnp.where(transform, _hyp2f1_near_one(a, b, c, x, active & transform),
                               _hyp2f1_series(a, b, c, x, series)))


def _hyp2f1_value(a: Any, b: Any, c: Any, x: Any) -> Any:
    """JAX's cases in its order: 1 at x = 0 or a or b = 0 (c != 0); inf at a pole of c, beyond x = 1, and at
    x = 1 for d = c - a - b <= 0; Euler's transformation (1 - x)^d 2F1(c - a, c - b; c; x) for d <= -1 (unless
    d is not an integer and x > 1); (1 - x)^-a or ^-b where b = c or a = c; Gauss's sum at x = 1; else the
    series."""
    jnp, special = _jnp(), _special()
    gamma = special.gamma
    eps = _eps(x) * 50
    d = c - a - b
    s = 1 - x
    ca, cb = c - a, c - b
    case = jnp.where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 0,
                     jnp.where((c == 0) | ((c < 0) & (c % 1 == 0)), 1,
                               jnp.where((d <= -1) & ~((jnp.abs(d - jnp.round(d)) >= eps) & (s < 0)), 2,
                                         jnp.where((d <= 0) & (x == 1), 1,
                                                   jnp.where((x < 1) & (b == c), 3,
                                                             jnp.where((x < 1) & (a == c), 4,
                                                                       jnp.where(x > 1, 1,
                                                                                 jnp.where(x == 1, 5, 6))))))))
    values = [jnp.ones_like(x), jnp.full_like(x, np.inf), s**d * _hyp2f1_any(ca, cb, c, x, case == 2),
              s ** (-a), s ** (-b), gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)), _hyp2f1_any(a, b, c, x, case == 6)]
    return _lax_select(case, values).astype(_core.aval(x).dtype)


def _lax_select(case: Any, values: list[Any]) -> Any:
    from srcjax.runtime import lax

    return lax.select_n(case, *values)


def _hyp2f1_parameter_derivative(a: Any, b: Any, c: Any, x: Any, weight: Any) -> Any:
    """sum_k (a)_k (b)_k / ((c)_k k!) x^k w(k): the series of a derivative in a parameter."""
    return _sum_terms(a * b / c * x, lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x, weight)


@_custom_jvp()
def _hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    return _hyp2f1_value(a, b, c, x)


@_hyp2f1.defjvp
def _hyp2f1_jvp(primals, tangents):
    """JAX's partials: series with weights psi(a + k) - psi(a), psi(b + k) - psi(b), psi(c) - psi(c + k), and
    d 2F1 / dx = ab/c 2F1(a + 1, b + 1; c + 1; x)."""
    digamma = _special().digamma
    (a, b, c, x), (a_dot, b_dot, c_dot, x_dot) = primals, tangents
    d_da = _hyp2f1_parameter_derivative(a, b, c, x, lambda k: digamma(a + k) - digamma(a))
    d_db = _hyp2f1_parameter_derivative(a, b, c, x, lambda k: digamma(b + k) - digamma(b))
    d_dc = _hyp2f1_parameter_derivative(a, b, c, x, lambda k: digamma(c) - digamma(c + k))
    d_dx = a * b / c * _hyp2f1_value(a + 1, b + 1, c + 1, x)
    return _hyp2f1_value(a, b, c, x), d_da * a_dot + d_db * b_dot + d_dc * c_dot + d_dx * x_dot


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """The Gauss hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k / (c)_k x^k / k! (real arguments;
    inf for x > 1, as in JAX). Large values lose digits in float32, as JAX's do."""
    a, b, c, x = _real_arguments("hyp2f1", a, b, c, x)
    return _hyp2f1(a, b, c, x)
