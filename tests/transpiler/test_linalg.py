"""Linear-algebra primitives: implementations against float64 NumPy and reconstruction identities, the
shape rule against the implementation on every call, stacks of matrices, empty shapes and bad operands."""

import itertools

import numpy as np
import pytest

from srcjax.transpiler.primitives import linalg as L
from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(0)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
BATCHES = [(), (3,), (2, 2)]


def run(prim, *args, **params):
    """The implementation's results, after checking they have exactly the types the shape rule gives."""
    rule = prim.abstract_eval(*(TensorType(a.dtype, a.shape) for a in args), **params)
    with np.errstate(all="ignore"):  # as the eager interpreter runs them: inf and NaN are results here
        out = prim.impl(*args, **params)
    outs, rules = (list(out), rule) if prim.multiple_results else ([out], [rule])
    assert len(outs) == len(rules)
    for value, typ in zip(outs, rules, strict=True):
        assert (value.shape, value.dtype) == (typ.shape, typ.dtype), f"{prim}: {value.shape} {value.dtype} vs {typ}"
    return out


def tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def random(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def hermitian_positive_definite(batch, n, dtype):
    a = random((*batch, n, n), np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    return (a @ H(a) + n * np.eye(n)).astype(dtype)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def close(actual, expected, dtype, scale=1.0):
    np.testing.assert_allclose(np.asarray(actual, np.complex128), np.asarray(expected, np.complex128),
                               rtol=tol(dtype), atol=tol(dtype) * scale)


def f64(x):
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


# -- cholesky ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_cholesky_reconstructs(dtype, batch):
    a = hermitian_positive_definite(batch, 4, dtype)
    low = run(L.cholesky_p, a)
    assert np.all(np.triu(low, 1) == 0)
    close(low @ H(low), a, dtype, scale=10)
    close(low, np.linalg.cholesky(f64(a)), dtype, scale=10)


def test_cholesky_reads_only_the_lower_triangle():
    a = hermitian_positive_definite((), 3, np.float64)
    garbage = a + np.triu(np.full((3, 3), 100.0), 1)
    np.testing.assert_array_equal(run(L.cholesky_p, garbage), run(L.cholesky_p, a))


def test_cholesky_not_positive_definite_gives_nan_for_that_matrix_only():
    good = hermitian_positive_definite((), 2, np.float32)
    bad = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)  # eigenvalues 3 and -1
    low = run(L.cholesky_p, np.stack([good, bad]))
    close(low[0] @ low[0].T, good, np.float32, scale=10)
    # XLA's convention: NaN in the lower triangle, zeros above it
    np.testing.assert_array_equal(np.isnan(low[1]), [[True, False], [True, True]])
    assert low[1, 0, 1] == 0


@pytest.mark.parametrize("shape", [(0, 0), (0, 3, 3), (2, 0, 0)])
def test_cholesky_empty(shape):
    assert run(L.cholesky_p, np.zeros(shape, np.float32)).shape == shape


@pytest.mark.parametrize("operand, error, message", [
    (np.zeros((2, 3), np.float32), PrimitiveValueError, "square"),
    (np.zeros((3,), np.float32), PrimitiveValueError, "at least 2 dimensions"),
    (np.eye(2, dtype=np.int32), PrimitiveTypeError, "float or complex"),
])
def test_cholesky_bad_operands(operand, error, message):
    with pytest.raises(error, match=f"cholesky: .*{message}"):
        L.cholesky_p.abstract_eval(TensorType(operand.dtype, operand.shape))


# -- triangular_solve ----------------------------------------------------------------------------------------
def _op(a, lower, transpose_a, conjugate_a, unit_diagonal):
    """op(a) written out in float64: the chosen triangle, unit diagonal, conjugate, transpose."""
    a = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        a = a - np.diag(np.diag(a)) + np.eye(a.shape[-1])
    if conjugate_a:
        a = np.conj(a)
    return a.T if transpose_a else a


FLAGS = list(itertools.product([False, True], repeat=5))


@pytest.mark.parametrize("left_side, lower, transpose_a, conjugate_a, unit_diagonal", FLAGS)
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_triangular_solve_every_flag(dtype, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    n, k = 4, 3
    a = random((n, n), dtype) + 4 * np.eye(n, dtype=dtype)  # well conditioned on either triangle
    b = random((n, k) if left_side else (k, n), dtype)
    x = run(L.triangular_solve_p, a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
            conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    op = _op(f64(a), lower, transpose_a, conjugate_a, unit_diagonal)
    expected = np.linalg.solve(op, f64(b)) if left_side else np.linalg.solve(op.T, f64(b).T).T
    close(x, expected, dtype)


@pytest.mark.parametrize("batch", [(3,), (2, 2), (0,)])
def test_triangular_solve_batched(batch):
    a = random((*batch, 3, 3), np.float64) + 3 * np.eye(3)
    b = random((*batch, 3, 2), np.float64)
    x = run(L.triangular_solve_p, a, b, left_side=True, lower=True, transpose_a=False, conjugate_a=False,
            unit_diagonal=False)
    close(np.tril(a) @ x, b, np.float64)


def test_triangular_solve_zero_diagonal_gives_inf_like_xla():
    a = np.array([[0.0, 0.0], [1.0, 1.0]], np.float32)
    x = run(L.triangular_solve_p, a, np.ones((2, 2), np.float32), left_side=True, lower=True,
            transpose_a=False, conjugate_a=False, unit_diagonal=False)
    np.testing.assert_array_equal(x, [[np.inf, np.inf], [-np.inf, -np.inf]])  # recorded from jax 0.10.2


@pytest.mark.parametrize("a_shape, b_shape, b_dtype, left_side, error, message", [
    ((3, 3), (3, 2), np.float64, True, PrimitiveTypeError, "same dtype"),
    ((2, 3, 3), (3, 3, 2), np.float32, True, PrimitiveValueError, "batch dimensions differ"),
    ((3, 3), (2, 3, 2), np.float32, True, PrimitiveValueError, "rank of a"),
    ((3, 3), (2, 2), np.float32, True, PrimitiveValueError, "must have 3 rows"),
    ((3, 3), (3, 2), np.float32, False, PrimitiveValueError, "must have 3 columns"),
    ((3, 2), (3, 2), np.float32, True, PrimitiveValueError, "square"),
])
def test_triangular_solve_bad_operands(a_shape, b_shape, b_dtype, left_side, error, message):
    with pytest.raises(error, match=f"triangular_solve: .*{message}"):
        L.triangular_solve_p.abstract_eval(TensorType(np.float32, a_shape), TensorType(b_dtype, b_shape),
                                           left_side=left_side)


# -- lu ------------------------------------------------------------------------------------------------------
def _lu_factors(lu):
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    return lower, upper


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, m, n", [((), 4, 4), ((3,), 5, 3), ((2, 2), 3, 5), ((), 1, 1)])
def test_lu_reconstructs_with_partial_pivoting(dtype, batch, m, n):
    x = random((*batch, m, n), dtype)
    lu, pivots, permutation = run(L.lu_p, x)
    lower, upper = _lu_factors(f64(lu))
    permuted = np.take_along_axis(f64(x), permutation[..., :, None].astype(np.intp), axis=-2)
    close(lower @ upper, permuted, dtype, scale=10)
    assert np.all(np.abs(lower) <= 1 + 1e-6)  # partial pivoting keeps the multipliers at most 1
    np.testing.assert_array_equal(run(L.lu_pivots_to_permutation_p, pivots, permutation_size=m), permutation)


def test_lu_singular_matrices_match_lapack():
    # recorded from jax 0.10.2 (LAPACK getrf): a zero pivot leaves its column unscaled
    lu, pivots, permutation = run(L.lu_p, np.array([[0.0, 0, 1], [0, 0, 2], [1, 2, 3]], np.float32))
    np.testing.assert_array_equal(lu, [[1, 2, 3], [0, 0, 2], [0, 0, 1]])
    np.testing.assert_array_equal(pivots, [2, 1, 2])
    np.testing.assert_array_equal(permutation, [2, 1, 0])
    lu, pivots, permutation = run(L.lu_p, np.arange(6.0, dtype=np.float32).reshape(3, 2))
    np.testing.assert_array_equal(lu, [[4, 5], [0, 1], [0.5, 0.5]])
    np.testing.assert_array_equal(pivots, [2, 2])
    np.testing.assert_array_equal(permutation, [2, 0, 1])


@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (0, 3), (0, 2, 2)])
def test_lu_empty(shape):
    lu, pivots, permutation = run(L.lu_p, np.zeros(shape, np.float32))
    assert permutation.shape == (*shape[:-1],)
    np.testing.assert_array_equal(permutation, np.broadcast_to(np.arange(shape[-2]), permutation.shape))


def test_lu_pivots_to_permutation():
    out = run(L.lu_pivots_to_permutation_p, np.array([[2, 2, 2], [0, 1, 2]], np.int32), permutation_size=4)
    np.testing.assert_array_equal(out, [[2, 0, 1, 3], [0, 1, 2, 3]])  # first row recorded from jax 0.10.2
    with pytest.raises(PrimitiveValueError, match="smaller than the number of pivots"):
        L.lu_pivots_to_permutation_p.abstract_eval(TensorType(np.int32, (3,)), permutation_size=2)
    with pytest.raises(PrimitiveTypeError, match="int32"):
        L.lu_pivots_to_permutation_p.abstract_eval(TensorType(np.float32, (3,)), permutation_size=3)


# -- qr ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, m, n", [((), 4, 4), ((3,), 5, 3), ((2, 2), 3, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr_reconstructs(dtype, batch, m, n, full_matrices):
    x = random((*batch, m, n), dtype)
    q, r = run(L.qr_p, x, full_matrices=full_matrices)
    k = m if full_matrices else min(m, n)
    assert q.shape == (*batch, m, k) and r.shape == (*batch, k, n)
    close(q @ r, x, dtype, scale=10)
    close(H(q) @ q, np.broadcast_to(np.eye(k), (*batch, k, k)), dtype)
    assert np.all(np.tril(r, -1) == 0)


@pytest.mark.parametrize("shape, full_matrices, q_shape, r_shape", [
    ((0, 3), True, (0, 0), (0, 3)),
    ((3, 0), True, (3, 3), (3, 0)),
    ((3, 0), False, (3, 0), (0, 0)),
    ((0, 2, 3), False, (0, 2, 2), (0, 2, 3)),
])
def test_qr_empty(shape, full_matrices, q_shape, r_shape):
    q, r = run(L.qr_p, np.zeros(shape, np.float32), full_matrices=full_matrices)
    assert (q.shape, r.shape) == (q_shape, r_shape)


# -- eigh ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_eigh_reconstructs(dtype, batch):
    x = hermitian_positive_definite(batch, 4, dtype) - 4 * np.eye(4, dtype=dtype)  # indefinite
    v, w = run(L.eigh_p, x, lower=True, sort_eigenvalues=True)
    assert w.dtype == np.finfo(dtype).dtype
    close(w, np.linalg.eigvalsh(f64(x)), dtype, scale=10)
    assert np.all(np.diff(w, axis=-1) >= 0)
    close((v * w[..., None, :]) @ H(v), x, dtype, scale=10)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_reads_one_triangle(lower):
    x = hermitian_positive_definite((), 3, np.float64)
    garbage = x + (np.triu if lower else np.tril)(np.full((3, 3), 50.0), 1 if lower else -1)
    _, w = run(L.eigh_p, garbage, lower=lower, sort_eigenvalues=True)
    close(w, np.linalg.eigvalsh(x), np.float64)


def test_eigh_nan_input_gives_nan_for_that_matrix_only():
    x = np.stack([np.eye(2), np.full((2, 2), np.nan)]).astype(np.float32)
    v, w = run(L.eigh_p, x, lower=True, sort_eigenvalues=True)
    np.testing.assert_array_equal(w[0], [1, 1])
    assert np.isnan(w[1]).all() and np.isnan(v[1]).all()


# -- eig -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, result_dtype", [(np.float32, np.complex64), (np.float64, np.complex128),
                                                 (np.complex64, np.complex64), (np.complex128, np.complex128)])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_eig_left_and_right_eigenvectors(dtype, result_dtype, batch):
    x = random((*batch, 4, 4), dtype)
    w, left, right = run(L.eig_p, x, compute_left_eigenvectors=True, compute_right_eigenvectors=True)
    assert w.dtype == left.dtype == right.dtype == result_dtype
    xc = f64(x).astype(np.complex128)
    close(xc @ right, right * w[..., None, :], dtype, scale=10)  # x v_i = w_i v_i
    close(H(left) @ xc, w[..., :, None] * H(left), dtype, scale=10)  # u_i^H x = w_i u_i^H
    close(np.linalg.norm(left, axis=-2), np.ones(w.shape), dtype)
    expected = np.linalg.eigvals(xc)
    distance = np.abs(w[..., :, None] - expected[..., None, :]).min(axis=-1)  # to the nearest true eigenvalue
    assert distance.max() < 10 * tol(dtype)


