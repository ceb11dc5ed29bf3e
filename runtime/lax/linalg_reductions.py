"""``lax.linalg.hessenberg`` and ``tridiagonal``: reduction by Householder reflectors, as LAPACK's unblocked
gehd2 and sytd2/hetd2 compute it, results packed as LAPACK packs them; and ``schur``, which hands the matrix to
``scipy.linalg.schur``'s host computation (LAPACK's gees in NumPy: ``runtime/scipy/schur_host.py``).

Step i takes a reflector H = I - tau v v^H (LAPACK's larfg: beta = -sign(Re alpha) |(alpha, x)|, v = [1;
x / (alpha - beta)], tau = (beta - alpha) / beta) that zeroes a column below the subdiagonal, and applies it on
both sides. Each step is one iteration of a ``lax.fori_loop`` over whole matrices (the reflector is zero outside
its rows), so a stack of matrices reduces at once, under jit and vmap too. The results agree with LAPACK's up to
rounding (LAPACK's blocked variants, for n >= 128 or so, round differently again); not followed: larfg's
rescaling of a column whose norm is below the underflow threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime import lax
from srcjax.runtime.lax import linalg_eager
from srcjax.runtime.lax.linalg_checks import linalg_operands, weak_as_operands

__all__ = ["hessenberg", "schur", "tridiagonal"]


def _reflector(alpha: Any, x: Any) -> tuple[Any, Any, Any]:
    """larfg: (beta, tau, x / (alpha - beta)) with H^H [alpha; x] = [beta; 0], beta real; tau = 0 (H = I) when
    x = 0 and alpha is real. Batched: alpha [...], x [..., n] (zero outside the reflector's rows)."""
    import srcjax.runtime.numpy as jnp

    norm = jnp.sqrt(jnp.sum(jnp.real(x * jnp.conj(x)), axis=-1))
    identity = (norm == 0) & (jnp.imag(alpha) == 0)
    beta = -jnp.copysign(jnp.hypot(jnp.abs(alpha), norm), jnp.real(alpha))
    safe_beta = jnp.where(identity, 1, beta)
    if jnp.iscomplexobj(alpha):
        tau = lax.complex((safe_beta - jnp.real(alpha)) / safe_beta, -jnp.imag(alpha) / safe_beta)
    else:
        tau = (safe_beta - alpha) / safe_beta
    scale = 1 / jnp.where(identity, 1, alpha - beta.astype(alpha.dtype))
    return (jnp.where(identity, alpha, beta.astype(alpha.dtype)), jnp.where(identity, 0, tau).astype(alpha.dtype),
            jnp.where(identity[..., None], x, x * scale[..., None]))


def hessenberg(a: Any) -> tuple[Any, Any]:
    """(a', taus) with a = Q H Q^H: H upper Hessenberg in a' on and above the first subdiagonal, the reflectors of
    Q = H_1 ... H_{n-1} below it, their factors in taus ``[..., n-1]``."""
    import srcjax.runtime.numpy as jnp

    def shape_rule(shape: tuple) -> None:
        if shape[-2] != shape[-1]:
            raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got shape {shape}")

    (a,) = linalg_operands("hessenberg", (a,), (2,), "fc", shape_rule)
    n = jnp.shape(a)[-1]
    if n <= 1:
        return weak_as_operands((a,), (a, jnp.zeros((*jnp.shape(a)[:-2], max(n - 1, 0)), a.dtype)))
    return weak_as_operands((a,), linalg_eager.run(_hessenberg, n - 1, a))


def _hessenberg(a: Any) -> tuple[Any, Any]:
    import srcjax.runtime.numpy as jnp

    n = jnp.shape(a)[-1]
    index = np.arange(n)  # (of a vector's entries; index[None, :] numbers a matrix's columns)

    def step(i: Any, state: tuple[Any, Any]) -> tuple[Any, Any]:
        a, taus = state
        column = lax.dynamic_index_in_dim(a, i, axis=-1, keepdims=False)
        alpha = lax.dynamic_index_in_dim(column, i + 1, axis=-1, keepdims=False)
        beta, tau, tail = _reflector(alpha, jnp.where(index > i + 1, column, 0))
        v = jnp.where(index == i + 1, 1, tail).astype(a.dtype)
        t = tau[..., None, None]
        reflects = t != 0  # (H = I is not applied, as larf skips it: NaN elsewhere in a stays where it is)
        a = jnp.where(reflects, a - t * (jnp.matmul(a, v[..., :, None], precision="highest")
                                         * jnp.conj(v)[..., None, :]), a)  # a H
        left = jnp.conj(t) * (v[..., :, None] * jnp.matmul(jnp.conj(v)[..., None, :], a, precision="highest"))
        a = jnp.where(reflects & (index[None, :] > i), a - left, a)  # H^H a, on the columns right of i
        column = jnp.where(index == i + 1, beta[..., None], jnp.where(index > i + 1, tail, column))
        a = jnp.where(index[None, :] == i, column[..., :, None], a)
        return a, jnp.where(np.arange(n - 1) == i, tau[..., None], taus)

    taus = jnp.zeros((*jnp.shape(a)[:-2], n - 1), a.dtype)
    return lax.fori_loop(0, n - 1, step, (a, taus))


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """(a', d, e, taus) with the Hermitian matrix that a's ``lower`` (or upper) triangle holds = Q T Q^H, T real
    tridiagonal with diagonal d and off-diagonal e. a' holds d and e in place of that triangle's diagonal and first
    off-diagonal, the reflectors of Q beyond them, and a's other triangle unchanged; taus ``[..., n-1]``."""
    import srcjax.runtime.numpy as jnp

    def shape_rule(shape: tuple) -> None:
        if shape[-2] != shape[-1] or shape[-1] == 0:
            raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape {shape[-2:]}.")

    (a,) = linalg_operands("tridiagonal", (a,), (2,), "fc", shape_rule)
    n = jnp.shape(a)[-1]
    if not lower:  # sytd2's upper case is its lower case on a with rows and columns in reverse order
        packed, d, e, taus = tridiagonal(jnp.flip(a, (-2, -1)), lower=True)
        return jnp.flip(packed, (-2, -1)), jnp.flip(d, -1), jnp.flip(e, -1), jnp.flip(taus, -1)
    return weak_as_operands((a,), linalg_eager.run(_tridiagonal, n - 1, a))


def _tridiagonal(a: Any) -> tuple[Any, Any, Any, Any]:
    import srcjax.runtime.numpy as jnp

    n = jnp.shape(a)[-1]
    rows = np.arange(n)
    below = rows[:, None] > rows[None, :]
    # the Hermitian matrix the lower triangle stands for (its diagonal real, as hetd2 reads it)
    w = jnp.where(below, a, 0) + jnp.where(below, a, 0).swapaxes(-1, -2).conj() + jnp.real(
        jnp.diagonal(a, axis1=-2, axis2=-1))[..., None] * np.eye(n, dtype=a.dtype)

    def step(i: Any, state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        w, packed, taus = state
        column = lax.dynamic_index_in_dim(w, i, axis=-1, keepdims=False)
        alpha = lax.dynamic_index_in_dim(column, i + 1, axis=-1, keepdims=False)
        beta, tau, tail = _reflector(alpha, jnp.where(rows > i + 1, column, 0))
        v = jnp.where(rows == i + 1, 1, jnp.where(rows > i + 1, tail, 0)).astype(a.dtype)
        trailing = (rows[:, None] > i) & (rows[None, :] > i)
        x = tau[..., None] * jnp.matmul(jnp.where(trailing, w, 0), v[..., :, None], precision="highest")[..., 0]
        x = x + (-0.5 * tau * jnp.sum(jnp.conj(x) * v, axis=-1))[..., None] * v  # hetd2's w
        update = v[..., :, None] * jnp.conj(x)[..., None, :] + x[..., :, None] * jnp.conj(v)[..., None, :]
        w = jnp.where(trailing & (tau != 0)[..., None, None], w - update, w)  # (hetd2 skips H = I)
        reflector = jnp.where(rows == i + 1, beta[..., None], tail)[..., :, None]  # column i of the result
        packed = jnp.where((rows[None, :] == i) & (rows[:, None] > i), reflector, packed)
        return w, packed, jnp.where(np.arange(n - 1) == i, tau[..., None], taus)

    taus = jnp.zeros((*jnp.shape(a)[:-2], n - 1), a.dtype)
    w, packed, taus = lax.fori_loop(0, n - 1, step, (w, a, taus))
    d = jnp.real(jnp.diagonal(w, axis1=-2, axis2=-1))
    e = jnp.real(jnp.diagonal(packed, offset=-1, axis1=-2, axis2=-1))
    packed = jnp.where(rows[:, None] == rows[None, :], d.astype(a.dtype)[..., None], packed)
    return packed, d, e, taus


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Any = None) -> Any:
    """(T, Q) with x = Q T Q^H, Q unitary and T (quasi-)upper triangular, as LAPACK's gees gives them; [T]
    alone (a list, as JAX's primitive returns it) without ``compute_schur_vectors``. ``select_callable`` is
    unused, as in JAX, and sorting refused as JAX's CPU backend refuses it."""
    from srcjax.runtime.scipy.linalg_schur import _host_decomposition  # (scipy's module imports lax's)

    def shape_rule(shape: tuple) -> None:
        if shape[-2] != shape[-1]:
            raise ValueError(f"The input to schur must be a square matrix. Got shape {shape[-2:]}.")

    (x,) = linalg_operands("schur", (x,), (2,), "fc", shape_rule)
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
    t, q = weak_as_operands((x,), _host_decomposition("schur")(x))
    return (t, q) if compute_schur_vectors else [t]
