"""``srcjax.nn``: activation functions, softmax and friends, ``one_hot``, ``standardize`` and attention.

Each is the formula written with ``srcjax.numpy`` and ``lax``, with the same Python-scalar constants as
JAX's so results carry JAX's dtypes and weak types (``relu6`` of an int array is a weak float, since its
bound ``6.`` is a weak float). The initializers live in ``runtime.nn_initializers``.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime import nn_initializers as initializers
from srcjax.runtime.numpy import _core
from srcjax.transpiler.ir import ConcretizationError

__all__ = [
    "relu", "relu6", "sigmoid", "softplus", "sparse_plus", "sparse_sigmoid", "soft_sign", "silu", "swish",
    "log_sigmoid", "leaky_relu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "elu", "celu", "selu",
    "gelu", "glu", "squareplus", "mish", "log1mexp", "tanh", "identity", "softmax", "log_softmax", "logsumexp",
    "logmeanexp", "one_hot", "standardize", "dot_product_attention", "initializers",
]


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


def _lax():
    from srcjax.runtime import lax

    return lax


def _array(name: str, x: Any) -> Any:
    _core.check_arraylike(name, x)
    return _core.asarray(x)


# -- activations ---------------------------------------------------------------------------------------------
def relu(x: Any) -> Any:
    """max(x, 0), written as a select so that the derivative at 0 is 0 (JAX's choice; a max would split it)."""
    jnp = _jnp()
    x = _array("relu", x)
    # NaN stays NaN, with derivative 0 there as in JAX (its rule selects on x > 0)
    return jnp.where(x > 0, x, jnp.where(x <= 0, 0, _lax().stop_gradient(x)))


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6), with derivative 0 at both corners (JAX's choice)."""
    jnp = _jnp()
    x = _array("relu6", x)
    # NaN stays NaN, with derivative 0 there as in JAX (its rule selects on 0 < x < 6)
    corner = jnp.where(x <= 0, 0, jnp.where(x >= 6, 6.0, _lax().stop_gradient(x)))
    return jnp.where((x > 0) & (x < 6), x, corner)


def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)); floating inputs only, like lax.logistic."""
    return _lax().logistic(_array("sigmoid", x))


def softplus(x: Any) -> Any:
    """log(1 + exp(x)) = logaddexp(x, 0), stable for large |x|."""
    return _jnp().logaddexp(_array("softplus", x), 0)


def sparse_plus(x: Any) -> Any:
    """0 for x <= -1, x for x >= 1, (x + 1)^2 / 4 between: a C^1 softplus with compact support."""
    jnp = _jnp()
    x = _array("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x: Any) -> Any:
    """clip((x + 1) / 2, 0, 1): the derivative of sparse_plus."""
    return 0.5 * _jnp().clip(_array("sparse_sigmoid", x) + 1.0, 0.0, 2.0)


def soft_sign(x: Any) -> Any:
    """x / (|x| + 1)"""
    x = _array("soft_sign", x)
    return x / (_jnp().abs(x) + 1)


def silu(x: Any) -> Any:
    """x * sigmoid(x)"""
    x = _array("silu", x)
    return x * sigmoid(x)


swish = silu


def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x)"""
    return -softplus(-_array("log_sigmoid", x))


def leaky_relu(x: Any, negative_slope: Any = 0.01) -> Any:
    """x for x >= 0, negative_slope * x below."""
    x = _array("leaky_relu", x)
    return _jnp().where(x >= 0, x, negative_slope * x)


def hard_sigmoid(x: Any) -> Any:
    """relu6(x + 3) / 6: a piecewise linear sigmoid."""
    return relu6(_array("hard_sigmoid", x) + 3.0) / 6.0


