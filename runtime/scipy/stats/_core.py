"""``srcjax.scipy.stats``' functions of samples: ``mode``, ``rankdata`` and ``sem``, as JAX defines them (NaN
policy ``propagate`` only, for mode and rankdata). Runs of equal values are found in sorted order: a run's start
by a running max of start positions, its end by a running min from the right."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.numpy import _core
from srcjax.runtime.numpy.manipulation import normalize_axis
from srcjax.runtime.scipy.stats._common import jnp, promote

__all__ = ["ModeResult", "mode", "rankdata", "sem"]


class ModeResult(NamedTuple):
    mode: Any
    count: Any


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of {{'propagate', 'omit', 'raise'}}")
    if nan_policy != "propagate":
        raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not implemented (as in JAX); check for "
                                  "NaNs outside the function")


def _runs(ordered: Any) -> tuple[Any, Any]:
    """(start, end) of each element's run of equal values along the last axis of a sorted array, end exclusive;
    NaNs make one run (as ``unique``'s equal_nan)."""
    from srcjax.runtime import lax

    np_ = jnp()
    n = ordered.shape[-1]
    nan = np_.isnan(ordered) if np_.issubdtype(ordered.dtype, np_.inexact) else np_.zeros(ordered.shape, bool)
    new = (ordered[..., 1:] != ordered[..., :-1]) & ~(nan[..., 1:] & nan[..., :-1])
    first = np_.ones(ordered.shape[:-1] + (1,), bool)
    starts = np_.concatenate([first, new], axis=-1)
    ends = np_.concatenate([new, first], axis=-1)  # an element is last in its run
    index = np_.broadcast_to(np_.arange(n, dtype=np.int32), ordered.shape)
    start = lax.cummax(np_.where(starts, index, 0), axis=ordered.ndim - 1)
    end = lax.cummin(np_.where(ends, index + 1, n), axis=ordered.ndim - 1, reverse=True)
    return start, end


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
    """The most frequent value along ``axis`` (the smallest of those tied) and its count."""
    np_ = jnp()
    _core.check_arraylike("mode", a)
    _check_nan_policy("mode", nan_policy)
    x = np_.atleast_1d(a)
    if axis is None:
        x, axis = x.ravel(), 0
        out_shape = (1,) * np_.ndim(a) if keepdims else ()
    else:
        axis = normalize_axis(axis, x.ndim, "mode")
        out_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape)) if keepdims else \
            tuple(s for i, s in enumerate(x.shape) if i != axis)
    x = np_.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:
        nan = np_.full(out_shape, np.nan, dtypes.default_float_dtype())
        return ModeResult(nan, np_.zeros(out_shape, dtypes.default_float_dtype()))
    ordered = np_.sort(x, axis=-1)
    start, end = _runs(ordered)
    counts = end - start
    best = np_.argmax(counts, axis=-1)[..., None]
    value = np_.take_along_axis(ordered, best, axis=-1)[..., 0]
    count = np_.take_along_axis(counts, best, axis=-1)[..., 0]
    return ModeResult(value.reshape(out_shape), count.reshape(out_shape))


def rankdata(a: Any, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate") -> Any:
    """Ranks from 1 of the values of ``a`` (flattened, or along ``axis``), ties ranked by ``method``: ``average``,
    ``min``, ``max``, ``dense`` or ``ordinal``; all NaN where a slice holds a NaN. Default float dtype."""
    np_ = jnp()
    _core.check_arraylike("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    x = np_.asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    else:
        axis = normalize_axis(axis, x.ndim, "rankdata")
    x = np_.moveaxis(x, axis, -1)
    out_dtype = dtypes.default_float_dtype()
    order = np_.argsort(x, axis=-1, stable=True)
    ordered = np_.take_along_axis(x, order, axis=-1)
    inverse = np_.argsort(order, axis=-1, stable=True)
    start, end = _runs(ordered)
    if method == "ordinal":
        ranks = inverse + 1
    elif method == "dense":
        first = np_.ones(ordered.shape[:-1] + (1,), bool)
        starts = np_.concatenate([first, ordered[..., 1:] != ordered[..., :-1]], axis=-1)
        ranks = np_.take_along_axis(np_.cumsum(starts, axis=-1), inverse, axis=-1)
    else:
        low, high = start + 1, end
        by_sorted = {"min": low, "max": high, "average": (low + high) / 2}[method]
        ranks = np_.take_along_axis(by_sorted, inverse, axis=-1)
    ranks = ranks.astype(out_dtype)
    if np_.issubdtype(x.dtype, np_.inexact):
        ranks = np_.where(np_.any(np_.isnan(x), axis=-1, keepdims=True), np.nan, ranks).astype(out_dtype)
    return np_.moveaxis(ranks, -1, axis)


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Any:
    """The standard error of the mean: std(ddof) / sqrt(n), n the count along ``axis`` (non-NaN ones with
    nan_policy ``omit``)."""
    np_ = jnp()
    (b,) = promote("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / np_.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = (~np_.isnan(b)).sum(axis, keepdims=keepdims)
        return np_.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / np_.sqrt(count).astype(b.dtype)
    raise ValueError(f"{nan_policy} is not supported")
