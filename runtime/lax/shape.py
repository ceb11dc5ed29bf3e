"""``lax``'s shape functions: broadcasting, reshaping, transposing, joining, padding, iotas and reversal.

Signatures are JAX's. Like JAX, ``squeeze``, ``expand_dims`` and ``collapse`` accept negative axes, while
``transpose``, ``concatenate`` and ``rev`` take them as given (the primitive rejects negative ones).
Python scalars take the dtype of the array they meet.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from srcjax.runtime.lax._checks import PY_SCALARS as _PY_SCALARS
from srcjax.runtime.lax._checks import axis as _axis
from srcjax.runtime.lax._checks import ints as _ints
from srcjax.runtime.lax._checks import operand as _operand
from srcjax.runtime.lax._checks import unchanged as _unchanged
from srcjax.runtime import dtypes
from srcjax.runtime.numpy._core import aval, convert, is_arraylike
from srcjax.runtime.numpy._core import broadcast_shapes as _broadcast_shapes
from srcjax.transpiler.primitives.shape import (
    broadcast_in_dim_p,
    concatenate_p,
    expand_dims_p,
    iota_p,
    pad_p,
    reshape_p,
    rev_p,
    squeeze_p,
    transpose_p,
)

__all__ = [
    "broadcast", "broadcast_in_dim", "broadcast_like", "broadcast_shapes", "broadcast_to_rank", "broadcasted_iota",
    "collapse", "concatenate", "empty", "expand_dims", "full", "full_like", "iota", "pad", "reshape", "rev", "split",
    "squeeze", "stack", "tile", "transpose", "unstack",
]


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding=None) -> Any:
    """Adds leading axes of the given ``sizes``: the result has shape ``(*sizes, *operand.shape)``."""
    sizes = _ints(sizes, "broadcast", "sizes")
    if not sizes and is_arraylike(operand) and not isinstance(operand, _PY_SCALARS):
        return _unchanged(operand)
    ndim = len(aval(_operand(operand, "broadcast")).shape)
    return broadcast_in_dim(operand, sizes + aval(operand).shape, tuple(range(len(sizes), len(sizes) + ndim)))


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int], *,
                     out_sharding=None) -> Any:
    shape = _ints(shape, "broadcast_in_dim", "shape")
    dims = _ints(broadcast_dimensions, "broadcast_in_dim", "broadcast_dimensions")
    typ = aval(_operand(operand, "broadcast_in_dim"))
    if typ.shape == shape and dims == tuple(range(len(shape))) and not isinstance(operand, _PY_SCALARS):
        return _unchanged(operand)
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """Adds leading size-1 axes until ``x`` has rank ``rank``."""
    ndim = len(aval(_operand(x, "broadcast_to_rank")).shape)
    if rank <= ndim:
        return _unchanged(x)
    return broadcast(x, (1,) * (rank - ndim))


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``arr`` broadcast to the shape of ``like_arr`` (NumPy's rules: trailing axes line up)."""
    target = aval(_operand(like_arr, "broadcast_like")).shape
    shape = aval(_operand(arr, "broadcast_like")).shape
    if shape == target:
        return _unchanged(arr)
    return broadcast_in_dim(arr, target, tuple(range(len(target) - len(shape), len(target))))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    return _broadcast_shapes(*(_ints(s, "broadcast_shapes", "shapes") for s in shapes))


