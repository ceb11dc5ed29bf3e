"""Batching rules of the linear-algebra, FFT, random and custom primitives: each rule on concrete batched
arrays against stacking the per-element results of ``bind``, the batch axis at every position (a leading
one stays where it is, one inside the matrix moves to the front) or absent, and a few rules recorded as IR."""

import numpy as np
import pytest

from tests.transpiler.ad_checks import x64  # noqa: F401
from tests.transpiler.vmap_checks import batch, check_vmap, check_vmap_symbolic, dims_cases
from srcjax.transpiler.primitives import custom, fft, linalg as L, random

pytestmark = pytest.mark.usefixtures("x64")
SIZE = 3


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def normal(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    return (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)


def every_axis(rank):
    """Each position of a batch axis in an operand of ``rank``, and unbatched."""
    return [None, *range(rank + 1)]


def positive_definite(rng, shape, dtype):
    a = normal(rng, shape, dtype)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


def hermitian(rng, shape, dtype):
    a = normal(rng, shape, dtype)
    return a + np.conj(np.swapaxes(a, -1, -2))


def well_conditioned(rng, shape, dtype):
    return normal(rng, shape, dtype) + 3 * np.eye(*shape[-2:], dtype=dtype)


# -- one-operand factorizations: (primitive, params, example maker, example shape) ---------------------------
FACTORIZATIONS = [
    ("cholesky", L.cholesky_p, {}, positive_definite, (3, 3)),
    ("cholesky, leading axis", L.cholesky_p, {}, positive_definite, (2, 3, 3)),
    ("lu, square", L.lu_p, {}, well_conditioned, (4, 4)),
    ("lu, wide, leading axis", L.lu_p, {}, normal, (2, 3, 5)),
    ("lu, tall", L.lu_p, {}, normal, (5, 3)),
    ("qr, full", L.qr_p, dict(full_matrices=True), normal, (4, 3)),
    ("qr, reduced, leading axis", L.qr_p, dict(full_matrices=False), normal, (2, 4, 3)),
    ("eigh, lower", L.eigh_p, dict(lower=True, sort_eigenvalues=True), hermitian, (4, 4)),
    ("eigh, upper, leading axis", L.eigh_p, dict(lower=False, sort_eigenvalues=True), hermitian, (2, 3, 3)),
    ("eig, both vectors", L.eig_p, dict(compute_left_eigenvectors=True, compute_right_eigenvectors=True),
     normal, (3, 3)),
    ("eig, values only", L.eig_p, dict(compute_left_eigenvectors=False, compute_right_eigenvectors=False),
     normal, (2, 3, 3)),
    ("svd, full", L.svd_p, dict(full_matrices=True, compute_uv=True), normal, (4, 3)),
    ("svd, reduced, leading axis", L.svd_p, dict(full_matrices=False, compute_uv=True), normal, (2, 3, 5)),
    ("svd, values only", L.svd_p, dict(full_matrices=False, compute_uv=False), normal, (3, 3)),
    ("0x0 matrices", L.qr_p, dict(full_matrices=True), normal, (0, 0)),
]


@pytest.mark.parametrize("name, prim, params, make, shape", FACTORIZATIONS, ids=[c[0] for c in FACTORIZATIONS])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_factorization(name, prim, params, make, shape, dtype, rng):
    examples = [[make(rng, shape, dtype)] for _ in range(SIZE)]
    for d in every_axis(len(shape))[1:]:
        out_dims = check_vmap(prim, batch(examples, [d]), [d], params, rtol=1e-10, atol=1e-10)
        expected = d if d < len(shape) - 1 else 0  # a leading batch axis stays where it is
        assert set(out_dims) == {expected}


def test_factorization_symbolic(rng):
    # a batch axis inside the matrix moves to the front, one transpose for every result
    x = np.stack([well_conditioned(rng, (3, 3), np.float64) for _ in range(SIZE)], axis=2)
    fn = check_vmap_symbolic(L.lu_p, [x], [2], rtol=1e-10, atol=1e-10)
    assert [op.prim.name for op in fn.body.ops] == ["transpose", "lu"]
    fn = check_vmap_symbolic(L.eigh_p, [hermitian(rng, (2, SIZE, 3, 3), np.float64)], [1],
                             dict(lower=True, sort_eigenvalues=True), rtol=1e-10, atol=1e-10)
    assert [op.prim.name for op in fn.body.ops] == ["eigh"]


@pytest.mark.parametrize("size", [1, 0])
def test_factorization_small_batches(size, rng):
    examples = [[positive_definite(rng, (3, 3), np.float64)] for _ in range(size)]
    args = batch(examples, [0]) if size else [np.zeros((0, 3, 3))]
    check_vmap(L.cholesky_p, args, [0])
    check_vmap(L.lu_p, [a.swapaxes(0, 2) for a in args], [2])


@pytest.mark.parametrize("shape", [(4,), (2, 3)])
def test_lu_pivots_to_permutation(shape, rng):
    # valid pivots: step i swaps row i with a row at or below it
    pivots = lambda: np.stack([rng.integers(i, 5, shape[:-1]) for i in range(shape[-1])], -1).astype(np.int32)
    examples = [[pivots()] for _ in range(SIZE)]
    for d in every_axis(len(shape))[1:]:
        out_dims = check_vmap(L.lu_pivots_to_permutation_p, batch(examples, [d]), [d], dict(permutation_size=5))
        assert out_dims == [d if d < len(shape) else 0]


# -- triangular_solve -----------------------------------------------------------------------------------
SOLVES = [  # name, a shape, b shape, flags
    ("left, lower", (3, 3), (3, 2), dict(left_side=True, lower=True)),
    ("left, upper, transposed, unit diagonal", (3, 3), (3, 4),
     dict(left_side=True, lower=False, transpose_a=True, unit_diagonal=True)),
    ("right, lower, conjugated", (3, 3), (2, 3), dict(left_side=False, lower=True, conjugate_a=True)),
    ("right, upper, leading axis", (2, 3, 3), (2, 4, 3), dict(left_side=False, lower=False, transpose_a=True)),
    ("left, leading axis", (2, 3, 3), (2, 3, 1), dict(left_side=True, lower=True, conjugate_a=True)),
]


@pytest.mark.parametrize("name, a_shape, b_shape, flags", SOLVES, ids=[c[0] for c in SOLVES])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_triangular_solve(name, a_shape, b_shape, flags, dtype, rng):
    examples = [[well_conditioned(rng, a_shape, dtype), normal(rng, b_shape, dtype)] for _ in range(SIZE)]
    for da in every_axis(len(a_shape)):
        for db in every_axis(len(b_shape)):
            if da is None and db is None:
                continue
            check_vmap(L.triangular_solve_p, batch(examples, [da, db]), [da, db], flags, rtol=1e-10, atol=1e-10)


def test_triangular_solve_with_one_matrix_joins_the_batch_into_b(rng):
    # a unbatched: no broadcast of a, one solve with the batch folded into b's columns (left side)
    a, b = well_conditioned(rng, (3, 3), np.float64), normal(rng, (SIZE, 3, 2))
    flags = dict(left_side=True, lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False)
    fn = check_vmap_symbolic(L.triangular_solve_p, [a, b], [None, 0], flags)
    names = [op.prim.name for op in fn.body.ops]
    assert names.count("triangular_solve") == 1 and "broadcast_in_dim" not in names
    assert check_vmap(L.triangular_solve_p, [a, b], [None, 0], flags, rtol=1e-10, atol=1e-10) == [2]


# -- fft ------------------------------------------------------------------------------------------------
FFTS = [  # name, fft type, example shape, fft lengths
    ("fft 1-d", fft.FftType.FFT, (8,), (8,)),
    ("ifft 2-d", fft.FftType.IFFT, (4, 6), (4, 6)),
    ("fft over the last axis of two", fft.FftType.FFT, (3, 5), (5,)),
    ("rfft", fft.FftType.RFFT, (2, 8), (8,)),
    ("rfft 3-d", fft.FftType.RFFT, (2, 3, 4), (2, 3, 4)),
    ("irfft odd", fft.FftType.IRFFT, (3, 4), (7,)),
    ("irfft 2-d", fft.FftType.IRFFT, (4, 5), (4, 8)),
    ("empty", fft.FftType.FFT, (2, 0), (0,)),
]


@pytest.mark.parametrize("name, kind, shape, lengths", FFTS, ids=[c[0] for c in FFTS])
def test_fft(name, kind, shape, lengths, rng):
    dtype = np.float64 if kind == fft.FftType.RFFT else np.complex128
    examples = [[normal(rng, shape, dtype)] for _ in range(SIZE)]
    params = dict(fft_type=kind, fft_lengths=lengths)
    for d in every_axis(len(shape))[1:]:
        out_dims = check_vmap(fft.fft_p, batch(examples, [d]), [d], params, rtol=1e-12, atol=1e-12)
        assert out_dims == [d if d < len(shape) + 1 - len(lengths) else 0]


def test_fft_symbolic(rng):
    x = normal(rng, (4, SIZE, 8), np.complex128)
    fn = check_vmap_symbolic(fft.fft_p, [x], [1], dict(fft_type=fft.FftType.IFFT, fft_lengths=(8,)))
    assert [op.prim.name for op in fn.body.ops] == ["fft"]


# -- threefry2x32 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_threefry2x32(shape, rng):
    words = lambda: rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)
    examples = [[words() for _ in range(4)] for _ in range(SIZE)]
    for dims in dims_cases([len(shape)] * 4, limit=20):
        check_vmap(random.threefry2x32_p, batch(examples, dims), dims)


def test_threefry2x32_symbolic(rng):
    # one key (broadcast to the counters' shape) for a batch of counters
    key = np.full((2, 4), [[0], [42]], np.uint32)
    counters = rng.integers(0, 2**32, (2, SIZE, 4), dtype=np.uint64).astype(np.uint32)
    args = [key[0], key[1], counters[0], counters[1]]
    fn = check_vmap_symbolic(random.threefry2x32_p, args, [None, None, 0, 0])
    assert [op.prim.name for op in fn.body.ops].count("threefry2x32") == 1


# -- stop_gradient ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (3, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_stop_gradient(shape, dtype, rng):
    examples = [[normal(rng, shape).astype(dtype)] for _ in range(SIZE)]
    for d in every_axis(len(shape))[1:]:
        assert check_vmap(custom.stop_gradient_p, batch(examples, [d]), [d]) == [d]
