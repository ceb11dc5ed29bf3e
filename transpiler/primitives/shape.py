"""Shape primitives: broadcasting, reshaping, transposing, joining, padding and generating arrays.

They move or repeat elements without arithmetic, so each is linear (``iota`` excepted: it has no operands);
their math, transposes included, is bookkeeping of axes.
"""

from __future__ import annotations

import numpy as np

from srcjax.transpiler.primitives.ad import aval_of, is_undefined
from srcjax.transpiler.primitives.batching import axis_size, move_batch_axis
from srcjax.transpiler.primitives.core import Primitive, check, register_module, registered
from srcjax.transpiler.primitives.elementwise import convert_element_type_p, select_n_p, sub_p
from srcjax.transpiler.types import TensorType, short_name


def _check_axes(name: str, axes, ndim: int, what: str = "dimensions") -> tuple[int, ...]:
    """Axes given to a primitive: distinct ints in ``[0, ndim)`` (lax normalises negative ones first)."""
    axes = tuple(axes)
    check(all(isinstance(a, (int, np.integer)) for a in axes), name, f"{what} {axes} must be ints")
    check(all(0 <= a < ndim for a in axes), name, f"{what} {axes} out of range for rank {ndim}", kind="value")
    check(len(set(axes)) == len(axes), name, f"{what} {axes} repeat an axis", kind="value")
    return tuple(int(a) for a in axes)


def _inverse(permutation) -> tuple[int, ...]:
    """The permutation that undoes ``permutation``."""
    return tuple(int(p) for p in np.argsort(permutation))


# -- batching vocabulary shared by the shape, reduce and elementwise families -------------------------------
def batched_axes(axes, dim: int) -> tuple[int, ...]:
    """Axes of one example, numbered in the batched operand whose batch axis is ``dim``."""
    return tuple(int(a) + (a >= dim) for a in axes)


def common_batch_axis(args, dims) -> tuple[list, int]:
    """Operands that must agree in shape, batched at one axis: the first batched operand's (JAX's choice for
    sort); the others are moved there, the unbatched ones broadcast along it."""
    size, to = axis_size(args, dims), next(d for d in dims if d is not None)
    return [move_batch_axis(x, d, size, to) for x, d in zip(args, dims, strict=True)], to


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
    check(all(a < b for a, b in zip(dims, dims[1:], strict=False)), name,
          f"broadcast_dimensions {dims} must be increasing", kind="value")
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


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    """Sum the cotangent over the axes the broadcast created or stretched, then restore the operand's shape."""
    reduce_sum_p = registered("reduce_sum")  # (reduce.py is above this family)
    in_shape = x.aval.shape
    stretched = tuple(d for a, d in enumerate(broadcast_dimensions) if in_shape[a] == 1 and shape[d] != 1)
    new_axes = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    summed = reduce_sum_p.bind(ct, axes=tuple(sorted(new_axes + stretched))) if new_axes or stretched else ct
    return [reshape_p.bind(summed, new_sizes=in_shape, dimensions=None)]


broadcast_in_dim_p.def_linear(_broadcast_in_dim_transpose)


@broadcast_in_dim_p.def_vmap
def _broadcast_in_dim_vmap(args, dims, *, shape, broadcast_dimensions):
    """The batch axis lands just after the output axis of the operand axis before it (first if there is none):
    broadcast_dimensions stay increasing, so nothing is transposed."""
    (x,), (dim,) = args, dims
    at = broadcast_dimensions[dim - 1] + 1 if dim > 0 else 0
    moved = batched_axes(broadcast_dimensions, at)
    out_shape = (*shape[:at], aval_of(x).shape[dim], *shape[at:])
    return broadcast_in_dim_p.bind(x, shape=out_shape, broadcast_dimensions=(*moved[:dim], at, *moved[dim:])), at

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


def _reshape_transpose(ct, x, *, new_sizes, dimensions=None):
    # reshape(x, dimensions) is reshape(transpose(x, dimensions)): undo the reshape, then the transpose
    if dimensions is None:
        return [reshape_p.bind(ct, new_sizes=x.aval.shape, dimensions=None)]
    permuted = tuple(x.aval.shape[d] for d in dimensions)
    back = reshape_p.bind(ct, new_sizes=permuted, dimensions=None)
    return [transpose_p.bind(back, permutation=_inverse(dimensions))]


