"""srcjax.scipy.linalg's Schur family (hessenberg, schur, rsf2csf, sqrtm, funm, solve_sylvester), qr_multiply,
eigh_tridiagonal and the special matrices: against JAX 0.10.2's numbers where LAPACK fixes them, else against
NumPy float64 and the identities each result satisfies (a = q h q^H, a = z t z^H with z unitary, ...)."""

import math

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.scipy import linalg as sl

RNG = np.random.default_rng(11)


def random(shape, dtype=np.float64):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def H(x):
    return np.conj(np.swapaxes(np.asarray(x), -1, -2))


def close(actual, expected, tol=1e-10):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


A3 = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 10]], np.float32)


# -- hessenberg and schur --------------------------------------------------------------------------------------
def test_hessenberg_and_schur_are_jax_numbers():
    # JAX 0.10.2's (LAPACK's gehrd/orghr and gees) for A3, float32
    h, q = sl.hessenberg(A3, calc_q=True)
    close(h, [[1.0, -3.5970075, -0.24806966], [-8.062258, 14.8, 2.4000006], [0.0, 0.40000132, 0.20000036]], 2e-5)
    close(q, [[1.0, 0.0, 0.0], [0.0, -0.49613893, -0.86824316], [0.0, -0.86824316, 0.4961389]], 2e-6)
    t, z = sl.schur(A3)
    close(t, [[16.707497, 4.7599554, -1.1544815], [0.0, -0.9057405, 0.09987254], [0.0, 0.0, 0.19824716]], 2e-5)
    close(z, [[0.22351356, 0.957311, 0.18329553], [0.5039457, 0.04746726, -0.8624301],
              [0.83431435, -0.28513557, 0.47182316]], 2e-6)
    assert h.dtype == t.dtype == np.float32
    block = np.array([[0.0, -2, 1], [1, 0, 3], [0, 0, 2]], np.float32)  # already in real Schur form: JAX's z = I
    t, z = sl.schur(block)
    close(t, block, 1e-6)
    close(z, np.eye(3), 1e-6)
    # complex: the reduction has real subdiagonal entries; the eigenvalues come out in LAPACK's order (JAX 0.10.2's)
    a = np.array([[1 + 1j, 2, 0.5j], [0.5, -1j, 1], [2j, 1, 3]], np.complex64)
    h, q = sl.hessenberg(a, calc_q=True)
    close(h, [[1 + 1j, 0, 1.39831 - 1.514836j], [-2.061553, 2.82353 - 0.058824j, 1.386484 + 0.319191j],
              [0, 1.040694, 0.17647 - 0.941177j]], 2e-6)
    close(q, [[1, 0, 0], [0, -0.242536, 0.658028 - 0.712864j], [0, -0.970143j, -0.178216 - 0.164507j]], 2e-6)
    t, z = sl.schur(a)
    close(np.diag(t), [2.905438 + 0.441085j, 1.338642 - 0.245911j, -0.244082 - 0.195175j], 2e-5)
    # a column that isolates an eigenvalue: LAPACK permutes it to the front first (JAX 0.10.2's numbers)
    isolated = np.array([[1.0, 0, 3, 4], [2, 5, 1, 0], [1, 0, 3, 4], [4, 0, 2, 1]])
    t, z = sl.schur(isolated.astype(np.float32))
    close(np.diag(t), [5.0, 7.623476, -2.6234748, -6.1e-08], 2e-5)
    close(z[:, 0], [0.0, 1.0, 0.0, 0.0], 0)