@pytest.mark.parametrize("left, right, count", [(False, False, 1), (True, False, 2), (False, True, 2)])
def test_eig_result_count(left, right, count):
    x = random((2, 3, 3), np.float32)
    out = run(L.eig_p, x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)
    assert len(out) == count and out[0].shape == (2, 3)


def test_eig_known_values():
    w, right = run(L.eig_p, np.array([[2.0, 1.0], [0.0, 3.0]]), compute_left_eigenvectors=False,
                   compute_right_eigenvectors=True)
    np.testing.assert_allclose(w, [2, 3])
    np.testing.assert_allclose(np.abs(right[:, 1]), np.full(2, np.sqrt(0.5)))


# -- svd -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, m, n", [((), 4, 4), ((3,), 5, 3), ((2, 2), 3, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_reconstructs(dtype, batch, m, n, full_matrices):
    x = random((*batch, m, n), dtype)
    s, u, vh = run(L.svd_p, x, full_matrices=full_matrices, compute_uv=True)
    k = min(m, n)
    assert u.shape == (*batch, m, m if full_matrices else k) and vh.shape == (*batch, n if full_matrices else k, n)
    assert s.dtype == np.finfo(dtype).dtype
    close(s, np.linalg.svd(f64(x), compute_uv=False), dtype, scale=10)
    close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], x, dtype, scale=10)
    close(H(u) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2), dtype)