def hard_silu(x: Any) -> Any:
    """x * hard_sigmoid(x)"""
    x = _array("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def hard_tanh(x: Any) -> Any:
    """x clipped to [-1, 1] (keeps integer dtypes)."""
    jnp = _jnp()
    x = _array("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    jnp = _jnp()
    x = _array("elu", x)
    safe_x = jnp.where(x > 0, 0.0, x)  # keeps expm1 from overflowing where its value is discarded
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe_x))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1): elu made continuously differentiable in alpha."""
    jnp = _jnp()
    x = _array("celu", x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


# The self-normalising constants of Klambauer et al. (2017).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Any) -> Any:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _SELU_SCALE * elu(_array("selu", x), _SELU_ALPHA)


def gelu(x: Any, approximate: bool = True) -> Any:
    """x * Phi(x), Phi the standard normal CDF; ``approximate`` uses the tanh form
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    jnp = _jnp()
    _core.check_arraylike("gelu", x)
    (x,) = _core.promote_dtypes_inexact(x)
    x = _core.convert(x, _core.aval(x).dtype, weak_type=False)  # JAX's constants are typed: the result is strong
    dtype = _core.aval(x).dtype
    if approximate:
        sqrt_2_over_pi = np.asarray(np.sqrt(2 / np.pi), dtype)
        return x * (0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * x**3))))
    sqrt_half = np.asarray(np.sqrt(0.5), dtype)
    # Phi(x) = erfc(-x / sqrt 2) / 2, accurate in the left tail where 1 + erf(x / sqrt 2) cancels
    return 0.5 * x * _lax().erfc(-x * sqrt_half)


def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: the first half of ``axis`` times the sigmoid of the second half."""
    jnp = _jnp()
    x = _array("glu", x)
    shape = _core.aval(x).shape
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"glu: axis {axis} is out of bounds for an input of shape {shape}")
    if shape[axis] % 2:
        raise ValueError(f"glu: axis {axis} has odd size {shape[axis]}; it must split into two equal halves")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


def squareplus(x: Any, b: Any = 4) -> Any:
    """(x + sqrt(x^2 + b)) / 2: a smooth relu made of algebraic operations."""
    jnp = _jnp()
    x = _array("squareplus", x)
    b = _array("squareplus", b)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def mish(x: Any) -> Any:
    """x * tanh(softplus(x))"""
    x = _array("mish", x)
    return x * _jnp().tanh(softplus(x))


def log1mexp(x: Any) -> Any:
    """log(1 - exp(-x)) for x > 0: log(-expm1(-x)) below log 2, log1p(-exp(-x)) above (Maechler 2012)."""
    return _log1mexp()(_array("log1mexp", x))


@functools.cache
def _log1mexp():
    """log1mexp with JAX's derivative rule, 1 / expm1(x): the branch not taken would put 0 * inf into the
    derivative where exp(-x) rounds to 1 (x near 0)."""
    from srcjax.runtime.autodiff import custom_jvp

    jnp = _jnp()

    @custom_jvp
    def log1mexp(x):
        return jnp.where(x < np.log(2.0).item(), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))

    @log1mexp.defjvp
    def _(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return log1mexp(x), x_dot / jnp.expm1(x)

    return log1mexp


def tanh(x: Any, /) -> Any:
    return _jnp().tanh(x)


def identity(x: Any) -> Any:
    return _array("identity", x)


# -- normalisations ------------------------------------------------------------------------------------------
def _stop_gradient(x: Any) -> Any:
    return _lax().stop_gradient(x)


def _max_for_shift(x: Any, axis: Any, where: Any) -> Any:
    """max(x) over ``axis`` (keepdims), -inf where nothing is selected; used only to shift exponents."""
    jnp = _jnp()
    if _core.aval(x).dtype.kind in "fc":
        return jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    if where is None:
        return jnp.max(x, axis, keepdims=True)
    return jnp.max(x, axis, where=where, initial=np.iinfo(_core.aval(x).dtype).min, keepdims=True)


def softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over ``axis``, shifted by the max for stability; 0 where ``where`` is False."""
    jnp = _jnp()
    x = _array("softmax", x)
    shifted = x - _stop_gradient(_max_for_shift(x, axis, where))
    if where is not None:
        shifted = jnp.where(where, shifted, -np.inf)
    unnormalized = jnp.exp(shifted)
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    return result if where is None else jnp.where(where, result, 0)


def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """x - logsumexp(x) over ``axis``; -inf where ``where`` is False."""
    jnp = _jnp()
    x = _array("log_softmax", x)
    if where is not None:  # (masked entries out before the shift: in a row masked whole the max is -inf, and
        x = jnp.where(where, x, -np.inf)  # x + inf there would send NaN back through the masking where)
    shifted = x - _stop_gradient(_max_for_shift(x, axis, where))
    exp_shifted = jnp.exp(shifted) if where is None else jnp.where(where, jnp.exp(shifted), 0)
    result = shifted - jnp.log(jnp.sum(exp_shifted, axis, where=where, keepdims=True))
    return result if where is None else jnp.where(where, result, -np.inf)