def check_schur(a, t, z, real):
    n = a.shape[-1]
    tol = 1e-10 * max(1.0, np.abs(a).max())
    close(H(z) @ z, np.eye(n), 1e-12)
    close(z @ t @ H(z), a, tol)
    if not real:
        close(np.tril(t, -1), 0, 0)
        eigenvalues = np.diag(t)
    else:
        close(np.tril(t, -2), 0, 0)
        sub = np.diag(t, -1)
        assert not np.any((sub[:-1] != 0) & (sub[1:] != 0))  # 2x2 blocks only
        eigenvalues = list(np.diag(t).astype(complex))
        for i in np.flatnonzero(sub):  # a standardised block: equal diagonal, off-diagonals of opposite signs
            assert t[i, i] == t[i + 1, i + 1] and t[i, i + 1] * t[i + 1, i] < 0
            root = np.sqrt(-t[i, i + 1] * t[i + 1, i])
            eigenvalues[i], eigenvalues[i + 1] = t[i, i] + 1j * root, t[i, i] - 1j * root
    close(by_value(eigenvalues), by_value(np.linalg.eigvals(a)), 1e-8)


def by_value(values):
    """Complex values sorted by real part (to 6 digits, so that a conjugate pair's order is its imaginary parts')."""
    values = np.asarray(values, complex)
    return values[np.lexsort((values.imag, np.round(values.real, 6)))]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_schur_and_hessenberg_identities(dtype, x64):
    for n in (1, 2, 3, 5, 8):
        a = random((n, n), dtype)
        h, q = sl.hessenberg(a, calc_q=True)
        close(H(q) @ q, np.eye(n), 1e-12)
        close(q @ h @ H(q), a, 1e-12)
        close(np.tril(h, -2), 0, 0)
        t, z = sl.schur(a)
        check_schur(a, np.asarray(t), np.asarray(z), real=dtype == np.float64)
    for scale in (1e-200, 1e200):  # (gees scales such a matrix first; squares of its entries would under/overflow)
        a = random((5, 5), dtype) * scale
        t, z = sl.schur(a)
        check_schur(a / scale, np.asarray(t) / scale, np.asarray(z), real=dtype == np.float64)
    a = random((2, 3, 3), dtype)  # a stack, and the complex form of a real matrix
    t, z = sl.schur(a.real, output="complex")
    assert t.shape == (2, 3, 3) and t.dtype == np.complex128
    for i in range(2):
        check_schur(a[i].real, np.asarray(t[i]), np.asarray(z[i]), real=False)


def test_schur_transforms_and_errors():
    stack = np.stack([A3, A3.T, 2 * A3])
    t, z = srcjax.vmap(sl.schur)(stack)
    t_jit, _ = srcjax.jit(sl.schur)(A3)
    close(t_jit, sl.schur(A3)[0], 1e-6)
    close(srcjax.vmap(sl.hessenberg)(stack), sl.hessenberg(stack), 1e-6)
    for i in range(3):
        close(np.asarray(z[i]) @ np.asarray(t[i]) @ np.asarray(z[i]).T, stack[i], 1e-4)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'schur'"):
        srcjax.grad(lambda a: sl.schur(a)[0].sum())(A3)
    with pytest.raises(TypeError, match="schur does not accept dtype int32"):
        sl.schur(np.eye(2, dtype=np.int32))
    assert sl.schur(np.eye(2, dtype=np.int32), "complex")[0].dtype == np.complex64
    with pytest.raises(ValueError, match="must be a square matrix. Got shape \\(2, 3\\)"):
        sl.schur(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="must have rank at least 2"):
        sl.hessenberg(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="Expected 'output' to be either 'real' or 'complex'"):
        sl.schur(A3, "other")
    with pytest.raises(NotImplementedError, match="Unsupported dtype float16"):
        sl.schur(np.eye(2, dtype=np.float16))
    with pytest.raises(ValueError, match="must have shape \\[..., n, n\\]"):
        sl.hessenberg(np.ones((2, 3), np.float32))
    h, q = sl.hessenberg(np.ones((0, 0), np.float32), calc_q=True)
    assert h.shape == q.shape == (0, 0)
    assert np.isnan(np.asarray(sl.schur(np.full((2, 2), np.nan, np.float32))[0])).all()


