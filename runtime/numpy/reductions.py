"""srcjax.numpy reductions: sums, products, extrema, means and moments, their NaN-ignoring forms, arg-
reductions, cumulative sums and products, order statistics (quantiles, median) and weighted averages.

Result dtypes are JAX's: ``sum``/``prod`` widen bools and narrow integers to the default integer, ``mean``
and the moments of integers are floats (float16 accumulates in float32), ``var`` of complex is real, and
results are never weakly typed. Everything is computed by binding primitives, so it runs on the symbolic
values of a compiled function as well.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.eager import fast_path
from srcjax.runtime.numpy._core import (
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    check_arraylike,
    convert,
    is_concrete,
)
from srcjax.transpiler.ir import ConcretizationError
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives import reduce as rp
from srcjax.transpiler.primitives.shape import iota_p, reshape_p, transpose_p
from srcjax.transpiler.types import real_dtype

__all__ = [
    "all", "allclose", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero", "cumprod", "cumsum",
    "cumulative_prod", "cumulative_sum", "max", "mean", "median", "min", "nanargmax", "nanargmin", "nancumprod",
    "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd",
    "nansum", "nanvar", "percentile", "prod", "ptp", "quantile", "std", "sum", "var",
]

_PY_SCALARS = (bool, int, float, complex)
_builtin_any = any


# -- elementwise helpers (operands already share a dtype; Python scalars and shapes are adapted) ------------
def _apply(prim, *args: Any) -> Any:
    dtype = next(aval(a).dtype for a in args if not isinstance(a, _PY_SCALARS))
    args = [np.asarray(a, dtype) if isinstance(a, _PY_SCALARS) else a for a in args]
    shape = broadcast_shapes(*(aval(a).shape for a in args))
    return prim.bind(*(broadcast_to(a, shape) for a in args))


def _where(cond: Any, x: Any, y: Any) -> Any:
    """``x`` where ``cond`` holds, else ``y`` (``x`` and ``y`` share a dtype or are Python scalars)."""
    dtype = next(aval(a).dtype for a in (x, y) if not isinstance(a, _PY_SCALARS))
    x, y = (np.asarray(a, dtype) if isinstance(a, _PY_SCALARS) else a for a in (x, y))
    shape = broadcast_shapes(aval(cond).shape, aval(x).shape, aval(y).shape)
    return ew.select_n_p.bind(broadcast_to(cond, shape), broadcast_to(y, shape), broadcast_to(x, shape))


def _isnan(x: Any) -> Any:
    if aval(x).dtype.kind in "fc":
        return ew.ne_p.bind(x, x)
    return broadcast_to(np.asarray(False), aval(x).shape)


def _nan_to(x: Any, value: Any) -> Any:
    return _where(_isnan(x), value, x) if aval(x).dtype.kind in "fc" else x


def _div(x: Any, y: Any) -> Any:
    return _apply(ew.div_p, x, y)


# -- arguments ----------------------------------------------------------------------------------------------
def _array(name: str, a: Any) -> Any:
    check_arraylike(name, a)
    return asarray(a)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"jnp.{name}: the 'out' argument is not supported (srcjax arrays are immutable)")


def _axes(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints, negative ones counting from the end) as sorted axes."""
    if axis is None:
        return tuple(range(ndim))
    given = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    try:
        given = tuple(operator.index(a) for a in given)
    except TypeError:
        error = ConcretizationError if False in [is_concrete(a) for a in given] else TypeError  # (all: jnp's)
        raise error(f"jnp.{name}: axis must be None, an int or a tuple of ints, got {axis!r}") from None
    for a in given:
        if not -ndim <= a < ndim:
            raise ValueError(f"jnp.{name}: axis {a} is out of bounds for array of dimension {ndim}")
    axes = tuple(a % ndim for a in given)
    if len(set(axes)) != len(axes):
        raise ValueError(f"jnp.{name}: duplicate value in 'axis': {axis}")
    return tuple(sorted(axes))


def _one_axis(name: str, axis: Any, ndim: int) -> int:
    try:
        axis = operator.index(axis)
    except TypeError as e:  # (a traced one stays a ConcretizationError: a loop whose index it is retries unrolled)
        raise (ConcretizationError if isinstance(e, ConcretizationError) else TypeError)(
            f"jnp.{name}: axis must be an int, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"jnp.{name}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _keepdims(x: Any, axes: tuple[int, ...], ndim: int) -> Any:
    """The reduced ``x`` with its reduced axes put back as size 1."""
    shape, rest = [], iter(aval(x).shape)
    for axis in range(ndim):
        shape.append(1 if axis in axes else next(rest))
    return reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None) if tuple(shape) != aval(x).shape else x


