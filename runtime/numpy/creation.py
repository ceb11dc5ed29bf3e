"""Array creation: filled arrays, ranges, grids, identity-like and triangular matrices, diagonals, windows.

Shapes, lengths and counts are static: Python ints (or concrete integer arrays, read as ints). Values are
built from ``iota``, broadcasting and arithmetic, never from NumPy data, so every function here also works
on the symbolic values of a function being compiled (``eye(3, k=k)`` with a symbolic ``k`` included).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp  # the package namespace, resolved at call time (ufuncs, reductions, ...)
from srcjax.runtime import dtypes, lax
from srcjax.runtime.numpy._core import (
    TypeOrValueError, ZeroDivisionOrValueError, aval, broadcast_to, check_arraylike, convert, is_arraylike, is_concrete,
)
from srcjax.transpiler.ir import ConcretizationError

__all__ = [
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace",
    "logspace", "geomspace", "eye", "identity", "tri", "tril", "triu", "diag", "diagflat", "diagonal", "meshgrid",
    "mgrid", "ogrid", "indices", "fromfunction", "copy", "array_equal", "array_equiv", "bartlett", "blackman",
    "hamming", "hanning", "kaiser", "frombuffer", "fromstring", "fromfile", "fromiter", "from_dlpack",
]


# -- static arguments -----------------------------------------------------------------------------------------
def static_int(x: Any, name: str, what: str) -> int:
    """A Python int from an int-like that must be known before running (a shape, a count, an axis)."""
    if not is_concrete(x):  # (a ConcretizationError: a static-range loop whose index it is retries unrolled)
        raise ConcretizationError(f"{name}: {what} must be static (a Python int), got a symbolic value of type "
                                  f"{aval(x)}; shapes are fixed when a function is compiled, so pass it as a "
                                  f"static argument")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an integer, got {x!r}") from None


def canonicalize_shape(shape: Any, name: str) -> tuple[int, ...]:
    """A shape from an int, a sequence of ints or a 0-d integer array; sizes must be non-negative."""
    if isinstance(shape, (int, np.integer)) or (is_arraylike(shape) and not isinstance(shape, (list, tuple))
                                                and len(aval(shape).shape) == 0):
        shape = (shape,)
    try:
        items = list(shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a sequence of ints, got {shape!r}") from None
    out = tuple(static_int(d, name, "each dimension of the shape") for d in items)
    if any(d < 0 for d in out):
        raise TypeOrValueError(f"{name}: negative dimensions are not allowed, got shape {out}")
    return out


def canonical_dtype(dtype: Any, default: np.dtype | None = None, name: str = "") -> np.dtype | None:
    """The dtype a user asked for, as JAX stores it (64-bit types narrow, with JAX's warning, unless x64 is
    enabled); ``default`` when none was."""
    if dtype is None:
        return default
    return dtypes.check_user_dtype(dtype, name)


# -- filled arrays --------------------------------------------------------------------------------------------
def full(shape: Any, fill_value: Any, dtype: Any = None, *, device=None, out_sharding=None) -> Any:
    check_arraylike("full", fill_value)
    shape = canonicalize_shape(shape, "full")
    want = canonical_dtype(dtype)
    # A Python scalar fill value stays weakly typed unless a dtype is asked for, as in JAX.
    if want is None and _python_int(fill_value):
        return broadcast_to(_filled(fill_value, dtypes.default_int_dtype(), True), shape)
    value = jnp.asarray(fill_value) if want is None else _filled(fill_value, want, False)
    return broadcast_to(value, shape)


def _python_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, (bool, np.integer))


def _filled(fill_value: Any, dtype: np.dtype, weak: bool) -> Any:
    """``fill_value`` as ``dtype``, as JAX's ``lax.full`` converts it: a Python int an integer dtype cannot hold
    wraps (through NumPy's 64-bit integers, ``full(3, 2**35, int32)`` is zeros), where arithmetic refuses it."""
    if _python_int(fill_value) and dtype.kind in "iu" and -2**63 <= fill_value < 2**64:
        fill_value = np.asarray(fill_value).astype(dtype)
    return convert(fill_value, dtype, weak)


def zeros(shape: Any, dtype: Any = None, *, device=None, out_sharding=None) -> Any:
    return full(shape, 0, canonical_dtype(dtype, dtypes.default_float_dtype()))


def ones(shape: Any, dtype: Any = None, *, device=None, out_sharding=None) -> Any:
    return full(shape, 1, canonical_dtype(dtype, dtypes.default_float_dtype()))


def empty(shape: Any, dtype: Any = None, *, device=None, out_sharding=None) -> Any:
    """Like JAX, an "uninitialised" array is filled with zeros."""
    return zeros(shape, dtype)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *, device=None,
              out_sharding=None) -> Any:
    check_arraylike("full_like", a, fill_value)
    like = aval(a)
    # The result takes a's dtype and weak bit unless a dtype is given (``full_like(2.0, 1)`` stays weak).
    want, weak = (like.dtype, like.weak_type) if dtype is None else (canonical_dtype(dtype), False)
    shape = like.shape if shape is None else canonicalize_shape(shape, "full_like")
    return broadcast_to(_filled(fill_value, want, weak), shape)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device=None, out_sharding=None) -> Any:
    return full_like(a, 0, dtype, shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device=None, out_sharding=None) -> Any:
    return full_like(a, 1, dtype, shape)


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *, device=None) -> Any:
    return full_like(prototype, 0, dtype, shape)