def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None, *,
            out_sharding=None) -> Any:
    """``operand`` (first transposed by ``dimensions``, when given) in row-major order, as ``new_sizes``."""
    new_sizes = _ints((new_sizes,) if isinstance(new_sizes, (int, np.integer)) else new_sizes, "reshape", "new_sizes")
    dims = None if dimensions is None else _ints(dimensions, "reshape", "dimensions")
    typ = aval(_operand(operand, "reshape"))
    if dims is not None and dims == tuple(range(len(typ.shape))):
        dims = None
    if typ.shape == new_sizes and dims is None and not isinstance(operand, _PY_SCALARS):
        return _unchanged(operand)
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    perm = _ints(permutation, "transpose", "permutation")
    if perm == tuple(range(len(aval(_operand(operand, "transpose")).shape))) and not isinstance(operand, _PY_SCALARS):
        return _unchanged(operand)
    return transpose_p.bind(operand, permutation=perm)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    ndim = len(aval(_operand(array, "squeeze")).shape)
    dims = tuple(sorted(_axis(d, ndim, "squeeze") for d in _ints(dimensions, "squeeze", "dimensions")))
    if not dims and not isinstance(array, _PY_SCALARS):
        return _unchanged(array)
    return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Inserts size-1 axes at ``dimensions``, which number the axes of the result."""
    dims = _ints(dimensions, "expand_dims", "dimensions")
    ndim_out = len(aval(_operand(array, "expand_dims")).shape) + len(dims)
    dims = tuple(sorted(_axis(d, ndim_out, "expand_dims") for d in dims))
    if len(set(dims)) != len(dims):
        raise ValueError(f"lax.expand_dims: repeated axis in dimensions {tuple(dimensions)}")
    return expand_dims_p.bind(array, dimensions=dims)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    operands = list(operands)
    if not operands:
        raise ValueError("lax.concatenate: needs at least one operand")
    for x in operands:
        _operand(x, "concatenate")
    if len(operands) == 1:
        return _unchanged(operands[0])
    return concatenate_p.bind(*operands, dimension=operator.index(dimension))


def pad(operand: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """Pads each axis with ``lo`` and ``hi`` elements (negative ones cut) and ``interior`` between neighbours."""
    typ = aval(_operand(operand, "pad"))
    if isinstance(padding_value, _PY_SCALARS):
        padding_value = convert(padding_value, typ.dtype, weak_type=True)
    config = tuple(_ints(c, "pad", "padding_config entries") for c in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


def iota(dtype: Any, size: int) -> Any:
    """``[0, 1, ..., size - 1]`` as ``dtype``."""
    return broadcasted_iota(dtype, (operator.index(size),), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *, out_sharding=None) -> Any:
    """An array of ``shape`` whose elements are their own index along ``dimension``."""
    dtype = dtypes.canonicalize_dtype(dtypes.to_dtype(dtype))
    return iota_p.bind(dtype=dtype, shape=_ints(shape, "broadcasted_iota", "shape"),
                       dimension=operator.index(dimension))


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """Reverses the order of elements along each of ``dimensions``."""
    dims = _ints(dimensions, "rev", "dimensions")
    if not dims and not isinstance(operand, _PY_SCALARS):
        return _unchanged(_operand(operand, "rev"))
    return rev_p.bind(operand, dimensions=dims)


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """Merges axes ``start_dimension`` up to (not including) ``stop_dimension`` into one."""
    shape = aval(_operand(operand, "collapse")).shape
    ndim = len(shape)
    start = _axis(start_dimension, ndim, "collapse")
    stop = ndim if stop_dimension is None else operator.index(stop_dimension)
    stop = stop + ndim if stop < 0 else stop
    if not start <= stop <= ndim:
        raise ValueError(f"lax.collapse: cannot collapse axes [{start_dimension}, {stop_dimension}) of an array of "
                         f"rank {ndim}")
    size = int(np.prod(shape[start:stop], dtype=np.int64))
    return reshape(operand, shape[:start] + (size,) + shape[stop:])


def _shape(shape: Any, name: str) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    shape = _ints(shape, name, "shape")
    if any(d < 0 for d in shape):
        raise TypeError(f"lax.{name}: shape {shape} has a negative dimension")
    return shape


def full(shape: Any, fill_value: Any, dtype: Any = None, *, sharding=None) -> Any:
    """An array of ``shape`` holding ``fill_value``, a scalar; without ``dtype``, the value's dtype and weak
    type (``lax.full((2,), 1.0)`` is weakly typed, as a Python scalar is)."""
    shape = _shape(shape, "full")
    typ = aval(_operand(fill_value, "full"))
    if typ.shape:
        raise TypeError(f"lax.full: fill_value must be a scalar, got an array of shape {typ.shape}")
    if dtype is None:
        dtype, weak = typ.dtype, typ.weak_type
    else:
        dtype, weak = dtypes.canonicalize_dtype(dtypes.to_dtype(dtype)), False
    return broadcast(convert(fill_value, dtype, weak_type=weak), shape)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *, sharding=None) -> Any:
    """``full`` with ``x``'s shape and dtype (and weak type) unless ``shape`` or ``dtype`` are given."""
    typ = aval(_operand(x, "full_like"))
    if dtype is None:
        dtype, weak = typ.dtype, typ.weak_type
    else:
        dtype, weak = dtypes.canonicalize_dtype(dtypes.to_dtype(dtype)), False
    fill = convert(fill_value, dtype, weak_type=weak)
    return broadcast(fill, typ.shape if shape is None else _shape(shape, "full_like"))


def empty(shape: Any, dtype: Any, *, out_sharding=None) -> Any:
    """An array of ``shape`` and ``dtype`` whose contents do not matter (zeros, as JAX's are)."""
    return full(shape, 0, dtype)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """``operand`` cut along ``axis`` into consecutive pieces of the given ``sizes`` (which add up to the axis)."""
    from srcjax.runtime.lax.indexing import slice_in_dim

    shape = aval(_operand(operand, "split")).shape
    axis = _axis(axis, len(shape), "split")
    sizes = _ints(sizes, "split", "sizes")
    if any(size < 0 for size in sizes) or sum(sizes) != shape[axis]:
        raise ValueError(f"lax.split: the sizes {sizes} must be non-negative and add up to dimension {axis} of the "
                         f"operand's shape {shape}")
    starts = np.cumsum((0,) + sizes)
    return [slice_in_dim(operand, int(lo), int(hi), axis=axis) for lo, hi in zip(starts[:-1], starts[1:])]


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """The operands, all of one shape and dtype, stacked along a new axis ``axis``."""
    operands = list(operands)
    if not operands:
        raise ValueError("lax.stack: needs at least one operand")
    ndim = len(aval(_operand(operands[0], "stack")).shape)
    axis = _axis(axis, ndim + 1, "stack")
    return concatenate([expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, that axis removed."""
    from srcjax.runtime.lax.indexing import index_in_dim

    shape = aval(_operand(x, "unstack")).shape
    axis = _axis(axis, len(shape), "unstack")
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(shape[axis]))


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """``operand`` repeated ``reps[i]`` times along each axis i (one rep per axis)."""
    shape = aval(_operand(operand, "tile")).shape
    reps = _ints(reps, "tile", "reps")
    if len(reps) != len(shape):
        raise TypeError(f"lax.tile: reps must have one entry per axis of the operand, got len(reps)={len(reps)} and "
                        f"an operand of rank {len(shape)}")
    if any(r < 0 for r in reps):
        raise ValueError(f"lax.tile: reps must be non-negative, got {reps}")
    # (rep, size) pairs: broadcast a leading axis of each rep count, then merge each pair
    expanded = broadcast_in_dim(operand, tuple(d for pair in zip(reps, shape) for d in pair),
                                tuple(2 * i + 1 for i in range(len(shape))))
    return reshape(expanded, tuple(r * d for r, d in zip(reps, shape)))
