"""``srcjax.example_libraries.stax``: JAX's minimal neural-network layer library.

A layer is a pair ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape) -> (output_shape, params)``
and ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` reaches the layers that need one).
``serial`` and ``parallel`` combine layers into layers. Parameters are drawn with the same keys as
JAX's stax, so the same ``rng`` gives the same network.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from srcjax.runtime.nn import elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus, standardize
from srcjax.runtime.nn_initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose", "ConvTranspose", "BatchNorm",
    "elementwise", "Elementwise", "Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu",
    "LeakyRelu", "Selu", "Gelu", "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum",
    "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent",
    "glorot_normal", "normal", "ones", "zeros", "glorot", "randn", "relu", "elu", "gelu", "leaky_relu", "selu",
    "sigmoid", "softmax", "softplus", "log_softmax", "logsoftmax", "standardize",
]

Layer = tuple[Callable[..., Any], Callable[..., Any]]
glorot, randn, logsoftmax = glorot_normal, normal, log_softmax  # stax's older names


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


def _lax():
    from srcjax.runtime import lax

    return lax


def _random():
    from srcjax.runtime import random

    return random


# -- static shape arithmetic -----------------------------------------------------------------------------------
def _pads(in_sizes: Sequence[int], windows: Sequence[int], strides: Sequence[int], padding: Any) -> list[tuple]:
    """(low, high) padding per axis for 'VALID', 'SAME', 'SAME_LOWER' or explicit pairs."""
    if not isinstance(padding, str):
        pads = [tuple(p) for p in padding]
        if len(pads) != len(in_sizes):
            raise ValueError(f"padding {padding} must give one (low, high) pair for each of {len(in_sizes)} axes")
        return pads
    if padding == "VALID":
        return [(0, 0)] * len(in_sizes)
    if padding not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"unknown padding {padding!r}: expected 'VALID', 'SAME', 'SAME_LOWER' or (low, high) pairs")
    pads = []
    for size, window, stride in zip(in_sizes, windows, strides, strict=True):
        out = -(-size // stride)  # SAME keeps ceil(size / stride) outputs
        total = max((out - 1) * stride + window - size, 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if padding == "SAME" else (large, small))
    return pads


def _window_out(size: int, window: int, stride: int, pad: tuple[int, int]) -> int:
    return max((size + pad[0] + pad[1] - window) // stride + 1, 0)


def _conv_output_shape(input_shape, kernel_shape, strides, padding, dimension_numbers) -> tuple[int, ...]:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = [c for c in out_spec if c not in "NC"]
    in_sizes = [input_shape[lhs_spec.index(c)] for c in spatial]
    windows = [kernel_shape[rhs_spec.index(c)] for c in spatial]
    pads = _pads(in_sizes, windows, strides, padding)
    per_axis = zip(spatial, in_sizes, windows, strides, pads, strict=True)
    sizes = {c: _window_out(n, w, s, p) for c, n, w, s, p in per_axis}
    sizes["N"] = input_shape[lhs_spec.index("N")]
    sizes["C"] = kernel_shape[rhs_spec.index("O")]
    return tuple(sizes[c] for c in out_spec)


def _transpose_pads(windows: Sequence[int], strides: Sequence[int], padding: Any) -> list[tuple[int, int]]:
    """Padding of the stride-dilated input that makes a transposed convolution: 'SAME' gives size * stride
    outputs, 'VALID' size * stride + max(window - stride, 0); explicit pairs are used as given."""
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    pads = []
    for k, s in zip(windows, strides, strict=True):
        if padding == "SAME":
            total = k + s - 2
            before = k - 1 if s > k - 1 else -(-total // 2)
        elif padding == "VALID":
            total = k + s - 2 + max(k - s, 0)
            before = k - 1
        else:
            raise ValueError(f"unknown padding {padding!r} for a transposed convolution: expected 'SAME' or 'VALID'")
        pads.append((before, total - before))
    return pads


# -- layers ----------------------------------------------------------------------------------------------------
_GLOROT_NORMAL, _NORMAL, _NORMAL_BIAS = glorot_normal(), normal(), normal(1e-6)  # the default initializers


def Dense(out_dim: int, W_init: Callable = _GLOROT_NORMAL, b_init: Callable = _NORMAL) -> Layer:
    """inputs @ W + b"""

    def init_fun(rng, input_shape):
        output_shape = (*input_shape[:-1], out_dim)
        k1, k2 = _random().split(rng)
        return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return _jnp().dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(rhs_spec: str, lhs_spec: str, input_shape, filter_shape, out_chan: int) -> list[int]:
    spatial = iter(filter_shape)
    in_chan = input_shape[lhs_spec.index("C")]
    return [out_chan if c == "O" else in_chan if c == "I" else next(spatial) for c in rhs_spec]


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int, filter_shape: Sequence[int],
                strides: Sequence[int] | None = None, padding: Any = "VALID", W_init: Callable | None = None,
                b_init: Callable = _NORMAL_BIAS) -> Layer:
    """A convolution with layouts given as strings, e.g. ('NHWC', 'HWIO', 'NHWC'), plus a bias."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = tuple(strides or one)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, lhs_spec, input_shape, filter_shape, out_chan)
        output_shape = _conv_output_shape(input_shape, kernel_shape, strides, padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = _random().split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        out = _lax().conv_general_dilated(inputs, W, strides, padding, one, one,
                                          dimension_numbers=dimension_numbers)
        return out + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int, filter_shape: Sequence[int],
                         strides: Sequence[int] | None = None, padding: Any = "VALID",
                         W_init: Callable | None = None, b_init: Callable = _NORMAL_BIAS) -> Layer:
    """A transposed convolution (lax.conv_transpose without kernel flipping): the input is dilated by the
    strides and padded so that 'SAME' multiplies each spatial size by its stride."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = tuple(strides or one)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))
    spatial_windows = [c for c in rhs_spec if c not in "IO"]

    def pads_for(kernel_shape):
        windows = [kernel_shape[rhs_spec.index(c)] for c in spatial_windows]
        return _transpose_pads(windows, strides, padding)

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(rhs_spec, lhs_spec, input_shape, filter_shape, out_chan)
        pads = pads_for(kernel_shape)
        sizes = {"N": input_shape[lhs_spec.index("N")], "C": out_chan}
        for c, s, (lo, hi) in zip(spatial_windows, strides, pads, strict=True):
            n, k = input_shape[lhs_spec.index(c)], kernel_shape[rhs_spec.index(c)]
            sizes[c] = max((n - 1) * s + 1 + lo + hi - k + 1, 0)
        output_shape = tuple(sizes[c] for c in out_spec)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = _random().split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        out = _lax().conv_general_dilated(inputs, W, one, pads_for(W.shape), lhs_dilation=strides,
                                          rhs_dilation=one, dimension_numbers=dimension_numbers)
        return out + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5, center: bool = True, scale: bool = True,
              beta_init: Callable = zeros, gamma_init: Callable = ones) -> Layer:
    """Standardise over ``axis`` (the batch statistics), then scale by gamma and shift by beta."""
    axis = (axis,) if np.ndim(axis) == 0 else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = _random().split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # the parameters have the non-normalised axes; put size-1 axes back where ``axis`` was
        expand = tuple(None if i in axis else slice(None) for i in range(_jnp().ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[expand] * z + beta[expand]
        if center:
            return z + beta[expand]
        if scale:
            return gamma[expand] * z
        return z

    return init_fun, apply_fun


def elementwise(fun: Callable, **fun_kwargs: Any) -> Layer:
    """A layer without parameters applying ``fun(inputs, **fun_kwargs)``."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Elementwise = elementwise
