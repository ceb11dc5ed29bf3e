"""``srcjax.numpy.fft``: NumPy's discrete Fourier transforms on the ``fft`` primitive.

The primitive transforms the trailing 1 to 3 axes at their full length, so each function moves the chosen
axes to the end, crops or zero-pads them to the requested sizes ``s``, transforms (in groups of at most three
axes) and moves them back. Results are complex64 for 32-bit (and integer) input, complex128 for 64-bit, as
in JAX; ``norm`` scales like NumPy's: 'backward' (default: 1/n on the inverse), 'ortho' (1/sqrt(n) both
ways), 'forward' (1/n on the forward transform).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.lax.fourier import FftType
from srcjax.runtime.lax.fourier import fft as lax_fft
from srcjax.runtime.numpy._core import aval, check_arraylike, convert

__all__ = [
    "fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
    "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_INVERSE = (FftType.IFFT, FftType.IRFFT)


def _norm_factor(name: str, kind: FftType, size: int, norm: str | None) -> float | None:
    """What the primitive's result is multiplied by for ``norm`` (its IFFT and IRFFT already divide by n)."""
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f'jnp.fft.{name}: invalid norm value {norm!r}; should be "backward", "ortho" or "forward"')
    if norm in (None, "backward") or size == 0:
        return None
    if norm == "ortho":
        return math.sqrt(size) if kind in _INVERSE else 1 / math.sqrt(size)
    return float(size) if kind in _INVERSE else 1 / size


def _as_input(name: str, kind: FftType, a: Any) -> Any:
    """``a`` as the transform takes it: complex (or real, for rfft) of at least 32 bits."""
    check_arraylike(f"jnp.fft.{name}", a)
    a = jnp.asarray(a)
    dtype = aval(a).dtype
    if dtype.kind in "biu":  # (integers and bools transform in float32, 64-bit integers in float64, as JAX's)
        dtype = dtypes.to_inexact_dtype(dtype)
    if kind == FftType.RFFT:
        if dtype.kind == "c":
            raise ValueError(f"jnp.fft.{name}: only real inputs are supported, got {dtype.name}")
        wide = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
    else:
        wide = np.dtype(np.complex128) if dtype in (np.float64, np.complex128) else np.dtype(np.complex64)
    return convert(a, dtypes.canonicalize_dtype(wide))


