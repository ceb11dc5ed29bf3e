"""``lax.linalg``: the linear-algebra primitives under JAX's names and signatures.

Each function binds one primitive of ``transpiler/primitives/linalg.py`` and does the small amount of
bookkeeping JAX's wrapper does around it: symmetrizing input, accepting a vector right-hand side, and
putting results in lax's order (``svd`` returns ``(u, s, vh)``; the primitive yields ``(s, u, vh)``).
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

from srcjax.runtime import lax
from srcjax.transpiler.primitives.linalg import (
    cholesky_p,
    eig_p,
    eigh_p,
    lu_p,
    lu_pivots_to_permutation_p,
    qr_p,
    svd_p,
    triangular_solve_p,
)

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_update", "eig", "eigh",
           "hessenberg", "householder_product", "lu", "lu_pivots_to_permutation", "ormqr", "qdwh", "qr", "schur", "svd",
           "symmetric_product", "triangular_solve", "tridiagonal", "tridiagonal_solve"]


# The algorithm choices JAX offers per backend. srcjax's factorizations run LAPACK's (through NumPy), so it accepts
# what JAX's CPU backend accepts and refuses the rest with JAX's CPU errors.
class EigImplementation(enum.Enum):
    """Enum for eigendecomposition algorithm."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """Implementation for symmetric/Hermitian eigendecomposition."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """Enum for SVD algorithm."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


def _aval(x: Any):
    from srcjax.runtime.numpy._core import aval as type_of  # imported late: runtime.numpy imports runtime.lax

    return type_of(x)


def _transpose_matrices(x: Any) -> Any:
    """Swap the last two axes."""
    rank = _aval(x).ndim
    return lax.transpose(x, (*range(rank - 2), rank - 1, rank - 2))


def _adjoint(x: Any) -> Any:
    """x^H: the conjugate transpose of the last two axes (x^T for real x)."""
    x_t = _transpose_matrices(x)
    return lax.conj(x_t) if _aval(x).dtype.kind == "c" else x_t


def _symmetrize(x: Any) -> Any:
    """(x + x^H) / 2: the Hermitian part of x, so that a factorization reading one triangle sees both."""
    import srcjax.runtime.numpy as jnp

    x = jnp.asarray(x)
    if _aval(x).ndim < 2:
        raise ValueError(f"expected a stack of matrices (at least 2 dimensions), got shape {_aval(x).shape}")
    return jnp.true_divide(jnp.add(x, _adjoint(x)), 2)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower-triangular L with x = L L^H; NaN where x is not positive definite."""
    if symmetrize_input:
        x = _symmetrize(x)
    return cholesky_p.bind(x)


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False) -> Any:
    """Solve op(a) x = b (``left_side``) or x op(a) = b for triangular a; b may be a vector (one fewer axis)."""
    b_is_vector = _aval(b).ndim == _aval(a).ndim - 1
    if b_is_vector:
        b = lax.expand_dims(b, (_aval(b).ndim if left_side else _aval(b).ndim - 1,))
    x = triangular_solve_p.bind(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    if b_is_vector:
        x = lax.squeeze(x, (_aval(x).ndim - 1 if left_side else _aval(x).ndim - 2,))
    return x


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU with partial pivoting: returns (lu, pivots, permutation) with x[permutation] = L U."""
    lu_, pivots, permutation = lu_p.bind(x)
    return lu_, pivots, permutation


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation that applying the row swaps ``i <-> pivots[i]`` in order makes of 0..size-1."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True, use_magma: bool | None = None) -> tuple[Any, ...]:
    """x = Q R; Q is [m,m] and R [m,n] with ``full_matrices``, else [m,k] and [k,n] with k = min(m, n).

    With ``pivoting``, (Q, R, P) with x[..., P] = Q R: the columns in LAPACK geqp3's order (``_pivot_order``),
    then factored as they are; P is a constant to derivatives, as in JAX."""
    if not pivoting:
        q, r = qr_p.bind(x, full_matrices=full_matrices)
        return q, r
    import srcjax.runtime.numpy as jnp

    permutation = _pivot_order(lax.stop_gradient(x))
    shape = _aval(x).shape
    permuted = jnp.take_along_axis(x, jnp.broadcast_to(jnp.expand_dims(permutation, -2), shape), axis=-1)
    q, r = qr_p.bind(permuted, full_matrices=full_matrices)
    return q, r, permutation


