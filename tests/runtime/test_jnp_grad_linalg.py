"""Gradients of ``srcjax.numpy.linalg``, ``srcjax.scipy.linalg``, ``srcjax.numpy.fft`` and
``convolve``/``correlate``, checked against central finite differences, forward and reverse mode, in
float64, to second order where the function is smooth at the point (variants of a function already checked
to second order, batched or complex or through scipy's wrappers, to first order: the suite stays quick).

Decompositions with sign or phase freedom (eigh, svd, qr) are checked through outputs that are unique at
the point: eigenvalues, singular values, and products such as ``u * v`` per column or ``|v|``; symmetric
inputs are symmetrised inside the function, as Autograd's and JAX's tests do.
"""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
import srcjax.scipy.linalg as sla
from srcjax.runtime.config import config
from srcjax.test_util import check_grads

R = np.random.RandomState(1)


def rn(*shape):
    return R.standard_normal(shape)


def spd(n, batch=()):
    """A well-conditioned symmetric positive definite matrix (or a batch of them)."""
    a = R.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def well(n, batch=()):
    """A well-conditioned general square matrix."""
    return R.standard_normal(batch + (n, n)) + 3 * np.eye(n)


def sym(x):
    return (x + jnp.swapaxes(x, -1, -2)) / 2


@pytest.fixture(autouse=True)
def x64():
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", saved)


def case(name, f, *args, order=2, atol=None, rtol=None, eps=None, modes=("fwd", "rev"), marks=()):
    return pytest.param(f, args, order, dict(atol=atol, rtol=rtol, eps=eps, modes=modes), id=name, marks=marks)


def _eigh_vectors(x):
    w, v = jnp.linalg.eigh(sym(x))
    return w, v * jnp.sign(v[..., :1, :])  # each eigenvector's sign fixed by its first entry


def _svd_parts(x):
    u, s, vt = jnp.linalg.svd(x, full_matrices=False)
    return s, jnp.abs(u), jnp.abs(vt), u @ vt  # |u|, |v| and u v^T are free of the sign choice


def _qr_parts(x):
    q, r = jnp.linalg.qr(x)
    signs = jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))
    return q * signs[..., None, :], r * signs[..., :, None]  # the factorisation with r's diagonal positive


