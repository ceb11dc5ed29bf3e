"""Linear-algebra primitives: factorizations (Cholesky, LU, QR), eigen- and singular-value decompositions,
and triangular solves, each on a stack of matrices in the last two axes.

Operands are float or complex; leading axes are batch axes and are carried through unchanged. The NumPy
implementations call ``numpy.linalg`` (LAPACK in the operand's own precision) or do the short loop of a
textbook algorithm where NumPy has none. Like XLA, a factorization that fails on one matrix of a stack
(not positive definite, no convergence) gives NaNs for that matrix instead of raising.

The JVP rules are JAX's formulas, written with the matrix helpers below so that the tangent passes only
through linear operations (products with primal matrices, triangular solves in their right-hand side,
masks, conj/real); only ``triangular_solve`` is linear in an operand, so only it has a transpose rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from srcjax.transpiler.primitives.ad import Zero, aval_of, defjvp2, is_undefined, is_zero, tangent_aval, zeros
from srcjax.transpiler.primitives.batching import axis_size, bdim_at_front, moveaxis
from srcjax.transpiler.primitives.convolution import Precision, dot_general_p
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.primitives.elementwise import conj_p, convert_element_type_p, real_p, select_n_p
from srcjax.transpiler.primitives.indexing import slice_p
from srcjax.transpiler.primitives.reduce import reduce_sum_p
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p, concatenate_p, iota_p, pad_p, reshape_p, transpose_p
from srcjax.transpiler.types import TensorType, complex_dtype, real_dtype


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


# -- matrix helpers for the differentiation rules: they bind primitives, so they compute eagerly and record
# -- IR alike; all act on the last two axes and carry leading batch axes -----------------------------------
def _mT(x):
    rank = aval_of(x).ndim
    return transpose_p.bind(x, permutation=(*range(rank - 2), rank - 1, rank - 2))


def _H(x):
    """x^H, the conjugate transpose (x^T for real x)."""
    return conj_p.bind(_mT(x)) if aval_of(x).dtype.kind == "c" else _mT(x)


def _matmul(a, b):
    batch = tuple(range(aval_of(a).ndim - 2))
    rank = len(batch) + 2
    return dot_general_p.bind(a, b, dimension_numbers=(((rank - 1,), (rank - 2,)), (batch, batch)),
                              precision=Precision.HIGHEST, preferred_element_type=None)


def _as(x, dtype):
    dtype = np.dtype(dtype)
    return x if aval_of(x).dtype == dtype else convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)


def _indices(rows: int, cols: int):
    """Row and column numbers of an [rows, cols] matrix (int32)."""
    shape = (rows, cols)
    return iota_p.bind(dtype=np.int32, shape=shape, dimension=0), iota_p.bind(dtype=np.int32, shape=shape, dimension=1)


def _eye(n: int, dtype, start: int = 0):
    """The [n, n] identity with ones only from row ``start`` on (``start=0``: the whole identity)."""
    rows, cols = _indices(n, n)
    ones = rows == cols
    if start:
        ones = ones & (rows >= start)
    return _as(ones, dtype)


def _triangle(x, k: int = 0, *, lower: bool):
    """tril(x, k) (entries with column - row <= k) or triu(x, k) (column - row >= k); a mask, so linear."""
    typ = aval_of(x)
    rows, cols = _indices(*typ.shape[-2:])
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    if typ.ndim > 2:
        keep = broadcast_in_dim_p.bind(keep, shape=typ.shape, broadcast_dimensions=(typ.ndim - 2, typ.ndim - 1))
    return select_n_p.bind(keep, zeros(typ.update(weak_type=False)), x)


def _halved_triangle(x, *, lower: bool):
    """One triangle of x with its diagonal halved: the phi of the Cholesky derivative."""
    n = aval_of(x).shape[-1]
    return _triangle(x, lower=lower) * (1 - 0.5 * _eye(n, aval_of(x).dtype))


def _hermitian_from_triangle(x, *, lower: bool):
    """The Hermitian matrix a factorization sees when it reads only one triangle of x (and the real part of
    its diagonal, as LAPACK does)."""
    half = _halved_triangle(x, lower=lower)
    return half + _H(half)


def _diagonal(x):
    typ = aval_of(x)
    return reduce_sum_p.bind(x * _eye(typ.shape[-1], typ.dtype), axes=(typ.ndim - 1,))


def _as_row(v):
    """v[..., None, :]: a vector as a [1, k] matrix that broadcasts down the rows."""
    *batch, k = aval_of(v).shape
    return broadcast_in_dim_p.bind(v, shape=(*batch, 1, k), broadcast_dimensions=(*range(len(batch)), len(batch) + 1))


def _as_column(v):
    """v[..., :, None]: a vector as a [k, 1] matrix that broadcasts along the columns."""
    *batch, k = aval_of(v).shape
    return broadcast_in_dim_p.bind(v, shape=(*batch, k, 1), broadcast_dimensions=tuple(range(len(batch) + 1)))


def _permutation_matrix(permutation, dtype):
    """P with (P x)[i] = x[permutation[i]]: P[i, j] = (permutation[i] == j)."""
    *batch, m = aval_of(permutation).shape
    shape = (*batch, m, m)
    rows = broadcast_in_dim_p.bind(permutation, shape=shape, broadcast_dimensions=tuple(range(len(batch) + 1)))
    cols = iota_p.bind(dtype=np.int32, shape=shape, dimension=len(batch) + 1)
    return _as(rows == cols, dtype)


def _solve_triangular(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                      conjugate_a: bool = False, unit_diagonal: bool = False):
    return triangular_solve_p.bind(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                   conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)


def _zero_tangents(outs):
    return [Zero(tangent_aval(aval_of(o))) for o in outs]


def _stack_vmap(prim: Primitive, core_rank: int = 2):
    """Batching of a one-operand primitive that already maps over every axis but its last ``core_rank``: a
    batch axis among those leading axes stays where it is (in every result), one among the last axes moves
    to the front."""

    def rule(args, dims, **params):
        (x,), (d,) = args, dims
        if d >= aval_of(x).ndim - core_rank:
            x, d = moveaxis(x, d, 0), 0
        out = prim.bind(x, **params)
        return (out, [d] * len(out)) if prim.multiple_results else (out, d)

    return rule


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


@cholesky_p.def_jvp
def _cholesky_jvp(primals, tangents):
    # dA = dL L^H + L dL^H, so L^-1 dA L^-H = L^-1 dL + (L^-1 dL)^H with L^-1 dL lower triangular and a real
    # diagonal: L^-1 dL = phi(L^-1 dA L^-H), phi taking the lower triangle and halving the diagonal (JAX's
    # rule). dA is the Hermitian matrix built from the lower triangle, the only part the primitive reads.
    (x,), (dx,) = primals, tangents
    low = cholesky_p.bind(x)
    if is_zero(dx):
        return low, Zero(tangent_aval(aval_of(low)))
    da = _hermitian_from_triangle(dx, lower=True)
    da_right = _solve_triangular(low, da, lower=True, transpose_a=True, conjugate_a=True)  # dA L^-H
    inner = _solve_triangular(low, da_right, left_side=True, lower=True)  # L^-1 dA L^-H
    return low, _matmul(low, _halved_triangle(inner, lower=True))


cholesky_p.def_unsupported("transpose", "not linear")
cholesky_p.def_vmap(_stack_vmap(cholesky_p))


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


def _triangular_solve_jvp_a(g, x, a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                            unit_diagonal=False):
    # op(a) x = b  =>  op(da) x + op(a) dx = 0  =>  dx = -op(a)^-1 op(da) x (left side; mirrored on the right),
    # with da restricted to the triangle the solve reads. The product is done in the cheaper order.
    flags = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                 unit_diagonal=unit_diagonal)
    diagonal = 1 if unit_diagonal else 0
    g = -(_triangle(g, -diagonal, lower=True) if lower else _triangle(g, diagonal, lower=False))
    g = _mT(g) if transpose_a else g
    g = conj_p.bind(g) if conjugate_a and aval_of(g).dtype.kind == "c" else g
    m, n = aval_of(b).shape[-2:]
    if left_side:
        return _solve_triangular(a, _matmul(g, x), **flags) if m > n else _matmul(_solve_triangular(a, g, **flags), x)
    return _solve_triangular(a, _matmul(x, g), **flags) if m < n else _matmul(x, _solve_triangular(a, g, **flags))


defjvp2(triangular_solve_p, _triangular_solve_jvp_a,
        lambda g, x, a, b, **flags: triangular_solve_p.bind(a, g, **flags))  # linear in b


@triangular_solve_p.def_transpose
def _triangular_solve_transpose(ct, a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                                unit_diagonal=False):
    # x = op(a)^-1 b is linear in b; its transpose solves with op(a)^T (a transpose, not an adjoint: conjugation
    # stays as it is).
    if is_undefined(a) or not is_undefined(b):
        raise ValueError("triangular_solve is linear only in b: its transpose needs a known and b undefined")
    return [None, _solve_triangular(a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
                                    conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


@triangular_solve_p.def_vmap
def _triangular_solve_vmap(args, dims, **flags):
    (a, b), (da, db) = args, dims
    if da is None:
        # One matrix for the whole batch (JAX's rule): the batch joins b's independent columns (left side:
        # op(a) x = b column by column) or rows (right side), and is split back out of the solution.
        shape = aval_of(b).shape
        rank = len(shape)
        b = moveaxis(b, db, rank - 1 if flags.get("left_side") else rank - 2)
        moved = aval_of(b).shape
        joined = (*moved[:-2], moved[-2] * moved[-1]) if flags.get("left_side") else \
            (*moved[:-3], moved[-3] * moved[-2], moved[-1])
        x = triangular_solve_p.bind(a, reshape_p.bind(b, new_sizes=joined, dimensions=None), **flags)
        return reshape_p.bind(x, new_sizes=moved, dimensions=None), rank - 1 if flags.get("left_side") else rank - 2
    size = axis_size(args, dims)
    if da == db and da < aval_of(a).ndim - 2:  # both batched along the same leading axis
        return triangular_solve_p.bind(a, b, **flags), da
    return triangular_solve_p.bind(bdim_at_front(a, da, size), bdim_at_front(b, db, size), **flags), 0


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


@lu_p.def_jvp
def _lu_jvp(primals, tangents):
    # P A = L U  =>  L^-1 P dA U^-1 = L^-1 dL + dU U^-1, strictly lower plus upper triangular, so
    # dL = L tril(L^-1 P dA U^-1, -1) and dU = triu(L^-1 P dA U^-1) U (de Hoog, Anderssen and Lukas; JAX's
    # rule). For a non-square A, L is completed to [m, m] and U to [n, n] by identity blocks.
    (x,), (dx,) = primals, tangents
    outs = lu_p.bind(x)
    if is_zero(dx):
        return outs, _zero_tangents(outs)
    lu, _, permutation = outs
    typ = aval_of(x)
    *batch, m, n = typ.shape
    k = min(m, n)
    zero = np.zeros((), typ.dtype)
    keep = [(0, 0, 0)] * len(batch)
    starts = (0,) * typ.ndim
    low = _triangle(slice_p.bind(lu, start_indices=starts, limit_indices=(*batch, m, k), strides=None), -1,
                    lower=True)
    low = pad_p.bind(low, zero, padding_config=(*keep, (0, 0, 0), (0, m - k, 0))) + _eye(m, typ.dtype)
    up = _triangle(slice_p.bind(lu, start_indices=starts, limit_indices=(*batch, k, n), strides=None), lower=False)
    up = pad_p.bind(up, zero, padding_config=(*keep, (0, n - k, 0), (0, 0, 0))) + _eye(n, typ.dtype, start=k)
    permuted = _matmul(_permutation_matrix(permutation, typ.dtype), dx)  # P dA
    inner = _solve_triangular(up, _solve_triangular(low, permuted, left_side=True, lower=True, unit_diagonal=True))
    dlu = _matmul(low, _triangle(inner, -1, lower=True)) + _matmul(_triangle(inner, lower=False), up)
    return outs, [dlu, *_zero_tangents(outs[1:])]


lu_p.def_unsupported("transpose", "not linear")
lu_p.def_vmap(_stack_vmap(lu_p))


# -- lu_pivots_to_permutation: apply the swaps i <-> pivots[i] in order to 0..size-1 -------------------------
lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation", params=("permutation_size",))
lu_pivots_to_permutation_p.def_zero_jvp("a permutation of indices has zero derivative")
lu_pivots_to_permutation_p.def_unsupported("transpose", "not linear")


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


lu_pivots_to_permutation_p.def_vmap(_stack_vmap(lu_pivots_to_permutation_p, core_rank=1))


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


def _thin_qr_jvp(q, r, dx):
    # With dX R^-1 = C: Q^H dQ = dO is skew-Hermitian and dR R^-1 is upper triangular, so dO takes the
    # strictly lower part of Q^H C mirrored (plus, for complex, the imaginary part of its diagonal);
    # dQ = Q (dO - Q^H C) + C and dR = (Q^H C - dO) R (JAX's rule), for an [m, n] Q with m >= n, R [n, n].
    dtype = aval_of(q).dtype
    dx_rinv = _solve_triangular(r, dx)  # dX R^-1
    qh_dx_rinv = _matmul(_H(q), dx_rinv)
    below = _triangle(qh_dx_rinv, -1, lower=True)
    do = below - _H(below)
    if dtype.kind == "c":
        imaginary = qh_dx_rinv - _as(real_p.bind(qh_dx_rinv), dtype)
        do = do + _eye(aval_of(r).shape[-1], dtype) * imaginary
    return _matmul(q, do - qh_dx_rinv) + dx_rinv, _matmul(qh_dx_rinv - do, r)


def _columns(x, start: int, stop: int):
    """x[..., :, start:stop]."""
    *lead, rows, _ = aval_of(x).shape
    return slice_p.bind(x, start_indices=(*(0,) * len(lead), 0, start), limit_indices=(*lead, rows, stop),
                        strides=None)


def _rows(x, start: int, stop: int):
    """x[..., start:stop, :]."""
    *lead, _, cols = aval_of(x).shape
    return slice_p.bind(x, start_indices=(*(0,) * len(lead), start, 0), limit_indices=(*lead, stop, cols),
                        strides=None)


def _solve_adjoint(a, b):
    """a^H x = b for a square a, through a's LU factors: P a = L U, so x = P^T L^-H U^-H b."""
    lu, _, permutation = lu_p.bind(a)
    dtype = aval_of(a).dtype
    lower = _triangle(lu, -1, lower=True) + _eye(aval_of(a).shape[-1], dtype)
    flags = dict(left_side=True, transpose_a=True, conjugate_a=True)
    y = _solve_triangular(lower, _solve_triangular(_triangle(lu, lower=False), b, lower=False, **flags),
                          lower=True, unit_diagonal=True, **flags)
    return _matmul(_mT(_permutation_matrix(permutation, dtype)), y)


