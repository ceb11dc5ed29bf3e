"""``lax``'s slicing, gather and scatter functions, with JAX's signatures and defaults.

Static positions (Python ints) are checked and normalised here; dynamic ones (arrays) go to the primitives,
which clamp them as XLA does. ``gather`` defaults to ``PROMISE_IN_BOUNDS`` (XLA clamps), the scatters to
``FILL_OR_DROP`` (out-of-bounds windows are skipped), as in JAX.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from srcjax.runtime.lax._checks import PY_SCALARS as _PY_SCALARS
from srcjax.runtime.lax._checks import axis as _axis
from srcjax.runtime.lax._checks import ints as _ints
from srcjax.runtime.lax._checks import operand as _operand
from srcjax.runtime.lax._checks import unchanged as _unchanged
from srcjax.runtime import dtypes
from srcjax.runtime.numpy._core import TypeOrValueError, aval, broadcast_to, convert, is_arraylike
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    default_fill_value,
    dynamic_slice_p,
    dynamic_update_slice_p,
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
    slice_p,
)
from srcjax.transpiler.primitives.reduce import reduce_max_p
from srcjax.transpiler.primitives.shape import reshape_p, squeeze_p

__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers", "dynamic_index_in_dim",
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "gather", "index_in_dim", "index_take", "scatter", "scatter_add",
    "scatter_apply", "scatter_max", "scatter_min", "scatter_mul", "scatter_sub", "slice", "slice_in_dim",
]


# -- static slices ---------------------------------------------------------------------------------------
def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001 - lax's name
          strides: Sequence[int] | None = None) -> Any:
    starts = _ints(start_indices, "slice", "start_indices")
    limits = _ints(limit_indices, "slice", "limit_indices")
    steps = None if strides is None else _ints(strides, "slice", "strides")
    if steps is not None and all(s == 1 for s in steps):
        steps = None
    shape = aval(_operand(operand, "slice")).shape
    if starts == (0,) * len(shape) and limits == shape and steps is None and not isinstance(operand, _PY_SCALARS):
        return _unchanged(operand)
    return slice_p.bind(operand, start_indices=starts, limit_indices=limits, strides=steps)


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None, stride: int = 1,
                 axis: int = 0) -> Any:
    """``operand[start:limit:stride]`` along ``axis``; negative positions count from the end."""
    shape = aval(_operand(operand, "slice_in_dim")).shape
    axis = _axis(axis, len(shape), "slice_in_dim")
    n = shape[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = n if limit_index is None else operator.index(limit_index)
    start, limit = start + n if start < 0 else start, limit + n if limit < 0 else limit
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    shape = aval(_operand(operand, "index_in_dim")).shape
    axis = _axis(axis, len(shape), "index_in_dim")
    index = operator.index(index)
    if not -shape[axis] <= index < shape[axis]:
        raise IndexError(f"lax.index_in_dim: index {index} is out of bounds for axis {axis} with size {shape[axis]}")
    index %= shape[axis]
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze_p.bind(out, dimensions=(axis,))


# -- dynamic slices --------------------------------------------------------------------------------------
def _start_indices(name: str, starts: Any, shape: tuple[int, ...], allow_negative: bool | Sequence[bool],
                   ) -> list[Any]:
    """One integer scalar per axis, of one dtype; negative ones wrap around once (when allowed)."""
    if is_arraylike(starts) and not isinstance(starts, _PY_SCALARS):
        typ = aval(starts)
        if typ.ndim != 1:
            raise TypeError(f"lax.{name}: an array of start indices must be 1-d, got shape {typ.shape}")
        starts = [reshape_p.bind(slice_p.bind(starts, start_indices=(i,), limit_indices=(i + 1,), strides=None),
                                 new_sizes=(), dimensions=None) for i in range(typ.shape[0])]
    starts = list(starts)
    if len(starts) != len(shape):
        raise TypeOrValueError(f"lax.{name}: needs one start index per operand axis ({len(shape)}), got "
                               f"{len(starts)}")  # (JAX: a ValueError)
    for i, s in enumerate(starts):
        if not is_arraylike(s) or aval(s).shape != () or aval(s).dtype.kind not in "iu":
            raise TypeError(f"lax.{name}: start index {i} must be an integer scalar, got {s!r}")
    wrap = [allow_negative] * len(shape) if isinstance(allow_negative, bool) else list(allow_negative)
    arrays = [s for s in starts if not isinstance(s, (int, np.integer))]
    dtype = dtypes.result_type(*arrays) if arrays else dtypes.default_int_dtype()
    if max(shape, default=0) > np.iinfo(dtype).max:  # an int8 start into 300 rows: s + n needs a wider type
        dtype = np.promote_types(dtype, dtypes.default_int_dtype())
    out = []
    for s, n, w in zip(starts, shape, wrap):
        if isinstance(s, (int, np.integer)):
            if s < 0 and not w:
                raise ValueError(f"Index {s} is out of bounds for dimension {n} if allow_negative_indices=False")
            s = int(s) + n if s < 0 else int(s)
            out.append(np.asarray(min(max(s, np.iinfo(dtype).min), np.iinfo(dtype).max), dtype))
            continue
        s = convert(s, dtype)
        if w and dtype.kind == "i":  # s < 0 ? s + n : s
            size = np.asarray(n, dtype)
            s = ew.select_n_p.bind(ew.lt_p.bind(s, np.asarray(0, dtype)), s, ew.add_p.bind(s, size))
        out.append(s)
    return out


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    shape = aval(_operand(operand, "dynamic_slice")).shape
    starts = _start_indices("dynamic_slice", start_indices, shape, allow_negative_indices)
    sizes = _ints(slice_sizes, "dynamic_slice", "slice_sizes")
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    shape = aval(_operand(operand, "dynamic_slice_in_dim")).shape
    axis = _axis(axis, len(shape), "dynamic_slice_in_dim")
    starts: list[Any] = [0] * len(shape)
    sizes = list(shape)
    starts[axis], sizes[axis] = start_index, operator.index(slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    shape = aval(_operand(operand, "dynamic_index_in_dim")).shape
    axis = _axis(axis, len(shape), "dynamic_index_in_dim")
    out = dynamic_slice_in_dim(operand, index, 1, axis, allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze_p.bind(out, dimensions=(axis,))


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    typ = aval(_operand(operand, "dynamic_update_slice"))
    if isinstance(update, _PY_SCALARS):
        update = convert(update, typ.dtype, typ.weak_type)
    starts = _start_indices("dynamic_update_slice", start_indices, typ.shape, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, _operand(update, "dynamic_update_slice"), *starts)


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    shape = aval(_operand(operand, "dynamic_update_slice_in_dim")).shape
    axis = _axis(axis, len(shape), "dynamic_update_slice_in_dim")
    starts: list[Any] = [0] * len(shape)
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    shape = aval(_operand(operand, "dynamic_update_index_in_dim")).shape
    axis = _axis(axis, len(shape), "dynamic_update_index_in_dim")
    if isinstance(update, _PY_SCALARS):
        update = convert(update, aval(operand).dtype, aval(operand).weak_type)
    if len(aval(update).shape) == len(shape) - 1:
        new = aval(update).shape[:axis] + (1,) + aval(update).shape[axis:]
        update = reshape_p.bind(update, new_sizes=new, dimensions=None)
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


# -- gather and scatter ----------------------------------------------------------------------------------
def _fill_value(fill_value: Any, dtype: np.dtype) -> Any:
    """A hashable Python scalar (a primitive parameter) for the gather's fill value."""
    if fill_value is None:
        return default_fill_value(dtype)
    if is_arraylike(fill_value) and not isinstance(fill_value, _PY_SCALARS):
        if aval(fill_value).shape != ():
            raise ValueError(f"lax.gather: fill_value must be a scalar, got shape {aval(fill_value).shape}")
        fill_value = np.asarray(fill_value).item()
    return fill_value


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False, indices_are_sorted: bool = False,
           mode: str | GatherScatterMode | None = None, fill_value: Any = None) -> Any:
    typ = aval(_operand(operand, "gather"))
    parsed = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    fill = _fill_value(fill_value, typ.dtype) if parsed == GatherScatterMode.FILL_OR_DROP else None
    return gather_p.bind(operand, _operand(start_indices, "gather"), dimension_numbers=dimension_numbers,
                         slice_sizes=_ints(slice_sizes, "gather", "slice_sizes"), mode=parsed, fill_value=fill,
                         indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices))


