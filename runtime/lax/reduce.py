"""``lax``'s reductions: over axes, arg-reductions, cumulative scans, sorting, top-k, windowed reductions,
and the generic ``lax.reduce`` / ``lax.reduce_window`` that take a reducing computation.

Signatures are JAX's. A generic reduction whose computation is one of the monoids (``lax.add``,
``lax.mul``, ``lax.max``, ``lax.min``, the bitwise ``and``/``or``/``xor``, or anything that binds just that
primitive, such as ``jnp.maximum`` or ``lambda x, y: x + y``) becomes the matching primitive; an init value
that is not the monoid's identity is combined once into every result, as XLA does. Other computations
are folded element by element (``lax.reduce`` only).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.lax.shape import broadcast_in_dim, reshape, transpose
from srcjax.runtime.numpy._core import aval, convert, is_arraylike, is_concrete
from srcjax.runtime.tree_util import PyTreeDef, tree_flatten, tree_unflatten, treedef_is_leaf
from srcjax.transpiler.array_methods import ArrayMethods
from srcjax.transpiler.ir import ConcretizationError
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives import reduce as rp
from srcjax.transpiler.primitives.indexing import slice_p
from srcjax.transpiler.types import TensorType

__all__ = [
    "approx_max_k", "approx_min_k", "argmax", "argmin", "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum",
    "padtype_to_pads", "reduce",
    "reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_prod", "reduce_sum", "reduce_window",
    "reduce_window_shape_tuple", "reduce_xor", "sort", "sort_key_val", "top_k",
]

_PY_SCALARS = (bool, int, float, complex)


def _ints(xs: Any, name: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(d) for d in xs)
    except TypeError as e:  # (a traced one stays a ConcretizationError: a loop whose index it is retries unrolled)
        raise (ConcretizationError if isinstance(e, ConcretizationError) else TypeError)(
            f"lax.{name}: {what} must be a sequence of ints, got {xs!r}") from None


def _check(x: Any, name: str) -> Any:
    if not is_arraylike(x):
        raise TypeError(f"lax.{name}: expected an array or a scalar, got {type(x).__name__}")
    return x


def _axis(axis: int, ndim: int, name: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"lax.{name}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


# -- reductions over axes ----------------------------------------------------------------------------------
def _reducer(prim: core.Primitive):
    def reduce_fn(operand: Any, axes: Sequence[int], **kwargs: Any) -> Any:
        return prim.bind(_check(operand, prim.name), axes=_ints(axes, prim.name, "axes"))

    reduce_fn.__name__ = prim.name
    reduce_fn.__doc__ = f"``{prim.name}(operand, axes)``: reduces ``operand`` over ``axes`` (non-negative)."
    return reduce_fn


reduce_sum = _reducer(rp.reduce_sum_p)
reduce_prod = _reducer(rp.reduce_prod_p)
reduce_max = _reducer(rp.reduce_max_p)
reduce_min = _reducer(rp.reduce_min_p)
reduce_and = _reducer(rp.reduce_and_p)
reduce_or = _reducer(rp.reduce_or_p)
reduce_xor = _reducer(rp.reduce_xor_p)


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """The index of the first largest element along ``axis`` (of the first NaN, if any)."""
    index_dtype = dtypes.canonicalize_dtype(dtypes.to_dtype(index_dtype))
    return rp.argmax_p.bind(_check(operand, "argmax"), axes=(operator.index(axis),), index_dtype=index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """The index of the first smallest element along ``axis`` (of the first NaN, if any)."""
    index_dtype = dtypes.canonicalize_dtype(dtypes.to_dtype(index_dtype))
    return rp.argmin_p.bind(_check(operand, "argmin"), axes=(operator.index(axis),), index_dtype=index_dtype)


# -- cumulative scans ---------------------------------------------------------------------------------------
def _scanner(prim: core.Primitive):
    def scan_fn(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        return prim.bind(_check(operand, prim.name), axis=operator.index(axis), reverse=bool(reverse))

    scan_fn.__name__ = prim.name
    scan_fn.__doc__ = f"``{prim.name}(operand, axis=0, reverse=False)``: running reduction along ``axis``."
    return scan_fn


cumsum = _scanner(rp.cumsum_p)
cumprod = _scanner(rp.cumprod_p)
cummax = _scanner(rp.cummax_p)
cummin = _scanner(rp.cummin_p)
cumlogsumexp = _scanner(rp.cumlogsumexp_p)


# -- sorting ------------------------------------------------------------------------------------------------
def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sorts along ``dimension``; a sequence of operands is sorted together by its first ``num_keys``."""
    single = not isinstance(operand, (list, tuple))
    operands = [operand] if single else list(operand)
    if not operands:
        raise ValueError("lax.sort: needs at least one operand")
    for x in operands:
        _check(x, "sort")
    dimension = _axis(dimension, len(aval(operands[0]).shape), "sort")
    out = rp.sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable), num_keys=operator.index(num_keys))
    return out[0] if single else tuple(out)


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True) -> tuple[Any, Any]:
    """Sorts ``keys`` along ``dimension`` and applies the same permutation to ``values``."""
    return sort((keys, values), dimension, is_stable, num_keys=1)


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The ``k`` largest elements along ``axis``, largest first, and their int32 indices."""
    ndim = len(aval(_check(operand, "top_k")).shape)
    if ndim == 0:
        raise ValueError("lax.top_k: needs an operand of rank >= 1, got a scalar")
    axis = _axis(axis, ndim, "top_k")
    k = operator.index(k)
    if axis == ndim - 1:
        return tuple(rp.top_k_p.bind(operand, k=k))
    perm = tuple(a for a in range(ndim) if a != axis) + (axis,)
    back = tuple(int(p) for p in np.argsort(perm))
    values, indices = rp.top_k_p.bind(transpose(operand, perm), k=k)
    return transpose(values, back), transpose(indices, back)


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True) -> list[Any]:
    """The ``k`` largest elements along ``reduction_dimension`` and their int32 indices, exactly (as JAX on
    CPU: the recall is 1); NaN counts as the largest. Without ``aggregate_to_topk``, every element, sorted."""
    return _approx_k("approx_max_k", operand, k, reduction_dimension, aggregate_to_topk, largest=True)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True) -> list[Any]:
    """The ``k`` smallest elements along ``reduction_dimension`` and their int32 indices, exactly; NaN counts
    as the smallest (as JAX on CPU)."""
    return _approx_k("approx_min_k", operand, k, reduction_dimension, aggregate_to_topk, largest=False)


def _approx_k(name: str, operand: Any, k: int, dimension: int, aggregate: bool, largest: bool) -> list[Any]:
    from srcjax.runtime import numpy as jnp

    typ = aval(_check(operand, name))
    if not np.issubdtype(typ.dtype, np.floating):
        raise ValueError(f"lax.{name}: operand must be a floating type, got {typ.dtype}")
    if not typ.shape:
        raise ValueError(f"lax.{name}: needs an operand of rank >= 1, got a scalar")
    dimension = _axis(dimension, len(typ.shape), name)
    k, size = operator.index(k), typ.shape[dimension]
    if not 0 <= k <= size:
        raise ValueError(f"lax.{name}: k must be smaller than the size of reduction_dim {size}, got {k}")
    # (top_k of the negation for the smallest; NaN made positive there, so that it comes first either way)
    keys = operand if largest else jnp.where(jnp.isnan(operand), jnp.nan, -operand)
    _, indices = top_k(keys, k if aggregate else size, axis=dimension)
    return [jnp.take_along_axis(operand, indices, axis=dimension), indices]


# -- recognising a monoid computation -----------------------------------------------------------------------
_MONOIDS = {  # elementwise primitive -> (reduction, windowed reduction or None, name of its identity)
    ew.add_p: (rp.reduce_sum_p, rp.reduce_window_sum_p, "sum"),
    ew.mul_p: (rp.reduce_prod_p, None, "prod"),
    ew.max_p: (rp.reduce_max_p, rp.reduce_window_max_p, "max"),
    ew.min_p: (rp.reduce_min_p, rp.reduce_window_min_p, "min"),
    ew.and_p: (rp.reduce_and_p, None, "and"),
    ew.or_p: (rp.reduce_or_p, None, "or"),
    ew.xor_p: (rp.reduce_xor_p, None, "xor"),
}


class _Probe(ArrayMethods):
    """A stand-in value with a type and no data, handed to a computation to see what it binds."""

    __slots__ = ("aval",)

    def __init__(self, typ: TensorType):
        self.aval = typ

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return self.aval.ndim


class _Recorder(core.Interpreter):
    def __init__(self) -> None:
        self.ops: list[tuple[core.Primitive, tuple, Any]] = []

    def process(self, prim, operands, params):
        out = prim.abstract_eval(*(aval(x) for x in operands), **params)
        result = [_Probe(t) for t in out] if prim.multiple_results else _Probe(out)
        self.ops.append((prim, tuple(operands), result))
        return result


def _monoid(computation: Callable, typ: TensorType) -> core.Primitive | None:
    """The monoid primitive ``computation`` binds on two scalars of ``typ``, if that is all it does."""
    x, y = _Probe(typ.update(shape=())), _Probe(typ.update(shape=()))
    recorder = _Recorder()
    try:
        with core.interpreting(recorder):
            out = computation(x, y)
    except Exception:  # noqa: BLE001 - a computation we cannot probe is simply not a monoid
        return None
    if len(recorder.ops) != 1:
        return None
    prim, operands, result = recorder.ops[0]
    if prim not in _MONOIDS or result is not out or {id(o) for o in operands} != {id(x), id(y)}:
        return None
    return prim


def _is_identity(init: Any, op: str, dtype: np.dtype) -> bool:
    """Whether ``init`` is known (statically) to be the identity of ``op``: then it need not be applied."""
    if not is_concrete(init):
        return False
    value = np.asarray(init)
    return value.shape == () and bool(value.astype(dtype) == rp._identity(op, dtype))


def _scalar_init(init: Any, dtype: np.dtype, name: str) -> Any:
    if isinstance(init, float) and np.isinf(init) and np.dtype(dtype).kind in "iu":
        # JAX takes -inf and inf as the identities of max and min over integers: the dtype's extremes
        info = np.iinfo(dtype)
        return np.asarray(info.max if init > 0 else info.min, dtype)
    if isinstance(init, _PY_SCALARS):
        return convert(init, dtype)
    typ = aval(_check(init, name))
    if typ.shape != () or typ.dtype != dtype:
        raise TypeError(f"lax.{name}: init value must be a scalar of the operand's dtype {dtype.name}, got {typ}")
    return init


def _combine_init(prim: core.Primitive, result: Any, init: Any, op: str, dtype: np.dtype) -> Any:
    if _is_identity(init, op, dtype):
        return result
    return prim.bind(result, broadcast_in_dim(init, aval(result).shape, ()))


# -- generic reduce -----------------------------------------------------------------------------------------
def reduce(operands: Any, init_values: Any, computation: Callable[[Any, Any], Any], dimensions: Sequence[int],
           out_sharding=None) -> Any:
    """Reduces ``operands`` over ``dimensions`` with ``computation`` starting from ``init_values``.

    ``operands`` is an array or a pytree of arrays (then ``init_values`` has the same structure and
    ``computation`` takes and returns such trees).
    """
    xs, inits, tree = _operand_trees("reduce", operands, init_values)
    dims = _ints(dimensions, "reduce", "dimensions")
    if treedef_is_leaf(tree):  # a single array
        typ = aval(xs[0])
        prim = _monoid(computation, typ)
        if prim is not None:
            reduction, _, op = _MONOIDS[prim]
            return _combine_init(prim, reduction.bind(xs[0], axes=dims), inits[0], op, typ.dtype)

    combine, out_tree = _on_leaves(computation, tree, "reduce")
    return out_tree(_fold(xs, inits, combine, dims))


def _operand_trees(name: str, operands: Any, init_values: Any) -> tuple[list, list, PyTreeDef]:
    """The operands' and init values' leaves (the init values as scalars of the operands' dtypes), and their
    one tree structure."""
    xs, tree = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"lax.{name}: the operands {tree} and the init values {init_tree} must have one tree "
                         "structure")
    types = [aval(_check(x, name)) for x in xs]
    return xs, [_scalar_init(v, t.dtype, name) for v, t in zip(inits, types, strict=True)], tree


def _on_leaves(computation: Callable, tree: PyTreeDef, name: str) -> tuple[Callable, Callable]:
    """``computation`` of two trees as a function of their leaves, and a function that puts results into the
    structure the computation returns (JAX's: a list of operands in, a tuple out)."""
    out_trees = []

    def combine(a: Sequence, b: Sequence) -> list:
        out, out_tree = tree_flatten(computation(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        if out_tree.num_leaves != tree.num_leaves:
            raise ValueError(f"lax.{name}: the computation must return as many values as there are operands, "
                             f"{tree.num_leaves}, got {out_tree}")
        out_trees.append(out_tree)
        return out

    return combine, lambda leaves: tree_unflatten(out_trees[0] if out_trees else tree, leaves)


def _fold(xs: list[Any], inits: list[Any], computation: Callable, dims: tuple[int, ...]) -> list[Any]:
    """``computation`` applied to the reduced elements one at a time (any computation, unrolled)."""
    shape = aval(xs[0]).shape
    if any(aval(x).shape != shape for x in xs):
        raise ValueError(f"lax.reduce: operands must have one shape, got {[aval(x).shape for x in xs]}")
    if len(set(dims)) != len(dims) or not all(0 <= d < len(shape) for d in dims):
        raise ValueError(f"lax.reduce: dimensions {dims} must be distinct axes of an array of rank {len(shape)}")
    keep = tuple(a for a in range(len(shape)) if a not in dims)
    kept = tuple(shape[a] for a in keep)
    count = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    rows = [reshape(transpose(x, keep + dims), kept + (count,)) for x in xs]
    acc = [broadcast_in_dim(v, kept, ()) for v in inits]
    for i in range(count):
        items = [reshape(slice_p.bind(r, start_indices=(0,) * len(kept) + (i,), limit_indices=kept + (i + 1,),
                                      strides=None), kept) for r in rows]
        acc = list(computation(tuple(acc), tuple(items)))
    return acc


# -- windowed reductions -------------------------------------------------------------------------------------
def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
                    padding: str) -> list[tuple[int, int]]:
    """(lo, hi) padding per axis for 'VALID', 'SAME' (extra padding at the end) or 'SAME_LOWER' (at the start)."""
    mode = str(getattr(padding, "name", padding)).upper()
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    if mode not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"padding must be 'VALID', 'SAME' or 'SAME_LOWER', got {padding!r}")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides, strict=True):
        out = -(-n // s)  # ceil(n / s) outputs, as if the window never ran off the end
        total = max((out - 1) * s + w - n, 0)
        pads.append((total // 2, total - total // 2) if mode == "SAME" else (total - total // 2, total // 2))
    return pads


def _window_params(shape, window_dimensions, window_strides, padding, base_dilation, window_dilation) -> dict:
    ndim = len(shape)
    dims = _ints(window_dimensions, "reduce_window", "window_dimensions")
    strides = (1,) * ndim if window_strides is None else _ints(window_strides, "reduce_window", "window_strides")
    base = (1,) * ndim if base_dilation is None else _ints(base_dilation, "reduce_window", "base_dilation")
    dilation = (1,) * ndim if window_dilation is None else _ints(window_dilation, "reduce_window", "window_dilation")
    if isinstance(padding, str):
        if len(dims) != ndim or len(strides) != ndim:
            raise ValueError(f"reduce_window: window_dimensions {dims} and window_strides {strides} need one entry "
                             f"per axis of the operand (rank {ndim})")
        dilated_shape = tuple((n - 1) * b + 1 if n else 0 for n, b in zip(shape, base, strict=False))
        dilated_window = tuple((w - 1) * d + 1 for w, d in zip(dims, dilation, strict=False))
        pads = tuple(padtype_to_pads(dilated_shape, dilated_window, strides, padding))
    else:
        pads = tuple(_ints(p, "reduce_window", "padding pairs") for p in padding)
    return dict(window_dimensions=dims, window_strides=strides, padding=pads, base_dilation=base,
                window_dilation=dilation)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding, base_dilation=None,
                              window_dilation=None) -> tuple[int, ...]:
    """The shape ``reduce_window`` gives an operand of ``operand_shape``."""
    params = _window_params(tuple(operand_shape), window_dimensions, window_strides, padding, base_dilation,
                            window_dilation)
    typ = TensorType(np.float32, tuple(operand_shape))
    return tuple(rp._window_output_shape("reduce_window", typ, **params))


def reduce_window(operand: Any, init_value: Any, computation: Callable, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None, padding: str | Sequence[tuple[int, int]] = "VALID",
                  base_dilation: Sequence[int] | None = None, window_dilation: Sequence[int] | None = None) -> Any:
    """Reduces every window of ``operand`` with ``computation``.

    ``lax.add``, ``lax.max`` and ``lax.min`` (and functions that bind only them) become the windowed
    primitives; any other computation, and any pytree of operands, is folded over the window offsets one
    strided slice at a time.
    """
    xs, inits, tree = _operand_trees("reduce_window", operand, init_value)
    typ = aval(xs[0])
    if any(aval(x).shape != typ.shape for x in xs):
        raise ValueError(f"lax.reduce_window: operands must have one shape, got {[aval(x).shape for x in xs]}")
    params = _window_params(typ.shape, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    prim = _monoid(computation, typ) if treedef_is_leaf(tree) else None
    if prim is None or _MONOIDS[prim][1] is None:
        combine, out_tree = _on_leaves(computation, tree, "reduce_window")
        return out_tree(_fold_windows(xs, inits, combine, **params))
    _, windowed, op = _MONOIDS[prim]
    return _combine_init(prim, windowed.bind(xs[0], **params), inits[0], op, typ.dtype)


def _fold_windows(operands: list, inits: list, combine: Callable, *, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> list:
    """XLA's reduce_window for any computation: pad (and dilate) each operand with its init value, then
    ``combine``, for each offset inside the window, the strided slices of the elements at that offset in
    every window."""
    out_shape = rp._window_output_shape("reduce_window", aval(operands[0]), window_dimensions, window_strides,
                                        padding, base_dilation, window_dilation)
    from srcjax.transpiler.primitives.shape import pad_p

    config = tuple((lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation, strict=True))
    padded = [pad_p.bind(x, init, padding_config=config) for x, init in zip(operands, inits, strict=True)]
    acc = [broadcast_in_dim(init, out_shape, ()) for init in inits]
    if 0 in out_shape:
        return acc
    for offset in np.ndindex(*window_dimensions):
        starts = tuple(k * d for k, d in zip(offset, window_dilation, strict=True))
        limits = tuple(start + (n - 1) * s + 1 for start, n, s in zip(starts, out_shape, window_strides, strict=True))
        acc = combine(acc, [slice_p.bind(p, start_indices=starts, limit_indices=limits, strides=tuple(window_strides))
                            for p in padded])
    return acc