def _axes(name: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    out = []
    for axis in axes:
        axis = operator.index(axis)
        if not -ndim <= axis < ndim:
            raise ValueError(f"jnp.fft.{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
        out.append(axis % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"jnp.fft.{name} does not support repeated axes, got axes {tuple(axes)}")
    return tuple(out)


def _resize(x: Any, axis: int, size: int) -> Any:
    """Crop or zero-pad ``x`` along ``axis`` to ``size``."""
    shape = aval(x).shape
    if size < shape[axis]:
        return lax.slice_in_dim(x, 0, size, axis=axis)
    if size > shape[axis]:
        config = [(0, size - shape[axis] if d == axis else 0, 0) for d in range(len(shape))]
        return lax.pad(x, np.zeros((), aval(x).dtype), config)
    return x


def _move(x: Any, source: Sequence[int], destination: Sequence[int]) -> Any:
    """``jnp.moveaxis`` through one transpose."""
    ndim = aval(x).ndim
    rest = [d for d in range(ndim) if d not in source]
    order = [None] * ndim
    for s, d in zip(source, destination, strict=True):
        order[d] = s
    remaining = iter(rest)
    permutation = [next(remaining) if o is None else o for o in order]
    return lax.transpose(x, permutation)


def _transform(x: Any, kind: FftType, lengths: tuple[int, ...]) -> Any:
    """The transform over the trailing ``len(lengths)`` axes, three at a time (the primitive's limit)."""
    if len(lengths) <= 3:
        return lax_fft(x, kind, lengths)
    outer, inner = lengths[:-3], lengths[-3:]
    ndim = aval(x).ndim
    outer_axes = list(range(ndim - len(lengths), ndim - 3))
    tail = list(range(ndim - len(outer), ndim))

    def outer_transform(y, outer_kind):
        y = _move(y, outer_axes, tail)
        return _move(_transform(y, outer_kind, outer), tail, outer_axes)

    # A real-input transform starts on the last axes; a real-output one ends there.
    if kind in (FftType.FFT, FftType.RFFT):
        return outer_transform(lax_fft(x, kind, inner), FftType.FFT)
    return lax_fft(outer_transform(x, FftType.IFFT), kind, inner)


def _fft_core(name: str, kind: FftType, a: Any, s: Sequence[int] | None, axes: Sequence[int] | None,
              norm: str | None) -> Any:
    a = _as_input(name, kind, a)
    ndim = aval(a).ndim
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n < 1 for n in s):
            raise ValueError(f"jnp.fft.{name}: transform sizes must be positive, got {s}")
        if axes is not None and len(s) != len(axes):
            raise ValueError(f"jnp.fft.{name}: s {s} and axes {tuple(axes)} have different lengths")
        if len(s) > ndim:
            raise ValueError(f"jnp.fft.{name}: s {s} has more sizes than the input has axes ({ndim})")
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = _axes(name, axes, ndim)
    if not axes:
        return a
    shape = aval(a).shape
    if s is None:
        s = tuple(shape[axis] for axis in axes)
        if kind == FftType.IRFFT:  # the half spectrum of n = 2 (m - 1) points
            s = (*s[:-1], max(0, 2 * (s[-1] - 1)))
    trailing = tuple(range(ndim - len(axes), ndim))
    x = _move(a, axes, trailing)
    input_sizes = (*s[:-1], s[-1] // 2 + 1) if kind == FftType.IRFFT else s
    for axis, size in zip(trailing, input_sizes, strict=True):
        x = _resize(x, axis, size)
    factor = _norm_factor(name, kind, math.prod(s), norm)
    x = _transform(x, kind, s)
    if factor is not None:
        x = jnp.multiply(x, factor)
    return _move(x, trailing, axes)


def _one_axis(n: int | None, axis: int) -> tuple[Sequence[int] | None, tuple[int]]:
    return (None if n is None else (n,)), (axis,)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core("fft", FftType.FFT, a, *_one_axis(n, axis), norm)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core("ifft", FftType.IFFT, a, *_one_axis(n, axis), norm)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core("rfft", FftType.RFFT, a, *_one_axis(n, axis), norm)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return _fft_core("irfft", FftType.IRFFT, a, *_one_axis(n, axis), norm)


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    return _fft_core("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    return _fft_core("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    return _fft_core("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None) -> Any:
    return _fft_core("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# hfft and ihfft are irfft and rfft seen from the other side: the signal is Hermitian and the spectrum real,
# so they conjugate and take the opposite scaling.
_OPPOSITE_NORM = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _opposite(name: str, norm: str | None) -> str:
    if norm not in _OPPOSITE_NORM:
        raise ValueError(f'jnp.fft.{name}: invalid norm value {norm!r}; should be "backward", "ortho" or "forward"')
    return _OPPOSITE_NORM[norm]


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    a = _as_input("hfft", FftType.IRFFT, a)
    return _fft_core("hfft", FftType.IRFFT, jnp.conj(a), *_one_axis(n, axis), _opposite("hfft", norm))


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    return jnp.conj(_fft_core("ihfft", FftType.RFFT, a, *_one_axis(n, axis), _opposite("ihfft", norm)))


# -- sample frequencies and shifts --------------------------------------------------------------------------
def _frequency_dtype(dtype: Any) -> np.dtype:
    return dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtypes.to_dtype(dtype))


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d n): the frequency of each FFT bin."""
    n = operator.index(n)
    dtype = _frequency_dtype(dtype)
    k = lax.iota(np.int32, n)
    k = jnp.where(k < (n + 1) // 2, k, k - n)  # the upper half of the bins are the negative frequencies
    return jnp.true_divide(convert(k, dtypes.default_float_dtype()), jnp.multiply(d, n)).astype(dtype)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """[0, 1, ..., floor(n/2)] / (d n): the frequency of each bin of an rfft."""
    n = operator.index(n)
    dtype = _frequency_dtype(dtype)
    k = lax.iota(dtypes.default_float_dtype(), n // 2 + 1)
    return jnp.true_divide(k, jnp.multiply(d, n)).astype(dtype)


def _shift(name: str, x: Any, axes: None | int | Sequence[int], direction: int) -> Any:
    check_arraylike(f"jnp.fft.{name}", x)
    x = jnp.asarray(x)
    shape = aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(operator.index(a) for a in axes)
    if not axes:
        return x
    shifts = tuple(direction * (shape[axis] // 2) for axis in axes)
    return jnp.roll(x, shifts, axes)


def fftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """Moves the zero-frequency bin to the centre (a roll by n // 2 along each axis)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: Any, axes: None | int | Sequence[int] = None) -> Any:
    """Undoes ``fftshift`` (a roll by -(n // 2) along each axis)."""
    return _shift("ifftshift", x, axes, -1)