LINALG = [
    case("inv", jnp.linalg.inv, well(3)), case("inv_batched", jnp.linalg.inv, well(3, (2,)), order=1),
    case("solve_a", lambda a: jnp.linalg.solve(a, np.arange(3.0)), well(3)),
    case("solve_b_vector", lambda b: jnp.linalg.solve(np.eye(3) * 2 + 0.1, b), rn(3)),
    case("solve_both", jnp.linalg.solve, well(3), rn(3, 2)),
    case("solve_batched", jnp.linalg.solve, well(3, (2,)), rn(2, 3, 1), order=1),
    case("det", jnp.linalg.det, well(3)), case("det_batched", jnp.linalg.det, well(2, (3,))),
    case("det_negative", jnp.linalg.det, well(3) @ np.diag([1.0, 1.0, -1.0])),
    case("slogdet", jnp.linalg.slogdet, well(3)),
    case("slogdet_batched", lambda a: jnp.linalg.slogdet(a)[1], well(3, (2,)), order=1),
    case("cholesky", lambda x: jnp.linalg.cholesky(sym(x)), spd(3)),
    case("cholesky_batched", lambda x: jnp.linalg.cholesky(sym(x)), spd(3, (2,))),
    case("cholesky_solve", lambda x, b: jnp.linalg.solve(jnp.linalg.cholesky(sym(x)), b), spd(3), rn(3), order=1),
    case("qr", _qr_parts, rn(4, 3)), case("qr_square_batched", _qr_parts, rn(2, 3, 3)),
    case("qr_r_mode", lambda x: jnp.abs(jnp.linalg.qr(x, mode="r")), rn(4, 3)),
    # JAX 0.10 differentiates wide matrices and the complete Q too (its rules once refused both)
    case("qr_wide", _qr_parts, rn(2, 4)), case("qr_wide_batched", _qr_parts, rn(2, 2, 5), order=1),
    case("qr_complete", lambda x: jnp.linalg.qr(x, mode="complete"), rn(4, 2), order=1),
    case("qr_complete_complex", lambda a, b: jnp.linalg.qr(a + 1j * b, mode="complete"), rn(3, 2), rn(3, 2),
         order=1),
    case("eigh_values", lambda x: jnp.linalg.eigh(sym(x))[0], spd(4)),
    case("eigh_vectors", _eigh_vectors, spd(3)), case("eigh_batched", _eigh_vectors, spd(3, (2,))),
    case("eigh_upper", lambda x: jnp.linalg.eigh(sym(x), UPLO="U")[0], spd(3)),
    case("eigvalsh", lambda x: jnp.linalg.eigvalsh(sym(x)), rn(4, 4)),
    case("svd_values", lambda x: jnp.linalg.svd(x, compute_uv=False), rn(4, 3)),
    case("svdvals", jnp.linalg.svdvals, rn(3, 5)),
    case("svd_tall", _svd_parts, rn(4, 3)), case("svd_wide", _svd_parts, rn(2, 4)),
    case("svd_square", _svd_parts, rn(3, 3)),
    case("svd_batched", _svd_parts, rn(2, 3, 2)),
    case("norm_vector", jnp.linalg.norm, rn(4)), case("norm_fro", jnp.linalg.norm, rn(3, 4)),
    case("norm_axis", lambda x: jnp.linalg.norm(x, axis=1, keepdims=True), rn(3, 4)),
    case("norm_vec_ords", lambda x: [jnp.linalg.norm(x, o) for o in (1, 2, 3, 0.5, -1, np.inf, -np.inf)], rn(5) + 0.1,
         order=1),
    case("norm_vec_ord3", lambda x: jnp.linalg.norm(x, 3), rn(5)),
    case("norm_mat_ords", lambda x: [jnp.linalg.norm(x, o) for o in (1, -1, np.inf, -np.inf)], rn(3, 4), order=1),
    case("norm_mat_fro", lambda x: jnp.linalg.norm(x, "fro", axis=(0, 2)), rn(3, 2, 4)),
    case("norm_nuc", lambda x: jnp.linalg.norm(x, "nuc"), rn(3, 4)),
    case("norm_2", lambda x: jnp.linalg.norm(x, 2), rn(3, 4)),
    case("norm_neg2", lambda x: jnp.linalg.norm(x, -2), rn(3, 4)),
    case("norm_nuc_axis", lambda x: jnp.linalg.norm(x, "nuc", axis=(1, 2)), rn(2, 3, 3)),
    case("vector_norm", lambda x: jnp.linalg.vector_norm(x, axis=0, ord=2), rn(3, 2)),
    case("matrix_norm", jnp.linalg.matrix_norm, rn(2, 3, 3)),
    case("pinv", jnp.linalg.pinv, rn(4, 3)), case("pinv_wide", jnp.linalg.pinv, rn(2, 3), order=1),
    case("lstsq", lambda a, b: jnp.linalg.lstsq(a, b)[0], rn(5, 3), rn(5), rtol=1e-4),
    case("lstsq_matrix", lambda a, b: jnp.linalg.lstsq(a, b)[0], rn(4, 2), rn(4, 2), order=1),
    case("matrix_power", lambda a: jnp.linalg.matrix_power(a, 3), rn(3, 3)),
    case("matrix_power_neg", lambda a: jnp.linalg.matrix_power(a, -2), well(3), order=1),
    case("matrix_power_0", lambda a: jnp.linalg.matrix_power(a, 0) * a, rn(2, 2)),
    case("tensorsolve", lambda a, b: jnp.linalg.tensorsolve(a, b), well(6).reshape(2, 3, 6), rn(2, 3), order=1),
    case("tensorinv", lambda a: jnp.linalg.tensorinv(a, ind=1), well(4).reshape(4, 2, 2), order=1),
    case("cond", jnp.linalg.cond, well(3)),
    # eigenvalues of a general matrix: first order only, as in JAX (the rule's own eig computes eigenvectors)
    case("eigvals", jnp.linalg.eigvals, rn(3, 3), order=1),
    case("eigvals_abs", lambda x: jnp.abs(jnp.linalg.eigvals(x)), rn(4, 4), order=1),
    case("inv_complex", jnp.linalg.inv, well(3) + 1j * rn(3, 3)),
    case("det_complex", jnp.linalg.det, rn(3, 3) + 1j * rn(3, 3)),
    case("solve_complex", jnp.linalg.solve, well(3) + 1j * rn(3, 3), rn(3) + 1j * rn(3), order=1),
    case("slogdet_complex", lambda x: jnp.linalg.slogdet(x)[1], well(3) + 1j * rn(3, 3), order=1),
    case("eigh_hermitian", lambda x: jnp.linalg.eigh(x + jnp.conj(x.T))[0], rn(3, 3) + 1j * rn(3, 3)),
    case("svd_complex_values", jnp.linalg.svdvals, rn(3, 2) + 1j * rn(3, 2)),
    case("cholesky_hermitian", lambda x: jnp.linalg.cholesky(x + jnp.conj(x.T) + 6 * jnp.eye(3)),
         rn(3, 3) + 1j * rn(3, 3)),
    case("multi_dot", lambda a, b: jnp.linalg.multi_dot([a, b, a.T]), rn(3, 2), rn(2, 2)),
    case("trace_product", lambda a, b: jnp.linalg.trace(a @ b), rn(3, 3), rn(3, 3)),
    case("sla_solve_triangular", lambda a, b: sla.solve_triangular(jnp.tril(a), b, lower=True), well(3), rn(3, 2)),
    case("sla_solve_triangular_trans", lambda a, b: sla.solve_triangular(jnp.triu(a), b, trans=1), well(3), rn(3)),
    case("sla_cho_solve", lambda x, b: sla.cho_solve(sla.cho_factor(sym(x)), b), spd(3), rn(3), order=1),
    case("sla_lu_solve", lambda a, b: sla.lu_solve(sla.lu_factor(a), b), well(3), rn(3), order=1),
    case("sla_lu", lambda a: sla.lu(a)[1:], well(3)),
    case("sla_det_inv", lambda a: sla.det(a) * sla.inv(a), well(3), order=1),
    case("sla_solve_sym", lambda a, b: sla.solve(sym(a), b, assume_a="pos"), spd(3), rn(3)),
    case("sla_eigh", lambda x: sla.eigh(sym(x), eigvals_only=True), spd(3)),
    case("sla_block_diag", lambda a, b: sla.block_diag(a, b), rn(2, 2), rn(1, 3)),
    case("sla_qr", lambda a: jnp.abs(sla.qr(a)[1]), rn(3, 3)),
    case("sla_svd", lambda a: sla.svd(a, compute_uv=False), rn(3, 2)),
    case("logdet_via_cholesky", lambda x: 2 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(sym(x))))), spd(4)),
    case("reparameterization", lambda x, e: jnp.linalg.cholesky(sym(x)) @ e, spd(3), rn(3, 2)),
]


