"""``lax.linalg.qdwh``: the polar decomposition x = u h by the QR-based dynamically weighted Halley iteration
(Nakatsukasa, Bai and Gygi 2010), step for step as JAX computes it.

Each step maps u to e u + (a - e) u (I + c u^H u)^-1 with weights (a, b, c), e = b / c, chosen from a lower
bound l on u's smallest singular value; l starts at eps and the weights for every step until l is within
tolerance of 1 are worked out in Python floats, ahead of the loop. A step with c > 100 (badly conditioned)
takes the inverse from a QR factorization of [sqrt(c) u; I]; the others from a Cholesky factorization of
I + c u^H u. Then Halley steps with (a, b, c) = (3, 1, 3) follow until an update changes u by less than
cbrt(5 eps) (Frobenius norm), at most ``max_iterations`` steps in all; one Newton-Schulz step finishes u.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime import lax
from srcjax.runtime.lax import linalg as lax_linalg

__all__ = ["qdwh"]

_CHOLESKY_CUTOFF = 100  # a step with c above this inverts by QR (JAX's CHOLESKY_CUTOFF)


def _masked(x: Any, dims: tuple[Any, ...], alternative: Any = 0) -> Any:
    """x with the entries outside the leading ``dims`` (per axis; None: all of it) replaced by ``alternative``."""
    import srcjax.runtime.numpy as jnp

    mask = None
    for axis, size in enumerate(dims):
        if size is not None:
            inside = lax.broadcasted_iota(np.int32, jnp.shape(x), axis) < size
            mask = inside if mask is None else mask & inside
    return x if mask is None else jnp.where(mask, x, alternative)


def _qr_step(u: Any, m: Any, n: Any, weights: Any) -> Any:
    """e u + (a - e)/sqrt(c) q1 q2^H, with [sqrt(c) u; I] = [q1; q2] r (the true m rows of u, then I)."""
    import srcjax.runtime.numpy as jnp

    a_minus_e_by_sqrt_c, sqrt_c, e = weights[0], weights[1], weights[2]
    rows, columns = jnp.shape(u)
    identity = jnp.eye(columns, dtype=u.dtype)
    padded = jnp.pad(sqrt_c * u, ((0, columns), (0, 0)))
    y = lax.dynamic_update_slice_in_dim(padded, identity, m, axis=0)
    q, _ = lax_linalg.qr(y, full_matrices=False)
    q1 = _masked(q[:rows], (m, n))
    q2 = _masked(lax.dynamic_slice_in_dim(q, m, columns, axis=0), (n, n))
    return e * u + a_minus_e_by_sqrt_c * jnp.matmul(q1, jnp.conj(q2).T, precision="highest")


def _cholesky_step(u: Any, m: Any, n: Any, weights: Any) -> Any:
    """e u + (a - e) u (I + c u^H u)^-1, the inverse applied by two triangular solves with its Cholesky factor."""
    import srcjax.runtime.numpy as jnp

    a_minus_e, c, e = weights[0], weights[1], weights[2]
    columns = jnp.shape(u)[1]
    identity = jnp.eye(columns, dtype=u.dtype)
    x = c * jnp.matmul(jnp.conj(u).T, u, precision="highest") + identity
    y = lax_linalg.cholesky(_masked(x, (n, n), identity), symmetrize_input=False)
    z = jnp.conj(lax_linalg.triangular_solve(y, u.T, left_side=True, lower=True, conjugate_a=True))
    z = jnp.conj(lax_linalg.triangular_solve(y, z, left_side=True, lower=True, transpose_a=True,
                                             conjugate_a=True).T)
    return e * u + a_minus_e * z


def _weights(eps: float, max_iterations: int) -> tuple[list[tuple], list[tuple]]:
    """The (QR steps', Cholesky steps') weights, in order: QDWH's optimal (a, b, c) from the bound l, updated as
    l <- l (a + b l^2) / (1 + c l^2), while l + 5 eps < 1."""
    qr_weights, cholesky_weights = [], []
    bound, tolerance = eps, 10.0 * eps / 2.0
    while bound + tolerance < 1 and len(qr_weights) + len(cholesky_weights) < max_iterations:
        l2 = bound * bound
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        bound = bound * (a + b * l2) / (1 + c * l2)
        e = b / c
        if c > _CHOLESKY_CUTOFF:
            qr_weights.append(((a - e) / c ** (1 / 2), c ** (1 / 2), e))
        else:
            cholesky_weights.append((a - e, c, e))
    return qr_weights, cholesky_weights


def qdwh(x: Any, *, is_hermitian: bool = False, max_iterations: int | None = None, eps: float | None = None,
         dynamic_shape: tuple[int, int] | None = None) -> tuple[Any, Any, Any, Any]:
    """(u, h, num_iters, is_converged) with x = u h for x [M, N], M >= N: u with orthonormal columns, h Hermitian
    positive semi-definite. ``dynamic_shape`` (m, n): x's true shape, x being padded to [M, N] beyond it.
    ``is_hermitian`` is unused, as in JAX."""
    import srcjax.runtime.numpy as jnp
    from srcjax.runtime.numpy import linalg as jnp_linalg

    is_hermitian = bool(is_hermitian)
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    x = jnp.asarray(x)
    rows, columns = jnp.shape(x)
    if rows < columns:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    m, n = rows, columns
    if dynamic_shape is not None:
        m, n = dynamic_shape
        x = _masked(x, (m, n))
    if eps is None:
        eps = float(jnp.finfo(x.dtype).eps)
    one_norm, inf_norm = jnp_linalg.norm(x, ord=1), jnp_linalg.norm(x, ord=np.inf)
    scale = jnp.where(one_norm == 0, 1, lax.rsqrt(one_norm) * lax.rsqrt(inf_norm))
    u = x * scale.astype(x.dtype)
    tolerance = jnp.cbrt(10.0 * eps / 2.0)
    qr_weights, cholesky_weights = _weights(eps, max_iterations)

    def steps(u: Any, weights: list[tuple], step: Any, converging: bool) -> tuple[Any, Any]:
        """The steps with these weights (a fori_loop over their table); whether the last moved u by more than
        the tolerance (tested only when ``converging``)."""
        if not weights:
            return u, True
        table = jnp.array(weights).astype(x.dtype)

        def body(k: Any, state: tuple[Any, Any]) -> tuple[Any, Any]:
            previous, _ = state
            u = step(previous, m, n, lax.dynamic_index_in_dim(table, k, keepdims=False))
            return u, (jnp_linalg.norm(u - previous) > tolerance) if converging else True

        return lax.fori_loop(0, len(weights), body, (u, True))

    u, _ = steps(u, qr_weights, _qr_step, False)
    u, moving = steps(u, cholesky_weights, _cholesky_step, True)
    halley = jnp.array((3 - 1 / 3, 3, 1 / 3)).astype(x.dtype)  # (a - e, c, e) for (a, b, c) = (3, 1, 3)

    def unconverged(state: tuple[Any, Any, Any]) -> Any:
        k, _, moving = state
        return jnp.logical_and(moving, k < max_iterations)

    def halley_step(state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        k, previous, _ = state
        u = _cholesky_step(previous, m, n, halley)
        return k + 1, u, jnp_linalg.norm(u - previous) > tolerance

    num_iters, u, moving = lax.while_loop(unconverged, halley_step,
                                          (len(qr_weights) + len(cholesky_weights), u, moving))
    u = 1.5 * u - 0.5 * jnp.matmul(u, jnp.matmul(jnp.conj(u).T, u, precision="highest"), precision="highest")
    h = jnp.matmul(jnp.conj(u).T, x, precision="highest")
    h = (h + jnp.conj(h).T) / 2
    return u, h, num_iters, jnp.logical_not(moving)
