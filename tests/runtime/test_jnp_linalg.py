"""srcjax.numpy.linalg against numpy.linalg in float64: values, JAX's dtypes, batching and broadcasting, the
identities the factorizations satisfy, empty matrices and bad arguments."""

import numpy as np
import pytest

import srcjax.numpy as jnp

RNG = np.random.default_rng(2)
LA = jnp.linalg


def random(shape, dtype=np.float32):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def well_conditioned(shape, dtype=np.float32):
    n = shape[-1]
    return (random(shape, dtype) + 2 * n ** 0.5 * np.eye(n)).astype(dtype)


def spd(shape, dtype=np.float32):
    a = random(shape, np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def f64(x):
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def check(actual, expected, dtype=np.float32, *, rtol=None, scale=1.0):
    """``actual`` has JAX's dtype for the input ``dtype`` and matches the float64 ``expected``."""
    actual = np.asarray(actual)
    single = np.dtype(dtype) in (np.float32, np.complex64, np.int32)
    tol = rtol or (2e-4 if single else 1e-10)
    np.testing.assert_allclose(f64(actual), np.asarray(expected), rtol=tol, atol=tol * scale)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


# -- solves, inverses and determinants ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((4, 3, 3), (3,)), ((4, 3, 3), (4, 3, 2)), ((3, 3), (2, 3, 1)),
    ((2, 1, 3, 3), (5, 3, 2)), ((0, 0), (0,)),
])
def test_solve_matches_numpy_and_broadcasts(dtype, a_shape, b_shape):
    a, b = well_conditioned(a_shape, dtype), random(b_shape, dtype)
    x = LA.solve(a, b)
    assert x.dtype == dtype
    check(x, np.linalg.solve(f64(a), f64(b)), dtype, scale=10)


def test_solve_rejects_numpy_1_batched_vectors():
    with pytest.raises(ValueError, match=r"solve\(a, b\[\.\.\., None\]\)"):
        LA.solve(np.eye(2, dtype=np.float32)[None].repeat(3, 0), np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="square"):
        LA.solve(np.ones((2, 3), np.float32), np.ones(2, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 5, 5), (0, 0), (2, 0, 0)])
def test_inv(dtype, shape):
    a = well_conditioned(shape, dtype)
    out = LA.inv(a)
    assert out.dtype == dtype and out.shape == shape
    check(out, np.linalg.inv(f64(a)), dtype, scale=10)


def test_inv_of_singular_matrix_is_infinite_not_an_error():
    out = np.asarray(LA.inv(jnp.ones((2, 2))))
    assert np.isinf(out).all()  # recorded from jax 0.10.2: [[inf, -inf], [-inf, inf]]
    np.testing.assert_array_equal(np.sign(out), [[1, -1], [-1, 1]])


def test_integer_input_is_promoted_to_float32():
    a = np.array([[1, 2], [3, 4]], np.int32)
    assert LA.det(a).dtype == jnp.float32 and float(LA.det(a)) == -2.0  # recorded from jax 0.10.2
    assert LA.inv(a).dtype == jnp.float32
    assert LA.eigvals(a).dtype == jnp.complex64


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_det_and_slogdet(n, dtype):
    a = random((3, n, n), dtype)
    check(LA.det(a), np.linalg.det(f64(a)), dtype, scale=10)
    sign, logabsdet = LA.slogdet(a)
    expected_sign, expected_log = np.linalg.slogdet(f64(a))
    assert sign.dtype == dtype and logabsdet.dtype == np.finfo(dtype).dtype
    check(sign, expected_sign, dtype)
    check(logabsdet, expected_log, dtype)