@pytest.mark.parametrize("f, args, order, kw", LINALG)
def test_linalg(f, args, order, kw):
    check_grads(f, args, order=order, **kw)


def test_eig_eigenvector_derivative_is_unimplemented():
    # as in JAX: only eigenvalues of a non-symmetric matrix have derivatives
    with pytest.raises(NotImplementedError, match="eigenvectors"):
        check_grads(lambda x: jnp.abs(jnp.linalg.eig(x)[1]), (rn(3, 3),), order=1)




def test_pinv_derivative_at_repeated_singular_values():
    # JAX's rule (Golub and Pereyra) divides by no gap between singular values: through the SVD's derivative
    # the identity or an orthogonal matrix gave NaN. Near such a matrix pinv is inv, which finite differences see.
    check_grads(jnp.linalg.pinv, (np.eye(3),), order=1)
    check_grads(jnp.linalg.pinv, (np.linalg.qr(rn(3, 3))[0],), order=1)
    check_grads(jnp.linalg.pinv, (np.diag([2.0, 2.0, 1.0])[:, :2],), order=1)


def test_pinv_derivative_with_dropped_singular_values_is_jaxs():
    # rtol = 0.5 drops the singular values 1 and 0.1 of diag(1, 0.1, 3); JAX 0.10.2's gradient, recorded (its rule
    # holds the kept rank fixed and does not see the dropped values' directions as the SVD's derivative does)
    weights = np.arange(9.0).reshape(3, 3)
    grad = srcjax.grad(lambda a: jnp.sum(jnp.linalg.pinv(a, rtol=0.5) * weights))(np.diag([1.0, 0.1, 3.0]))
    want = [[0.0, 0.0, 2 / 3], [0.0, 0.0, 7 / 9], [2 / 9, 5 / 9, -8 / 9]]
    np.testing.assert_allclose(grad, want, atol=1e-12)


