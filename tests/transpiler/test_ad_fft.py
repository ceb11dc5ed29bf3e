"""Differentiation rules of ``fft``: its JVP (the transform of the tangent) against central differences and
its transpose by the dot-product test, for the four transform types over 1 to 3 axes, odd, even, unit and
empty lengths, and under the IR builder.

The transpose is JAX's: the pairing of a cotangent c with a tangent t is Re(sum(c * t)), no conjugation
(RFFT and IRFFT map between real and complex arrays, so only the real part of the pairing is defined).
FFT and IFFT are complex-linear, so for them the complex pairing itself must match as well.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax.runtime.numpy as jnp
from tests.transpiler.ad_checks import check_jvp, check_transpose, inner, random_like, x64  # noqa: F401
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.primitives.ad import UndefinedPrimal, aval_of, jvp_of
from srcjax.transpiler.primitives.core import interpreting
from srcjax.transpiler.primitives.fft import FftType, fft_p
from srcjax.transpiler.types import TensorType
from srcjax.transpiler.verifier import verify

pytestmark = pytest.mark.usefixtures("x64")

# (fft_type, operand shape, fft_lengths)
CASES = [
    (FftType.FFT, (5,), (5,)),
    (FftType.FFT, (2, 4), (4,)),
    (FftType.FFT, (3, 4), (3, 4)),
    (FftType.FFT, (2, 2, 3, 2), (2, 3, 2)),
    (FftType.FFT, (1,), (1,)),
    (FftType.FFT, (0, 3), (3,)),
    (FftType.IFFT, (6,), (6,)),
    (FftType.IFFT, (2, 3, 5), (3, 5)),
    (FftType.RFFT, (6,), (6,)),
    (FftType.RFFT, (2, 7), (7,)),
    (FftType.RFFT, (3, 4), (3, 4)),
    (FftType.RFFT, (2, 3, 5), (2, 3, 5)),
    (FftType.RFFT, (1,), (1,)),
    (FftType.RFFT, (2,), (2,)),
    (FftType.IRFFT, (4,), (6,)),
    (FftType.IRFFT, (2, 4), (7,)),
    (FftType.IRFFT, (3, 3), (3, 4)),
    (FftType.IRFFT, (2, 3, 3), (2, 3, 5)),
    (FftType.IRFFT, (1,), (1,)),
    (FftType.IRFFT, (2,), (2,)),
    (FftType.IRFFT, (0, 3), (4,)),
]


def operand(rng, kind, shape):
    dtype = np.float64 if kind == FftType.RFFT else np.complex128
    return jnp.asarray(random_like(TensorType(dtype, shape), rng))


def params(kind, lengths):
    return dict(fft_type=kind, fft_lengths=lengths)


@pytest.mark.parametrize("kind, shape, lengths", CASES)
def test_fft_jvp(kind, shape, lengths):
    rng = np.random.default_rng(0)
    check_jvp(fft_p, [operand(rng, kind, shape)], params(kind, lengths), rng=rng)


@pytest.mark.parametrize("kind, shape, lengths", CASES)
def test_fft_transpose_by_real_pairing(kind, shape, lengths):
    # Re <c, L(t)> == Re <T(c), t>; with t real (RFFT) or c real (IRFFT) one side is real already.
    rng = np.random.default_rng(1)
    t = operand(rng, kind, shape)
    image = fft_p.bind(t, **params(kind, lengths))
    c = jnp.asarray(random_like(aval_of(image), rng))
    (ct,) = fft_p.transpose_rule(c, UndefinedPrimal(aval_of(t)), **params(kind, lengths))
    assert (aval_of(ct).shape, aval_of(ct).dtype) == (aval_of(t).shape, aval_of(t).dtype)
    lhs, rhs = inner(c, image).real, inner(ct, t).real
    assert abs(lhs - rhs) <= 1e-9 * max(1.0, abs(lhs)), f"{kind.name}: {lhs} vs {rhs}"


@pytest.mark.parametrize("kind, shape, lengths", [c for c in CASES if c[0] in (FftType.FFT, FftType.IFFT)])
def test_complex_fft_transpose_is_complex_linear(kind, shape, lengths):
    rng = np.random.default_rng(2)
    check_transpose(fft_p, [operand(rng, kind, shape)], params(kind, lengths), rng=rng, linear=[0])


def test_fft_transpose_is_the_same_transform_not_its_inverse():
    # F^T = F: the DFT matrix is symmetric. (The adjoint n * IFFT would differ.)
    c = jnp.asarray(np.array([1.0, 2.0j, -1.0, 0.5]))
    (ct,) = fft_p.transpose_rule(c, UndefinedPrimal(aval_of(c)), **params(FftType.FFT, (4,)))
    np.testing.assert_allclose(np.asarray(ct), np.fft.fft(np.asarray(c)), atol=1e-12)


def test_irfft_transpose_matches_jax():
    # JAX's linear_transpose of lax.fft(x, 'IRFFT', (5,)) at this cotangent (recorded).
    c = jnp.asarray(np.array([1.0, -2.0, 0.5, 3.0, 0.25]))
    (ct,) = fft_p.transpose_rule(c, UndefinedPrimal(TensorType(np.complex128, (3,))), **params(FftType.IRFFT, (5,)))
    np.testing.assert_allclose(np.asarray(ct), [0.55 + 0j, -0.94893569 - 1.44373612j, 1.39893569 + 0.42204979j],
                               atol=1e-7)


def test_fft_is_linear():
    assert fft_p.linear and fft_p.transpose_rule is not None and jvp_of(fft_p) is not None


@pytest.mark.parametrize("kind, shape, lengths", [
    (FftType.FFT, (2, 3), (3,)), (FftType.IFFT, (4,), (4,)), (FftType.RFFT, (2, 6), (6,)),
    (FftType.IRFFT, (3, 4), (3, 7)),
])
def test_fft_transpose_records_ir(kind, shape, lengths):
    rng = np.random.default_rng(3)
    t = operand(rng, kind, shape)
    c = jnp.asarray(random_like(aval_of(fft_p.bind(t, **params(kind, lengths))), rng))
    builder = Builder("fft_transpose")
    with interpreting(builder):
        symbolic = builder.param(aval_of(c))
        (ct,) = fft_p.transpose_rule(symbolic, UndefinedPrimal(aval_of(t)), **params(kind, lengths))
    fn = builder.finish([ct])
    verify(fn)
    (recorded,) = eval_function(fn, c)
    (eager,) = fft_p.transpose_rule(c, UndefinedPrimal(aval_of(t)), **params(kind, lengths))
    np.testing.assert_allclose(np.asarray(recorded), np.asarray(eager), rtol=1e-12, atol=1e-12)
