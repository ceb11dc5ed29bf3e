"""Array manipulation: reshaping, transposing, joining, splitting, tiling, flipping, rolling and padding.

Everything is bookkeeping of static shapes over ``lax``'s shape functions and slices; values never leave
the primitives. Where NumPy lets data decide a shape (``repeat`` with an array of counts, ``delete`` and
``insert`` with index arrays, ``trim_zeros``), the data must be concrete unless a static size is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp  # the package namespace, resolved at call time (ufuncs, reductions, ...)
from srcjax.runtime import lax
from srcjax.runtime.numpy._core import aval, check_arraylike, convert, is_arraylike, is_concrete, promote_dtypes
from srcjax.runtime.numpy._core import broadcast_shapes as _broadcast_shapes
from srcjax.runtime.numpy._core import broadcast_to as _broadcast_to
from srcjax.runtime.numpy.creation import canonical_dtype, canonicalize_shape, static_int
from srcjax.transpiler.ir import ConcretizationError

__all__ = [
    "reshape", "ravel", "transpose", "matrix_transpose", "permute_dims", "swapaxes", "moveaxis", "rollaxis",
    "squeeze", "expand_dims", "concatenate", "concat", "stack", "hstack", "vstack", "dstack", "column_stack",
    "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack", "tile", "repeat", "flip", "fliplr", "flipud",
    "rot90", "roll", "pad", "broadcast_to", "broadcast_arrays", "broadcast_shapes", "atleast_1d", "atleast_2d",
    "atleast_3d", "append", "insert", "delete", "resize", "trim_zeros", "block", "r_", "c_",
]

AxisError = np.exceptions.AxisError  # both a ValueError and an IndexError, as in NumPy


class IndexOutOfBounds(IndexError, ValueError):
    """An index past an axis: NumPy raises IndexError where JAX raises ValueError; this is both."""


# -- helpers ----------------------------------------------------------------------------------------------------
def _array(name: str, a: Any) -> Any:
    """An array-like argument as an array (Python scalars keep their weak type; lists are refused, as in JAX)."""
    check_arraylike(name, a)
    return jnp.asarray(a)


def _shape(a: Any) -> tuple[int, ...]:
    return aval(a).shape


def normalize_axis(axis: Any, ndim: int, name: str) -> int:
    axis = static_int(axis, name, "axis")
    if not -ndim <= axis < ndim:
        raise AxisError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def normalize_axes(axes: Any, ndim: int, name: str) -> tuple[int, ...]:
    """An int or a sequence of ints as distinct non-negative axes."""
    items = (axes,) if isinstance(axes, (int, np.integer)) or not isinstance(axes, (tuple, list)) else axes
    out = tuple(normalize_axis(a, ndim, name) for a in items)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {tuple(items)}")
    return out


def _sequence(name: str, arrays: Any) -> list[Any]:
    """The arrays to join: a list or tuple of array-likes, or an array read as the sequence of its rows."""
    if is_arraylike(arrays) and not isinstance(arrays, (bool, int, float, complex, np.generic)):
        if len(_shape(arrays)) == 0:
            raise ValueError(f"{name}: cannot join the elements of a 0-d array")
        return list(unstack(jnp.asarray(arrays)))
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{name}: expected a sequence of arrays, got {type(arrays).__name__}")
    check_arraylike(name, *arrays)
    return [jnp.asarray(x) for x in arrays]


def _slice_axis(a: Any, start: int, stop: int, axis: int, stride: int = 1) -> Any:
    if start == 0 and stop == _shape(a)[axis] and stride == 1:
        return a
    return lax.slice_in_dim(a, start, stop, stride, axis=axis)


# -- shapes ---------------------------------------------------------------------------------------------------
def _resolve_shape(shape: Any, size: int, name: str) -> tuple[int, ...]:
    """A requested shape with its one ``-1`` (if any) replaced by what makes the sizes match."""
    items = (shape,) if isinstance(shape, (int, np.integer)) or (
        is_arraylike(shape) and not isinstance(shape, (list, tuple)) and len(_shape(shape)) == 0) else tuple(shape)
    dims = [static_int(d, name, "each dimension of the new shape") for d in items]
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise TypeError(f"{name}: can only specify one unknown dimension (-1), got shape {tuple(dims)}")
    if any(d < -1 for d in dims):
        raise TypeError(f"{name}: new sizes must all be positive (or one -1), got {tuple(dims)}")  # (JAX's type)
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise TypeError(f"{name}: cannot reshape array of size {size} into shape {tuple(dims)}")
        dims[unknown[0]] = size // known
    elif known != size:
        raise TypeError(f"{name}: cannot reshape array of size {size} into shape {tuple(dims)}")
    return tuple(dims)


def reshape(a: Any, shape: Any = None, order: str = "C", *, copy: bool | None = None, out_sharding=None) -> Any:
    a = _array("reshape", a)
    if shape is None:
        raise TypeError("reshape: the new shape is required")
    new = _resolve_shape(shape, aval(a).size, "reshape")
    if order == "C":
        return lax.reshape(a, new)
    if order == "F":  # column-major: reshape the reversed axes, then reverse back
        return transpose(lax.reshape(transpose(a), new[::-1]))
    if order == "A":
        raise NotImplementedError("reshape: order='A' is not supported (srcjax arrays are row-major)")
    raise ValueError(f"reshape: order must be one of 'C' or 'F', got {order!r}")


def ravel(a: Any, order: str = "C", *, out_sharding=None) -> Any:
    a = _array("ravel", a)
    if order == "K":
        order = "C"
    return reshape(a, (aval(a).size,), order)


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    a = _array("transpose", a)
    ndim = len(_shape(a))
    if axes is None:
        perm = tuple(range(ndim - 1, -1, -1))
    else:
        perm = tuple(normalize_axis(x, ndim, "transpose") for x in axes)
        if len(perm) != ndim or len(set(perm)) != ndim:
            raise TypeError(f"transpose: axes {tuple(axes)} are not a permutation of the {ndim} axes of an array of "
                            f"shape {_shape(a)}")
    return lax.transpose(a, perm)


def permute_dims(a: Any, /, axes: tuple[int, ...]) -> Any:
    return transpose(a, axes)


def matrix_transpose(x: Any, /) -> Any:
    """Swaps the last two axes."""
    x = _array("matrix_transpose", x)
    ndim = len(_shape(x))
    if ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={ndim}")
    return transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    a = _array("swapaxes", a)
    ndim = len(_shape(a))
    perm = list(range(ndim))
    i, j = normalize_axis(axis1, ndim, "swapaxes"), normalize_axis(axis2, ndim, "swapaxes")
    perm[i], perm[j] = j, i
    return lax.transpose(a, perm)


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    a = _array("moveaxis", a)
    ndim = len(_shape(a))
    src, dst = normalize_axes(source, ndim, "moveaxis"), normalize_axes(destination, ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source and destination must have the same number of elements, got "
                         f"{source!r} and {destination!r}")
    rest = [i for i in range(ndim) if i not in src]
    perm = [0] * ndim
    for s, d in zip(src, dst, strict=True):
        perm[d] = s
    it = iter(rest)
    perm = [p if i in dst else next(it) for i, p in enumerate(perm)]
    return lax.transpose(a, perm)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """NumPy's older ``moveaxis``: the axis is moved to sit before ``start``."""
    a = _array("rollaxis", a)
    ndim = len(_shape(a))
    axis = normalize_axis(axis, ndim, "rollaxis")
    start = static_int(start, "rollaxis", "start")
    if not -ndim <= start <= ndim:
        raise AxisError(f"rollaxis: start {start} is out of bounds for an array of dimension {ndim}")
    start = start + ndim if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    a = _array("squeeze", a)
    shape = _shape(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes(axis, len(shape), "squeeze")
        if any(shape[i] != 1 for i in axes):
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one, got "
                             f"shape={shape} and dimensions={axes}")
    return lax.reshape(a, tuple(d for i, d in enumerate(shape) if i not in axes))


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    a = _array("expand_dims", a)
    shape = _shape(a)
    count = len(axis) if isinstance(axis, (tuple, list)) else 1
    axes = normalize_axes(axis, len(shape) + count, "expand_dims")
    it = iter(shape)
    return lax.reshape(a, tuple(1 if i in axes else next(it) for i in range(len(shape) + count)))


