"""``srcjax.scipy.signal``: N-d convolution and correlation (JAX's subset of SciPy's), on lax and jnp.fft.

Results are inexact (integer inputs are promoted first, as in JAX). The direct method is one
``conv_general_dilated`` with a flipped kernel; the FFT method multiplies spectra of the full output's size.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax
from srcjax.runtime.numpy import fft as jnp_fft
from srcjax.runtime.numpy._core import aval, check_arraylike, promote_dtypes_inexact

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]

_MODES = ("full", "same", "valid")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")


def _valid_order(name: str, shape1: tuple[int, ...], shape2: tuple[int, ...]) -> bool:
    """Whether the inputs swap so that the first is the larger in every axis (one must be, for 'valid')."""
    no_swap = all(s1 >= s2 for s1, s2 in zip(shape1, shape2))
    swap = all(s1 <= s2 for s1, s2 in zip(shape1, shape2))
    if not (no_swap or swap):
        raise ValueError(f"{name}: one input must be at least as large as the other in every dimension, got "
                         f"shapes {shape1} and {shape2}.")
    return swap


def _convolve_nd(name: str, in1: Any, in2: Any, mode: str, precision: Any) -> Any:
    _check_mode(mode)
    check_arraylike(name, in1, in2)
    shape1, shape2 = aval(in1).shape, aval(in2).shape
    if len(shape1) != len(shape2):
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got shapes {shape1} and "
                         f"{shape2}")
    if 0 in shape1 or 0 in shape2:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes {shape1} and {shape2}.")
    in1, in2 = promote_dtypes_inexact(in1, in2)
    if _valid_order(name, shape1, shape2):
        in1, in2 = in2, in1
    kernel, original = aval(in2).shape, shape2
    # out[n] = sum_k in1[n - k] in2[k]: a correlation with the flipped kernel, padded per mode (the 'same' window
    # is centred on the second input's original shape, as SciPy and JAX centre it)
    pads = {"valid": [(0, 0) for _ in kernel],
            "same": [(k - 1 - (o - 1) // 2, k - o + (o - 1) // 2) for k, o in zip(kernel, original)],
            "full": [(k - 1, k - 1) for k in kernel]}[mode]
    result = lax.conv_general_dilated(in1[None, None], jnp.flip(in2)[None, None], (1,) * len(kernel), pads,
                                      precision=precision)
    return result[0, 0]


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None) -> Any:
    """N-d convolution of ``in1`` and ``in2`` (equal ranks); method 'auto' is 'direct', as in JAX."""
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("direct", "auto"):
        raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
    return _convolve_nd("convolve", in1, in2, mode, precision)


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto", precision: Any = None) -> Any:
    """N-d cross-correlation ``z[k] = sum_l in1[l + k] conj(in2[l])``: the convolution with conj(in2) flipped."""
    check_arraylike("correlate", in1, in2)
    return convolve(in1, jnp.flip(jnp.conj(in2)), mode, method=method, precision=precision)


def _check_2d(name: str, in1: Any, in2: Any, boundary: str, fillvalue: Any) -> None:
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    check_arraylike(name, in1, in2)
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0,
               precision: Any = None) -> Any:
    """2-d convolution (only SciPy's boundary='fill' with fillvalue=0, as in JAX)."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd("convolve2d", in1, in2, mode, precision)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0,
                precision: Any = None) -> Any:
    """2-d cross-correlation (boundary='fill', fillvalue=0 only), with JAX's choice of which input slides."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    shape1, shape2 = aval(in1).shape, aval(in2).shape
    swap = all(s1 <= s2 for s1, s2 in zip(shape1, shape2))
    if swap and shape1 != shape2 and mode != "same":
        # the second input is the larger: convolve it, flipped, with conj(in1); conj(that) is the 'full' answer
        result = _convolve_nd("correlate2d", jnp.flip(in2), jnp.conj(in1), mode, precision)
        return jnp.conj(result) if mode == "full" else result
    if swap and mode == "full":  # equal shapes
        return jnp.conj(_convolve_nd("correlate2d", jnp.flip(in2), jnp.conj(in1), mode, precision))
    return jnp.flip(_convolve_nd("correlate2d", jnp.flip(in1), jnp.conj(in2), mode, precision))


def _axes(axes: Any, ndim: int) -> tuple[int, ...]:
    axes = (axes,) if isinstance(axes, int) or np.ndim(axes) == 0 else tuple(axes)
    out = []
    for axis in map(operator.index, axes):
        if not -ndim <= axis < ndim:
            raise ValueError(f"fftconvolve: axis {axis} is out of bounds for an array of dimension {ndim}")
        out.append(axis % ndim)
    return tuple(out)


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Sequence[int] | int | None = None) -> Any:
    """N-d convolution through FFTs of the full output's size, over ``axes`` (all by default); the other axes
    must agree in size and are batch axes."""
    check_arraylike("fftconvolve", in1, in2)
    in1, in2 = promote_dtypes_inexact(in1, in2)
    shape1, shape2 = aval(in1).shape, aval(in2).shape
    if len(shape1) != len(shape2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    _check_mode(mode)
    axes = tuple(range(len(shape1))) if axes is None else _axes(axes, len(shape1))
    mapped = set(range(len(shape1))) - set(axes)
    if any(shape1[i] != shape2[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={shape1} in2.shape={shape2} axes={axes}")
    axes = tuple(sorted(set(axes)))
    sizes1, sizes2 = [shape1[i] for i in axes], [shape2[i] for i in axes]
    if mode == "valid" and _valid_order("fftconvolve", sizes1, sizes2):
        in1, in2, sizes1, sizes2 = in2, in1, sizes2, sizes1
    full = [s1 + s2 - 1 for s1, s2 in zip(sizes1, sizes2)]
    if all(s1 == 1 or s2 == 1 for s1, s2 in zip(sizes1, sizes2)):
        conv = in1 * in2  # every convolved axis has a single-element side: a (broadcast) product
    elif jnp.iscomplexobj(in1) or jnp.iscomplexobj(in2):
        conv = jnp_fft.ifftn(jnp_fft.fftn(in1, full, axes) * jnp_fft.fftn(in2, full, axes), full, axes)
    else:
        conv = jnp_fft.irfftn(jnp_fft.rfftn(in1, full, axes) * jnp_fft.rfftn(in2, full, axes), full, axes)
    out = {"full": full, "same": sizes1, "valid": [s1 - s2 + 1 for s1, s2 in zip(sizes1, sizes2)]}[mode]
    index = [slice(None)] * len(shape1)
    for axis, f, o in zip(axes, full, out):
        start = (f - o) // 2
        index[axis] = slice(start, start + o)
    return conv[tuple(index)]