def _reduced_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            raise ValueError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(out)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None) -> Any:
    """log(sum(b * exp(a))) over ``axis``, computed as max + log(sum(b * exp(a - max))).

    With ``return_sign`` returns (log|sum|, sign(sum)); without it a negative sum gives NaN.
    """
    jnp = _jnp()
    if b is None:
        _core.check_arraylike("logsumexp", a)
        (a,) = _core.promote_dtypes_inexact(a)
    else:
        _core.check_arraylike("logsumexp", a, b)
        a, b = _core.promote_dtypes_inexact(a, b)
        a = jnp.where(b != 0, a, -np.inf)  # terms with b == 0 drop out even where a is inf
    dims = _reduced_axes(_core.aval(a).ndim, axis)
    real = jnp.real(a) if _core.aval(a).dtype.kind == "c" else a
    amax = jnp.max(real, axis=dims, keepdims=True, where=where, initial=-np.inf)
    amax = _stop_gradient(jnp.where(jnp.isfinite(amax), amax, 0))  # an all -inf slice gives log(0) = -inf
    exp_a = jnp.exp(a - amax)
    if b is not None:
        exp_a = exp_a * b
    sumexp = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = jnp.sign(sumexp)
    if return_sign or _core.aval(a).dtype.kind != "c":
        sumexp = jnp.abs(sumexp)
    out = jnp.log(sumexp) + (amax if keepdims else jnp.squeeze(amax, dims))
    if return_sign:
        return out, sign
    if _core.aval(a).dtype.kind != "c":
        out = jnp.where(sign < 0, np.nan, out)
    return out


def logmeanexp(x: Any, axis: Any = None, where: Any = None, keepdims: bool = False) -> Any:
    """logsumexp(x) - log(n), n the number of selected elements."""
    jnp = _jnp()
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    x = _core.asarray(x)
    dtype = _core.aval(lse).dtype
    if where is None:
        dims = _reduced_axes(_core.aval(x).ndim, axis)
        count = int(np.prod([_core.aval(x).shape[d] for d in dims], dtype=np.int64))
        return lse - jnp.log(jnp.asarray(count, dtype))
    selected = jnp.broadcast_to(jnp.asarray(where), _core.aval(x).shape).astype(dtype)
    return lse - jnp.log(jnp.sum(selected, axis=axis, keepdims=keepdims))


def standardize(x: Any, axis: Any = -1, mean: Any = None, variance: Any = None, epsilon: Any = 1e-5,
                where: Any = None, *, algorithm: str = "fast") -> Any:
    """(x - mean) / sqrt(variance + epsilon) over ``axis``.

    ``algorithm='fast'`` takes variance as E[x^2] - E[x]^2 (clipped at 0), ``'stable'`` as E[(x - E[x])^2].
    """
    jnp = _jnp()
    _core.check_arraylike("standardize", x)
    if algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True, where=where)
        else:
            variance = jnp.clip(jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean), 0)
    return jnp.subtract(x, mean) * _lax().rsqrt(variance + epsilon)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """``x[..., None] == arange(num_classes)`` as ``dtype`` (default float), the new axis at ``axis``.

    Out-of-range classes (negative or >= num_classes) give an all-zero row.
    """
    jnp = _jnp()
    try:
        num_classes = operator.index(num_classes)
    except TypeError as e:  # (a traced one stays a ConcretizationError: a loop whose index it is retries unrolled)
        raise (ConcretizationError if isinstance(e, ConcretizationError) else TypeError)(
            f"one_hot: num_classes must be a static Python int, got {num_classes!r}") from None
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtypes.to_dtype(dtype))
    x = _array("one_hot", x)
    ndim = _core.aval(x).ndim
    if not -(ndim + 1) <= axis <= ndim:
        raise ValueError(f"one_hot: axis {axis} is out of bounds for an output of rank {ndim + 1}")
    axis = axis % (ndim + 1)
    classes_shape = [1] * ndim
    classes_shape.insert(axis, num_classes)
    classes = _lax().broadcasted_iota(_core.aval(x).dtype, tuple(classes_shape), axis)
    return (jnp.expand_dims(x, axis) == classes).astype(dtype)


