"""``srcjax.ops``: older JAX's functional index updates (``index_update(x, idx, y)`` is
``x.at[idx].set(y)``) and the segment reductions ``segment_sum``/``max``/``min``/``prod``."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.numpy import _core

__all__ = [
    "index", "index_update", "index_add", "index_mul", "index_min", "index_max", "segment_sum", "segment_max",
    "segment_min", "segment_prod",
]


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


class _Indexable:
    """``ops.index[...]`` returns the index expression itself, for passing to ``index_update`` and friends."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Any:
        return index


index = _Indexable()


def _at(x: Any, idx: Any) -> Any:
    _core.check_arraylike("index update", x)
    return _core.asarray(x).at[idx]


def index_update(x: Any, idx: Any, y: Any, indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    """A copy of ``x`` with ``x[idx] = y``."""
    return _at(x, idx).set(y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_add(x: Any, idx: Any, y: Any, indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    """A copy of ``x`` with ``x[idx] += y`` (repeated indices accumulate)."""
    return _at(x, idx).add(y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_mul(x: Any, idx: Any, y: Any, indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    """A copy of ``x`` with ``x[idx] *= y``."""
    return _at(x, idx).multiply(y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_min(x: Any, idx: Any, y: Any, indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    """A copy of ``x`` with ``x[idx] = minimum(x[idx], y)``."""
    return _at(x, idx).min(y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_max(x: Any, idx: Any, y: Any, indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    """A copy of ``x`` with ``x[idx] = maximum(x[idx], y)``."""
    return _at(x, idx).max(y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


# -- segment reductions ----------------------------------------------------------------------------------------
def _identity(kind: str, dtype: np.dtype) -> Any:
    """The value an empty segment gets: the identity of the reduction."""
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dtype.kind == "f" or dtype.kind == "c":
        return -np.inf if kind == "max" else np.inf
    if dtype.kind == "b":
        return kind != "max"
    info = np.iinfo(dtype)
    return int(info.min) if kind == "max" else int(info.max)


def _segment_reduce(kind: str, name: str, data: Any, segment_ids: Any, num_segments: int | None,
                    indices_are_sorted: bool, unique_indices: bool, bucket_size: int | None, mode: Any) -> Any:
    jnp = _jnp()
    _core.check_arraylike(name, data, segment_ids)
    data, segment_ids = _core.asarray(data), _core.asarray(segment_ids)
    ids_type = _core.aval(segment_ids)
    if ids_type.dtype.kind not in "iu":
        raise TypeError(f"{name}: segment_ids must be integers, got {ids_type.dtype.name}")
    if ids_type.ndim != 1 or (_core.aval(data).ndim and ids_type.shape[0] != _core.aval(data).shape[0]):
        raise ValueError(f"{name}: segment_ids must be one-dimensional with one id per row of data; got ids of shape "
                         f"{ids_type.shape} for data of shape {_core.aval(data).shape}")
    if num_segments is None:
        if not _core.is_concrete(segment_ids):
            raise ValueError(f"{name}: num_segments must be given inside a compiled function (the number of "
                             "segments would depend on the values of segment_ids)")
        num_segments = int(jnp.max(segment_ids)) + 1 if ids_type.shape[0] else 0
    num_segments = int(num_segments)
    if mode not in (None, "drop", "fill", "promise_in_bounds", "clip"):
        raise ValueError(f"{name}: unknown mode {mode!r}")
    # ids outside [0, num_segments) are dropped; negative ids must not wrap around as NumPy indices do
    segment_ids = jnp.where(segment_ids < 0, num_segments, segment_ids)
    dtype = _core.aval(data).dtype
    out = jnp.full((num_segments, *_core.aval(data).shape[1:]), _identity(kind, dtype), dtype=dtype)
    update = getattr(out.at[segment_ids], {"sum": "add", "prod": "multiply", "max": "max", "min": "min"}[kind])
    # bucket_size only regroups the work in JAX; the result is the same
    return update(data, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                  mode="clip" if mode == "clip" else "drop")


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None) -> Any:
    """out[k] = sum of data[i] over i with segment_ids[i] == k (0 for an empty segment)."""
    return _segment_reduce("sum", "segment_sum", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None) -> Any:
    """out[k] = product of data[i] over i with segment_ids[i] == k (1 for an empty segment)."""
    return _segment_reduce("prod", "segment_prod", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode)


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None) -> Any:
    """out[k] = max of data[i] over i with segment_ids[i] == k (-inf, or the dtype's minimum, if empty)."""
    return _segment_reduce("max", "segment_max", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode: Any = None) -> Any:
    """out[k] = min of data[i] over i with segment_ids[i] == k (inf, or the dtype's maximum, if empty)."""
    return _segment_reduce("min", "segment_min", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode)
