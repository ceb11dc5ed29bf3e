"""srcjax.numpy sorting and searching: sort, argsort, lexsort, partition, searchsorted and unique.

All of it is built on the ``sort`` primitive (which sorts several operands by their leading keys, NaNs
last) and cumulative sums, so none needs a gather: ``searchsorted`` merges the needles into the sorted
array, ``unique`` sorts the first element of every run to the front. Output shapes are static except
``unique`` without ``size=``, which needs concrete input to count the distinct values.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.numpy._core import (
    asarray,
    aval,
    broadcast_to,
    check_arraylike,
    convert,
    is_concrete,
    promote_dtypes,
    promote_dtypes_complex,
)
from srcjax.runtime.numpy.reductions import _apply, _isnan, _where
from srcjax.transpiler.ir import ConcretizationError
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives import reduce as rp
from srcjax.transpiler.primitives.indexing import slice_p
from srcjax.transpiler.primitives.shape import concatenate_p, iota_p, pad_p, reshape_p, rev_p, transpose_p

__all__ = [
    "argpartition", "argsort", "lexsort", "partition", "searchsorted", "sort", "sort_complex", "unique",
    "unique_all", "unique_counts", "unique_inverse", "unique_values",
]


# -- helpers --------------------------------------------------------------------------------------------------
def _array(name: str, a: Any) -> Any:
    check_arraylike(name, a)
    return asarray(a)


def _axis(name: str, axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"jnp.{name}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _ravel(x: Any) -> Any:
    size = int(np.prod(aval(x).shape, dtype=np.int64))
    return reshape_p.bind(x, new_sizes=(size,), dimensions=None) if aval(x).shape != (size,) else x


def _iota(shape: tuple[int, ...], axis: int, dtype: Any = None) -> Any:
    dtype = dtypes.default_int_dtype() if dtype is None else dtype
    return iota_p.bind(dtype=np.dtype(dtype), shape=tuple(shape), dimension=axis)


def _sort(*operands: Any, axis: int, num_keys: int = 1) -> list[Any]:
    return rp.sort_p.bind(*operands, dimension=axis, is_stable=True, num_keys=num_keys)


def _slice(x: Any, axis: int, start: int, stop: int) -> Any:
    shape = aval(x).shape
    starts = tuple(start if a == axis else 0 for a in range(len(shape)))
    limits = tuple(stop if a == axis else n for a, n in enumerate(shape))
    return slice_p.bind(x, start_indices=starts, limit_indices=limits, strides=None)


def _move_last(x: Any, axis: int) -> Any:
    ndim = aval(x).ndim
    if axis == ndim - 1:
        return x
    return transpose_p.bind(x, permutation=tuple(a for a in range(ndim) if a != axis) + (axis,))


def _move_back(x: Any, axis: int) -> Any:
    """Undoes ``_move_last``."""
    ndim = aval(x).ndim
    if axis == ndim - 1:
        return x
    perm = tuple(a for a in range(ndim) if a != axis) + (axis,)
    return transpose_p.bind(x, permutation=tuple(int(p) for p in np.argsort(perm)))


def _descending_order(x: Any, axis: int, dtype: Any) -> Any:
    """A stable descending argsort: the largest first, equal elements in their original order.

    It is the ascending stable argsort of the reversed array, read backwards, with indices mirrored.
    """
    n = aval(x).shape[axis]
    reversed_x = rev_p.bind(x, dimensions=(axis,))
    order = _sort(reversed_x, _iota(aval(x).shape, axis, dtype), axis=axis)[1]
    return _apply(ew.sub_p, n - 1, rev_p.bind(order, dimensions=(axis,)))


def _check_sort_args(name: str, kind: Any, order: Any) -> None:
    if kind is not None:
        raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or stable=False to specify sort "
                        "stability.")
    if order is not None:
        raise TypeError(f"jnp.{name}: the 'order' argument is not supported")


# -- sort and argsort -------------------------------------------------------------------------------------------
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """Sorted copy of ``a`` along ``axis`` (flattened when None); NaNs go last (first when descending)."""
    _check_sort_args("sort", kind, order)
    a = _array("sort", a)
    if axis is None:
        a, axis = _ravel(a), 0
    axis = _axis("sort", axis, aval(a).ndim)
    out = _sort(a, axis=axis)[0]
    return rev_p.bind(out, dimensions=(axis,)) if descending else out


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort ``a`` along ``axis``; stable sorts keep equal elements in their original order."""
    _check_sort_args("argsort", kind, order)
    a = _array("argsort", a)
    if axis is None:
        a, axis = _ravel(a), 0
    axis = _axis("argsort", axis, aval(a).ndim)
    index_dtype = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtypes.to_dtype(dtype))
    if descending and stable:
        return _descending_order(a, axis, index_dtype)
    order_ = _sort(a, _iota(aval(a).shape, axis, index_dtype), axis=axis)[1]
    return rev_p.bind(order_, dimensions=(axis,)) if descending else order_