@qr_p.def_jvp
def _qr_jvp(primals, tangents, *, full_matrices=True):
    # m >= n, reduced: the thin rule. m < n: X = Q [R1 R2] splits into the square X1 = Q R1 and
    # R2 = Q^H X2, so dR2 = dQ^H X2 + Q^H dX2. m > n with the complete Q = [Q_mn Q_mp]: the thin rule for
    # Q_mn, and dQ_mp = dQ_mn Z^H - (Q_mn + Q_mp Z)(dQ_pn - Z dQ_nn)^H with Z = Q_pn (Q_nn - I)^-1
    # (arXiv:2409.13374, eqs. 32-33; JAX's rules).
    (x,), (dx,) = primals, tangents
    *_, m, n = aval_of(x).shape
    outs = qr_p.bind(x, full_matrices=full_matrices)
    if is_zero(dx):
        return outs, _zero_tangents(outs)
    q, r = outs
    if m < n:
        dq, dr1 = _thin_qr_jvp(q, _columns(r, 0, m), _columns(dx, 0, m))
        dr2 = _matmul(_H(dq), _columns(x, m, n)) + _matmul(_H(q), _columns(dx, m, n))
        return outs, [dq, concatenate_p.bind(dr1, dr2, dimension=aval_of(x).ndim - 1)]
    if not full_matrices or m == n:
        return outs, list(_thin_qr_jvp(q, r, dx))
    q_mn = _columns(q, 0, n)
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, _rows(r, 0, n), dx)
    q_nn, q_pn = _rows(q_mn, 0, n), _rows(q_mn, n, m)
    z_h = _solve_adjoint(q_nn - _eye(n, aval_of(x).dtype), _H(q_pn))
    z = _H(z_h)
    dq_mp = _matmul(dq_mn, z_h) - _matmul(q_mn + _matmul(_columns(q, n, m), z),
                                          _H(_rows(dq_mn, n, m) - _matmul(z, _rows(dq_mn, 0, n))))
    zero = np.zeros((), aval_of(x).dtype)
    keep = [(0, 0, 0)] * (aval_of(x).ndim - 2)
    dr = pad_p.bind(dr_nn, zero, padding_config=(*keep, (0, m - n, 0), (0, 0, 0)))
    return outs, [concatenate_p.bind(dq_mn, dq_mp, dimension=aval_of(x).ndim - 1), dr]


