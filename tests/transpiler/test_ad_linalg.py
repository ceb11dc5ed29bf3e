"""Differentiation rules of the linear-algebra primitives, in float64 and complex128.

Factors that are unique (Cholesky, LU, QR, triangular solves, real eigh) are checked directly against
central finite differences. Where a factor is fixed only up to sign or phase (eigenvectors, singular
vectors, the order LAPACK lists eigenvalues of a general matrix in), the check goes through quantities
that do not depend on the choice: eigenvalues, projectors v_i v_i^H, u_i v_i^H, and reconstructions.
Every rule is also run under the IR builder and the recorded function evaluated against the eager rule.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax.runtime.numpy as jnp
from tests.transpiler.ad_checks import check_jvp, check_transpose, random_like, x64  # noqa: F401
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.primitives import linalg as L
from srcjax.transpiler.primitives.ad import Zero, aval_of, jvp_of, tangent_aval
from srcjax.transpiler.primitives.core import interpreting
from srcjax.transpiler.verifier import verify

pytestmark = pytest.mark.usefixtures("x64")

DTYPES = [np.float64, np.complex128]
EPS = 1e-6


# -- inputs --------------------------------------------------------------------------------------------------
def normal(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def positive_definite(rng, batch, n, dtype):
    a = normal(rng, (*batch, n, n), dtype)
    return a @ H(a) + n * np.eye(n)


def well_separated_hermitian(rng, batch, n, dtype):
    """Hermitian with eigenvalues 1, 2, ..., n: gaps of 1 keep the eigenvector derivatives well conditioned."""
    q, _ = np.linalg.qr(normal(rng, (*batch, n, n), dtype))
    return (q * np.arange(1.0, n + 1)[..., None, :]) @ H(q)


def triangular(rng, batch, n, dtype, lower):
    a = normal(rng, (*batch, n, n), dtype)
    a = np.tril(a) if lower else np.triu(a)
    return a + 3 * n * np.eye(n)  # a dominant diagonal: well conditioned


def arrays(*xs):
    return [jnp.asarray(x) for x in xs]


# -- checks through invariants ---------------------------------------------------------------------------
def values(xs):
    return [np.asarray(x) for x in xs]


def check_invariant_jvp(prim, x, params, invariant, rng, *, rtol=1e-6, atol=1e-6):
    """The rule's tangents pushed through ``invariant`` (a function of the outputs that does not depend on
    their sign or phase) vs central differences of ``invariant(prim(x))``; the primal outputs; Zero tangents."""
    rule = jvp_of(prim)
    assert rule is not None
    (x,) = arrays(x)
    t = random_like(aval_of(x), rng)
    outs, tangents = rule([x], [jnp.asarray(t)], **params)
    expected_outs = prim.bind(x, **params)
    assert len(outs) == len(expected_outs) == len(tangents)
    for o, e in zip(values(outs), values(expected_outs)):
        np.testing.assert_allclose(o, e, rtol=1e-12, atol=1e-12, err_msg=f"{prim}: primal output of the JVP")
    outs = values(outs)
    tangents = [np.zeros(t.aval.shape, t.aval.dtype) if isinstance(t, Zero) else np.asarray(t) for t in tangents]
    for o, d in zip(outs, tangents):
        assert (o.shape, o.dtype) == (d.shape, d.dtype), f"{prim}: tangent {d.shape} {d.dtype} for output {o.shape}"

    def through_rule(sign):
        return invariant([o + sign * EPS * d for o, d in zip(outs, tangents)])

    def through_primitive(sign):
        return invariant(values(prim.bind(jnp.asarray(np.asarray(x) + sign * EPS * t), **params)))

    for actual_hi, actual_lo, numeric_hi, numeric_lo in zip(through_rule(1), through_rule(-1),
                                                            through_primitive(1), through_primitive(-1)):
        actual, numeric = (actual_hi - actual_lo) / (2 * EPS), (numeric_hi - numeric_lo) / (2 * EPS)
        scale = max(1.0, float(np.max(np.abs(numeric), initial=0.0)))
        np.testing.assert_allclose(actual, numeric, rtol=rtol, atol=atol * scale, err_msg=f"{prim} {params}")

    _, zero_tangents = rule([x], [Zero(tangent_aval(aval_of(x)))], **params)
    for o, z in zip(outs, zero_tangents):
        assert isinstance(z, Zero) and z.aval.shape == o.shape and z.aval.dtype == o.dtype


def projectors(vectors):
    """The rank-one projectors v_i v_i^H of the columns of ``vectors``, stacked along a new axis."""
    return np.einsum("...ai,...bi->...iab", vectors, np.conj(vectors))


# -- cholesky --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, n", [((), 1), ((), 4), ((2,), 3), ((2, 1), 2), ((0,), 3)])
def test_cholesky_jvp(dtype, batch, n):
    # The tangent is a random (not Hermitian) matrix: the primitive reads only its lower triangle and the
    # real part of its diagonal, and so must the rule.
    rng = np.random.default_rng(0)
    check_jvp(L.cholesky_p, arrays(positive_definite(rng, batch, n, dtype)), rng=rng)


def test_cholesky_jvp_of_a_hermitian_tangent_is_jax_rule():
    # For a Hermitian tangent, dL = L phi(L^-1 dA L^-H); JAX's number for this 2x2 case.
    a = jnp.asarray(np.array([[4.0, 1.0], [1.0, 3.0]]))
    da = jnp.asarray(np.array([[0.5, 1.0], [1.0, -2.0]]))
    _, dl = jvp_of(L.cholesky_p)([a], [da])
    np.testing.assert_allclose(np.asarray(dl), [[0.125, 0.0], [0.46875, -0.74435613]], atol=1e-8)


# -- triangular_solve --------------------------------------------------------------------------------------
SOLVE_FLAGS = [
    dict(left_side=True, lower=True),
    dict(left_side=True, lower=False),
    dict(left_side=False, lower=True),
    dict(left_side=False, lower=False, transpose_a=True),
    dict(left_side=True, lower=True, transpose_a=True, conjugate_a=True),
    dict(left_side=False, lower=True, conjugate_a=True, unit_diagonal=True),
    dict(left_side=True, lower=False, transpose_a=True, unit_diagonal=True),
]
SOLVE_SHAPES = [((), 3, 2), ((), 2, 4), ((2,), 3, 3), ((), 1, 1), ((2,), 3, 0)]


def solve_operands(rng, flags, batch, n, k, dtype):
    a = triangular(rng, batch, n, dtype, flags["lower"])
    if flags.get("unit_diagonal"):
        a = a + normal(rng, a.shape, dtype)  # the diagonal (and other triangle) is never read
    b = normal(rng, (*batch, n, k) if flags["left_side"] else (*batch, k, n), dtype)
    return arrays(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, n, k", SOLVE_SHAPES)
@pytest.mark.parametrize("flags", SOLVE_FLAGS)
def test_triangular_solve_jvp_and_transpose_in_b(flags, batch, n, k, dtype):
    rng = np.random.default_rng(1)
    operands = solve_operands(rng, flags, batch, n, k, dtype)
    check_jvp(L.triangular_solve_p, operands, flags, rng=rng)
    check_transpose(L.triangular_solve_p, operands, flags, rng=rng, linear=[1])


def test_triangular_solve_transpose_refuses_a():
    from srcjax.transpiler.primitives.ad import UndefinedPrimal

    a, b = solve_operands(np.random.default_rng(3), dict(left_side=True, lower=True), (), 2, 2, np.float64)
    with pytest.raises(ValueError, match="linear only in b"):
        L.triangular_solve_p.transpose_rule(b, UndefinedPrimal(aval_of(a)), b, left_side=True, lower=True)


# -- lu ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 2), (2, 4), (2, 3, 3), (2, 1, 5, 3)])
def test_lu_jvp(shape, dtype):
    # Random matrices: the pivot order does not change under the finite-difference step.
    rng = np.random.default_rng(4)
    check_jvp(L.lu_p, arrays(normal(rng, shape, dtype)), rng=rng)


def test_lu_jvp_reconstructs_the_permuted_tangent():
    # d(L U) = dL U + L dU = P dA, with L, U (and dL, dU) read back out of the packed lu tangent.
    rng = np.random.default_rng(5)
    x = normal(rng, (4, 4), np.float64)
    dx = normal(rng, (4, 4), np.float64)
    (lu, _, permutation), (dlu, dpivots, dpermutation) = jvp_of(L.lu_p)(arrays(x), arrays(dx))
    assert isinstance(dpivots, Zero) and isinstance(dpermutation, Zero)
    lu, dlu = np.asarray(lu), np.asarray(dlu)
    low, up = np.tril(lu, -1) + np.eye(4), np.triu(lu)
    np.testing.assert_allclose(np.tril(dlu, -1) @ up + low @ np.triu(dlu), dx[np.asarray(permutation)], atol=1e-12)


def test_lu_pivots_to_permutation_has_no_derivative():
    prim = L.lu_pivots_to_permutation_p
    assert prim.rule_state("jvp") == "zero" and prim.rule_state("transpose") == "unsupported"


# -- qr ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, full_matrices", [
    ((3, 3), True), ((3, 3), False), ((5, 3), False), ((1, 1), True), ((2, 4, 2), False), ((2, 3, 3), True),
    ((2, 4), False), ((2, 4), True), ((2, 2, 5), False), ((4, 2), True), ((2, 5, 3), True), ((3, 1), True),
])
def test_qr_jvp(shape, full_matrices, dtype):
    rng = np.random.default_rng(6)
    check_jvp(L.qr_p, arrays(normal(rng, shape, dtype)), dict(full_matrices=full_matrices), rng=rng)


# -- eigh --------------------------------------------------------------------------------------------------
def eigh_invariants(outs):
    v, w = outs
    return [w, projectors(v), (v * w[..., None, :]) @ H(v)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, n", [((), 1), ((), 4), ((2,), 3), ((2, 2), 2)])
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_jvp(batch, n, lower, dtype):
    rng = np.random.default_rng(7)
    x = well_separated_hermitian(rng, batch, n, dtype)
    check_invariant_jvp(L.eigh_p, x, dict(lower=lower, sort_eigenvalues=True), eigh_invariants, rng)


@pytest.mark.parametrize("lower", [True, False])
def test_eigh_jvp_real_vectors_directly(lower):
    # Real eigenvectors are fixed up to sign, which does not flip under a small step: compare them directly.
    rng = np.random.default_rng(8)
    check_jvp(L.eigh_p, arrays(well_separated_hermitian(rng, (2,), 3, np.float64)), dict(lower=lower), rng=rng)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_jvp_keeps_jax_gauge(dtype):
    # JAX's dV = V (F o V^H dA V) with F zero on the diagonal: V^H dV has a zero diagonal.
    rng = np.random.default_rng(9)
    x = well_separated_hermitian(rng, (), 4, dtype)
    (v, _), (dv, _) = jvp_of(L.eigh_p)(arrays(x), arrays(normal(rng, (4, 4), dtype)))
    np.testing.assert_allclose(np.diagonal(H(np.asarray(v)) @ np.asarray(dv)), 0, atol=1e-12)


# -- eig ---------------------------------------------------------------------------------------------------
def eig_invariants(reference):
    """The eigenvalues, listed in the order of the nearest ``reference`` eigenvalue (LAPACK's order can change)."""

    def invariant(outs):
        (w,) = outs
        order = np.argmin(np.abs(w[..., None, :] - reference[..., :, None]), axis=-1)
        return [np.take_along_axis(w, order, axis=-1)]

    return invariant


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4)])
def test_eig_jvp(shape, dtype):
    rng = np.random.default_rng(10)
    x = normal(rng, shape, dtype)  # a real x has conjugate pairs of complex eigenvalues
    params = dict(compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    (w,) = values(L.eig_p.bind(jnp.asarray(x), **params))
    check_invariant_jvp(L.eig_p, x, params, eig_invariants(w), rng)


@pytest.mark.parametrize("left, right", [(True, False), (False, True), (True, True)])
def test_eig_jvp_of_eigenvectors_is_not_implemented(left, right):
    x = jnp.asarray(np.eye(2))
    with pytest.raises(NotImplementedError, match="eigenvectors"):
        jvp_of(L.eig_p)([x], [x], compute_left_eigenvectors=left, compute_right_eigenvectors=right)


# -- svd ---------------------------------------------------------------------------------------------------
def svd_invariants(outs):
    s, u, vh = outs
    k = s.shape[-1]
    u, v = u[..., :, :k], H(vh)[..., :, :k]  # full_matrices: the extra columns are not determined
    pairs = np.einsum("...ai,...bi->...iab", u, np.conj(v))  # u_i v_i^H: one phase shared by both
    return [s, projectors(u), projectors(v), pairs, (u * s[..., None, :]) @ H(v)]


SVD_SHAPES = [(1, 1), (3, 3), (4, 2), (2, 4), (2, 3, 3), (2, 5, 3), (2, 3, 5)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd_jvp(shape, dtype):
    rng = np.random.default_rng(11)
    full = shape[-1] == shape[-2]  # full_matrices is supported for square matrices
    params = dict(full_matrices=full, compute_uv=True)
    check_invariant_jvp(L.svd_p, normal(rng, shape, dtype), params, svd_invariants, rng)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd_jvp_of_singular_values_only(shape, dtype):
    rng = np.random.default_rng(12)
    params = dict(full_matrices=True, compute_uv=False)
    check_invariant_jvp(L.svd_p, normal(rng, shape, dtype), params, lambda outs: outs, rng)


def test_svd_jvp_full_matrices_of_a_rectangular_matrix_is_not_implemented():
    x = jnp.asarray(np.ones((3, 2)))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        jvp_of(L.svd_p)([x], [x], full_matrices=True, compute_uv=True)


# -- rules under the IR builder ------------------------------------------------------------------------------
def builder_cases():
    rng = np.random.default_rng(13)
    spd = positive_definite(rng, (2,), 3, np.complex128)
    square = normal(rng, (3, 3), np.float64)
    flags = dict(left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    return [
        (L.cholesky_p, [spd], {}),
        (L.triangular_solve_p, solve_operands(rng, flags, (2,), 3, 2, np.complex128), flags),
        (L.lu_p, [normal(rng, (2, 4, 3), np.float64)], {}),
        (L.qr_p, [normal(rng, (4, 3), np.complex128)], dict(full_matrices=False)),
        (L.eigh_p, [well_separated_hermitian(rng, (), 3, np.complex128)], dict(lower=True, sort_eigenvalues=True)),
        (L.eig_p, [square], dict(compute_left_eigenvectors=False, compute_right_eigenvectors=False)),
        (L.svd_p, [normal(rng, (2, 3), np.complex128)], dict(full_matrices=False, compute_uv=True)),
        (L.svd_p, [normal(rng, (4, 2), np.float64)], dict(full_matrices=False, compute_uv=True)),
    ]


@pytest.mark.parametrize("case", range(8))
def test_jvp_rules_record_ir(case):
    # The rule run on symbolic values records a function that computes what the eager rule computes.
    prim, primals, params = builder_cases()[case]
    primals = arrays(*primals)
    rng = np.random.default_rng(14)
    tangents = arrays(*(random_like(aval_of(p), rng) for p in primals))
    rule = jvp_of(prim)
    builder = Builder("jvp")
    with interpreting(builder):
        xs = [builder.param(aval_of(p)) for p in primals]
        ts = [builder.param(tangent_aval(aval_of(p))) for p in primals]
        outs, touts = rule(xs, ts, **params)
    outs, touts = (outs, touts) if prim.multiple_results else ([outs], [touts])
    touts = [t for t in touts if not isinstance(t, Zero)]
    fn = builder.finish([*outs, *touts])
    verify(fn)
    recorded = eval_function(fn, *primals, *tangents)
    eager_outs, eager_touts = rule(primals, tangents, **params)
    eager_outs, eager_touts = (eager_outs, eager_touts) if prim.multiple_results else ([eager_outs], [eager_touts])
    eager = [*eager_outs, *(t for t in eager_touts if not isinstance(t, Zero))]
    assert len(recorded) == len(eager)
    for r, e in zip(recorded, eager):
        np.testing.assert_allclose(np.asarray(r), np.asarray(e), rtol=1e-12, atol=1e-12)


def test_transpose_marks():
    for prim in (L.cholesky_p, L.lu_p, L.qr_p, L.eigh_p, L.eig_p, L.svd_p):
        assert prim.jvp_rule is not None and prim.transpose_rule is None
        assert prim.rule_state("transpose") == "unsupported"
    assert L.triangular_solve_p.transpose_rule is not None and not L.triangular_solve_p.linear
