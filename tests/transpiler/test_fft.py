"""The fft primitive: each transform type against NumPy in double precision, dtypes as JAX gives them, the
shape rule against the implementation, inverse round trips, empty shapes and bad operands."""

import numpy as np
import pytest

from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.primitives.fft import FftType, fft_p, fft_type_of
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(1)


def run(x, fft_type, fft_lengths):
    rule = fft_p.abstract_eval(TensorType(x.dtype, x.shape), fft_type=fft_type, fft_lengths=fft_lengths)
    out = fft_p.impl(x, fft_type=fft_type, fft_lengths=fft_lengths)
    assert (out.shape, out.dtype) == (rule.shape, rule.dtype), f"impl {out.shape} {out.dtype} vs rule {rule}"
    return out


def random(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


# (fft_type, operand shape, fft_lengths, float64 oracle on the trailing axes)
CASES = [
    (FftType.FFT, (8,), (8,), lambda x, s: np.fft.fftn(x, s, axes=(-1,))),
    (FftType.FFT, (3, 5), (5,), lambda x, s: np.fft.fftn(x, s, axes=(-1,))),
    (FftType.FFT, (2, 4, 6), (4, 6), lambda x, s: np.fft.fftn(x, s, axes=(-2, -1))),
    (FftType.FFT, (2, 3, 4, 5), (3, 4, 5), lambda x, s: np.fft.fftn(x, s, axes=(-3, -2, -1))),
    (FftType.IFFT, (7,), (7,), lambda x, s: np.fft.ifftn(x, s, axes=(-1,))),
    (FftType.IFFT, (2, 4, 6), (4, 6), lambda x, s: np.fft.ifftn(x, s, axes=(-2, -1))),
    (FftType.RFFT, (8,), (8,), lambda x, s: np.fft.rfftn(x, s, axes=(-1,))),
    (FftType.RFFT, (3, 7), (7,), lambda x, s: np.fft.rfftn(x, s, axes=(-1,))),
    (FftType.RFFT, (2, 4, 6), (4, 6), lambda x, s: np.fft.rfftn(x, s, axes=(-2, -1))),
    (FftType.IRFFT, (5,), (8,), lambda x, s: np.fft.irfftn(x, s, axes=(-1,))),
    (FftType.IRFFT, (5,), (9,), lambda x, s: np.fft.irfftn(x, s, axes=(-1,))),
    (FftType.IRFFT, (2, 4, 4), (4, 6), lambda x, s: np.fft.irfftn(x, s, axes=(-2, -1))),
]
RESULT_DTYPES = {  # (fft_type, precision) -> (operand dtype, result dtype), as JAX types them
    (FftType.FFT, 32): (np.complex64, np.complex64), (FftType.FFT, 64): (np.complex128, np.complex128),
    (FftType.IFFT, 32): (np.complex64, np.complex64), (FftType.IFFT, 64): (np.complex128, np.complex128),
    (FftType.RFFT, 32): (np.float32, np.complex64), (FftType.RFFT, 64): (np.float64, np.complex128),
    (FftType.IRFFT, 32): (np.complex64, np.float32), (FftType.IRFFT, 64): (np.complex128, np.float64),
}


@pytest.mark.parametrize("precision", [32, 64])
@pytest.mark.parametrize("fft_type, shape, lengths, oracle", CASES)
def test_fft_matches_numpy(fft_type, shape, lengths, oracle, precision):
    dtype, result_dtype = RESULT_DTYPES[fft_type, precision]
    x = random(shape, dtype)
    out = run(x, fft_type, lengths)
    assert out.dtype == result_dtype
    expected = oracle(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), lengths)
    tol = 1e-4 if precision == 32 else 1e-12
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol * np.sqrt(np.prod(lengths)))