qr_p.def_unsupported("transpose", "not linear")
qr_p.def_vmap(_stack_vmap(qr_p))


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


@eigh_p.def_jvp
def _eigh_jvp(primals, tangents, *, lower=True, sort_eigenvalues=True):
    # With dA' = V^H dA V: dw = real(diag(dA')) and dV = V (F o dA'), F[i, j] = 1 / (w_j - w_i) off the
    # diagonal and 0 on it (JAX's rule; equal eigenvalues give inf/NaN, as in JAX). dA is the Hermitian
    # matrix built from the triangle the primitive reads.
    (x,), (dx,) = primals, tangents
    outs = eigh_p.bind(x, lower=lower, sort_eigenvalues=sort_eigenvalues)
    if is_zero(dx):
        return outs, _zero_tangents(outs)
    v, w = outs
    dtype = aval_of(x).dtype
    eye = _eye(aval_of(x).shape[-1], dtype)
    w = _as(w, dtype)
    gaps = 1 / (eye + _as_row(w) - _as_column(w)) - eye
    rotated = _matmul(_matmul(_H(v), _hermitian_from_triangle(dx, lower=lower)), v)
    dv = _matmul(v, gaps * rotated)
    dw = _diagonal(rotated)
    return outs, [dv, real_p.bind(dw) if dtype.kind == "c" else dw]


