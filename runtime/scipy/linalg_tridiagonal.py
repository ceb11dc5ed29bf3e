"""``jax.scipy.linalg.eigh_tridiagonal``: the eigenvalues of a symmetric (Hermitian) tridiagonal matrix by
bisection on Sturm sequence counts, all in parallel, as JAX computes them (the same starting interval, pivot
guard and stopping rule, so the same numbers); the eigenvectors by inverse iteration from random vectors, as JAX,
re-orthogonalising those of eigenvalues closer than sqrt(eps) ||T||.

An eigenvector is the limit of a few steps from a random start through nearly singular solves: its sign (or
phase) is what the start and the rounding in those solves make it. With JAX's random stream
(``jax_threefry_partitionable`` on, JAX 0.10's default; srcjax's is off) real eigenvectors come out as JAX's;
the phases of complex ones may differ where the two round differently.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax
from srcjax.runtime.lax import linalg_eager
from srcjax.runtime.numpy._core import aval

__all__ = ["eigh_tridiagonal"]

_SUPPORTED = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key: Any = None) -> Any:
    """The eigenvalues w (ascending) of the tridiagonal matrix with diagonal d [n] and off-diagonal e [n-1]
    (e above the diagonal, conj(e) below); with ``eigvals_only=False``, (w, v), v [n, k] the eigenvectors as
    columns. select 'a': all; 'i': those of index select_range[0]..select_range[1]. ``tol``: an absolute
    tolerance for the eigenvalues (at least eps ||T||); ``key``: the PRNG key of the inverse iteration's start
    (default key(42))."""
    from srcjax.runtime import random

    if not eigvals_only and key is None:
        key = random.key(42)
    alpha, beta = jnp.asarray(d), jnp.asarray(e)
    alpha_dtype, beta_dtype = np.dtype(aval(alpha).dtype), np.dtype(aval(beta).dtype)
    if alpha_dtype != beta_dtype:
        raise TypeError(f"diagonal and off-diagonal values must have same dtype, got {alpha_dtype} and {beta_dtype}")
    if alpha_dtype not in _SUPPORTED:
        raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                        f"jax.scipy.linalg.eigh_tridiagonal, got {alpha_dtype} and {beta_dtype}")
    n = aval(alpha).shape[0]
    if n <= 1:
        return jnp.real(alpha) if eigvals_only else (jnp.real(alpha), jnp.eye(n, dtype=alpha_dtype))
    if alpha_dtype.kind == "c":
        alpha = jnp.real(alpha)
        beta_sq = jnp.real(beta * jnp.conj(beta))
        beta_abs = jnp.sqrt(beta_sq)
    else:
        beta_abs, beta_sq = jnp.abs(beta), jnp.square(beta)
    targets = _target_counts(n, select, select_range)
    # (called eagerly, the loops run compiled, as JAX's jitted function does: a lax loop run eagerly steps in Python)
    tolerance = () if tol is None else (jnp.asarray(tol, aval(alpha).dtype),)
    eigenvalues = linalg_eager.run(_bisect, n * np.finfo(aval(alpha).dtype).nmant, alpha, beta_sq, beta_abs, targets,
                                   *tolerance)
    if eigvals_only:
        return eigenvalues
    vectors = linalg_eager.run(_inverse_iteration, 5 * n, alpha, beta, eigenvalues, key)
    return eigenvalues, jnp.transpose(vectors)


def _target_counts(n: int, select: str, select_range: Any) -> Any:
    """The indices of the eigenvalues asked for: eigenvalue k is where the Sturm count passes k."""
    if select == "a":
        return jnp.arange(n, dtype=np.int32)
    if select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError("Got empty index range in select_range.")
        return jnp.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")


def _sturm_counts(alpha: Any, beta_sq: Any, pivmin: Any, alpha0_perturbation: Any, x: Any) -> Any:
    """The number of eigenvalues below each x: the negative pivots of the LDL^T factorisation of T - x, each
    pivot kept away from 0 by pivmin (LAPACK's guard)."""
    n = aval(alpha).shape[0]
    q = alpha[0] - x
    count = jnp.where(q < 0, 1, 0).astype(np.int32)
    q = jnp.where(alpha[0] == x, alpha0_perturbation, q)

    def step(i, qc):
        q, count = qc
        q = alpha[i] - beta_sq[i - 1] / q - x
        small = q <= pivmin
        return jnp.where(small, jnp.minimum(q, -pivmin), q), jnp.where(small, count + 1, count)

    return lax.fori_loop(1, n, step, (q, count))[1]


def _bisect(alpha: Any, beta_sq: Any, beta_abs: Any, targets: Any, tol: Any = None) -> Any:
    """The eigenvalues of the given indices, bisecting from the Gershgorin interval (a little widened) until the
    widest interval is within the tolerance, or as many steps as the mantissa has bits, plus one."""
    n = aval(alpha).shape[0]
    dtype = np.dtype(aval(alpha).dtype)
    finfo = np.finfo(dtype)
    off_diagonal_sums = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]], axis=0)
    largest = jnp.amax(alpha + off_diagonal_sums)
    smallest = jnp.amin(alpha - off_diagonal_sums)
    t_norm = jnp.maximum(jnp.abs(smallest), jnp.abs(largest))  # a bound on ||T||_2
    one = np.ones([], dtype)
    safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
    pivmin = safemin * jnp.maximum(1, jnp.amax(beta_sq))
    alpha0_perturbation = jnp.square(finfo.eps * beta_abs[0])
    abs_tol = finfo.eps * t_norm
    if tol is not None:
        abs_tol = jnp.maximum(tol, abs_tol)
    max_steps = finfo.nmant + 1
    fudge = 2.1
    slack = jnp.array(n, dtype) * fudge * finfo.eps * t_norm
    shape = aval(targets).shape
    lower = jnp.broadcast_to(smallest - slack - 2 * fudge * pivmin, shape)
    upper = jnp.broadcast_to(largest + slack + fudge * pivmin, shape)
    mid = 0.5 * (upper + lower)
    pivmin = jnp.broadcast_to(pivmin, shape)
    alpha0_perturbation = jnp.broadcast_to(alpha0_perturbation, shape)

    def unfinished(state):
        i, lower, _, upper = state
        return jnp.logical_and(i < max_steps, abs_tol < jnp.amax(upper - lower))

    def halve(state):
        i, lower, mid, upper = state
        counts = _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, mid)
        lower = jnp.where(counts <= targets, mid, lower)
        upper = jnp.where(counts > targets, mid, upper)
        return i + 1, lower, 0.5 * (lower + upper), upper

    return lax.while_loop(unfinished, halve, (0, lower, mid, upper))[2]


