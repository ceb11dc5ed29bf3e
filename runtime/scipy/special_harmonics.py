"""Bessel functions of the first kind of integer order (``bessel_jn``) and spherical harmonics (``sph_harm_y``)
of ``srcjax.scipy.special``, by JAX's recurrences: Miller's backward recurrence normalised by the Neumann sum
(Zhang and Jin's BJNDD), and the normalised associated Legendre functions by their three recurrences.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy._lazy import _jnp, _lax

__all__ = ["bessel_jn", "sph_harm_y"]


def _static_int(convert: Any, value: Any, what: str) -> int:
    try:
        return convert(value)
    except Exception as error:  # (a traced value: JAX's ConcretizationTypeError names the argument too)
        raise TypeError(f"{what} must be a static integer, got {value!r}") from error


# -- Bessel functions of the first kind ----------------------------------------------------------------------------
def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """J_0(z) ... J_v(z), stacked on a new leading axis (shape ``(v + 1, *z.shape)``), for real z.

    Miller's algorithm: f_k = 2 (k + 1) f_(k+1) / z - f_(k+2) from k = ``n_iter`` down to 0, started at
    f = (0, 1e-16), is proportional to J_k(z); the constant is the Neumann sum J_0 + 2 J_2 + 2 J_4 + ... = 1.
    ``n_iter`` must grow with |z| (JAX's rule of thumb: the smallest n with
    0.5 log10(6.28 + n) - n log10(1.36 + |z| / n) > 20).
    """
    jnp = _jnp()
    _core.check_arraylike("bessel_jn", z)
    (z,) = _core.promote_args_inexact("bessel_jn", jnp.asarray(z))
    dtype = _core.aval(z).dtype
    if np.issubdtype(dtype, np.complexfloating):
        raise ValueError("complex input not supported.")
    v = _static_int(operator.index, v, "Argument v of bessel_jn")
    n_iter = _static_int(int, n_iter, "Argument n_iter of bessel_jn")

    def step(carry, k):
        f0, f1, neumann = carry
        f = 2.0 * (k + 1.0) * f1 / z - f0
        neumann = jnp.where(k % 2 == 0, neumann + 2.0 * f, neumann)
        return (f1, f, neumann), f

    start = (jnp.zeros_like(z), jnp.full_like(z, 1e-16), jnp.zeros_like(z))
    (_, _, neumann), values = _lax().scan(step, start, jnp.arange(n_iter + 1, dtype=dtype), reverse=True)
    # (the Neumann sum counted f_0 twice: 2 f_0 where J_0 enters once)
    return values[: v + 1] / (neumann - values[0])


# -- spherical harmonics -------------------------------------------------------------------------------------------
def _recurrence_masks(l_max: int, dtype: Any) -> tuple[Any, Any]:
    """The coefficients of P_l^m = d0 x P_(l-1)^m - d1 P_(l-2)^m for the normalised functions, as (step, m, l)
    arrays holding at step i only the entries with l - m = i (the entries the step fills)."""
    m, l = np.meshgrid(np.arange(l_max + 1, dtype=dtype), np.arange(l_max + 1, dtype=dtype), indexing="ij")
    with np.errstate(divide="ignore", invalid="ignore"):
        d0 = np.sqrt((4 * l * l - 1) / (l * l - m * m))
        d1 = np.sqrt(((2 * l + 1) * ((l - 1) * (l - 1) - m * m)) / ((2 * l - 3) * (l * l - m * m)))
    offset = (l - m).astype(int)
    step = np.arange(l_max + 1)[:, None, None]
    mask = (offset[None] == step) & (offset[None] >= 1)
    return np.where(mask, d0[None], 0).astype(dtype), np.where(mask & (offset[None] >= 2), d1[None], 0).astype(dtype)


def _normalized_legendre(l_max: int, x: Any) -> Any:
    """The normalised associated Legendre functions P_l^m(x) of 0 <= m, l <= l_max, as an (m, l, point) array
    (zero for m > l): the diagonal from P_0^0 = 1 / (2 sqrt pi) by P_l^l = -sqrt(1 + 1/(2l)) sqrt(1 - x^2)
    P_(l-1)^(l-1), the first off-diagonal by P_(l+1)^l = sqrt(2l + 3) x P_l^l, the rest by the three-term
    recurrence in l."""
    jnp, lax = _jnp(), _lax()
    dtype = np.dtype(_core.aval(x).dtype)
    points = _core.aval(x).shape[0]
    p = jnp.zeros((l_max + 1, l_max + 1, points), dtype=dtype)
    first = 0.5 / math.sqrt(math.pi)
    p = p.at[0, 0].set(first)
    if l_max >= 1:
        steps = np.arange(1, l_max + 1, dtype=dtype)
        diagonal_factor = jnp.cumprod(-1 * jnp.sqrt(1.0 + 0.5 / jnp.asarray(steps)))
        sine_powers = jnp.cumprod(jnp.broadcast_to(jnp.sqrt(1.0 - x * x), (l_max, points)), axis=0)
        diagonal = first * (diagonal_factor[:, None] * sine_powers)
        index = np.arange(1, l_max + 1)
        p = p.at[index, index].set(diagonal)
        below = np.arange(l_max)
        off_factor = jnp.sqrt(2.0 * jnp.asarray(np.arange(l_max, dtype=dtype)) + 3.0)
        p = p.at[below, below + 1].set((off_factor[:, None] * x[None, :]) * p[below, below])
    if l_max > 1:
        d0, d1 = _recurrence_masks(l_max, dtype)
        d0, d1 = jnp.asarray(d0), jnp.asarray(d1)

        def body(i, p):
            shifted1, shifted2 = jnp.roll(p, 1, axis=1), jnp.roll(p, 2, axis=1)
            return p + (d0[i][:, :, None] * (shifted1 * x) - d1[i][:, :, None] * shifted2)

        p = lax.fori_loop(2, l_max + 1, body, p)
    return p


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None, n_max: int | None = None) -> Any:
    """The spherical harmonics Y_n^m(theta, phi) = N_n^m P_n^m(cos theta) e^(i m phi), theta the colatitude in
    [0, pi], phi the longitude in [0, 2 pi], N_n^m normalising them on the sphere; 1-D ``n``, ``m`` (|m| <= n)
    and angles (a scalar theta is taken as one point). ``n_max``, max(n) by default, must be static; larger
    degrees are clipped to it, as in JAX."""
    jnp, lax = _jnp(), _lax()
    if diff_n is not None:
        raise NotImplementedError("The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    if jnp.ndim(theta) == 0:
        theta = jnp.array([theta])
    if n_max is None:
        n_max = _static_int(lambda v: int(np.max(np.asarray(v))), n, "The `n_max` argument of sph_harm_y "
                            "(n, when n_max is not given)")
    n_max = _static_int(int, n_max, "The `n_max` argument of sph_harm_y")
    n, m, phi = jnp.asarray(n), jnp.asarray(m), jnp.asarray(phi)
    theta = jnp.asarray(theta)
    (cos_theta,) = _core.promote_args_inexact("sph_harm_y", jnp.cos(theta))
    legendre = _normalized_legendre(n_max, cos_theta)
    points = jnp.arange(_core.aval(n).shape[0])
    value = legendre.at[jnp.abs(m), n, points].get(mode="clip")
    angle = jnp.abs(m) * phi
    harmonics = lax.complex(value * jnp.cos(angle), value * jnp.sin(angle))
    return jnp.where(m < 0, (-1.0) ** jnp.abs(m) * jnp.conjugate(harmonics), harmonics)
