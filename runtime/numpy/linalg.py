"""``srcjax.numpy.linalg``: NumPy's linear algebra on the linalg primitives, with JAX's semantics.

Inputs are promoted to an inexact dtype (integers to the default float) and leading axes are batch axes.
Solves, inverses and determinants go through the LU factorization and triangular solves, as JAX's do, so
that later transformations see only primitives with rules; the decompositions wrap ``lax.linalg``.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.lax import linalg as lax_linalg
from srcjax.runtime.numpy._core import aval, check_arraylike, is_concrete, promote_dtypes_inexact

__all__ = [
    "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr",
    "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


# -- helpers --------------------------------------------------------------------------------------------------
def _inexact(name: str, *args: Any) -> list[Any]:
    check_arraylike(f"jnp.linalg.{name}", *args)
    return promote_dtypes_inexact(*(jnp.asarray(a) for a in args))


def _matrices(name: str, a: Any, *, square: bool = False) -> None:
    shape = aval(a).shape
    if len(shape) < 2 or (square and shape[-1] != shape[-2]):
        what = "[..., n, n] (a stack of square matrices)" if square else "[..., m, n] (a stack of matrices)"
        raise ValueError(f"jnp.linalg.{name}: argument must have shape {what}, got {shape}")


def _mT(x: Any) -> Any:
    ndim = aval(x).ndim
    return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def _H(x: Any) -> Any:
    """The conjugate transpose of the last two axes."""
    return jnp.conj(_mT(x)) if aval(x).dtype.kind == "c" else _mT(x)


def _real_dtype(x: Any) -> np.dtype:
    return np.finfo(aval(x).dtype).dtype


def _eps(x: Any) -> float:
    return float(np.finfo(aval(x).dtype).eps)


def _take_rows(x: Any, rows: Any) -> Any:
    """x[..., rows[..., i], :] for each i: row ``i`` of the result is row ``rows[i]`` of ``x``."""
    return jnp.take_along_axis(x, jnp.broadcast_to(jnp.expand_dims(rows, -1), aval(x).shape), axis=-2)


def _lu_solve(lu: Any, permutation: Any, b: Any, trans: int = 0) -> Any:
    """Solve a x = b (trans 0), a^T x = b (1) or a^H x = b (2) from a's LU factors, a[permutation] = L U.

    ``b`` is a stack of matrices [..., n, k] with the batch shape of ``lu``.
    """
    if trans == 0:  # L U x = P b
        y = lax_linalg.triangular_solve(lu, _take_rows(b, permutation), left_side=True, lower=True,
                                        unit_diagonal=True)
        return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)
    # a^T = U^T L^T P, so U^T L^T (P x) = b
    conjugate = trans == 2
    y = lax_linalg.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conjugate)
    z = lax_linalg.triangular_solve(lu, y, left_side=True, lower=True, transpose_a=True, conjugate_a=conjugate,
                                    unit_diagonal=True)
    # P^T z puts row i of z at row permutation[i]: gather with the inverse permutation
    shape = aval(permutation).shape
    _, inverse = lax.sort_key_val(permutation, lax.broadcasted_iota(np.int32, shape, len(shape) - 1))
    return _take_rows(z, inverse)


def _solve_matrices(a: Any, b: Any) -> Any:
    """a x = b for a [..., n, n] and b [..., n, k], broadcasting the batch axes."""
    a_shape, b_shape = aval(a).shape, aval(b).shape
    batch = jnp.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    a = jnp.broadcast_to(a, batch + a_shape[-2:])
    b = jnp.broadcast_to(b, batch + b_shape[-2:])
    lu, _, permutation = lax_linalg.lu(a)
    return _lu_solve(lu, permutation, b)


def _normalize_axes(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise ValueError(f"jnp.linalg.{name}: axis {ax} is out of bounds for an array of dimension {ndim}")
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"jnp.linalg.{name}: duplicate axes given: {axes}")
    return tuple(out)


# -- factorizations -------------------------------------------------------------------------------------------
def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    (a,) = _inexact("cholesky", a)
    _matrices("cholesky", a, square=True)
    low = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(low) if upper else low


def qr(a: Any, mode: str = "reduced") -> Any:
    (a,) = _inexact("qr", a)
    _matrices("qr", a)
    if mode == "raw":
        raise NotImplementedError("jnp.linalg.qr: mode='raw' (Householder reflectors) is not supported")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"jnp.linalg.qr: unsupported mode {mode!r}; use 'reduced', 'complete' or 'r'")
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:  # noqa: N803 - NumPy's name
    (a,) = _inexact("eigh", a)
    _matrices("eigh", a, square=True)
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"jnp.linalg.eigh: UPLO must be one of None, 'L' or 'U', got {UPLO!r}")
    v, w = lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:  # noqa: N803
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a: Any) -> EigResult:
    (a,) = _inexact("eig", a)
    _matrices("eig", a, square=True)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a: Any) -> Any:
    (a,) = _inexact("eigvals", a)
    _matrices("eigvals", a, square=True)
    return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None) -> Any:
    (a,) = _inexact("svd", a)
    _matrices("svd", a, square=hermitian)
    if not hermitian:
        out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index)
        return SVDResult(*out) if compute_uv else out
    # Hermitian a = V diag(w) V^H = (V) diag(|w|) (sign(w) V^H): the singular values are |w|, sorted descending.
    v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
    keys = -jnp.abs(w)  # a stable sort on these orders the singular values descending
    negated_s, signs = lax.sort_key_val(keys, jnp.where(w < 0, -1, 1).astype(aval(v).dtype))
    if not compute_uv:
        return -negated_s
    _, u = lax.sort((jnp.broadcast_to(jnp.expand_dims(keys, -2), aval(v).shape), v), dimension=-1, num_keys=1)
    return SVDResult(u, -negated_s, _H(u * jnp.expand_dims(signs, -2)))


def svdvals(x: Any, /) -> Any:
    return svd(x, compute_uv=False)


# -- solves, inverses and determinants (through LU) ------------------------------------------------------------
def solve(a: Any, b: Any) -> Any:
    """x with a x = b; b is a vector [n] or a stack of matrices [..., n, k] (NumPy 2's rule), batches broadcast."""
    a, b = _inexact("solve", a, b)
    _matrices("solve", a, square=True)
    n, b_shape = aval(a).shape[-1], aval(b).shape
    if len(b_shape) == 1 and b_shape[0] == n:
        return jnp.squeeze(_solve_matrices(a, jnp.expand_dims(b, -1)), -1)
    if len(b_shape) < 2 or b_shape[-2] != n:
        raise ValueError(
            f"jnp.linalg.solve: b must be a vector [{n}] or a stack of matrices [..., {n}, k] to match a "
            f"{aval(a).shape}, got {b_shape}; to solve a stack of vectors use solve(a, b[..., None])[..., 0]"
        )
    return _solve_matrices(a, b)


def inv(a: Any) -> Any:
    (a,) = _inexact("inv", a)
    _matrices("inv", a, square=True)
    n = aval(a).shape[-1]
    return _solve_matrices(a, jnp.broadcast_to(jnp.eye(n, dtype=aval(a).dtype), aval(a).shape))


def _lu_parity(pivots: Any) -> Any:
    """Whether the LU's row swaps make an odd permutation (each pivots[i] != i is one swap)."""
    n = aval(pivots).shape[-1]
    swaps = jnp.sum(pivots != lax.iota(np.int32, n), axis=-1)
    return swaps % 2 == 1


def det(a: Any) -> Any:
    (a,) = _inexact("det", a)
    _matrices("det", a, square=True)
    n = aval(a).shape[-1]
    if n == 2:  # written out for small matrices, as JAX does (in its order): exact for integer-valued entries
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if n == 3:
        return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2] + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
                + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1] - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
                - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1] - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])
    return _det_with_jvp()(a)


def _det_lu(a: Any) -> Any:
    # det a = (-1)^swaps prod diag(U)
    lu, pivots, _ = lax_linalg.lu(a)
    product = jnp.prod(jnp.diagonal(lu, axis1=-2, axis2=-1), axis=-1)
    return jnp.where(_lu_parity(pivots), -product, product)


def _cofactor_solve(a: Any, b: Any) -> tuple[Any, Any]:
    """(det a, adj(a) b), where adj(a) = det(a) a^-1, finite at singular a (JAX's construction).

    With P a = L U: for rank n-1 only u_nn is 0, and det(a) a^-1 b = U^-1 (det(a) L^-1 P b) needs u_nn only in
    its last row, y_n = x_n prod_{i<n} u_ii: so u_nn is replaced by 1 / prod_{i<n} u_ii and the other rows of
    x are scaled by det a. Below rank n-1 the adjugate is 0: that is where the modified U still fails to solve.
    """
    shape = aval(a).shape
    n, dtype = shape[-1], aval(a).dtype
    if n == 0:
        return jnp.ones(shape[:-2], dtype), b
    if n == 1:
        return a[..., 0, 0], b
    lu, pivots, permutation = lax_linalg.lu(a)
    sign = jnp.where(_lu_parity(pivots), -1, 1).astype(dtype)
    partial_det = jnp.cumprod(jnp.diagonal(lu, axis1=-2, axis2=-1), axis=-1) * jnp.expand_dims(sign, -1)
    corner = (lax.broadcasted_iota(np.int32, shape, len(shape) - 2) == n - 1) & \
        (lax.broadcasted_iota(np.int32, shape, len(shape) - 1) == n - 1)
    lu = jnp.where(corner, jnp.expand_dims(1 / partial_det[..., -2], (-2, -1)), lu)
    probe = lax_linalg.triangular_solve(lu, jnp.ones(shape[:-1], dtype), left_side=True, lower=False)
    low_rank = jnp.expand_dims(jnp.any(~jnp.isfinite(probe), axis=-1), (-2, -1))
    x = _take_rows(jnp.where(low_rank, 0, b), permutation)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    x = jnp.concatenate([x[..., :-1, :] * jnp.expand_dims(partial_det[..., -1], (-2, -1)), x[..., -1:, :]], axis=-2)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return partial_det[..., -1], jnp.where(low_rank, 0, x)


