"""srcjax.numpy: ``x[index]``, ``x.at[index]`` updates, and the index functions (take, nonzero, ix_, ...).

An index is first expanded into one entry per operand axis (plus new axes). Indexes made only of static
ints and slices become ``slice``/``rev``/``reshape``; 0-d array indexes add a ``dynamic_slice``; anything
with integer arrays becomes one ``gather`` (and ``.at`` updates one ``scatter``) whose index vectors are
built from the arrays, the ints and the strided slices. NumPy decides where the advanced axes go: where
the first advanced index stands when the advanced indexes (arrays, and ints next to them) are adjacent,
else first. Semantics are JAX's: indexes out of bounds, array or static int, are clamped by ``x[...]`` and
by ``.at[...].get()`` (not an ``IndexError`` as in NumPy), filled by ``get(mode='fill')``, dropped by
updates. Boolean masks need concrete values (their result's shape depends on them).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.array import Array
from srcjax.runtime.numpy._core import (
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    check_arraylike,
    convert,
    is_arraylike,
    is_concrete,
    promote_dtypes,
    promote_shapes,
)
from srcjax.transpiler.ir import ConcretizationError, NonConcreteBooleanIndexError, Value
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives import reduce as rp
from srcjax.transpiler.primitives.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    default_fill_value,
    dynamic_slice_p,
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
    slice_p,
)
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p, concatenate_p, iota_p, reshape_p, rev_p

__all__ = [
    "IndexUpdateHelper", "argwhere", "choose", "compress", "diag_indices", "diag_indices_from", "extract",
    "flatnonzero", "getitem", "index_exp", "ix_", "mask_indices", "nonzero", "place", "put", "put_along_axis",
    "ravel_multi_index", "s_", "select", "take", "take_along_axis", "tril_indices", "tril_indices_from",
    "triu_indices", "triu_indices_from", "unravel_index",
]

index_exp = np.index_exp  # static helpers: they only build tuples of slices
s_ = np.s_


# -- small helpers over the primitives -------------------------------------------------------------------
def _shape(x: Any) -> tuple[int, ...]:
    return aval(x).shape


def _index_dtype() -> np.dtype:
    return dtypes.default_int_dtype()


def _const(value: Any, dtype: Any) -> np.ndarray:
    return np.asarray(value, dtype)


def _reshape(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(shape)
    return x if _shape(x) == shape and not isinstance(x, np.ndarray) else reshape_p.bind(x, new_sizes=shape,
                                                                                          dimensions=None)


def _where(cond: Any, x: Any, y: Any) -> Any:
    """``cond ? x : y`` for operands of one shape and dtype."""
    return ew.select_n_p.bind(cond, y, x)


def _wrap_negative(i: Any, n: int) -> Any:
    """``i < 0 ? i + n : i``: a negative index counts from the end (once)."""
    typ = aval(i)
    if typ.dtype.kind == "u":
        return i
    if n > np.iinfo(typ.dtype).max:  # i + n needs a wider type (an int8 index of 300 elements)
        i = convert(i, np.promote_types(typ.dtype, _index_dtype()))
        typ = aval(i)
    if isinstance(i, np.ndarray):
        return np.where(i < 0, i + n, i).astype(i.dtype)
    zero, size = _const(0, typ.dtype), _const(n, typ.dtype)
    shape = typ.shape
    if shape:
        zero, size = np.broadcast_to(zero, shape), np.broadcast_to(size, shape)
    return _where(ew.lt_p.bind(i, zero), ew.add_p.bind(i, size), i)


def _to_index_dtype(i: Any, dtype: Any) -> Any:
    """``i`` as the signed integer ``dtype``; unsigned values it cannot hold become its largest, so that they stay
    out of bounds (uint32 4294967295 would otherwise become -1, the last element)."""
    typ, dtype = aval(i), np.dtype(dtype)
    if typ.dtype == dtype:
        return i
    if typ.dtype.kind == "u" and dtype.kind == "i" and np.iinfo(typ.dtype).max > np.iinfo(dtype).max:
        limit = np.iinfo(dtype).max
        i = np.minimum(i, limit) if isinstance(i, np.ndarray) else ew.min_p.bind(
            i, np.broadcast_to(np.asarray(limit, typ.dtype), typ.shape))
    return i.astype(dtype) if isinstance(i, np.ndarray) else convert(i, dtype)


def _clip(i: Any, lo: int, hi: int) -> Any:
    typ = aval(i)
    return ew.clamp_p.bind(_const(lo, typ.dtype), i, _const(hi, typ.dtype))


def _iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    return iota_p.bind(dtype=np.dtype(dtype), shape=tuple(shape), dimension=dimension)


def _full(shape: Sequence[int], value: Any, dtype: Any) -> Any:
    return broadcast_in_dim_p.bind(_const(value, dtype), shape=tuple(shape), broadcast_dimensions=())


def _as_index_array(name: str, x: Any) -> Any:
    """An integer index array (Python ints and lists become int32 arrays)."""
    if isinstance(x, (list, tuple)):
        x = np.asarray(x) if all(is_concrete(v) for v in _leaves(x)) else asarray(x)
        if isinstance(x, np.ndarray) and x.size == 0:
            x = x.astype(_index_dtype())
    x = asarray(x) if not is_arraylike(x) or isinstance(x, (int, np.integer)) else x
    if aval(x).dtype.kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got dtype {aval(x).dtype.name}")
    return x


def _leaves(x: Any) -> list:
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _concrete_value(x: Any, name: str, what: str, *, structure: bool = False, error: type[Exception] = TypeError,
                    why: str = "the result's shape would depend on its data. Pass size=... or use jnp.where instead",
                    ) -> np.ndarray:
    """The data of a concrete array; a symbolic one is an ``error`` (the result's shape would depend on it).
    With ``structure`` (the data decides only which elements are taken), a traced value the trace knows from
    its inputs (under grad outside jit, as JAX's tracer there holds its primal) is used too."""
    if not is_concrete(x):
        known = Value.known_value(x, False) if structure and isinstance(x, Value) and Value.known_value else None
        if known is None:
            raise error(f"{name}: {what} must be concrete, but it is a value computed inside a compiled "
                        f"function; {why}.")
        return np.asarray(known)
    return np.asarray(x)


# -- expanding an index into entries ---------------------------------------------------------------------
@dataclass
class _Entry:
    kind: str  # 'none' (new axis), 'int', 'slice', 'array'
    dim: int = -1  # the operand axis it indexes
    value: Any = None  # int, (start, count, step) for slices, the index array for arrays
    position: int = 0  # where it stood in the index (after expansion), for NumPy's placement rule


def _classify(item: Any, position: int) -> tuple[str, Any]:
    """('none' | 'ellipsis' | 'int' | 'slice' | 'array' | 'bool0' | 'mask', payload) for one index item."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", item
    if isinstance(item, (bool, np.bool_)):
        return "bool0", bool(item)
    if isinstance(item, (int, np.integer)):
        return "int", _numpy_int(item) if isinstance(item, np.integer) else int(item)
    if isinstance(item, str):
        raise TypeError(f"srcjax does not support string indexing; got index {item!r}")
    if isinstance(item, (list, tuple)):
        if not item:
            return "array", np.zeros((0,), _index_dtype())
        item = np.asarray(item) if all(is_concrete(v) for v in _leaves(item)) else asarray(item)
    if isinstance(item, np.ndarray) and item.dtype.kind in "iu" and item.ndim == 0:
        return "int", _numpy_int(item)
    if not is_arraylike(item) or isinstance(item, (float, complex)):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{type(item).__name__} at position {position}, indexer value {item!r}")
    typ = aval(item)
    if typ.dtype.kind == "b":
        if typ.ndim == 0:
            return "bool0", bool(_concrete_value(item, "indexing", "a boolean index", structure=True,
                                                 error=NonConcreteBooleanIndexError))
        return "mask", item
    if typ.dtype.kind not in "iu":
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type {typ.dtype.name} at "
                        f"position {position}, indexer value {item!r}")
    return "array", item


def _numpy_int(item: Any) -> int:
    """A NumPy integer index as an int the index dtype holds: JAX reads it as an array of its own dtype, so a value
    beyond the index dtype (``np.uint32(2**32 - 1)``) is out of bounds, not an overflow as a Python int is."""
    info = np.iinfo(_index_dtype())
    return min(max(int(item), info.min), info.max)


def _expand(shape: tuple[int, ...], index: Any, *, clamp_ints: bool,
            wrap_negative: bool = True) -> tuple[list[_Entry], tuple[int, ...]]:
    """One entry per operand axis and per new axis; masks become integer arrays, '...' becomes slices.
    Negative static ints count from the end once (unless not ``wrap_negative``); ``clamp_ints`` then clamps
    them into the axis (reads), else one still out of bounds stays so (updates drop it).

    Also returns where unit axes are to be inserted into the operand (``_with_units``): a scalar bool beside
    another advanced index is one of them, as in NumPy and JAX, the index array ``arange(1)`` (True) or
    ``arange(0)`` (False) on a unit axis inserted where it stands (``x[True, i]`` is ``x[i]``)."""
    items = list(index) if isinstance(index, tuple) else [index]
    classified = [_classify(item, i) for i, item in enumerate(items)]
    if sum(kind == "ellipsis" for kind, _ in classified) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if (any(kind == "bool0" for kind, _ in classified)
            and sum(kind in ("int", "array", "mask", "bool0") for kind, _ in classified) > 1):
        classified = [("unit", v) if kind == "bool0" else (kind, v) for kind, v in classified]
    units: list[int] = []
    used = sum(1 if kind in ("int", "slice", "array", "unit") else aval(v).ndim if kind == "mask" else 0
               for kind, v in classified)
    rank = len(shape) + sum(kind == "unit" for kind, _ in classified)
    if used > rank:
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {used} were indexed")
    if not any(kind == "ellipsis" for kind, _ in classified):
        classified.append(("ellipsis", None))
    shape = list(shape)
    entries: list[_Entry] = []
    dim = position = 0  # positions order the entries; an ellipsis takes one even when it expands to nothing

    def add(entry: _Entry) -> None:
        nonlocal position
        entry.position = position
        entries.append(entry)
        position += 1

    for kind, value in classified:
        if kind == "ellipsis":
            position += rank == used
            for _ in range(rank - used):
                add(_slice_entry(dim, slice(None), shape[dim]))
                dim += 1
        elif kind == "none":
            add(_Entry("none"))
        elif kind == "bool0":  # like a new axis of size 1 (True) or 0 (False)
            add(_Entry("none", value=value))
        elif kind == "unit":
            shape.insert(dim, 1)
            units.append(dim)
            add(_Entry("array", dim, np.arange(int(value), dtype=_index_dtype())))
            dim += 1
        elif kind == "slice":
            add(_slice_entry(dim, value, shape[dim]))
            dim += 1
        elif shape[dim] == 0 and (kind == "int" or kind == "array" and aval(value).ndim == 0):
            raise IndexError(f"index is out of bounds for axis {dim} with size 0")  # (XLA's refusal, as JAX's)
        elif kind == "int" and clamp_ints and shape[dim] and not -shape[dim] * wrap_negative <= value < shape[dim]:
            # out of bounds: read as JAX reads it, with a dynamic_slice (which clamps it, and which checkify's
            # index_checks see)
            _clamped_int(value, dim, shape[dim])  # (its overflow check: the index dtype must hold the int)
            add(_Entry("array", dim, Array(np.asarray(value, _index_dtype()))))
            dim += 1
        elif kind == "int":
            n = shape[dim]
            # a read clamps, as JAX's gathers do: x[11] of 10 elements is x[9], x[-12] is x[0]
            add(_Entry("int", dim, _clamped_int(value, dim, n) if clamp_ints
                       else value + n if value < 0 and wrap_negative else value))
            dim += 1
        elif kind == "array":
            add(_Entry("array", dim, value))
            dim += 1
        else:  # a boolean mask covers as many axes as it has, each becoming one integer array
            mask_shape = aval(value).shape
            if mask_shape != tuple(shape[dim:dim + len(mask_shape)]):
                raise IndexError(f"boolean index did not match shape of indexed array in index {position}: got "
                                 f"{mask_shape}, expected {list(shape[dim:dim + len(mask_shape)])}")
            coords = np.nonzero(_concrete_value(value, "indexing", "a boolean mask index", structure=True,
                                                error=NonConcreteBooleanIndexError))
            for axis_coords in coords:
                add(_Entry("array", dim, axis_coords.astype(_index_dtype())))
                dim += 1
    return entries, tuple(units)


def _with_units(x: Any, units: tuple[int, ...]) -> Any:
    """``x`` with unit axes inserted at ``units`` (positions in the result), for scalar bool indexes."""
    if not units:
        return x
    shape = list(_shape(x))
    for axis in units:
        shape.insert(axis, 1)
    return _reshape(x, shape)


def _clamped_int(value: int, dim: int, n: int) -> int:
    """A static int index (negative counts from the end once) moved into ``[0, n)``, as JAX's clamping gather
    moves it; an empty axis has no element to clamp to, and an int the index dtype cannot hold is refused as
    JAX refuses it."""
    info = np.iinfo(_index_dtype())
    if not info.min <= value <= info.max:
        raise OverflowError(f"Python int {value} too large to convert to {_index_dtype().name}")
    if n == 0:
        raise IndexError(f"index is out of bounds for axis {dim} with size 0")
    return min(max(value + n if value < 0 else value, 0), n - 1)


def _slice_entry(dim: int, s: slice, n: int) -> _Entry:
    parts = []
    for part in (s.start, s.stop, s.step):
        if part is not None and not is_concrete(part):
            error = IndexError("slice entries must be static integers; use lax.dynamic_slice for a computed start")
            error.concretization = True  # (JAX's IndexError; a static-range loop over its index retries unrolled)
            raise error
        parts.append(None if part is None else operator.index(part))
    if parts[2] == 0:
        raise ValueError("slice step cannot be zero")
    start, stop, step = slice(*parts).indices(n)
    return _Entry("slice", dim, (start, len(range(start, stop, step)), step))


# -- x[index] --------------------------------------------------------------------------------------------
def getitem(x: Any, index: Any, *, wrap_negative: bool = True) -> Any:
    """``x[index]`` with NumPy's indexing rules and JAX's out-of-bounds semantics (negative indexes are out of
    bounds, so clamped to 0, when not ``wrap_negative``)."""
    if not is_arraylike(x):
        raise TypeError(f"cannot index a value of type {type(x).__name__}")
    entries, units = _expand(_shape(x), index, clamp_ints=True, wrap_negative=wrap_negative)
    x = _with_units(x, units)
    arrays = [e for e in entries if e.kind == "array"]
    if not arrays:
        return _static_index(x, entries)
    if all(aval(e.value).ndim == 0 and not isinstance(e.value, np.ndarray) for e in arrays):
        return _dynamic_index(x, entries, wrap_negative)
    return _gather(x, entries, GatherScatterMode.PROMISE_IN_BOUNDS, None, wrap_negative=wrap_negative)


def _final_shape(x_shape: tuple[int, ...], entries: list[_Entry], kept: Callable[[_Entry], bool]) -> list[int]:
    """The result's shape when no advanced index is present: kept axes and new axes, in order."""
    out = []
    for e in entries:
        if e.kind == "none":
            out.append(1)
        elif e.kind == "slice":
            out.append(e.value[1])
        elif kept(e):
            out.append(x_shape[e.dim])
    return out


def _finish(y: Any, shape: list[int], entries: list[_Entry]) -> Any:
    """Reshape to the result's shape, then cut the axes a ``False`` index asked for to size 0."""
    y = _reshape(y, shape)
    produced = [e for e in entries if e.kind in ("none", "slice")]  # the entries that make output axes
    falses = [i for i, e in enumerate(produced) if e.kind == "none" and e.value is False]
    if falses:
        limits = list(shape)
        for i in falses:
            limits[i] = 0
        y = slice_p.bind(y, start_indices=(0,) * len(shape), limit_indices=tuple(limits), strides=None)
    return y


def _static_slicing(x: Any, entries: list[_Entry]) -> Any:
    """Apply the slices and static ints of ``entries`` (other axes are kept whole): one slice, one rev."""
    shape = _shape(x)
    starts, limits, strides, reverse = [0] * len(shape), list(shape), [1] * len(shape), []
    for e in entries:
        if e.kind == "int":
            starts[e.dim], limits[e.dim] = e.value, e.value + 1
        elif e.kind == "slice":
            start, count, step = e.value
            if count == 0:
                starts[e.dim] = limits[e.dim] = 0
            elif step > 0:
                starts[e.dim], limits[e.dim], strides[e.dim] = start, start + (count - 1) * step + 1, step
            else:  # the same elements in increasing order, then reversed
                low = start + (count - 1) * step
                starts[e.dim], limits[e.dim], strides[e.dim] = low, start + 1, -step
                reverse.append(e.dim)
    if (starts, limits) != ([0] * len(shape), list(shape)) or any(s != 1 for s in strides):
        x = slice_p.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                         strides=None if all(s == 1 for s in strides) else tuple(strides))
    if reverse:
        x = rev_p.bind(x, dimensions=tuple(reverse))
    return x


def _static_index(x: Any, entries: list[_Entry]) -> Any:
    y = _static_slicing(x, entries)
    return _finish(y, _final_shape(_shape(x), entries, lambda e: False), entries)


def _dynamic_index(x: Any, entries: list[_Entry], wrap_negative: bool) -> Any:
    """Static slicing, then one ``dynamic_slice`` of size 1 on the axes indexed by 0-d arrays and static ints (as
    JAX's: checkify's index_checks name the whole operand's shape)."""
    y = _static_slicing(x, [e for e in entries if e.kind != "int"])
    shape = _shape(y)
    dtype = dtypes.result_type(*(e.value for e in entries if e.kind == "array"))
    if max(shape, default=0) > np.iinfo(dtype).max:  # an int8 index of 300 rows: positions need a wider type
        dtype = np.promote_types(dtype, _index_dtype())
    starts: list[Any] = [_const(0, dtype)] * len(shape)
    sizes = list(shape)
    for e in entries:
        if e.kind == "array":
            start = _to_index_dtype(e.value, dtype)
            starts[e.dim] = _wrap_negative(start, shape[e.dim]) if wrap_negative else start
            sizes[e.dim] = 1
        elif e.kind == "int":
            starts[e.dim], sizes[e.dim] = _const(e.value, dtype), 1
    y = dynamic_slice_p.bind(y, *starts, slice_sizes=tuple(sizes))
    return _finish(y, _final_shape(_shape(x), entries, lambda e: False), entries)


# -- the gather/scatter form of an index -----------------------------------------------------------------
@dataclass
class _Plan:
    indices: Any  # integer array: batch shape + (number of indexed axes,)
    dnums: GatherDimensionNumbers
    slice_sizes: tuple[int, ...]
    gather_shape: tuple[int, ...]  # what the gather returns (the scatter's update shape)
    final_shape: tuple[int, ...]  # with the new axes


def _plan(shape: tuple[int, ...], entries: list[_Entry], wrap_negative: bool = True) -> _Plan:
    """Gather dimension numbers and index vectors reading ``x[entries]`` in NumPy's output order.

    Output items, in order: a window per step-1 slice, a batch axis per strided slice (its positions come
    from an iota), and the broadcast block of the advanced indexes (arrays and, when there are arrays, the
    ints). Ints without arrays are indexed axes that produce nothing.
    """
    arrays = [e for e in entries if e.kind == "array"]
    advanced = [e for e in entries if e.kind == "array" or (arrays and e.kind == "int")]
    block = broadcast_shapes(*(_shape(e.value) for e in arrays)) if arrays else ()
    positions = [e.position for e in advanced]
    adjacent = bool(positions) and max(positions) - min(positions) + 1 == len(positions)
    items: list[tuple[str, Any]] = [] if adjacent or not advanced else [("block", None)]
    for e in entries:
        if adjacent and e is advanced[0]:
            items.append(("block", None))
        if e.kind == "none":
            items.append(("new", e))
        elif e.kind == "slice":
            items.append(("window" if e.value[2] == 1 else "strided", e))
    batch_shape: list[int] = []
    batch_axes: dict[int, list[int]] = {}  # item number -> its axes in the batch shape
    offset_dims, final_shape = [], []
    gather_rank = 0
    for k, (kind, e) in enumerate(items):
        if kind == "new":
            final_shape.append(0 if e.value is False else 1)
            continue
        if kind == "window":
            offset_dims.append(gather_rank)
            sizes = [e.value[1]]
        else:
            sizes = list(block) if kind == "block" else [e.value[1]]
            batch_axes[k] = list(range(len(batch_shape), len(batch_shape) + len(sizes)))
            batch_shape.extend(sizes)
        final_shape.extend(sizes)
        gather_rank += len(sizes)
    block_axes = next((batch_axes[k] for k, (kind, _) in enumerate(items) if kind == "block"), [])
    dtype = _index_dtype()
    columns, index_map, collapsed = [], [], []
    slice_sizes = list(shape)
    for k, (kind, e) in enumerate(items):
        if kind == "strided":
            start, count, step = e.value
            line = np.arange(count, dtype=np.int64) * step + start
            columns.append(_column(line.astype(dtype), batch_shape, batch_axes[k]))
            index_map.append(e.dim), collapsed.append(e.dim)
            slice_sizes[e.dim] = 1
        elif kind == "window":
            slice_sizes[e.dim] = e.value[1]
            if e.value[0] != 0:
                columns.append(_column(_const(e.value[0], dtype), batch_shape, []))
                index_map.append(e.dim)
    for e in entries:
        if e.kind == "int":  # (an out-of-bounds one, from .at, only has to stay out of bounds)
            info = np.iinfo(dtype)
            columns.append(_column(_const(min(max(e.value, info.min), info.max), dtype), batch_shape, []))
        elif e.kind == "array":
            value = _to_index_dtype(e.value, dtype)
            value = _wrap_negative(value, shape[e.dim]) if wrap_negative else value
            ndim = len(_shape(value))
            columns.append(_column(value, batch_shape, block_axes[len(block_axes) - ndim:]))
        else:
            continue
        index_map.append(e.dim), collapsed.append(e.dim)
        slice_sizes[e.dim] = 1
    if columns:
        columns = [_reshape(c, tuple(batch_shape) + (1,)) for c in columns]
        indices = columns[0] if len(columns) == 1 else concatenate_p.bind(*columns, dimension=len(batch_shape))
    else:
        indices = np.zeros(tuple(batch_shape) + (0,), dtype)
    dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(sorted(collapsed)),
                                   start_index_map=tuple(index_map))
    gather_shape = tuple(d for (kind, _), d in zip(_item_kinds(items, block), final_shape) if kind != "new")
    return _Plan(indices, dnums, tuple(slice_sizes), gather_shape, tuple(final_shape))