def broadcast_to(array: Any, shape: Any, *, out_sharding=None) -> Any:
    check_arraylike("broadcast_to", array)
    if isinstance(array, (np.ndarray, np.generic)):  # an array even where nothing changes, as JAX's
        array = jnp.asarray(array)
    return _broadcast_to(array, canonicalize_shape(shape, "broadcast_to"))


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    return _broadcast_shapes(*(canonicalize_shape(s, "broadcast_shapes") for s in shapes))


def broadcast_arrays(*args: Any) -> list[Any]:
    check_arraylike("broadcast_arrays", *args)
    shape = _broadcast_shapes(*(_shape(x) for x in args))
    return [_broadcast_to(jnp.asarray(x), shape) for x in args]


def _atleast(name: str, ndim: int, arys: Sequence[Any]) -> list[Any]:
    out = []
    for x in arys:
        x = _array(name, x)
        shape = _shape(x)
        if len(shape) < ndim:
            # NumPy's padding: () -> (1, ..., 1); (n,) -> (1, n) or (1, n, 1); (m, n) -> (m, n, 1)
            new = (1,) * ndim if not shape else (1, shape[0], 1)[:ndim] if len(shape) == 1 else (*shape, 1)
            x = lax.reshape(x, new)
        out.append(x)
    return out


def _one_or_list(arrays: list[Any]) -> Any:
    return arrays[0] if len(arrays) == 1 else arrays


def atleast_1d(*arys: Any) -> Any:
    return _one_or_list(_atleast("atleast_1d", 1, arys))


def atleast_2d(*arys: Any) -> Any:
    return _one_or_list(_atleast("atleast_2d", 2, arys))


def atleast_3d(*arys: Any) -> Any:
    return _one_or_list(_atleast("atleast_3d", 3, arys))


# -- joining ----------------------------------------------------------------------------------------------------
def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Any:
    arrays = _sequence("concatenate", arrays)
    if not arrays:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        arrays, axis = [ravel(x) for x in arrays], 0
    ndims = {len(_shape(x)) for x in arrays}
    if 0 in ndims:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    if len(ndims) > 1:
        raise TypeError(f"concatenate: all the input arrays must have the same number of dimensions, got shapes "
                        f"{[_shape(x) for x in arrays]}")
    axis = normalize_axis(axis, ndims.pop(), "concatenate")
    shapes = [_shape(x) for x in arrays]
    if any(s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for s in shapes):
        raise TypeError(f"concatenate: the input array dimensions except for the concatenation axis {axis} must "
                        f"match exactly, got shapes {shapes}")
    if dtype is None:
        arrays = promote_dtypes(*arrays)
    else:
        want = canonical_dtype(dtype)
        arrays = [convert(x, want) for x in arrays]
    return lax.concatenate(arrays, axis)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    return concatenate(arrays, axis)


def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.stack is not supported (arrays are immutable).")
    arrays = _sequence("stack", arrays)
    if not arrays:
        raise ValueError("stack: need at least one array to stack")
    shapes = {_shape(x) for x in arrays}
    if len(shapes) > 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got {[_shape(x) for x in arrays]}")
    axis = normalize_axis(axis, len(shapes.pop()) + 1, "stack")
    return concatenate([expand_dims(x, axis) for x in arrays], axis, dtype)