def test_det_and_slogdet_of_singular_and_empty_matrices():
    assert float(LA.det(jnp.ones((4, 4)))) == 0.0
    sign, logabsdet = LA.slogdet(jnp.ones((3, 3)))
    assert float(sign) == 0.0 and float(logabsdet) == -np.inf  # recorded from jax 0.10.2
    sign, logabsdet = LA.slogdet(jnp.array([[0.0, 1.0], [1.0, 0.0]]))
    assert (float(sign), float(logabsdet)) == (-1.0, 0.0)
    assert float(LA.det(jnp.zeros((0, 0)))) == 1.0
    sign, logabsdet = LA.slogdet(jnp.zeros((0, 0)))
    assert (float(sign), float(logabsdet)) == (1.0, 0.0)
    with pytest.raises(ValueError, match=r"\[\.\.\., n, n\].*\(4, 3\)"):
        LA.det(jnp.ones((4, 3)))


@pytest.mark.parametrize("n, expected", [(3, [[1, 3], [0, 1]]), (0, [[1, 0], [0, 1]]), (1, [[1, 1], [0, 1]])])
def test_matrix_power_of_integers_stays_integer(n, expected):
    out = LA.matrix_power(np.array([[1, 1], [0, 1]], np.int32), n)
    assert out.dtype == jnp.int32
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("n", [-3, -1, 2, 5, 8])
def test_matrix_power_matches_numpy(n):
    a = well_conditioned((2, 3, 3)) / 3
    check(LA.matrix_power(a, n), np.linalg.matrix_power(f64(a), n), scale=10)
    with pytest.raises(TypeError, match="integer"):
        LA.matrix_power(a, 1.5)


# -- factorizations ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, upper):
    a = spd((2, 4, 4), dtype)
    factor = np.asarray(LA.cholesky(a, upper=upper))
    low = np.linalg.cholesky(f64(a))
    check(factor, H(low) if upper else low, dtype, scale=10)


def test_cholesky_symmetrizes_unless_told_not_to():
    a = np.array([[4.0, 2.0], [0.0, 3.0]], np.float32)  # lower triangle of a symmetric [[4, 2], [2, 3]]
    check(LA.cholesky(a, symmetrize_input=False), np.linalg.cholesky(np.array([[4.0, 0], [0, 3]])))
    check(LA.cholesky(a), np.linalg.cholesky(np.array([[4.0, 1], [1, 3]])))


def test_cholesky_of_indefinite_matrix_is_nan():
    assert np.isnan(np.asarray(LA.cholesky(jnp.array([[1.0, 2.0], [2.0, 1.0]])))[1, 1])


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 3, 5)])
@pytest.mark.parametrize("mode, complete", [("reduced", False), ("complete", True)])
def test_qr_reconstructs(shape, mode, complete):
    a = random(shape)
    q, r = LA.qr(a, mode=mode)
    m, n = shape[-2:]
    k = m if complete else min(m, n)
    assert q.shape == (*shape[:-2], m, k) and r.shape == (*shape[:-2], k, n)
    check(np.asarray(q) @ np.asarray(r), a, scale=10)
    np.testing.assert_array_equal(LA.qr(a, mode="r"), LA.qr(a).R)  # mode 'r' is the reduced R
    with pytest.raises(ValueError, match="unsupported mode 'economic'"):
        LA.qr(a, mode="economic")


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("shape, full", [((4, 4), True), ((5, 3), True), ((2, 3, 5), False), ((0, 3), True)])
def test_svd(dtype, shape, full):
    a = random(shape, dtype)
    u, s, vh = LA.svd(a, full_matrices=full)
    assert s.dtype == np.finfo(dtype).dtype
    check(s, np.linalg.svd(f64(a), compute_uv=False), dtype, scale=10)
    k = min(shape[-2:])
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    check((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, scale=10)
    check(LA.svd(a, compute_uv=False), s, dtype)
    check(LA.svdvals(a), s, dtype)


def test_svd_hermitian_uses_the_eigendecomposition():
    a = np.array([[2.0, 1.0], [1.0, -3.0]], np.float32)
    u, s, vh = LA.svd(a, hermitian=True)
    check(s, [3.1925824, 2.1925824])  # recorded from jax 0.10.2: |eigenvalues|, descending
    check(np.asarray(u) * np.asarray(s) @ np.asarray(vh), a, scale=10)
    check(np.asarray(vh) @ H(np.asarray(vh)), np.eye(2))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eigh_and_eigvalsh(dtype):
    a = spd((3, 4, 4), dtype) - 4 * np.eye(4, dtype=dtype)
    w, v = LA.eigh(a)
    assert w.dtype == np.finfo(dtype).dtype and v.dtype == dtype
    check(w, np.linalg.eigvalsh(f64(a)), dtype, scale=10)
    check(np.asarray(v) * np.asarray(w)[..., None, :] @ H(np.asarray(v)), a, dtype, scale=10)
    check(LA.eigvalsh(a), np.asarray(w), dtype)


def test_eigh_uplo_picks_the_triangle():
    a = np.array([[2.0, 1.0], [5.0, 2.0]], np.float32)
    check(LA.eigh(a, UPLO="U", symmetrize_input=False).eigenvalues, [1, 3])  # reads [[2, 1], [1, 2]]
    check(LA.eigh(a, UPLO="L", symmetrize_input=False).eigenvalues, [-3, 7])  # reads [[2, 5], [5, 2]]
    with pytest.raises(ValueError, match="UPLO"):
        LA.eigh(a, UPLO="X")


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eig_and_eigvals(dtype):
    a = random((2, 4, 4), dtype)
    w, v = LA.eig(a)
    assert w.dtype == v.dtype == np.dtype(np.complex64)
    check(f64(a) @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], dtype, scale=10)
    np.testing.assert_array_equal(LA.eigvals(a), w)