def _scatter(prim, name: str):
    def fn(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: ScatterDimensionNumbers, *,
           indices_are_sorted: bool = False, unique_indices: bool = False,
           mode: str | GatherScatterMode | None = None) -> Any:
        typ = aval(_operand(operand, name))
        if isinstance(updates, _PY_SCALARS):
            updates = convert(updates, typ.dtype, typ.weak_type)
        return prim.bind(operand, _operand(scatter_indices, name), _operand(updates, name),
                         dimension_numbers=dimension_numbers, mode=GatherScatterMode.from_any(mode),
                         indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"XLA's scatter with ``{name}``'s combiner: each update window is written into ``operand``."
    return fn


scatter = _scatter(scatter_p, "scatter")
scatter_add = _scatter(scatter_add_p, "scatter_add")
scatter_mul = _scatter(scatter_mul_p, "scatter_mul")
scatter_min = _scatter(scatter_min_p, "scatter_min")
scatter_max = _scatter(scatter_max_p, "scatter_max")


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None) -> Any:
    """``scatter_add`` of the negated updates (integers wrap the same way)."""
    typ = aval(_operand(operand, "scatter_sub"))
    if isinstance(updates, _PY_SCALARS):
        updates = convert(updates, typ.dtype, typ.weak_type)
    return scatter_add(operand, scatter_indices, ew.neg_p.bind(updates), dimension_numbers,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *, update_shape: Sequence[int] = (),
                  indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode: str | GatherScatterMode | None = None) -> Any:
    """``func`` applied to the elements the scatter windows cover, once per window covering each (so again at
    a repeated index, as JAX documents).

    How often each element is covered is found by scatter-adding ones into zeros, then ``func`` is applied
    that many times where it is: this assumes ``func`` is elementwise, as ``x.at[idx].apply`` requires.
    """
    from srcjax.runtime.lax.control import fori_loop

    typ = aval(_operand(operand, "scatter_apply"))
    ones = np.ones(_ints(update_shape, "scatter_apply", "update_shape"), np.int32)
    counts = scatter_add(np.zeros(typ.shape, np.int32), scatter_indices, ones, dimension_numbers,
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)

    def apply_beyond(k: Any, y: Any) -> Any:  # func once more where an element is covered more than k times
        applied = func(y)
        if aval(applied).dtype != typ.dtype or aval(applied).shape != typ.shape:
            applied = convert(applied, typ.dtype, typ.weak_type)
        beyond = ew.gt_p.bind(counts, broadcast_to(convert(k, np.int32), typ.shape))
        return ew.select_n_p.bind(beyond, y, applied)

    once = apply_beyond(np.int32(0), operand)
    if typ.size == 0:
        return once
    return fori_loop(np.int32(1), reduce_max_p.bind(counts, axes=tuple(range(typ.ndim))), apply_beyond, once)


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """``src`` indexed by one integer array per axis in ``axes`` (the others kept whole)."""
    typ = aval(_operand(src, "index_take"))
    axes = tuple(_axis(a, typ.ndim, "index_take") for a in _ints(axes, "index_take", "axes"))
    idxs = list(idxs)
    if len(idxs) != len(axes):
        raise ValueError(f"lax.index_take: needs one index array per axis, got {len(idxs)} for axes {axes}")
    from srcjax.runtime.lax.shape import concatenate

    dtype = dtypes.result_type(*idxs)
    columns = [reshape_p.bind(convert(i, dtype), new_sizes=(*aval(i).shape, 1), dimensions=None) for i in idxs]
    indices = concatenate(columns, len(aval(columns[0]).shape) - 1)
    batch = len(aval(indices).shape) - 1
    offset = tuple(range(batch, batch + typ.ndim - len(axes)))
    dn = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=tuple(sorted(axes)), start_index_map=axes)
    sizes = tuple(1 if a in axes else n for a, n in enumerate(typ.shape))
    return gather(src, indices, dn, sizes, mode=GatherScatterMode.PROMISE_IN_BOUNDS)
