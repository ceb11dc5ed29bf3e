"""Linear-algebra primitives: factorizations (Cholesky, LU, QR), eigen- and singular-value decompositions,
and triangular solves, each on a stack of matrices in the last two axes.

Operands are float or complex; leading axes are batch axes and are carried through unchanged. The NumPy
implementations call ``numpy.linalg`` (LAPACK in the operand's own precision) or do the short loop of a
textbook algorithm where NumPy has none. Like XLA, a factorization that fails on one matrix of a stack
(not positive definite, no convergence) gives NaNs for that matrix instead of raising.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from transpiler.primitives.core import Primitive, check, register_module
from transpiler.types import TensorType, complex_dtype, real_dtype


def _matrices(prim: str, x: TensorType, *, square: bool = False) -> tuple[tuple[int, ...], int, int]:
    """Check ``x`` is a stack of float/complex matrices; returns (batch shape, rows, columns)."""
    check(x.dtype.kind in "fc", prim, f"operand must be float or complex, got {x.dtype.name}")
    check(x.ndim >= 2, prim, f"operand must have at least 2 dimensions (a matrix), got {x}", kind="value")
    *batch, m, n = x.shape
    check(not square or m == n, prim, f"operand must be a stack of square matrices, got {x}", kind="value")
    return tuple(batch), m, n


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _stacked(fn: Callable[[np.ndarray], Sequence[np.ndarray]], x: np.ndarray,
             failed: Callable[[np.ndarray], Sequence[np.ndarray]]) -> list[np.ndarray]:
    """``fn`` on a whole stack; if LAPACK fails, matrix by matrix with ``failed(matrix)`` for the ones that fail."""
    try:
        return list(fn(x))
    except np.linalg.LinAlgError:
        pass
    batch = x.shape[:-2]
    outs: list[np.ndarray] | None = None
    for index in np.ndindex(*batch):
        try:
            results = fn(x[index])
        except np.linalg.LinAlgError:
            results = failed(x[index])
        if outs is None:
            outs = [np.empty(batch + np.shape(r), np.asarray(r).dtype) for r in results]
        for out, r in zip(outs, results, strict=True):
            out[index] = r
    assert outs is not None  # a failing stack has at least one matrix
    return outs


def _nan(shape: tuple[int, ...], dtype) -> np.ndarray:
    return np.full(shape, np.nan, dtype)


# -- cholesky: x = L L^H with L lower triangular; reads only the lower triangle of x -----------------------
cholesky_p = Primitive("cholesky")


@cholesky_p.def_shape
def _cholesky_shape(x: TensorType) -> TensorType:
    _matrices("cholesky", x, square=True)
    return x


@cholesky_p.def_impl
def _cholesky_impl(x):
    # A matrix that is not positive definite gives NaN in its lower triangle (XLA's convention).
    failed = lambda m: [np.where(np.tri(m.shape[-1], dtype=bool), np.nan, 0).astype(m.dtype)]
    return _stacked(lambda m: [np.linalg.cholesky(m)], x, failed)[0]


# -- triangular_solve: op(a) x = b (left_side) or x op(a) = b, op in {id, T, H, conj} -----------------------
triangular_solve_p = Primitive(
    "triangular_solve", params=("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")
)


@triangular_solve_p.def_shape
def _triangular_solve_shape(a: TensorType, b: TensorType, *, left_side: bool = False, lower: bool = False,
                            transpose_a: bool = False, conjugate_a: bool = False,
                            unit_diagonal: bool = False) -> TensorType:
    name = "triangular_solve"
    batch, m, _ = _matrices(name, a, square=True)
    check(b.dtype == a.dtype, name, f"a and b must have the same dtype, got {a.dtype.name} and {b.dtype.name}")
    check(b.ndim == a.ndim, name, f"b must have the rank of a ({a.ndim}), got {b}", kind="value")
    check(b.shape[:-2] == batch, name, f"batch dimensions differ: a is {a}, b is {b}", kind="value")
    axis, side = (-2, "rows") if left_side else (-1, "columns")
    check(b.shape[axis] == m, name, f"b must have {m} {side} to match a {a} (left_side={left_side}), got {b}",
          kind="value")
    return b.update(weak_type=a.weak_type and b.weak_type)


def _substitute(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solve a x = b for triangular ``a`` by forward (lower) or back (upper) substitution, row by row."""
    n = a.shape[-1]
    x = np.zeros(b.shape, b.dtype)
    for i in range(n) if lower else reversed(range(n)):
        done = slice(0, i) if lower else slice(i + 1, n)
        known = a[..., i : i + 1, done] @ x[..., done, :]  # sum_j a[i, j] x[j] over solved rows
        x[..., i, :] = (b[..., i, :] - known[..., 0, :]) / a[..., i, i, None]
    return x


@triangular_solve_p.def_impl
def _triangular_solve_impl(a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                           unit_diagonal=False):
    a = np.tril(a) if lower else np.triu(a)  # the other triangle is never read
    if unit_diagonal:
        a = a.copy()
        idx = np.arange(a.shape[-1])
        a[..., idx, idx] = 1
    if conjugate_a:
        a = np.conj(a)
    if transpose_a:
        a, lower = _swap(a), not lower
    if left_side:
        return _substitute(a, b, lower)
    # x a = b  <=>  a^T x^T = b^T
    return _swap(_substitute(_swap(a), _swap(b), not lower))


# -- lu: P x = L U with partial pivoting; results lu (L below the diagonal, unit diagonal implied, U on and
# -- above it), pivots (row swapped with row i at step i, LAPACK's ipiv from 0) and permutation -------------
lu_p = Primitive("lu", multiple_results=True)


@lu_p.def_shape
def _lu_shape(x: TensorType) -> list[TensorType]:
    batch, m, n = _matrices("lu", x)
    return [x, TensorType(np.int32, (*batch, min(m, n))), TensorType(np.int32, (*batch, m))]


@lu_p.def_impl
def _lu_impl(x):
    *batch, m, n = x.shape
    count = int(np.prod(batch, dtype=np.int64))
    a = x.reshape(count, m, n).copy()
    stack = np.arange(count)
    pivots = np.zeros((count, min(m, n)), np.int32)
    permutation = np.tile(np.arange(m, dtype=np.int32), (count, 1))
    for k in range(min(m, n)):
        p = k + np.argmax(np.abs(a[:, k:, k]), axis=1)  # the largest entry of column k on or below the diagonal
        pivots[:, k] = p
        for rows in (a, permutation):
            row_k = rows[stack, k].copy()
            rows[stack, k] = rows[stack, p]
            rows[stack, p] = row_k
        pivot = a[:, k, k]
        # A zero pivot means the whole column below is zero: leave it unscaled, as LAPACK's getrf does.
        a[:, k + 1 :, k] /= np.where(pivot == 0, 1, pivot)[:, None]
        a[:, k + 1 :, k + 1 :] -= a[:, k + 1 :, k, None] * a[:, k, None, k + 1 :]
    return [a.reshape(x.shape), pivots.reshape(*batch, min(m, n)), permutation.reshape(*batch, m)]


# -- lu_pivots_to_permutation: apply the swaps i <-> pivots[i] in order to 0..size-1 -------------------------
lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation", params=("permutation_size",))
lu_pivots_to_permutation_p.mark_no_rule("jvp", "a permutation of indices has no derivative")


@lu_pivots_to_permutation_p.def_shape
def _lu_pivots_to_permutation_shape(pivots: TensorType, *, permutation_size: int) -> TensorType:
    name = "lu_pivots_to_permutation"
    check(pivots.dtype == np.int32, name, f"pivots must be int32, got {pivots.dtype.name}")
    check(pivots.ndim >= 1, name, f"pivots must have at least 1 dimension, got {pivots}", kind="value")
    check(permutation_size >= pivots.shape[-1], name,
          f"permutation_size {permutation_size} is smaller than the number of pivots {pivots.shape[-1]}",
          kind="value")
    return TensorType(np.int32, (*pivots.shape[:-1], permutation_size))


@lu_pivots_to_permutation_p.def_impl
def _lu_pivots_to_permutation_impl(pivots, *, permutation_size):
    flat = pivots.reshape(int(np.prod(pivots.shape[:-1], dtype=np.int64)), pivots.shape[-1])
    permutation = np.tile(np.arange(permutation_size, dtype=np.int32), (flat.shape[0], 1))
    stack = np.arange(flat.shape[0])
    for k in range(flat.shape[1]):
        p = flat[:, k]
        row_k = permutation[stack, k].copy()
        permutation[stack, k] = permutation[stack, p]
        permutation[stack, p] = row_k
    return permutation.reshape(*pivots.shape[:-1], permutation_size)


# -- qr: x = Q R, Q with orthonormal columns, R upper triangular ([m,m] and [m,n] when full_matrices, else
# -- [m,k] and [k,n] with k = min(m, n)) --------------------------------------------------------------------
qr_p = Primitive("qr", params=("full_matrices",), multiple_results=True)


@qr_p.def_shape
def _qr_shape(x: TensorType, *, full_matrices: bool = True) -> list[TensorType]:
    batch, m, n = _matrices("qr", x)
    k = m if full_matrices else min(m, n)
    return [x.update(shape=(*batch, m, k)), x.update(shape=(*batch, k, n))]


@qr_p.def_impl
def _qr_impl(x, *, full_matrices=True):
    mode = "complete" if full_matrices else "reduced"
    return list(np.linalg.qr(x, mode=mode))


# -- eigh: x = V diag(w) V^H for Hermitian x, reading one triangle; results (v, w), w real ascending ------
eigh_p = Primitive("eigh", params=("lower", "sort_eigenvalues"), multiple_results=True)


@eigh_p.def_shape
def _eigh_shape(x: TensorType, *, lower: bool = True, sort_eigenvalues: bool = True) -> list[TensorType]:
    batch, n, _ = _matrices("eigh", x, square=True)
    return [x, x.update(dtype=real_dtype(x.dtype), shape=(*batch, n))]


@eigh_p.def_impl
def _eigh_impl(x, *, lower=True, sort_eigenvalues=True):
    # LAPACK returns the eigenvalues in ascending order whether or not sorting was asked for.
    def eigh(m):
        w, v = np.linalg.eigh(m, UPLO="L" if lower else "U")
        return v, w

    failed = lambda m: [_nan(m.shape, m.dtype), _nan(m.shape[-1:], real_dtype(m.dtype))]
    return _stacked(eigh, x, failed)


# -- eig: x v_i = w_i v_i (right) and u_i^H x = w_i u_i^H (left), for a general square x; complex results
# -- (w, then u if compute_left_eigenvectors, then v if compute_right_eigenvectors) ------------------------
eig_p = Primitive("eig", params=("compute_left_eigenvectors", "compute_right_eigenvectors"), multiple_results=True)


@eig_p.def_shape
def _eig_shape(x: TensorType, *, compute_left_eigenvectors: bool = True,
               compute_right_eigenvectors: bool = True) -> list[TensorType]:
    batch, n, _ = _matrices("eig", x, square=True)
    complex_type = x.update(dtype=complex_dtype(real_dtype(x.dtype)))
    vectors = [complex_type] * (int(compute_left_eigenvectors) + int(compute_right_eigenvectors))
    return [complex_type.update(shape=(*batch, n)), *vectors]


def _normalize_columns(v: np.ndarray) -> np.ndarray:
    """LAPACK's normalisation of eigenvectors: unit Euclidean norm, largest component real and positive."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    largest = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    return v * (np.conj(largest) / np.abs(largest))


def _left_eigenvectors(v: np.ndarray) -> np.ndarray:
    # The rows r_i of V^-1 satisfy r_i x = w_i r_i, so u_i = conj(r_i). A defective x (singular V) has no
    # basis of eigenvectors; its left eigenvectors come out NaN.
    try:
        return _normalize_columns(np.conj(_swap(np.linalg.inv(v))))
    except np.linalg.LinAlgError:
        return _nan(v.shape, v.dtype)


@eig_p.def_impl
def _eig_impl(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True):
    cdtype = complex_dtype(real_dtype(x.dtype))

    def eig(m):
        w, v = np.linalg.eig(m)
        w, v = w.astype(cdtype), v.astype(cdtype)
        out = [w]
        if compute_left_eigenvectors:
            out.append(_left_eigenvectors(v))
        if compute_right_eigenvectors:
            out.append(v)
        return out

    def failed(m):
        n = m.shape[-1]
        count = 1 + int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
        return [_nan((n,), cdtype)] + [_nan((n, n), cdtype)] * (count - 1)

    return _stacked(eig, x, failed)


# -- svd: x = U diag(s) V^H with s real, descending; results (s,) or (s, u, vh) -- the primitive's order;
# -- lax.linalg.svd reorders them to (u, s, vh) ----------------------------------------------------------
svd_p = Primitive("svd", params=("full_matrices", "compute_uv"), multiple_results=True)


@svd_p.def_shape
def _svd_shape(x: TensorType, *, full_matrices: bool = True, compute_uv: bool = True) -> list[TensorType]:
    batch, m, n = _matrices("svd", x)
    k = min(m, n)
    s = x.update(dtype=real_dtype(x.dtype), shape=(*batch, k))
    if not compute_uv:
        return [s]
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    return [s, x.update(shape=(*batch, m, u_cols)), x.update(shape=(*batch, vh_rows, n))]


@svd_p.def_impl
def _svd_impl(x, *, full_matrices=True, compute_uv=True):
    def svd(m):
        if not compute_uv:
            return [np.linalg.svd(m, compute_uv=False)]
        u, s, vh = np.linalg.svd(m, full_matrices=full_matrices)
        return [s, u, vh]

    def failed(m):
        rows, cols = m.shape
        k = min(rows, cols)
        s = _nan((k,), real_dtype(m.dtype))
        if not compute_uv:
            return [s]
        u_cols, vh_rows = (rows, cols) if full_matrices else (k, k)
        return [s, _nan((rows, u_cols), m.dtype), _nan((vh_rows, cols), m.dtype)]

    return _stacked(svd, x, failed)


register_module(globals())
