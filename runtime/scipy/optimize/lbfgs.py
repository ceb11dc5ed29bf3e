"""L-BFGS (Nocedal & Wright, *Numerical Optimization*, 1999, Alg. 7.5; complex variables as Sorber, Van Barel &
De Lathauwer 2012) as JAX's experimental method runs it: the last ``maxcor`` steps ``s`` and gradient changes
``y`` stand in for the inverse Hessian through the two-loop recursion, scaled by ``gamma = s^T y / y^T y``.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax
from srcjax.runtime.autodiff import value_and_grad
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.scipy.optimize.line_search import line_search

__all__ = ["minimize_lbfgs", "LBFGSResults"]


class LBFGSResults(NamedTuple):
    """The loop's state; ``status``: 0 nominal, 1 out of iterations, 2 out of function evaluations, 3 out of
    gradient evaluations, 4 too little progress (``ftol``), 5 the line search failed."""

    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    s_history: Any
    y_history: Any
    rho_history: Any
    gamma: Any
    status: Any
    ls_status: Any


def _dot(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def minimize_lbfgs(fun: Callable, x0: Any, maxiter: float | None = None, norm: Any = np.inf, maxcor: int = 10,
                   ftol: float = 2.220446049250313e-09, gtol: float = 1e-05, maxfun: float | None = None,
                   maxgrad: float | None = None, maxls: int = 20) -> LBFGSResults:
    """Minimize ``fun`` (of a flat array, to a real scalar) from ``x0`` by L-BFGS."""
    d = len(x0)
    dtype = jnp.result_type(x0)
    if maxiter is None and maxfun is None and maxgrad is None:  # (some limit must stop it)
        maxiter = d * 200
    maxiter, maxfun, maxgrad = (np.inf if limit is None else limit for limit in (maxiter, maxfun, maxgrad))
    f_0, g_0 = value_and_grad(fun)(x0)
    state = LBFGSResults(converged=jnp.array(False), failed=jnp.array(False), k=0, nfev=1, ngev=1, x_k=x0, f_k=f_0,
                         g_k=g_0, s_history=jnp.zeros((maxcor, d), dtype=dtype),
                         y_history=jnp.zeros((maxcor, d), dtype=dtype), rho_history=jnp.zeros((maxcor,), dtype=dtype),
                         gamma=1.0, status=0, ls_status=0)

    def body(state: LBFGSResults) -> LBFGSResults:
        p_k = _two_loop_recursion(state)
        found = line_search(fun, state.x_k, p_k, old_fval=state.f_k, gfk=state.g_k, maxiter=maxls)
        s_k = jnp.asarray(found.a_k).astype(p_k.dtype) * p_k
        y_k = found.g_k - state.g_k
        rho_k_inv = jnp.real(_dot(y_k, s_k))
        gamma = rho_k_inv / jnp.real(_dot(jnp.conj(y_k), y_k))
        status = jnp.array(0)  # (the last reason that holds wins, as in JAX)
        status = jnp.where(state.f_k - found.f_k < ftol, 4, status)
        status = jnp.where(state.ngev >= maxgrad, 3, status)
        status = jnp.where(state.nfev >= maxfun, 2, status)
        status = jnp.where(state.k >= maxiter, 1, status)
        status = jnp.where(found.failed, 5, status)
        converged = jnp_linalg.norm(found.g_k, ord=norm) < gtol
        return state._replace(
            converged=converged, failed=(status > 0) & ~converged, k=state.k + 1, nfev=state.nfev + found.nfev,
            ngev=state.ngev + found.ngev, x_k=(state.x_k + s_k).astype(state.x_k.dtype),
            f_k=found.f_k.astype(state.f_k.dtype), g_k=found.g_k.astype(state.g_k.dtype),
            s_history=_push(state.s_history, s_k), y_history=_push(state.y_history, y_k),
            rho_history=_push(state.rho_history, jnp.reciprocal(rho_k_inv).astype(y_k.dtype)),
            gamma=gamma.astype(state.g_k.dtype), status=jnp.where(converged, 0, status), ls_status=found.status)

    return lax.while_loop(lambda state: ~state.converged & ~state.failed, body, state)


def _push(history: Any, new: Any) -> Any:
    """The history with its oldest row dropped and ``new`` last."""
    return jnp.roll(history, -1, axis=0).at[-1].set(new)


def _two_loop_recursion(state: LBFGSResults) -> Any:
    """``-H g`` for the L-BFGS inverse Hessian of the last ``min(k, maxcor)`` pairs (the newest last)."""
    dtype = state.rho_history.dtype
    size = len(state.rho_history)
    used = jnp.where(state.k < size, state.k, size)

    def newest_first(j: Any, carry: tuple) -> tuple:
        q, alphas = carry
        i = size - 1 - j
        alpha = state.rho_history[i] * _dot(jnp.conj(state.s_history[i]), q).real.astype(dtype)
        return q - alpha * jnp.conj(state.y_history[i]), alphas.at[i].set(alpha)

    q, alphas = lax.fori_loop(0, used, newest_first, (-jnp.conj(state.g_k), jnp.zeros_like(state.rho_history)))

    def oldest_first(j: Any, q: Any) -> Any:
        i = size - used + j
        beta = state.rho_history[i] * _dot(state.y_history[i], q).real.astype(dtype)
        return q + (alphas[i] - beta) * state.s_history[i]

    return lax.fori_loop(0, used, oldest_first, state.gamma * q)
