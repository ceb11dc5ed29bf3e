"""Indexing primitives: static and dynamic slices, and XLA's gather and scatter.

Semantics are XLA's, because the numpy layer (``x[idx]``, ``x.at[idx]``) and autodiff rely on them: dynamic
starts are clamped so the slice fits; a gather reads one window per index vector; a scatter writes one
window per index vector, and a window that does not fit in the operand is dropped (``FILL_OR_DROP``,
``PROMISE_IN_BOUNDS``) or moved to fit (``CLIP``). The index vector of ``gather``/``scatter`` indices is
always their last axis.

Derivatives follow JAX: slices and gathers are linear and transpose to pads, updates and scatter-adds; a
scatter's updates transpose to the gather of the windows they were written to. Indices get no tangent.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import srcjax.transpiler.primitives.elementwise as ew
import srcjax.transpiler.primitives.shape as sh
from srcjax.transpiler.primitives.ad import Zero, add_tangents, aval_of, instantiate, is_undefined, tangent_aval, zeros
from srcjax.transpiler.primitives.batching import axis_size, moveaxis
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType


def _ints(xs) -> tuple[int, ...]:
    return tuple(int(x) for x in xs)


def _is_int_sequence(xs) -> bool:
    return isinstance(xs, (tuple, list)) and all(isinstance(x, (int, np.integer)) for x in xs)


# -- axis bookkeeping for the batching rules -------------------------------------------------------------
def _insert(seq, index: int, value) -> tuple:
    return (*seq[:index], value, *seq[index:])


def _bump(axes, new: int) -> tuple[int, ...]:
    """Axis numbers after a new axis is inserted at ``new``."""
    return tuple(a + (a >= new) for a in axes)


def _slot(axes, k: int) -> int:
    """A position for a new axis with exactly ``k`` of ``axes`` (numbered without it) before it."""
    return 0 if k == 0 else sorted(axes)[k - 1] + 1


def _broadcast_at(x: Any, axis: int, size: int) -> Any:
    """An unbatched ``x`` repeated ``size`` times along a new axis ``axis``."""
    shape = aval_of(x).shape
    return sh.broadcast_in_dim_p.bind(x, shape=_insert(shape, axis, size),
                                      broadcast_dimensions=_bump(range(len(shape)), axis))


def _batch_at(x: Any, dim: int | None, axis: int, size: int) -> Any:
    """``x`` with its batch axis at ``axis``: moved there, or broadcast along a new axis if unbatched."""
    return _broadcast_at(x, axis, size) if dim is None else moveaxis(x, dim, axis)


def _empty_batch(prim: Primitive, args, dims, params) -> tuple[Any, int]:
    """The result for a batch of no elements, where the batched form would pair an axis of size 0 with a
    window of size 1: zeros of one element's result type with a leading axis of size 0."""
    avals = [aval_of(x) if d is None else aval_of(x).drop_axes((d,)) for x, d in zip(args, dims)]
    out = prim.abstract_eval(*avals, **params)
    return zeros(out.update(shape=(0, *out.shape))), 0


def _index_vectors(starts, dims, size: int) -> Any:
    """Scalar start indices, some batched (shape [size]), as gather/scatter indices of shape [size, n]."""
    columns = [sh.broadcast_in_dim_p.bind(s, shape=(size, 1), broadcast_dimensions=() if d is None else (0,))
               for s, d in zip(starts, dims)]
    return columns[0] if len(columns) == 1 else sh.concatenate_p.bind(*columns, dimension=1)


# -- slice -------------------------------------------------------------------------------------------------
slice_p = Primitive("slice", params=("start_indices", "limit_indices", "strides"))