# -- attention -----------------------------------------------------------------------------------------------
def _large_negative(dtype: np.dtype) -> float:
    # a finite stand-in for -inf that stays finite once the logits are cast to float32 for the softmax
    return -0.7 * float(min(np.finfo(dtype).max, np.finfo(np.float32).max))


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None, *,
                          scale: float | None = None, is_causal: bool = False, query_seq_lengths: Any = None,
                          key_value_seq_lengths: Any = None, local_window_size: Any = None,
                          implementation: str | None = None, return_residual: bool = False) -> Any:
    """softmax(q k^T * scale + bias, masked) v per head, inputs laid out (B, T, N, H) or (T, N, H).

    Keys and values may have fewer heads K than the query's N when K divides N (grouped-query attention).
    The softmax is computed in float32 at least.
    """
    jnp = _jnp()
    if implementation not in (None, "xla"):
        raise NotImplementedError(f"dot_product_attention: implementation={implementation!r} is not available; "
                                  "use None or 'xla'")
    if local_window_size is not None or return_residual:
        raise NotImplementedError("dot_product_attention: local_window_size and return_residual are not supported")
    query, key, value = (_array("dot_product_attention", t) for t in (query, key, value))
    ranks = {_core.aval(t).ndim for t in (query, key, value)}
    if ranks not in ({3}, {4}):
        raise ValueError("dot_product_attention: query, key and value must all be rank 3 (T, N, H) or all rank 4 "
                         f"(B, T, N, H), got shapes {[_core.aval(t).shape for t in (query, key, value)]}")
    unbatched = ranks == {3}
    if unbatched:
        query, key, value = (jnp.expand_dims(t, 0) for t in (query, key, value))
        bias = None if bias is None else jnp.expand_dims(_core.asarray(bias), 0)
        mask = None if mask is None else jnp.expand_dims(_core.asarray(mask), 0)
    B, T, N, H = _core.aval(query).shape
    _, S, K, _ = _core.aval(key).shape
    if _core.aval(key).shape != _core.aval(value).shape or _core.aval(key).shape[0] != B or \
            _core.aval(key).shape[3] != H or N % K:
        raise ValueError(f"dot_product_attention: key and value must have shape (B, S, K, H) with B={B}, H={H} and "
                         f"K dividing N={N}; got key {_core.aval(key).shape}, value {_core.aval(value).shape}")
    G = N // K
    scale = 1.0 / float(np.sqrt(H)) if scale is None else scale
    logits_dtype = dtypes.promote_types(_core.aval(query).dtype, np.float32)
    q = jnp.transpose(jnp.reshape(query, (B, T, K, G, H)), (0, 2, 3, 1, 4))  # (B, K, G, T, H)
    k = jnp.transpose(key, (0, 2, 1, 3))[:, :, None]  # (B, K, 1, S, H)
    v = jnp.transpose(value, (0, 2, 1, 3))[:, :, None]  # (B, K, 1, S, H)
    logits = jnp.matmul(q, jnp.swapaxes(k, -1, -2)).astype(logits_dtype) * scale  # (B, K, G, T, S)

    def grouped(t: Any) -> Any:  # (B or 1, N or 1, T, S) -> (B or 1, K or 1, G or 1, T, S)
        t = jnp.broadcast_to(_core.asarray(t), (*((1,) * (4 - _core.aval(_core.asarray(t)).ndim)),
                                                 *_core.aval(_core.asarray(t)).shape))
        tb, tn, tt, ts = _core.aval(t).shape
        return t[:, :, None] if tn == 1 else jnp.reshape(t, (tb, K, G, tt, ts))

    if bias is not None:
        logits = logits + grouped(bias).astype(logits_dtype)
    keep = None
    if mask is not None:
        keep = grouped(_core.asarray(mask).astype(bool))
    if is_causal:
        causal = jnp.tril(jnp.ones((T, S), bool))
        keep = causal if keep is None else jnp.logical_and(keep, causal)
    if query_seq_lengths is not None or key_value_seq_lengths is not None:
        q_len = jnp.full((B,), T) if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
        kv_len = jnp.full((B,), S) if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
        rows = jnp.arange(T)[None, :, None] < q_len[:, None, None]
        cols = jnp.arange(S)[None, None, :] < kv_len[:, None, None]
        padding = jnp.logical_and(rows, cols)[:, None, None]  # (B, 1, 1, T, S)
        keep = padding if keep is None else jnp.logical_and(keep, padding)
    if keep is not None:
        logits = jnp.where(keep, logits, _large_negative(logits_dtype))
    probs = softmax(logits.astype(np.float32), axis=-1).astype(_core.aval(value).dtype)
    out = jnp.matmul(probs, v)  # (B, K, G, T, H)
    out = jnp.reshape(jnp.transpose(out, (0, 3, 1, 2, 4)), (B, T, N, H))
    return out[0] if unbatched else out