reshape_p.def_linear(_reshape_transpose)


@reshape_p.def_vmap
def _reshape_vmap(args, dims, *, new_sizes, dimensions=None):
    """In row-major order a last batch axis stays innermost, so a plain reshape keeps it last. Elsewhere the
    batch axis is moved first by the reshape's own transpose (``dimensions``), and stays first."""
    (x,), (dim,) = args, dims
    shape = aval_of(x).shape
    if dimensions is None and dim == len(shape) - 1:
        return reshape_p.bind(x, new_sizes=(*new_sizes, shape[dim]), dimensions=None), len(new_sizes)
    order = (dim, *batched_axes(range(len(shape) - 1) if dimensions is None else dimensions, dim))
    order = None if order == tuple(range(len(shape))) else order
    return reshape_p.bind(x, new_sizes=(shape[dim], *new_sizes), dimensions=order), 0

transpose_p = Primitive("transpose", params=("permutation",))


@transpose_p.def_shape
def _transpose_shape(x: TensorType, *, permutation) -> TensorType:
    perm = tuple(permutation)
    check(sorted(perm) == list(range(x.ndim)), "transpose",
          f"permutation {perm} must be a permutation of the operand's {x.ndim} axes (operand is {x})", kind="value")
    return x.update(shape=tuple(x.shape[p] for p in perm))


transpose_p.def_impl(lambda x, *, permutation: np.transpose(x, permutation))
transpose_p.def_linear(lambda ct, x, *, permutation: [transpose_p.bind(ct, permutation=_inverse(permutation))])


@transpose_p.def_vmap
def _transpose_vmap(args, dims, *, permutation):
    # the batch axis keeps its place; the other axes are permuted around it
    (x,), (dim,) = args, dims
    moved = batched_axes(permutation, dim)
    return transpose_p.bind(x, permutation=(*moved[:dim], dim, *moved[dim:])), dim

squeeze_p = Primitive("squeeze", params=("dimensions",))


@squeeze_p.def_shape
def _squeeze_shape(x: TensorType, *, dimensions) -> TensorType:
    dims = _check_axes("squeeze", dimensions, x.ndim)
    for d in dims:
        check(x.shape[d] == 1, "squeeze", f"cannot squeeze axis {d} of {x}: its size is not 1", kind="value")
    return x.drop_axes(dims)


squeeze_p.def_impl(lambda x, *, dimensions: np.reshape(x, _squeeze_shape(TensorType(x.dtype, x.shape),
                                                                          dimensions=dimensions).shape))
# the squeezed axes, numbered in the operand, are the axes expand_dims adds back, numbered in its result
squeeze_p.def_linear(lambda ct, x, *, dimensions: [expand_dims_p.bind(ct, dimensions=tuple(dimensions))])
# the batch axis moves down by the squeezed axes before it
squeeze_p.def_vmap(lambda args, dims, *, dimensions: (
    squeeze_p.bind(args[0], dimensions=batched_axes(dimensions, dims[0])),
    dims[0] - sum(d < dims[0] for d in dimensions)))

expand_dims_p = Primitive("expand_dims", params=("dimensions",))


@expand_dims_p.def_shape
def _expand_dims_shape(x: TensorType, *, dimensions) -> TensorType:
    # ``dimensions`` are the new size-1 axes, numbered in the result
    dims = _check_axes("expand_dims", dimensions, x.ndim + len(tuple(dimensions)))
    rest = iter(x.shape)
    return x.update(shape=tuple(1 if axis in dims else next(rest) for axis in range(x.ndim + len(dims))))


expand_dims_p.def_impl(lambda x, *, dimensions: np.reshape(x, _expand_dims_shape(TensorType(x.dtype, x.shape),
                                                                                  dimensions=dimensions).shape))
expand_dims_p.def_linear(lambda ct, x, *, dimensions: [squeeze_p.bind(ct, dimensions=tuple(dimensions))])


@expand_dims_p.def_vmap
def _expand_dims_vmap(args, dims, *, dimensions):
    """The batch axis lands just after the result axis of the operand axis before it (first if there is none)."""
    (x,), (dim,) = args, dims
    rank = aval_of(x).ndim - 1 + len(dimensions)
    kept = [a for a in range(rank) if a not in dimensions]  # where the example's own axes go
    at = kept[dim - 1] + 1 if dim > 0 else 0
    return expand_dims_p.bind(x, dimensions=batched_axes(dimensions, at)), at