def hstack(tup: Any, dtype: Any = None) -> Any:
    """Joins along the second axis (the first for 1-d arrays)."""
    arrays = _atleast("hstack", 1, _sequence("hstack", tup))
    if not arrays:
        raise ValueError("hstack: need at least one array to concatenate")
    return concatenate(arrays, 0 if len(_shape(arrays[0])) == 1 else 1, dtype)


def vstack(tup: Any, dtype: Any = None) -> Any:
    """Joins along the first axis, after making 1-d arrays rows."""
    return concatenate(_atleast("vstack", 2, _sequence("vstack", tup)), 0, dtype)


def dstack(tup: Any, dtype: Any = None) -> Any:
    """Joins along the third axis, after making arrays at least 3-d."""
    return concatenate(_atleast("dstack", 3, _sequence("dstack", tup)), 2, dtype)


def column_stack(tup: Any) -> Any:
    """Joins 1-d arrays as columns (and 2-d arrays as they are) along the second axis."""
    arrays = [lax.reshape(x, (aval(x).size, 1)) if len(_shape(x)) < 2 else x for x in _sequence("column_stack", tup)]
    return concatenate(arrays, 1)


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def _block_depth(arrays: Any, path: tuple[int, ...] = ()) -> tuple[int, int]:
    """The list nesting depth of ``arrays`` (which must be the same everywhere) and the largest leaf rank."""
    if isinstance(arrays, tuple):
        raise TypeError(f"block: arrays is a tuple at index {list(path)}; only lists may be used to arrange blocks")
    if not isinstance(arrays, list):
        check_arraylike("block", arrays)
        return 0, len(_shape(arrays))
    if not arrays:
        raise ValueError(f"block: list at index {list(path)} cannot be empty")
    found = [_block_depth(item, (*path, i)) for i, item in enumerate(arrays)]
    depths = {d for d, _ in found}
    if len(depths) > 1:
        raise ValueError(f"block: list depths are mismatched under index {list(path)} (found depths "
                         f"{sorted(depths)}); every block must be nested equally deep")
    return depths.pop() + 1, max(n for _, n in found)


def block(arrays: Any) -> Any:
    """Assembles an array from nested lists of blocks: the innermost lists join along the last axis."""
    depth, leaf_ndim = _block_depth(arrays)
    ndim = max(depth, leaf_ndim)

    def assemble(item: Any, level: int) -> Any:
        if level == depth:
            x = jnp.asarray(item)
            return lax.reshape(x, (1,) * (ndim - len(_shape(x))) + _shape(x))
        return concatenate([assemble(sub, level + 1) for sub in item], axis=level - depth)

    return assemble(arrays, 0)


# -- splitting --------------------------------------------------------------------------------------------------
def _split_points(name: str, indices_or_sections: Any, size: int, equal: bool) -> list[tuple[int, int]]:
    """(start, stop) of each piece of an axis of ``size``."""
    sections = indices_or_sections
    if isinstance(sections, (int, np.integer)) or (is_arraylike(sections) and len(_shape(sections)) == 0):
        sections = static_int(sections, name, "the number of sections")
        if sections <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {sections}")
        quotient, rest = divmod(size, sections)
        if equal and rest:
            raise ValueError(f"array split does not result in an equal division: rest is {rest}")
        sizes = [quotient + 1] * rest + [quotient] * (sections - rest)
        stops = np.cumsum([0, *sizes]).tolist()
        return list(zip(stops[:-1], stops[1:], strict=True))
    if is_arraylike(sections) and not is_concrete(sections):
        raise ConcretizationError(f"{name}: split indices must be static (Python ints or a concrete array); the "
                                  f"shapes of the pieces depend on them")
    given = np.asarray(sections).reshape(-1).tolist() if is_arraylike(sections) else list(sections)
    points = [static_int(i, name, "each split index") for i in given]
    bounds = [0, *points, size]
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        start, stop, _ = slice(lo, hi).indices(size)  # Python's slice rules, as NumPy applies them
        pieces.append((start, max(start, stop)))
    return pieces