def _inverse_iteration(alpha: Any, beta: Any, eigenvalues: Any, key: Any) -> Any:
    """The unit eigenvectors (rows) [k, n]: from random unit vectors, x <- (T - w)^-1 x (jaxlib's perturbed
    tridiagonal solve, so that an exactly singular T - w still gives a finite x), normalised, at most 5 times
    (LAPACK's stein), stopping once no norm grows by 10% more; after each step the vectors of each run of
    eigenvalues closer than sqrt(eps) ||T|| are orthonormalised together (by QR)."""
    from srcjax.runtime import random
    from srcjax.runtime.lax import linalg as lax_linalg

    n, k = aval(alpha).shape[0], aval(eigenvalues).shape[0]
    dtype = np.result_type(aval(alpha).dtype, aval(beta).dtype)
    real = np.finfo(dtype).dtype
    below = jnp.broadcast_to(jnp.pad(jnp.conj(beta), (1, 0)), (k, n)).astype(dtype)  # T[i, i-1] = conj(beta[i-1])
    above = jnp.broadcast_to(jnp.pad(beta, (0, 1)), (k, n)).astype(dtype)  # T[i, i+1] = beta[i]
    shifted = (alpha[None, :] - eigenvalues[:, None]).astype(dtype)
    orthonormalize = _cluster_orthonormalizer(eigenvalues)
    v = random.normal(key, (k, n), dtype=real).astype(dtype)
    v = v / jnp.linalg.norm(v, axis=-1, keepdims=True).astype(dtype)

    def improve(state):
        i, v, norms, _ = state
        x = lax_linalg.tridiagonal_solve(below, shifted, above, v[:, :, None], perturb_singular=True)[:, :, 0]
        new_norms = jnp.linalg.norm(x, axis=-1)
        return i + 1, orthonormalize(x / new_norms[:, None].astype(dtype)), new_norms, norms

    def growing(state):
        i, _, norms, old_norms = state
        return jnp.logical_and(i < 5, jnp.any(norms >= 1.1 * old_norms))

    state = (0, v, jnp.ones(k, real), jnp.zeros(k, real))
    return lax.while_loop(growing, improve, state)[1]


def _cluster_orthonormalizer(eigenvalues: Any) -> Any:
    """A function replacing the rows [k, n] of each run of (ascending) eigenvalues less than sqrt(eps) max|w|
    apart by the columns of Q from the QR factorisation of those rows (transposed)."""
    k = aval(eigenvalues).shape[0]
    gap = jnp.sqrt(np.finfo(aval(eigenvalues).dtype).eps) * jnp.maximum(jnp.abs(eigenvalues[0]),
                                                                          jnp.abs(eigenvalues[-1]))
    close = eigenvalues[1:] - eigenvalues[:-1] < gap
    close_before, close_after = jnp.pad(close, (1, 0)), jnp.pad(close, (0, 1))
    starts = jnp.nonzero(~close_before & close_after, size=k // 2 + 1)[0]
    ends = jnp.nonzero(close_before & ~close_after, size=k // 2 + 1)[0] + 1
    count = jnp.sum(~close_before & close_after)
    rows = jnp.arange(k)

    def orthonormalize(v):
        n = aval(v).shape[1]

        def one_cluster(c, v):
            start, end = starts[c], ends[c]
            inside = (rows < end - start).astype(aval(v).dtype)[:, None]
            block = lax.dynamic_slice(jnp.pad(v, ((0, k), (0, 0))), (start, 0), (k, n)) * inside
            q = jnp.linalg.qr(block.T)[0].T * inside
            update = lax.dynamic_update_slice(jnp.zeros((2 * k, n), aval(v).dtype), q, (start, 0))[:k]
            return jnp.where(((rows >= start) & (rows < end))[:, None], update, v)

        return lax.fori_loop(0, count, one_cluster, v)

    return orthonormalize
