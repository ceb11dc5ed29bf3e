"""Reduction primitives: reductions over axes, arg-reductions, cumulative scans, sorting, top-k and
windowed reductions.

Axes given to these primitives are already normalised (non-negative, distinct); ``srcjax.lax`` and
``srcjax.numpy`` do that, and choose dtypes, before binding. Orders follow XLA's as JAX exposes them:
sorting puts NaNs last and treats -0.0 and 0.0 as equal, ``top_k`` uses the total order of the bits
(-NaN < -inf < -0.0 < 0.0 < inf < NaN), and arg-reductions return the first NaN when there is one.

Derivatives follow JAX's: ties in max/min share the tangent, products and cumulative scans are
differentiated as trees of pairwise operations (exact at zeros), sorts and top-k gather the tangents with
the permutation they applied, and windowed max/min pick the tangent of the first extremum of each window.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

import srcjax.transpiler.primitives.elementwise as ew
import srcjax.transpiler.primitives.shape as sh
from srcjax.transpiler.primitives.ad import Zero, aval_of, defjvp2, is_zero, jvp_of, tangent_aval, zeros
from srcjax.transpiler.primitives.batching import moveaxis
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.primitives.indexing import GatherDimensionNumbers, GatherScatterMode, gather_p, slice_p
from srcjax.transpiler.primitives.shape import _check_axes, _pad_impl, batched_axes, common_batch_axis
from srcjax.transpiler.types import TensorType

# dtype classes, as the elementwise family spells them
_NUMBER, _ORDERED, _LOGICAL = "iufc", "biufc", "biu"


def _check_kind(name: str, x: TensorType, kinds: str) -> None:
    check(x.dtype.kind in kinds, name, f"does not accept {x.dtype.name} operands")


def _identity(op: str, dtype: np.dtype):
    """The value that leaves ``op`` unchanged: what an empty reduction returns and what windows pad with."""
    dtype = np.dtype(dtype)
    if op in ("sum", "or", "xor"):
        return dtype.type(0)
    if op in ("prod",):
        return dtype.type(1)
    if op == "and":
        return np.invert(dtype.type(0))
    low = op == "max"  # max starts from the lowest value, min from the highest
    if dtype.kind == "b":
        return np.bool_(not low)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if low else info.max)
    return dtype.type(-np.inf if low else np.inf)


def _accumulating(x: np.ndarray) -> np.dtype:
    # float16 sums accumulate in float32, as XLA's CPU backend does; other dtypes in themselves
    return np.dtype(np.float32) if x.dtype == np.float16 else x.dtype


def _pairwise_sum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``x`` summed over ``axes`` with NumPy's pairwise summation (error ~log n eps, not ~n eps). NumPy sums
    pairwise only along a contiguous axis: summed down the rows of a C-ordered array, it adds one row at a
    time (a mean of 10,000 float32 rows errs by 2e-6). So the summed axes are moved last and made contiguous
    first. (Below 8 elements NumPy's pairwise sum is a plain running sum: short sums are as they were.)"""
    axes = tuple(a % x.ndim for a in axes) if x.ndim else ()
    kept = [d for d in range(x.ndim) if d not in axes]
    rows = np.ascontiguousarray(np.transpose(x, kept + sorted(axes)))
    rows = rows.reshape(tuple(x.shape[d] for d in kept) + (math.prod(x.shape[d] for d in axes),))
    return np.add.reduce(rows, axis=-1, dtype=_accumulating(x))


# -- pieces the derivative rules are built from ----------------------------------------------------------
def _zero_tangent(out) -> Zero:
    return Zero(tangent_aval(aval_of(out)))


def _constant(value, aval: TensorType):
    """``value`` filling ``aval``'s shape and dtype (a broadcast scalar, not a large constant)."""
    return sh.broadcast_in_dim_p.bind(np.asarray(value, aval.dtype), shape=aval.shape, broadcast_dimensions=())


def _not_linear(*prims: Primitive) -> None:
    for prim in prims:
        prim.def_unsupported("transpose", "not linear")


def _slice_axis(x, start: int, stop: int, axis: int, stride: int = 1):
    shape = aval_of(x).shape
    return slice_p.bind(x, start_indices=tuple(start if a == axis else 0 for a in range(len(shape))),
                        limit_indices=tuple(stop if a == axis else n for a, n in enumerate(shape)),
                        strides=tuple(stride if a == axis else 1 for a in range(len(shape))))


def _pad_axis(x, value, lo: int, hi: int, interior: int, axis: int):
    aval = aval_of(x)
    config = tuple((lo, hi, interior) if a == axis else (0, 0, 0) for a in range(aval.ndim))
    return sh.pad_p.bind(x, np.asarray(value, aval.dtype), padding_config=config)