# -- pseudo-inverse, rank, least squares, condition numbers ----------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 2), (2, 4), (2, 3, 3), (0, 3)])
def test_pinv_matches_numpy(shape):
    a = random(shape)
    out = LA.pinv(a)
    assert out.shape == (*shape[:-2], shape[-1], shape[-2])
    check(out, np.linalg.pinv(f64(a)), scale=10)


def test_pinv_tolerance_drops_small_singular_values():
    a = jnp.diag(jnp.array([1.0, 0.1, 0.01]))
    check(LA.pinv(a, rtol=0.05), np.diag([1.0, 10.0, 0.0]))
    check(LA.pinv(a, rcond=0.05), np.diag([1.0, 10.0, 0.0]))
    check(LA.pinv(a, hermitian=True), np.diag([1.0, 10.0, 100.0]), rtol=1e-3)
    with pytest.raises(ValueError, match="only one of rtol and rcond"):
        LA.pinv(a, rtol=0.1, rcond=0.1)


def test_matrix_rank():
    assert LA.matrix_rank(jnp.ones((3, 3))).dtype == jnp.int32
    assert int(LA.matrix_rank(jnp.ones((3, 3)))) == 1
    assert int(LA.matrix_rank(jnp.ones(3))) == 1 and int(LA.matrix_rank(jnp.zeros(3))) == 0
    np.testing.assert_array_equal(LA.matrix_rank(random((2, 4, 3))), [3, 3])
    # JAX (unlike NumPy 2) compares a given rtol with the singular values as it is: recorded from jax 0.10.2
    assert int(LA.matrix_rank(jnp.diag(jnp.array([10.0, 1.0, 0.1])), rtol=0.05)) == 3
    np.testing.assert_array_equal(LA.matrix_rank(jnp.ones((2, 3, 3)), rtol=jnp.array([0.5, 5.0])), [1, 0])
    assert int(LA.matrix_rank(jnp.zeros((0, 3)))) == 0


@pytest.mark.parametrize("a_shape, b_shape", [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 3), (3,))])
def test_lstsq_matches_numpy(a_shape, b_shape):
    a, b = random(a_shape), random(b_shape)
    x, residual, rank, s = LA.lstsq(a, b)
    ex, eres, erank, es = np.linalg.lstsq(f64(a), f64(b))
    check(x, ex, scale=10)
    check(s, es, scale=10)
    assert rank.dtype == jnp.int32 and int(rank) == erank
    if eres.size:
        check(residual, eres, scale=10)


