"""Shape primitives: broadcasting, reshaping, transposing, joining, padding and generating arrays.

They move or repeat elements without arithmetic, so each is linear; their math is bookkeeping of axes.
"""

from __future__ import annotations

import numpy as np

from transpiler.primitives.core import Primitive, check, register_module
from transpiler.types import TensorType

broadcast_in_dim_p = Primitive("broadcast_in_dim", params=("shape", "broadcast_dimensions"))


@broadcast_in_dim_p.def_shape
def _broadcast_in_dim_shape(x: TensorType, *, shape, broadcast_dimensions) -> TensorType:
    name = "broadcast_in_dim"
    shape, dims = tuple(shape), tuple(broadcast_dimensions)
    check(len(dims) == x.ndim, name,
          f"broadcast_dimensions {dims} must name one output axis per operand axis (operand is {x})", kind="value")
    check(all(d >= 0 for d in shape), name, f"negative size in shape {shape}", kind="value")
    check(all(0 <= d < len(shape) for d in dims), name, f"broadcast_dimensions {dims} out of range for {shape}",
          kind="value")
    check(all(a < b for a, b in zip(dims, dims[1:])), name, f"broadcast_dimensions {dims} must be increasing",
          kind="value")
    for axis, dim in enumerate(dims):
        check(x.shape[axis] in (1, shape[dim]), name,
              f"operand axis {axis} has size {x.shape[axis]}, which cannot broadcast to {shape[dim]} "
              f"(output axis {dim} of {shape})", kind="value")
    return x.update(shape=shape)


@broadcast_in_dim_p.def_impl
def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for axis, dim in enumerate(broadcast_dimensions):
        expanded[dim] = x.shape[axis]
    return np.broadcast_to(x.reshape(expanded), shape)


reshape_p = Primitive("reshape", params=("new_sizes", "dimensions"))


@reshape_p.def_shape
def _reshape_shape(x: TensorType, *, new_sizes, dimensions=None) -> TensorType:
    new_sizes = tuple(new_sizes)
    check(all(d >= 0 for d in new_sizes), "reshape", f"negative size in {new_sizes}", kind="value")
    check(int(np.prod(new_sizes, dtype=np.int64)) == x.size, "reshape",
          f"cannot reshape {x} (size {x.size}) into shape {new_sizes}", kind="value")
    check(dimensions is None or sorted(dimensions) == list(range(x.ndim)), "reshape",
          f"dimensions {dimensions} must be a permutation of the operand's {x.ndim} axes", kind="value")
    return x.update(shape=new_sizes)


@reshape_p.def_impl
def _reshape_impl(x, *, new_sizes, dimensions=None):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, new_sizes)


register_module(globals())