def _det_jvp(primals: Any, tangents: Any) -> Any:
    # d det = tr(adj(a) da): the adjugate keeps the derivative finite at singular a (0 below rank n-1), where
    # differentiating through the LU divides by its zero pivots
    (a,), (a_dot,) = primals, tangents
    value, adjugate_a_dot = _cofactor_solve(a, a_dot)
    return value, jnp.trace(adjugate_a_dot, axis1=-2, axis2=-1)


@functools.cache
def _det_with_jvp() -> Any:
    from srcjax.runtime.autodiff import custom_jvp  # not at import: autodiff imports the numpy package

    det_ = custom_jvp(_det_lu)
    det_.defjvp(_det_jvp)
    return det_


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    (a,) = _inexact("slogdet", a)
    _matrices("slogdet", a, square=True)
    if method not in (None, "lu"):
        raise NotImplementedError(f"jnp.linalg.slogdet: method={method!r} is not supported (use 'lu')")
    if aval(a).shape[-1] in (1, 2):
        return SlogdetResult(*_slogdet_small_with_jvp()(a))
    lu, pivots, _ = lax_linalg.lu(a)
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    magnitude = jnp.abs(diag)
    singular = jnp.any(diag == 0, axis=-1)
    unit = diag / jnp.where(magnitude == 0, 1, magnitude).astype(aval(diag).dtype)  # diag_i / |diag_i|
    sign = jnp.prod(unit, axis=-1)
    sign = jnp.where(_lu_parity(pivots), -sign, sign)
    logabsdet = jnp.sum(jnp.log(magnitude), axis=-1)
    return SlogdetResult(jnp.where(singular, 0, sign), jnp.where(singular, -np.inf, logabsdet))


def _det_small(a: Any) -> Any:
    if aval(a).shape[-1] == 1:
        return a[..., 0, 0]
    return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _slogdet_small(a: Any) -> tuple[Any, Any]:
    """slogdet of 1x1 and 2x2 matrices from the determinant written out, as JAX's."""
    det = _det_small(a)
    return jnp.sign(det), jnp.real(jnp.log(jnp.abs(det)))