def test_lstsq_residual_shapes_are_jaxs():
    a = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    x, residual, rank, s = LA.lstsq(a, jnp.array([1.0, 2.0, 4.0]))
    check(x, [0.0714286, 0.5], rtol=1e-4)  # recorded from jax 0.10.2
    check(residual, [0.0714286], rtol=1e-3)
    assert int(rank) == 2
    _, residual, _, _ = LA.lstsq(a.T, jnp.array([1.0, 2.0]))
    assert residual.shape == (1,)  # JAX computes a residual even when NumPy would give none ...
    _, residual, _, _ = LA.lstsq(a.T, jnp.array([1.0, 2.0]), numpy_resid=True)
    assert residual.shape == (0,)  # ... unless numpy_resid=True
    x, residual, rank, s = LA.lstsq(jnp.zeros((0, 3)), jnp.zeros((0,)))
    assert (x.shape, residual.shape, int(rank), s.shape) == ((3,), (1,), 0, (0,))


def test_lstsq_rejects_bad_shapes():
    with pytest.raises(ValueError, match="leading dimensions"):
        LA.lstsq(jnp.ones((3, 2)), jnp.ones(2))
    with pytest.raises(TypeError, match="two-dimensional"):
        LA.lstsq(jnp.ones((2, 3, 3)), jnp.ones(3))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond_matches_numpy(p):
    a = well_conditioned((2, 3, 3))
    check(LA.cond(a, p), np.linalg.cond(f64(a), p), rtol=1e-3)


def test_cond_of_singular_matrix_is_infinite():
    assert float(LA.cond(jnp.ones((2, 2)), 1)) == np.inf


# -- norms ----------------------------------------------------------------------------------------------------
VECTOR_ORDS = [None, 2, 1, 0, 3, 0.5, -1, -2, np.inf, -np.inf]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_vector_norms(ord, dtype):
    x = random((3, 5), dtype)
    check(LA.norm(x, ord=ord, axis=1), np.linalg.norm(f64(x), ord=ord, axis=1), dtype)
    check(LA.norm(x, ord=ord, axis=0, keepdims=True), np.linalg.norm(f64(x), ord=ord, axis=0, keepdims=True), dtype)
    check(LA.norm(x[0], ord=ord), np.linalg.norm(f64(x[0]), ord=ord), dtype)
    assert LA.norm(x, ord=ord, axis=1).dtype == np.finfo(dtype).dtype


@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("axis", [(-2, -1), (2, 0)])
def test_matrix_norms(ord, axis):
    x = random((3, 4, 5))
    check(LA.norm(x, ord=ord, axis=axis), np.linalg.norm(f64(x), ord=ord, axis=axis), scale=10)
    out = LA.norm(x, ord=ord, axis=axis, keepdims=True)
    check(out, np.linalg.norm(f64(x), ord=ord, axis=axis, keepdims=True), scale=10)
    check(LA.norm(x[0], ord=ord), np.linalg.norm(f64(x[0]), ord=ord), scale=10)


def test_norm_defaults_and_array_api_forms():
    x = random((2, 3, 4))
    check(LA.norm(x), np.linalg.norm(f64(x)))
    assert LA.norm(x, keepdims=True).shape == (1, 1, 1)
    check(LA.vector_norm(x), np.linalg.norm(f64(x).ravel()))
    check(LA.vector_norm(x, axis=(0, 2), ord=1), np.abs(f64(x)).sum(axis=(0, 2)))
    assert LA.vector_norm(x, keepdims=True).shape == (1, 1, 1)
    check(LA.matrix_norm(x, ord="nuc"), np.linalg.norm(f64(x), ord="nuc", axis=(-2, -1)), scale=10)
    assert float(LA.norm(jnp.zeros((0, 3)), 2)) == 0.0 and float(LA.norm(jnp.zeros(0))) == 0.0
    assert LA.norm(np.arange(4, dtype=np.int32)).dtype == jnp.float32