def _split(name: str, ary: Any, indices_or_sections: Any, axis: int, equal: bool) -> list[Any]:
    ary = _array(name, ary)
    shape = _shape(ary)
    if not shape:
        raise ValueError(f"{name}: cannot split a 0-d array")
    axis = normalize_axis(axis, len(shape), name)
    return [lax.slice_in_dim(ary, lo, hi, 1, axis=axis)
            for lo, hi in _split_points(name, indices_or_sections, shape[axis], equal)]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    return _split("split", ary, indices_or_sections, axis, equal=True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """As ``split``, but sections may differ in size by one (the first ones are larger)."""
    return _split("array_split", ary, indices_or_sections, axis, equal=False)


def _split_at_least(name: str, ary: Any, indices_or_sections: Any, ndim: int, axis: int) -> list[Any]:
    ary = _array(name, ary)
    if len(_shape(ary)) < ndim:
        raise ValueError(f"{name} only works on arrays of {ndim} or more dimensions, got shape {_shape(ary)}")
    return _split(name, ary, indices_or_sections, axis, equal=True)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    ary = _array("hsplit", ary)
    return _split_at_least("hsplit", ary, indices_or_sections, 1, 1 if len(_shape(ary)) > 1 else 0)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    return _split_at_least("vsplit", ary, indices_or_sections, 1, 0)  # a 1-d array splits too, as in JAX


def dsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    return _split_at_least("dsplit", ary, indices_or_sections, 3, 2)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    x = _array("unstack", x)
    shape = _shape(x)
    if not shape:
        raise ValueError("unstack requires an array of at least one dimension")
    axis = normalize_axis(axis, len(shape), "unstack")
    rest = shape[:axis] + shape[axis + 1:]
    return tuple(lax.reshape(lax.slice_in_dim(x, i, i + 1, 1, axis=axis), rest) for i in range(shape[axis]))


# -- repeating and reordering ------------------------------------------------------------------------------------
def tile(A: Any, reps: Any) -> Any:
    A = _array("tile", A)
    reps = canonicalize_shape(reps, "tile")
    shape = _shape(A)
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    # Broadcast to (r0, s0, r1, s1, ...) and merge each (r, s) pair: the copies lie side by side.
    pairs = tuple(n for pair in zip(reps, shape, strict=True) for n in pair)
    out = lax.broadcast_in_dim(lax.reshape(A, shape), pairs, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(out, tuple(r * s for r, s in zip(reps, shape, strict=True)))


def repeat(a: Any, repeats: Any, axis: int | None = None, *, total_repeat_length: int | None = None,
           out_sharding=None) -> Any:
    a = _array("repeat", a)
    check_arraylike("repeat", repeats)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(axis, len(_shape(a)), "repeat")
    n = _shape(a)[axis]
    static = isinstance(repeats, (int, np.integer)) or (not isinstance(repeats, (float, complex))
                                                         and len(aval(repeats).shape) == 0 and is_concrete(repeats))
    if static and total_repeat_length is None:  # every element the same number of times: broadcast a new axis
        count = static_int(repeats, "repeat", "repeats")
        if count < 0:
            raise ValueError(f"repeat: repeats may not contain negative values, got {count}")
        shape = _shape(a)
        expanded = shape[:axis + 1] + (count,) + shape[axis + 1:]
        out = lax.broadcast_in_dim(a, expanded, tuple(i for i in range(len(expanded)) if i != axis + 1))
        return lax.reshape(out, shape[:axis] + (n * count,) + shape[axis + 1:])
    if total_repeat_length is None and not is_concrete(repeats):
        raise ConcretizationError("repeat: with an array of repeats the length of the result depends on their values; "
                                  "pass total_repeat_length= (a static int) to use it in a compiled function")
    # concrete here (checked above) when no total is given: read the counts as static data, since inside a
    # traced function jnp.asarray(repeats) is a symbolic constant whose values cannot be read
    counts = np.ravel(np.asarray(repeats)) if total_repeat_length is None else None
    repeats = jnp.asarray(repeats)
    if aval(repeats).dtype.kind not in "iu":
        raise TypeError(f"repeat: repeats must be integers, got {aval(repeats).dtype}")
    if aval(repeats).shape not in ((), (1,), (n,)):
        raise ValueError(f"repeat: repeats has shape {aval(repeats).shape}; it must be a scalar or have one entry per "
                         f"element along axis {axis} ({n})")
    repeats = _broadcast_to(jnp.ravel(repeats), (n,))
    if total_repeat_length is None:
        if (counts < 0).any():
            raise ValueError("repeat: repeats may not contain negative values")
        total_repeat_length = int(np.broadcast_to(counts, (n,)).sum())
    total = static_int(total_repeat_length, "repeat", "total_repeat_length")
    if n == 0:
        return a
    # Output position j takes element i where cumsum(repeats)[i-1] <= j < cumsum(repeats)[i]; positions past the
    # sum repeat the last element (JAX's rule for a longer total_repeat_length).
    ends = jnp.cumsum(repeats)
    source = jnp.searchsorted(ends, lax.iota(aval(ends).dtype, total), side="right")
    return jnp.take(a, jnp.minimum(source, n - 1), axis=axis)


def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    m = _array("flip", m)
    ndim = len(_shape(m))
    axes = tuple(range(ndim)) if axis is None else normalize_axes(axis, ndim, "flip")
    return lax.rev(m, axes)


def fliplr(m: Any) -> Any:
    m = _array("fliplr", m)
    if len(_shape(m)) < 2:
        raise ValueError(f"fliplr requires an array of at least two dimensions, got shape {_shape(m)}")
    return flip(m, 1)


def flipud(m: Any) -> Any:
    m = _array("flipud", m)
    if len(_shape(m)) < 1:
        raise ValueError("flipud requires an array of at least one dimension")
    return flip(m, 0)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """Rotates by 90 degrees k times, from the first of ``axes`` towards the second."""
    m = _array("rot90", m)
    ndim = len(_shape(m))
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must name exactly two axes, got {axes!r}")
    if ndim < 2:
        raise ValueError(f"rot90: the array must have at least two dimensions, got shape {_shape(m)}")
    first, second = normalize_axes(axes, ndim, "rot90")
    k = static_int(k, "rot90", "k") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(m, (first, second))
    perm = list(range(ndim))
    perm[first], perm[second] = second, first
    if k == 1:
        return lax.transpose(flip(m, second), perm)
    return flip(lax.transpose(m, perm), second)


def _roll_axis(a: Any, shift: Any, axis: int) -> Any:
    n = _shape(a)[axis]
    if n == 0:
        return a
    if isinstance(shift, (int, np.integer)):  # static: two slices swap places
        shift = int(shift) % n
        if shift == 0:
            return a
        return lax.concatenate([_slice_axis(a, n - shift, n, axis), _slice_axis(a, 0, n - shift, axis)], axis)
    # A shift known only at run time: a window of length n into two copies, starting at n - shift mod n.
    start = jnp.subtract(n, jnp.remainder(shift, n))
    return lax.dynamic_slice_in_dim(lax.concatenate([a, a], axis), start, n, axis)


def _integer_shift(shift: Any) -> Any:
    """A shift given as an array or a non-int number, as JAX takes it: converted to int32 (a float is
    truncated toward zero, so 1.5 rolls by 1 and -1.5 by -1)."""
    shift = jnp.asarray(shift)
    return shift if aval(shift).dtype.kind in "iu" else convert(shift, np.int32)


def roll(a: Any, shift: Any, axis: int | Sequence[int] | None = None) -> Any:
    a = _array("roll", a)
    if axis is None:
        return lax.reshape(roll(ravel(a), shift, 0), _shape(a))
    shape = _shape(a)
    if is_arraylike(shift) and not isinstance(shift, (int, np.integer)):
        shift = _integer_shift(shift)
        shifts = [shift] if len(aval(shift).shape) == 0 else list(unstack(shift))
    else:
        shifts = [shift] if isinstance(shift, (int, np.integer)) else list(shift)
        shifts = [s if isinstance(s, (int, np.integer)) else _integer_shift(s) for s in shifts]
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    if not shifts or not axes:
        if shifts or axes:
            raise ValueError(f"roll: got {len(shifts)} shifts for {len(axes)} axes")
        return a
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ValueError(f"roll: shift and axis must have the same length or broadcast, got {len(shifts)} shifts and "
                         f"{len(axes)} axes")
    count = max(len(shifts), len(axes))
    shifts, axes = shifts * (count // len(shifts)), axes * (count // len(axes))
    for s, ax in zip(shifts, axes, strict=True):
        a = _roll_axis(a, s, normalize_axis(ax, len(shape), "roll"))
    return a


# -- inserting, deleting, resizing --------------------------------------------------------------------------------
def _static_indices(name: str, obj: Any, size: int, *, any_rank: bool = False) -> np.ndarray:
    """``obj`` (an int, a slice or a concrete integer array) as static indices into an axis of ``size``; with
    ``any_rank``, an integer array of any rank stands for all its entries (``delete``, as JAX's and NumPy's)."""
    if isinstance(obj, slice):
        return np.arange(*obj.indices(size))
    check_arraylike(name, obj)
    if not is_concrete(obj):
        raise TypeError(f"{name}: the indices must be static (an int, a slice or a concrete array), because the "
                        f"shape of the result depends on them; delete also accepts assume_unique_indices=True")
    indices = np.asarray(obj)
    if any_rank and indices.dtype.kind in "iu":
        indices = indices.ravel()
    if indices.dtype.kind not in "iub" or indices.ndim > 1:
        raise ValueError(f"{name}: obj must be a slice, an integer or a one-dimensional integer array, got {obj!r}")
    return indices


def delete(arr: Any, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False) -> Any:
    arr = _array("delete", arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis(axis, len(_shape(arr)), "delete")
    n = _shape(arr)[axis]
    if assume_unique_indices and not isinstance(obj, slice):
        return _delete_unique(arr, obj, axis, n)
    indices = _static_indices("delete", obj, n, any_rank=True)
    if indices.dtype == np.bool_:  # a mask of the elements to delete
        if indices.shape != (n,):
            raise ValueError(f"delete: a boolean mask must have one entry per element along axis {axis} ({n}), got "
                             f"shape {indices.shape}")
        indices = np.flatnonzero(indices)
    bad = indices[(indices < -n) | (indices >= n)]
    if bad.size:
        raise IndexOutOfBounds(f"delete: index {bad.flat[0]} is out of bounds for axis {axis} with size {n}")
    keep = np.setdiff1d(np.arange(n), np.where(indices < 0, indices + n, indices))
    if keep.size == n:
        return arr
    return jnp.take(arr, jnp.asarray(keep.astype(np.int32)), axis=axis)


def _delete_unique(arr: Any, obj: Any, axis: int, n: int) -> Any:
    # Without reading obj: walking the deleted indices in increasing order, each one at or before a kept
    # position pushes that position one further.
    check_arraylike("delete", obj)
    deleted = jnp.ravel(jnp.asarray(obj))
    deleted = jnp.sort(jnp.where(jnp.less(deleted, 0), jnp.add(deleted, n), deleted))
    count = aval(deleted).shape[0]
    position = lax.iota(aval(deleted).dtype, n - count)
    for i in range(count):
        position = jnp.add(position, convert(jnp.greater_equal(position, deleted[i]), aval(position).dtype))
    return jnp.take(arr, position, axis=axis)


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    arr = _array("insert", arr)
    check_arraylike("insert", values)
    if axis is None:
        arr, axis = ravel(arr), 0
    shape = _shape(arr)
    axis = normalize_axis(axis, len(shape), "insert")
    n = shape[axis]
    indices = _static_indices("insert", obj, n).astype(np.int64)
    indices = np.clip(indices, -n, n)  # JAX clips indices past either end (NumPy would raise)
    indices = np.where(indices < 0, indices + n, indices)
    values = convert(values, aval(arr).dtype, aval(arr).weak_type)
    if indices.size == 1:
        # One index inserts a block shaped like arr[:, i:i+1, :]. Values get leading axes up to arr's rank;
        # for a scalar index their first axis then turns to lie along ``axis`` (NumPy's rule).
        vals = values
        if len(_shape(vals)) < len(shape):
            vals = lax.reshape(vals, (1,) * (len(shape) - len(_shape(vals))) + _shape(vals))
        if indices.ndim == 0:
            vals = moveaxis(vals, 0, axis)
        vals = _broadcast_to(vals, shape[:axis] + (_shape(vals)[axis],) + shape[axis + 1:])
        index = int(indices.reshape(()))
        return concatenate([_slice_axis(arr, 0, index, axis), vals, _slice_axis(arr, index, n, axis)], axis)
    count = indices.size
    vals = _broadcast_to(values, shape[:axis] + (count,) + shape[axis + 1:])
    # New element j lands at indices[j] plus the number of insertions sorted before it (a stable order).
    order = np.argsort(indices, kind="stable")
    new_positions = np.empty(count, np.int64)
    new_positions[order] = indices[order] + np.arange(count)
    source = np.empty(n + count, np.int64)
    is_new = np.zeros(n + count, bool)
    is_new[new_positions] = True
    source[~is_new] = np.arange(n)
    source[new_positions] = n + np.arange(count)
    return jnp.take(concatenate([arr, vals], axis), jnp.asarray(source.astype(np.int32)), axis=axis)


def resize(a: Any, new_shape: Any) -> Any:
    """``a``'s elements, repeated in order as often as needed, in ``new_shape``."""
    a = _array("resize", a)
    new_shape = canonicalize_shape(new_shape, "resize")
    total, size = math.prod(new_shape), aval(a).size
    flat = ravel(a)
    if size == 0:
        return jnp.zeros(new_shape, aval(a).dtype)
    flat = tile(flat, -(-total // size))
    return lax.reshape(_slice_axis(flat, 0, total, 0), new_shape)


def trim_zeros(filt: Any, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Any:
    """Cuts leading ('f') and trailing ('b') all-zero slices; the result's shape depends on the data."""
    filt = _array("trim_zeros", filt)
    if not is_concrete(filt):
        raise TypeError("trim_zeros: the shape of the result depends on the values, so the array must be concrete")
    trim = trim.lower()
    if not trim or set(trim) - {"f", "b"}:
        raise ValueError(f"trim_zeros: trim must contain only 'f' and 'b', got {trim!r}")
    shape = _shape(filt)
    if not shape:
        raise ValueError("trim_zeros: the array must be at least one-dimensional")
    axes = range(len(shape)) if axis is None else normalize_axes(axis, len(shape), "trim_zeros")
    nonzero = jnp.not_equal(filt, 0)
    for ax in axes:
        others = tuple(i for i in range(len(shape)) if i != ax)
        along = jnp.any(nonzero, axis=others) if others else nonzero
        if not bool(jnp.any(along)):
            start, stop = 0, 0
        else:
            start = int(jnp.argmax(along)) if "f" in trim else 0
            stop = shape[ax] - int(jnp.argmax(flip(along))) if "b" in trim else shape[ax]
        filt = _slice_axis(filt, start, stop, ax)
    return filt


# -- padding ------------------------------------------------------------------------------------------------------
_PAD_KWARGS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}, "linear_ramp": {"end_values"},
    "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"},
}


def _pairs(name: str, value: Any, ndim: int, what: str) -> list[tuple[Any, Any]]:
    """NumPy's per-axis (before, after) pairs from a scalar, a pair, ((before, after),) or one pair per axis."""
    if is_arraylike(value) and not is_concrete(value):  # symbolic values: index a broadcast table
        table = _broadcast_to(value, (ndim, 2))
        return [(table[i, 0], table[i, 1]) for i in range(ndim)]
    try:
        table = np.broadcast_to(np.asarray(value), (ndim, 2))
    except ValueError:
        raise ValueError(f"{name}: {what} {value!r} cannot be broadcast to one (before, after) pair for each of "
                         f"the {ndim} axes") from None
    return [(table[i, 0], table[i, 1]) for i in range(ndim)]


def pad(array: Any, pad_width: Any, mode: str | Callable[..., Any] = "constant", **kwargs: Any) -> Any:
    array = _array("pad", array)
    shape = _shape(array)
    ndim = len(shape)
    widths = [(static_int(lo, "pad", "pad_width"), static_int(hi, "pad", "pad_width"))
              for lo, hi in _pairs("pad", pad_width, ndim, "pad_width")]
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}")
    if callable(mode):
        return _pad_with_function(array, widths, mode, kwargs)
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"pad: unimplemented padding mode {mode!r} (known: {', '.join(_PAD_KWARGS)}, "
                                  f"or a function)")
    unsupported = set(kwargs) - _PAD_KWARGS[mode]
    if unsupported:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: {sorted(unsupported)}")
    if mode in ("constant", "empty"):
        return _pad_constant(array, widths, kwargs.get("constant_values", 0))
    for axis, (lo, hi) in enumerate(widths):
        if (lo or hi) and shape[axis] == 0:
            raise ValueError(f"pad: can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
    if mode == "edge":
        return _pad_by_axis(array, widths, _pad_edge)
    if mode == "wrap":
        return _pad_by_axis(array, widths, _pad_wrap)
    if mode in ("reflect", "symmetric"):
        reflect_type = kwargs.get("reflect_type", "even")
        if reflect_type not in ("even", "odd"):
            raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
        return _pad_by_axis(array, widths, lambda x, axis, lo, hi: _pad_reflect(
            x, axis, lo, hi, include_edge=mode == "symmetric", odd=reflect_type == "odd"))
    if mode == "linear_ramp":
        ends = _pairs("pad", kwargs.get("end_values", 0), ndim, "end_values")
        return _pad_by_axis(array, widths, lambda x, axis, lo, hi: _pad_linear_ramp(x, axis, lo, hi, ends[axis]))
    stat_length = kwargs.get("stat_length")
    lengths = [(None, None)] * ndim if stat_length is None else [
        (static_int(lo, "pad", "stat_length"), static_int(hi, "pad", "stat_length"))
        for lo, hi in _pairs("pad", stat_length, ndim, "stat_length")]
    if any(length is not None and length < 0 for pair in lengths for length in pair):
        raise ValueError(f"pad: stat_length must be non-negative, got {stat_length!r}")
    return _pad_by_axis(array, widths, lambda x, axis, lo, hi: _pad_statistic(x, axis, lo, hi, mode, lengths[axis]))


def _pad_constant(array: Any, widths: list[tuple[int, int]], constant_values: Any) -> Any:
    if not isinstance(constant_values, (list, tuple)):
        check_arraylike("pad", constant_values)
    typ = aval(array)
    if is_arraylike(constant_values) and len(aval(constant_values).shape) == 0:
        value = convert(constant_values, typ.dtype, typ.weak_type)
        return lax.pad(array, value, [(lo, hi, 0) for lo, hi in widths])
    values = _pairs("pad", constant_values, typ.ndim, "constant_values")
    for axis, (lo, hi) in enumerate(widths):  # a value per axis and side: one side at a time
        for width, value, side in ((lo, values[axis][0], 0), (hi, values[axis][1], 1)):
            config = [(0, 0, 0)] * typ.ndim
            config[axis] = (width, 0, 0) if side == 0 else (0, width, 0)
            array = lax.pad(array, convert(value, typ.dtype, typ.weak_type), config)
    return array


def _pad_by_axis(array: Any, widths: list[tuple[int, int]], pad_axis: Callable[..., Any]) -> Any:
    # NumPy pads one axis after another, so later axes see (and extend) the corners earlier ones filled.
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            array = pad_axis(array, axis, lo, hi)
    return array


def _repeat_slice(x: Any, axis: int, index: int, count: int) -> Any:
    edge = _slice_axis(x, index, index + 1, axis)
    shape = _shape(edge)
    return _broadcast_to(edge, shape[:axis] + (count,) + shape[axis + 1:])


def _pad_edge(x: Any, axis: int, lo: int, hi: int) -> Any:
    n = _shape(x)[axis]
    return lax.concatenate([_repeat_slice(x, axis, 0, lo), x, _repeat_slice(x, axis, n - 1, hi)], axis)


def _pad_wrap(x: Any, axis: int, lo: int, hi: int) -> Any:
    # The periodic extension: enough copies side by side, cut at the right offset.
    n = _shape(x)[axis]
    before, after = -(-lo // n), -(-hi // n)
    copies = lax.concatenate([x] * (before + 1 + after), axis) if before + after else x
    return _slice_axis(copies, before * n - lo, before * n + n + hi, axis)


def _pad_reflect(x: Any, axis: int, lo: int, hi: int, include_edge: bool, odd: bool) -> Any:
    """Mirror images about the edges ('odd': point reflections, 2 * edge - mirror), grown a period at a time."""
    n0 = _shape(x)[axis]
    if n0 == 1:  # nothing to mirror: NumPy repeats the single element
        return _pad_edge(x, axis, lo, hi)
    period = n0 if include_edge else n0 - 1
    skip = 0 if include_edge else 1  # 'reflect' does not repeat the edge element itself
    while lo or hi:
        n = _shape(x)[axis]
        # Only whole periods of what is already there are mirrored, as NumPy does.
        available = (n - skip) // period * period
        pieces = [x]
        if lo:
            width = min(lo, available)
            chunk = flip(_slice_axis(x, skip, skip + width, axis), axis)
            if odd:
                chunk = jnp.subtract(jnp.multiply(2, _slice_axis(x, 0, 1, axis)), chunk)
            pieces.insert(0, chunk)
            lo -= width
        if hi:
            width = min(hi, available)
            chunk = flip(_slice_axis(x, n - skip - width, n - skip, axis), axis)
            if odd:
                chunk = jnp.subtract(jnp.multiply(2, _slice_axis(x, n - 1, n, axis)), chunk)
            pieces.append(chunk)
            hi -= width
        x = lax.concatenate([convert(p, aval(x).dtype, aval(x).weak_type) for p in pieces], axis)
    return x


def _pad_linear_ramp(x: Any, axis: int, lo: int, hi: int, ends: tuple[Any, Any]) -> Any:
    """Straight lines from each end value to the edge element (the edge itself not included)."""
    n = _shape(x)[axis]
    typ = aval(x)
    pieces = [x]
    for side, width, index in ((0, lo, 0), (1, hi, n - 1)):
        if not width:
            continue
        edge = squeeze(_slice_axis(x, index, index + 1, axis), axis)
        ramp = jnp.linspace(ends[side], edge, width, endpoint=False, dtype=typ.dtype, axis=axis)
        if side == 0:
            pieces.insert(0, ramp)
        else:
            pieces.append(flip(ramp, axis))
    return lax.concatenate([convert(p, typ.dtype, typ.weak_type) for p in pieces], axis)


_STATISTICS = {"maximum": "max", "minimum": "min", "mean": "mean", "median": "median"}


def _pad_statistic(x: Any, axis: int, lo: int, hi: int, mode: str, lengths: tuple[Any, Any]) -> Any:
    """Fills each side with a statistic of the ``stat_length`` elements next to it (the whole axis by default)."""
    typ = aval(x)
    n = _shape(x)[axis]
    stat = getattr(jnp, _STATISTICS[mode])
    pieces = [x]
    for side, width, length in ((0, lo, lengths[0]), (1, hi, lengths[1])):
        if not width:
            continue
        length = n if length is None else min(length, n)
        if length == 0:
            raise ValueError(f"pad: a stat_length of 0 leaves no values to compute the {mode} of")
        region = _slice_axis(x, 0, length, axis) if side == 0 else _slice_axis(x, n - length, n, axis)
        value = stat(region, axis=axis, keepdims=True)
        if typ.dtype.kind in "iu" and mode in ("mean", "median"):  # NumPy rounds them to the nearest integer
            value = jnp.round(value)
        value = convert(value, typ.dtype, typ.weak_type)
        shape = _shape(value)
        filled = _broadcast_to(value, shape[:axis] + (width,) + shape[axis + 1:])
        pieces.insert(0 if side == 0 else len(pieces), filled)
    return lax.concatenate(pieces, axis)


def _pad_with_function(array: Any, widths: list[tuple[int, int]], function: Callable[..., Any],
                       kwargs: dict[str, Any]) -> Any:
    """NumPy's callable mode: ``function(vector, (before, after), axis, kwargs)`` returns each padded 1-d line."""
    array = _pad_constant(array, widths, 0)
    for axis, width in enumerate(widths):
        array = jnp.apply_along_axis(function, axis, array, width, axis, kwargs)
    return array


# -- r_ and c_ ------------------------------------------------------------------------------------------------
class _AxisConcatenator:
    """``r_[...]`` and ``c_[...]``: arrays, scalars and slices (``start:stop:step``, an arange, or a linspace of
    that many points for a complex step) joined along ``axis`` after each is given at least ``ndmin`` axes. A
    leading string ``'axis[,ndmin[,trans1d]]'`` changes the defaults; ``trans1d`` is where an upgraded item's own
    axes go among the new ones (-1: last)."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int):
        self.name, self.axis, self.ndmin, self.trans1d = name, axis, ndmin, trans1d

    def _directive(self, text: str) -> tuple[int, int, int]:
        if text in ("r", "c"):
            raise NotImplementedError(f"jnp.{self.name}: the matrix directives 'r' and 'c' are not supported")
        try:
            given = [int(part) for part in text.split(",")]
        except ValueError:
            raise ValueError(f"jnp.{self.name}: a directive string is 'axis[,ndmin[,trans1d]]' of integers, got "
                             f"{text!r}") from None
        if len(given) > 3:
            raise ValueError(f"jnp.{self.name}: a directive has at most three integers, got {text!r}")
        return tuple(given + [self.axis, self.ndmin, self.trans1d][len(given):])

    def __getitem__(self, key: Any) -> Any:
        items = list(key) if isinstance(key, tuple) else [key]
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            axis, ndmin, trans1d = self._directive(items.pop(0))
        pieces = []
        for item in items:
            if isinstance(item, str):
                raise ValueError(f"jnp.{self.name}: a string may only come first, got {item!r} later")
            if isinstance(item, slice):
                piece = jnp.mgrid[item]
                if ndmin > 1:  # the range is a row; trans1d then turns it
                    piece = lax.reshape(piece, (1,) * (ndmin - 1) + _shape(piece))
                    if trans1d != -1:
                        piece = swapaxes(piece, -1, trans1d)
            else:
                piece = jnp.asarray(item)
                piece = self._upgrade(piece, ndmin, trans1d)
            pieces.append(piece)
        if not pieces:
            return jnp.zeros((0,))
        return concatenate(pieces, axis)

    @staticmethod
    def _upgrade(piece: Any, ndmin: int, trans1d: int) -> Any:
        """New leading axes up to ``ndmin``; then the item's own axes are moved to start at ``trans1d``."""
        own = len(_shape(piece))
        if own >= ndmin:
            return piece
        piece = lax.reshape(piece, (1,) * (ndmin - own) + _shape(piece))
        if trans1d == -1:
            return piece
        new = ndmin - own
        start = trans1d + new + 1 if trans1d < 0 else trans1d
        order = list(range(new))
        return transpose(piece, tuple(order[:start] + list(range(new, ndmin)) + order[start:]))


r_ = _AxisConcatenator("r_", axis=0, ndmin=1, trans1d=-1)
c_ = _AxisConcatenator("c_", axis=-1, ndmin=2, trans1d=0)


# -- reinterpreting bytes ------------------------------------------------------------------------------------
def view(a: Any, dtype: Any = None) -> Any:
    """``Array.view(dtype)``: the bytes of ``a`` read as ``dtype``; the last axis grows or shrinks by the ratio of
    the itemsizes (a 0-d array keeps its itemsize). Bools go through uint8 and complex numbers through their
    (real, imaginary) float pairs, as in JAX."""
    a = _array("view", a)
    if dtype is None:
        return a
    want, have = canonical_dtype(dtype), aval(a).dtype
    shape = _shape(a)
    if not shape:
        if want.itemsize != have.itemsize:
            raise ValueError("view() of a 0d array is only supported if the itemsize is unchanged.")
        return reshape(view(reshape(a, (1,)), want), ())
    if shape[-1] * have.itemsize % want.itemsize:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of the total size in bytes of "
                         "the last axis of the array.")
    if want == have:
        return a
    if have == np.bool_:
        return view(convert(a, np.dtype(np.uint8)), want)
    if have.kind == "c":
        pairs = stack([jnp.real(a), jnp.imag(a)], axis=-1)
        return view(reshape(pairs, (*shape[:-1], 2 * shape[-1])), want)
    if want == np.bool_:
        return convert(view(a, np.dtype(np.uint8)), want)
    if want.kind == "c":
        parts = view(a, np.dtype(f"f{want.itemsize // 2}"))
        pairs = reshape(parts, (*shape[:-1], _shape(parts)[-1] // 2, 2))
        return lax.complex(pairs[..., 0], pairs[..., 1])
    if have.itemsize == want.itemsize:
        return lax.bitcast_convert_type(a, want)
    if have.itemsize > want.itemsize:  # each item splits into a new last axis, which joins the old one
        return reshape(lax.bitcast_convert_type(a, want), (*shape[:-1], shape[-1] * have.itemsize // want.itemsize))
    ratio = want.itemsize // have.itemsize
    return lax.bitcast_convert_type(reshape(a, (*shape[:-1], shape[-1] // ratio, ratio)), want)


def byteswap(a: Any) -> Any:
    """``Array.byteswap()``: the bytes of each element in reverse order (a complex number's parts each)."""
    a = _array("byteswap", a)
    dtype = aval(a).dtype
    if dtype.kind == "c":
        return lax.complex(byteswap(jnp.real(a)), byteswap(jnp.imag(a)))
    if dtype.itemsize == 1:
        return a
    as_bytes = lax.bitcast_convert_type(a, np.dtype(np.uint8))
    return lax.bitcast_convert_type(lax.rev(as_bytes, (len(_shape(a)),)), dtype)