def _slogdet_small_jvp(primals: Any, tangents: Any) -> Any:
    # d log|det a| = tr(a^-1 da) = tr(adj(a) da) / det a, written out (JAX's rule): infinite, not NaN, where
    # det a = 0. The sign moves only by the imaginary part (for complex a).
    (a,), (a_dot,) = primals, tangents
    sign, logabsdet = _slogdet_small_with_jvp()(a)
    if aval(a).shape[-1] == 1:
        log_dot = a_dot[..., 0, 0] / a[..., 0, 0]
    else:
        log_dot = (a_dot[..., 0, 0] * a[..., 1, 1] - a_dot[..., 0, 1] * a[..., 1, 0] - a_dot[..., 1, 0] * a[..., 0, 1]
                   + a_dot[..., 1, 1] * a[..., 0, 0]) / _det_small(a)
    if aval(a).dtype.kind == "c":
        sign_dot = (log_dot - jnp.real(log_dot).astype(aval(log_dot).dtype)) * sign
        return (sign, logabsdet), (sign_dot, jnp.real(log_dot))
    return (sign, logabsdet), (jnp.zeros_like(sign), log_dot)


@functools.cache
def _slogdet_small_with_jvp() -> Any:
    from srcjax.runtime.autodiff import custom_jvp  # not at import: autodiff imports the numpy package

    slogdet_ = custom_jvp(_slogdet_small)
    slogdet_.defjvp(_slogdet_small_jvp)
    return slogdet_


def matrix_power(a: Any, n: int) -> Any:
    """a^n by repeated squaring; a negative n inverts a first. Integer matrices stay integer for n >= 0."""
    check_arraylike("jnp.linalg.matrix_power", a)
    a = jnp.asarray(a)
    _matrices("matrix_power", a, square=True)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"jnp.linalg.matrix_power: exponent must be an integer, got {n!r}") from None
    if n == 0:
        return jnp.broadcast_to(jnp.eye(aval(a).shape[-1], dtype=aval(a).dtype), aval(a).shape)
    if n < 0:
        a, n = inv(a), -n
    result, square = None, a
    while True:  # binary powering: a^n = prod over the set bits b of n of a^(2^b)
        if n & 1:
            result = square if result is None else jnp.matmul(result, square)
        n >>= 1
        if not n:
            return result
        square = jnp.matmul(square, square)


