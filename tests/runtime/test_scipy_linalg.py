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