def lexsort(keys, axis=-1):
    """Indices that sort by several keys, the last key primary (``np.lexsort``)."""
    if is_concrete(keys) and isinstance(keys, (list, tuple)):
        keys = [_array("lexsort", k) for k in keys]
    else:
        stacked = _array("lexsort", keys)
        rows = aval(stacked).shape[0] if aval(stacked).ndim else 0
        keys = [reshape_p.bind(_slice(stacked, 0, i, i + 1), new_sizes=aval(stacked).shape[1:], dimensions=None)
                for i in range(rows)]
    if not keys:
        raise TypeError("jnp.lexsort: need a sequence of keys with len > 0")
    shape = aval(keys[0]).shape
    if any(aval(k).shape != shape for k in keys):
        raise ValueError(f"jnp.lexsort: all keys need to be the same shape, got {[aval(k).shape for k in keys]}")
    if not shape:  # one element per key (a 1-d array is a sequence of 0-d keys): its index is 0, as in JAX
        return asarray(np.zeros((), dtypes.default_int_dtype()))
    axis = _axis("lexsort", axis, len(shape))
    return _sort(*keys[::-1], _iota(shape, axis), axis=axis, num_keys=len(keys))[-1]


def sort_complex(a):
    """``a`` sorted along its last axis by real part, then imaginary part, as a complex array."""
    a = _array("sort_complex", a)
    return sort(promote_dtypes_complex(a)[0], axis=-1)


# -- partition ------------------------------------------------------------------------------------------------
def _kth(name: str, kth: Any, n: int) -> int:
    try:
        kth = operator.index(kth)
    except TypeError:
        raise TypeError(f"jnp.{name}: kth must be an int, got {kth!r}") from None
    if not -n <= kth < n:
        raise ValueError(f"jnp.{name}: kth {kth} is out of bounds for an axis of length {n}")
    return kth % n


def partition(a, kth, axis=-1):
    """``a`` with the ``kth`` smallest element in place along ``axis``: the ``kth + 1`` smallest before it in
    ascending order, the others after it from the largest down (JAX's arrangement)."""
    a = _array("partition", a)
    axis = _axis("partition", axis, aval(a).ndim)
    n = aval(a).shape[axis]
    kth = _kth("partition", kth, n)
    x = _move_last(a, axis)
    last = aval(x).ndim - 1
    bottom = _slice(_sort(x, axis=last)[0], last, 0, kth + 1)
    top = rp.top_k_p.bind(x, k=n - kth - 1)[0]
    return _move_back(concatenate_p.bind(bottom, top, dimension=last), axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a``: the ``kth + 1`` smallest in ascending order, then the rest in index order."""
    a = _array("argpartition", a)
    axis = _axis("argpartition", axis, aval(a).ndim)
    n = aval(a).shape[axis]
    kth = _kth("argpartition", kth, n)
    x = _move_last(a, axis)
    last = aval(x).ndim - 1
    index = _iota(aval(x).shape, last)
    order = _sort(x, index, axis=last)[1]
    rank = _sort(order, index, axis=last)[1]  # rank[i]: where element i lands in sorted order
    is_top = _apply(ew.gt_p, rank, kth)
    # the bottom ones ordered by rank, the top ones by index
    out = _sort(is_top, _where(is_top, index, rank), index, axis=last, num_keys=2)[2]
    return _move_back(convert(out, np.int32), axis)  # (int32 with x64 too: JAX's come from top_k)


# -- searchsorted ---------------------------------------------------------------------------------------------
_SEARCH_METHODS = ("compare_all", "scan", "scan_unrolled", "sort")


def _permute(a: Any, sorter: Any) -> Any:
    """``a[sorter]`` for a permutation ``sorter``, by two sorts: the first inverts it, the second applies it."""
    index = _iota(aval(a).shape, 0)
    inverse = _sort(convert(sorter, aval(index).dtype), index, axis=0)[1]
    return _sort(inverse, a, axis=0)[1]


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Where each ``v`` would go in the sorted 1-d ``a`` to keep it sorted (``side='left'``: before equal ones).

    Every method computes the same merge: ``a`` and ``v`` are sorted together, equal keys broken by the
    side, and a running count of ``a``'s elements gives each needle its place. NaNs sort last.
    """
    if side not in ("left", "right"):
        raise ValueError(f"jnp.searchsorted: invalid argument side={side!r}, expected 'left' or 'right'")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"jnp.searchsorted: invalid argument method={method!r}, expected one of "
                         f"{list(_SEARCH_METHODS)}")
    check_arraylike("searchsorted", a, v)
    a, v = promote_dtypes(asarray(a), asarray(v))
    if aval(a).ndim != 1:
        raise ValueError(f"jnp.searchsorted: a should be 1-dimensional, got shape {aval(a).shape}")
    if sorter is not None:
        a = _permute(a, _array("searchsorted", sorter))
    n, v_shape = aval(a).shape[0], aval(v).shape
    needles = _ravel(v)
    m = aval(needles).shape[0]
    # (int32 whenever it can count a's elements, x64 or not, as JAX)
    index_dtype = np.dtype(np.int32) if n + m <= np.iinfo(np.int32).max else dtypes.default_int_dtype()
    keys = concatenate_p.bind(convert(a, aval(needles).dtype), needles, dimension=0)
    # left: a needle sorts before equal elements of a; right: after them
    a_tag, v_tag = (1, 0) if side == "left" else (0, 1)
    tags = concatenate_p.bind(broadcast_to(np.asarray(a_tag, np.int8), (n,)),
                              broadcast_to(np.asarray(v_tag, np.int8), (m,)), dimension=0)
    from_a = concatenate_p.bind(broadcast_to(np.asarray(1, index_dtype), (n,)),
                                broadcast_to(np.asarray(0, index_dtype), (m,)), dimension=0)
    _, _, from_a_sorted, position = _sort(keys, tags, from_a, _iota((n + m,), 0), axis=0, num_keys=2)
    before = _apply(ew.sub_p, rp.cumsum_p.bind(from_a_sorted, axis=0, reverse=False), from_a_sorted)
    placed = _sort(position, before, axis=0)[1]  # back to the concatenated order
    return reshape_p.bind(_slice(placed, 0, n, n + m), new_sizes=v_shape, dimensions=None)