def _ravel(x: Any) -> Any:
    size = int(np.prod(aval(x).shape, dtype=np.int64))
    return reshape_p.bind(x, new_sizes=(size,), dimensions=None) if aval(x).shape != (size,) else x


def _dtype(dtype: Any) -> np.dtype:
    return dtypes.check_user_dtype(dtype)


def _inexact(dtype: np.dtype) -> np.dtype:
    return dtypes.to_inexact_dtype(dtype)


def _upcast_f16(dtype: np.dtype) -> np.dtype:
    # float16 and bfloat16 sums are accumulated in float32 and rounded once at the end
    return np.dtype(np.float32) if dtype.kind == "f" and dtype.itemsize == 2 else dtype


def _sum_dtype(dtype: np.dtype, promote_integers: bool = True) -> np.dtype:
    """bool -> the default int; with ``promote_integers``, narrow ints -> the default (u)int."""
    if dtype.kind == "b":
        return dtypes.default_int_dtype()
    if promote_integers and dtype.kind == "i" and dtype.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype()
    if promote_integers and dtype.kind == "u" and dtype.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return dtype


def _count(shape: tuple[int, ...], axes: tuple[int, ...], where: Any, dtype: np.dtype, keepdims: bool) -> Any:
    """How many elements each result reduces: static without ``where``, a sum of the mask with it."""
    if where is None:
        return np.asarray(int(np.prod([shape[a] for a in axes], dtype=np.int64)), dtype)
    mask = broadcast_to(convert(asarray(where), dtypes.bool_), shape)
    return _reduce("count", rp.reduce_sum_p, "sum", convert(mask, dtype), axes, keepdims)


# -- reductions over axes -------------------------------------------------------------------------------------
_COMBINE = {"sum": ew.add_p, "prod": ew.mul_p, "max": ew.max_p, "min": ew.min_p, "and": ew.and_p, "or": ew.or_p,
            "xor": ew.xor_p}


def _reduce(name: str, prim, op: str, a: Any, axes: tuple[int, ...], keepdims: bool, initial: Any = None,
            where: Any = None, has_identity: bool = True) -> Any:
    """``prim`` over ``axes`` of ``a`` (already in the result dtype), with NumPy's ``initial`` and ``where``."""
    typ = aval(a)
    if not has_identity and initial is None:
        if where is not None:
            raise ValueError(f"reduction operation {name} does not have an identity, so to use a where mask one "
                             "has to specify 'initial'")
        if _builtin_any(typ.shape[axis] == 0 for axis in axes):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if where is not None:
        mask = broadcast_to(convert(asarray(where), dtypes.bool_), typ.shape)
        a = _where(mask, a, np.asarray(rp._identity(op, typ.dtype)))
    out = prim.bind(a, axes=axes)
    if initial is not None:
        out = _apply(_COMBINE[op], out, convert(asarray(initial), typ.dtype, weak_type=False))
    return _keepdims(out, axes, typ.ndim) if keepdims else out


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
    _no_out("sum", out)
    a = _array("sum", a)
    dtype = _dtype(dtype) if dtype is not None else _sum_dtype(aval(a).dtype, promote_integers)
    prim, op = (rp.reduce_or_p, "or") if dtype.kind == "b" else (rp.reduce_sum_p, "sum")  # (dtype=bool: JAX's any)
    return _reduce("sum", prim, op, convert(a, dtype), _axes("sum", axis, a.ndim), keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None, promote_integers=True):
    _no_out("prod", out)
    a = _array("prod", a)
    dtype = _dtype(dtype) if dtype is not None else _sum_dtype(aval(a).dtype, promote_integers)
    prim, op = (rp.reduce_and_p, "and") if dtype.kind == "b" else (rp.reduce_prod_p, "prod")  # (bool: JAX's all)
    return _reduce("prod", prim, op, convert(a, dtype), _axes("prod", axis, a.ndim), keepdims, initial, where)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("max", out)
    a = _array("max", a)
    return _reduce("max", rp.reduce_max_p, "max", convert(a, aval(a).dtype), _axes("max", axis, a.ndim), keepdims,
                   initial, where, has_identity=False)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("min", out)
    a = _array("min", a)
    return _reduce("min", rp.reduce_min_p, "min", convert(a, aval(a).dtype), _axes("min", axis, a.ndim), keepdims,
                   initial, where, has_identity=False)