def test_fft_known_values():
    np.testing.assert_allclose(run(np.array([1, 2, 3, 4], np.complex64), FftType.FFT, (4,)), [10, -2 + 2j, -2, -2 - 2j])
    # recorded from jax 0.10.2: an impulse on the half spectrum comes back as a constant 1/n
    out = run(np.ones((4, 5), np.complex64), FftType.IRFFT, (4, 9))
    expected = np.zeros((4, 9), np.float32)
    expected[0, 0] = 1
    np.testing.assert_allclose(out, expected, atol=1e-6)


@pytest.mark.parametrize("shape, lengths", [((6,), (6,)), ((2, 7), (7,)), ((3, 4, 5), (4, 5)),
                                            ((2, 2, 3, 4), (2, 3, 4))])
def test_inverse_transforms_round_trip(shape, lengths):
    x = random(shape, np.float64)
    half = run(x, FftType.RFFT, lengths)
    np.testing.assert_allclose(run(half, FftType.IRFFT, lengths), x, atol=1e-12)
    z = random(shape, np.complex128)
    np.testing.assert_allclose(run(run(z, FftType.FFT, lengths), FftType.IFFT, lengths), z, atol=1e-12)


@pytest.mark.parametrize("fft_type, shape, dtype, lengths, out_shape", [
    (FftType.FFT, (0, 4), np.complex64, (4,), (0, 4)),
    (FftType.RFFT, (0, 4), np.float32, (4,), (0, 3)),
    (FftType.IRFFT, (0, 3), np.complex64, (4,), (0, 4)),
    (FftType.FFT, (3, 0), np.complex64, (0,), (3, 0)),
])
def test_empty(fft_type, shape, dtype, lengths, out_shape):
    out = run(np.zeros(shape, dtype), fft_type, lengths)
    assert out.shape == out_shape


def test_fft_type_spellings_and_printing():
    assert fft_type_of("rfft") is FftType.RFFT and fft_type_of(3) is FftType.IRFFT
    assert fft_type_of(FftType.IFFT) is FftType.IFFT
    assert str(FftType.RFFT) == "RFFT"
    with pytest.raises(ValueError, match="fft_type must be one of"):
        fft_type_of("dct")
    out = run(np.ones(4, np.float32), "RFFT", (4,))
    np.testing.assert_allclose(out, [4, 0, 0])


def test_results_are_never_weak():
    rule = fft_p.abstract_eval(TensorType(np.complex64, (4,), True), fft_type=FftType.FFT, fft_lengths=(4,))
    assert rule == TensorType(np.complex64, (4,), False)


@pytest.mark.parametrize("fft_type, shape, dtype, lengths, error, message", [
    (FftType.FFT, (4,), np.float32, (4,), PrimitiveTypeError, "FFT takes a complex operand"),
    (FftType.IRFFT, (3,), np.float32, (4,), PrimitiveTypeError, "IRFFT takes a complex operand"),
    (FftType.RFFT, (4,), np.complex64, (4,), PrimitiveTypeError, "RFFT takes a real operand"),
    (FftType.FFT, (2, 2, 2, 2), np.complex64, (2, 2, 2, 2), PrimitiveValueError, "1 to 3 trailing axes"),
    (FftType.FFT, (4,), np.complex64, (), PrimitiveValueError, "1 to 3 trailing axes"),
    (FftType.FFT, (4,), np.complex64, (2, 4), PrimitiveValueError, "fewer than 2 axes"),
    (FftType.FFT, (4, 5), np.complex64, (4,), PrimitiveValueError, r"needs trailing axes \(4,\)"),
    (FftType.RFFT, (4, 5), np.float32, (4,), PrimitiveValueError, r"needs trailing axes \(4,\)"),
    (FftType.IRFFT, (4, 5), np.complex64, (4, 6), PrimitiveValueError, r"needs trailing axes \(4, 4\)"),
    (FftType.FFT, (4,), np.complex64, (-4,), PrimitiveValueError, "non-negative"),
])
def test_bad_operands(fft_type, shape, dtype, lengths, error, message):
    with pytest.raises(error, match=f"fft: .*{message}"):
        fft_p.abstract_eval(TensorType(dtype, shape), fft_type=fft_type, fft_lengths=lengths)