# -- rsf2csf, sqrtm, funm, solve_sylvester ---------------------------------------------------------------------
def test_rsf2csf_sqrtm_funm(x64):
    a = random((4, 4)) + 4 * np.eye(4)  # eigenvalues off the negative real axis: a principal square root
    t, z = sl.rsf2csf(*sl.schur(a))
    assert t.dtype == np.complex128
    close(np.tril(t, -1), 0, 0)
    close(np.asarray(z) @ np.asarray(t) @ H(z), a, 1e-10)
    w, v = np.linalg.eig(a)
    root = sl.sqrtm(a)
    close(root, v @ np.diag(np.sqrt(w)) @ np.linalg.inv(v), 1e-9)
    close(sl.funm(a, jnp.exp), v @ np.diag(np.exp(w)) @ np.linalg.inv(v), 1e-9)
    f, err = sl.funm(a, jnp.sin, disp=False)
    close(f, v @ np.diag(np.sin(w)) @ np.linalg.inv(v), 1e-9)
    assert err.shape == () and 0 < float(err) < 1e-10
    close(srcjax.vmap(sl.sqrtm)(np.stack([a, a.T])), np.stack([root, np.asarray(root).T]), 1e-9)
    with pytest.raises(ValueError, match="expected square array_like input"):
        sl.funm(np.stack([a, a]), jnp.exp)
    with pytest.raises(NotImplementedError, match="Blocked version"):
        sl.sqrtm(a, blocksize=2)
    with pytest.raises(ValueError, match="Input array shapes must match"):
        sl.rsf2csf(np.eye(3), np.eye(2))
    # gradient through rsf2csf's rotations (JAX differentiates it): against central differences, in directions
    # that keep the quasi-triangular pattern (one 2x2 block)
    base = np.array([[1.0, -2, 0.5, 0.3], [3, 1, 0.2, 0.1], [0, 0, 2, 0.7], [0, 0, 0, -1]])
    grad = srcjax.grad(lambda m: jnp.real(sl.rsf2csf(m, jnp.eye(4))[0]).sum())(base)
    step, direction = 1e-6, random((4, 4)) * (base != 0)

    def value(m):
        return float(np.real(np.asarray(sl.rsf2csf(m, np.eye(4))[0])).sum())

    numeric = (value(base + step * direction) - value(base - step * direction)) / (2 * step)
    close(np.sum(np.asarray(grad) * direction), numeric, 1e-5)


def test_solve_sylvester(x64):
    a, b = random((4, 4)) + 3 * np.eye(4), random((3, 3)) + 3 * np.eye(3)
    c = random((4, 3))
    for method in ("schur", "eigen"):
        x = np.asarray(sl.solve_sylvester(a, b, c, method=method))
        assert x.dtype == np.float64
        close(a @ x + x @ b, c, 1e-9)
    xc = np.asarray(sl.solve_sylvester(a, b, c + 1j))
    close(a @ xc + xc @ b, c + 1j, 1e-9)
    batched = sl.solve_sylvester(np.stack([a, 2 * a]), b, c)
    close(batched[1], sl.solve_sylvester(2 * a, b, c), 1e-12)
    assert np.isnan(np.asarray(sl.solve_sylvester(a, -a, a))).all()  # eigenvalues of a and -a sum to 0
    with pytest.raises(ValueError, match="Incompatible shapes for Sylvester equation"):
        sl.solve_sylvester(a, b, c.T)
    with pytest.raises(ValueError, match="Unrecognized method bad"):
        sl.solve_sylvester(a, b, c, method="bad")