# -- ranges ---------------------------------------------------------------------------------------------------
def _static_number(x: Any, what: str) -> Any:
    if not is_concrete(x):
        raise ConcretizationError(
            f"jnp.arange: {what} must be static (a Python number or a concrete array), got a symbolic value of type "
            f"{aval(x)}; the length of the result depends on it. Use a static bound, or build the range with a fixed "
            f"length and add an offset")
    check_arraylike("arange", x)
    if len(aval(x).shape) != 0:
        raise ValueError(f"jnp.arange: {what} must be a scalar, got an array of shape {aval(x).shape}")
    value = np.asarray(x).item() if not isinstance(x, (int, float, complex)) else x
    if isinstance(value, complex):
        raise TypeError(f"jnp.arange: complex {what} {x!r} is not supported")
    return value


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *, device=None,
           out_sharding=None) -> Any:
    given = {"start": start, "stop": stop, "step": step}
    value = {what: _static_number(v, what) for what, v in given.items() if v is not None}
    if stop is None:  # arange(stop) and arange(stop, step=s) count from 0
        lo, hi = 0, value["start"]
    else:
        lo, hi = value["start"], value["stop"]
    by = value.get("step", 1)
    # The dtype follows the arguments (Python ints give the default int) and is never weak.
    want = canonical_dtype(dtype) if dtype is not None else dtypes.result_type(*(v for v in given.values()
                                                                                  if v is not None))
    if want.kind == "b":
        raise TypeError("jnp.arange: dtype bool is not supported (use an integer or floating dtype)")
    if want.kind == "c":  # the range in the real parts, as JAX's iota counts
        return convert(arange(start, stop, step, np.dtype(f"f{want.itemsize // 2}")), want)
    if by == 0:
        raise ZeroDivisionOrValueError("jnp.arange: step must not be zero")
    if all(isinstance(v, int) for v in (lo, hi, by)):
        length = len(range(lo, hi, by))
    else:  # NumPy's count: ceil((stop - start) / step)
        length = max(0, math.ceil((hi - lo) / by))
    out = lax.iota(want, length)  # start + i * step
    if by != 1:
        out = jnp.multiply(out, convert(by, want))
    if lo != 0:
        out = jnp.add(out, convert(lo, want))
    return out


