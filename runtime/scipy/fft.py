"""``srcjax.scipy.fft``: the discrete cosine transform of type 2 (``dct``, ``dctn``) and its inverse, through FFTs.

With x's samples reordered as v = (x0, x2, x4, ..., x5, x3, x1) (Makhoul's interleaving), the DCT-II
y[k] = 2 sum_n x[n] cos(pi k (2n + 1) / 2N) is 2 Re(exp(-i pi k / 2N) FFT(v)[k]); the inverse undoes each step.
Two axes at a time take one 2-d FFT of the doubly interleaved input, as JAX's do, so the numbers are JAX's.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax
from srcjax.runtime.numpy import fft as jnp_fft
from srcjax.runtime.numpy._core import aval, check_arraylike, promote_dtypes_complex, promote_dtypes_inexact

__all__ = ["dct", "dctn", "idct", "idctn"]


def _checked(name: str, x: Any, type: int, norm: str | None) -> Any:  # noqa: A002 - SciPy's name
    check_arraylike(name, x)
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")
    return jnp.asarray(x)


def _axis(axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _axes_and_sizes(x: Any, s: Any, axes: Any) -> tuple[tuple[int, ...], list[int] | None]:
    """SciPy's rule for the n-d transforms: ``s`` (an int or a sequence) sizes the last len(s) axes unless
    ``axes`` names them; neither given means every axis at its own size."""
    ndim = aval(x).ndim
    if s is not None:
        s = [operator.index(n) for n in s] if isinstance(s, Sequence) or np.ndim(s) else [operator.index(s)]
        if len(s) > ndim:
            raise ValueError(f"s must have at most x.ndim ({ndim}) elements, got {len(s)}")
    if axes is None:
        axes = range(ndim - len(s), ndim) if s is not None else range(ndim)
    axes = tuple(_axis(a, ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in axes {axes}")
    return axes, s


def _resized(x: Any, axis: int, n: int | None) -> Any:
    """``x`` cropped or zero-padded at the end of ``axis`` to ``n`` samples (as it is for n None)."""
    if n is None:
        return x
    config = [(0, n - size if a == axis else 0, 0) for a, size in enumerate(aval(x).shape)]
    return lax.pad(x, np.zeros((), aval(x).dtype), config)


def _resized_axes(x: Any, axes: tuple[int, ...], s: list[int] | None) -> Any:
    for axis, n in zip(axes, s or ()):
        x = _resized(x, axis, n)
    return x


def _along(v: Any, axis: int, ndim: int) -> Any:
    """A vector shaped to broadcast along ``axis`` of an ndim-array."""
    return lax.expand_dims(v, [a for a in range(ndim) if a != axis])


def _twiddle(n: int, k: Any) -> Any:
    """exp(-i pi k / 2n), in the complex type of k."""
    n, k = promote_dtypes_complex(n, k)
    return jnp.exp(-0.5j * np.pi * k / n)


def _interleave(x: Any, axis: int) -> Any:
    """(x0, x2, x4, ..., x5, x3, x1) along ``axis``: the even samples, then the odd ones reversed."""
    odd = lax.rev(lax.slice_in_dim(x, 1, None, 2, axis), (axis,))
    return lax.concatenate([lax.slice_in_dim(x, None, None, 2, axis), odd], axis)


def _deinterleave(v: Any, axis: int) -> Any:
    """The inverse of ``_interleave``: the first ceil(n/2) samples go to the even places, the rest, reversed,
    to the odd ones."""
    n = aval(v).shape[axis]
    half = math.ceil(n / 2)
    evens = lax.slice_in_dim(v, 0, half, 1, axis)
    odds = lax.rev(lax.slice_in_dim(v, half, n, 1, axis), (axis,))
    everything = (slice(None),) * axis
    out = jnp.zeros(aval(v).shape, aval(v).dtype)
    return out.at[everything + (slice(None, None, 2),)].set(evens).at[everything + (slice(1, None, 2),)].set(odds)


def _ortho_scale(y: Any, axis: int) -> Any:
    """y / sqrt(f N), f = 4 for the first coefficient and 2 for the others: the orthonormal DCT-II's scaling."""
    shape, dtype = aval(y).shape, aval(y).dtype
    factor = lax.concatenate([lax.full((1,), 4, dtype), lax.full((shape[axis] - 1,), 2, dtype)], 0)
    return y / lax.sqrt(_along(factor, axis, len(shape)) * shape[axis])


