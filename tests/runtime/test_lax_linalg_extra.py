"""``lax.linalg``'s less common functions (tridiagonal_solve, householder_product, ormqr, hessenberg,
tridiagonal, schur, symmetric_product, cholesky_update, qdwh, eig's enable_eigvec_derivs, and the algorithm
enums) against NumPy float64
references and numbers recorded from JAX 0.10.2 on the CPU; ``lax.create_token``/``after_all``; and
``experimental.mesh_utils``/``multihost_utils`` over four virtual devices."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.lax import linalg

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def dense(dl, d, du):
    """The tridiagonal matrix of the three diagonals (dl[0] and du[-1] ignored), in float64."""
    m = d.shape[-1]
    a = np.zeros(d.shape + (m,))
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return a


# -- tridiagonal_solve ---------------------------------------------------------------------------------
def test_tridiagonal_solve_values_pivoting_singular_and_batches():
    dl, d, du, b = randn(2, 5), randn(2, 5), randn(2, 5), randn(2, 5, 3)
    d[0, 0] = 1e-3  # (row 0 must be swapped with row 1: gtsv's partial pivoting)
    dl[:, 0], du[:, -1] = 7.0, 9.0  # ignored, as in LAPACK
    x = linalg.tridiagonal_solve(dl, d, du, b)
    np.testing.assert_allclose(x, np.linalg.solve(dense(dl, d, du), b), rtol=2e-4, atol=1e-4)
    one = linalg.tridiagonal_solve(dl[:1, :1], d[:1, :1], du[:1, :1], b[:1, :1])  # m = 1
    np.testing.assert_allclose(one, b[:1, :1] / d[:1, :1, None], rtol=1e-6)
    # an exactly zero pivot (gtsv's info > 0): that system's solution is NaN, the other's is not
    singular = linalg.tridiagonal_solve(dl, d * np.array([[1.0], [0.0]], np.float32), du * 0, b)
    assert np.isnan(singular[1]).all() and not np.isnan(singular[0]).any()
    # vmap over the diagonals (and over b alone) equals the batched call
    np.testing.assert_array_equal(srcjax.vmap(linalg.tridiagonal_solve)(dl, d, du, b), x)
    by_b = srcjax.vmap(linalg.tridiagonal_solve, (None, None, None, 0))(dl[0], d[0], du[0], b)
    np.testing.assert_allclose(by_b[0], x[0], rtol=1e-6)
    assert linalg.tridiagonal_solve(*(np.zeros((0,), np.float32),) * 3, np.ones((0, 2), np.float32)).shape == (0, 2)
    # a long system called eagerly runs compiled (linalg_eager.py): the same numbers
    dl, d, du, b = randn(40), randn(40) + 4, randn(40), randn(40, 1)
    np.testing.assert_allclose(linalg.tridiagonal_solve(dl, d, du, b), np.linalg.solve(dense(dl, d, du), b),
                               rtol=1e-5, atol=1e-6)


def test_tridiagonal_solve_gradient_is_jax_implicit_one():
    """With x = A^-1 b and loss sum(c x): d/db = A^-T c =: g; d/dA = -g x^T, read on the three diagonals."""
    dl, d, du, b, c = randn(4), randn(4) + 3, randn(4), randn(4, 2), randn(4, 2)
    grads = srcjax.grad(lambda *a: jnp.sum(linalg.tridiagonal_solve(*a) * c), (0, 1, 2, 3))(dl, d, du, b)
    a = dense(dl, d, du)
    x = np.linalg.solve(a, b)
    g = np.linalg.solve(a.T, c)
    da = -g @ x.T
    expected = [np.r_[0, np.diag(da, -1)], np.diag(da), np.r_[np.diag(da, 1), 0], g]
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_tridiagonal_solve_perturbed_and_errors():
    # a singular system: JAX 0.10.2's perturbed pivots give these numbers (float32)
    x = linalg.tridiagonal_solve(np.array([0, 1, 1], np.float32), np.array([0, 0, 4], np.float32),
                                 np.zeros(3, np.float32), np.ones((3, 1), np.float32), perturb_singular=True)
    np.testing.assert_array_equal(x[:, 0], [1.0, 33554432.0, -8388608.0])
    dl, d, du, b = randn(5), randn(5) + 4, randn(5), randn(5, 2)
    np.testing.assert_allclose(linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True),
                               np.linalg.solve(dense(dl, d, du), b), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="rank at least 2"):
        linalg.tridiagonal_solve(dl, d, du, b[:, 0])
    with pytest.raises(TypeError, match="does not accept dtype int32 at position 0"):
        linalg.tridiagonal_solve(dl.astype(np.int32), d, du, b)
    with pytest.raises(TypeError, match="same dtypes, got float32, float32, float32, float16"):
        linalg.tridiagonal_solve(dl, d, du, b.astype(np.float16))
    with pytest.raises(TypeError, match="all diagonal arguments have the same shape"):
        linalg.tridiagonal_solve(dl[:3], d, du, b)
    with pytest.raises(TypeError, match="as a JAX value"):
        linalg.tridiagonal_solve(list(dl), d, du, b)


# -- Householder products, Hessenberg and tridiagonal reductions ----------------------------------------
def test_householder_product_and_ormqr_match_numpy_q():
    a = randn(5, 3)
    h, taus = np.linalg.qr(a, mode="raw")  # (LAPACK geqrf's reflectors, transposed)
    q = np.linalg.qr(a.astype(np.float64))[0]
    q_ours = linalg.householder_product(h.T, taus)
    np.testing.assert_allclose(np.abs(q_ours), np.abs(q), atol=1e-5)  # (the same Q, up to column signs)
    np.testing.assert_allclose(np.asarray(q_ours).T @ q_ours, np.eye(3), atol=1e-5)
    c = randn(5, 2)
    full_q = np.asarray(linalg.ormqr(h.T, taus, np.eye(5, dtype=np.float32)))
    np.testing.assert_allclose(full_q[:, :3], q_ours, atol=1e-6)
    np.testing.assert_allclose(linalg.ormqr(h.T, taus, c, transpose=True), full_q.T @ c, atol=1e-5)
    np.testing.assert_allclose(linalg.ormqr(h.T, taus, c.T, left=False), c.T @ full_q, atol=1e-5)
    # a reflector with tau = 0 is not applied (LAPACK's larf), so a NaN in its vector stays in its column (JAX's)
    nan_v = np.array([[1, 0], [np.nan, 1], [2, 3]], np.float32)
    np.testing.assert_array_equal(linalg.householder_product(nan_v, np.array([0, 1.5], np.float32)),
                                  [[1, 0], [np.nan, -0.5], [0, -4.5]])
    nan_a = np.eye(4, dtype=np.float32)
    nan_a[2, 1] = np.nan
    np.testing.assert_array_equal(linalg.hessenberg(nan_a)[0], nan_a)
    # weakly typed operands give weakly typed results, as JAX's primitives type them
    assert linalg.householder_product(lax.full((3, 2), 2.0), lax.full((2,), 0.5)).weak_type
    assert all(r.weak_type for r in linalg.tridiagonal(lax.full((3, 3), 2.0)))
    assert not linalg.hessenberg(np.eye(3, dtype=np.float32))[0].weak_type
    with pytest.raises(ValueError, match="at least as many rows as columns"):
        linalg.householder_product(h, taus)
    with pytest.raises(ValueError, match="same number of rows"):
        linalg.ormqr(h.T, taus, c.T)


def _q_below_subdiagonal(packed, taus):
    """Q = H_1 ... H_{n-1} from reflectors stored below the first subdiagonal (Q's first row and column are e_1)."""
    n = packed.shape[-1]
    reflectors = np.tril(np.asarray(packed), -1)[1:, :n - 1]
    q = np.eye(n)
    q[1:, 1:] = linalg.householder_product(reflectors, taus)
    return q


def test_hessenberg_and_tridiagonal_reductions():
    a = (np.arange(16.0).reshape(4, 4) + 3 * np.eye(4)).astype(np.float32)
    packed, taus = linalg.hessenberg(a)
    np.testing.assert_allclose(taus, [1.2672611474990845, 1.1499537229537964, 0.0], rtol=1e-5)  # JAX 0.10.2's
    q = _q_below_subdiagonal(packed, taus)
    np.testing.assert_allclose(q @ np.triu(np.asarray(packed, np.float64), -1) @ q.T, a, atol=2e-4)
    # tridiagonal: d, e and taus as JAX 0.10.2 gives them; Q T Q^T = the symmetric matrix of a's lower triangle
    packed, d, e, taus = linalg.tridiagonal(a)
    # (float32 rounding of entries of 36 after cancellation: 2e-5 absolute)
    np.testing.assert_allclose(d, [3.0, 35.99999237060547, 1.0463740825653076, 1.9536226987838745], atol=2e-5)
    np.testing.assert_allclose(e, [-14.966629981994629, -8.598169326782227, 0.34007883071899414], atol=2e-5)
    np.testing.assert_allclose(taus, [1.2672611474990845, 1.224795937538147, 0.0], atol=2e-5)
    np.testing.assert_array_equal(np.triu(packed, 1), np.triu(a, 1))  # (the other triangle is left alone)
    t = np.diag(np.asarray(d, np.float64)) + np.diag(e, -1) + np.diag(e, 1)
    q = _q_below_subdiagonal(np.tril(packed, -1), taus)
    np.testing.assert_allclose(q @ t @ q.T, np.tril(a) + np.tril(a, -1).T, atol=2e-4)
    # the upper triangle's matrix: the same eigenvalues as its tridiagonal form's
    _, d, e, _ = linalg.tridiagonal(a, lower=False)
    np.testing.assert_allclose(np.linalg.eigvalsh(np.diag(d) + np.diag(e, 1) + np.diag(e, -1)),
                               np.linalg.eigvalsh(np.triu(a) + np.triu(a, 1).T), rtol=1e-4)
    with pytest.raises(ValueError, match="must be a square matrix"):
        linalg.tridiagonal(np.zeros((2, 3), np.float32))
    # schur (scipy.linalg.schur's host computation): x = Q T Q^T; T alone comes in a list, as JAX's does
    t, q = linalg.schur(a)
    np.testing.assert_allclose(np.asarray(q, np.float64) @ t @ np.asarray(q).T, a, atol=2e-4)
    (t_alone,) = linalg.schur(a, compute_schur_vectors=False)
    np.testing.assert_array_equal(t_alone, t)


# -- symmetric_product, cholesky_update, qdwh -----------------------------------------------------------
def test_symmetric_product_and_cholesky_update():
    a, c = randn(2, 4, 3), randn(2, 4, 4)
    out = linalg.symmetric_product(a, c, alpha=2.0, beta=-0.5)
    np.testing.assert_allclose(out, 2 * a @ np.swapaxes(a, -1, -2) - 0.5 * c, rtol=1e-5, atol=1e-5)
    mirrored = linalg.symmetric_product(a, c, symmetrize_output=True)
    np.testing.assert_array_equal(mirrored, np.swapaxes(mirrored, -1, -2))
    with pytest.raises(TypeError, match="symmetric_product does not accept dtype int32"):
        linalg.symmetric_product(a.astype(np.int32), c.astype(np.int32))
    s = a[0].T @ a[0] + np.eye(3, dtype=np.float32)
    r, w = np.linalg.cholesky(s).T, randn(3)
    updated = linalg.cholesky_update(r, w)
    np.testing.assert_allclose(updated, np.linalg.cholesky(s.astype(np.float64) + np.outer(w, w)).T, rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(TypeError, match="must have a rank of exactly 2"):
        linalg.cholesky_update(np.stack([r, r]), np.stack([w, w]))


def test_qdwh_polar_factors_and_iteration_count():
    x = np.array([[4, 1, 0], [1, 3, 1], [0, 2, 5], [1, 0, 1]], np.float32)
    u, h, iterations, converged = linalg.qdwh(x)
    assert (int(iterations), bool(converged)) == (4, True)  # JAX 0.10.2's
    np.testing.assert_allclose(u[0], [0.9567646384239197, 0.045142196118831635, -0.02561289817094803], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(u).T @ u, np.eye(3), atol=1e-5)
    np.testing.assert_allclose(u @ h, x, atol=1e-5)
    assert np.linalg.eigvalsh(np.asarray(h, np.float64)).min() > 0
    assert (lambda r: (int(r[2]), bool(r[3])))(linalg.qdwh(x, max_iterations=2)) == (2, False)  # JAX's too
    with pytest.raises(ValueError, match="M >= N"):
        linalg.qdwh(x.T)


def test_algorithm_enums_as_jax_cpu_takes_them():
    x = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    np.testing.assert_allclose(linalg.eigh(x, implementation=linalg.EighImplementation.QR)[1],
                               np.linalg.eigvalsh(x), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="Jacobi implementation is not supported on CPU"):
        linalg.eigh(x, implementation=linalg.EighImplementation.JACOBI)
    with pytest.raises(ValueError, match="Only the lapack implementation"):
        linalg.eig(x, implementation=linalg.EigImplementation.MAGMA)
    linalg.eig(x, implementation=linalg.EigImplementation.LAPACK)
    for algorithm in (linalg.SvdAlgorithm.QR, linalg.SvdAlgorithm.DIVIDE_AND_CONQUER):
        np.testing.assert_allclose(linalg.svd(x, algorithm=algorithm)[1], np.linalg.svd(x)[1], rtol=1e-6)
    with pytest.raises(NotImplementedError, match="Jacobi and Polar"):
        linalg.svd(x, algorithm=linalg.SvdAlgorithm.POLAR)
    assert linalg.svd(np.zeros((0, 2), np.float32), algorithm=linalg.SvdAlgorithm.JACOBI)[1].shape == (0,)


def test_eig_eigenvector_derivatives_when_opted_in(x64):
    """With enable_eigvec_derivs, eig's eigenvectors (LAPACK's normalisation) have JAX's derivatives: here against
    central differences; without it, JAX's refusal."""
    a = np.diag([1.0, 2.0, 4.0, 7.0]) + 0.3 * RNG.standard_normal((4, 4))
    da = RNG.standard_normal((4, 4))
    eig = lambda a: linalg.eig(a, enable_eigvec_derivs=True)  # noqa: E731
    (w, vl, vr), (dw, dvl, dvr) = srcjax.jvp(eig, (a,), (da,))
    h = 1e-6
    for k, tangent in enumerate((dw, dvl, dvr)):
        central = (np.asarray(eig(a + h * da)[k]) - np.asarray(eig(a - h * da)[k])) / (2 * h)
        np.testing.assert_allclose(tangent, central, atol=1e-6)
    with pytest.raises(NotImplementedError, match="Pass enable_eigvec_derivs=True"):
        srcjax.jvp(lambda a: linalg.eig(a)[2], (a,), (da,))


# -- tokens ---------------------------------------------------------------------------------------------
def test_tokens_pass_through_jit_and_check_operands():
    token = lax.create_token()
    f = srcjax.jit(lambda t, x: (lax.after_all(t, lax.create_token(x)), x + 1))
    new_token, y = f(token, 1.0)
    assert isinstance(new_token, type(token)) and float(y) == 2.0
    assert new_token.block_until_ready() is None
    with pytest.raises(TypeError, match="Arguments to after_all must be tokens"):
        lax.after_all(token, 1.0)


# -- mesh_utils and multihost_utils ---------------------------------------------------------------------
def test_mesh_and_multihost_utils(four_devices):
    from srcjax.experimental import mesh_utils, multihost_utils
    from srcjax.sharding import Mesh, NamedSharding, PartitionSpec as P

    devices = srcjax.devices()
    mesh = mesh_utils.create_device_mesh((2, 2))
    assert mesh.shape == (2, 2) and list(mesh.flat) == devices
    assert list(mesh_utils.create_device_mesh([2], devices[2:])) == devices[2:]
    with pytest.raises(ValueError, match="Number of devices 4 must equal the product of mesh_shape"):
        mesh_utils.create_device_mesh((3,))
    hybrid = mesh_utils.create_hybrid_device_mesh((2, 2), (1, 1), process_is_granule=True)
    assert (hybrid == mesh).all()
    with pytest.raises(ValueError, match="does not have attribute slice_index"):
        mesh_utils.create_hybrid_device_mesh((2, 2), (1, 1))
    gathered = multihost_utils.process_allgather({"a": np.arange(3.0), "s": 2.0})
    assert gathered["a"].shape == (1, 3) and gathered["s"].shape == (1,)
    assert multihost_utils.process_allgather(np.arange(3.0), tiled=True).shape == (3,)
    np.testing.assert_array_equal(multihost_utils.broadcast_one_to_all(jnp.ones(2)), np.ones(2))
    multihost_utils.sync_global_devices("step")
    multihost_utils.assert_equal({"x": np.ones(2)})
    assert multihost_utils.reached_preemption_sync_point(3) is False  # (one process: nothing to sync with)
    grid = Mesh(mesh, ("x", "y"))
    global_ = multihost_utils.host_local_array_to_global_array(
        (np.arange(8.0).reshape(4, 2), np.ones(4)), grid, (P("x", "y"), P("x")))
    assert global_[0].sharding == NamedSharding(grid, P("x", "y")) and len(global_[0].addressable_shards) == 4
    assert global_[0].addressable_shards[0].data.shape == (2, 1)
    local = multihost_utils.global_array_to_host_local_array(global_[0], grid, P("x", "y"))
    np.testing.assert_array_equal(local, np.arange(8.0).reshape(4, 2))
    with pytest.raises(ValueError, match="is not a valid input to the pspecs argument"):
        multihost_utils.host_local_array_to_global_array(np.ones(4), grid, None)
    with pytest.raises(ValueError, match="is partitioned 2 times, but the dimension size is 3"):
        multihost_utils.host_local_array_to_global_array(np.ones(3), grid, P("x"))
