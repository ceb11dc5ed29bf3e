"""``jax.experimental.ode.odeint``: adaptive Dormand-Prince (dopri5) integration, differentiated by the adjoint
method.

The state is raveled to one vector. Each step is a 7-stage Runge-Kutta step (Dormand & Prince 1980, 5th-order
solution, embedded 4th-order error estimate); a step is taken when the RMS of the error over the tolerance
``atol + rtol * max(|y0|, |y1|)`` is at most 1, and the next step is the old one times
``clip(0.9 * ratio^(-1/5), 0.2, 10)``. The first step is Hairer, Norsett & Wanner's (Sec. II.4). Outputs between
steps come from a quartic fitted to the step's ends, slopes and Shampine's midpoint. The reverse pass integrates
the augmented system ``(y, y_bar, t_bar, args_bar)`` backwards between output times (Chen et al. 2018, App. C).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax, tree_util
from srcjax.runtime.api import jit
from srcjax.runtime.vmap import vmap
from srcjax.runtime.autodiff import custom_vjp, vjp
from srcjax.runtime.closures import closure_convert
from srcjax.runtime.flatten_util import ravel_pytree
from srcjax.runtime.numpy._core import aval, is_arraylike, promote_dtypes_inexact

__all__ = ["odeint"]

# Dormand-Prince tableau: stage times, stage weights, the 5th-order weights, and 5th minus 4th order
_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0, 0.0]
_BETA = [[1 / 5, 0, 0, 0, 0, 0, 0],
         [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_C_SOLUTION = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERROR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
            -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1.0 / 60.0]
# the dense-output midpoint y(t + dt/2) as weights of the stages (Shampine 1986)
_C_MID = [6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2, -2691868925 / 45128329728 / 2,
          187940372067 / 1594534317056 / 2, -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2]


def _dot(a: Any, b: Any) -> Any:
    """Products at full precision (JAX's odeint runs under ``default_matmul_precision("highest")``)."""
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _interpolation_coefficients(y0: Any, y1: Any, k: Any, dt: Any) -> Any:
    """The quartic ``a s^4 + b s^3 + c s^2 + d s + e`` (rows, for ``polyval`` in ``s`` in [0, 1]) through
    ``y0``, ``y1`` and the midpoint, with slopes ``dt k[0]`` and ``dt k[-1]`` at the ends."""
    dt = dt.astype(y0.dtype)
    y_mid = y0 + dt * _dot(jnp.array(_C_MID, dtype=y0.dtype), k)
    dy0, dy1 = k[0], k[-1]
    a = -2.0 * dt * dy0 + 2.0 * dt * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid
    b = 5.0 * dt * dy0 - 3.0 * dt * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid
    c = -4.0 * dt * dy0 + dt * dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid
    return jnp.stack([a, b, c, dt * dy0, y0])


def _initial_step_size(fun: Callable, t0: Any, y0: Any, order: int, rtol: float, atol: float, f0: Any) -> Any:
    """Hairer, Norsett & Wanner's starting step: from the norms of y0, f0 and a difference quotient of f."""
    y0, f0 = promote_dtypes_inexact(y0, f0)
    dtype = y0.dtype
    scale = (atol + jnp.abs(y0) * rtol).astype(dtype)
    d0 = jnp.linalg.norm(y0 / scale)
    d1 = jnp.linalg.norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1.0 / (order + 1.0)))
    return jnp.minimum(100.0 * h0, h1)


def _runge_kutta_step(fun: Callable, y0: Any, f0: Any, t0: Any, dt: Any) -> tuple[Any, Any, Any, Any]:
    """One dopri5 step: ``(y1, f1, error estimate, stages k)``; ``k[0]`` is ``f0`` (first same as last)."""
    alpha = jnp.array(_ALPHA, dtype=dt.dtype)
    beta = jnp.array(_BETA, dtype=f0.dtype)
    step = dt.astype(f0.dtype)

    def stage(i: Any, k: Any) -> Any:
        yi = y0 + step * _dot(beta[i - 1, :], k)
        return k.at[i, :].set(fun(yi, t0 + dt * alpha[i - 1]))

    k = lax.fori_loop(1, 7, stage, jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0))
    y1 = step * _dot(jnp.array(_C_SOLUTION, dtype=f0.dtype), k) + y0
    y1_error = step * _dot(jnp.array(_C_ERROR, dtype=f0.dtype), k)
    return y1, k[-1], y1_error, k


def _error_ratio(error: Any, rtol: float, atol: float, y0: Any, y1: Any) -> Any:
    """RMS of the error estimate relative to the mixed tolerance."""
    tolerance = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    ratio = error / tolerance.astype(error.dtype)
    squared = ratio.real ** 2 + ratio.imag ** 2 if jnp.iscomplexobj(ratio) else ratio ** 2
    return jnp.sqrt(jnp.mean(squared))


