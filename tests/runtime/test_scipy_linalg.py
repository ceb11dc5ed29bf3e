"""srcjax.scipy.linalg: SciPy's conventions (upper Cholesky factors, (w, v) from eigh, a = p l u, vector b with
one axis fewer than a) checked with float64 NumPy and the identities each result satisfies."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.scipy import linalg as sl

RNG = np.random.default_rng(4)


def random(shape, dtype=np.float32):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def spd(shape, dtype=np.float32):
    a = random(shape, np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    return (a @ H(a) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def H(x):
    return np.conj(np.swapaxes(np.asarray(x), -1, -2))


def f64(x):
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def check(actual, expected, scale=10.0):
    np.testing.assert_allclose(f64(actual), np.asarray(expected), rtol=2e-4, atol=2e-4 * scale)


# -- solve_triangular ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("trans, op", [(0, lambda a: a), ("N", lambda a: a), (1, lambda a: a.T), ("T", lambda a: a.T),
                                       (2, lambda a: np.conj(a).T), ("C", lambda a: np.conj(a).T)])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("b_shape", [(4,), (4, 2)])
def test_solve_triangular(trans, op, lower, b_shape):
    a = random((4, 4), np.complex64) + 4 * np.eye(4, dtype=np.complex64)
    b = random(b_shape, np.complex64)
    x = sl.solve_triangular(a, b, trans=trans, lower=lower)
    triangle = np.tril(f64(a)) if lower else np.triu(f64(a))
    check(x, np.linalg.solve(op(triangle), f64(b)))


def test_solve_triangular_batched_unit_diagonal_and_errors():
    a = random((3, 4, 4)) + 4 * np.eye(4, dtype=np.float32)
    b = random((3, 4))
    x = sl.solve_triangular(a, b, lower=True, unit_diagonal=True)
    unit = np.tril(f64(a), -1) + np.eye(4)
    check(x, np.linalg.solve(unit, f64(b)[..., None])[..., 0])
    x = sl.solve_triangular(a[0], random((2, 3, 4, 1)), lower=True)  # batch axes broadcast, as JAX's do
    assert x.shape == (2, 3, 4, 1)
    with pytest.raises(ValueError, match="invalid 'trans' value 5"):
        sl.solve_triangular(a, b, trans=5)
    with pytest.raises(ValueError, match="does not match a"):
        sl.solve_triangular(a, random((3, 5)))


# -- Cholesky ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cholesky_is_upper_by_default(dtype):
    a = spd((4, 4), dtype)
    low = np.linalg.cholesky(f64(a))
    check(sl.cholesky(a), H(low))
    check(sl.cholesky(a, lower=True), low)


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("b_shape", [(4,), (4, 3), (2, 4, 3)])
def test_cho_factor_and_cho_solve(lower, b_shape):
    a = spd((4, 4), np.complex64)
    c, flag = sl.cho_factor(a, lower=lower)
    assert flag is lower
    b = random(b_shape, np.complex64)
    expected = np.linalg.solve(f64(a), f64(b)) if len(b_shape) != 1 else np.linalg.solve(f64(a), f64(b))
    check(sl.cho_solve((c, lower), b), expected)


# -- LU ------------------------------------------------------------------------------------------------------
def test_lu_factor_and_lu_solve():
    a = random((4, 4)) + 2 * np.eye(4, dtype=np.float32)
    lu, pivots = sl.lu_factor(a)
    assert pivots.dtype == jnp.int32 and pivots.shape == (4,)
    b = random((4, 2))
    for trans, op in [(0, lambda m: m), (1, lambda m: m.T), (2, lambda m: np.conj(m).T)]:
        check(sl.lu_solve((lu, pivots), b, trans=trans), np.linalg.solve(op(f64(a)), f64(b)))
        check(sl.lu_solve((lu, pivots), b[:, 0], trans=trans), np.linalg.solve(op(f64(a)), f64(b[:, 0])))


def test_lu_solve_broadcasts_batches():
    a = random((3, 4, 4)) + 2 * np.eye(4, dtype=np.float32)
    b = random((3, 4))
    check(sl.lu_solve(sl.lu_factor(a), b), np.linalg.solve(f64(a), f64(b)[..., None])[..., 0])


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 4)])
def test_lu_reconstructs(shape):
    a = random(shape)
    p, l, u = sl.lu(a)
    k = min(shape[-2:])
    assert p.shape == (*shape[:-2], shape[-2], shape[-2]) and l.shape[-1] == k and u.shape[-2] == k
    check(np.asarray(p) @ np.asarray(l) @ np.asarray(u), f64(a))
    assert np.all(np.triu(np.asarray(l), 1) == 0) and np.all(np.tril(np.asarray(u), -1) == 0)
    pl, u2 = sl.lu(a, permute_l=True)
    check(np.asarray(pl) @ np.asarray(u2), f64(a))


def test_lu_known_permutation():
    p, l, u = sl.lu(jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]]))
    np.testing.assert_array_equal(p, [[0, 1, 0], [0, 0, 1], [1, 0, 0]])  # recorded from jax 0.10.2
    check(u, [[5, 7], [0, 0.6]])


# -- QR, SVD, eigh and the rest ------------------------------------------------------------------------------
def test_qr_modes():
    a = random((5, 3))
    q, r = sl.qr(a)
    assert (q.shape, r.shape) == ((5, 5), (5, 3))
    check(np.asarray(q) @ np.asarray(r), f64(a))
    q, r = sl.qr(a, mode="economic")
    assert (q.shape, r.shape) == ((5, 3), (3, 3))
    (r_only,) = sl.qr(a, mode="r")
    assert r_only.shape == (5, 3)
    with pytest.raises(ValueError, match="unsupported mode 'reduced'"):
        sl.qr(a, mode="reduced")


def test_svd_eigh_det_inv():
    a = random((4, 3))
    u, s, vh = sl.svd(a, full_matrices=False)
    check((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), f64(a))
    check(sl.svd(a, compute_uv=False), np.linalg.svd(f64(a), compute_uv=False))
    m = spd((3, 3))
    w, v = sl.eigh(m)
    check(w, np.linalg.eigvalsh(f64(m)))
    check(np.asarray(v) * np.asarray(w) @ H(v), f64(m))
    check(sl.eigh(m, eigvals_only=True), np.linalg.eigvalsh(f64(m)))
    with pytest.raises(NotImplementedError, match="b=None"):
        sl.eigh(m, m)
    check(sl.det(m), np.linalg.det(f64(m)), scale=100)
    check(sl.inv(m), np.linalg.inv(f64(m)))


@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos"])
@pytest.mark.parametrize("b_shape", [(3,), (3, 2)])
def test_solve(assume_a, b_shape):
    a = spd((3, 3))
    b = random(b_shape)
    check(sl.solve(a, b, assume_a=assume_a), np.linalg.solve(f64(a), f64(b)))


def test_solve_rejects_unknown_assumptions():
    with pytest.raises(ValueError, match="assume_a must be one of"):
        sl.solve(jnp.eye(2), jnp.ones(2), assume_a="xx")


def test_block_diag():
    out = sl.block_diag(jnp.ones((1, 2)), 2.0, jnp.array([3, 4]), jnp.ones((2, 1), jnp.int32))
    expected = np.zeros((5, 6))
    expected[0, :2] = 1
    expected[1, 2] = 2
    expected[2, 3:5] = [3, 4]
    expected[3:5, 5] = 1
    assert out.dtype == jnp.float32  # recorded from jax 0.10.2: shape (5, 6), float32
    np.testing.assert_array_equal(out, expected)
    empty = sl.block_diag()
    assert empty.shape == (1, 0) and empty.dtype == jnp.float32
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        sl.block_diag(jnp.ones((1, 1, 1)))


@pytest.mark.parametrize("scale", [1e-3, 0.2, 1.0, 3.0, 40.0])
def test_expm_against_exact_exponentials(scale):
    """expm by Pade degree and squarings chosen by the norm: exact oracles for symmetric matrices (through the
    eigendecomposition), rotations and nilpotent matrices, in float32 and, batched, under jit."""
    from srcjax.scipy.linalg import expm

    rng = np.random.default_rng(int(scale * 1000))
    s = rng.normal(size=(4, 4)) * scale / 4
    s = s + s.T
    w, v = np.linalg.eigh(s)
    exact = (v * np.exp(w)) @ v.T
    got = np.asarray(expm(s.astype(np.float32)))
    np.testing.assert_allclose(got, exact, rtol=2e-5 * max(1.0, scale), atol=1e-6 * np.abs(exact).max())
    t = scale
    rotation = np.array([[0.0, -t], [t, 0.0]])
    want = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    batched = srcjax.jit(expm)(np.stack([rotation, np.triu(np.ones((2, 2)), 1) * t]).astype(np.float32))
    np.testing.assert_allclose(np.asarray(batched[0]), want, atol=2e-5 * max(1.0, t))
    np.testing.assert_allclose(np.asarray(batched[1]), [[1.0, t], [0.0, 1.0]], rtol=1e-6)


def test_expm_upper_triangular_too_many_squarings_and_gradient():
    from srcjax.scipy.linalg import expm
    from srcjax.test_util import check_grads

    t = np.triu(np.arange(1.0, 10.0).reshape(3, 3) / 10).astype(np.float32)
    np.testing.assert_allclose(np.asarray(expm(t, upper_triangular=True)), np.asarray(expm(t)), rtol=1e-6)
    assert np.isnan(np.asarray(expm(np.eye(2, dtype=np.float32) * 1e6, max_squarings=4))).all()
    with pytest.raises(ValueError, match="Expected A to be a"):
        expm(np.ones((2, 3), np.float32))
    check_grads(lambda m: expm(m), (np.array([[0.3, -0.2], [0.1, 0.4]]),), order=1, modes=("rev",))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cholesky_reads_one_triangle_without_symmetrizing(dtype):
    # SciPy's and JAX's cholesky read the upper triangle (or the lower with lower=True) as it is; srcjax's
    # symmetrized a first, so a non-Hermitian a gave another factor
    a = spd((4, 4), dtype)
    noise = random((4, 4), dtype)
    upper_read, lower_read = a + np.tril(noise, -1), a + np.triu(noise, 1)  # noise where it is not read
    check(sl.cholesky(upper_read), H(np.linalg.cholesky(f64(a))))
    check(sl.cholesky(lower_read, lower=True), np.linalg.cholesky(f64(a)))
    check(sl.cho_factor(upper_read)[0], H(np.linalg.cholesky(f64(a))))
    b = random((4, 2), dtype)
    check(sl.solve(upper_read, b, assume_a="pos"), np.linalg.solve(f64(a), f64(b)))
    check(sl.solve(lower_read, b, assume_a="pos", lower=True), np.linalg.solve(f64(a), f64(b)))


def test_triangular_and_factor_solves_take_jaxs_vectors():
    # JAX's rule: b is a vector when it has one axis, or one axis fewer than a and a's size; otherwise a stack of
    # matrices broadcast against a's batch
    a = np.triu(random((2, 4, 4))) + 4 * np.eye(4, dtype=np.float32)
    v, m = random((4,)), random((4, 3))
    check(sl.solve_triangular(a, v), np.linalg.solve(f64(a), f64(v)[:, None])[..., 0])
    check(sl.solve_triangular(a, m), np.linalg.solve(f64(a), f64(m)))
    check(sl.lu_solve(sl.lu_factor(a), m), np.linalg.solve(f64(a), f64(m)))
    c = sl.cho_factor(a @ H(a))
    check(sl.cho_solve(c, v), np.linalg.solve(f64(a) @ H(f64(a)), f64(v)[:, None])[..., 0], scale=10)


# -- structured matrices and the polar decomposition ---------------------------------------------------------
def test_toeplitz_hankel_circulant():
    c, r = np.array([1.0, 2.0, 3.0]), np.array([9.0, 5.0, 6.0, 7.0])
    check(sl.toeplitz(c, r), [[1, 5, 6, 7], [2, 1, 5, 6], [3, 2, 1, 5]])  # r[0] is not used
    check(sl.toeplitz(np.array([1.0, 2j])), [[1, -2j], [2j, 1]])  # r defaults to conj(c)
    assert sl.toeplitz(np.array([1, 2], np.int32)).dtype == jnp.int32
    check(sl.toeplitz(np.stack([c, 2 * c]), r[:2])[1], [[2, 5], [4, 2], [6, 4]])  # leading axes are a batch
    check(sl.hankel(c, r), [[1, 2, 3, 5], [2, 3, 5, 6], [3, 5, 6, 7]])
    check(sl.hankel(c), [[1, 2, 3], [2, 3, 0], [3, 0, 0]])
    check(sl.circulant(c), [[1, 3, 2], [2, 1, 3], [3, 2, 1]])
    assert sl.toeplitz(np.zeros(0), r).shape == (0, 4)
    # a gradient reaches each entry of c and r as often as it appears
    grad_c, grad_r = srcjax.grad(lambda c, r: jnp.sum(sl.toeplitz(c, r)), argnums=(0, 1))(c, r)
    check(grad_c, [3, 2, 1])
    check(grad_r, [0, 3, 2, 1])


@pytest.mark.parametrize("shape, side", [((4, 4), "right"), ((5, 3), "right"), ((3, 5), "left"), ((2, 3, 3), "left")])
def test_polar(shape, side):
    a = random(shape, np.complex64)
    u, p = sl.polar(a, side=side)
    check(u @ p if side == "right" else p @ u, a)
    check(p, H(p))
    assert np.all(np.linalg.eigvalsh(f64(p)) > -1e-4)
    k = min(shape[-2:])
    check(H(u) @ u if side == "right" else u @ H(u), np.broadcast_to(np.eye(k), (*shape[:-2], k, k)))
    u_svd, p_svd = sl.polar(a, side=side, method="svd")
    check(u_svd, u)


def test_expm_frechet_is_expms_directional_derivative():
    # for commuting A and E (E a polynomial in A) the derivative is E expm(A)
    a = random((3, 3)) * 0.5
    e = a @ a - 2 * a
    value, derivative = sl.expm_frechet(a, e)
    check(value, sl.expm(a))
    check(derivative, np.asarray(e, np.float64) @ f64(sl.expm(a)))
    check(sl.expm_frechet(a, e, compute_expm=False), derivative)
    with pytest.raises(ValueError, match="same shape"):
        sl.expm_frechet(a, random((2, 2)))


def test_expm_of_empty_matrices_and_rectangular_lu_factor():
    # JAX returns the empty exponential (srcjax's norm reduced an empty array) and factors rectangular matrices
    assert sl.expm(jnp.zeros((0, 0))).shape == (0, 0) and sl.expm(jnp.zeros((2, 0, 0))).shape == (2, 0, 0)
    a = random((3, 5))
    lu, pivots = sl.lu_factor(a)
    assert lu.shape == (3, 5) and pivots.shape == (3,)
    p, low, up = sl.lu(a)
    check(np.tril(np.asarray(lu)[:, :3], -1) + np.eye(3), low)
    check(np.triu(np.asarray(lu)), up)


def test_qr_with_column_pivoting():
    # LAPACK geqp3's column order (JAX's); srcjax refused pivoting=True
    a = np.array([[1.0, 0.0, 2.0, 1.0], [0.0, 3.0, 1.0, 0.0], [2.0, 1.0, 0.0, 4.0]], np.float32)
    q, r, p = sl.qr(a, pivoting=True)
    np.testing.assert_array_equal(p, [3, 1, 2, 0])  # jax 0.10.2's
    assert p.dtype == jnp.int32
    check(r, [[-4.12311, -0.97014, -0.48507, -2.18282], [0, -3.00979, -0.8404, 0.03909],
              [0, 0, -2.01456, -0.48349]])  # jax 0.10.2's
    check(q @ r, a[:, [3, 1, 2, 0]])
    np.testing.assert_array_equal(sl.qr(np.diag([1.0, 3.0, 2.0, 5.0]), pivoting=True)[2], [3, 1, 2, 0])
    r_only, p_r = sl.qr(a, mode="r", pivoting=True)
    check(r_only, r)
    batch = random((2, 5, 3))
    q, r, p = srcjax.jit(lambda x: sl.qr(x, mode="economic", pivoting=True))(batch)
    for i in range(2):
        check(q[i] @ r[i], batch[i][:, np.asarray(p[i])])
        assert np.all(np.diff(np.abs(np.diag(np.asarray(r[i])))) <= 1e-5)  # |r_kk| does not increase
    # the permutation is a constant to derivatives: the gradient is the unpivoted QR's, permuted back
    grad = srcjax.grad(lambda x: jnp.sum(sl.qr(x, mode="r", pivoting=True)[0]))(a)
    perm = np.asarray(p_r)
    unpivoted = srcjax.grad(lambda x: jnp.sum(sl.qr(x, mode="r")[0]))(a[:, perm])
    check(np.asarray(grad)[:, perm], unpivoted)