def _item_kinds(items: list[tuple[str, Any]], block: tuple[int, ...]) -> list[tuple[str, Any]]:
    """One (kind, entry) per output axis (a block item stands for as many axes as the block has)."""
    out = []
    for kind, e in items:
        out.extend([(kind, e)] * (len(block) if kind == "block" else 1))
    return out


def _column(value: Any, batch_shape: list[int], axes: list[int]) -> Any:
    """``value`` broadcast to ``batch_shape``, its axes landing on ``axes``."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and not batch_shape:
        return value
    return broadcast_in_dim_p.bind(value, shape=tuple(batch_shape), broadcast_dimensions=tuple(axes))


def _gather(x: Any, entries: list[_Entry], mode: GatherScatterMode, fill_value: Any, *,
            indices_are_sorted: bool = False, unique_indices: bool = False, wrap_negative: bool = True) -> Any:
    plan = _plan(_shape(x), entries, wrap_negative)
    if 0 in plan.final_shape:  # nothing to read: no gather, as JAX (``zeros((0, 3))[empty]`` has no row to take)
        return _full(plan.final_shape, 0, aval(x).dtype)
    if mode == GatherScatterMode.FILL_OR_DROP:
        fill_value = default_fill_value(aval(x).dtype) if fill_value is None else _scalar_param(fill_value)
    else:
        fill_value = None
    y = gather_p.bind(x, plan.indices, dimension_numbers=plan.dnums, slice_sizes=plan.slice_sizes, mode=mode,
                      fill_value=fill_value, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return _finish_plan(y, plan)


def _finish_plan(y: Any, plan: _Plan) -> Any:
    if 0 in plan.final_shape and 0 not in plan.gather_shape:  # a False index: nothing selected
        return broadcast_in_dim_p.bind(_const(0, aval(y).dtype), shape=plan.final_shape, broadcast_dimensions=())
    return _reshape(y, plan.final_shape)


def _scalar_param(value: Any) -> Any:
    if is_arraylike(value) and not isinstance(value, (bool, int, float, complex)):
        if _shape(value) != ():
            raise ValueError(f"fill_value must be a scalar, got shape {_shape(value)}")
        return np.asarray(_concrete_value(value, "fill_value", "fill_value", error=ConcretizationError,
                                          why="it is a parameter of the gather, fixed when it compiles. Pass a "
                                              "Python number, or read with mode='clip' and jnp.where the "
                                              "out-of-bounds positions")).item()
    return value


# -- x.at[index] -----------------------------------------------------------------------------------------
class IndexUpdateHelper:
    """What ``x.at`` returns: ``x.at[index]`` names the elements an update or a read applies to."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """``x.at[index]``: ``set``/``add``/``multiply``/``divide``/``power``/``min``/``max``/``apply`` return an
    updated copy of ``x`` (repeated indices combine, out-of-bounds ones are dropped unless ``mode='clip'``);
    ``get`` reads (clamping, or ``fill_value`` with ``mode='fill'``)."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array, self.index = array, index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
            fill_value: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        if mode is None:  # (a fill_value alone is checked, then ignored: JAX's default mode promises in bounds)
            if fill_value is not None:
                _scalar_param(fill_value)
            return getitem(self.array, self.index, wrap_negative=wrap_negative_indices)
        parsed = GatherScatterMode.from_any(mode)
        entries, units = _expand(_shape(self.array), self.index, clamp_ints=False,
                                 wrap_negative=wrap_negative_indices)
        return _gather(_with_units(self.array, units), entries, parsed, fill_value,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       wrap_negative=wrap_negative_indices)

    def _scatter(self, prim: Any, values: Any, options: dict[str, Any], array: Any = None) -> Any:
        return _scatter_update(self.array if array is None else array, self.index, values, prim, **options)

    def set(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        return self._scatter(scatter_p, values, _options(mode, indices_are_sorted, unique_indices,
                                                         wrap_negative_indices))

    def add(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        return self._scatter(scatter_add_p, values, _options(mode, indices_are_sorted, unique_indices,
                                                             wrap_negative_indices))

    def subtract(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        """Adds ``-values``, negated in the dtype the scatter computes in (``x``'s promoted with theirs)."""
        values = asarray(values) if not is_arraylike(values) else values
        dtype, weak = dtypes.result_type(self.array, values, return_weak_type=True)
        return self._scatter(scatter_add_p, ew.neg_p.bind(convert(values, dtype, weak)),
                             _options(mode, indices_are_sorted, unique_indices, wrap_negative_indices))

    def multiply(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        return self._scatter(scatter_mul_p, values, _options(mode, indices_are_sorted, unique_indices,
                                                             wrap_negative_indices))

    mul = multiply

    def divide(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
               mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x / d`` where ``d`` is 1 except at the indexed elements, which multiply in each value."""
        from srcjax.runtime.numpy import ufuncs

        ones = _full(_shape(self.array), 1, aval(self.array).dtype)
        divisor = self._scatter(scatter_mul_p, values, _options(mode, indices_are_sorted, unique_indices,
                                                                wrap_negative_indices), ones)
        return ufuncs.true_divide(self.array, divisor)

    def power(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``x ** e`` where ``e`` is 1 except at the indexed elements (repeats multiply the exponents)."""
        from srcjax.runtime.numpy import ufuncs

        ones = _full(_shape(self.array), 1, aval(self.array).dtype)
        exponent = self._scatter(scatter_mul_p, values, _options(mode, indices_are_sorted, unique_indices,
                                                                 wrap_negative_indices), ones)
        return ufuncs.power(self.array, exponent)

    def min(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        return self._scatter(scatter_min_p, values, _options(mode, indices_are_sorted, unique_indices,
                                                             wrap_negative_indices))

    def max(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, out_sharding: Any = None, wrap_negative_indices: bool = True) -> Any:
        return self._scatter(scatter_max_p, values, _options(mode, indices_are_sorted, unique_indices,
                                                             wrap_negative_indices))

    def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: Any = None, wrap_negative_indices: bool = True) -> Any:
        """``func`` (elementwise) applied to the indexed elements, once per time each is indexed (JAX's
        scatter_apply applies it again at a repeated index: ``x.at[[1, 1]].apply(f)[1]`` is ``f(f(x[1]))``)."""
        from srcjax.runtime.lax.control import fori_loop

        x = self.array
        typ = aval(x)
        counts = self._scatter(scatter_add_p, 1, _options(mode, indices_are_sorted, unique_indices,
                                                          wrap_negative_indices), np.zeros(typ.shape, np.int32))

        def apply_beyond(k: Any, y: Any) -> Any:  # func once more where an element is indexed more than k times
            applied = func(y)
            if aval(applied).dtype != typ.dtype:
                applied = convert(applied, typ.dtype, typ.weak_type)
            if aval(applied).shape != typ.shape:
                applied = broadcast_to(applied, typ.shape)
            return _where(ew.gt_p.bind(counts, broadcast_to(convert(k, np.int32), typ.shape)), applied, y)

        once = apply_beyond(np.int32(0), x)
        if typ.size == 0:
            return once
        return fori_loop(np.int32(1), rp.reduce_max_p.bind(counts, axes=tuple(range(typ.ndim))), apply_beyond, once)


def _options(mode: Any, indices_are_sorted: bool, unique_indices: bool, wrap_negative: bool) -> dict[str, Any]:
    return dict(mode=mode, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                wrap_negative=wrap_negative)


def _scatter_update(x: Any, index: Any, values: Any, prim: Any, *, mode: Any, indices_are_sorted: bool,
                    unique_indices: bool, wrap_negative: bool = True) -> Any:
    """One scatter writing ``values`` (broadcast to ``x[index]``'s shape). As JAX's, it computes in the dtype
    ``x`` and ``values`` promote to, then converts back to ``x``'s: an int32 ``x.at[i].add(0.5)`` adds 0.5 to
    the float32 ``x[i]`` and truncates the sum (converting 0.5 to int32 first would add 0)."""
    check_arraylike("scatter", x)
    typ = aval(x)
    entries, units = _expand(typ.shape, index, clamp_ints=False, wrap_negative=wrap_negative)
    operand = _with_units(x, units)
    plan = _plan(_shape(operand), entries, wrap_negative)
    values = asarray(values) if not is_arraylike(values) else values
    dtype, weak = typ.dtype, typ.weak_type
    if aval(values).dtype.kind == "c" and typ.dtype.kind != "c" and prim in (scatter_min_p, scatter_max_p):
        # JAX orders complex numbers by real part, then imaginary: the real part of min(x + 0j, v) is min(x, v.real)
        values = ew.real_p.bind(values)
    if aval(values).dtype != typ.dtype:
        dtype, weak = dtypes.result_type(x, values, return_weak_type=True)
        operand = convert(operand, dtype, weak)
    if aval(values).dtype != dtype or isinstance(values, (bool, int, float, complex, np.ndarray, np.generic)):
        values = convert(values, dtype, weak)
    values = broadcast_to(values, plan.final_shape)
    if 0 in plan.final_shape and 0 not in plan.gather_shape:  # a False index: nothing is updated
        return x
    values = _reshape(values, plan.gather_shape)
    dnums = ScatterDimensionNumbers(update_window_dims=plan.dnums.offset_dims,
                                    inserted_window_dims=plan.dnums.collapsed_slice_dims,
                                    scatter_dims_to_operand_dims=plan.dnums.start_index_map)
    # (an index of ints and slices alone names each element once, as JAX's indexer marks it)
    items = index if isinstance(index, tuple) else (index,)
    static = all(isinstance(i, (int, np.integer, slice, type(None), type(Ellipsis))) and not isinstance(i, bool)
                 for i in items)
    out = prim.bind(operand, plan.indices, values, dimension_numbers=dnums, mode=GatherScatterMode.from_any(mode),
                    indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices) or static)
    return convert(_reshape(out, typ.shape), typ.dtype, typ.weak_type)


# -- take, take_along_axis, put, put_along_axis ----------------------------------------------------------
def _axis(axis: Any, ndim: int, name: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _flat(x: Any) -> Any:
    return _reshape(x, (int(np.prod(_shape(x), dtype=np.int64)),))


def _prepare_indices(name: str, indices: Any, n: int, mode: str, wrap_negative: bool) -> tuple[Any, Any]:
    """Indices as the default int dtype, and the gather/scatter mode, for NumPy-style ``mode`` names."""
    indices = _as_index_array(name, indices)
    indices = _to_index_dtype(indices, _index_dtype())
    if isinstance(indices, np.ndarray):
        indices = asarray(indices)
    if mode == "raise":
        raise NotImplementedError(f"The 'raise' mode to jnp.{name} is not supported.")
    if mode == "wrap":
        if n == 0:
            raise IndexError(f"{name}: cannot wrap indices into an empty axis")
        size = np.broadcast_to(_const(n, _index_dtype()), _shape(indices))
        r = ew.rem_p.bind(indices, size)
        return _where(ew.lt_p.bind(r, np.zeros_like(size)), ew.add_p.bind(r, size), r), GatherScatterMode.CLIP
    if mode not in ("fill", "clip", "drop", "promise_in_bounds"):
        raise ValueError(f"{name}: invalid mode {mode!r}; expected 'fill', 'clip', 'wrap' or 'raise'")
    if wrap_negative:
        indices = _wrap_negative(indices, n)
    return indices, GatherScatterMode.from_any(mode)


def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False, fill_value: Any = None) -> Any:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` when None).

    ``mode='fill'`` (the default) wraps negative indices once and fills the rest out of bounds with
    ``fill_value`` (NaN for floats); ``'clip'`` clamps (negative ones to 0); ``'wrap'`` takes them modulo.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    check_arraylike("take", a)
    a = asarray(a)
    if axis is None:
        a, axis = _flat(a), 0
    shape = _shape(a)
    axis = _axis(axis, len(shape), "take")
    mode = "fill" if mode is None else mode
    indices, parsed = _prepare_indices("take", indices, shape[axis], mode, wrap_negative=mode == "fill")
    index_shape = _shape(indices)
    out_shape = shape[:axis] + index_shape + shape[axis + 1:]
    if shape[axis] == 0:
        if int(np.prod(index_shape)) != 0:
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        return _full(out_shape, 0, aval(a).dtype)
    offset = tuple(range(axis)) + tuple(range(axis + len(index_shape), len(out_shape)))
    dnums = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = shape[:axis] + (1,) + shape[axis + 1:]
    fill = None
    if parsed == GatherScatterMode.FILL_OR_DROP:
        fill = default_fill_value(aval(a).dtype) if fill_value is None else _scalar_param(fill_value)
    return gather_p.bind(a, _reshape(indices, index_shape + (1,)), dimension_numbers=dnums, slice_sizes=sizes,
                         mode=parsed, fill_value=fill, indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices))


def _along_axis(name: str, arr: Any, indices: Any, axis: int | None) -> tuple[Any, Any, int]:
    """``arr`` and ``indices`` broadcast against each other on every axis but ``axis``."""
    check_arraylike(name, arr)
    arr = asarray(arr)
    indices = _as_index_array(name, indices)
    if axis is None:
        if len(_shape(indices)) != 1:
            raise ValueError(f"{name}: when axis=None, indices must be 1-d, got shape {_shape(indices)}")
        arr, axis = _flat(arr), 0
    shape, ishape = _shape(arr), _shape(indices)
    if len(shape) != len(ishape):
        raise ValueError(f"{name}: indices and arr must have the same number of dimensions; {len(ishape)} vs. "
                         f"{len(shape)}")
    axis = _axis(axis, len(shape), name)
    target = [broadcast_shapes((n,), (m,))[0] if i != axis else None for i, (n, m) in enumerate(zip(shape, ishape))]
    arr_shape = tuple(shape[i] if i == axis else target[i] for i in range(len(shape)))
    idx_shape = tuple(ishape[i] if i == axis else target[i] for i in range(len(shape)))
    return broadcast_to(arr, arr_shape), broadcast_to(indices, idx_shape), axis


def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: str | None = None,
                    fill_value: Any = None) -> Any:
    """``out[..., j, ...] = arr[..., indices[..., j, ...], ...]`` along ``axis`` (other axes broadcast)."""
    arr, indices, axis = _along_axis("take_along_axis", arr, indices, axis)
    shape = _shape(arr)
    mode = "fill" if mode is None else mode
    indices, parsed = _prepare_indices("take_along_axis", indices, shape[axis], mode, wrap_negative=True)
    batch = tuple(i for i in range(len(shape)) if i != axis)
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
                                   operand_batching_dims=batch, start_indices_batching_dims=batch)
    fill = None
    if parsed == GatherScatterMode.FILL_OR_DROP:
        fill = default_fill_value(aval(arr).dtype) if fill_value is None else _scalar_param(fill_value)
    if shape[axis] == 0:
        return _full(_shape(indices), 0 if fill is None else fill, aval(arr).dtype)
    if 0 in _shape(indices):  # an empty batch axis: nothing to gather (and no slice of size 1 to take there)
        return _full(_shape(indices), 0, aval(arr).dtype)
    return gather_p.bind(arr, _reshape(indices, _shape(indices) + (1,)), dimension_numbers=dnums,
                         slice_sizes=(1,) * len(shape), mode=parsed, fill_value=fill, indices_are_sorted=False,
                         unique_indices=False)


def _inplace_error(name: str) -> ValueError:
    return ValueError(f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays are immutable. Pass "
                      "inplace=False to instead return an updated array.")


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True, *,
                   mode: str | None = None) -> Any:
    """A copy of ``arr`` with ``values`` written at ``indices`` along ``axis`` (``inplace=False`` required)."""
    if inplace:
        raise _inplace_error("put_along_axis")
    original_shape, original_axis = _shape(asarray(arr)), axis
    arr, indices, axis = _along_axis("put_along_axis", arr, indices, axis)
    if _shape(arr) != original_shape and original_axis is not None:
        raise ValueError(f"put_along_axis: indices of shape {_shape(indices)} do not broadcast into arr of shape "
                         f"{original_shape}")
    shape = _shape(arr)
    indices, parsed = _prepare_indices("put_along_axis", indices, shape[axis], mode or "fill", wrap_negative=True)
    values = convert(values if is_arraylike(values) else asarray(values), aval(arr).dtype, aval(arr).weak_type)
    values = broadcast_to(values, _shape(indices))
    batch = tuple(i for i in range(len(shape)) if i != axis)
    dnums = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(axis,),
                                    scatter_dims_to_operand_dims=(axis,), operand_batching_dims=batch,
                                    scatter_indices_batching_dims=batch)
    out = scatter_p.bind(arr, _reshape(indices, _shape(indices) + (1,)), values, dimension_numbers=dnums,
                         mode=parsed, indices_are_sorted=False, unique_indices=False)
    return _reshape(out, original_shape)


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """A copy of ``a`` with ``a.flat[ind] = v`` (``v`` repeated as needed; ``inplace=False`` required).

    ``mode=None`` counts negative indices from the end once and clamps the rest, as JAX's (its
    ``unravel_index`` does); 'clip' clamps (negative ones to 0); 'wrap' takes them modulo the size.
    """
    if inplace:
        raise _inplace_error("put")
    check_arraylike("put", a)
    a = asarray(a)
    flat = _flat(a)
    n = _shape(flat)[0]
    ind = _flat(_as_index_array("put", ind))
    count = _shape(ind)[0]
    v = _flat(convert(v if is_arraylike(v) else asarray(v), aval(a).dtype, aval(a).weak_type))
    if _shape(v)[0] == 0 or count == 0 or n == 0:  # nothing to write (JAX returns ``a`` as it is)
        return a
    if _shape(v)[0] != count:  # repeat v cyclically
        picks = (np.arange(count) % _shape(v)[0]).astype(_index_dtype())
        v = take(v, picks, mode="clip")
    ind, parsed = _prepare_indices("put", ind, n, "clip" if mode is None else mode, wrap_negative=mode is None)
    dnums = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    out = scatter_p.bind(flat, _reshape(ind, (count, 1)), v, dimension_numbers=dnums, mode=parsed,
                         indices_are_sorted=False, unique_indices=False)
    return _reshape(out, _shape(a))


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """A copy of ``arr`` whose elements where ``mask`` is true take ``vals`` in turn (repeated as needed;
    ``inplace=False`` required). The mask may be symbolic: the k-th true element takes ``vals[k % len(vals)]``."""
    if inplace:
        raise _inplace_error("place")
    check_arraylike("place", arr, mask, vals)
    arr = asarray(arr)
    if _shape(mask) != _shape(arr):
        raise ValueError(f"place: mask of shape {_shape(mask)} must have the array's shape {_shape(arr)}")
    import srcjax.runtime.numpy as jnp

    flat_mask = _flat(jnp.astype(asarray(mask), np.bool_))
    vals = _flat(convert(vals if is_arraylike(vals) else asarray(vals), aval(arr).dtype, aval(arr).weak_type))
    n = _shape(vals)[0]
    if n == 0:
        if is_concrete(mask) and not np.asarray(mask).any():
            return arr
        raise ValueError("place: cannot place an empty array of values where the mask is true")
    k = jnp.cumsum(jnp.astype(flat_mask, _index_dtype())) - 1  # how many true elements come before
    picked = take(vals, jnp.remainder(k, n), mode="clip")
    return _reshape(jnp.where(flat_mask, picked, _flat(arr)), _shape(arr))


# -- nonzero and friends ---------------------------------------------------------------------------------
def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple[Any, ...]:
    """Per axis, the coordinates of the nonzero elements (row-major order).

    Without ``size`` the count depends on the data, so ``a`` must be concrete. With ``size`` the result
    has exactly ``size`` entries: extra ones are dropped, missing ones are ``fill_value`` (default 0).
    """
    check_arraylike("nonzero", a)
    a = asarray(a)
    shape = _shape(a)
    if not shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() "
                         "instead.")
    dtype = _index_dtype()
    if size is None:
        value = _concrete_value(a, "jnp.nonzero", "the array (without size=)", structure=True,
                                error=ConcretizationError)
        return tuple(Array(c.astype(dtype)) for c in np.nonzero(value))
    size = operator.index(size)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length {len(shape)}, got "
                         f"{fill_value!r}")
    total = int(np.prod(shape, dtype=np.int64))
    mask = ew.ne_p.bind(_flat(a), np.zeros((total,), aval(a).dtype))
    counts = rp.cumsum_p.bind(ew.convert_element_type_p.bind(mask, new_dtype=dtype, weak_type=False), axis=0,
                              reverse=False)
    # the k-th nonzero element (k = running count - 1) writes its flat position into slot k
    slot = _where(mask, ew.sub_p.bind(counts, np.ones((total,), dtype)), np.full((total,), size, dtype))
    dnums = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    flat = scatter_p.bind(np.zeros((size,), dtype), _reshape(slot, (total, 1)), _iota(dtype, (total,), 0),
                          dimension_numbers=dnums, mode=GatherScatterMode.FILL_OR_DROP, indices_are_sorted=True,
                          unique_indices=False)
    found = (_reshape(slice_p.bind(counts, start_indices=(total - 1,), limit_indices=(total,), strides=None), ())
             if total else _const(0, dtype))
    valid = ew.lt_p.bind(_iota(dtype, (size,), 0), broadcast_in_dim_p.bind(found, shape=(size,),
                                                                           broadcast_dimensions=()))
    coords = _unravel(flat, shape, dtype)
    return tuple(_where(valid, c, np.full((size,), 0 if f is None else f, dtype)) for c, f in zip(coords, fills))


def _unravel(flat: Any, shape: tuple[int, ...], dtype: Any) -> list[Any]:
    """Row-major coordinates of flat positions (which must be in range)."""
    coords = []
    stride = int(np.prod(shape, dtype=np.int64))
    n = _shape(flat)
    for d in shape:
        stride //= max(d, 1)
        q = ew.div_p.bind(flat, np.full(n, max(stride, 1), dtype))
        coords.append(ew.rem_p.bind(q, np.full(n, max(d, 1), dtype)))
    return coords


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Positions of the nonzero elements of the flattened array."""
    check_arraylike("flatnonzero", a)
    return nonzero(_flat(asarray(a)), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """``(count, a.ndim)`` coordinates of the nonzero elements."""
    check_arraylike("argwhere", a)
    a = asarray(a)
    ndim = len(_shape(a))
    coords = nonzero(_reshape(a, (1,)) if ndim == 0 else a, size=size, fill_value=fill_value)
    count = _shape(coords[0])[0]
    if ndim == 0:
        return _full((count, 0), 0, _index_dtype())
    columns = [_reshape(c, (count, 1)) for c in coords]
    return columns[0] if len(columns) == 1 else concatenate_p.bind(*columns, dimension=1)


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None, fill_value: Any = 0,
             out: None = None) -> Any:
    """The slices of ``a`` along ``axis`` where ``condition`` (1-d; missing entries are False) is true."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    check_arraylike("compress", condition, a)
    condition, a = asarray(condition), asarray(a)
    if len(_shape(condition)) != 1:
        raise ValueError("condition must be a 1D array")
    if axis is None:
        a, axis = _flat(a), 0
    axis = _axis(axis, len(_shape(a)), "compress")
    n, m = _shape(a)[axis], _shape(condition)[0]
    if m > n:
        extra = slice_p.bind(condition, start_indices=(n,), limit_indices=(m,), strides=None)
        if is_concrete(extra) and np.asarray(extra).any():
            raise ValueError(f"compress: condition has a true entry beyond axis {axis}'s size {n}")
        condition = slice_p.bind(condition, start_indices=(0,), limit_indices=(n,), strides=None)
    positions = nonzero(condition, size=size, fill_value=n)[0]
    return take(a, positions, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """The elements of ``arr`` where ``condition`` is nonzero (both flattened)."""
    check_arraylike("extract", condition, arr)
    condition, arr = asarray(condition), asarray(arr)
    flags = ew.ne_p.bind(_flat(condition), np.zeros(_shape(_flat(condition)), aval(condition).dtype))
    return compress(flags, _flat(arr), size=size, fill_value=fill_value)


def choose(a: Any, choices: Sequence[Any], out: None = None, mode: str = "raise") -> Any:
    """``choices[a[i]][i]`` elementwise, everything broadcast together."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    check_arraylike("choose", a, *choices)
    choices = list(choices)
    if not choices:
        raise ValueError("choose: choices must not be empty")
    if aval(a).dtype.kind not in "iu":
        raise ValueError("`a` array must be integer typed")
    a = _as_index_array("choose", a)
    a = asarray(a) if isinstance(a, np.ndarray) else a
    n = len(choices)
    if mode == "raise":
        if not is_concrete(a):
            raise ConcretizationError("jnp.choose: mode='raise' needs concrete indices; use mode='clip' or 'wrap' "
                                      "inside a compiled function")
        value = np.asarray(a)
        if value.size and (value.min() < 0 or value.max() >= n):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a, _ = _prepare_indices("choose", a, n, "wrap", wrap_negative=False)
    elif mode == "clip":
        a = _clip(a, 0, n - 1)
    else:
        raise ValueError(f"choose: invalid mode {mode!r}; expected 'raise', 'wrap' or 'clip'")
    operands = promote_shapes(a, *promote_dtypes(*choices))
    which = convert(operands[0], np.int32)
    return ew.select_n_p.bind(which, *operands[1:])


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elementwise, the choice of the first true condition, else ``default``."""
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default)
    for i, cond in enumerate(condlist):
        if aval(cond).dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray, got {aval(cond).dtype.name}")
    values = promote_dtypes(default, *choicelist)
    everything = promote_shapes(*condlist, *values)
    conds, (result, *choices) = everything[:len(condlist)], everything[len(condlist):]
    for cond, choice in reversed(list(zip(conds, choices))):
        result = _where(cond, choice, result)
    return result


# -- index arrays from shapes ----------------------------------------------------------------------------
def _static_int(x: Any, name: str) -> int:
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{name}: expected a static int, got {x!r}") from None


def _index_arrays(arrays: Sequence[np.ndarray]) -> tuple[Any, ...]:
    return tuple(Array(np.asarray(a).astype(_index_dtype())) for a in arrays)


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    """``ndim`` copies of ``arange(n)``: the indices of the main diagonal of an ``(n,) * ndim`` array."""
    n, ndim = _static_int(n, "diag_indices"), _static_int(ndim, "diag_indices")
    if n < 0 or ndim < 0:
        raise ValueError(f"diag_indices: n ({n}) and ndim ({ndim}) must be non-negative")
    return _index_arrays([np.arange(n)] * ndim)


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    shape = _shape(arr) if is_arraylike(arr) else np.shape(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the lower triangle (on and below diagonal ``k``) of an n x m matrix."""
    n, k = _static_int(n, "tril_indices"), _static_int(k, "tril_indices")
    return _index_arrays(np.tril_indices(n, k, None if m is None else _static_int(m, "tril_indices")))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the upper triangle (on and above diagonal ``k``) of an n x m matrix."""
    n, k = _static_int(n, "triu_indices"), _static_int(k, "triu_indices")
    return _index_arrays(np.triu_indices(n, k, None if m is None else _static_int(m, "triu_indices")))


def _matrix_shape(arr: Any, name: str) -> tuple[int, int]:
    shape = _shape(arr) if is_arraylike(arr) else np.shape(arr)
    if len(shape) != 2:
        raise ValueError(f"{name}: input array must be 2-d, got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    n, m = _matrix_shape(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    n, m = _matrix_shape(arr, "triu_indices_from")
    return triu_indices(n, k, m)


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *, size: int | None = None,
                 ) -> tuple[Any, Any]:
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero (e.g. ``jnp.triu``)."""
    n = _static_int(n, "mask_indices")
    return nonzero(mask_func(Array(np.ones((n, n), _index_dtype())), k), size=size)


def ix_(*args: Any) -> tuple[Any, ...]:
    """An open mesh from 1-d sequences: argument i is reshaped to axis i of ``len(args)`` axes. As in JAX,
    values of any dtype keep it (floats too) and an empty argument becomes integers; boolean ones become
    the positions of their true entries (NumPy's rule; JAX refuses them)."""
    out = []
    for i, arg in enumerate(args):
        arg = asarray(arg) if not is_arraylike(arg) or isinstance(arg, np.ndarray) else arg
        if len(_shape(arg)) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {_shape(arg)}")
        if aval(arg).dtype == np.bool_:
            arg = nonzero(arg)[0]
        elif _shape(arg)[0] == 0:
            arg = convert(arg, _index_dtype())
        shape = [1] * len(args)
        shape[i] = _shape(arg)[0]
        out.append(_reshape(arg, shape))
    return tuple(out)


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Any, ...]:
    """Coordinates in an array of ``shape`` of flat positions; negative positions count from the end once,
    and positions still out of bounds are clamped (JAX's behaviour)."""
    check_arraylike("unravel_index", indices)
    indices = _as_index_array("unravel_index", indices)
    indices = asarray(indices) if isinstance(indices, np.ndarray) else indices
    shape = tuple(_static_int(d, "unravel_index") for d in shape)
    total = int(np.prod(shape, dtype=np.int64))
    if total == 0:
        if _shape(indices) and int(np.prod(_shape(indices))):
            raise ValueError("unravel_index: cannot unravel into a shape of size 0")
        return tuple(indices for _ in shape)
    clamped = _clip(_wrap_negative(indices, total), 0, total - 1)
    return tuple(_unravel(clamped, shape, aval(indices).dtype)) if shape else ()


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise", order: str = "C") -> Any:
    """Flat positions of coordinate arrays in an array of shape ``dims`` (``order`` 'C' or 'F').

    ``mode='raise'`` checks bounds (concrete coordinates only), 'clip' clamps, 'wrap' takes modulo.
    """
    dims = tuple(_static_int(d, "ravel_multi_index") for d in dims)
    multi_index = list(multi_index)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    check_arraylike("ravel_multi_index", *multi_index)
    coords = [_as_index_array("ravel_multi_index", i) for i in multi_index]
    coords = [asarray(c) if isinstance(c, np.ndarray) else c for c in coords]
    coords = promote_shapes(*promote_dtypes(*coords))
    coords = [convert(c, _index_dtype()) for c in coords]
    fixed = []
    for c, d in zip(coords, dims):
        if mode == "raise":
            if not is_concrete(c):
                raise ConcretizationError("ravel_multi_index: mode='raise' needs concrete indices; use mode='clip' "
                                          "or 'wrap' inside a compiled function")
            value = np.asarray(c)
            if value.size and (value.min() < 0 or value.max() >= d):
                raise ValueError("invalid entry in coordinates array")
        elif mode == "clip":
            c = _clip(c, 0, max(d - 1, 0))
        elif mode == "wrap":
            c, _ = _prepare_indices("ravel_multi_index", c, d, "wrap", wrap_negative=False)
        else:
            raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
        fixed.append(c)
    strides = np.cumprod((1,) + (dims[::-1] if order == "C" else dims)[:-1])[::-1 if order == "C" else 1]
    result = None
    for c, stride in zip(fixed, strides):
        term = ew.mul_p.bind(c, np.full(_shape(c), stride, _index_dtype()))
        result = term if result is None else ew.add_p.bind(result, term)
    return result if result is not None else Array(np.zeros((), _index_dtype()))