FFT = [
    case("fft", jnp.fft.fft, rn(5)), case("fft_complex_in", lambda a, b: jnp.fft.fft(a + 1j * b), rn(4), rn(4)),
    case("fft_abs", lambda x: jnp.abs(jnp.fft.fft(x, axis=0)) ** 2, rn(4, 3)),
    case("fft_n", lambda x: jnp.fft.fft(x, n=6), rn(4)), case("fft_n_crop", lambda x: jnp.fft.fft(x, n=3), rn(5)),
    case("fft_norm_ortho", lambda x: jnp.fft.fft(x, norm="ortho"), rn(4)),
    case("fft_norm_forward", lambda x: jnp.fft.ifft(x, norm="forward"), rn(4)),
    case("ifft", jnp.fft.ifft, rn(2, 4)), case("rfft", jnp.fft.rfft, rn(6)), case("rfft_odd", jnp.fft.rfft, rn(2, 5)),
    case("irfft", lambda a, b: jnp.fft.irfft(a + 1j * b), rn(4), rn(4)),
    case("irfft_n", lambda a, b: jnp.fft.irfft(a + 1j * b, n=7), rn(4), rn(4)),
    case("irfft_real", jnp.fft.irfft, rn(5)),
    case("fft2", jnp.fft.fft2, rn(3, 4)), case("ifft2", jnp.fft.ifft2, rn(3, 4)),
    case("rfft2", jnp.fft.rfft2, rn(3, 4)), case("irfft2", jnp.fft.irfft2, rn(3, 3)),
    case("fftn", jnp.fft.fftn, rn(2, 3, 2)), case("fftn_axes", lambda x: jnp.fft.fftn(x, axes=(0, 2)), rn(2, 3, 2)),
    case("ifftn", jnp.fft.ifftn, rn(2, 3)), case("rfftn", jnp.fft.rfftn, rn(2, 2, 4)),
    case("irfftn", lambda x: jnp.fft.irfftn(x, s=(2, 4)), rn(2, 3)),
    case("hfft", jnp.fft.hfft, rn(4)), case("ihfft", jnp.fft.ihfft, rn(5)),
    case("fftshift", jnp.fft.fftshift, rn(5)), case("ifftshift", lambda x: jnp.fft.ifftshift(x, axes=1), rn(2, 4)),
    case("fft_roundtrip", lambda x: jnp.real(jnp.fft.ifft(jnp.fft.fft(x) * jnp.arange(5.0))), rn(5)),
    case("power_spectrum", lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(jnp.sin(x))) ** 2), rn(8)),
]


@pytest.mark.parametrize("f, args, order, kw", FFT)
def test_fft(f, args, order, kw):
    check_grads(f, args, order=order, **kw)


CONVOLVE = [
    case("convolve_full", jnp.convolve, rn(5), rn(3)),
    case("convolve_same", lambda a, v: jnp.convolve(a, v, "same"), rn(5), rn(3)),
    case("convolve_valid", lambda a, v: jnp.convolve(a, v, mode="valid"), rn(5), rn(3)),
    case("convolve_short_first", jnp.convolve, rn(2), rn(4)),
    case("correlate_valid", jnp.correlate, rn(5), rn(3)),
    case("correlate_full", lambda a, v: jnp.correlate(a, v, "full"), rn(4), rn(3)),
    case("correlate_same", lambda a, v: jnp.correlate(a, v, "same"), rn(5), rn(2)),
]


