"""``jax.image``: resampling images by separable kernels (``resize``, ``scale_and_translate``).

JAX's algorithm (``jax/_src/image/scale.py``), kept step for step so the numbers agree: per resized axis, a weight
matrix of the kernel at the distances between the output samples (pixel centres mapped back to the input) and the
input samples, the kernel widened by 1/scale when shrinking with ``antialias`` (a low-pass filter), each output's
weights normalised to sum to one, outputs whose centre lies outside the input zeroed; then the image contracted
with it along that axis. ``nearest`` picks the input sample whose span holds the output's centre.
"""

from __future__ import annotations

import enum
from typing import Any, Sequence

import numpy as np

from srcjax.runtime import numpy as jnp
from srcjax.runtime.numpy._core import promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        names = {"nearest": "NEAREST", "linear": "LINEAR", "bilinear": "LINEAR", "trilinear": "LINEAR",
                 "triangle": "LINEAR", "lanczos3": "LANCZOS3", "lanczos5": "LANCZOS5", "cubic": "CUBIC",
                 "bicubic": "CUBIC", "tricubic": "CUBIC"}
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return ResizeMethod[names[s]]


def _lanczos(radius: float, x: Any) -> Any:
    # radius sin(pi x) sin(pi x / radius) / (pi x)^2, 1 near 0, 0 beyond the radius
    y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
    out = jnp.where(x > 1e-3, jnp.divide(y, jnp.where(x != 0, np.pi**2 * x**2, 1)), 1)
    return jnp.where(x > radius, 0.0, out)


def _keys_cubic(x: Any) -> Any:
    # R. G. Keys, cubic convolution interpolation for digital image processing (a = -0.5)
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = jnp.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return jnp.where(x >= 2.0, 0.0, out)


def _triangle(x: Any) -> Any:
    return jnp.maximum(0, 1 - jnp.abs(x))


_KERNELS = {
    ResizeMethod.LINEAR: _triangle,
    ResizeMethod.LANCZOS3: lambda x: _lanczos(3.0, x),
    ResizeMethod.LANCZOS5: lambda x: _lanczos(5.0, x),
    ResizeMethod.CUBIC: _keys_cubic,
}


def _weights(input_size: int, output_size: int, scale: Any, translation: Any, kernel: Any, antialias: bool) -> Any:
    """The (input_size, output_size) matrix taking an axis of the input to the output's."""
    dtype = jnp.result_type(scale, translation)
    inv_scale = 1.0 / scale
    # shrinking, the kernel is widened to filter out what the output cannot hold; growing, it only interpolates
    kernel_scale = jnp.maximum(inv_scale, 1.0) if antialias else 1.0
    sample_f = (jnp.arange(output_size, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale - 0.5
    x = jnp.abs(sample_f[np.newaxis, :] - jnp.arange(input_size, dtype=dtype)[:, np.newaxis]) / kernel_scale
    weights = kernel(x)
    total = jnp.sum(weights, axis=0, keepdims=True)
    weights = jnp.where(jnp.abs(total) > 1000.0 * float(np.finfo(np.float32).eps),
                        jnp.divide(weights, jnp.where(total != 0, total, 1)), 0)
    # outputs whose centre lies outside the input get nothing (sample_f has had its 0.5 removed)
    inside = jnp.logical_and(sample_f >= -0.5, sample_f <= jnp.array(input_size, dtype=dtype) - 0.5)
    return jnp.where(inside[np.newaxis, :], weights, 0)


def _scale_and_translate(x: Any, shape: Sequence[int], spatial_dims: Sequence[int], scale: Any, translation: Any,
                         kernel: Any, antialias: bool, precision: Any) -> Any:
    for i, d in enumerate(spatial_dims):
        d = d % x.ndim
        w = _weights(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias).astype(x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, w, axes=([d], [0]), precision=precision), -1, d)
    return x


def _method(method: Any) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"method must be a string or a ResizeMethod, got {method!r}")
    return method


def _shape(shape: Any, image: Any) -> tuple[int, ...]:
    shape = tuple(int(n) for n in shape)
    if len(shape) != np.ndim(image):
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {np.shape(image)}")
    return shape


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int], scale: Any, translation: Any,
                        method: Any, antialias: bool = True, precision: Any = "highest") -> Any:
    """``image`` resampled to ``shape`` along ``spatial_dims``: output sample ``o`` (pixel centres at ``o + 0.5``)
    reads the input at ``(o + 0.5 - translation) / scale - 0.5``, through ``method``'s kernel."""
    shape = _shape(shape, image)
    if len(spatial_dims) != len(scale):
        raise ValueError("spatial_dims must have the same length as scale; "
                         f"{spatial_dims} vs {np.shape(scale)}")
    if len(spatial_dims) != len(translation):
        raise ValueError("spatial_dims must have the same length as translation; "
                         f"{spatial_dims} vs {np.shape(translation)}")
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for scale_and_translate.")
    (image,) = promote_dtypes_inexact(image)
    scale, translation = promote_dtypes_inexact(scale, translation)
    return _scale_and_translate(image, shape, spatial_dims, scale, translation, _KERNELS[method], antialias,
                                precision)


def _resize_nearest(x: Any, shape: tuple[int, ...]) -> Any:
    for d in range(x.ndim):
        m, n = x.shape[d], shape[d]
        if m == n:
            continue
        offsets = jnp.floor((jnp.arange(n, dtype=np.float32) + 0.5) * m / n).astype(np.int32)
        x = jnp.take(x, offsets, axis=d)
    return x


def resize(image: Any, shape: Sequence[int], method: Any, antialias: bool = True, precision: Any = "highest") -> Any:
    """``image`` resampled to ``shape`` (every axis whose size changes): ``nearest``, ``linear`` (``bilinear``,
    ``trilinear``, ``triangle``), ``cubic`` (``bicubic``, ``tricubic``: Keys' kernel), ``lanczos3``, ``lanczos5``.
    Shrinking with ``antialias`` filters first. Integer images come back as floats."""
    image = jnp.asarray(image)
    shape = _shape(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    if not jnp.issubdtype(image.dtype, jnp.inexact):
        image = image.astype(jnp.result_type(image, jnp.float32))
    dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _scale_and_translate(image, shape, dims, scale, [0.0] * len(dims), _KERNELS[method], antialias,
                                precision)