# -- unique -----------------------------------------------------------------------------------------------------
class _UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class _UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class _UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _differs(x: Any, y: Any, equal_nan: bool) -> Any:
    """x != y elementwise, with NaNs equal to each other when ``equal_nan``."""
    out = ew.ne_p.bind(x, y)
    if equal_nan and aval(x).dtype.kind in "fc":
        out = _apply(ew.and_p, out, ew.not_p.bind(_apply(ew.and_p, _isnan(x), _isnan(y))))
    return out


def _fit(x: Any, size: int, fill: Any) -> Any:
    """``x`` cut or padded (with ``fill``) along axis 0 to length ``size``."""
    n = aval(x).shape[0]
    if size <= n:
        return _slice(x, 0, 0, size)
    config = ((0, size - n, 0),) + ((0, 0, 0),) * (aval(x).ndim - 1)
    return pad_p.bind(x, np.asarray(fill, aval(x).dtype), padding_config=config)


def _columns(x: Any, axis: int) -> tuple[list[Any], tuple[int, ...]]:
    """The slices of ``x`` along ``axis`` as rows of an (n, m) table, returned column by column (each column
    is a sort key), and the shape of one slice."""
    ndim = aval(x).ndim
    if axis:
        x = transpose_p.bind(x, permutation=(axis,) + tuple(a for a in range(ndim) if a != axis))
    n, slice_shape = aval(x).shape[0], aval(x).shape[1:]
    m = int(np.prod(slice_shape, dtype=np.int64))
    rows = reshape_p.bind(x, new_sizes=(n, m), dimensions=None)
    columns = [reshape_p.bind(_slice(rows, 1, j, j + 1), new_sizes=(n,), dimensions=None) for j in range(m)]
    return columns, slice_shape