def _inexact_dtype(*args: Any) -> np.dtype:
    return dtypes.to_inexact_dtype(dtypes.result_type(*args))


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0, *, device=None) -> Any:
    check_arraylike("linspace", start, stop)
    num = static_int(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    want = canonical_dtype(dtype, _inexact_dtype(start, stop))
    compute = dtypes.to_inexact_dtype(want)  # the requested dtype's float, as in JAX (float16 computes in float16)
    shape = jnp.broadcast_shapes(aval(start).shape, aval(stop).shape)
    start, stop = (broadcast_to(convert(v, compute), shape) for v in (start, stop))
    batch = len(shape)
    intervals = num - 1 if endpoint else num
    first = lax.broadcast_in_dim(start, (*shape, 1), tuple(range(batch)))
    if intervals > 0:
        # sample i is start (1 - i r) + i (stop r) with r = 1 / intervals: JAX's start (1 - t) + stop t, t = i /
        # intervals, as XLA compiles it (a division by a constant becomes a product with its reciprocal). float16
        # agrees with JAX to the last bit; float32 may differ in it where XLA's CPU code fuses a multiply-add.
        # With an endpoint, the last sample is exactly stop
        step = jnp.true_divide(jnp.subtract(stop, start), convert(intervals, compute))
        real = np.finfo(compute).dtype
        counter = lax.broadcasted_iota(real, (*shape, intervals), batch)
        reciprocal = convert(1 / np.asarray(intervals, real), real)
        t = convert(jnp.multiply(counter, reciprocal), compute)
        last = lax.broadcast_in_dim(jnp.multiply(stop, convert(reciprocal, compute)), (*shape, 1), tuple(range(batch)))
        out = jnp.add(jnp.multiply(first, jnp.subtract(convert(1, compute), t)),
                      jnp.multiply(convert(counter, compute), last))
        if endpoint:
            out = jnp.concatenate([out, lax.broadcast_in_dim(stop, (*shape, 1), tuple(range(batch)))], axis=batch)
    else:  # no interval (num is 0, or 1 with the endpoint): NumPy and JAX report a NaN step
        step = full(shape, np.nan, compute)
        out = broadcast_to(first, (*shape, num))
    out = jnp.moveaxis(out, batch, axis)
    if want.kind in "iu":  # integer samples round down, as NumPy's do
        out = jnp.floor(out)
    out = convert(out, want)
    return (out, step) if retstep else out


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0, dtype: Any = None,
             axis: int = 0) -> Any:
    check_arraylike("logspace", start, stop, base)
    compute = _inexact_dtype(start, stop)
    exponents = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    base = convert(base, compute)
    if len(aval(base).shape):
        base = jnp.expand_dims(base, axis)
    return convert(jnp.power(base, exponents), canonical_dtype(dtype, compute))


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Any:
    check_arraylike("geomspace", start, stop)
    compute = _inexact_dtype(start, stop)
    shape = jnp.broadcast_shapes(aval(start).shape, aval(stop).shape)
    start, stop = (broadcast_to(convert(v, compute), shape) for v in (start, stop))
    batch = len(shape)
    if compute.kind == "c":  # a geometric sequence is a straight line of the logarithms
        out = jnp.exp(linspace(jnp.log(start), jnp.log(stop), num, endpoint=endpoint, axis=batch))
    else:  # factor out the common sign (NaN where start and stop differ in sign, as in NumPy)
        sign = jnp.sign(start)
        magnitude = logspace(jnp.log10(start * sign), jnp.log10(stop * sign), num, endpoint=endpoint, axis=batch)
        out = lax.broadcast_in_dim(sign, (*shape, 1), tuple(range(batch))) * magnitude
    if num > 0:  # the ends are exactly start and stop, not exp(log(start))
        last = num - 1 if endpoint and num > 1 else num
        pieces = [lax.broadcast_in_dim(start, (*shape, 1), tuple(range(batch))),
                  lax.slice_in_dim(out, 1, last, axis=batch)]
        if last < num:
            pieces.append(lax.broadcast_in_dim(stop, (*shape, 1), tuple(range(batch))))
        out = jnp.concatenate(pieces, axis=batch)
    return convert(jnp.moveaxis(out, batch, axis), canonical_dtype(dtype, compute))