def _stack_last(parts: list):
    """Arrays of one shape stacked along a new last axis."""
    shape = aval_of(parts[0]).shape
    columns = [sh.reshape_p.bind(p, new_sizes=shape + (1,), dimensions=None) for p in parts]
    return sh.concatenate_p.bind(*columns, dimension=len(shape))


def _gather(x, indices, numbers: GatherDimensionNumbers):
    # every index these rules build is in bounds by construction
    return gather_p.bind(x, indices, dimension_numbers=numbers, slice_sizes=(1,) * aval_of(x).ndim,
                         mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None, indices_are_sorted=False,
                         unique_indices=False)


def _take_along(x, indices, axis: int):
    """``x`` read at ``indices`` along ``axis`` (NumPy's take_along_axis), linear in ``x``: a gather whose other
    axes are batching axes, as JAX's sort JVP does it."""
    shape = aval_of(indices).shape
    if 0 in shape:  # nothing to read (and a gather cannot take size-1 slices of an empty batch axis)
        return zeros(tangent_aval(aval_of(x)).update(shape=shape))
    batch = tuple(a for a in range(len(shape)) if a != axis)
    numbers = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
                                     operand_batching_dims=batch, start_indices_batching_dims=batch)
    return _gather(x, sh.reshape_p.bind(indices, new_sizes=shape + (1,), dimensions=None), numbers)


def _gather_points(x, indices):
    """``x`` read at the index vectors in the last axis of ``indices`` (one element each)."""
    every = tuple(range(aval_of(x).ndim))
    return _gather(x, indices, GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=every,
                                                      start_index_map=every))


def _index_dtype(size: int) -> np.dtype:
    return np.dtype(np.int32 if size < 2**31 - 1 else np.int64)


# -- reductions over axes --------------------------------------------------------------------------------
def _broadcast_back(ct, shape: tuple[int, ...], axes: tuple[int, ...]):
    """A reduced cotangent broadcast back over the reduced axes (the transpose of a sum)."""
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return sh.broadcast_in_dim_p.bind(ct, shape=shape, broadcast_dimensions=kept)


def _axes_vmap(prim: Primitive) -> Callable:
    """Batching of a reduction over ``axes``: the same axes of the batched operand; the batch axis moves down
    by the reduced axes before it."""

    def rule(args, dims, *, axes, **params):
        (x,), (dim,) = args, dims
        return prim.bind(x, axes=batched_axes(axes, dim), **params), dim - sum(a < dim for a in axes)

    return rule


def reduction(name: str, impl: Callable[..., np.ndarray], kinds: str) -> Primitive:
    """``reduce_<op>``: combines the elements along ``axes`` (an empty reduction gives the identity)."""
    prim = Primitive(name, params=("axes",))

    def shape_rule(x: TensorType, *, axes) -> TensorType:
        _check_kind(name, x, kinds)
        return x.drop_axes(_check_axes(name, axes, x.ndim, "axes"))

    prim.def_shape(shape_rule)
    prim.def_impl(lambda x, *, axes: np.asarray(impl(x, tuple(axes))).astype(x.dtype))
    prim.def_vmap(_axes_vmap(prim))
    return prim


reduce_sum_p = reduction("reduce_sum", _pairwise_sum, _NUMBER)
reduce_sum_p.def_linear(lambda ct, x, *, axes: [_broadcast_back(ct, x.aval.shape, axes)])
reduce_prod_p = reduction("reduce_prod", lambda x, axes: np.prod(x, axes, dtype=_accumulating(x)), _NUMBER)


@reduce_prod_p.def_jvp
def _reduce_prod_jvp(primals, tangents, *, axes):
    """JAX's rule: differentiate a tree of pairwise products, d(ab) = da b + a db, over the reduced elements
    (moved to the front and flattened). Unlike g * prod / x it is exact where x has zeros."""
    (x,), (g,) = primals, tangents
    out = reduce_prod_p.bind(x, axes=axes)
    shape = aval_of(x).shape
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    if is_zero(g) or n == 0:
        return out, _zero_tangent(out)
    kept = tuple(a for a in range(len(shape)) if a not in axes)
    order = tuple(axes) + kept
    order = None if order == tuple(range(len(shape))) else order
    p, t = (sh.reshape_p.bind(v, new_sizes=(n,) + aval_of(out).shape, dimensions=order) for v in (x, g))
    while n > 1:
        half = (n + 1) // 2
        p1, t1, p2, t2 = (_slice_axis(v, lo, hi, 0) for lo, hi in ((0, half), (half, n)) for v in (p, t))
        if n % 2:  # the second half is one short: pad it with the identity of the product
            p2, t2 = _pad_axis(p2, 1, 0, 1, 0, 0), _pad_axis(t2, 0, 0, 1, 0, 0)
        p, t = ew.mul_p.bind(p1, p2), ew.add_p.bind(ew.mul_p.bind(t1, p2), ew.mul_p.bind(p1, t2))
        n = half
    return out, sh.reshape_p.bind(t, new_sizes=aval_of(out).shape, dimensions=None)


