"""``srcjax.nn.initializers``: functions ``init(key, shape, dtype) -> array`` that draw initial parameters.

They are JAX's: the same random calls on the same keys in the same order, so the same key gives the same
parameters. Variance scaling draws with variance ``scale / fan`` where the fans count the input and
output features times the receptive field (the product of the other, non-batch axes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from srcjax.runtime import dtypes

__all__ = [
    "Initializer", "zeros", "ones", "constant", "normal", "uniform", "truncated_normal", "variance_scaling",
    "glorot_normal", "glorot_uniform", "xavier_normal", "xavier_uniform", "he_normal", "he_uniform",
    "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "orthogonal", "delta_orthogonal",
]

Initializer = Any  # Callable[[key, shape, dtype], Array]

# stddev of a standard normal truncated to [-2, 2]; dividing by it restores unit variance
_TRUNCATED_NORMAL_STDDEV = 0.87962566103423978


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


def _random():
    from srcjax.runtime import random

    return random


def _dtype(dtype: Any) -> np.dtype:
    return dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtypes.to_dtype(dtype))


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def zeros(key: Any, shape: Any, dtype: Any = None, out_sharding: Any = None) -> Any:
    return _jnp().zeros(_shape(shape), _dtype(dtype))


def ones(key: Any, shape: Any, dtype: Any = None, out_sharding: Any = None) -> Any:
    return _jnp().ones(_shape(shape), _dtype(dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    def init(key, shape, dtype=dtype, out_sharding=None):
        return _jnp().full(_shape(shape), value, dtype=_dtype(dtype))

    return init


def normal(stddev: float = 1e-2, dtype: Any = None) -> Initializer:
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _random().normal(key, _shape(shape), dtype) * _jnp().array(stddev, dtype)

    return init


def uniform(scale: float = 1e-2, dtype: Any = None) -> Initializer:
    """U[0, scale)"""

    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _random().uniform(key, _shape(shape), dtype) * _jnp().array(scale, dtype)

    return init


def truncated_normal(stddev: float = 1e-2, dtype: Any = None, lower: float = -2.0, upper: float = 2.0) -> Initializer:
    def init(key, shape, dtype=dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _random().truncated_normal(key, lower, upper, _shape(shape), dtype) * _jnp().array(stddev, dtype)

    return init


def _axes(axes: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    return tuple(a % ndim for a in axes)


def _fans(shape: tuple[int, ...], in_axis, out_axis, batch_axis) -> tuple[float, float]:
    """(fan_in, fan_out): input/output features times the receptive field size."""
    if len(shape) < 2 and (in_axis, out_axis) == (-2, -1):
        raise ValueError(f"variance scaling needs a shape of rank 2 or more to find its fans, got {shape}")
    ins, outs, batch = (_axes(a, len(shape)) for a in (in_axis, out_axis, batch_axis))
    in_size = int(np.prod([shape[i] for i in ins]))
    out_size = int(np.prod([shape[i] for i in outs]))
    receptive = int(np.prod([d for i, d in enumerate(shape) if i not in ins + outs + batch]))
    return in_size * receptive, out_size * receptive


def variance_scaling(scale: float, mode: str, distribution: str, in_axis: int | Sequence[int] = -2,
                     out_axis: int | Sequence[int] = -1, batch_axis: int | Sequence[int] = (),
                     dtype: Any = None) -> Initializer:
    """Draws with variance ``scale / n``, ``n`` the fan-in, fan-out, their mean or geometric mean."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

    def init(key, shape, dtype=dtype, out_sharding=None):
        jnp, random = _jnp(), _random()
        shape, dtype = _shape(shape), _dtype(dtype)
        if dtype.kind == "c":
            raise NotImplementedError("variance_scaling: complex dtypes are not supported")
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = jnp.array(scale / denominator, dtype=dtype)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_NORMAL_STDDEV, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * jnp.sqrt(variance)
        # U(-a, a) has variance a^2 / 3
        return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)

    return init


def _scaling(scale: float, mode: str, distribution: str):
    def make(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
             batch_axis: Sequence[int] = (), dtype: Any = None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    return make


glorot_uniform = xavier_uniform = _scaling(1.0, "fan_avg", "uniform")
glorot_normal = xavier_normal = _scaling(1.0, "fan_avg", "truncated_normal")
lecun_uniform = _scaling(1.0, "fan_in", "uniform")
lecun_normal = _scaling(1.0, "fan_in", "truncated_normal")
he_uniform = kaiming_uniform = _scaling(2.0, "fan_in", "uniform")
he_normal = kaiming_normal = _scaling(2.0, "fan_in", "truncated_normal")


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """A (semi-)orthogonal matrix: Q of the QR factorisation of a normal draw, signs fixed by diag(R)."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        jnp = _jnp()
        shape, dtype = _shape(shape), _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        n_cols = shape[column_axis]
        n_rows = int(np.prod(shape)) // n_cols
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        q, r = jnp.linalg.qr(_random().normal(key, matrix_shape, dtype))
        q = q * jnp.sign(jnp.diag(r))[None, :]  # makes the factorisation unique, so Q is Haar distributed
        if n_rows < n_cols:
            q = q.T
        others = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = jnp.moveaxis(jnp.reshape(q, (*others, n_cols)), -1, column_axis)
        return scale * q

    return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """For convolution kernels (rank 3-5): an orthogonal matrix at the spatial centre, zeros elsewhere."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        jnp = _jnp()
        shape, dtype = _shape(shape), _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple(d // 2 for d in shape[:-2])
        return jnp.zeros(shape, dtype).at[centre].set(ortho)

    return init