# -- qr_multiply -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_qr_multiply(shape, x64):
    a = random(shape, np.complex128)
    m, n = shape
    k = min(m, n)
    q, r = np.linalg.qr(a)  # LAPACK's Householder QR, as JAX's geqrf/ormqr
    c_left, c_right = random((k, 2), np.complex128), random((2, m), np.complex128)
    for conjugate in (False, True):
        qc = np.conj(q) if conjugate else q
        product, r_out = sl.qr_multiply(a, c_left, mode="left", conjugate=conjugate)
        close(product, qc @ c_left)
        close(r_out, r)
        close(sl.qr_multiply(a, c_right, conjugate=conjugate)[0], c_right @ qc)
    vector = random((m,))
    out = sl.qr_multiply(a.real, vector)[0]
    assert out.shape == (k,)
    close(out, vector @ np.linalg.qr(a.real)[0])
    product, r_out, p = sl.qr_multiply(a, c_right, pivoting=True)
    close(np.asarray(product) @ np.asarray(r_out), c_right @ a[:, np.asarray(p)], 1e-9)
    with pytest.raises(ValueError, match="not compatible for Q @ c operation"):
        sl.qr_multiply(a, c_right, mode="left")
    with pytest.raises(ValueError, match="mode must be 'right' or 'left'"):
        sl.qr_multiply(a, c_right, mode="up")


# -- eigh_tridiagonal ------------------------------------------------------------------------------------------
def test_eigh_tridiagonal():
    w = sl.eigh_tridiagonal(jnp.array([1.0, 2.0, 3.0, 4.0]), jnp.array([1.0, 1.0, 1.0]), eigvals_only=True)
    close(w, [0.2547188103199005, 1.8227170705795288, 3.1772828102111816, 4.745281219482422], 0)  # JAX 0.10.2's
    assert w.dtype == np.float32
    d, e = random(6), random(5) + 1j * random(5)
    d, e = d.astype(np.complex64), e.astype(np.complex64)
    t = np.diag(d.real.astype(np.float64)) + np.diag(e, 1) + np.diag(np.conj(e), -1)
    w = sl.eigh_tridiagonal(d, e, eigvals_only=True)
    close(w, np.linalg.eigvalsh(t), 1e-5)
    close(sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 4)), np.asarray(w)[2:5], 0)
    w, v = sl.eigh_tridiagonal(d, e)
    v = np.asarray(v)
    assert v.dtype == np.complex64 and v.shape == (6, 6)
    close(H(v) @ v, np.eye(6), 1e-5)
    close(t @ v, v * np.asarray(w), 1e-4)
    saved = srcjax.config.jax_threefry_partitionable
    srcjax.config.update("jax_threefry_partitionable", True)  # JAX 0.10's random stream, for its start vectors
    try:
        w, v = sl.eigh_tridiagonal(np.array([1.0, 2, 3, 4], np.float32), np.ones(3, np.float32))
    finally:
        srcjax.config.update("jax_threefry_partitionable", saved)
    close(v, [[0.7779505, 0.55327106, -0.29117376, 0.06246512], [-0.5797919, 0.45518553, -0.6339677, 0.23394944],
              [0.23394947, -0.63396764, -0.45518556, 0.5797919], [-0.06246513, 0.29117376, 0.5532711, 0.7779506]],
          2e-6)  # JAX 0.10.2's
    with pytest.raises(TypeError, match="must have same dtype"):
        sl.eigh_tridiagonal(np.ones(3, np.float32), np.ones(2, np.float16))
    with pytest.raises(TypeError, match="Only float32 and float64"):
        sl.eigh_tridiagonal(np.ones(3, np.int32), np.ones(2, np.int32))
    with pytest.raises(NotImplementedError, match="select='v'"):
        sl.eigh_tridiagonal(d, e, select="v")
    with pytest.raises(ValueError, match="select_range must be specified"):
        sl.eigh_tridiagonal(d, e, select="i")