@pytest.mark.parametrize("call, message", [
    (lambda: LA.norm(jnp.ones(3), ord="fro"), "invalid order 'fro' for a vector norm"),
    (lambda: LA.norm(jnp.ones((2, 2)), ord=3), "invalid order 3 for a matrix norm"),
    (lambda: LA.norm(jnp.ones((2, 2, 2)), axis=(0, 1, 2)), "one axis .* or two"),
    (lambda: LA.norm(jnp.ones((2, 2, 2)), ord=2), "1-D or 2-D"),
    (lambda: LA.norm(jnp.ones((2, 2)), axis=(0, 0)), "duplicate axes"),
    (lambda: LA.norm(jnp.ones((2, 2)), axis=2), "out of bounds"),
])
def test_norm_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- products and the array API's matrix functions -------------------------------------------------------------
def test_multi_dot_matches_numpy():
    arrays = [random((3,)), random((3, 10)), random((10, 2)), random((2, 6)), random((6,))]
    check(LA.multi_dot(arrays), np.linalg.multi_dot([f64(a) for a in arrays]), scale=10)
    arrays = [random((4, 3)), random((3, 5))]
    check(LA.multi_dot(arrays), f64(arrays[0]) @ f64(arrays[1]), scale=10)
    with pytest.raises(ValueError, match="at least two"):
        LA.multi_dot([random((3, 3))])
    with pytest.raises(ValueError, match="two-dimensional"):
        LA.multi_dot([random((3, 3)), random((2, 3, 3)), random((3, 3))])


def test_product_functions():
    a, b = random((2, 3, 3)), random((2, 3, 3))
    check(LA.matmul(a, b), f64(a) @ f64(b))
    check(LA.vecdot(a, b), np.sum(f64(a) * f64(b), axis=-1))
    check(LA.tensordot(a, b, axes=([2], [1])), np.tensordot(f64(a), f64(b), axes=([2], [1])))
    check(LA.outer(a[0, 0], b[0, 1]), np.outer(f64(a[0, 0]), f64(b[0, 1])))
    check(LA.cross(a, b), np.cross(f64(a), f64(b)))
    check(LA.trace(a, offset=1), np.trace(f64(a), offset=1, axis1=-2, axis2=-1))
    check(LA.diagonal(a, offset=-1), np.diagonal(f64(a), offset=-1, axis1=-2, axis2=-1))
    check(LA.matrix_transpose(a), np.swapaxes(f64(a), -1, -2))
    with pytest.raises(ValueError, match="one-dimensional"):
        LA.outer(jnp.ones(3), jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="3-vectors"):
        LA.cross(jnp.ones(2), jnp.ones(2))


def test_tensorinv_and_tensorsolve():
    a = well_conditioned((6, 6)).reshape(6, 2, 3)
    check(LA.tensorinv(a, ind=1), np.linalg.tensorinv(f64(a), ind=1), scale=10)
    b = random((6,))
    check(LA.tensorsolve(a, b), np.linalg.tensorsolve(f64(a), f64(b)), scale=10)
    moved = np.moveaxis(a, 0, 2)
    check(LA.tensorsolve(moved, b, axes=(0, 1)), np.linalg.tensorsolve(f64(moved), f64(b), axes=(0, 1)), scale=10)
    with pytest.raises(ValueError, match="not square"):
        LA.tensorinv(jnp.ones((2, 3)), ind=1)


