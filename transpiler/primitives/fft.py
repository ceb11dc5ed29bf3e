"""The discrete Fourier transform primitive over the trailing 1 to 3 axes of an array.

``fft_type`` picks the transform: complex to complex forward (FFT, X_k = sum_j x_j e^{-2 pi i jk/n}) or
inverse (IFFT, with the 1/n factor), real to half-spectrum (RFFT: the last axis keeps n//2 + 1 entries,
the rest follow from Hermitian symmetry) and back (IRFFT). ``fft_lengths`` are the transformed sizes (the
real side's for RFFT and IRFFT). Precision follows the operand: complex64 <-> float32, complex128 <-> float64.

Every transform is linear, so its JVP is the transform of the tangent; the transpose rule is JAX's (the
pairing of a complex cotangent c with a tangent t is Re(sum(c * t)), no conjugation).
"""

from __future__ import annotations

import enum

import numpy as np

from srcjax.transpiler.primitives.ad import aval_of
from srcjax.transpiler.primitives.batching import moveaxis
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.primitives.elementwise import conj_p, real_p
from srcjax.transpiler.primitives.shape import pad_p
from srcjax.transpiler.types import TensorType, complex_dtype, real_dtype


class FftType(enum.IntEnum):
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3

    def __str__(self) -> str:  # the printed IR says fft_type=RFFT
        return self.name


def fft_type_of(value: FftType | str | int) -> FftType:
    """An ``FftType`` from itself, its name (``'rfft'`` or ``'RFFT'``) or its number."""
    if isinstance(value, str):
        try:
            return FftType[value.upper()]
        except KeyError:
            raise ValueError(f"fft_type must be one of {[t.name for t in FftType]}, got {value!r}") from None
    try:
        return FftType(value)
    except ValueError:
        raise ValueError(f"fft_type must be one of {[t.name for t in FftType]}, got {value!r}") from None


fft_p = Primitive("fft", params=("fft_type", "fft_lengths"))


@fft_p.def_shape
def _fft_shape(x: TensorType, *, fft_type, fft_lengths) -> TensorType:
    kind, lengths = fft_type_of(fft_type), tuple(fft_lengths)
    check(all(isinstance(n, (int, np.integer)) and n >= 0 for n in lengths), "fft",
          f"fft_lengths must be non-negative ints, got {fft_lengths}", kind="value")
    x = x.strong()  # as in JAX, a transform is never weakly typed
    rank = len(lengths)
    check(1 <= rank <= 3, "fft", f"transforms 1 to 3 trailing axes, got fft_lengths={lengths}", kind="value")
    check(x.ndim >= rank, "fft", f"operand {x} has fewer than {rank} axes to transform", kind="value")
    trailing, batch = x.shape[x.ndim - rank :], x.shape[: x.ndim - rank]
    if kind == FftType.RFFT:
        check(x.dtype.kind == "f", "fft", f"RFFT takes a real operand, got {x.dtype.name}")
    else:
        check(x.dtype.kind == "c", "fft", f"{kind.name} takes a complex operand, got {x.dtype.name}")
    if kind == FftType.IRFFT:
        expected = (*lengths[:-1], lengths[-1] // 2 + 1)  # the half spectrum of the last axis
        check(trailing == expected, "fft",
              f"IRFFT of lengths {lengths} needs trailing axes {expected}, got operand {x}", kind="value")
        return x.update(dtype=real_dtype(x.dtype), shape=(*batch, *lengths))
    check(trailing == lengths, "fft", f"{kind.name} of lengths {lengths} needs trailing axes {lengths}, "
          f"got operand {x}", kind="value")
    if kind == FftType.RFFT:
        return x.update(dtype=complex_dtype(x.dtype), shape=(*batch, *lengths[:-1], lengths[-1] // 2 + 1))
    return x


_NUMPY_FFT = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn, FftType.RFFT: np.fft.rfftn,
              FftType.IRFFT: np.fft.irfftn}


@fft_p.def_impl
def _fft_impl(x, *, fft_type, fft_lengths):
    out_type = _fft_shape(TensorType(x.dtype, x.shape), fft_type=fft_type, fft_lengths=fft_lengths)
    if out_type.size == 0 or 0 in fft_lengths:  # pocketfft rejects empty transforms; there is nothing to sum
        return np.zeros(out_type.shape, out_type.dtype)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out = _NUMPY_FFT[fft_type_of(fft_type)](x, s=tuple(fft_lengths), axes=axes)
    return out.astype(out_type.dtype, copy=False)  # pocketfft may compute in double precision


def _rfft_transpose(ct, lengths: tuple[int, ...]):
    # RFFT = (keep the first n//2 + 1 entries of the last axis) o FFT o (real -> complex); transposed: pad
    # with zeros, FFT (the DFT matrix is symmetric), keep the real part.
    n = lengths[-1]
    ndim = aval_of(ct).ndim
    padding = [(0, 0, 0)] * (ndim - 1) + [(0, n - (n // 2 + 1), 0)]
    full = pad_p.bind(ct, np.zeros((), aval_of(ct).dtype), padding_config=tuple(padding))
    return real_p.bind(fft_p.bind(full, fft_type=FftType.FFT, fft_lengths=lengths))


def _irfft_transpose(ct, lengths: tuple[int, ...]):
    # IRFFT reads each entry of the half spectrum strictly between 0 and n/2 twice (it and its mirror image),
    # so its transpose is the RFFT of the cotangent scaled by 1/prod(lengths), doubled there, and conjugated
    # (JAX's rule).
    spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=lengths)
    half, n = aval_of(spectrum).shape[-1], lengths[-1]
    weights = ([1.0] + [2.0] * (half - 2 + n % 2) + [1.0] * (1 - n % 2))[:half]
    scale = 1 / max(int(np.prod(lengths)), 1)
    return conj_p.bind(spectrum * np.asarray(weights, aval_of(spectrum).dtype) * scale)


@fft_p.def_linear
def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    kind, lengths = fft_type_of(fft_type), tuple(fft_lengths)
    if kind == FftType.RFFT:
        return [_rfft_transpose(ct, lengths)]
    if kind == FftType.IRFFT:
        return [_irfft_transpose(ct, lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]  # the DFT matrix is symmetric: F^T = F


@fft_p.def_vmap
def _fft_vmap(args, dims, *, fft_type, fft_lengths):
    # the transform maps over its leading axes: a batch axis there stays, one among the transformed axes
    # moves to the front
    (x,), (d,) = args, dims
    if d >= aval_of(x).ndim - len(fft_lengths):
        x, d = moveaxis(x, d, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


register_module(globals())