def test_svd_values_only_and_nan_input():
    x = np.stack([np.diag([3.0, 1.0]), np.full((2, 2), np.nan)]).astype(np.float32)
    (s,) = run(L.svd_p, x, full_matrices=False, compute_uv=False)
    np.testing.assert_array_equal(s[0], [3, 1])
    assert np.isnan(s[1]).all()
    s, u, vh = run(L.svd_p, x, full_matrices=True, compute_uv=True)
    assert np.isnan(u[1]).all() and np.isnan(vh[1]).all() and not np.isnan(u[0]).any()


@pytest.mark.parametrize("shape, full_matrices, u_shape, s_shape, vh_shape", [
    ((0, 3), True, (0, 0), (0,), (3, 3)),
    ((0, 3), False, (0, 0), (0,), (0, 3)),
    ((0, 2, 3), True, (0, 2, 2), (0, 2), (0, 3, 3)),
])
def test_svd_empty(shape, full_matrices, u_shape, s_shape, vh_shape):
    s, u, vh = run(L.svd_p, np.zeros(shape, np.float32), full_matrices=full_matrices, compute_uv=True)
    assert (u.shape, s.shape, vh.shape) == (u_shape, s_shape, vh_shape)


# -- shape rules shared by the factorizations --------------------------------------------------------------
SQUARE_ONLY = [(L.eigh_p, {"lower": True, "sort_eigenvalues": True}),
               (L.eig_p, {"compute_left_eigenvectors": False, "compute_right_eigenvectors": True})]