# -- matrices -------------------------------------------------------------------------------------------------
def _diagonal_offsets(n: int, m: int) -> Any:
    """``col - row`` for an ``n x m`` matrix: compared with ``k`` it picks out the k-th diagonal."""
    return jnp.subtract(lax.broadcasted_iota(dtypes.int32, (n, m), 1), lax.broadcasted_iota(dtypes.int32, (n, m), 0))


def eye(N: int, M: int | None = None, k: Any = 0, dtype: Any = None, *, device=None) -> Any:
    n = static_int(N, "eye", "N")
    m = n if M is None else static_int(M, "eye", "M")
    if n < 0 or m < 0:
        raise ValueError(f"eye: negative dimensions are not allowed, got N={n}, M={m}")
    check_arraylike("eye", k)
    mask = jnp.equal(_diagonal_offsets(n, m), k)
    return convert(mask, canonical_dtype(dtype, dtypes.default_float_dtype()))


def identity(n: int, dtype: Any = None) -> Any:
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: Any = 0, dtype: Any = None) -> Any:
    n = static_int(N, "tri", "N")
    m = n if M is None else static_int(M, "tri", "M")
    check_arraylike("tri", k)
    # float32 by default, also with x64 on (JAX's default here, not the default float)
    return convert(jnp.less_equal(_diagonal_offsets(n, m), k), canonical_dtype(dtype, dtypes.float32))


def _triangle(name: str, m: Any, keep: Callable[[Any], Any]) -> Any:
    check_arraylike(name, m)
    shape = aval(m).shape
    if len(shape) < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D, got shape {shape}")
    mask = keep(_diagonal_offsets(*shape[-2:]))
    return jnp.where(mask, m, jnp.zeros_like(m))


def tril(m: Any, k: Any = 0) -> Any:
    """Zeros above the k-th diagonal."""
    return _triangle("tril", m, lambda offsets: jnp.less_equal(offsets, k))