def _signed_zero(out: np.ndarray, x: np.ndarray, seen: Callable, negative: bool) -> np.ndarray:
    """XLA orders -0.0 below +0.0, where NumPy's max and min keep the zero they meet first: a zero extremum is
    the zero of the preferred sign wherever ``seen`` (an any over the reduced values) finds one."""
    if x.dtype.kind != "f":
        return out
    zero = np.array(-0.0 if negative else 0.0, x.dtype)
    return np.where((out == 0) & seen((x == 0) & (np.signbit(x) == negative)), zero, out)


def _extremum_reduction(op: str) -> Callable:
    reducer = np.max if op == "max" else np.min
    return lambda x, axes: _signed_zero(reducer(x, axes, initial=_identity(op, x.dtype)), x,
                                        lambda z: np.any(z, axis=axes), negative=op == "min")


reduce_max_p = reduction("reduce_max", _extremum_reduction("max"), _ORDERED)
reduce_min_p = reduction("reduce_min", _extremum_reduction("min"), _ORDERED)


def _reduce_chooser_jvp(g, ans, x, *, axes):
    """JAX's rule: the mean of the tangents at the positions that equal the extremum (ties share it)."""
    at_extremum = ew.eq_p.bind(x, _broadcast_back(ans, aval_of(x).shape, axes))
    mask = ew.convert_element_type_p.bind(at_extremum, new_dtype=aval_of(g).dtype, weak_type=False)
    count = reduce_sum_p.bind(mask, axes=axes)
    return ew.div_p.bind(reduce_sum_p.bind(ew.mul_p.bind(g, mask), axes=axes), count)


defjvp2(reduce_max_p, _reduce_chooser_jvp)
defjvp2(reduce_min_p, _reduce_chooser_jvp)
reduce_and_p = reduction("reduce_and", lambda x, axes: np.bitwise_and.reduce(x, axes), _LOGICAL)
reduce_or_p = reduction("reduce_or", lambda x, axes: np.bitwise_or.reduce(x, axes), _LOGICAL)
reduce_xor_p = reduction("reduce_xor", lambda x, axes: np.bitwise_xor.reduce(x, axes), _LOGICAL)
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    _p.def_zero_jvp("bitwise reductions have integer or bool results: zero derivative")
_not_linear(reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, reduce_xor_p)


# -- arg-reductions --------------------------------------------------------------------------------------
def arg_reduction(name: str, impl: Callable[..., np.ndarray]) -> Primitive:
    """The index of the largest (smallest) element along one axis: the first one on ties and NaNs."""
    prim = Primitive(name, params=("axes", "index_dtype"))

    def shape_rule(x: TensorType, *, axes, index_dtype) -> TensorType:
        _check_kind(name, x, "biuf")
        axes = _check_axes(name, axes, x.ndim, "axes")
        check(len(axes) == 1, name, f"reduces exactly one axis, got axes={axes}", kind="value")
        check(x.shape[axes[0]] > 0, name, f"the reduced axis {axes[0]} of {x} is empty", kind="value")
        index_dtype = np.dtype(index_dtype)
        check(index_dtype.kind in "iu", name, f"index_dtype must be an integer type, got {index_dtype.name}")
        return TensorType(index_dtype, x.drop_axes(axes).shape)

    prim.def_shape(shape_rule)
    # NumPy's argmax/argmin already return the first NaN, as XLA's do
    prim.def_impl(lambda x, *, axes, index_dtype: np.asarray(impl(x, axis=axes[0])).astype(index_dtype))
    prim.def_vmap(_axes_vmap(prim))
    prim.def_zero_jvp("an index has zero derivative")
    prim.def_unsupported("transpose", "not linear")
    return prim


argmax_p = arg_reduction("argmax", np.argmax)
argmin_p = arg_reduction("argmin", np.argmin)


# -- cumulative scans ------------------------------------------------------------------------------------
def scan(name: str, accumulate: Callable[..., np.ndarray], kinds: str) -> Primitive:
    """``cum<op>``: running combination along ``axis``, from the end when ``reverse``."""
    prim = Primitive(name, params=("axis", "reverse"))

    def shape_rule(x: TensorType, *, axis: int, reverse: bool = False) -> TensorType:
        _check_kind(name, x, kinds)
        _check_axes(name, (axis,), x.ndim, "axis")
        return x

    def impl(x, *, axis, reverse=False):
        if reverse:
            return np.flip(accumulate(np.flip(x, axis), axis), axis)
        return accumulate(x, axis)

    def vmap_rule(args, dims, *, axis: int, reverse: bool = False):
        (x,), (dim,) = args, dims
        return prim.bind(x, axis=axis + (axis >= dim), reverse=reverse), dim

    prim.def_shape(shape_rule)
    prim.def_impl(impl)
    prim.def_vmap(vmap_rule)
    return prim