def _pivot_order(x: Any) -> Any:
    """geqp3's column order: step k swaps column k with the column (from k on, the first of equals) whose part
    outside the span of the columns already chosen is longest."""
    import numpy as np

    import srcjax.runtime.numpy as jnp

    *batch, m, n = _aval(x).shape
    positions = lax.broadcasted_iota(np.int32, (*batch, n), len(batch))
    permutation, residual = positions, x
    for k in range(min(m, n)):
        norms = jnp.sum(jnp.real(residual * jnp.conj(residual)), axis=-2)  # per column of x
        norms = jnp.where(positions < k, -1, jnp.take_along_axis(norms, permutation, axis=-1))  # per position
        pivot = jnp.argmax(norms, axis=-1).astype(np.int32)[..., None]
        column, at_k = jnp.take_along_axis(permutation, pivot, axis=-1), permutation[..., k:k + 1]
        permutation = jnp.where(positions == k, column, jnp.where(positions == pivot, at_k, permutation))
        chosen = jnp.take_along_axis(residual, jnp.broadcast_to(column[..., None, :], (*batch, m, 1)), axis=-1)
        length = jnp.sqrt(jnp.sum(jnp.real(chosen * jnp.conj(chosen)), axis=-2, keepdims=True))
        unit = chosen / jnp.where(length == 0, 1, length).astype(_aval(x).dtype)
        residual = residual - unit * jnp.sum(jnp.conj(unit) * residual, axis=-2, keepdims=True)
    return permutation


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index: tuple[int, int] | None = None, implementation: Any = None) -> tuple[Any, Any]:
    """Eigenvectors v (columns) and real eigenvalues w, ascending, of Hermitian x: x = v diag(w) v^H."""
    if implementation == EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if implementation == EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")
    if symmetrize_input:
        x = _symmetrize(x)
    v, w = eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues)
    if subset_by_index is not None:
        start, stop = subset_by_index
        n = _aval(w).shape[-1]
        if not 0 <= start <= stop <= n:
            raise ValueError(f"eigh: subset_by_index {subset_by_index} must satisfy 0 <= start <= stop <= {n}")
        v = lax.slice_in_dim(v, start, stop, axis=_aval(v).ndim - 1)
        w = lax.slice_in_dim(w, start, stop, axis=_aval(w).ndim - 1)
    return v, w


def eig(x: Any, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation: Any = None, use_magma: bool | None = None) -> list[Any]:
    """Complex eigenvalues w, then left eigenvectors (if asked), then right eigenvectors (if asked); with
    ``enable_eigvec_derivs``, the eigenvectors are differentiable too (linalg_eig.py)."""
    if use_magma is not None:
        warnings.warn("use_magma is deprecated, please use implementation=EigImplementation.MAGMA instead.",
                      DeprecationWarning, stacklevel=2)
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    if implementation and implementation != EigImplementation.LAPACK:
        raise ValueError("Only the lapack implementation is supported on CPU.")
    if enable_eigvec_derivs and (compute_left_eigenvectors or compute_right_eigenvectors):
        from srcjax.runtime.lax.linalg_eig import eig_with_vector_derivatives

        return eig_with_vector_derivatives(bool(compute_left_eigenvectors), bool(compute_right_eigenvectors))(x)
    return eig_p.bind(x, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=compute_right_eigenvectors)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None, algorithm: Any = None) -> Any:
    """x = u diag(s) vh with s real and descending: returns (u, s, vh), or s alone without ``compute_uv``.

    ``algorithm``: None, DEFAULT, DIVIDE_AND_CONQUER (LAPACK gesdd) or QR (gesvd, the same factors up to rounding);
    an empty x needs no algorithm, so any is accepted for it, as in JAX."""
    if algorithm not in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.QR, SvdAlgorithm.DIVIDE_AND_CONQUER):
        import srcjax.runtime.numpy as jnp

        shape = jnp.shape(x)
        if len(shape) >= 2 and shape[-2] and shape[-1]:
            raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on CPU.")
    results = svd_p.bind(x, full_matrices=full_matrices, compute_uv=compute_uv)
    s, *uv = results
    if subset_by_index is not None:
        start, stop = subset_by_index
        k = _aval(s).shape[-1]
        if not 0 <= start <= stop <= k:
            raise ValueError(f"svd: subset_by_index {subset_by_index} must satisfy 0 <= start <= stop <= {k}")
        if full_matrices and compute_uv and (start, stop) != (0, k):
            raise ValueError("svd: subset_by_index needs full_matrices=False")
        s = lax.slice_in_dim(s, start, stop, axis=_aval(s).ndim - 1)
        if compute_uv:
            u, vh = uv
            uv = [lax.slice_in_dim(u, start, stop, axis=_aval(u).ndim - 1),
                  lax.slice_in_dim(vh, start, stop, axis=_aval(vh).ndim - 2)]
    if not compute_uv:
        return s
    u, vh = uv
    return u, s, vh


# (these modules import lax, as this one does)
from srcjax.runtime.lax.linalg_householder import householder_product, ormqr  # noqa: E402
from srcjax.runtime.lax.linalg_qdwh import qdwh  # noqa: E402
from srcjax.runtime.lax.linalg_reductions import hessenberg, schur, tridiagonal  # noqa: E402
from srcjax.runtime.lax.linalg_tridiagonal import tridiagonal_solve  # noqa: E402
from srcjax.runtime.lax.linalg_updates import cholesky_update, symmetric_product  # noqa: E402