# -- special matrices ------------------------------------------------------------------------------------------
def test_matrices_from_vectors():
    f, s = np.array([1.0, 2, 3, 4], np.float32), np.array([0.5, 0.25, 0.125], np.float32)
    expected = np.diag(s, -1)
    expected[0] = f
    close(sl.leslie(f, s), expected, 0)
    close(sl.leslie(np.stack([f, 2 * f]), s)[1, 0], 2 * f, 0)
    assert sl.leslie(np.arange(3), np.arange(2)).dtype == np.int32
    coefficients = np.array([2.0, -3, -11, 6, 4], np.float32)
    companion = np.asarray(sl.companion(coefficients))
    close(companion[0], -coefficients[1:] / 2, 0)
    close(np.diag(companion, -1), 1, 0)
    roots = by_value(np.roots(coefficients))
    close(by_value(np.linalg.eigvals(np.asarray(sl.fiedler_companion(coefficients), np.float64))), roots, 1e-5)
    assert sl.companion(np.arange(1, 4)).dtype == np.float32
    assert sl.fiedler_companion(np.ones((2, 1))).shape == (2, 0, 0)
    close(sl.fiedler(np.array([1, 4, 2])), [[0, 3, 1], [3, 0, 2], [1, 2, 0]], 0)
    for mode in ("full", "same", "valid"):
        for m, n in ((3, 5), (5, 3), (4, 4)):
            a, v = np.arange(1.0, m + 1), np.arange(2.0, n + 2)
            close(np.asarray(sl.convolution_matrix(a, n, mode)) @ v, np.convolve(a, v, mode), 1e-5)
    with pytest.raises(ValueError, match="length of s along the last axis must be one less"):
        sl.leslie(f, f)
    with pytest.raises(ValueError, match="must be at least 2"):
        sl.companion(np.ones(1))
    with pytest.raises(ValueError, match="n must be a positive integer; got 0"):
        sl.convolution_matrix(f, 0)


def test_matrices_of_an_order():
    hilbert = np.asarray(sl.hilbert(4))
    close(hilbert, [[1 / (i + j + 1) for j in range(4)] for i in range(4)], 1e-7)
    close(np.asarray(sl.invhilbert(4), np.float64) @ hilbert.astype(np.float64), np.eye(4), 1e-3)
    lower = [[math.comb(i, j) for j in range(5)] for i in range(5)]
    close(sl.pascal(5, "lower"), lower, 1e-5)
    close(sl.pascal(5), np.array(lower) @ np.array(lower).T, 1e-4)
    close(np.asarray(sl.invpascal(5)) @ np.asarray(sl.pascal(5)), np.eye(5), 1e-3)
    helmert = np.asarray(sl.helmert(5, full=True))
    close(helmert @ helmert.T, np.eye(5), 1e-6)
    assert sl.helmert(5).shape == (4, 5)
    hadamard = np.asarray(sl.hadamard(8))
    assert hadamard.dtype == np.int32
    close(hadamard @ hadamard.T, 8 * np.eye(8), 0)
    close(sl.dft(6), np.fft.fft(np.eye(6)), 1e-6)
    close(sl.dft(6, "sqrtn"), np.fft.fft(np.eye(6)) / np.sqrt(6), 1e-6)
    assert sl.dft(3).dtype == np.complex64 and sl.pascal(3).dtype == np.float32
    with pytest.raises(ValueError, match="n must be a positive power of 2; got 6"):
        sl.hadamard(6)
    with pytest.raises(ValueError, match="dtype must be a complex floating-point type"):
        sl.dft(3, dtype=np.float32)
    with pytest.raises(ValueError, match="Expected kind to be on of"):
        sl.pascal(3, "diagonal")


def test_matrices_x64(x64):
    assert sl.hilbert(3).dtype == np.float64 and sl.dft(3).dtype == np.complex128
    assert sl.pascal(3).dtype == np.float32  # (JAX computes it in float32 whatever the setting)
    assert sl.hadamard(2).dtype == np.int64
    close(sl.invhilbert(5) @ sl.hilbert(5), np.eye(5), 1e-8)