Tanh = elementwise(lambda x: _jnp().tanh(x))
Relu = elementwise(relu)
Exp = elementwise(lambda x: _jnp().exp(x))
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# -- pooling ---------------------------------------------------------------------------------------------------
def _window_sizes_divisor(window_shape, strides, padding) -> Callable:
    """For AvgPool: divide each output by the number of input elements its window covered (fewer at
    padded borders), counted by summing a window over ones."""

    def rescale(outputs, inputs, spec):
        jnp, lax = _jnp(), _lax()
        non_spatial = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
        spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
        counts = lax.reduce_window(jnp.ones(spatial_shape, dtype=inputs.dtype), 0.0, lax.add, window_shape, strides,
                                   padding)
        for i in sorted(non_spatial):
            counts = jnp.expand_dims(counts, i)
        return outputs / counts

    return rescale


def _pooling_layer(reducer_name: str, init_val: float, rescaler: Callable | None = None) -> Callable[..., Layer]:
    def PoolingLayer(window_shape: Sequence[int], strides: Sequence[int] | None = None, padding: Any = "VALID",
                     spec: str | None = None) -> Layer:
        window_shape = tuple(window_shape)
        strides = tuple(strides or (1,) * len(window_shape))
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = (0, len(window_shape) + 1) if spec is None else (spec.index("N"), spec.index("C"))
        full_window, full_strides = window_shape, strides
        for i in sorted(non_spatial):  # windows of size 1 over the batch and channel axes
            full_window = (*full_window[:i], 1, *full_window[i:])
            full_strides = (*full_strides[:i], 1, *full_strides[i:])

        def init_fun(rng, input_shape):
            pads = _pads(input_shape, full_window, full_strides, padding)
            out_shape = tuple(_window_out(n, w, s, p)
                              for n, w, s, p in zip(input_shape, full_window, full_strides, pads, strict=True))
            return out_shape, ()

        def apply_fun(params, inputs, **kwargs):
            lax = _lax()
            out = lax.reduce_window(inputs, init_val, getattr(lax, reducer_name), full_window, full_strides, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    return PoolingLayer


MaxPool = _pooling_layer("max", -np.inf)
SumPool = _pooling_layer("add", 0.0)
AvgPool = _pooling_layer("add", 0.0, _window_sizes_divisor)


# -- plumbing --------------------------------------------------------------------------------------------------
def _flatten() -> Layer:
    def init_fun(rng, input_shape):
        return (input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)), ()

    def apply_fun(params, inputs, **kwargs):
        return _jnp().reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()