eigh_p.def_unsupported("transpose", "not linear")
eigh_p.def_vmap(_stack_vmap(eigh_p))


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


def _inverse(x):
    """x^-1 from P x = L U: U^-1 L^-1 P (the solves read L's unit lower and U's upper triangle of lu)."""
    lu, _, permutation = lu_p.bind(x)
    y = _solve_triangular(lu, _permutation_matrix(permutation, aval_of(x).dtype), left_side=True, lower=True,
                          unit_diagonal=True)
    return _solve_triangular(lu, y, left_side=True, lower=False)


@eig_p.def_jvp
def _eig_jvp(primals, tangents, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True):
    # Eigenvalues only, as in JAX: dw_i = (V^-1 dA V)_ii = sum_j (V^-1 dA)_ij V_ji.
    if compute_left_eigenvectors or compute_right_eigenvectors:
        raise NotImplementedError("Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
                                  "input that JAX cannot check (see the enable_eigvec_derivs argument to "
                                  "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to opt "
                                  "in. See https://github.com/jax-ml/jax/issues/2748 for discussion.")
    (x,), (dx,) = primals, tangents
    w, v = eig_p.bind(x, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    if is_zero(dx):
        return [w], _zero_tangents([w])
    dx = _as(dx, aval_of(v).dtype)
    dw = reduce_sum_p.bind(_matmul(_inverse(v), dx) * _mT(v), axes=(aval_of(v).ndim - 1,))
    return [w], [dw]


eig_p.def_unsupported("transpose", "not linear")
eig_p.def_vmap(_stack_vmap(eig_p))


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
        if not np.isfinite(m).all():  # LAPACK's gesdd can loop forever on inf (JAX's does): NaNs instead
            raise np.linalg.LinAlgError("non-finite entries")
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


@svd_p.def_jvp
def _svd_jvp(primals, tangents, *, full_matrices=True, compute_uv=True):
    # JAX's rule. With dS = U^H dA V: ds = real(diag(dS)); dU = U (F o (dS S + S dS^H) + D) and
    # dV = V (F o (S dS + dS^H S)), F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, D = (dS - dS^H) / 2 S^-1
    # (the phase of a complex pair), plus the parts of dA outside the span of U (m > n) or V (n > m).
    (x,), (dx,) = primals, tangents
    typ = aval_of(x)
    *_, m, n = typ.shape
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(f"the SVD derivative with full_matrices=True is implemented for square matrices "
                                  f"only, got a [{m}, {n}] matrix")
    s, u, vh = svd_p.bind(x, full_matrices=full_matrices and compute_uv, compute_uv=True)
    outs = [s, u, vh] if compute_uv else [s]
    if is_zero(dx):
        return outs, _zero_tangents(outs)
    uh, v = _H(u), _H(vh)
    ds_full = _matmul(_matmul(uh, dx), v)
    ds = _diagonal(ds_full)
    ds = real_p.bind(ds) if typ.dtype.kind == "c" else ds
    if not compute_uv:
        return outs, [ds]
    k = aval_of(s).shape[-1]
    eye = _eye(k, aval_of(s).dtype)
    row = _as_row(s)
    gaps = 1 / ((row + _mT(row)) * (row - _mT(row)) + eye) - eye
    s_zero = _as(s == 0, aval_of(s).dtype)
    s_inv = 1 / (s + s_zero) - s_zero
    row, gaps, s_inv = _as(row, typ.dtype), _as(gaps, typ.dtype), _as(s_inv, typ.dtype)
    dss = row * ds_full  # dS S
    sds = _mT(row) * ds_full  # S dS
    phase = 0.5 * (ds_full - _H(ds_full)) * (_as_row(s_inv) * _eye(k, typ.dtype))
    du = _matmul(u, gaps * (dss + _H(dss)) + phase)
    dv = _matmul(v, gaps * (sds + _H(sds)))
    if m > n:
        dx_v = _matmul(dx, v)
        du = du + (dx_v - _matmul(u, _matmul(uh, dx_v))) / row
    if n > m:
        dxh_u = _matmul(_H(dx), u)
        dv = dv + (dxh_u - _matmul(v, _matmul(vh, dxh_u))) / row
    return outs, [ds, du, _H(dv)]


svd_p.def_unsupported("transpose", "not linear")
svd_p.def_vmap(_stack_vmap(svd_p))


register_module(globals())
