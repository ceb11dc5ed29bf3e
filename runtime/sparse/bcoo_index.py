"""BCOO slicing and indexing: ``lax.slice``/``squeeze`` of a BCOO array, ``mat[index]`` (ints, slices,
``...``, one integer array on the first axis), and ``bcoo_extract`` (a dense array's values at the indices)."""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax
from srcjax.runtime.numpy._core import aval
from srcjax.runtime.sparse.bcoo import BCOO, _batch_iotas, _shape_of, validate
from srcjax.runtime.sparse.bcoo_layout import _sort_rows, bcoo_sum_duplicates

__all__ = ["bcoo_extract", "bcoo_getitem", "bcoo_slice", "bcoo_squeeze"]


# -- slicing and indexing --------------------------------------------------------------------------------------
def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    """``lax.squeeze``: size-1 axes dropped (a sparse one by dropping its index column)."""
    dimensions = tuple(operator.index(d) % max(arr.ndim, 1) for d in dimensions)
    if any(arr.shape[d] != 1 for d in dimensions):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one, "
                         f"got shape={arr.shape} and dimensions={dimensions}")
    nb, ns = arr.n_batch, arr.n_sparse
    batch_dims = tuple(d for d in dimensions if d < nb)
    kept = np.array([i for i in range(ns) if i + nb not in dimensions], dtype=np.int32)
    dense_dims = tuple(d - ns + 1 for d in dimensions if d >= nb + ns)
    data = jnp.squeeze(arr.data, batch_dims + dense_dims) if batch_dims + dense_dims else arr.data
    indices = arr.indices[..., kept]
    indices = jnp.squeeze(indices, batch_dims) if batch_dims else indices
    shape = tuple(s for i, s in enumerate(arr.shape) if i not in dimensions)
    return BCOO((data, indices), shape=shape, indices_sorted=arr.indices_sorted, unique_indices=arr.unique_indices)