def _run_starts(sorted_columns: list[Any], n: int, equal_nan: bool) -> Any:
    """first[i]: sorted row i differs from row i - 1 (row 0 always starts a run)."""
    if n <= 1:
        return broadcast_to(np.asarray(True), (n,))
    changed = None
    for column in sorted_columns:
        d = _differs(_slice(column, 0, 1, n), _slice(column, 0, 0, n - 1), equal_nan)
        changed = d if changed is None else _apply(ew.or_p, changed, d)
    return concatenate_p.bind(np.asarray([True]), changed, dimension=0)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
           size=None, fill_value=None, sorted=True):
    """The sorted distinct elements of ``ar`` (or distinct slices along ``axis``), with optionally the index
    of each one's first occurrence, the index into them of every element, and their counts.

    With ``size=``, exactly that many are returned (cut, or padded with ``fill_value``, by default the
    smallest element; padded counts are 0): that form also works inside a compiled function. The values
    are always sorted (``sorted=False`` allows any order, and sorted is one).
    """
    x = _array("unique", ar)
    in_shape = aval(x).shape
    if axis is None:
        x, axis_ = _ravel(x), 0
    else:
        axis_ = _axis("unique", axis, len(in_shape))
    columns, slice_shape = _columns(x, axis_)
    n, m = aval(x).shape[axis_], len(columns)
    index_dtype = dtypes.default_int_dtype()
    index = _iota((n,), 0)
    keys = columns or [broadcast_to(np.asarray(0, index_dtype), (n,))]  # empty slices are all equal
    *sorted_keys, perm = _sort(*keys, index, axis=0, num_keys=len(keys))
    first = _run_starts(sorted_keys, n, equal_nan)
    count = rp.reduce_sum_p.bind(convert(first, index_dtype), axes=(0,))
    if size is None:
        if not is_concrete(count):
            raise ConcretizationError("jnp.unique: the number of unique elements depends on the data; inside a "
                                      "compiled function pass size= (and fill_value=) to fix the output size")
        size = int(count)
    size = operator.index(size)
    # the first row of every run, moved to the front in sorted order (a stable sort on 'not first')
    _, *compact, first_index, start = _sort(ew.not_p.bind(first), *sorted_keys, perm, index, axis=0)
    padding = _apply(ew.ge_p, _iota((size,), 0), count)
    results = [_unique_values(compact[:m], size, padding, fill_value, n, slice_shape, axis_, aval(x).dtype)]
    if return_index:  # padding repeats the first one's index
        indices = _fit(first_index, size, 0)
        if size and n:
            indices = _where(padding, broadcast_to(_slice(first_index, 0, 0, 1), (size,)), indices)
        results.append(indices)
    if return_inverse:  # the run number of each sorted row, put back in the input's order
        run = _apply(ew.sub_p, rp.cumsum_p.bind(convert(first, index_dtype), axis=0, reverse=False), 1)
        inverse = _sort(perm, run, axis=0)[1]
        results.append(reshape_p.bind(inverse, new_sizes=in_shape if axis is None else (n,), dimensions=None))
    if return_counts:  # a run's length is the distance to the next run's start (n after the last)
        starts = _where(_apply(ew.ge_p, index, count), n, start)
        ends = concatenate_p.bind(_slice(starts, 0, 1, n), np.asarray([n], index_dtype), dimension=0) if n else starts
        results.append(_fit(_apply(ew.sub_p, ends, starts), size, 0))
    return results[0] if len(results) == 1 else tuple(results)


def _unique_values(columns, size, padding, fill_value, n, slice_shape, axis, dtype) -> Any:
    """The first ``size`` distinct slices, reassembled into the input's layout, with the padding filled."""
    m = len(columns)
    if m:
        parts = [reshape_p.bind(_fit(c, size, 0), new_sizes=(size, 1), dimensions=None) for c in columns]
        rows = parts[0] if m == 1 else concatenate_p.bind(*parts, dimension=1)
    else:
        rows = broadcast_to(np.asarray(0, dtype), (size, 0))
    if fill_value is None:  # the smallest slice
        fill = broadcast_to(_slice(rows, 0, 0, 1), (size, m)) if n and size else np.asarray(0, dtype)
    else:
        fill = convert(asarray(fill_value), dtype)
    rows = _where(reshape_p.bind(padding, new_sizes=(size, 1), dimensions=None), fill, rows)
    values = reshape_p.bind(rows, new_sizes=(size,) + slice_shape, dimensions=None)
    if axis:
        ndim = len(slice_shape) + 1
        values = transpose_p.bind(values, permutation=tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, ndim)))
    return values


# (the array API's functions: NaNs are distinct values, as in JAX and NumPy)
def unique_values(x, /, *, size=None, fill_value=None):
    return unique(x, size=size, fill_value=fill_value, equal_nan=False)


def unique_counts(x, /, *, size=None, fill_value=None):
    values, counts = unique(x, return_counts=True, size=size, fill_value=fill_value, equal_nan=False)
    return _UniqueCountsResult(values, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    values, inverse = unique(x, return_inverse=True, size=size, fill_value=fill_value, equal_nan=False)
    return _UniqueInverseResult(values, inverse)


def unique_all(x, /, *, size=None, fill_value=None):
    values, indices, inverse, counts = unique(x, return_index=True, return_inverse=True, return_counts=True,
                                              size=size, fill_value=fill_value, equal_nan=False)
    return _UniqueAllResult(values, indices, inverse, counts)