concatenate_p = Primitive("concatenate", params=("dimension",))


@concatenate_p.def_shape
def _concatenate_shape(*xs: TensorType, dimension: int) -> TensorType:
    name = "concatenate"
    check(len(xs) >= 1, name, "needs at least one operand")
    first = xs[0]
    check(first.ndim >= 1, name, f"cannot concatenate rank-0 operands ({first})", kind="value")
    check(0 <= dimension < first.ndim, name, f"dimension {dimension} out of range for rank {first.ndim}",
          kind="value")
    for x in xs[1:]:
        check(x.dtype == first.dtype, name,
              f"operands must have one dtype, got {', '.join(short_name(t.dtype) for t in xs)}")
        check(x.ndim == first.ndim and all(a == b for i, (a, b) in enumerate(zip(x.shape, first.shape, strict=True))
                                           if i != dimension), name,
              f"operand shapes must agree except along dimension {dimension}, got {[t.shape for t in xs]}",
              kind="value")
    size = sum(x.shape[dimension] for x in xs)
    shape = first.shape[:dimension] + (size,) + first.shape[dimension + 1:]
    return first.update(shape=shape, weak_type=all(x.weak_type for x in xs))


concatenate_p.def_impl(lambda *xs, dimension: np.concatenate(xs, axis=dimension))


@concatenate_p.def_linear
def _concatenate_transpose(ct, *xs, dimension):
    """Each operand's cotangent is its stretch of the cotangent along ``dimension``."""
    slice_p = registered("slice")  # (indexing.py is above this family)
    shape = aval_of(ct).shape
    cotangents, start = [], 0
    for x in xs:
        stop = start + aval_of(x).shape[dimension]
        if is_undefined(x):
            starts = tuple(start if axis == dimension else 0 for axis in range(len(shape)))
            limits = tuple(stop if axis == dimension else n for axis, n in enumerate(shape))
            cotangents.append(slice_p.bind(ct, start_indices=starts, limit_indices=limits, strides=None))
        else:
            cotangents.append(None)
        start = stop
    return cotangents


@concatenate_p.def_vmap
def _concatenate_vmap(args, dims, *, dimension):
    moved, at = common_batch_axis(args, dims)
    return concatenate_p.bind(*moved, dimension=dimension + (dimension >= at)), at


pad_p = Primitive("pad", params=("padding_config",))


def _padded_size(size: int, lo: int, hi: int, interior: int) -> int:
    # lo + the operand with ``interior`` fill elements between neighbours + hi
    return lo + size + max(size - 1, 0) * interior + hi


@pad_p.def_shape
def _pad_shape(x: TensorType, value: TensorType, *, padding_config) -> TensorType:
    name = "pad"
    config = tuple(tuple(c) for c in padding_config)
    check(value.shape == (), name, f"padding_value must be a scalar, got {value}", kind="value")
    check(value.dtype == x.dtype, name, f"padding_value has dtype {value.dtype.name}, operand has {x.dtype.name}")
    check(len(config) == x.ndim and all(len(c) == 3 for c in config), name,
          f"padding_config {config} must have one (lo, hi, interior) triple per operand axis ({x})", kind="value")
    check(all(c[2] >= 0 for c in config), name, f"interior padding must be >= 0, got {config}", kind="value")
    shape = tuple(_padded_size(n, *c) for n, c in zip(x.shape, config, strict=True))
    check(all(d >= 0 for d in shape), name, f"padding_config {config} removes more than {x} has", kind="value")
    return x.update(shape=shape, weak_type=x.weak_type and value.weak_type)


@pad_p.def_impl
def _pad_impl(x, value, *, padding_config):
    # Pad with the non-negative parts, then cut what negative lo/hi remove from the result.
    config = list(zip(x.shape, padding_config, strict=True))
    grown = [_padded_size(n, max(lo, 0), max(hi, 0), interior) for n, (lo, hi, interior) in config]
    out = np.full(grown, value, dtype=x.dtype)
    put = tuple(slice(max(lo, 0), max(lo, 0) + _padded_size(n, 0, 0, interior), interior + 1)
                for n, (lo, hi, interior) in config)
    out[put] = x
    cut = tuple(slice(max(-lo, 0), g - max(-hi, 0)) for g, (lo, hi, _) in zip(grown, padding_config, strict=True))
    return out[cut]