def triu(m: Any, k: Any = 0) -> Any:
    """Zeros below the k-th diagonal."""
    return _triangle("triu", m, lambda offsets: jnp.greater_equal(offsets, k))


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset`` diagonal over ``axis1, axis2``, as the last axis of the result."""
    check_arraylike("diagonal", a)
    a = jnp.asarray(a)
    ndim = len(aval(a).shape)
    if ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape {aval(a).shape}")
    offset = static_int(offset, "diagonal", "offset")
    a = jnp.moveaxis(a, (axis1, axis2), (-2, -1))
    *batch, n, m = aval(a).shape
    row, col = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(n - row, m - col))
    # Element i of the diagonal is at (row + i, col + i), i.e. at (row * m + col) + i * (m + 1) of the
    # flattened matrix: a strided slice, with no gather.
    flat = lax.reshape(a, (*batch, n * m))
    begin = row * m + col if length else 0
    end = begin + (length - 1) * (m + 1) + 1 if length else 0
    out = lax.slice_in_dim(flat, begin, end, m + 1, axis=len(batch))
    return convert(out, aval(out).dtype)  # never weak, as in JAX


def diag(v: Any, k: int = 0) -> Any:
    """The k-th diagonal of a matrix, or a square matrix with ``v`` on its k-th diagonal."""
    check_arraylike("diag", v)
    v = jnp.asarray(v)
    k = static_int(k, "diag", "k")
    shape = aval(v).shape
    if len(shape) == 2:
        return diagonal(v, k)
    if len(shape) != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got shape {shape}")
    n = shape[0] + abs(k)
    # Row i of the result holds v[i] (k >= 0) or column j holds v[j] (k < 0); the mask keeps the diagonal.
    values = lax.pad(v, convert(0, aval(v).dtype, aval(v).weak_type), [(0, abs(k), 0)])
    values = lax.broadcast_in_dim(values, (n, n), (0,) if k >= 0 else (1,))
    return jnp.where(jnp.equal(_diagonal_offsets(n, n), k), values, jnp.zeros_like(values))


def diagflat(v: Any, k: int = 0) -> Any:
    check_arraylike("diagflat", v)
    out = diag(jnp.ravel(v), k)
    return convert(out, aval(out).dtype)  # never weak, as in JAX


# -- grids ----------------------------------------------------------------------------------------------------
def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    dimensions = canonicalize_shape(dimensions, "indices")
    want = canonical_dtype(dtype, dtypes.default_int_dtype())
    ndim = len(dimensions)
    if sparse:
        return tuple(lax.broadcasted_iota(want, tuple(d if i == axis else 1 for i, d in enumerate(dimensions)), axis)
                     for axis in range(ndim))
    if ndim == 0:
        return zeros((0,), want)
    return jnp.stack([lax.broadcasted_iota(want, dimensions, axis) for axis in range(ndim)])


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list[Any]:
    check_arraylike("meshgrid", *xi)
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [jnp.asarray(x) for x in xi]
    if any(len(aval(x).shape) != 1 for x in arrays):
        raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shapes {[aval(x).shape for x in arrays]}")
    sizes = [aval(x).shape[0] for x in arrays]
    axes = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) >= 2:  # Cartesian: the first argument varies along columns
        sizes[0], sizes[1] = sizes[1], sizes[0]
        axes[0], axes[1] = 1, 0
    out = []
    for x, axis in zip(arrays, axes, strict=True):
        shape = tuple(s if i == axis else 1 for i, s in enumerate(sizes)) if sparse else tuple(sizes)
        out.append(lax.broadcast_in_dim(x, shape, (axis,)))
    return out


class _IndexGrid:
    """``mgrid[0:3, 0:5:2]`` and ``ogrid[...]``: slices with a complex step give that many points, ends included."""

    def __init__(self, sparse: bool, name: str):
        self.sparse, self.name = sparse, name

    def __getitem__(self, key: Any) -> Any:
        single = isinstance(key, slice)
        slices = (key,) if single else tuple(key)
        if not all(isinstance(s, slice) for s in slices):
            raise TypeError(f"jnp.{self.name}: index with slices such as [0:3, 0:1:5j], got {key!r}")
        bounds = [(0 if s.start is None else s.start, s.stop, 1 if s.step is None else s.step) for s in slices]
        if any(stop is None for _, stop, _ in bounds):
            raise ValueError(f"jnp.{self.name}: every slice needs a stop, got {key!r}")
        is_float = any(isinstance(v, (float, np.floating, complex)) for b in bounds for v in b)
        want = dtypes.default_float_dtype() if is_float else dtypes.default_int_dtype()
        axes = [linspace(lo, hi, int(abs(by)), dtype=want) if isinstance(by, complex) else arange(lo, hi, by, want)
                for lo, hi, by in bounds]
        if single:
            return axes[0]
        grids = meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return grids if self.sparse else jnp.stack(grids)


mgrid = _IndexGrid(sparse=False, name="mgrid")
ogrid = _IndexGrid(sparse=True, name="ogrid")


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float, **kwargs: Any) -> Any:
    """``function`` applied to the index grids of ``shape`` (each argument holds one coordinate)."""
    shape = canonicalize_shape(shape, "fromfunction")
    coordinates = indices(shape, dtype) if shape else ()
    out = function(*coordinates, **kwargs)
    # JAX maps the function over every index, so a constant result fills the whole shape.
    if is_arraylike(out) and len(aval(out).shape) == 0:
        return broadcast_to(out, shape)
    return out


# -- copies and comparisons -----------------------------------------------------------------------------------
def copy(a: Any, order: str | None = None) -> Any:
    """Arrays are immutable, so a copy is the array itself as an ``Array``."""
    check_arraylike("copy", a)
    return jnp.array(a, copy=True, order="K" if order is None else order)


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    try:
        a1, a2 = jnp.asarray(a1), jnp.asarray(a2)
    except (TypeError, ValueError):
        return jnp.asarray(False)
    if aval(a1).shape != aval(a2).shape:
        return jnp.asarray(False)
    same = jnp.equal(a1, a2)
    if equal_nan:
        same = jnp.logical_or(same, jnp.logical_and(jnp.isnan(a1), jnp.isnan(a2)))
    return jnp.all(same)


def array_equiv(a1: Any, a2: Any) -> Any:
    """Equal after broadcasting to a common shape."""
    try:
        a1, a2 = jnp.asarray(a1), jnp.asarray(a2)
        jnp.broadcast_shapes(aval(a1).shape, aval(a2).shape)
    except (TypeError, ValueError):
        return jnp.asarray(False)
    return jnp.all(jnp.equal(a1, a2))


# -- window functions -----------------------------------------------------------------------------------------
def _window(name: str, M: Any, formula: Callable[[Any, int], Any]) -> Any:
    m = static_int(M, name, "M")
    if m < 1:
        return zeros((0,))
    if m == 1:
        return ones((1,))
    # n runs over -(M-1), -(M-3), ..., M-1: symmetric about the window's centre
    n = arange(1 - m, m, 2, dtype=dtypes.default_float_dtype())
    return formula(n, m - 1)


def bartlett(M: int) -> Any:
    """Triangular window: 1 - |n| / (M - 1)."""
    return _window("bartlett", M, lambda n, w: 1 - jnp.abs(n) / w)


def hanning(M: int) -> Any:
    """0.5 + 0.5 cos(pi n / (M - 1))."""
    return _window("hanning", M, lambda n, w: 0.5 + 0.5 * jnp.cos(np.pi * n / w))


def hamming(M: int) -> Any:
    """0.54 + 0.46 cos(pi n / (M - 1))."""
    return _window("hamming", M, lambda n, w: 0.54 + 0.46 * jnp.cos(np.pi * n / w))


def blackman(M: int) -> Any:
    """0.42 + 0.5 cos(pi n / (M - 1)) + 0.08 cos(2 pi n / (M - 1))."""
    return _window("blackman", M, lambda n, w: 0.42 + 0.5 * jnp.cos(np.pi * n / w) + 0.08 * jnp.cos(2 * np.pi * n / w))


def kaiser(M: int, beta: Any) -> Any:
    """I0(beta sqrt(1 - (n / (M - 1))^2)) / I0(beta), the modified Bessel function I0."""
    check_arraylike("kaiser", beta)
    beta = convert(beta, dtypes.default_float_dtype())
    return _window("kaiser", M, lambda n, w: jnp.i0(beta * jnp.sqrt(1 - (n / w) ** 2)) / jnp.i0(beta))


# -- from host data (static by nature: the bytes are read here, before anything runs) -------------------------
def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    return jnp.asarray(np.frombuffer(buffer, np.dtype(dtype), count, offset))  # float reads float64, then narrows


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    return jnp.asarray(np.fromstring(string, np.dtype(dtype), count, sep=sep))


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    return jnp.asarray(np.from_dlpack(x))


def fromfile(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("jnp.fromfile() is not implemented because it may be non-pure (it reads a file); use "
                              "jnp.asarray(np.fromfile(...)) outside compiled functions instead")


def fromiter(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("jnp.fromiter() is not implemented because it may be non-pure (it consumes an "
                              "iterator); use jnp.asarray(np.fromiter(...)) outside compiled functions instead")