def _by_parts(transform, x: Any, **kwargs: Any) -> Any:
    """A transform of complex x: the transforms of its real and imaginary parts (the DCT is real-linear)."""
    return lax.complex(transform(jnp.real(x), **kwargs), transform(jnp.imag(x), **kwargs))


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:  # noqa: A002
    """The DCT-II of ``x`` along ``axis`` (cropped or zero-padded to ``n``), SciPy's scaling or 'ortho'."""
    x = _checked("dct", x, type, norm)
    if jnp.iscomplexobj(x):
        return _by_parts(dct, x, type=type, n=n, axis=axis, norm=norm)
    axis = _axis(axis, x.ndim)
    x = _resized(x, axis, n)
    size = x.shape[axis]
    spectrum = jnp_fft.fft(_interleave(x, axis), axis=axis)
    k = _along(jnp.arange(size, dtype=jnp.real(spectrum).dtype), axis, x.ndim)
    out = 2 * jnp.real(spectrum * _twiddle(size, k))
    return _ortho_scale(out, axis) if norm == "ortho" else out


def _dct_two_axes(x: Any, axes: tuple[int, int], norm: str | None) -> Any:
    """The DCT-II over two axes from one 2-d FFT: with V the FFT of the doubly interleaved input,
    Y[k1, k2] = 2 Re(W1(k1) (W2(k2) V[k1, k2] + W2(-k2) V[k1, -k2])), W the twiddles exp(-i pi k / 2N)."""
    axis1, axis2 = axes
    spectrum = jnp_fft.fftn(_interleave(_interleave(x, axis1), axis2), axes=axes)
    k1 = _along(jnp.arange(x.shape[axis1], dtype=spectrum.dtype), axis1, x.ndim)
    k2 = _along(jnp.arange(x.shape[axis2], dtype=spectrum.dtype), axis2, x.ndim)
    mirrored = jnp.roll(jnp.flip(spectrum, axis=axis2), shift=1, axis=axis2)  # V[k1, -k2]
    out = 2 * jnp.real(_twiddle(x.shape[axis1], k1) * (_twiddle(x.shape[axis2], k2) * spectrum
                                                        + _twiddle(x.shape[axis2], -k2) * mirrored))
    return _ortho_scale(_ortho_scale(out, axis1), axis2) if norm == "ortho" else out


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,  # noqa: A002
         norm: str | None = None) -> Any:
    """The DCT-II over ``axes`` (each cropped or zero-padded to its size in ``s``), two axes at a time."""
    x = _checked("dctn", x, type, norm)
    if jnp.iscomplexobj(x):
        return _by_parts(dctn, x, type=type, s=s, axes=axes, norm=norm)
    axes, s = _axes_and_sizes(x, s, axes)
    if len(axes) == 1:
        return dct(x, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
    x = _resized_axes(x, axes, s)
    for start in range(0, len(axes), 2):
        pair = axes[start:start + 2]
        x = _dct_two_axes(x, pair, norm) if len(pair) == 2 else dct(x, axis=pair[0], norm=norm)
    return x


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:  # noqa: A002
    """The inverse of the DCT-II along ``axis`` (SciPy's DCT-III, scaled so that idct(dct(x)) is x)."""
    x = _checked("idct", x, type, norm)
    if jnp.iscomplexobj(x):
        return _by_parts(idct, x, type=type, n=n, axis=axis, norm=norm)
    axis = _axis(axis, x.ndim)
    x = _resized(x, axis, n)
    size = x.shape[axis]
    (x,) = promote_dtypes_inexact(x)
    if norm is None or norm == "backward":
        x = _ortho_scale(x, axis)
    x = _ortho_scale(x, axis)  # undo the coefficients' scaling, then the spectrum's twiddle
    k = _along(jnp.arange(size, dtype=x.dtype), axis, x.ndim)
    twiddle = _twiddle(size, k)
    x = x.astype(twiddle.dtype) / twiddle * 2 * size
    return _deinterleave(jnp.real(jnp_fft.ifft(x, axis=axis)), axis)


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,  # noqa: A002
          norm: str | None = None) -> Any:
    """The inverse of ``dctn``: ``idct`` along each of ``axes`` in turn."""
    x = _checked("idctn", x, type, norm)
    if jnp.iscomplexobj(x):
        return _by_parts(idctn, x, type=type, s=s, axes=axes, norm=norm)
    axes, s = _axes_and_sizes(x, s, axes)
    if len(axes) == 1:
        return idct(x, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
    x = _resized_axes(x, axes, s)
    for axis in axes:
        x = idct(x, axis=axis, norm=norm)
    return x