@pytest.mark.parametrize("f, args, order, kw", CONVOLVE)
def test_convolve(f, args, order, kw):
    check_grads(f, args, order=order, **kw)


def _cofactors(a):
    """The cofactor matrix of ``a`` from its minors (float64 NumPy): the derivative of det at any a."""
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, 0), j, 1)
            out[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


@pytest.mark.parametrize("rank", [4, 3, 2, 0])
def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix(rank):
    # JAX's det (n >= 4) differentiates through the adjugate (its _cofactor_solve), finite at singular matrices:
    # the LU's derivative divided by the zero pivot and gave NaN
    a = rn(4, rank) @ rn(rank, 4) if rank else np.zeros((4, 4))
    for grad in (srcjax.grad(jnp.linalg.det), srcjax.jit(srcjax.grad(jnp.linalg.det))):
        np.testing.assert_allclose(grad(a), _cofactors(a), atol=1e-10)
    batch = np.stack([a, well(4)])
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(jnp.linalg.det))(batch)[0], _cofactors(a), atol=1e-10)
    check_grads(jnp.linalg.det, (well(5),), order=2)


def test_pinv_hermitian_gradient_is_that_of_the_hermitian_part():
    # svd(hermitian=True) reads (a + a^H) / 2, and JAX's pinv rule symmetrizes a and its tangent to match: the
    # gradient is the one of pinv of the Hermitian part (srcjax's rule used the raw tangent)
    a = spd(4) + np.triu(rn(4, 4), 1)
    weights = rn(4, 4)
    hermitian = srcjax.grad(lambda x: jnp.sum(jnp.linalg.pinv(x, hermitian=True) * weights))(a)
    through_sym = srcjax.grad(lambda x: jnp.sum(jnp.linalg.pinv(sym(x)) * weights))(a)
    np.testing.assert_allclose(hermitian, through_sym, atol=1e-10)


@pytest.mark.parametrize("lower", [False, True])
def test_scipy_solve_positive_gradient_is_jaxs_implicit_one(lower):
    # JAX solves through the factor of one triangle but differentiates implicitly with the whole of a
    # (lax.custom_linear_solve with matvec a @ x): d/da sum(w * x) = -(a^-1 w) x^T, not symmetric
    a, b, w = spd(4), rn(4), rn(4)
    grad_a, grad_b = srcjax.grad(lambda m, v: jnp.sum(sla.solve(m, v, assume_a="pos", lower=lower) * w),
                                 argnums=(0, 1))(a, b)
    x, lam = np.linalg.solve(a, b), np.linalg.solve(a.T, w)
    np.testing.assert_allclose(grad_a, -np.outer(lam, x), atol=1e-10)
    np.testing.assert_allclose(grad_b, lam, atol=1e-10)


def test_slogdet_of_small_matrices_is_written_out_as_jaxs():
    # JAX computes 1x1 and 2x2 slogdet from ad - bc, with the derivative tr(adj(a) da) / det a: infinite at a
    # singular matrix (differentiating through the LU gave NaN there)
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    grad = srcjax.grad(lambda x: jnp.linalg.slogdet(x)[1])(a)
    np.testing.assert_array_equal(grad, [[np.inf, -np.inf], [-np.inf, np.inf]])  # jax 0.10.2's
    sign, logabsdet = jnp.linalg.slogdet(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert float(sign) == -1.0 and logabsdet == np.float32(np.log(2.0))
    check_grads(lambda x: jnp.linalg.slogdet(x)[1], (well(2),), order=2)
    check_grads(lambda x: jnp.linalg.slogdet(x)[1], (np.array([[-2.5]]),), order=2)
    z = rn(2, 2) + 1j * rn(2, 2)
    check_grads(lambda x: jnp.linalg.slogdet(x), (z,), order=1)
