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
    "collapse", "concatenate", "expand_dims", "iota", "pad", "reshape", "rev", "squeeze", "transpose",
]


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding=None) -> Any:
    """Adds leading axes of the given ``sizes``: the result has shape ``(*sizes, *operand.shape)``."""
    sizes = _ints(sizes, "broadcast", "sizes")
    if not sizes and is_arraylike(operand) and not isinstance(operand, _PY_SCALARS):
        return operand
    ndim = len(aval(_operand(operand, "broadcast")).shape)
    return broadcast_in_dim(operand, sizes + aval(operand).shape, tuple(range(len(sizes), len(sizes) + ndim)))


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int], *,
                     out_sharding=None) -> Any:
    shape = _ints(shape, "broadcast_in_dim", "shape")
    dims = _ints(broadcast_dimensions, "broadcast_in_dim", "broadcast_dimensions")
    typ = aval(_operand(operand, "broadcast_in_dim"))
    if typ.shape == shape and dims == tuple(range(len(shape))) and not isinstance(operand, _PY_SCALARS):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """Adds leading size-1 axes until ``x`` has rank ``rank``."""
    ndim = len(aval(_operand(x, "broadcast_to_rank")).shape)
    if rank <= ndim:
        return x
    return broadcast(x, (1,) * (rank - ndim))


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``arr`` broadcast to the shape of ``like_arr`` (NumPy's rules: trailing axes line up)."""
    target = aval(_operand(like_arr, "broadcast_like")).shape
    shape = aval(_operand(arr, "broadcast_like")).shape
    if shape == target:
        return arr
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
        return operand
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dims)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    perm = _ints(permutation, "transpose", "permutation")
    if perm == tuple(range(len(aval(_operand(operand, "transpose")).shape))) and not isinstance(operand, _PY_SCALARS):
        return operand
    return transpose_p.bind(operand, permutation=perm)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    ndim = len(aval(_operand(array, "squeeze")).shape)
    dims = tuple(sorted(_axis(d, ndim, "squeeze") for d in _ints(dimensions, "squeeze", "dimensions")))
    if not dims and not isinstance(array, _PY_SCALARS):
        return array
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
        return operands[0]
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
        return _operand(operand, "rev")
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
