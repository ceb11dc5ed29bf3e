"""The strong-Wolfe line search of ``minimize`` (Nocedal & Wright, *Numerical Optimization*, 1999, Alg. 3.5 with
the zoom of Alg. 3.6), as JAX runs it: the trial step doubles until it brackets a step satisfying both Wolfe
conditions, and ``zoom`` narrows the bracket by cubic, then quadratic interpolation, then bisection. Branches are
``where`` selections over the whole state, so each loop body is straight-line code.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.autodiff import value_and_grad
from srcjax.runtime.numpy._core import promote_dtypes_inexact

__all__ = ["line_search", "LineSearchResults"]


def _dot(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _cubic_minimizer(a: Any, fa: Any, fpa: Any, b: Any, fb: Any, c: Any, fc: Any) -> Any:
    """The minimizer of the cubic through (a, fa) with slope fpa at a, and through (b, fb) and (c, fc)."""
    dtype = dtypes.result_type(a, fa, fpa, b, fb, c, fc)
    db, dc = b - a, c - a
    denominator = (db * dc) ** 2 * (db - dc)
    lhs = jnp.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dtype)
    rhs = jnp.array([fb - fa - fpa * db, fc - fa - fpa * dc], dtype=dtype)
    cubic, quadratic = _dot(lhs, rhs) / denominator
    return a + (-quadratic + jnp.sqrt(quadratic * quadratic - 3.0 * cubic * fpa)) / (3.0 * cubic)


def _quadratic_minimizer(a: Any, fa: Any, fpa: Any, b: Any, fb: Any) -> Any:
    """The minimizer of the parabola through (a, fa) with slope fpa at a, and through (b, fb)."""
    db = b - a
    curvature = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2.0 * curvature)


def _select(pred: Any, state: NamedTuple, **new: Any) -> NamedTuple:
    """``state`` with the fields ``new`` names replaced where ``pred`` holds."""
    return state._replace(**{key: jnp.where(pred, value, getattr(state, key)) for key, value in new.items()})


class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    a_lo: Any
    phi_lo: Any
    dphi_lo: Any
    a_hi: Any
    phi_hi: Any
    dphi_hi: Any
    a_rec: Any  # the previous a_hi or a_lo: the third point of the cubic
    phi_rec: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any
    nfev: Any
    ngev: Any


def _zoom(restricted: Callable, sufficient_decrease_fails: Callable, curvature_holds: Callable, a_lo: Any,
          phi_lo: Any, dphi_lo: Any, a_hi: Any, phi_hi: Any, dphi_hi: Any, g_0: Any, skip: Any) -> _ZoomState:
    """Narrow [a_lo, a_hi] to a step meeting both Wolfe conditions (nothing is done where ``skip``)."""
    state = _ZoomState(done=False, failed=False, j=0, a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi,
                       phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
                       a_star=1.0, phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0, nfev=0, ngev=0)
    cubic_margin, quadratic_margin = 0.2, 0.1  # (interpolants this close to an end of the bracket are refused)

    def body(state: _ZoomState) -> _ZoomState:
        width = state.a_hi - state.a_lo
        low, high = jnp.minimum(state.a_hi, state.a_lo), jnp.maximum(state.a_hi, state.a_lo)
        # a bracket too narrow to split stops the search; the Wolfe conditions do not hold, so minimize stops too
        threshold = jnp.where(jnp.finfo(width.dtype).bits < 64, 1e-5, 1e-10)
        state = state._replace(failed=state.failed | (width <= threshold))
        a_cubic = _cubic_minimizer(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi, state.a_rec,
                                   state.phi_rec)  # (NaN at times: then outside the bracket, so not used)
        use_cubic = (state.j > 0) & (a_cubic > low + cubic_margin * width) & (a_cubic < high - cubic_margin * width)
        a_quadratic = _quadratic_minimizer(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
        use_quadratic = ~use_cubic & (a_quadratic > low + quadratic_margin * width) & \
            (a_quadratic < high - quadratic_margin * width)
        a_j = jnp.where(use_cubic, a_cubic, state.a_rec)
        a_j = jnp.where(use_quadratic, a_quadratic, a_j)
        a_j = jnp.where(~use_cubic & ~use_quadratic, (state.a_lo + state.a_hi) / 2.0, a_j)

        phi_j, dphi_j, g_j = restricted(a_j)
        phi_j, dphi_j = phi_j.astype(state.phi_lo.dtype), dphi_j.astype(state.dphi_lo.dtype)
        g_j = g_j.astype(state.g_star.dtype)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

        hi_to_j = sufficient_decrease_fails(a_j, phi_j) | (phi_j >= state.phi_lo)
        star_to_j = curvature_holds(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j

        state = _select(hi_to_j, state, a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=state.a_hi,
                        phi_rec=state.phi_hi)
        state = _select(star_to_j, state, a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j)
        state = state._replace(done=star_to_j | state.done)
        state = _select(hi_to_lo, state, a_hi=state.a_lo, phi_hi=state.phi_lo, dphi_hi=state.dphi_lo,
                        a_rec=state.a_hi, phi_rec=state.phi_hi)
        state = _select(lo_to_j & ~hi_to_lo, state, a_rec=state.a_lo, phi_rec=state.phi_lo)
        state = _select(lo_to_j, state, a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j)
        state = state._replace(j=state.j + 1)
        return state._replace(failed=state.failed | (state.j >= 30))  # (a higher cap than SciPy's, as JAX's)

    return lax.while_loop(lambda state: ~state.done & ~skip & ~state.failed, body, state)


class _SearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    a_i1: Any  # the previous trial step, its value and slope
    phi_i1: Any
    dphi_i1: Any
    nfev: Any
    ngev: Any
    a_star: Any
    phi_star: Any
    dphi_star: Any
    g_star: Any


class LineSearchResults(NamedTuple):
    """``failed``: the strong Wolfe conditions were not met; ``a_k``: the step; ``f_k``, ``g_k``: the value and
    gradient there; ``status``: 0 passed, 1 zoom failed, 3 too many iterations."""

    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


def line_search(f: Callable, xk: Any, pk: Any, old_fval: Any = None, old_old_fval: Any = None, gfk: Any = None,
                c1: float = 1e-4, c2: float = 0.9, maxiter: int = 20) -> LineSearchResults:
    """A step along the descent direction ``pk`` from ``xk`` meeting the strong Wolfe conditions
    ``phi(a) <= phi(0) + c1 a phi'(0)`` and ``|phi'(a)| <= -c2 phi'(0)``, with ``phi(a) = f(xk + a pk)``."""
    xk, pk = promote_dtypes_inexact(xk, pk)

    def restricted(t: Any) -> tuple[Any, Any, Any]:
        phi, g = value_and_grad(f)(xk + jnp.array(t, dtype=pk.dtype) * pk)
        return phi, jnp.real(_dot(g, pk)), g

    evaluated = old_fval is None or gfk is None
    if evaluated:
        phi_0, dphi_0, gfk = restricted(0)
    else:
        phi_0, dphi_0 = old_fval, jnp.real(_dot(gfk, pk))
    if old_old_fval is not None:  # the step that would repeat the last decrease, at most 1
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start = jnp.where(candidate > 1, 1.0, candidate)
    else:
        start = 1

    def sufficient_decrease_fails(a: Any, phi: Any) -> Any:
        return phi > phi_0 + c1 * a * dphi_0

    def curvature_holds(dphi: Any) -> Any:
        return jnp.abs(dphi) <= -c2 * dphi_0

    # i starts at 1, as in Nocedal & Wright (SciPy's starts at 0: scipy/scipy#12157)
    state = _SearchState(done=jnp.array(False), failed=jnp.array(False), i=1, a_i1=0.0, phi_i1=phi_0,
                         dphi_i1=dphi_0, nfev=1 if evaluated else 0, ngev=1 if evaluated else 0, a_star=0.0,
                         phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)

    def body(state: _SearchState) -> _SearchState:
        a_i = jnp.where(state.i == 1, start, state.a_i1 * 2.0)  # (no upper bound on the step: it doubles)
        phi_i, dphi_i, g_i = restricted(a_i)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)

        zoom_up = sufficient_decrease_fails(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
        take_i = curvature_holds(dphi_i) & ~zoom_up
        zoom_down = (dphi_i >= 0.0) & ~zoom_up & ~take_i
        # both zooms run (the one not wanted skips its loop), as JAX's does, so the counts add both
        zoom1 = _zoom(restricted, sufficient_decrease_fails, curvature_holds, state.a_i1, state.phi_i1,
                      state.dphi_i1, a_i, phi_i, dphi_i, gfk, ~zoom_up)
        zoom2 = _zoom(restricted, sufficient_decrease_fails, curvature_holds, a_i, phi_i, dphi_i, state.a_i1,
                      state.phi_i1, state.dphi_i1, gfk, ~zoom_down)
        state = state._replace(nfev=state.nfev + zoom1.nfev + zoom2.nfev, ngev=state.ngev + zoom1.ngev + zoom2.ngev)
        for taken, found in ((zoom_up, zoom1), (zoom_down, zoom2)):
            state = _select(taken, state, a_star=found.a_star, phi_star=found.phi_star, dphi_star=found.dphi_star,
                            g_star=found.g_star)
            state = state._replace(done=taken | state.done, failed=(taken & found.failed) | state.failed)
        state = _select(take_i, state, a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)
        state = state._replace(done=take_i | state.done)
        return state._replace(i=state.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    state = lax.while_loop(lambda state: ~state.done & (state.i <= maxiter) & ~state.failed, body, state)
    status = jnp.where(state.failed, jnp.array(1), jnp.where(state.i > maxiter, jnp.array(3), jnp.array(0)))
    # below 64 bits, a step under 1e-8 would stall the minimizer on a zero direction: it is floored there
    alpha = jnp.asarray(state.a_star)
    alpha = jnp.where((jnp.finfo(alpha.dtype).bits != 64) & (jnp.abs(alpha) < 1e-8), jnp.sign(alpha) * 1e-8, alpha)
    return LineSearchResults(failed=state.failed | ~state.done, nit=state.i - 1, nfev=state.nfev, ngev=state.ngev,
                             k=state.i, a_k=alpha, f_k=state.phi_star, g_k=state.g_star, status=status)