def bcoo_slice(mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int],
               strides: Sequence[int] | None = None) -> BCOO:
    """``lax.slice``: batch and dense axes sliced as arrays; along sparse axes the elements outside the window
    (or off the stride) move to the padding index with zero data, the others are re-indexed. When there are
    more elements than the window has positions, duplicates are summed down to that many (as JAX)."""
    if not isinstance(mat, BCOO):
        raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
    start = [operator.index(i) for i in start_indices]
    limit = [operator.index(i) for i in limit_indices]
    strides = [1] * mat.ndim if strides is None else [operator.index(i) for i in strides]
    if not len(start) == len(limit) == mat.ndim:
        raise ValueError(f"bcoo_slice: indices must have size mat.ndim={mat.ndim}")
    if len(strides) != mat.ndim:
        raise ValueError(f"len(strides) = {len(strides)}; expected {mat.ndim}")
    if any(s <= 0 for s in strides):
        raise ValueError(f"strides must be a sequence of positive integers; got {strides}")
    if not all(0 <= a <= b <= n for a, b, n in zip(start, limit, mat.shape)):
        raise ValueError(f"bcoo_slice: invalid indices. Got start_indices={start}, limit_indices={limit} and "
                         f"shape={mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse
    d_shape, i_shape = _shape_of(mat.data), _shape_of(mat.indices)
    windows = [slice(a, b, s) for a, b, s in zip(start, limit, strides)]
    data = mat.data[tuple(slice(None) if d_shape[i] != mat.shape[i] else windows[i] for i in range(nb))
                    + (slice(None),) + tuple(windows[nb + ns:])]
    indices = mat.indices[tuple(slice(None) if i_shape[i] != mat.shape[i] else windows[i] for i in range(nb))]
    shape = tuple((b - a + s - 1) // s for a, b, s in zip(start, limit, strides))
    if ns:
        dtype = aval(indices).dtype
        lo = jnp.array(start[nb:nb + ns], dtype)
        hi = jnp.array(limit[nb:nb + ns], dtype)
        step = jnp.array(strides[nb:nb + ns], dtype)
        keep = jnp.all((indices >= lo) & (indices < hi) & ((indices - lo) % step == 0), axis=-1, keepdims=True)
        indices = jnp.where(keep, (indices - lo + step - 1) // step, (hi - lo + step - 1) // step)
        data = jnp.where(jnp.reshape(keep[..., 0], _shape_of(keep)[:-1] + (1,) * mat.n_dense), data, 0)
        positions = math.prod(shape[nb:nb + ns])
        if mat.nse > positions:
            summed = bcoo_sum_duplicates(BCOO((data, indices), shape=shape), nse=positions)
            data, indices = summed.data, summed.indices
    return BCOO((data, indices), shape=shape)


def bcoo_getitem(mat: BCOO, index: Any) -> BCOO:
    """``mat[index]`` for static indices: ints (negative ones count from the end), slices of positive step and
    ``...``; as JAX's, a slice of the array then a squeeze of the integer-indexed axes."""
    items = index if isinstance(index, tuple) else (index,)
    if sum(i is Ellipsis for i in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(i is not None and i is not Ellipsis for i in items)
    if n_real > mat.ndim:
        raise IndexError(f"Too many indices: {mat.ndim}-dimensional array indexed with {n_real} regular indices.")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (mat.ndim - n_real) + items[at + 1:]
    items = items + (slice(None),) * (mat.ndim - n_real)
    if any(i is None for i in items):
        raise NotImplementedError("BCOO indexing with None (a new axis) is not built in srcjax")
    arrays = [k for k, item in enumerate(items) if hasattr(item, "shape") or isinstance(item, (list, np.ndarray))]
    if arrays:
        if arrays != [0] or any(item != slice(None) for item in items[1:]) or jnp.ndim(items[0]) != 1:
            raise NotImplementedError("BCOO indexing with arrays is built in srcjax only for one 1-D integer array "
                                      "on the first axis (mat[idx] or mat[idx, :, ...])")
        return _take_first_axis(mat, jnp.asarray(items[0]))
    start, limit, strides, squeeze = [], [], [], []
    for axis, (item, size) in enumerate(zip(items, mat.shape)):
        if isinstance(item, slice):
            a, b, step = item.indices(size)
            if step < 0:
                raise NotImplementedError("BCOO indexing with a negative slice step is not built in srcjax")
            start.append(a)
            limit.append(max(a, b))
            strides.append(step)
            continue
        try:
            i = operator.index(item)
        except TypeError:
            raise NotImplementedError(f"BCOO indexing with {type(item).__name__} indices is not built in srcjax "
                                      "(ints and slices are)") from None
        if not -size <= i < size:
            raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
        start.append(i % size)
        limit.append(i % size + 1)
        strides.append(1)
        squeeze.append(axis)
    out = bcoo_slice(mat, start_indices=start, limit_indices=limit, strides=strides)
    return bcoo_squeeze(out, dimensions=squeeze) if squeeze else out


def _take_first_axis(mat: BCOO, index: Any) -> BCOO:
    """``mat[index]`` for a 1-D integer array: JAX's gather, one dynamic slice of the first axis per entry
    (negative entries count from the end, entries past the end are clamped), stacked as a new batch axis."""
    if not jnp.issubdtype(index.dtype, jnp.integer):
        raise TypeError(f"BCOO indices must be integers, got an array of {index.dtype}")
    size = mat.shape[0]
    index = jnp.clip(jnp.where(index < 0, index + size, index), 0, size - 1)
    k = _shape_of(index)[0]
    nb, ns = mat.n_batch, mat.n_sparse
    if nb:  # a batch axis: take the batches (a broadcast one is the same for every entry)
        def take(x: Any) -> Any:
            return jnp.take(x, index if _shape_of(x)[0] != 1 else jnp.zeros_like(index), axis=0)
        return BCOO((take(mat.data), take(mat.indices)), shape=(k,) + mat.shape[1:])
    # a sparse axis: entry i keeps the elements of row index[i] (the others move to the padding index)
    rest = mat.shape[1:ns]
    keep = mat.indices[None, :, 0] == index[:, None]  # [k, nse]
    dtype = aval(mat.indices).dtype
    others = jnp.broadcast_to(mat.indices[None, :, 1:], (k, mat.nse, ns - 1))
    indices = jnp.where(keep[..., None], others, jnp.array(rest, dtype))
    data = jnp.where(jnp.reshape(keep, (k, mat.nse) + (1,) * mat.n_dense), mat.data[None], 0)
    out = BCOO((data, indices), shape=(k,) + mat.shape[1:])
    positions = math.prod(rest)
    if mat.nse > positions:
        out = bcoo_sum_duplicates(out, nse=positions)
    return BCOO((out.data, out.indices), shape=out.shape)  # (JAX's reshape at the end drops the flags)


def bcoo_extract(sparr: BCOO, arr: Any, *, assume_unique: bool | None = None) -> BCOO:
    """The values of the dense ``arr`` at ``sparr``'s indices, as a BCOO array of its structure. Unless the
    indices are taken as unique, only the first element at each index gets the value (the others 0), so that
    the array ``todense`` gives back is ``arr`` at those positions."""
    if not isinstance(sparr, BCOO):
        raise TypeError(f"First argument to bcoo_extract should be a BCOO array. Got type(sparr)={type(sparr)}")
    arr = jnp.asarray(arr)
    if _shape_of(arr) != sparr.shape:
        raise ValueError(f"shape mismatch: sparr.shape={sparr.shape} a.shape={_shape_of(arr)}")
    assume_unique = sparr.unique_indices if assume_unique is None else assume_unique
    layout = validate(sparr.data, sparr.indices, sparr.shape)
    nb, ns = layout.n_batch, layout.n_sparse
    i_shape = _shape_of(sparr.indices)
    batch = tuple(sparr.shape[:nb])
    sparse = tuple(jnp.broadcast_to(sparr.indices[..., i], batch + (layout.nse,)) for i in range(ns))
    if nb or ns:
        data = arr.at[tuple(_batch_iotas(batch, 1)) + sparse].get(mode="fill", fill_value=0)
        data = jnp.broadcast_to(data, batch + (layout.nse,) + _shape_of(arr)[nb + ns:])
    else:
        data = jnp.broadcast_to(arr[None], (layout.nse,) + _shape_of(arr))
    if not assume_unique:
        if ns:  # the first of each run of equal indices, in a stable sort
            columns, perm = _sort_rows(jnp.broadcast_to(sparr.indices, batch + i_shape[nb:]), nb)
            rows = jnp.stack(columns, axis=-1)
            prev = jnp.concatenate([rows[..., :1, :], rows[..., :-1, :]], axis=nb)
            first = jnp.any(rows != prev, axis=-1) | (lax.broadcasted_iota(np.int32, _shape_of(rows)[:-1], nb) == 0)
            first = jnp.zeros_like(first).at[_batch_iotas(batch, 1) + (perm,)].set(first)
        else:
            first = lax.broadcasted_iota(np.int32, batch + (layout.nse,), nb) == 0
        data = jnp.where(jnp.reshape(first, _shape_of(first) + (1,) * layout.n_dense), data, 0)
    return BCOO((data, sparr.indices), shape=sparr.shape, indices_sorted=sparr.indices_sorted,
                unique_indices=sparr.unique_indices)