def _interleave(a, b, axis: int):
    """``a`` at the even positions along ``axis``, ``b`` at the odd ones: each spread out by zeros, then added."""
    same = aval_of(a).shape[axis] == aval_of(b).shape[axis]
    return ew.add_p.bind(_pad_axis(a, 0, 0, 1 if same else 0, 1, axis), _pad_axis(b, 0, 1, 0 if same else 1, 1, axis))


def _associative_scan(combine: Callable, elems: list, axis: int) -> list:
    """JAX's ``associative_scan`` (Blelloch's parallel prefix) of ``combine`` over the arrays ``elems``, which
    ``combine(earlier, later)`` treats as one value: combine adjacent pairs, scan those (the results at odd
    positions), combine them with the elements at even positions, and interleave."""
    n = aval_of(elems[0]).shape[axis]
    if n < 2:
        return elems
    odd = _associative_scan(combine, combine([_slice_axis(e, 0, n - 1, axis, 2) for e in elems],
                                             [_slice_axis(e, 1, n, axis, 2) for e in elems]), axis)
    earlier = odd if n % 2 else [_slice_axis(e, 0, aval_of(e).shape[axis] - 1, axis) for e in odd]
    even = combine(earlier, [_slice_axis(e, 2, n, axis, 2) for e in elems])
    even = [sh.concatenate_p.bind(_slice_axis(e, 0, 1, axis), r, dimension=axis) for e, r in zip(elems, even)]
    return [_interleave(a, b, axis) for a, b in zip(even, odd)]


