"""``srcjax.scipy.optimize``: ``minimize`` with JAX's BFGS and experimental L-BFGS, and its ``OptimizeResults``."""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import srcjax.runtime.numpy as jnp
from srcjax.runtime.autodiff import _run_user
from srcjax.runtime.scipy.optimize.bfgs import minimize_bfgs
from srcjax.runtime.scipy.optimize.lbfgs import minimize_lbfgs

__all__ = ["minimize", "OptimizeResults"]


class OptimizeResults(NamedTuple):
    """``x`` the solution, ``success``, ``status`` (0 converged, 1 out of BFGS iterations, 3 zoom failed, 4 saddle
    point, 5 out of line-search iterations, -1 undefined), ``fun`` and ``jac`` at ``x``, ``hess_inv`` (BFGS's
    estimate; None for L-BFGS), evaluation counts ``nfev`` and ``njev``, and ``nit`` iterations."""

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` (a real scalar of a 1-d ``x``) from ``x0`` by ``method``: ``"BFGS"`` or
    ``"l-bfgs-experimental-do-not-rely-on-this"`` (the gradient by reverse mode). ``options`` are the method's
    keywords (``maxiter``, ``gtol``, ``norm``, ...); ``tol`` is accepted and unused, as in JAX."""
    options = {} if options is None else options
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")

    def objective(x: Any) -> Any:
        return _run_user(fun, x, *args)

    if method.lower() == "bfgs":
        found = minimize_bfgs(objective, x0, **options)
        hess_inv = found.H_k
    elif method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        found = minimize_lbfgs(objective, x0, **options)
        hess_inv = None
    else:
        raise ValueError(f"Method {method} not recognized")
    return OptimizeResults(x=found.x_k, success=found.converged & jnp.logical_not(found.failed), status=found.status,
                           fun=found.f_k, jac=found.g_k, hess_inv=hess_inv, nfev=found.nfev, njev=found.ngev,
                           nit=found.k)