def _next_step_size(last_step: Any, ratio: Any, safety: float = 0.9, ifactor: float = 10.0,
                    dfactor: float = 0.2, order: float = 5.0) -> Any:
    """The step scaled by ``safety * ratio^(-1/order)``, at most ``ifactor`` times larger; after an accepted step
    it does not shrink, after a rejected one by at most ``dfactor``."""
    dfactor = jnp.where(ratio < 1, 1.0, dfactor)
    factor = jnp.minimum(ifactor, jnp.maximum(ratio ** (-1.0 / order) * safety, dfactor))
    return jnp.where(ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8, atol: float = 1.4e-8,
           mxstep: float = np.inf, hmax: float = np.inf) -> Any:
    """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``; the solution at each time of ``t`` (strictly
    increasing floats), stacked on a new leading axis of every leaf of ``y0``'s pytree."""
    for arg in tree_util.tree_leaves(args):
        if not is_arraylike(arg):
            raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
    if not jnp.issubdtype(aval(t).dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    converted, consts = closure_convert(func, y0, t[0], *args)
    return _odeint_compiled(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


def _odeint_raveled(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any, ts: Any,
                    *args: Any) -> Any:
    y0_flat, unravel = ravel_pytree(y0)

    def flat_func(y: Any, t: Any, *args: Any) -> Any:
        return ravel_pytree(func(unravel(y), t, *args))[0]

    return vmap(unravel)(_odeint(flat_func, rtol, atol, mxstep, hmax, y0_flat, ts, *args))


def _odeint_primal(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any, ts: Any,
                   *args: Any) -> Any:

    def fun(y: Any, t: Any) -> Any:
        return func(y, t, *args)

    def advance(carry: list, target_t: Any) -> tuple[list, Any]:
        """Step until past ``target_t``, then interpolate the last step's quartic there."""

        def more(state: list) -> Any:
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def step(state: list) -> list:
            i, y, f, t, dt, last_t, coefficients = state
            next_y, next_f, error, k = _runge_kutta_step(fun, y, f, t, dt)
            ratio = _error_ratio(error, rtol, atol, y, next_y)
            new_coefficients = _interpolation_coefficients(y, next_y, k, dt)
            next_t = t + dt
            dt = jnp.clip(_next_step_size(dt, ratio), min=0.0, max=hmax)
            accepted = ratio <= 1.0  # (a rejected step keeps the state and retries with the smaller dt)
            new = [i + 1, next_y, next_f, next_t, dt, t, new_coefficients]
            old = [i + 1, y, f, t, dt, last_t, coefficients]
            return [jnp.where(accepted, a, b) for a, b in zip(new, old)]

        _, *carry = lax.while_loop(more, step, [0] + carry)
        _, _, t, _, last_t, coefficients = carry
        s = (target_t - last_t) / (t - last_t)
        return carry, jnp.polyval(coefficients, s.astype(coefficients.dtype))

    f0 = fun(y0, ts[0])
    dt = jnp.clip(_initial_step_size(fun, ts[0], y0, 4, rtol, atol, f0), min=0.0, max=hmax)
    init = [y0, f0, ts[0], dt, ts[0], jnp.stack([y0] * 5)]
    _, ys = lax.scan(advance, init, ts[1:])
    return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any, ts: Any,
                *args: Any) -> tuple[Any, Any]:
    ys = _odeint_primal(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_rev(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, residuals: Any,
                g: Any) -> tuple:
    """The adjoint pass: between consecutive output times, integrate ``(y, y_bar, t_bar, args_bar)`` backwards
    (in negated time, so that the solver's times increase), with ``d y_bar / dt = -y_bar^T df/dy`` and
    ``d args_bar / dt = -y_bar^T df/dargs``; each output's cotangent joins ``y_bar`` at its time."""
    ys, ts, args = residuals

    def augmented_dynamics(state: tuple, minus_t: Any, *args: Any) -> tuple:
        y, y_bar, *_ = state
        y_dot, pullback = vjp(func, y, -minus_t, *args)
        return (-y_dot, *pullback(y_bar))

    def back(carry: tuple, i: Any) -> tuple[tuple, Any]:
        y_bar, t0_bar, args_bar = carry
        t_bar = _dot(func(ys[i], ts[i], *args), g[i]).real  # (moving an output time moves its value by f)
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(augmented_dynamics, (ys[i], y_bar, t0_bar, args_bar),
                                            jnp.array([-ts[i], -ts[i - 1]]), *args, rtol=rtol, atol=atol,
                                            mxstep=mxstep, hmax=hmax)
        y_bar, t0_bar, args_bar = tree_util.tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    init = (g[-1], 0.0, tree_util.tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), ts_bar = lax.scan(back, init, jnp.arange(len(ts) - 1, 0, -1))
    return (y_bar, jnp.concatenate([jnp.array([t0_bar]), ts_bar[::-1]]), *args_bar)


# compiled once per call's function, as JAX jits its wrapper: the steps run as one native loop, not op by op
_odeint_compiled = jit(_odeint_raveled, static_argnums=(0, 1, 2, 3, 4))
_odeint = custom_vjp(_odeint_primal, nondiff_argnums=(0, 1, 2, 3, 4))
_odeint.defvjp(_odeint_fwd, _odeint_rev)