amax, amin = max, min


def _truth(a: Any) -> Any:
    return convert(a, dtypes.bool_)  # x != 0 (NaN counts as true)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out("all", out)
    a = _array("all", a)
    return _reduce("all", rp.reduce_and_p, "and", _truth(a), _axes("all", axis, a.ndim), keepdims, where=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    _no_out("any", out)
    a = _array("any", a)
    return _reduce("any", rp.reduce_or_p, "or", _truth(a), _axes("any", axis, a.ndim), keepdims, where=where)


def count_nonzero(a, axis=None, keepdims=False):
    a = _array("count_nonzero", a)
    return sum(_truth(a), axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak: ``max - min`` along ``axis``."""
    _no_out("ptp", out)
    a = _array("ptp", a)
    return _apply(ew.sub_p, max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of ``a`` and ``b`` is close: ``all(isclose(a, b, rtol, atol, equal_nan))``."""
    import srcjax.runtime.numpy as jnp  # isclose belongs to the elementwise functions, loaded with the package

    return all(jnp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


# -- means and moments ----------------------------------------------------------------------------------------
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _no_out("mean", out)
    a = _array("mean", a)
    dtype = _inexact(aval(a).dtype) if dtype is None else _dtype(dtype)
    axes, work = _axes("mean", axis, a.ndim), _upcast_f16(dtype)
    total = _reduce("mean", rp.reduce_sum_p, "sum", convert(a, work), axes, keepdims, where=where)
    return convert(_div(total, _count(aval(a).shape, axes, where, work, keepdims)), dtype)


def _var(name: str, a, axis, dtype, ddof, keepdims, where, mean_, ignore_nan: bool) -> Any:
    a = _array(name, a)
    in_dtype = _inexact(aval(a).dtype)
    out_dtype = real_dtype(in_dtype) if dtype is None else _dtype(dtype)
    # computed in the input's inexact dtype (complex stays complex), or the requested one's
    work = _upcast_f16(in_dtype if dtype is None or in_dtype.kind == "c" else _inexact(out_dtype))
    axes, a = _axes(name, axis, a.ndim), convert(a, work)
    if mean_ is None:
        center = (nanmean if ignore_nan else mean)(a, axis, dtype=work, keepdims=True, where=where)
    else:
        center = convert(asarray(mean_), work)
    centered = _apply(ew.sub_p, a, center)
    if ignore_nan:  # zeroed before squaring: a NaN's square would send 0 * NaN back to the mean
        centered = _where(_isnan(a), 0, centered)
    if work.kind == "c":  # |z|^2 = z * conj(z), which is real
        squares = ew.real_p.bind(_apply(ew.mul_p, centered, ew.conj_p.bind(centered)))
    else:
        squares = _apply(ew.mul_p, centered, centered)
    real = aval(squares).dtype
    if ignore_nan:
        nan = _isnan(a)
        valid = ew.not_p.bind(nan) if where is None else _apply(ew.and_p, ew.not_p.bind(nan), _bool(where, nan))
        count = sum(valid, axis, dtype=real, keepdims=keepdims)
    else:
        count = _count(aval(a).shape, axes, where, real, keepdims)
    normalizer = _apply(ew.sub_p, count, np.asarray(ddof, real))
    total = _reduce(name, rp.reduce_sum_p, "sum", squares, axes, keepdims, where=where)
    # NumPy divides by max(n - ddof, 0); JAX (and we) answer NaN when nothing is left to divide by. JAX's
    # nanvar divides by 1 there, so its derivative is 0 (var's, dividing by 0 or less, is NaN)
    empty = _apply(ew.le_p, normalizer, 0)
    if ignore_nan:
        normalizer = _where(empty, 1, normalizer)
    result = _where(empty, np.nan, _div(total, normalizer))
    return convert(result, out_dtype)


def _bool(where: Any, like: Any) -> Any:
    return broadcast_to(convert(asarray(where), dtypes.bool_), aval(like).shape)


def _ddof(name: str, ddof: Any, correction: Any) -> Any:
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"jnp.{name}: ddof and correction can't be provided simultaneously")
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    _no_out("var", out)
    return _var("var", a, axis, dtype, _ddof("var", ddof, correction), keepdims, where, mean, False)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    _no_out("std", out)
    return ew.sqrt_p.bind(_var("std", a, axis, dtype, _ddof("std", ddof, correction), keepdims, where, mean, False))


# -- NaN-ignoring reductions ----------------------------------------------------------------------------------
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("nansum", out)
    a = _array("nansum", a)
    return sum(_nan_to(a, 0), axis, dtype, keepdims=keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("nanprod", out)
    a = _array("nanprod", a)
    return prod(_nan_to(a, 1), axis, dtype, keepdims=keepdims, initial=initial, where=where)


def _nan_extremum(name: str, reducer, a, axis, keepdims, initial, where) -> Any:
    a = _array(name, a)
    if aval(a).dtype.kind not in "fc":
        return reducer(a, axis, keepdims=keepdims, initial=initial, where=where)
    op = "max" if reducer is max else "min"
    out = reducer(_nan_to(a, np.asarray(rp._identity(op, aval(a).dtype))), axis, keepdims=keepdims, initial=initial,
                  where=where)
    if initial is not None:  # as in JAX: a slice of NaNs (or one masked out entirely) gives the initial value
        return out
    all_nan = all(_isnan(a), axis, keepdims=keepdims, where=where)
    return _where(all_nan, np.nan, out)  # a slice of NaNs only has NaN as its extremum, as in NumPy


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("nanmax", out)
    return _nan_extremum("nanmax", max, a, axis, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _no_out("nanmin", out)
    return _nan_extremum("nanmin", min, a, axis, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    _no_out("nanmean", out)
    a = _array("nanmean", a)
    if aval(a).dtype.kind not in "fc":
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    dtype = aval(a).dtype if dtype is None else _dtype(dtype)
    work = _upcast_f16(dtype)
    valid = ew.not_p.bind(_isnan(a))
    if where is not None:
        valid = _apply(ew.and_p, valid, _bool(where, a))
    total = nansum(a, axis, dtype=work, keepdims=keepdims, where=where)
    count = sum(valid, axis, dtype=np.finfo(work).dtype if work.kind == "c" else work, keepdims=keepdims)
    return convert(_div(total, convert(count, work)), dtype)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    _no_out("nanvar", out)
    return _var("nanvar", a, axis, dtype, ddof, keepdims, where, mean, True)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    _no_out("nanstd", out)
    return ew.sqrt_p.bind(_var("nanstd", a, axis, dtype, ddof, keepdims, where, mean, True))


# -- arg-reductions -------------------------------------------------------------------------------------------
def _arg(name: str, prim, a, axis, keepdims) -> Any:
    a = _array(name, a)
    if aval(a).dtype.kind == "c":
        raise TypeError(f"jnp.{name}: complex arrays have no order; use the real part or abs() first")
    ndim = a.ndim
    if axis is None:
        a, axis_ = _ravel(a), 0
    else:
        axis_ = _one_axis(name, axis, ndim)
    if aval(a).shape[axis_] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    out = prim.bind(a, axes=(axis_,), index_dtype=dtypes.default_int_dtype())
    if keepdims:
        out = _keepdims(out, tuple(range(ndim)) if axis is None else (axis_,), ndim)
    return out


def argmax(a, axis=None, out=None, keepdims=None):
    _no_out("argmax", out)
    return _arg("argmax", rp.argmax_p, a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
    _no_out("argmin", out)
    return _arg("argmin", rp.argmin_p, a, axis, keepdims)


def _nanarg(name: str, reducer, op: str, a, axis, keepdims) -> Any:
    a = _array(name, a)
    if aval(a).dtype.kind not in "fc":
        return reducer(a, axis, keepdims=keepdims)
    nan = _isnan(a)
    index = reducer(_where(nan, np.asarray(rp._identity(op, aval(a).dtype)), a), axis, keepdims=keepdims)
    return _where(all(nan, axis, keepdims=bool(keepdims)), -1, index)  # -1 marks a slice of NaNs only


def nanargmax(a, axis=None, out=None, keepdims=None):
    _no_out("nanargmax", out)
    return _nanarg("nanargmax", argmax, "max", a, axis, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
    _no_out("nanargmin", out)
    return _nanarg("nanargmin", argmin, "min", a, axis, keepdims)


# -- the reductions of built-in ufuncs' ``reduce`` (``jnp.maximum.reduce``, ``jnp.bitwise_and.reduce``, ...) --------
def _require_integer(name: str, a: Any) -> Any:
    if aval(a).dtype.kind not in "biu":
        raise ValueError(f"integer argument required; got dtype={aval(a).dtype}")
    return a


def _ufunc_reduction(name: str, prim, op: str, preproc=None, has_identity: bool = True, takes_dtype: bool = True):
    """A ``reduce`` of ``prim`` as JAX's ``_reduction`` makes it: ``preproc`` checks or converts the operand,
    which is then converted to ``dtype`` (if given) before it is reduced."""

    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        if dtype is not None and not takes_dtype:  # (JAX compiles jnp.maximum's with dtype an array argument)
            raise TypeError(f"jnp.maximum.reduce takes no dtype (JAX cannot read {dtype!r} as an array argument)")
        _no_out(name, out)
        a = _array(name, a)
        a = a if preproc is None else preproc(name, a)
        a = convert(a, aval(a).dtype if dtype is None else _dtype(dtype))  # (never weakly typed)
        return _reduce(name, prim, op, a, _axes(name, axis, a.ndim), keepdims, initial, where, has_identity)

    reduce.__name__ = reduce.__qualname__ = f"_reduce_{name}"
    return reduce


_reduce_max = _ufunc_reduction("max", rp.reduce_max_p, "max", has_identity=False, takes_dtype=False)
_reduce_min = _ufunc_reduction("min", rp.reduce_min_p, "min", has_identity=False)
_reduce_bitwise_and = _ufunc_reduction("reduce_bitwise_and", rp.reduce_and_p, "and", _require_integer)
_reduce_bitwise_or = _ufunc_reduction("reduce_bitwise_or", rp.reduce_or_p, "or", _require_integer)
_reduce_bitwise_xor = _ufunc_reduction("reduce_bitwise_xor", rp.reduce_xor_p, "xor", _require_integer)


def _logical_reduction(name: str, prim, op: str):
    """A ``reduce`` of the operand's truth values (a complex number's is its real part's, as JAX reads it). With
    an integer ``dtype`` JAX reduces the 0s and 1s bitwise, from the converted ``True``/``False``: the same as
    converting the boolean result; ``initial`` then joins bitwise in ``dtype``."""

    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        _no_out(name, out)
        a = _array(name, a)
        a = _truth(ew.real_p.bind(a) if aval(a).dtype.kind == "c" else a)
        axes = _axes(name, axis, a.ndim)
        dtype = dtypes.bool_ if dtype is None else _dtype(dtype)
        if dtype.kind not in "biu":
            raise TypeError(f"{op} does not accept dtype {dtype} at position 0. Accepted dtypes at position 0 are "
                            "subtypes of integer, bool.")
        result = convert(_reduce(name, prim, op, a, axes, False, where=where), dtype)
        if initial is not None:
            result = _apply(_COMBINE[op], result, convert(asarray(initial), dtype))
        return _keepdims(result, axes, a.ndim) if keepdims else result

    reduce.__name__ = reduce.__qualname__ = f"_{name}"
    return reduce


_reduce_logical_and = _logical_reduction("reduce_logical_and", rp.reduce_and_p, "and")
_reduce_logical_or = _logical_reduction("reduce_logical_or", rp.reduce_or_p, "or")
_reduce_logical_xor = _logical_reduction("reduce_logical_xor", rp.reduce_xor_p, "xor")


# -- cumulative sums and products -----------------------------------------------------------------------------
def _cumulative(name: str, prim, a, axis, dtype, promote: bool) -> Any:
    a = _array(name, a)
    if axis is None or (a.ndim == 0 and aval(a).weak_type):  # (a Python scalar is a vector of one, as in JAX)
        a, axis = _ravel(a), 0 if axis is None else axis
    axis = _one_axis(name, axis, a.ndim)
    if dtype is None:
        dtype = _sum_dtype(aval(a).dtype, promote_integers=promote)
    dtype = _dtype(dtype)
    if dtype.kind == "b":  # (as JAX: the truth values accumulated as ints, the counts read as bools)
        counted = prim.bind(convert(convert(a, dtype), dtypes.default_int_dtype()), axis=axis, reverse=False)
        return convert(counted, dtype)
    return prim.bind(convert(a, dtype), axis=axis, reverse=False)


def cumsum(a, axis=None, dtype=None, out=None):
    _no_out("cumsum", out)
    return _cumulative("cumsum", rp.cumsum_p, a, axis, dtype, promote=False)


def cumprod(a, axis=None, dtype=None, out=None):
    _no_out("cumprod", out)
    return _cumulative("cumprod", rp.cumprod_p, a, axis, dtype, promote=False)


def nancumsum(a, axis=None, dtype=None, out=None):
    _no_out("nancumsum", out)
    return cumsum(_nan_to(_array("nancumsum", a), 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    _no_out("nancumprod", out)
    return cumprod(_nan_to(_array("nancumprod", a), 1), axis, dtype)


def _array_api_cumulative(name: str, prim, identity: int, x, axis, dtype, include_initial: bool) -> Any:
    x = _array(name, x)
    if x.ndim == 0:
        raise ValueError(f"jnp.{name}: the input must be non-scalar; got a scalar")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"jnp.{name}: the input has rank {x.ndim}; axis may be omitted only for 1-d input")
        axis = 0
    out = _cumulative(name, prim, x, axis, dtype, promote=True)
    if include_initial:  # a leading identity along axis
        from srcjax.transpiler.primitives.shape import pad_p

        axis = _one_axis(name, axis, x.ndim)
        config = tuple((1 if a == axis else 0, 0, 0) for a in range(x.ndim))
        out = pad_p.bind(out, np.asarray(identity, aval(out).dtype), padding_config=config)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _array_api_cumulative("cumulative_sum", rp.cumsum_p, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _array_api_cumulative("cumulative_prod", rp.cumprod_p, 1, x, axis, dtype, include_initial)


# -- order statistics -----------------------------------------------------------------------------------------
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _take_last(x: Any, index: Any) -> Any:
    """``x[..., index]`` per position, for an integer ``index`` shaped ``(*q, *x.shape[:-1])``.

    Written as a one-hot select and sum (no gather): every element of the last axis is compared with the
    index, which costs ``n`` per result but needs nothing but elementwise ops and a reduction.
    """
    n = aval(x).shape[-1]
    shape = aval(index).shape + (n,)
    positions = iota_p.bind(dtype=aval(index).dtype, shape=shape, dimension=len(shape) - 1)
    hit = _apply(ew.eq_p, positions, reshape_p.bind(index, new_sizes=aval(index).shape + (1,), dimensions=None))
    picked = _where(hit, broadcast_to(x, shape), 0)
    return rp.reduce_sum_p.bind(picked, axes=(len(shape) - 1,))


def _quantile(name: str, a, q, axis, method: str, keepdims: bool, ignore_nan: bool, weights=None) -> Any:
    if method not in _METHODS:
        raise ValueError(f"jnp.{name}: method can only be {', '.join(repr(m) for m in _METHODS)}; got {method!r}")
    check_arraylike(name, a, q)
    a = asarray(a)
    if aval(a).dtype.kind == "c":
        raise ValueError(f"jnp.{name}: complex input is not supported (the order of complex numbers is poorly "
                         f"defined), as in JAX")
    dtype = _inexact(aval(a).dtype)  # q takes a's dtype; it does not promote it
    if weights is not None:
        check_arraylike(name, weights)
        weights = asarray(weights)
        if aval(weights).dtype.kind == "c":
            raise ValueError(f"jnp.{name}: weights cannot be complex")
        if method != "inverted_cdf":
            raise NotImplementedError(f"jnp.{name}: method {method!r} does not support weights; only "
                                      f"'inverted_cdf' does")
        dtype = _inexact(dtypes.result_type(a, weights))
    a, q = convert(a, dtype), convert(asarray(q), dtype)
    ndim, axes = aval(a).ndim, _axes(name, axis, aval(a).ndim)
    if weights is not None:
        weights = _weights_like(name, convert(weights, dtype), aval(a).shape, axis, axes)
    # move the reduced axes last and merge them into one of size n
    kept = tuple(d for d in range(ndim) if d not in axes)
    shape = aval(a).shape
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    a = transpose_p.bind(a, permutation=kept + axes) if kept + axes != tuple(range(ndim)) else a
    a = reshape_p.bind(a, new_sizes=tuple(shape[d] for d in kept) + (n,), dimensions=None)
    if n == 0:
        out = broadcast_to(asarray(np.asarray(np.nan, dtype)), aval(q).shape + tuple(shape[d] for d in kept))
        return _quantile_keepdims(out, axes, ndim, aval(q).ndim, keepdims)
    if method == "inverted_cdf":
        if weights is None:
            weights = broadcast_to(np.asarray(1, dtype), shape)
        if kept + axes != tuple(range(ndim)):
            weights = transpose_p.bind(weights, permutation=kept + axes)
        weights = reshape_p.bind(weights, new_sizes=aval(a).shape, dimensions=None)
        out = _inverted_cdf(a, weights, q, ignore_nan)
        return _quantile_keepdims(out, axes, ndim, aval(q).ndim, keepdims)
    last = aval(a).ndim - 1
    ordered = rp.sort_p.bind(a, dimension=last, is_stable=True, num_keys=1)[0]  # NaNs sort last
    nan = _isnan(a)
    if ignore_nan:
        count = rp.reduce_sum_p.bind(convert(ew.not_p.bind(nan), dtype), axes=(last,))
    else:
        count = np.asarray(n, dtype)
    # the fractional position of each quantile among the sorted values, clamped to the ends
    q_shape, rest = aval(q).shape, aval(ordered).shape[:-1]
    qb = broadcast_to(reshape_p.bind(q, new_sizes=q_shape + (1,) * len(rest), dimensions=None), q_shape + rest)
    top = _apply(ew.sub_p, count, 1)
    pos = _apply(ew.min_p, _apply(ew.max_p, _apply(ew.mul_p, qb, top), 0), _apply(ew.max_p, top, 0))
    low, high = ew.floor_p.bind(pos), ew.ceil_p.bind(pos)
    index_dtype = dtypes.default_int_dtype()
    low_value = _take_last(ordered, convert(low, index_dtype))
    high_value = _take_last(ordered, convert(high, index_dtype))
    frac = _apply(ew.sub_p, pos, low)
    if method == "linear":
        out = _apply(ew.add_p, _apply(ew.mul_p, low_value, _apply(ew.sub_p, 1, frac)),
                     _apply(ew.mul_p, high_value, frac))
    elif method == "lower":
        out = low_value
    elif method == "higher":
        out = high_value
    elif method == "midpoint":
        out = _apply(ew.mul_p, _apply(ew.add_p, low_value, high_value), 0.5)
    else:  # nearest: ties go to the lower neighbour
        out = _where(_apply(ew.gt_p, frac, 0.5), high_value, low_value)
    if ignore_nan:
        out = _where(_apply(ew.eq_p, broadcast_to(count, aval(out).shape), 0), np.nan, out)
    else:
        out = _where(broadcast_to(rp.reduce_or_p.bind(nan, axes=(last,)), aval(out).shape), np.nan, out)
    return _quantile_keepdims(out, axes, ndim, len(q_shape), keepdims)


def _weights_like(name: str, weights: Any, shape: tuple[int, ...], axis: Any, axes: tuple[int, ...]) -> Any:
    """Quantile weights of ``a``'s shape, or of the reduced axes' (then spread over the others), as in JAX."""
    if aval(weights).shape == shape:
        return weights
    if axis is None:
        raise ValueError(f"jnp.{name}: weights must have a's shape {shape} when axis is None, got "
                         f"{aval(weights).shape}")
    given = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    order = tuple(operator.index(d) % len(shape) for d in given)
    if aval(weights).shape != tuple(shape[d] for d in order):
        raise ValueError(f"jnp.{name}: weights shape {aval(weights).shape} must match the reduced axes "
                         f"{tuple(shape[d] for d in order)}")
    from srcjax.transpiler.primitives.shape import broadcast_in_dim_p

    ranks = tuple(sorted(range(len(order)), key=lambda i: order[i]))  # the weights' axes in a's order
    if ranks != tuple(range(len(order))):
        weights = transpose_p.bind(weights, permutation=ranks)
    return broadcast_in_dim_p.bind(weights, shape=shape, broadcast_dimensions=axes)


def _inverted_cdf(a: Any, weights: Any, q: Any, ignore_nan: bool) -> Any:
    """JAX's ``inverted_cdf`` over the last axis: the first sorted value whose cumulative weight reaches q times
    the total; negative or NaN weights give NaN, as do NaN values (all of them, when ``ignore_nan``)."""
    last = aval(a).ndim - 1
    n = aval(a).shape[-1]
    ordered, weights = rp.sort_p.bind(a, weights, dimension=last, is_stable=True, num_keys=1)  # NaNs sort last
    nan = _isnan(ordered)
    bad = ew.or_p.bind(_apply(ew.lt_p, weights, 0), _isnan(weights))
    clean = _where(ew.or_p.bind(bad, nan), 0, weights)
    cumulative = rp.cumsum_p.bind(clean, axis=last, reverse=False)
    total = _take_last(cumulative, broadcast_to(np.asarray(n - 1, dtypes.default_int_dtype()), aval(a).shape[:-1]))
    q_shape, rest = aval(q).shape, aval(ordered).shape[:-1]
    target = _apply(ew.mul_p, reshape_p.bind(q, new_sizes=q_shape + (1,) * len(rest), dimensions=None), total)
    below = _apply(ew.lt_p, cumulative, reshape_p.bind(target, new_sizes=aval(target).shape + (1,), dimensions=None))
    index = rp.reduce_sum_p.bind(convert(below, dtypes.default_int_dtype()), axes=(len(q_shape) + last,))
    valid = rp.reduce_sum_p.bind(convert(ew.not_p.bind(nan), dtypes.default_int_dtype()), axes=(last,)) \
        if ignore_nan else np.asarray(n, dtypes.default_int_dtype())
    index = _apply(ew.max_p, _apply(ew.min_p, index, _apply(ew.sub_p, valid, 1)), 0)
    out = _take_last(ordered, index)
    force = rp.reduce_or_p.bind(bad, axes=(last,))
    if ignore_nan:
        force = ew.or_p.bind(force, _apply(ew.eq_p, valid, 0))
    else:
        force = ew.or_p.bind(force, rp.reduce_or_p.bind(nan, axes=(last,)))
    return _where(broadcast_to(force, aval(out).shape), np.nan, out)


def _quantile_keepdims(out: Any, axes: tuple[int, ...], ndim: int, q_ndim: int, keepdims: bool) -> Any:
    if not keepdims:
        return out
    shape = aval(out).shape
    kept = iter(shape[q_ndim:])
    full = shape[:q_ndim] + tuple(1 if d in axes else next(kept) for d in range(ndim))
    return reshape_p.bind(out, new_sizes=full, dimensions=None)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    _no_out("quantile", out)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    _no_out("nanquantile", out)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _percent(name: str, q: Any) -> Any:
    check_arraylike(name, q)
    q = asarray(q)
    return _apply(ew.div_p, convert(q, _inexact(aval(q).dtype)), 100.0)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
               out_sharding=None):
    _no_out("percentile", out)
    return _quantile("percentile", a, _percent("percentile", q), axis, method, keepdims, False, weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  weights=None):
    _no_out("nanpercentile", out)
    return _quantile("nanpercentile", a, _percent("nanpercentile", q), axis, method, keepdims, True, weights)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no_out("median", out)
    return _quantile("median", a, 0.5, axis, "midpoint", keepdims, False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _no_out("nanmedian", out)
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True)


# -- weighted average -----------------------------------------------------------------------------------------
def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """``sum(a * weights) / sum(weights)`` along ``axis``; with ``returned``, also the sum of the weights."""
    a = _array("average", a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        count = _count(aval(a).shape, _axes("average", axis, a.ndim), None, aval(avg).dtype, keepdims)
        return (avg, broadcast_to(count, aval(avg).shape)) if returned else avg
    check_arraylike("average", weights)
    weights = asarray(weights)
    dtype = _inexact(dtypes.result_type(a, weights))
    a, weights = convert(a, dtype), convert(weights, dtype)
    a_shape, w_shape = aval(a).shape, aval(weights).shape
    if a_shape != w_shape:
        if axis is None:
            raise ValueError("jnp.average: axis must be specified when shapes of a and weights differ")
        if isinstance(axis, (tuple, list)):
            raise ValueError("jnp.average: a single axis is expected when shapes of a and weights differ")
        axis_ = _one_axis("average", axis, len(a_shape))
        if w_shape != (a_shape[axis_],):
            raise ValueError(f"jnp.average: weights of shape {w_shape} must be 1-d with the length "
                             f"{a_shape[axis_]} of axis {axis} of a (shape {a_shape})")
        from srcjax.transpiler.primitives.shape import broadcast_in_dim_p

        weights = broadcast_in_dim_p.bind(weights, shape=a_shape, broadcast_dimensions=(axis_,))
    total_weight = sum(weights, axis, keepdims=keepdims)
    avg = _div(sum(_apply(ew.mul_p, a, weights), axis, keepdims=keepdims), total_weight)
    return (avg, broadcast_to(total_weight, aval(avg).shape)) if returned else avg


# -- the eager fast path: these read only their operands' types and take options as keywords -----------------
sum, prod, max, min, all, any, mean, var, std, argmax, argmin = (  # noqa: A001 - jnp's names
    fast_path(f, chain=True) for f in (sum, prod, max, min, all, any, mean, var, std, argmax, argmin))
amax, amin = max, min