ANY_MATRIX = [(L.lu_p, {}), (L.qr_p, {"full_matrices": True}), (L.svd_p, {"full_matrices": True, "compute_uv": True})]


@pytest.mark.parametrize("prim, params", SQUARE_ONLY + ANY_MATRIX)
def test_factorizations_reject_vectors_and_integers(prim, params):
    with pytest.raises(PrimitiveValueError, match=f"{prim.name}: .*at least 2 dimensions"):
        prim.abstract_eval(TensorType(np.float32, (3,)), **params)
    with pytest.raises(PrimitiveTypeError, match=f"{prim.name}: .*float or complex, got int32"):
        prim.abstract_eval(TensorType(np.int32, (3, 3)), **params)


@pytest.mark.parametrize("prim, params", SQUARE_ONLY)
def test_square_only_factorizations_reject_rectangles(prim, params):
    with pytest.raises(PrimitiveValueError, match=f"{prim.name}: .*square"):
        prim.abstract_eval(TensorType(np.float32, (2, 3, 4)), **params)


def test_weak_type_is_kept_for_inexact_results_only():
    v, w = L.eigh_p.abstract_eval(TensorType(np.float32, (3, 3), True), lower=True, sort_eigenvalues=True)
    assert v.weak_type and w.weak_type
    _, pivots, permutation = L.lu_p.abstract_eval(TensorType(np.float32, (3, 3), True))
    assert not pivots.weak_type and not permutation.weak_type


def test_primitives_are_registered_in_the_linalg_family():
    from srcjax.transpiler.primitives.core import PRIMITIVES

    for name in ("cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh", "eig", "svd"):
        assert PRIMITIVES[name].family == "transpiler/primitives/linalg.py"