@slice_p.def_shape
def _slice_shape(x: TensorType, *, start_indices, limit_indices, strides=None) -> TensorType:
    name = "slice"
    starts, limits = _ints(start_indices), _ints(limit_indices)
    steps = (1,) * x.ndim if strides is None else _ints(strides)
    for what, seq in (("start_indices", starts), ("limit_indices", limits), ("strides", steps)):
        check(len(seq) == x.ndim, name, f"{what} {seq} must have one entry per operand axis ({x})", kind="value")
    check(all(s >= 1 for s in steps), name, f"strides {steps} must be positive", kind="value")
    for axis, (lo, hi, n) in enumerate(zip(starts, limits, x.shape)):
        check(0 <= lo <= hi <= n, name,
              f"axis {axis}: need 0 <= start ({lo}) <= limit ({hi}) <= size ({n}) for operand {x}", kind="value")
    # ceil((limit - start) / stride) elements per axis
    return x.update(shape=tuple(-(-(hi - lo) // st) for lo, hi, st in zip(starts, limits, steps)))


@slice_p.def_impl
def _slice_impl(x, *, start_indices, limit_indices, strides=None):
    steps = (1,) * x.ndim if strides is None else strides
    return x[tuple(slice(lo, hi, st) for lo, hi, st in zip(start_indices, limit_indices, steps))]


@slice_p.def_linear
def _slice_transpose(ct, x, *, start_indices, limit_indices, strides=None):
    # the cotangent back in place: zeros before the start, between strided elements and after the last one
    shape = x.aval.shape
    steps = (1,) * len(shape) if strides is None else strides
    config = []
    for lo, n, m, step in zip(start_indices, shape, aval_of(ct).shape, steps):
        span = (m - 1) * step + 1 if m else 0
        config.append((lo, n - lo - span, step - 1))
    return [sh.pad_p.bind(ct, np.zeros((), x.aval.dtype), padding_config=tuple(config))]


@slice_p.def_vmap
def _slice_vmap(args, dims, *, start_indices, limit_indices, strides=None):
    # the batch axis is taken whole
    (x,), (d,) = args, dims
    size = aval_of(x).shape[d]
    steps = None if strides is None else _insert(strides, d, 1)
    return slice_p.bind(x, start_indices=_insert(start_indices, d, 0), limit_indices=_insert(limit_indices, d, size),
                        strides=steps), d


# -- dynamic_slice and dynamic_update_slice ---------------------------------------------------------------
def _check_start_indices(name: str, operand: TensorType, starts: tuple[TensorType, ...]) -> None:
    check(len(starts) == operand.ndim, name,
          f"needs one start index per operand axis: operand {operand} has {operand.ndim}, got {len(starts)}",
          kind="value")
    for axis, start in enumerate(starts):
        check(start.shape == () and start.dtype.kind in "iu", name,
              f"start index for axis {axis} must be an integer scalar, got {start}")
    check(len({s.dtype for s in starts}) <= 1, name,
          f"start indices must have one integer dtype, got {', '.join(str(s) for s in starts)}")


def _clamped_starts(starts, shape, sizes) -> list[int]:
    """XLA moves a start that would make the window overflow: ``clamp(start, 0, size - window)``."""
    return [int(min(max(int(s), 0), n - k)) for s, n, k in zip(starts, shape, sizes)]


dynamic_slice_p = Primitive("dynamic_slice", params=("slice_sizes",))


@dynamic_slice_p.def_shape
def _dynamic_slice_shape(x: TensorType, *starts: TensorType, slice_sizes) -> TensorType:
    name = "dynamic_slice"
    _check_start_indices(name, x, starts)
    sizes = _ints(slice_sizes)
    check(len(sizes) == x.ndim, name, f"slice_sizes {sizes} must have one entry per operand axis ({x})",
          kind="value")
    check(all(0 <= k <= n for k, n in zip(sizes, x.shape)), name,
          f"slice_sizes {sizes} must lie between 0 and the operand's shape {x.shape}", kind="value")
    return x.update(shape=sizes)


@dynamic_slice_p.def_impl
def _dynamic_slice_impl(x, *starts, slice_sizes):
    lows = _clamped_starts(starts, x.shape, slice_sizes)
    return x[tuple(slice(lo, lo + k) for lo, k in zip(lows, slice_sizes))]


@dynamic_slice_p.def_jvp
def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals  # the start indices are integers: no tangent
    out = dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
    g = tangents[0]
    if isinstance(g, Zero):
        return out, Zero(tangent_aval(aval_of(out)))
    return out, dynamic_slice_p.bind(g, *starts, slice_sizes=slice_sizes)


@dynamic_slice_p.def_transpose
def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    # the same (clamped) window of a zero operand receives the cotangent
    return [dynamic_update_slice_p.bind(zeros(tangent_aval(x.aval)), ct, *starts)] + [None] * len(starts)


@dynamic_slice_p.def_vmap
def _dynamic_slice_vmap(args, dims, *, slice_sizes):
    (x, *starts), (d, *start_dims) = args, dims
    size = axis_size(args, dims)
    if all(sd is None for sd in start_dims):  # one window for the whole batch: take the batch axis whole
        zero = np.zeros((), aval_of(starts[0]).dtype if starts else np.int32)
        return dynamic_slice_p.bind(x, *_insert(starts, d, zero), slice_sizes=_insert(slice_sizes, d, size)), d
    # A window per element: a gather of one window per index vector [size, n] (clamped like dynamic_slice),
    # the operand's batch axis (if any) paired with the indices' as a batching axis.
    if size == 0 and d is not None:
        return _empty_batch(dynamic_slice_p, args, dims, dict(slice_sizes=slice_sizes))
    indices = _index_vectors(starts, start_dims, size)
    axes = [a for a in range(aval_of(x).ndim) if a != d]
    numbers = GatherDimensionNumbers(offset_dims=tuple(range(1, len(slice_sizes) + 1)), collapsed_slice_dims=(),
                                     start_index_map=tuple(axes), operand_batching_dims=() if d is None else (d,),
                                     start_indices_batching_dims=() if d is None else (0,))
    sizes = tuple(slice_sizes) if d is None else _insert(slice_sizes, d, 1)
    return gather_p.bind(x, indices, dimension_numbers=numbers, slice_sizes=sizes, mode=GatherScatterMode.CLIP,
                         fill_value=None, indices_are_sorted=False, unique_indices=False), 0


dynamic_update_slice_p = Primitive("dynamic_update_slice")


@dynamic_update_slice_p.def_shape
def _dynamic_update_slice_shape(x: TensorType, update: TensorType, *starts: TensorType) -> TensorType:
    name = "dynamic_update_slice"
    check(update.dtype == x.dtype, name, f"update {update} must have the operand's dtype ({x})")
    check(update.ndim == x.ndim and all(u <= n for u, n in zip(update.shape, x.shape)), name,
          f"update {update} must have the operand's rank and fit inside it ({x})", kind="value")
    _check_start_indices(name, x, starts)
    return x


@dynamic_update_slice_p.def_impl
def _dynamic_update_slice_impl(x, update, *starts):
    lows = _clamped_starts(starts, x.shape, update.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(lo, lo + k) for lo, k in zip(lows, update.shape))] = update
    return out


@dynamic_update_slice_p.def_jvp
def _dynamic_update_slice_jvp(primals, tangents):
    # linear in (operand, update) together; the start indices get no tangent
    x, update, *starts = primals
    out = dynamic_update_slice_p.bind(x, update, *starts)
    gx, gu = tangents[:2]
    if isinstance(gx, Zero) and isinstance(gu, Zero):
        return out, Zero(tangent_aval(aval_of(out)))
    return out, dynamic_update_slice_p.bind(instantiate(gx), instantiate(gu), *starts)


@dynamic_update_slice_p.def_transpose
def _dynamic_update_slice_transpose(ct, x, update, *starts):
    update_aval = aval_of(update)
    # the update's cotangent is the window of ct; the operand's is ct with that window zeroed. (The window is
    # read first, so that nothing reads ct after the update: a backend may then zero the window in place rather
    # than copy ct, which in a loop, such as the backward loop of a scan's stacked outputs, is a copy per trip.)
    ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape) if is_undefined(update) else None
    ct_x = dynamic_update_slice_p.bind(ct, zeros(tangent_aval(update_aval)), *starts) if is_undefined(x) else None
    return [ct_x, ct_update] + [None] * len(starts)


@dynamic_update_slice_p.def_vmap
def _dynamic_update_slice_vmap(args, dims):
    (x, update, *starts), (dx, du, *start_dims) = args, dims
    size = axis_size(args, dims)
    if all(sd is None for sd in start_dims):  # one window for the whole batch: it spans the batch axis
        axis = dx if dx is not None else du
        x, update = _batch_at(x, dx, axis, size), _batch_at(update, du, axis, size)
        zero = np.zeros((), aval_of(starts[0]).dtype if starts else np.int32)
        return dynamic_update_slice_p.bind(x, update, *_insert(starts, axis, zero)), axis
    # A window per element: a scatter of one update window per index vector [size, n] (clamped, as
    # dynamic_update_slice moves its window inside the operand), batch axes paired as batching axes.
    axis = 0 if dx is None else dx
    x = _batch_at(x, dx, axis, size)
    u = 0 if du is None else du  # the updates' one scatter axis; all the others are window axes
    update = _batch_at(update, du, u, size)
    rank = aval_of(x).ndim
    numbers = ScatterDimensionNumbers(update_window_dims=tuple(a for a in range(rank) if a != u),
                                      inserted_window_dims=(),
                                      scatter_dims_to_operand_dims=tuple(a for a in range(rank) if a != axis),
                                      operand_batching_dims=(axis,), scatter_indices_batching_dims=(0,))
    return scatter_p.bind(x, _index_vectors(starts, start_dims, size), update, dimension_numbers=numbers,
                          mode=GatherScatterMode.CLIP, indices_are_sorted=False, unique_indices=True), axis


# -- gather and scatter: parameters ----------------------------------------------------------------------
class GatherScatterMode(enum.Enum):
    """What gather and scatter do with index vectors whose window does not fit in the operand."""

    CLIP = enum.auto()  # move the window inside the operand
    FILL_OR_DROP = enum.auto()  # gather: return fill_value for it; scatter: skip it
    PROMISE_IN_BOUNDS = enum.auto()  # the caller promises it never happens (gather clips, scatter skips)
    ONE_HOT = enum.auto()  # JAX lowers some gathers to one-hot matmuls; not supported here

    @staticmethod
    def from_any(mode: str | GatherScatterMode | None) -> GatherScatterMode:
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode == "clip":
            return GatherScatterMode.CLIP
        if mode is None or mode in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if mode == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if mode == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f"unknown gather/scatter mode {mode!r} (use 'clip', 'fill', 'drop' or 'promise_in_bounds')")

    def __repr__(self) -> str:
        return f"GatherScatterMode.{self.name}"

    __str__ = __repr__