@pad_p.def_linear
def _pad_transpose(ct, x, value, *, padding_config):
    """Linear in the operand and the padding value together (JAX's rule). The operand's cotangent is the
    cotangent at the operand's positions: undo lo/hi (where they were negative they cut elements, which
    now get zeros), then take every (interior + 1)-th element. The value's is the sum of the rest."""
    slice_p, reduce_sum_p = registered("slice"), registered("reduce_sum")
    ndim, everything = len(padding_config), tuple(range(len(padding_config)))
    unpad = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
    unpadded = pad_p.bind(ct, np.zeros((), aval_of(ct).dtype), padding_config=unpad)
    ct_x = slice_p.bind(unpadded, start_indices=(0,) * ndim, limit_indices=aval_of(unpadded).shape,
                        strides=tuple(interior + 1 for _, _, interior in padding_config))
    ct_value = None
    if is_undefined(value):
        ct_value = sub_p.bind(reduce_sum_p.bind(ct, axes=everything), reduce_sum_p.bind(ct_x, axes=everything))
    return [ct_x if is_undefined(x) else None, ct_value]


@pad_p.def_vmap
def _pad_vmap(args, dims, *, padding_config):
    """The batch axis is not padded. A padding value per example (JAX's rule): pad with zeros, then select
    each example's value where a mask of the padded positions says so."""
    (x, value), (x_dim, value_dim) = args, dims
    if x_dim is None:
        x, x_dim = move_batch_axis(x, None, axis_size(args, dims), 0), 0
    config = (*padding_config[:x_dim], (0, 0, 0), *padding_config[x_dim:])
    if value_dim is None:
        return pad_p.bind(x, value, padding_config=config), x_dim
    aval = aval_of(x)
    zero = convert_element_type_p.bind(np.zeros((), aval.dtype), new_dtype=aval.dtype, weak_type=aval.weak_type)
    padded = pad_p.bind(x, zero, padding_config=config)
    everywhere = broadcast_in_dim_p.bind(np.True_, shape=aval.shape, broadcast_dimensions=())
    inside = pad_p.bind(everywhere, np.False_, padding_config=config)
    fill = broadcast_in_dim_p.bind(value, shape=aval_of(padded).shape, broadcast_dimensions=(x_dim,))
    return select_n_p.bind(inside, fill, padded), x_dim


iota_p = Primitive("iota", params=("dtype", "shape", "dimension"))


@iota_p.def_shape
def _iota_shape(*, dtype, shape, dimension: int) -> TensorType:
    dtype, shape = np.dtype(dtype), tuple(shape)
    check(dtype.kind in "iufc", "iota", f"dtype must be a number type, got {dtype.name}")
    check(all(d >= 0 for d in shape), "iota", f"negative size in shape {shape}", kind="value")
    check(0 <= dimension < len(shape), "iota", f"dimension {dimension} out of range for shape {shape}", kind="value")
    return TensorType(dtype, shape)


@iota_p.def_impl
def _iota_impl(*, dtype, shape, dimension):
    line = np.arange(shape[dimension], dtype=dtype)
    return np.broadcast_to(line.reshape([-1 if axis == dimension else 1 for axis in range(len(shape))]), shape)


iota_p.def_zero_jvp("iota has no operands: its value is a constant, of zero derivative")
iota_p.def_unsupported("transpose", "not linear")
iota_p.def_unsupported("vmap", "iota has no operands, so nothing of it is ever batched")


rev_p = Primitive("rev", params=("dimensions",))


@rev_p.def_shape
def _rev_shape(x: TensorType, *, dimensions) -> TensorType:
    _check_axes("rev", dimensions, x.ndim)
    return x


rev_p.def_impl(lambda x, *, dimensions: np.flip(x, tuple(dimensions)) if len(dimensions) else x)
rev_p.def_linear(lambda ct, x, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])
rev_p.def_vmap(lambda args, dims, *, dimensions: (rev_p.bind(args[0], dimensions=batched_axes(dimensions, dims[0])),
                                                  dims[0]))

register_module(globals())