def _cumulative_jvp(prim: Primitive, combine: Callable) -> None:
    """JAX's rule for cumulative scans other than sums: the JVP of the same scan computed as an associative
    scan of pairwise ``combine``s of (primal, tangent) pairs."""

    def rule(primals, tangents, *, axis, reverse=False):
        (x,), (g,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        if is_zero(g):
            return out, _zero_tangent(out)
        flip = (lambda v: sh.rev_p.bind(v, dimensions=(axis,))) if reverse else (lambda v: v)
        _, tangent = _associative_scan(combine, [flip(x), flip(g)], axis)
        return out, flip(tangent)

    prim.def_jvp(rule)
    prim.def_unsupported("transpose", "not linear")


def _mul_combine(a, b):
    (pa, ta), (pb, tb) = a, b
    return [ew.mul_p.bind(pa, pb), ew.add_p.bind(ew.mul_p.bind(ta, pb), ew.mul_p.bind(pa, tb))]


def _chooser_combine(prim: Primitive) -> Callable:
    # max/min's own JVP, which splits the tangent of tied operands 0.5/0.5 as JAX's does
    return lambda a, b: list(jvp_of(prim)([a[0], b[0]], [a[1], b[1]]))


def _logaddexp_combine(a, b):
    """JAX's logaddexp: max + log1p(exp(-|x - y|)), or x + y where x - y is NaN (NaNs, or infinities of one
    sign), with tangent tx exp(x - out) + ty exp(y - out) where +inf is replaced by 0 in x, y and out."""
    (pa, ta), (pb, tb) = a, b
    aval = aval_of(pa)
    delta = ew.sub_p.bind(pa, pb)
    spread = ew.log1p_p.bind(ew.exp_p.bind(ew.neg_p.bind(ew.abs_p.bind(delta))))
    out = ew.select_n_p.bind(ew.ne_p.bind(delta, delta), ew.add_p.bind(ew.max_p.bind(pa, pb), spread),
                             ew.add_p.bind(pa, pb))
    infinity, zero = _constant(np.inf, aval), _constant(0, aval)
    finite = lambda v: ew.select_n_p.bind(ew.eq_p.bind(v, infinity), v, zero)
    weight = lambda v: ew.exp_p.bind(ew.sub_p.bind(finite(v), finite(out)))
    return [out, ew.add_p.bind(ew.mul_p.bind(ta, weight(pa)), ew.mul_p.bind(tb, weight(pb)))]


def _running(fn: Callable) -> Callable:
    """np.cumsum or np.cumprod, float16 and float32 accumulating in float64 as the compiled scans do (JAX's tree
    of partial sums loses far less than a running value of the operand's type, whose error grows with the length:
    a float16 running sum of 0.1s stops at 256)."""
    wide = (np.float16, np.float32)
    return lambda x, axis: fn(x, axis, dtype=np.float64 if x.dtype in wide else x.dtype).astype(x.dtype)


cumsum_p = scan("cumsum", _running(np.cumsum), _NUMBER)
# a running sum from the other end collects, for each element, the outputs it contributed to
cumsum_p.def_linear(lambda ct, x, *, axis, reverse=False: [cumsum_p.bind(ct, axis=axis, reverse=not reverse)])
cumprod_p = scan("cumprod", _running(np.cumprod), _NUMBER)
_cumulative_jvp(cumprod_p, _mul_combine)
def _cumulative_extremum(op: str) -> Callable:
    ufunc = np.maximum if op == "max" else np.minimum
    return lambda x, axis: _signed_zero(ufunc.accumulate(x, axis), x, lambda z: np.logical_or.accumulate(z, axis),
                                        negative=op == "min")


cummax_p = scan("cummax", _cumulative_extremum("max"), _NUMBER)
_cumulative_jvp(cummax_p, _chooser_combine(ew.max_p))
cummin_p = scan("cummin", _cumulative_extremum("min"), _NUMBER)
_cumulative_jvp(cummin_p, _chooser_combine(ew.min_p))
cumlogsumexp_p = scan("cumlogsumexp", lambda x, axis: np.logaddexp.accumulate(x, axis), "f")
_cumulative_jvp(cumlogsumexp_p, _logaddexp_combine)


# -- sorting ---------------------------------------------------------------------------------------------
def _sort_keys(x: np.ndarray) -> list[np.ndarray]:
    """Keys, most significant first, whose lexicographic order is XLA's sort order for ``x``.

    A float is keyed by (is NaN, value with NaN zeroed): NaNs of either sign go last and keep their
    order; -0.0 and 0.0 compare equal. A complex number is keyed by its real part, then its imaginary.
    """
    if x.dtype.kind == "c":
        return _sort_keys(np.real(x)) + _sort_keys(np.imag(x))
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        return [nan, np.where(nan, 0, x)]
    return [x]


sort_p = Primitive("sort", params=("dimension", "is_stable", "num_keys"), multiple_results=True)


@sort_p.def_shape
def _sort_shape(*xs: TensorType, dimension: int, is_stable: bool = True, num_keys: int = 1) -> list[TensorType]:
    check(len(xs) >= 1, "sort", "needs at least one operand")
    check(1 <= num_keys <= len(xs), "sort", f"num_keys={num_keys} must be between 1 and the {len(xs)} operand(s)",
          kind="value")
    check(all(x.shape == xs[0].shape for x in xs), "sort",
          f"operands must have one shape, got {[x.shape for x in xs]}", kind="value")
    for x in xs:
        _check_kind("sort", x, _ORDERED)
    _check_axes("sort", (dimension,), xs[0].ndim, "dimension")
    return list(xs)


@sort_p.def_impl
def _sort_impl(*xs, dimension, is_stable=True, num_keys=1):
    # One stable lexicographic sort serves both values of is_stable; np.lexsort wants the primary key last.
    moved = [np.moveaxis(x, dimension, -1) for x in xs]
    keys = [k for x in moved[:num_keys] for k in _sort_keys(x)]
    order = np.lexsort(keys[::-1], axis=-1) if moved[0].size else np.zeros(moved[0].shape, np.intp)
    return [np.moveaxis(np.take_along_axis(x, order, -1), -1, dimension) for x in moved]


@sort_p.def_jvp
def _sort_jvp(primals, tangents, *, dimension, is_stable=True, num_keys=1):
    """JAX's rule: sort an iota along with the operands to learn the permutation, then gather each tangent
    with it."""
    shape = aval_of(primals[0]).shape
    iota = sh.iota_p.bind(dtype=_index_dtype(shape[dimension]), shape=shape, dimension=dimension)
    *out, permutation = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    return out, [_zero_tangent(o) if is_zero(t) else _take_along(t, permutation, dimension)
                 for o, t in zip(out, tangents)]


sort_p.def_unsupported("transpose", "not linear")


@sort_p.def_vmap
def _sort_vmap(args, dims, *, dimension, is_stable=True, num_keys=1):
    # the operands must agree in shape: batch them all at one axis
    moved, at = common_batch_axis(args, dims)
    out = sort_p.bind(*moved, dimension=dimension + (dimension >= at), is_stable=is_stable, num_keys=num_keys)
    return out, [at] * len(out)


top_k_p = Primitive("top_k", params=("k",), multiple_results=True)


@top_k_p.def_shape
def _top_k_shape(x: TensorType, *, k: int) -> list[TensorType]:
    _check_kind("top_k", x, "biuf")
    check(isinstance(k, (int, np.integer)) and k >= 0, "top_k", f"k must be a non-negative int, got {k!r}",
          kind="value")
    check(x.ndim >= 1, "top_k", f"needs an operand of rank >= 1, got {x}", kind="value")
    check(k <= x.shape[-1], "top_k", f"k={k} is larger than the last axis of {x}", kind="value")
    shape = x.shape[:-1] + (k,)
    return [x.update(shape=shape), TensorType(np.int32, shape)]


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered like the floats' bit patterns: -NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN."""
    if x.dtype.kind == "b":
        return x.astype(np.int8)
    if x.dtype.kind != "f":
        return x
    bits = np.ascontiguousarray(x).view(np.dtype(f"i{x.dtype.itemsize}"))
    magnitude = np.iinfo(bits.dtype).max
    return bits ^ ((bits >> (8 * x.dtype.itemsize - 1)) & magnitude)  # negative: reverse the magnitude order


@top_k_p.def_impl
def _top_k_impl(x, *, k):
    # Largest first and, among equal keys, the lowest index first: a stable ascending sort of the
    # reversed row, read backwards.
    n = x.shape[-1]
    order = np.argsort(_total_order_key(x)[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = n - 1 - order
    return [np.take_along_axis(x, indices, -1), indices.astype(np.int32)]


@top_k_p.def_jvp
def _top_k_jvp(primals, tangents, *, k):
    """JAX's rule: the tangents at the indices top_k returns; the indices have none."""
    (x,), (g,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k)
    tangent = _zero_tangent(values) if is_zero(g) else _take_along(g, indices, aval_of(x).ndim - 1)
    return [values, indices], [tangent, _zero_tangent(indices)]


top_k_p.def_unsupported("transpose", "not linear")


@top_k_p.def_vmap
def _top_k_vmap(args, dims, *, k):
    """top_k works along the last axis: a batch axis there moves just before it (JAX's rule)."""
    (x,), (dim,) = args, dims
    last = aval_of(x).ndim - 1
    if dim == last:
        x, dim = moveaxis(x, dim, last - 1), last - 1
    values, indices = top_k_p.bind(x, k=k)
    return [values, indices], [dim, dim]


# -- windowed reductions ---------------------------------------------------------------------------------
_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation")


def _window_output_shape(name: str, x: TensorType, window_dimensions, window_strides, padding, base_dilation,
                         window_dilation) -> tuple[int, ...]:
    dims, strides = tuple(window_dimensions), tuple(window_strides)
    pads, base, dil = tuple(tuple(p) for p in padding), tuple(base_dilation), tuple(window_dilation)
    for what, value in (("window_dimensions", dims), ("window_strides", strides), ("padding", pads),
                        ("base_dilation", base), ("window_dilation", dil)):
        check(len(value) == x.ndim, name, f"{what} {value} must have one entry per operand axis ({x})", kind="value")
    for what, value in (("window_dimensions", dims), ("window_strides", strides), ("base_dilation", base),
                        ("window_dilation", dil)):
        check(all(v >= 1 for v in value), name, f"{what} {value} must be >= 1", kind="value")
    check(all(len(p) == 2 for p in pads), name, f"padding {pads} must be (lo, hi) pairs", kind="value")
    shape = []
    for n, w, s, (lo, hi), b, d in zip(x.shape, dims, strides, pads, base, dil, strict=True):
        padded = lo + (n - 1) * b + 1 + hi if n else lo + hi
        window = (w - 1) * d + 1
        shape.append((padded - window) // s + 1 if padded >= window else 0)
    return tuple(shape)


# window reductions whose combine is a NumPy ufunc that propagates NaN as ``np.max``/``np.min`` do
_ELEMENTWISE = {"max": np.maximum, "min": np.minimum}
_SMALL_WINDOW = 64  # up to this many window elements, one pass per element beats a sliding-window view


def window_reduction(name: str, op: str, reducer: Callable[..., np.ndarray], kinds: str) -> Primitive:
    """``reduce_window_<op>``: ``op`` over every (strided, dilated) window of the padded operand.

    Padding and the holes of base dilation hold the identity of ``op`` (-inf or the dtype's lowest value
    for max, +inf or the highest for min, 0 for sum), so they never win.
    """
    prim = Primitive(name, params=_WINDOW_PARAMS)

    def shape_rule(x: TensorType, **params) -> TensorType:
        _check_kind(name, x, kinds)
        return x.update(shape=_window_output_shape(name, x, **params))

    def impl(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        out_shape = _window_output_shape(name, TensorType(x.dtype, x.shape), window_dimensions, window_strides,
                                         padding, base_dilation, window_dilation)
        identity = _identity(op, x.dtype)
        if 0 in out_shape:
            return np.full(out_shape, identity, x.dtype)
        config = tuple((lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation, strict=True))
        padded = _pad_impl(x, np.asarray(identity, x.dtype), padding_config=config)
        extent = tuple((w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation, strict=True))
        if op in _ELEMENTWISE and np.prod(window_dimensions, dtype=np.int64) <= _SMALL_WINDOW:
            # a small window (pooling): combine one strided slice per window offset, each a vectorised pass
            parts = [padded[tuple(slice(k * d, k * d + (n - 1) * s + 1, s) for k, d, n, s in
                                  zip(offset, window_dilation, out_shape, window_strides, strict=True))]
                     for offset in np.ndindex(*window_dimensions)]
            out = np.array(parts[0])
            for part in parts[1:]:
                _ELEMENTWISE[op](out, part, out=out)
            if out.dtype.kind == "f":  # XLA orders -0.0 below +0.0 (as in _signed_zero)
                negative, seen = op == "min", np.zeros(out.shape, bool)
                for part in parts:
                    seen |= (part == 0) & (np.signbit(part) == negative)
                out[(out == 0) & seen] = -0.0 if negative else 0.0
            return out.astype(x.dtype, copy=False)
        windows = np.lib.stride_tricks.sliding_window_view(padded, extent)
        # every stride-th window start, every dilation-th element inside a window
        starts = tuple(slice(None, None, s) for s in window_strides)
        windows = windows[starts + tuple(slice(None, None, d) for d in window_dilation)]
        axes = tuple(range(x.ndim, 2 * x.ndim))
        out = np.asarray(reducer(windows, axes))
        if op in _ELEMENTWISE:
            out = _signed_zero(out, windows, lambda z: np.any(z, axis=axes), negative=op == "min")
        return out.astype(x.dtype)

    def vmap_rule(args, dims, **params):
        # the batch axis gets a window of one element, stepped by one, with nothing padded or dilated
        (x,), (dim,) = args, dims
        unit = dict(window_dimensions=1, window_strides=1, padding=(0, 0), base_dilation=1, window_dilation=1)
        return prim.bind(x, **{k: (*v[:dim], unit[k], *v[dim:]) for k, v in params.items()}), dim

    prim.def_shape(shape_rule)
    prim.def_impl(impl)
    prim.def_vmap(vmap_rule)
    return prim


def _dilated(size: int, dilation: int) -> int:
    return 0 if size == 0 else 1 + dilation * (size - 1)


reduce_window_sum_p = window_reduction(
    "reduce_window_sum", "sum", lambda w, axes: np.sum(w, axes, dtype=_accumulating(w)), _NUMBER)


@reduce_window_sum_p.def_linear
def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding, base_dilation,
                                 window_dilation):
    """JAX's rule: each operand element receives the sum of the cotangents of the windows that cover it.
    Spread the cotangent out by the strides and pad it as a convolution's input gradient is padded, then
    sum it over the same (dilated) windows, stepping by the base dilation to land on operand elements."""
    config = []
    for n, m, w, s, (lo, _), b, d in zip(x.aval.shape, aval_of(ct).shape, window_dimensions, window_strides, padding,
                                         base_dilation, window_dilation, strict=True):
        before = _dilated(w, d) - lo - 1
        config.append((before, _dilated(n, b) + _dilated(w, d) - 1 - _dilated(m, s) - before, s - 1))
    spread = sh.pad_p.bind(ct, np.zeros((), aval_of(ct).dtype), padding_config=tuple(config))
    ndim = len(config)
    return [reduce_window_sum_p.bind(spread, window_dimensions=window_dimensions, window_strides=base_dilation,
                                     padding=((0, 0),) * ndim, base_dilation=(1,) * ndim,
                                     window_dilation=window_dilation)]


def _window_positions(out_shape, padded_shape, *, window_dimensions, window_strides, window_dilation):
    """Index vectors into the padded operand of every element of every window, shape ``out_shape + window +
    (ndim,)``: along each axis, output index * stride + offset in the window * window dilation."""
    ndim, dtype = len(out_shape), _index_dtype(max(padded_shape))
    aval = TensorType(dtype, tuple(out_shape) + tuple(window_dimensions))
    coordinates = []
    for axis in range(ndim):
        start = sh.iota_p.bind(dtype=dtype, shape=aval.shape, dimension=axis)
        offset = sh.iota_p.bind(dtype=dtype, shape=aval.shape, dimension=ndim + axis)
        coordinates.append(ew.add_p.bind(ew.mul_p.bind(start, _constant(window_strides[axis], aval)),
                                         ew.mul_p.bind(offset, _constant(window_dilation[axis], aval))))
    return _stack_last(coordinates)


def _chosen_positions(choice, dtype, *, window_dimensions, window_strides, window_dilation):
    """Index vectors into the padded operand of the element ``choice`` (a row-major offset) picks in each
    window: the offset unravelled into window coordinates, placed as in ``_window_positions``."""
    aval = aval_of(choice).update(dtype=dtype)
    choice = ew.convert_element_type_p.bind(choice, new_dtype=dtype, weak_type=False)
    coordinates = []
    for axis, w in enumerate(window_dimensions):
        inner = int(np.prod(window_dimensions[axis + 1:], dtype=np.int64))  # offsets per step along this axis
        offset = ew.rem_p.bind(ew.div_p.bind(choice, _constant(inner, aval)), _constant(w, aval))
        start = sh.iota_p.bind(dtype=dtype, shape=aval.shape, dimension=axis)
        coordinates.append(ew.add_p.bind(ew.mul_p.bind(start, _constant(window_strides[axis], aval)),
                                         ew.mul_p.bind(offset, _constant(window_dilation[axis], aval))))
    return _stack_last(coordinates)


_SMALL_WINDOW_JVP = 16  # windows up to this size pick their element offset by offset (no gather)


def _chosen_by_offsets(padded, spread, out, *, window_dimensions, window_strides, window_dilation):
    """The same choice as the gather below, for small windows, in elementwise ops and strided slices (which
    fuse, and transpose to pads): for each window offset in row-major order, the windows whose element at
    that offset equals their extremum (or is NaN, which the extremum then is) and that no earlier offset
    claimed take the tangent at that offset."""
    out_shape = aval_of(out).shape
    found = tangent = None
    for offset in np.ndindex(*window_dimensions):
        starts = tuple(o * d for o, d in zip(offset, window_dilation))
        limits = tuple(s + (n - 1) * st + 1 for s, n, st in zip(starts, out_shape, window_strides))
        at = dict(start_indices=starts, limit_indices=limits, strides=tuple(window_strides))
        x = slice_p.bind(padded, **at)
        hit = ew.or_p.bind(ew.eq_p.bind(x, out), ew.ne_p.bind(x, x))
        pick = hit if found is None else ew.and_p.bind(hit, ew.not_p.bind(found))
        found = hit if found is None else ew.or_p.bind(found, hit)
        t = slice_p.bind(spread, **at)
        term = ew.select_n_p.bind(pick, _constant(0, aval_of(t)), t)
        tangent = term if tangent is None else ew.add_p.bind(tangent, term)
    return tangent


def _window_chooser_jvp(prim: Primitive, arg_prim: Primitive, op: str) -> None:
    """The tangent of each window's first extremum: the element JAX's select-and-gather-add picks, ties going
    to the first in row-major order. Not that formulation (no such primitive here), but the same choice:
    the windows of the padded, base-dilated operand are gathered whole, ``arg_prim`` chooses in each, and
    the tangent, padded alike, is gathered at the chosen positions. That is linear in the tangent (a pad
    and a gather), so the backward pass is a scatter-add of the cotangent onto the chosen elements."""

    def rule(primals, tangents, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
        (x,), (g,) = primals, tangents
        out = prim.bind(x, window_dimensions=window_dimensions, window_strides=window_strides, padding=padding,
                        base_dilation=base_dilation, window_dilation=window_dilation)
        out_shape, ndim = aval_of(out).shape, aval_of(x).ndim
        if is_zero(g) or 0 in out_shape:
            return out, _zero_tangent(out)
        if ndim == 0:  # a window over a scalar is the scalar
            return out, g
        window = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                      window_dilation=window_dilation)
        config = tuple((lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation, strict=True))
        padded = sh.pad_p.bind(x, np.asarray(_identity(op, aval_of(x).dtype)), padding_config=config)
        spread = sh.pad_p.bind(g, np.zeros((), aval_of(g).dtype), padding_config=config)
        if int(np.prod(window_dimensions, dtype=np.int64)) <= _SMALL_WINDOW_JVP:
            return out, _chosen_by_offsets(padded, spread, out, **window)
        positions = _window_positions(out_shape, aval_of(padded).shape, **window)
        windows = sh.reshape_p.bind(_gather_points(padded, positions), dimensions=None,
                                    new_sizes=out_shape + (int(np.prod(window_dimensions, dtype=np.int64)),))
        choice = arg_prim.bind(windows, axes=(ndim,), index_dtype=np.dtype(np.int32))
        chosen = _chosen_positions(choice, aval_of(positions).dtype, **window)
        return out, _gather_points(spread, chosen)

    prim.def_jvp(rule)
    prim.def_unsupported("transpose", "not linear")


reduce_window_max_p = window_reduction("reduce_window_max", "max", np.max, "biuf")
_window_chooser_jvp(reduce_window_max_p, argmax_p, "max")
reduce_window_min_p = window_reduction("reduce_window_min", "min", np.min, "biuf")
_window_chooser_jvp(reduce_window_min_p, argmin_p, "min")

register_module(globals())