def _identity() -> Layer:
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs

    return init_fun, apply_fun


Identity = _identity()


def FanOut(num: int) -> Layer:
    """One input to ``num`` copies (a list), for ``parallel`` branches."""

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum() -> Layer:
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs)

    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis: int = -1) -> Layer:
    """Concatenate a list of inputs along ``axis``."""

    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = tuple(input_shape[0])
        return (*first[:ax], size, *first[ax + 1:]), ()

    def apply_fun(params, inputs, **kwargs):
        return _jnp().concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
    """In 'train' mode keep each input with probability ``rate`` (as in JAX's stax, ``rate`` is the keep
    probability) and scale the kept ones by 1 / rate; in any other mode pass inputs through."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That is, instead of "
                "`apply_fun(params, inputs)`, call it like `apply_fun(params, inputs, rng=key)` where `key` is a "
                "PRNG key (e.g. from `srcjax.random.PRNGKey`).")
        if mode != "train":
            return inputs
        keep = _random().bernoulli(rng, rate, inputs.shape)
        return _jnp().where(keep, inputs / rate, 0)

    return init_fun, apply_fun


# -- combinators -----------------------------------------------------------------------------------------------
def serial(*layers: Layer) -> Layer:
    """Layers applied one after another; each gets its own key split from ``rng``."""
    count = len(layers)
    init_funs, apply_funs = zip(*layers, strict=True) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = _random().split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = _random().split(rng, count) if rng is not None else (None,) * count
        for fun, param, layer_rng in zip(apply_funs, params, rngs, strict=True):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """Layers applied side by side to a list of inputs (often after ``FanOut``), giving a list of outputs."""
    count = len(layers)
    init_funs, apply_funs = zip(*layers, strict=True) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = _random().split(rng, count)
        results = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape, strict=True)]
        return tuple(shape for shape, _ in results), tuple(param for _, param in results)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = _random().split(rng, count) if rng is not None else (None,) * count
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs, strict=True)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Any], Layer]) -> Layer:
    """A layer chosen by ``make_layer(input_shape)`` at init and at apply time."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun

