"""BFGS (Nocedal & Wright, *Numerical Optimization*, 1999, Alg. 6.1) as JAX runs it: the search direction is
``-H g`` with ``H`` the inverse-Hessian estimate, the step comes from the strong-Wolfe line search, and ``H`` is
updated by ``(I - rho s y^T) H (I - rho y s^T) + rho s s^T`` (kept as it was where ``rho = 1 / y^T s`` is not
finite).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax
from srcjax.runtime.autodiff import value_and_grad
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.scipy.optimize.line_search import line_search

__all__ = ["minimize_bfgs", "BFGSResults"]


class BFGSResults(NamedTuple):
    """The loop's state: ``converged`` (the gradient's norm under ``gtol``), ``failed`` (the line search did),
    ``k`` iterations, evaluation counts, the point ``x_k`` with its value ``f_k`` and gradient ``g_k``, the
    inverse-Hessian estimate ``H_k``, and ``status`` (0 converged, 1 out of iterations, 2 + the line search's
    status when it failed, -1 otherwise)."""

    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    nhev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any  # noqa: N815 - JAX's field name
    old_old_fval: Any
    status: Any
    line_search_status: Any


def _dot(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def minimize_bfgs(fun: Callable, x0: Any, maxiter: int | None = None, norm: Any = np.inf, gtol: float = 1e-5,
                  line_search_maxiter: int = 10) -> BFGSResults:
    """Minimize ``fun`` (of a flat array, to a real scalar) from ``x0`` by BFGS."""
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    f_0, g_0 = value_and_grad(fun)(x0)
    state = BFGSResults(converged=jnp_linalg.norm(g_0, ord=norm) < gtol, failed=False, k=0, nfev=1, ngev=1, nhev=0,
                        x_k=x0, f_k=f_0, g_k=g_0, H_k=jnp.eye(d, dtype=x0.dtype),
                        old_old_fval=f_0 + jnp_linalg.norm(g_0) / 2, status=0, line_search_status=0)

    def body(state: BFGSResults) -> BFGSResults:
        p_k = -_dot(state.H_k, state.g_k)
        found = line_search(fun, state.x_k, p_k, old_fval=state.f_k, old_old_fval=state.old_old_fval,
                            gfk=state.g_k, maxiter=line_search_maxiter)
        s_k = found.a_k * p_k
        y_k = found.g_k - state.g_k
        rho_k = jnp.reciprocal(_dot(y_k, s_k))
        w = jnp.eye(d, dtype=rho_k.dtype) - rho_k * s_k[:, None] * y_k[None, :]
        h_next = jnp.einsum("ij,jk,lk", w, state.H_k, w, precision=lax.Precision.HIGHEST) + \
            rho_k * s_k[:, None] * s_k[None, :]
        return state._replace(
            nfev=state.nfev + found.nfev, ngev=state.ngev + found.ngev, failed=found.failed,
            line_search_status=found.status, converged=jnp_linalg.norm(found.g_k, ord=norm) < gtol, k=state.k + 1,
            x_k=state.x_k + s_k, f_k=found.f_k, g_k=found.g_k, H_k=jnp.where(jnp.isfinite(rho_k), h_next, state.H_k),
            old_old_fval=state.f_k)

    state = lax.while_loop(lambda state: ~jnp.asarray(state.converged) & ~jnp.asarray(state.failed)
                           & (state.k < maxiter), body, state)
    status = jnp.where(state.converged, 0,
                       jnp.where(state.k == maxiter, 1, jnp.where(state.failed, 2 + state.line_search_status, -1)))
    return state._replace(status=status)