@dataclass(frozen=True)
class GatherDimensionNumbers:
    """XLA's gather dimension numbers (the index vector is the last axis of the indices)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for field in self.__dataclass_fields__:
            object.__setattr__(self, field, _ints(getattr(self, field)))


@dataclass(frozen=True)
class ScatterDimensionNumbers:
    """XLA's scatter dimension numbers (the index vector is the last axis of the indices)."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for field in self.__dataclass_fields__:
            object.__setattr__(self, field, _ints(getattr(self, field)))


def default_fill_value(dtype: np.dtype):
    """What an out-of-bounds gather returns by default: NaN, the most negative int, the largest uint, True."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return True


# -- gather and scatter: checks shared by both -----------------------------------------------------------
def _check_axes(name: str, what: str, axes: tuple[int, ...], rank: int, *, ordered: bool = True) -> None:
    check(all(0 <= a < rank for a in axes), name, f"{what} {axes} out of range for rank {rank}", kind="value")
    check(len(set(axes)) == len(axes), name, f"{what} {axes} repeats an axis", kind="value")
    if ordered:
        check(list(axes) == sorted(axes), name, f"{what} {axes} must be sorted", kind="value")


def _check_index_map(name: str, operand: TensorType, indices: TensorType, index_map: tuple[int, ...],
                     map_name: str, operand_batching: tuple[int, ...], indices_batching: tuple[int, ...],
                     indices_batching_name: str) -> None:
    """The checks on indices, the index map and batching dims that gather and scatter share."""
    # (a ValueError as JAX's, and a TypeError as the dtype error it also is)
    check(indices.dtype.kind in "iu", name, f"indices must be integers, got {indices}", kind="value")
    check(indices.ndim >= 1, name, f"indices must have an index-vector axis (the last); got {indices}", kind="value")
    check(indices.shape[-1] == len(index_map), name,
          f"the index vector (last axis of indices {indices}) has {indices.shape[-1]} entries but {map_name} "
          f"{index_map} names {len(index_map)} operand axes", kind="value")
    _check_axes(name, map_name, index_map, operand.ndim, ordered=False)
    _check_axes(name, "operand_batching_dims", operand_batching, operand.ndim)
    _check_axes(name, indices_batching_name, indices_batching, indices.ndim - 1, ordered=False)
    check(not set(index_map) & set(operand_batching), name,
          f"{map_name} {index_map} and operand_batching_dims {operand_batching} must be disjoint", kind="value")
    check(len(operand_batching) == len(indices_batching), name,
          f"operand_batching_dims {operand_batching} and {indices_batching_name} {indices_batching} must pair up",
          kind="value")
    for od, idx in zip(operand_batching, indices_batching):
        check(operand.shape[od] == indices.shape[idx], name,
              f"batching axis {od} of the operand {operand} and axis {idx} of indices {indices} differ in size",
              kind="value")


def _window_index_arrays(shape, batch_shape, indices, index_map, operand_batching, indices_batching,
                         windowed, window_sizes, mode_clip: bool):
    """Per operand axis, an integer array (broadcastable to ``batch_shape + window``) of positions read.

    ``windowed`` lists the operand axes that keep a window axis (in operand order, sizes ``window_sizes``);
    the others are collapsed/inserted or batching axes (window size 1). Starts are clamped so each window
    fits, which is XLA's behaviour for gather and for a clipping scatter.
    """
    nb, nw = len(batch_shape), len(windowed)
    sizes = [1] * len(shape)
    for axis, k in zip(windowed, window_sizes):
        sizes[axis] = k
    out = []
    for axis, n in enumerate(shape):
        if axis in index_map:
            start = indices[..., index_map.index(axis)]
            if mode_clip:
                start = np.clip(start, 0, max(n - sizes[axis], 0))
            start = start.reshape(batch_shape + (1,) * nw)
        elif axis in operand_batching:
            b = indices_batching[operand_batching.index(axis)]
            start = np.arange(batch_shape[b]).reshape([-1 if i == b else 1 for i in range(nb)] + [1] * nw)
        else:
            start = np.zeros((1,) * (nb + nw), np.int64)
        if axis in windowed:
            j = windowed.index(axis)
            start = start + np.arange(sizes[axis]).reshape([1] * nb + [-1 if i == j else 1 for i in range(nw)])
        out.append(start)
    return out


def _in_bounds(indices, shape, index_map, sizes) -> np.ndarray:
    """Mask over the batch: every start of the index vector lets its window fit (0 <= s <= size - window)."""
    # one index component at a time: NumPy reduces a short last axis slowly (one inner call per vector)
    keep = np.ones(indices.shape[:-1], bool)
    for j, a in enumerate(index_map):
        start = indices[..., j]
        keep &= (start >= 0) & (start <= shape[a] - sizes[a])
    return keep


# -- gather and scatter: the inverse pairs their derivatives use ------------------------------------------
# A gather reads the windows that a scatter with the same indices writes: transposes and JVPs swap them.
# What each does with a window that does not fit decides the partner's mode: a clamping gather (CLIP, or
# no mode) pairs with a clipping scatter, a filling gather with a dropping scatter (filled with 0, so the
# pair stays linear); PROMISE_IN_BOUNDS pairs with itself, as in JAX (a broken promise drops cotangents).
_SCATTER_MODE_FOR_GATHER = {None: GatherScatterMode.CLIP, GatherScatterMode.CLIP: GatherScatterMode.CLIP,
                            GatherScatterMode.FILL_OR_DROP: GatherScatterMode.FILL_OR_DROP,
                            GatherScatterMode.PROMISE_IN_BOUNDS: GatherScatterMode.PROMISE_IN_BOUNDS}
_GATHER_MODE_FOR_SCATTER = {None: GatherScatterMode.FILL_OR_DROP, GatherScatterMode.CLIP: GatherScatterMode.CLIP,
                            GatherScatterMode.FILL_OR_DROP: GatherScatterMode.FILL_OR_DROP,
                            GatherScatterMode.PROMISE_IN_BOUNDS: GatherScatterMode.PROMISE_IN_BOUNDS}


def _scatter_numbers_for(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
                                   scatter_dims_to_operand_dims=dn.start_index_map,
                                   operand_batching_dims=dn.operand_batching_dims,
                                   scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _window_gather(x: Any, indices: Any, updates_shape: tuple[int, ...], *, dimension_numbers: ScatterDimensionNumbers,
                   mode: GatherScatterMode | None, indices_are_sorted: bool = False, unique_indices: bool = False,
                   fill_value: Any = 0) -> Any:
    """For a scatter into ``x``'s shape: the values of ``x`` in the window each update element is written to.

    Windows the scatter drops read ``fill_value``. The result has the updates' shape."""
    dn = dimension_numbers
    gather_numbers = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims, operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    window = iter(updates_shape[u] for u in dn.update_window_dims)
    skipped = dn.inserted_window_dims + dn.operand_batching_dims
    sizes = tuple(1 if axis in skipped else next(window) for axis in range(aval_of(x).ndim))
    gather_mode = _GATHER_MODE_FOR_SCATTER[mode]
    fill = fill_value if gather_mode == GatherScatterMode.FILL_OR_DROP else None
    return gather_p.bind(x, indices, dimension_numbers=gather_numbers, slice_sizes=sizes, mode=gather_mode,
                         fill_value=fill, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def _full(value: Any, aval: TensorType) -> Any:
    return sh.broadcast_in_dim_p.bind(np.array(value, aval.dtype), shape=aval.shape, broadcast_dimensions=())


def _where(mask: Any, x: Any, aval: TensorType) -> Any:
    """``x`` where ``mask`` holds, else 0 (linear in ``x``: the mask is a primal value)."""
    return ew.select_n_p.bind(mask, _full(0, aval), x)


def _scatter_survivors(x_aval: TensorType, indices: Any, updates_aval: TensorType, params: dict) -> tuple[Any, Any]:
    """For a scatter that may repeat indices (so which update lands is up to the implementation): masks of the
    operand elements no update overwrote and of the update elements that landed.

    JAX's trick: scatter a distinct positive id per update window onto zeros with the same scatter, then read
    back where each window went; an update element landed if its own id is there, an operand element
    survived if 0 is."""
    window = params["dimension_numbers"].update_window_dims
    ids_shape = tuple(1 if axis in window else n for axis, n in enumerate(updates_aval.shape))
    count = int(np.prod(ids_shape, dtype=np.int64))
    ids_aval = updates_aval.update(dtype=np.int32 if count < 2**31 - 1 else np.int64, weak_type=False)
    ids = sh.iota_p.bind(dtype=ids_aval.dtype, shape=(count,), dimension=0)
    ids = ew.add_p.bind(ids, _full(1, ids_aval.update(shape=(count,))))
    ids = sh.reshape_p.bind(ids, new_sizes=ids_shape, dimensions=None)
    ids = sh.broadcast_in_dim_p.bind(ids, shape=updates_aval.shape,
                                     broadcast_dimensions=tuple(range(len(ids_shape))))
    written = scatter_p.bind(zeros(x_aval.update(dtype=ids_aval.dtype, weak_type=False)), indices, ids, **params)
    read = _window_gather(written, indices, updates_aval.shape, **params)
    survived = ew.eq_p.bind(written, _full(0, x_aval.update(dtype=ids_aval.dtype, weak_type=False)))
    return survived, ew.eq_p.bind(ids, read)


# -- gather ----------------------------------------------------------------------------------------------
gather_p = Primitive("gather", params=("dimension_numbers", "slice_sizes", "mode", "fill_value",
                                       "indices_are_sorted", "unique_indices"))


@gather_p.def_shape
def _gather_shape(x: TensorType, indices: TensorType, *, dimension_numbers, slice_sizes, mode=None,
                  fill_value=None, indices_are_sorted=False, unique_indices=False) -> TensorType:
    name = "gather"
    dn = dimension_numbers
    check(isinstance(dn, GatherDimensionNumbers), name,
          f"dimension_numbers must be a GatherDimensionNumbers, got {type(dn).__name__}")
    check(mode is None or isinstance(mode, GatherScatterMode), name, f"mode must be a GatherScatterMode, got {mode!r}")
    check(mode != GatherScatterMode.ONE_HOT, name, "mode ONE_HOT is not supported", kind="value")
    sizes = _ints(slice_sizes)
    batch_shape = indices.shape[:-1]
    out_rank = len(dn.offset_dims) + max(indices.ndim - 1, 0)
    _check_index_map(name, x, indices, dn.start_index_map, "start_index_map", dn.operand_batching_dims,
                     dn.start_indices_batching_dims, "start_indices_batching_dims")
    _check_axes(name, "offset_dims", dn.offset_dims, out_rank)
    _check_axes(name, "collapsed_slice_dims", dn.collapsed_slice_dims, x.ndim)
    check(not set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims), name,
          f"collapsed_slice_dims {dn.collapsed_slice_dims} and operand_batching_dims {dn.operand_batching_dims} "
          "must be disjoint", kind="value")
    check(len(sizes) == x.ndim, name, f"slice_sizes {sizes} must have one entry per operand axis ({x})", kind="value")
    check(all(0 <= k <= n for k, n in zip(sizes, x.shape)), name,
          f"slice_sizes {sizes} must lie between 0 and the operand's shape {x.shape}", kind="value")
    for axis in dn.collapsed_slice_dims + dn.operand_batching_dims:
        check(sizes[axis] == 1, name, f"axis {axis} is collapsed or batching, so its slice size must be 1, "
              f"got {sizes[axis]}", kind="value")
    windowed = [a for a in range(x.ndim) if a not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    check(len(windowed) == len(dn.offset_dims), name,
          f"offset_dims {dn.offset_dims} must name one output axis per operand axis that is neither collapsed nor "
          f"batching ({len(windowed)} for operand {x})", kind="value")
    window = iter(sizes[a] for a in windowed)
    batch = iter(batch_shape)
    shape = tuple(next(window) if i in dn.offset_dims else next(batch) for i in range(out_rank))
    return x.update(shape=shape)


@gather_p.def_impl
def _gather_impl(x, indices, *, dimension_numbers, slice_sizes, mode=None, fill_value=None,
                 indices_are_sorted=False, unique_indices=False):
    dn = dimension_numbers
    indices = indices.astype(np.int64)
    batch_shape, nb = indices.shape[:-1], indices.ndim - 1
    windowed = [a for a in range(x.ndim) if a not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    # Axes read whole need no index array: move them last and slice them with ':' (a view, no copy).
    whole = [a for a in windowed if slice_sizes[a] == x.shape[a]]
    picked = [a for a in range(x.ndim) if a not in whole]
    part = [a for a in windowed if a not in whole]
    arrays = _window_index_arrays(x.shape, batch_shape, indices, dn.start_index_map, dn.operand_batching_dims,
                                  dn.start_indices_batching_dims, part, [slice_sizes[a] for a in part], True)
    moved = np.transpose(x, picked + whole)
    out = moved[tuple(arrays[a] for a in picked)]
    out = np.broadcast_to(out, batch_shape + tuple(slice_sizes[a] for a in part + whole))
    # window axes back to operand order, then to their output positions
    order = [nb + (part + whole).index(a) for a in windowed]
    out = np.transpose(out, list(range(nb)) + order)
    out = np.moveaxis(out, list(range(nb, nb + len(windowed))), list(dn.offset_dims))
    if mode == GatherScatterMode.FILL_OR_DROP:
        fill = default_fill_value(x.dtype) if fill_value is None else fill_value
        mask = _in_bounds(indices, x.shape, dn.start_index_map, slice_sizes)
        mask = np.expand_dims(mask, tuple(dn.offset_dims))  # batch axes sit where the output's do
        out = np.where(mask, out, np.asarray(fill).astype(x.dtype))
    return out if out.flags.c_contiguous else np.array(out, order="C")  # not ascontiguousarray: it makes 0-d 1-d


@gather_p.def_jvp
def _gather_jvp(primals, tangents, **params):
    x, indices = primals
    out = gather_p.bind(x, indices, **params)
    g = tangents[0]
    if isinstance(g, Zero):
        return out, Zero(tangent_aval(aval_of(out)))
    # windows out of bounds are filled with a constant: their tangent is 0, not the fill value
    fill = 0 if params.get("mode") == GatherScatterMode.FILL_OR_DROP else params.get("fill_value")
    return out, gather_p.bind(g, indices, **{**params, "fill_value": fill})


@gather_p.def_transpose
def _gather_transpose(ct, x, indices, *, dimension_numbers, slice_sizes, mode=None, fill_value=None,
                      indices_are_sorted=False, unique_indices=False):
    # each window read is added back where it was read from (repeated indices accumulate)
    out = scatter_add_p.bind(zeros(tangent_aval(x.aval)), indices, ct,
                             dimension_numbers=_scatter_numbers_for(dimension_numbers),
                             mode=_SCATTER_MODE_FOR_GATHER[mode], indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices)
    return [out, None]


@gather_p.def_vmap
def _gather_vmap(args, dims, *, dimension_numbers, slice_sizes, **params):
    (x, indices), (dx, di) = args, dims
    dn, size = dimension_numbers, axis_size(args, dims)
    offset_dims, sizes = dn.offset_dims, tuple(slice_sizes)
    collapsed, index_map, operand_batching = dn.collapsed_slice_dims, dn.start_index_map, dn.operand_batching_dims
    indices_batching = dn.start_indices_batching_dims
    if dx is not None:  # operand axes from dx on move up by one
        collapsed, index_map = _bump(collapsed, dx), _bump(index_map, dx)
        operand_batching = _bump(operand_batching, dx)
    if di is None:
        # The operand's batch axis is one more window axis, read whole; its window lands in the output after
        # the windows of the operand axes before it.
        windowed_before = sum(1 for a in range(dx) if a not in collapsed + operand_batching)
        out_dim = _slot(offset_dims, windowed_before)
        numbers = GatherDimensionNumbers(tuple(sorted((*_bump(offset_dims, out_dim), out_dim))), collapsed,
                                         index_map, operand_batching, indices_batching)
        return gather_p.bind(x, indices, dimension_numbers=numbers, slice_sizes=_insert(sizes, dx, size),
                             **params), out_dim
    if size == 0 and dx is not None:
        return _empty_batch(gather_p, args, dims, dict(dimension_numbers=dn, slice_sizes=slice_sizes, **params))
    index_rank = aval_of(indices).ndim
    if di == index_rank - 1:  # the index vector must stay last: the batch axis goes first
        indices, di = moveaxis(indices, di, 0), 0
    # The indices' batch axis is one more batch axis of the output, after the output batch axes of the index
    # axes before it; an operand batch axis pairs with it as a batching axis.
    out_rank = len(offset_dims) + index_rank - 2  # of one element's result
    batch_positions = [a for a in range(out_rank) if a not in offset_dims]
    out_dim = _slot(batch_positions, di)
    indices_batching = _bump(indices_batching, di)
    if dx is not None:
        pairs = sorted([*zip(operand_batching, indices_batching), (dx, di)])
        operand_batching, indices_batching = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        sizes = _insert(sizes, dx, 1)
    numbers = GatherDimensionNumbers(_bump(offset_dims, out_dim), collapsed, index_map, operand_batching,
                                     indices_batching)
    return gather_p.bind(x, indices, dimension_numbers=numbers, slice_sizes=sizes, **params), out_dim


# -- scatter ---------------------------------------------------------------------------------------------
def _scatter_shape(name: str, kinds: str):
    def rule(x: TensorType, indices: TensorType, updates: TensorType, *, dimension_numbers, mode=None,
             indices_are_sorted=False, unique_indices=False) -> TensorType:
        dn = dimension_numbers
        check(isinstance(dn, ScatterDimensionNumbers), name,
              f"dimension_numbers must be a ScatterDimensionNumbers, got {type(dn).__name__}")
        check(mode is None or isinstance(mode, GatherScatterMode), name,
              f"mode must be a GatherScatterMode, got {mode!r}")
        check(mode != GatherScatterMode.ONE_HOT, name, "mode ONE_HOT is not supported", kind="value")
        check(updates.dtype == x.dtype, name, f"updates {updates} must have the operand's dtype ({x})")
        check(x.dtype.kind in kinds, name, f"does not accept {x.dtype.name} operands")
        _check_index_map(name, x, indices, dn.scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims",
                         dn.operand_batching_dims, dn.scatter_indices_batching_dims, "scatter_indices_batching_dims")
        _check_axes(name, "update_window_dims", dn.update_window_dims, updates.ndim)
        _check_axes(name, "inserted_window_dims", dn.inserted_window_dims, x.ndim)
        check(not set(dn.inserted_window_dims) & set(dn.operand_batching_dims), name,
              f"inserted_window_dims {dn.inserted_window_dims} and operand_batching_dims "
              f"{dn.operand_batching_dims} must be disjoint", kind="value")
        windowed = [a for a in range(x.ndim) if a not in dn.inserted_window_dims + dn.operand_batching_dims]
        check(len(windowed) == len(dn.update_window_dims), name,
              f"update_window_dims {dn.update_window_dims} must name one updates axis per operand axis that is "
              f"neither inserted nor batching ({len(windowed)} for operand {x})", kind="value")
        for axis, u in zip(windowed, dn.update_window_dims):
            check(updates.shape[u] <= x.shape[axis], name,
                  f"window axis {u} of updates {updates} is larger than operand axis {axis} ({x})", kind="value")
        scatter_axes = [updates.shape[i] for i in range(updates.ndim) if i not in dn.update_window_dims]
        check(tuple(scatter_axes) == indices.shape[:-1], name,
              f"the non-window axes of updates {updates} must match the batch axes of indices {indices}",
              kind="value")
        return x

    return rule


def _scatter_impl(combine: Callable | None):
    """An implementation writing each update window with ``combine`` (a ufunc's ``.at``), or replacing."""

    def impl(x, indices, updates, *, dimension_numbers, mode=None, indices_are_sorted=False,
             unique_indices=False):
        dn = dimension_numbers
        indices = indices.astype(np.int64)
        batch_shape = indices.shape[:-1]
        windowed = [a for a in range(x.ndim) if a not in dn.inserted_window_dims + dn.operand_batching_dims]
        window_sizes = [updates.shape[u] for u in dn.update_window_dims]
        scatter_axes = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
        updates = np.transpose(updates, scatter_axes + list(dn.update_window_dims))  # batch axes, then window
        sizes = [1] * x.ndim
        for axis, k in zip(windowed, window_sizes):
            sizes[axis] = k
        if mode == GatherScatterMode.CLIP:  # move each window inside the operand
            upper = [max(x.shape[a] - sizes[a], 0) for a in dn.scatter_dims_to_operand_dims]
            indices = np.clip(indices, 0, np.array(upper, np.int64))
        arrays = _window_index_arrays(x.shape, batch_shape, indices, dn.scatter_dims_to_operand_dims,
                                      dn.operand_batching_dims, dn.scatter_indices_batching_dims, windowed,
                                      window_sizes, False)
        # windows that do not fit are dropped
        keep = _in_bounds(indices, x.shape, dn.scatter_dims_to_operand_dims, sizes)
        arrays = [np.broadcast_to(a, updates.shape) for a in arrays]
        if not keep.all():
            keep = np.broadcast_to(keep.reshape(batch_shape + (1,) * len(windowed)), updates.shape)
            arrays, updates = [a[keep] for a in arrays], updates[keep]
        # one flat position per update element: ufunc.at is fastest on a 1-d target
        flat = np.ravel_multi_index(tuple(arrays), x.shape) if x.ndim else np.zeros(updates.shape, np.int64)
        out = np.array(x, copy=True, order="C")  # C order: reshape(-1) must be a view (x may be a broadcast)
        if combine is None:
            out.reshape(-1)[flat] = updates
        else:  # in order, in x's dtype, as XLA's and the compiled scatters combine (a sum of float updates in
            # float64 first, as np.bincount's, rounds differently where an index repeats)
            combine(out.reshape(-1), flat, updates)
        return out

    return impl


_SCATTER_PARAMS = ("dimension_numbers", "mode", "indices_are_sorted", "unique_indices")


def _scatter_vmap(prim: Primitive):
    """Batching shared by the scatters: the result is batched where the operand is (an unbatched operand is
    broadcast first). Batched indices pair their batch axis with the operand's as batching axes; with
    unbatched indices the batch axis is one more window axis, written whole."""

    def rule(args, dims, *, dimension_numbers, **params):
        (x, indices, updates), (dx, di, du) = args, dims
        dn, size = dimension_numbers, axis_size(args, dims)
        axis = 0 if dx is None else dx
        x = _batch_at(x, dx, axis, size)
        inserted, index_map = _bump(dn.inserted_window_dims, axis), _bump(dn.scatter_dims_to_operand_dims, axis)
        operand_batching, indices_batching = _bump(dn.operand_batching_dims, axis), dn.scatter_indices_batching_dims
        window_dims = dn.update_window_dims
        update_rank = aval_of(updates).ndim + (du is None)
        if di is None:
            # the updates' batch axis is the window axis of operand axis ``axis``: after the window axes of
            # the operand axes before it
            windowed_before = sum(1 for a in range(axis) if a not in inserted + operand_batching)
            keep = du is not None and sum(1 for w in window_dims if w < du) == windowed_before
            u = du if keep else _slot(window_dims, windowed_before)
            window_dims = tuple(sorted((*_bump(window_dims, u), u)))
        else:
            index_rank = aval_of(indices).ndim
            if di == index_rank - 1:  # the index vector must stay last
                indices, di = moveaxis(indices, di, 0), 0
            # the updates' batch axis is the scatter axis matching the indices' batch axis
            scatter_axes = [a for a in range(update_rank - 1) if a not in window_dims]
            keep = du is not None and sum(1 for a in scatter_axes if a < du) == di
            u = du if keep else _slot(scatter_axes, di)
            window_dims = _bump(window_dims, u)
            indices_batching = _bump(indices_batching, di)
            pairs = sorted([*zip(operand_batching, indices_batching), (axis, di)])
            operand_batching, indices_batching = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        updates = _batch_at(updates, du, u, size)
        numbers = ScatterDimensionNumbers(window_dims, inserted, index_map, operand_batching, indices_batching)
        return prim.bind(x, indices, updates, dimension_numbers=numbers, **params), axis

    return rule


# -- scatter: each update window replaces what it covers ---------------------------------------------------
scatter_p = Primitive("scatter", params=_SCATTER_PARAMS)
scatter_p.def_shape(_scatter_shape("scatter", "biufc"))
scatter_p.def_impl(_scatter_impl(None))
scatter_p.def_vmap(_scatter_vmap(scatter_p))


@scatter_p.def_jvp
def _scatter_jvp(primals, tangents, **params):
    x, indices, updates = primals
    gx, gu = tangents[0], tangents[2]
    if isinstance(gx, Zero) and isinstance(gu, Zero):
        out = scatter_p.bind(x, indices, updates, **params)
        return out, Zero(tangent_aval(aval_of(out)))
    if params.get("unique_indices"):  # linear in (operand, updates) together
        return scatter_p.bind(x, indices, updates, **params), scatter_p.bind(instantiate(gx), indices,
                                                                             instantiate(gu), **params)
    # With repeated indices the landing update is the implementation's choice: find it, mask off the rest,
    # and build the output and its tangent with scatter-adds of the masked values, so that they agree.
    x_aval, u_aval = aval_of(x), aval_of(updates)
    survived, landed = _scatter_survivors(x_aval, indices, u_aval, params)
    out = scatter_add_p.bind(_where(survived, x, x_aval), indices, _where(landed, updates, u_aval), **params)
    t_x, t_u = tangent_aval(x_aval), tangent_aval(u_aval)
    tangent = scatter_add_p.bind(_where(survived, instantiate(gx), t_x), indices,
                                 _where(landed, instantiate(gu), t_u), **params)
    return out, tangent


@scatter_p.def_transpose
def _scatter_transpose(ct, x, indices, updates, **params):
    u_aval = aval_of(updates)
    # the operand's cotangent is ct where no update landed; an update's is ct where it landed
    ct_x = scatter_p.bind(ct, indices, zeros(tangent_aval(u_aval)), **params) if is_undefined(x) else None
    ct_u = None
    if is_undefined(updates):
        ct_u = _window_gather(ct, indices, u_aval.shape, **params)
        if not params.get("unique_indices"):
            _, landed = _scatter_survivors(aval_of(x), indices, u_aval, params)
            ct_u = _where(landed, ct_u, tangent_aval(u_aval))
    return [ct_x, None, ct_u]


# -- scatter_add: each update window is added (bool: logical or) ------------------------------------------
scatter_add_p = Primitive("scatter_add", params=_SCATTER_PARAMS)
scatter_add_p.def_shape(_scatter_shape("scatter_add", "biufc"))
scatter_add_p.def_impl(_scatter_impl(np.add.at))
scatter_add_p.def_vmap(_scatter_vmap(scatter_add_p))


@scatter_add_p.def_jvp
def _scatter_add_jvp(primals, tangents, **params):
    x, indices, updates = primals
    out = scatter_add_p.bind(x, indices, updates, **params)
    gx, gu = tangents[0], tangents[2]
    if isinstance(gx, Zero) and isinstance(gu, Zero):
        return out, Zero(tangent_aval(aval_of(out)))
    return out, scatter_add_p.bind(instantiate(gx), indices, instantiate(gu), **params)


@scatter_add_p.def_transpose
def _scatter_add_transpose(ct, x, indices, updates, **params):
    # d out / d operand is the identity; each update element's cotangent is ct where it was added (0 if dropped)
    ct_u = _window_gather(ct, indices, aval_of(updates).shape, **params) if is_undefined(updates) else None
    return [ct if is_undefined(x) else None, None, ct_u]


# -- scatter_mul: each update window multiplies what it covers (bool: logical and) ------------------------
scatter_mul_p = Primitive("scatter_mul", params=_SCATTER_PARAMS)
scatter_mul_p.def_shape(_scatter_shape("scatter_mul", "biufc"))
scatter_mul_p.def_impl(_scatter_impl(np.multiply.at))
scatter_mul_p.def_vmap(_scatter_vmap(scatter_mul_p))


@scatter_mul_p.def_jvp
def _scatter_mul_jvp(primals, tangents, **params):
    x, indices, updates = primals
    out = scatter_mul_p.bind(x, indices, updates, **params)
    gx, gu = tangents[0], tangents[2]
    tangent = Zero(tangent_aval(aval_of(out)))
    if not isinstance(gx, Zero):  # out = x * (product of the updates landing there): linear in x
        tangent = scatter_mul_p.bind(gx, indices, updates, **params)
    if not isinstance(gu, Zero):
        if not params.get("unique_indices"):
            raise NotImplementedError("scatter_mul: the derivative with respect to the updates is only implemented "
                                      "with unique_indices=True (as in JAX)")
        # one update per element: d out = x * d update where it landed
        scattered = scatter_add_p.bind(zeros(tangent_aval(aval_of(x))), indices, gu, **params)
        tangent = add_tangents(tangent, ew.mul_p.bind(x, scattered))
    return out, tangent


@scatter_mul_p.def_transpose
def _scatter_mul_transpose(ct, x, indices, updates, **params):
    # linear in the operand only: a diagonal scaling by the products of the updates, its own transpose
    if is_undefined(updates):
        raise NotImplementedError("scatter_mul is not linear in its updates; it has no transpose for them")
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


# -- scatter_min and scatter_max: each update window keeps the smaller / larger ---------------------------
def _scatter_extremum_jvp(prim: Primitive):
    """The tangent of the value that wins at each element; tied winners (the operand and the updates equal to
    the result) share it equally, as JAX averages them."""

    def rule(primals, tangents, **params):
        x, indices, updates = primals
        out = prim.bind(x, indices, updates, **params)
        gx, gu = tangents[0], tangents[2]
        if isinstance(gx, Zero) and isinstance(gu, Zero):
            return out, Zero(tangent_aval(aval_of(out)))
        x_aval, u_aval = aval_of(x), aval_of(updates)
        # NaN for dropped windows: they never tie with an update
        won = ew.eq_p.bind(updates, _window_gather(out, indices, u_aval.shape, fill_value=np.nan, **params))
        kept = ew.eq_p.bind(x, out)
        ones, none = _full(1, x_aval.strong()), _full(0, x_aval.strong())
        ties = scatter_add_p.bind(ew.select_n_p.bind(kept, none, ones), indices,
                                  ew.select_n_p.bind(won, _full(0, u_aval.strong()), _full(1, u_aval.strong())),
                                  **params)
        # no winner when the result is NaN: tangent 0, as in JAX
        ties = ew.select_n_p.bind(ew.eq_p.bind(ties, none), ties, ones)
        t_x, t_u = tangent_aval(x_aval), tangent_aval(u_aval)
        total = scatter_add_p.bind(_where(kept, instantiate(gx), t_x), indices, _where(won, instantiate(gu), t_u),
                                   **params)
        return out, ew.div_p.bind(total, ties)

    return rule


scatter_min_p = Primitive("scatter_min", params=_SCATTER_PARAMS)
scatter_min_p.def_shape(_scatter_shape("scatter_min", "biuf"))
scatter_min_p.def_impl(_scatter_impl(np.minimum.at))
scatter_min_p.def_jvp(_scatter_extremum_jvp(scatter_min_p))
scatter_min_p.def_vmap(_scatter_vmap(scatter_min_p))
scatter_min_p.def_unsupported("transpose", "not linear")

scatter_max_p = Primitive("scatter_max", params=_SCATTER_PARAMS)
scatter_max_p.def_shape(_scatter_shape("scatter_max", "biuf"))
scatter_max_p.def_impl(_scatter_impl(np.maximum.at))
scatter_max_p.def_jvp(_scatter_extremum_jvp(scatter_max_p))
scatter_max_p.def_vmap(_scatter_vmap(scatter_max_p))
scatter_max_p.def_unsupported("transpose", "not linear")

register_module(globals())
