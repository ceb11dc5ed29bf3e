"""Reduction primitives: reductions over axes, arg-reductions, cumulative scans, sorting, top-k and
windowed reductions.

Axes given to these primitives are already normalised (non-negative, distinct); ``srcjax.lax`` and
``srcjax.numpy`` do that, and choose dtypes, before binding. Orders follow XLA's as JAX exposes them:
sorting puts NaNs last and treats -0.0 and 0.0 as equal, ``top_k`` uses the total order of the bits
(-NaN < -inf < -0.0 < 0.0 < inf < NaN), and arg-reductions return the first NaN when there is one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transpiler.primitives.core import Primitive, check, register_module
from transpiler.primitives.shape import _check_axes, _pad_impl
from transpiler.types import TensorType

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


# -- reductions over axes --------------------------------------------------------------------------------
def _broadcast_back(ct, shape: tuple[int, ...], axes: tuple[int, ...]):
    """A reduced cotangent broadcast back over the reduced axes (the transpose of a sum)."""
    from transpiler.primitives.shape import broadcast_in_dim_p

    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return broadcast_in_dim_p.bind(ct, shape=shape, broadcast_dimensions=kept)


def reduction(name: str, impl: Callable[..., np.ndarray], kinds: str) -> Primitive:
    """``reduce_<op>``: combines the elements along ``axes`` (an empty reduction gives the identity)."""
    prim = Primitive(name, params=("axes",))

    def shape_rule(x: TensorType, *, axes) -> TensorType:
        _check_kind(name, x, kinds)
        return x.drop_axes(_check_axes(name, axes, x.ndim, "axes"))

    prim.def_shape(shape_rule)
    prim.def_impl(lambda x, *, axes: np.asarray(impl(x, tuple(axes))).astype(x.dtype))
    return prim


reduce_sum_p = reduction("reduce_sum", lambda x, axes: np.sum(x, axes, dtype=_accumulating(x)), _NUMBER)
reduce_sum_p.def_linear(lambda ct, x, *, axes: [_broadcast_back(ct, x.aval.shape, axes)])
reduce_prod_p = reduction("reduce_prod", lambda x, axes: np.prod(x, axes, dtype=_accumulating(x)), _NUMBER)
reduce_max_p = reduction("reduce_max", lambda x, axes: np.max(x, axes, initial=_identity("max", x.dtype)), _ORDERED)
reduce_min_p = reduction("reduce_min", lambda x, axes: np.min(x, axes, initial=_identity("min", x.dtype)), _ORDERED)
reduce_and_p = reduction("reduce_and", lambda x, axes: np.bitwise_and.reduce(x, axes), _LOGICAL)
reduce_or_p = reduction("reduce_or", lambda x, axes: np.bitwise_or.reduce(x, axes), _LOGICAL)
reduce_xor_p = reduction("reduce_xor", lambda x, axes: np.bitwise_xor.reduce(x, axes), _LOGICAL)
for _p in (reduce_and_p, reduce_or_p, reduce_xor_p):
    _p.mark_no_rule("jvp", "bitwise reductions are not differentiable")


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
    prim.mark_no_rule("jvp", "an index has zero derivative")
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

    prim.def_shape(shape_rule)
    prim.def_impl(impl)
    return prim


cumsum_p = scan("cumsum", lambda x, axis: np.cumsum(x, axis, dtype=x.dtype), _NUMBER)
cumprod_p = scan("cumprod", lambda x, axis: np.cumprod(x, axis, dtype=x.dtype), _NUMBER)
cummax_p = scan("cummax", lambda x, axis: np.maximum.accumulate(x, axis), _NUMBER)
cummin_p = scan("cummin", lambda x, axis: np.minimum.accumulate(x, axis), _NUMBER)
cumlogsumexp_p = scan("cumlogsumexp", lambda x, axis: np.logaddexp.accumulate(x, axis), "f")


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
        windows = np.lib.stride_tricks.sliding_window_view(padded, extent)
        # every stride-th window start, every dilation-th element inside a window
        starts = tuple(slice(None, None, s) for s in window_strides)
        windows = windows[starts + tuple(slice(None, None, d) for d in window_dilation)]
        return np.asarray(reducer(windows, tuple(range(x.ndim, 2 * x.ndim)))).astype(x.dtype)

    prim.def_shape(shape_rule)
    prim.def_impl(impl)
    return prim


reduce_window_sum_p = window_reduction(
    "reduce_window_sum", "sum", lambda w, axes: np.sum(w, axes, dtype=_accumulating(w)), _NUMBER)
reduce_window_max_p = window_reduction("reduce_window_max", "max", np.max, "biuf")
reduce_window_min_p = window_reduction("reduce_window_min", "min", np.min, "biuf")

register_module(globals())