@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh, LA.eig, LA.eigvals])
def test_square_matrix_functions_reject_vectors_and_rectangles(fn):
    with pytest.raises(ValueError, match=r"\[\.\.\., n, n\]"):
        fn(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\[\.\.\., n, n\]"):
        fn(jnp.ones(3))


def test_lists_are_not_arrays():
    with pytest.raises(TypeError, match="jnp.linalg.inv requires ndarray or scalar arguments"):
        LA.inv([[1.0, 0.0], [0.0, 1.0]])


def test_namespace_matches_jax():
    expected = {"cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
                "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm",
                "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve",
                "trace", "vecdot", "vector_norm"}  # dir(jax.numpy.linalg) in jax 0.10.2
    assert set(LA.__all__) == expected


# -- the same functions inside jit, where values are symbolic -----------------------------------------------
def _solve_then_det(a, b):
    return LA.solve(a, b), LA.det(a), LA.slogdet(a), LA.inv(a)


def _decompositions(a):
    return LA.qr(a), LA.svd(a), LA.eigh(a @ a.T), LA.eig(a), LA.cholesky(a @ a.T), LA.svd(a @ a.T, hermitian=True)


def _derived(a, b):
    return LA.pinv(a), LA.matrix_rank(a), LA.lstsq(a, b), LA.cond(a, 1), LA.norm(a, 2), LA.matrix_power(a, -3)


@pytest.mark.parametrize("fn, count", [(_solve_then_det, 2), (_decompositions, 1), (_derived, 2)])
def test_functions_compile_under_jit(fn, count):
    import srcjax

    args = [well_conditioned((3, 3)), random((3,))][:count]
    eager = srcjax.tree_util.tree_leaves(fn(*args))
    compiled = srcjax.tree_util.tree_leaves(srcjax.jit(fn)(*args))
    assert len(eager) == len(compiled)
    for e, c in zip(eager, compiled, strict=True):
        assert e.dtype == c.dtype
        np.testing.assert_allclose(np.asarray(c), np.asarray(e), rtol=1e-5, atol=1e-5)


def test_lstsq_numpy_resid_needs_a_concrete_rank():
    import srcjax

    def residual(a, b):
        return LA.lstsq(a, b, numpy_resid=True)[1]

    with pytest.raises(ValueError, match="numpy_resid=True needs a concrete rank"):
        srcjax.jit(residual)(random((4, 3)), random((4,)))


def test_lstsq_of_a_zero_matrix_and_rank_dtypes():
    # JAX keeps only positive singular values: a zero matrix has rank 0 and solution 0, not 0 * (1/0)
    x, residual, rank, s = LA.lstsq(jnp.zeros((3, 2)), jnp.array([1.0, 2.0, 3.0]))
    check(x, [0.0, 0.0])
    check(residual, [14.0])
    assert int(rank) == 0
    from srcjax.runtime.config import config

    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:  # the ranks are JAX's default integer, int64 under x64
        assert LA.lstsq(jnp.eye(2), jnp.ones(2))[2].dtype == jnp.int64
        assert LA.matrix_rank(jnp.eye(3)).dtype == jnp.int64
        assert LA.matrix_rank(jnp.ones((2, 3, 3))).dtype == jnp.int64
    finally:
        config.update("jax_enable_x64", saved)


def test_solves_of_an_empty_batch():
    # a batch of no matrices: JAX returns empty results (srcjax's row gather failed on the empty batch axis)
    a = jnp.zeros((0, 3, 3))
    assert LA.inv(a).shape == (0, 3, 3) and LA.solve(a, jnp.zeros((0, 3, 2))).shape == (0, 3, 2)
    assert LA.matrix_power(a, -2).shape == (0, 3, 3) and LA.cond(a, 1).shape == (0,)
    assert jnp.take_along_axis(jnp.ones((2, 0, 3)), jnp.zeros((2, 0, 3), jnp.int32), axis=2).shape == (2, 0, 3)


def test_svd_of_a_matrix_with_inf_gives_nan():
    # LAPACK's gesdd loops forever on an infinite entry when it computes the vectors (JAX 0.10.2's hangs): the
    # matrix gets NaNs, its neighbours in the stack their SVD
    a = np.stack([np.diag([3.0, 2.0, 1.0])] * 2).astype(np.float32)
    a[1, 0, 0] = np.inf
    u, s, vh = LA.svd(a)
    check(s[0], [3, 2, 1])
    assert np.isnan(np.asarray(s[1])).all() and np.isnan(np.asarray(u[1])).all()
    assert np.isnan(np.asarray(LA.pinv(a)[1])).all()