# -- least squares, pseudo-inverse and rank (through the SVD) --------------------------------------------------
def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """The Moore-Penrose inverse V diag(1/s) U^H, dropping singular values <= rtol * max(s)."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("jnp.linalg.pinv: only one of rtol and rcond may be specified")
        rtol = rcond
    (a,) = _inexact("pinv", a)
    _matrices("pinv", a)
    *batch, m, n = aval(a).shape
    if m == 0 or n == 0:
        return jnp.zeros((*batch, n, m), aval(a).dtype)
    if rtol is None:
        rtol = 10.0 * max(m, n) * _eps(a)
    return _pinv_with_jvp()(a, rtol, hermitian)


def _pinv(a: Any, rtol: Any, hermitian: bool) -> Any:
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = jnp.expand_dims(jnp.asarray(rtol), -1) * s[..., :1]
    kept = jnp.where(s > cutoff, s, np.inf).astype(aval(u).dtype)  # 1/inf = 0 drops the rest
    return jnp.matmul(_H(vh), _H(u) / jnp.expand_dims(kept, -1)).astype(aval(a).dtype)


def _pinv_jvp(rtol: Any, hermitian: bool, primals: Any, tangents: Any) -> Any:
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P (Golub and Pereyra 1973; JAX's rule): no
    # division by gaps between singular values, so repeated ones (the identity) have a finite derivative
    (a,), (a_dot,) = primals, tangents
    p = _pinv_with_jvp()(a, rtol, hermitian)
    if hermitian:  # svd(hermitian=True) reads the Hermitian part of a, so the tangent must too (as JAX's)
        a, a_dot = (a + _H(a)) / 2, (a_dot + _H(a_dot)) / 2
    *_, m, n = aval(a).shape
    dtype = aval(a).dtype
    a_dot_h = _H(a_dot)
    p_dot = -p @ a_dot @ p
    p_dot = p_dot + p @ _H(p) @ a_dot_h @ (jnp.eye(m, dtype=dtype) - a @ p)
    return p, p_dot + (jnp.eye(n, dtype=dtype) - p @ a) @ a_dot_h @ _H(p) @ p


@functools.cache
def _pinv_with_jvp() -> Any:
    from srcjax.runtime.autodiff import custom_jvp  # not at import: autodiff imports the numpy package

    pinv_ = custom_jvp(_pinv, nondiff_argnums=(1, 2))
    pinv_.defjvp(_pinv_jvp)
    return pinv_


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:  # noqa: N803
    """The number of singular values above the tolerance.

    Like JAX (not NumPy 2), a given ``rtol`` (or ``tol``) is compared with the singular values as it is; the
    default is max(s) * max(m, n) * eps.
    """
    if tol is not None:
        if rtol is not None:
            raise ValueError("jnp.linalg.matrix_rank: only one of tol or rtol may be specified")
        rtol = tol
    (M,) = _inexact("matrix_rank", M)
    shape = aval(M).shape
    if len(shape) < 2:
        return jnp.any(M != 0).astype(np.int32)
    if min(shape[-2:]) == 0:
        return jnp.zeros(shape[:-2], dtypes.default_int_dtype())
    s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        rtol = jnp.max(s, axis=-1) * (max(shape[-2:]) * _eps(M))
    return jnp.sum(s > jnp.expand_dims(jnp.asarray(rtol), -1), axis=-1)  # the default int, as JAX's


def lstsq(a: Any, b: Any, rcond: Any = None, *, numpy_resid: bool = False) -> tuple[Any, Any, Any, Any]:
    """The x minimising |a x - b|; returns (x, squared residuals per column of b, rank of a, singular values)."""
    a, b = _inexact("lstsq", a, b)
    a_shape, b_shape = aval(a).shape, aval(b).shape
    if len(a_shape) != 2:
        raise TypeError(f"jnp.linalg.lstsq: a must be two-dimensional, got shape {a_shape}")
    if len(b_shape) not in (1, 2):
        raise TypeError(f"jnp.linalg.lstsq: b must be one- or two-dimensional, got shape {b_shape}")
    if a_shape[0] != b_shape[0]:
        raise ValueError(f"jnp.linalg.lstsq: leading dimensions of a {a_shape} and b {b_shape} must match")
    b_is_vector = len(b_shape) == 1
    if b_is_vector:
        b = jnp.expand_dims(b, -1)
    m, n = a_shape
    if m == 0 or n == 0:
        s = jnp.zeros((0,), _real_dtype(a))
        rank = jnp.asarray(0, dtypes.default_int_dtype())
        x = jnp.zeros((n, aval(b).shape[1]), aval(a).dtype)
    else:
        eps = _eps(a)
        if rcond is None:
            rcond = eps * max(m, n)
        elif isinstance(rcond, (int, float)):
            rcond = eps if rcond < 0 else float(rcond)
        else:
            rcond = jnp.where(rcond < 0, eps, rcond)
        u, s, vh = svd(a, full_matrices=False)
        kept = (s > 0) & (s >= jnp.multiply(rcond, s[0]))  # a zero matrix has rank 0, not 1/0
        rank = jnp.sum(kept)  # the default int, as JAX's
        inverse_s = jnp.where(kept, 1 / jnp.where(kept, s, 1), 0).astype(aval(a).dtype)
        x = jnp.matmul(_H(vh), jnp.expand_dims(inverse_s, -1) * jnp.matmul(_H(u), b))
    residual = jnp.sum(jnp.abs(b - jnp.matmul(a, x)) ** 2, axis=0)
    if numpy_resid:  # NumPy returns no residuals unless a has full column rank and more rows than columns
        if not is_concrete(rank):
            raise ValueError("jnp.linalg.lstsq: numpy_resid=True needs a concrete rank; it cannot run inside jit")
        if int(rank) < n or m <= n:
            residual = jnp.zeros((0,), _real_dtype(a))
    if b_is_vector:
        x = jnp.squeeze(x, -1)
    return x, residual, rank, s


def cond(x: Any, p: Any = None) -> Any:
    """The condition number |x| |x^-1| in the norm ``p`` (the SVD ratio s_max / s_min for p = None, 2, -2)."""
    (x,) = _inexact("cond", x)
    _matrices("cond", x)
    if p is None or p == 2:
        s = svdvals(x)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(x)
        return s[..., -1] / s[..., 0]
    _matrices("cond", x, square=True)
    r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    # A singular x gives NaN through inf - inf in inv; NumPy reports that as an infinite condition number.
    return jnp.where(jnp.isnan(r) & ~jnp.any(jnp.isnan(x), axis=(-2, -1)), np.inf, r)


# -- norms ----------------------------------------------------------------------------------------------------
def _squared_magnitude(x: Any) -> Any:
    return jnp.real(x * jnp.conj(x)) if aval(x).dtype.kind == "c" else x * x


def _vector_norm(x: Any, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:  # noqa: A002 - NumPy's name
    if isinstance(ord, str):
        raise ValueError(f"jnp.linalg.norm: invalid order {ord!r} for a vector norm")
    if ord == 2:
        return jnp.sqrt(jnp.sum(_squared_magnitude(x), axis=axes, keepdims=keepdims))
    magnitude = jnp.abs(x)
    if ord == np.inf:  # initial=0, as JAX's: at the zero vector the 0 shares the tie (and its slope) with |x|
        return jnp.max(magnitude, axis=axes, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return jnp.min(magnitude, axis=axes, keepdims=keepdims)
    if ord == 0:  # the number of nonzero entries
        return jnp.sum(x != 0, axis=axes, keepdims=keepdims).astype(_real_dtype(x))
    if ord == 1:
        return jnp.sum(magnitude, axis=axes, keepdims=keepdims)
    return jnp.sum(magnitude**ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, int], keepdims: bool) -> Any:  # noqa: A002
    row, col = axes
    if ord in (None, "fro", "f"):
        return jnp.sqrt(jnp.sum(_squared_magnitude(x), axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        # 1: the largest column sum of |x|; inf: the largest row sum (and the smallest for the negatives)
        summed, across = (row, col) if ord in (1, -1) else (col, row)
        # the largest one starts from 0, as JAX's: it shares the tie at the zero matrix (half the slope)
        sums = jnp.sum(jnp.abs(x), axis=summed, keepdims=True)
        out = jnp.max(sums, axis=across, keepdims=True, initial=0) if ord > 0 else \
            jnp.min(sums, axis=across, keepdims=True)
    elif ord in (2, -2, "nuc"):
        s = svdvals(jnp.moveaxis(x, axes, (-2, -1)))
        if ord == "nuc" or aval(s).shape[-1] == 0:  # an empty matrix has norm 0
            out = jnp.sum(s, axis=-1)
        else:
            out = jnp.max(s, axis=-1, initial=0) if ord == 2 else jnp.min(s, axis=-1)
        out = jnp.expand_dims(out, sorted(axes))
    else:
        raise ValueError(f"jnp.linalg.norm: invalid order {ord!r} for a matrix norm")
    return out if keepdims else jnp.squeeze(out, axes)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    """A vector norm over one axis or a matrix norm over two (NumPy's ``ord`` values); the 2-norm of the
    flattened array by default."""
    (x,) = _inexact("norm", x)
    ndim = aval(x).ndim
    if axis is None:
        if ord is None:
            out = jnp.sqrt(jnp.sum(_squared_magnitude(x)))
            return jnp.reshape(out, (1,) * ndim) if keepdims else out
        if ndim not in (1, 2):
            raise ValueError(f"jnp.linalg.norm: ord={ord!r} without axis needs a 1-D or 2-D array, got {ndim}-D")
        axis = tuple(range(ndim))
    axes = _normalize_axes("norm", axis, ndim)
    if len(axes) == 1:
        return _vector_norm(x, 2 if ord is None else ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"jnp.linalg.norm: give one axis (a vector norm) or two (a matrix norm), got axis={axis}")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    (x,) = _inexact("vector_norm", x)
    ndim = aval(x).ndim
    if axis is None:
        out = _vector_norm(jnp.ravel(x), ord, (0,), False)
        return jnp.reshape(out, (1,) * ndim) if keepdims else out
    return _vector_norm(x, ord, _normalize_axes("vector_norm", axis, ndim), keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    (x,) = _inexact("matrix_norm", x)
    _matrices("matrix_norm", x)
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# -- products, delegated to srcjax.numpy with the array API's argument rules ----------------------------------
def _chain_order(shapes: list[tuple[int, int]]) -> list[list[int]]:
    """The textbook matrix-chain dynamic programme: split[i][j] is where to split the product i..j."""
    count = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """The product of a chain of matrices, multiplied in the cheapest order; the ends may be vectors."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"jnp.linalg.multi_dot: needs at least two arrays, got {len(arrays)}")
    check_arraylike("jnp.linalg.multi_dot", *arrays)
    arrays = [jnp.asarray(a) for a in arrays]
    first_vector, last_vector = aval(arrays[0]).ndim == 1, aval(arrays[-1]).ndim == 1
    if first_vector:
        arrays[0] = jnp.expand_dims(arrays[0], 0)
    if last_vector:
        arrays[-1] = jnp.expand_dims(arrays[-1], -1)
    if any(aval(a).ndim != 2 for a in arrays):
        raise ValueError("jnp.linalg.multi_dot: arrays must be two-dimensional, except the first and last, which may "
                         f"be vectors; got shapes {[aval(a).shape for a in arrays]}")
    split = _chain_order([aval(a).shape for a in arrays])

    def product(i: int, j: int) -> Any:
        if i == j:
            return arrays[i]
        return jnp.matmul(product(i, split[i][j]), product(split[i][j] + 1, j), precision=precision)

    out = product(0, len(arrays) - 1)
    if first_vector:
        out = jnp.squeeze(out, 0)
    if last_vector:
        out = jnp.squeeze(out, -1)
    return out


def outer(x1: Any, x2: Any, /) -> Any:
    check_arraylike("jnp.linalg.outer", x1, x2)
    if jnp.ndim(x1) != 1 or jnp.ndim(x2) != 1:
        raise ValueError(f"jnp.linalg.outer: inputs must be one-dimensional, got x1.ndim={jnp.ndim(x1)} and "
                         f"x2.ndim={jnp.ndim(x2)}")
    return jnp.outer(x1, x2)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    check_arraylike("jnp.linalg.cross", x1, x2)
    size1, size2 = jnp.shape(x1)[axis], jnp.shape(x2)[axis]
    if size1 != 3 or size2 != 3:
        raise ValueError(f"jnp.linalg.cross: both inputs must be (stacks of) 3-vectors along axis {axis}, got sizes "
                         f"{size1} and {size2}")
    return jnp.cross(x1, x2, axis=axis)


def matmul(x1: Any, x2: Any, /, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    return jnp.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None, preferred_element_type: Any = None) -> Any:
    return jnp.vecdot(x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2, precision: Any = None, preferred_element_type: Any = None) -> Any:
    return jnp.tensordot(x1, x2, axes=axes, precision=precision, preferred_element_type=preferred_element_type)


def matrix_transpose(x: Any, /) -> Any:
    check_arraylike("jnp.linalg.matrix_transpose", x)
    x = jnp.asarray(x)
    _matrices("matrix_transpose", x)
    return _mT(x)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    check_arraylike("jnp.linalg.trace", x)
    _matrices("trace", jnp.asarray(x))
    return jnp.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    check_arraylike("jnp.linalg.diagonal", x)
    _matrices("diagonal", jnp.asarray(x))
    return jnp.diagonal(x, offset=offset, axis1=-2, axis2=-1)


# -- tensor forms ---------------------------------------------------------------------------------------------
def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` seen as a map from its last axes (after ``ind``) to its first ``ind`` axes."""
    (a,) = _inexact("tensorinv", a)
    shape, ind = aval(a).shape, operator.index(ind)
    if ind <= 0:
        raise ValueError(f"jnp.linalg.tensorinv: ind must be a positive integer, got {ind}")
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise ValueError(f"jnp.linalg.tensorinv: a {shape} with ind={ind} is not square ({rows} x {cols})")
    return jnp.reshape(inv(jnp.reshape(a, (rows, cols))), shape[ind:] + shape[:ind])


def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Any:
    """x with tensordot(a, x, x.ndim) = b, the axes of x being the trailing axes of a (after moving ``axes``)."""
    a, b = _inexact("tensorsolve", a, b)
    if axes is not None:
        moved = _normalize_axes("tensorsolve", axes, aval(a).ndim)
        a = jnp.moveaxis(a, moved, tuple(range(aval(a).ndim - len(moved), aval(a).ndim)))
    a_shape, b_shape = aval(a).shape, aval(b).shape
    x_shape = a_shape[len(b_shape):]
    rows, cols = math.prod(b_shape), math.prod(x_shape)
    if a_shape[: len(b_shape)] != b_shape or rows != cols:
        raise ValueError(f"jnp.linalg.tensorsolve: a {a_shape} must be b's shape {b_shape} followed by the shape "
                         f"of x, with as many elements as b")
    x = solve(jnp.reshape(a, (rows, cols)), jnp.ravel(b))
    return jnp.reshape(x, x_shape)
