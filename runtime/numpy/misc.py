"""NumPy's numerical odds and ends: differences and integrals, interpolation, polynomials, histograms, set
operations, covariance, function application helpers, bit packing, printing and file I/O.

They are written over the other ``jnp`` functions. Where NumPy's result has a shape that depends on values
(``bincount``, the set operations), the values must be concrete unless a static ``length=``/``size=`` is given.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp  # the package namespace, resolved at call time (ufuncs, reductions, ...)
from srcjax.runtime import dtypes, lax
from srcjax.runtime.numpy._core import (
    aval,
    broadcast_to,
    check_arraylike,
    check_rank_promotion,
    convert,
    is_arraylike,
    is_concrete,
    promote_dtypes,
    promote_dtypes_inexact,
)
from srcjax.runtime.numpy.creation import canonical_dtype, static_int
from srcjax.runtime.numpy.manipulation import normalize_axes, normalize_axis

__all__ = [
    "diff", "ediff1d", "gradient", "trapezoid", "interp", "unwrap", "polyval", "polyadd", "polysub", "polymul",
    "polydiv", "polyder", "polyint", "poly", "roots", "polyfit", "vander", "i0", "histogram", "histogram_bin_edges",
    "histogram2d", "histogramdd", "bincount", "digitize", "isin", "intersect1d", "union1d", "setdiff1d",
    "setxor1d", "cov", "corrcoef", "apply_along_axis", "apply_over_axes", "piecewise", "vectorize", "packbits",
    "unpackbits", "fill_diagonal", "printoptions", "set_printoptions", "get_printoptions", "save", "savez", "load",
    "iterable", "array_repr", "array_str",
]


def _array(name: str, a: Any) -> Any:
    check_arraylike(name, a)
    return jnp.asarray(a)


def _shape(a: Any) -> tuple[int, ...]:
    return aval(a).shape


def _slice(a: Any, start: int, stop: int, axis: int) -> Any:
    return lax.slice_in_dim(a, start, stop, 1, axis=axis)


def _along(v: Any, axis: int, ndim: int) -> Any:
    """A 1-d ``v`` shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    return lax.reshape(v, tuple(_shape(v)[0] if i == axis else 1 for i in range(ndim)))


# -- differences and integrals ---------------------------------------------------------------------------------
def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The n-th forward difference ``a[1:] - a[:-1]`` along ``axis`` (for bools: ``a[1:] != a[:-1]``)."""
    a = _array("diff", a)
    shape = _shape(a)
    if not shape:
        raise ValueError(f"diff requires input that is at least one dimensional; got shape {shape}")
    n = static_int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if n == 0:
        return a
    axis = normalize_axis(axis, len(shape), "diff")
    parts = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        extra = _array("diff", extra)
        if not _shape(extra):  # a scalar stands for one slice along the axis
            extra = broadcast_to(extra, shape[:axis] + (1,) + shape[axis + 1:])
        parts.append(extra)
    a = jnp.concatenate(parts, axis) if len(parts) > 1 else a
    op = jnp.not_equal if aval(a).dtype == np.bool_ else jnp.subtract
    for _ in range(n):
        size = _shape(a)[axis]
        a = op(_slice(a, min(1, size), size, axis), _slice(a, 0, max(size - 1, 0), axis))
    return a


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of the flattened array, with ``to_begin``/``to_end`` (cast to its dtype) around them."""
    ary = jnp.ravel(_array("ediff1d", ary))
    typ = aval(ary)
    if typ.dtype == np.bool_:  # (JAX subtracts, which booleans refuse; jnp.diff compares them instead)
        raise TypeError("jnp.ediff1d does not accept bool arrays (booleans cannot be subtracted); use jnp.diff, "
                        "which gives their changes as jnp.not_equal")
    out = diff(ary) if typ.shape[0] else ary
    parts = [jnp.ravel(convert(_array("ediff1d", x), typ.dtype, typ.weak_type)) if x is not None else None
             for x in (to_begin, to_end)]
    return jnp.concatenate([p for p in (parts[0], out, parts[1]) if p is not None])


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None, edge_order: int | None = None) -> Any:
    """Central differences inside, one-sided ones at the ends; spacings are scalars or coordinate arrays."""
    if edge_order is not None and edge_order != 1:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported (only 1).")
    f = _array("gradient", f)
    (f,) = promote_dtypes_inexact(f)
    ndim = len(_shape(f))
    axes = tuple(range(ndim)) if axis is None else normalize_axes(axis, ndim, "gradient")
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"gradient: give one spacing, or one per axis ({len(axes)}), got {len(varargs)}")
    out = [_gradient_axis(f, ax, h) for ax, h in zip(axes, spacings, strict=True)]
    return out[0] if len(out) == 1 else out


def _gradient_axis(f: Any, axis: int, h: Any) -> Any:
    n = _shape(f)[axis]
    if n < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 elements are "
                         "required.")
    ndim = len(_shape(f))
    check_arraylike("gradient", h)
    h = jnp.asarray(h)
    first = (_slice(f, 1, 2, axis) - _slice(f, 0, 1, axis))
    last = (_slice(f, n - 1, n, axis) - _slice(f, n - 2, n - 1, axis))
    if not _shape(h):  # uniform spacing: (f[i+1] - f[i-1]) / 2h inside
        inner = (_slice(f, 2, n, axis) - _slice(f, 0, n - 2, axis)) / (2 * h)
        return jnp.concatenate([first / h, inner, last / h], axis)
    if _shape(h) != (n,):
        raise ValueError(f"gradient: coordinates along axis {axis} must be a 1-d array of length {n}, got shape "
                         f"{_shape(h)}")
    dx = jnp.diff(h)
    left, right = _along(_slice(dx, 0, n - 2, 0), axis, ndim), _along(_slice(dx, 1, n - 1, 0), axis, ndim)
    # Second-order differences for uneven steps dl (left) and dr (right) of the centre point.
    inner = (-right / (left * (left + right)) * _slice(f, 0, n - 2, axis)
             + (right - left) / (left * right) * _slice(f, 1, n - 1, axis)
             + left / (right * (left + right)) * _slice(f, 2, n, axis))
    return jnp.concatenate([first / _slice(dx, 0, 1, 0), inner, last / _slice(dx, n - 2, n - 1, 0)], axis)


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The trapezoidal rule: sum of (y[i+1] + y[i]) / 2 * (x[i+1] - x[i]) along ``axis``."""
    y = _array("trapezoid", y)
    if x is None:  # y alone becomes inexact; dx then promotes as an operand of the product (as JAX's)
        check_arraylike("trapezoid", dx)
        (y,), spacing = promote_dtypes_inexact(y), dx
    else:
        x = _array("trapezoid", x)
        y, x = promote_dtypes_inexact(y, x)
        check_rank_promotion("trapezoid", [_shape(y), _shape(x)])
    ndim = len(_shape(y))
    axis = normalize_axis(axis, ndim, "trapezoid")
    if x is not None:
        spacing = _along(jnp.diff(x), axis, ndim) if len(_shape(x)) == 1 else jnp.diff(x, axis=axis)
    n = _shape(y)[axis]
    mids = (_slice(y, min(1, n), n, axis) + _slice(y, 0, max(n - 1, 0), axis)) * spacing
    return jnp.sum(mids, axis=axis) / 2


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points (xp, fp), xp increasing."""
    check_arraylike("interp", x, xp, fp)
    if len(_shape(xp)) != 1 or len(_shape(fp)) != 1 or _shape(xp) != _shape(fp):
        raise ValueError(f"interp: xp and fp must be one-dimensional arrays of equal length, got shapes "
                         f"{_shape(xp)} and {_shape(fp)}")
    if _shape(xp)[0] == 0:
        raise ValueError("interp: xp and fp must not be empty")
    _, weak = dtypes.result_type(x, xp, fp, return_weak_type=True)  # weak only if all three are
    x, xp = promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(xp))
    (fp,) = promote_dtypes_inexact(jnp.asarray(fp))
    dtype = dtypes.promote_types(aval(x).dtype, aval(fp).dtype)
    fp = convert(fp, dtype)
    if period is not None:  # wrap everything into one period and close the cycle at both ends
        check_arraylike("interp", period)
        period = jnp.abs(convert(period, aval(x).dtype))
        x, xp = jnp.remainder(x, period), jnp.remainder(xp, period)
        order = jnp.argsort(xp)
        xp, fp = jnp.take(xp, order), jnp.take(fp, order)
        m = _shape(xp)[0]
        xp = jnp.concatenate([_slice(xp, m - 1, m, 0) - period, xp, _slice(xp, 0, 1, 0) + period])
        fp = jnp.concatenate([_slice(fp, m - 1, m, 0), fp, _slice(fp, 0, 1, 0)])
    m = _shape(xp)[0]
    if m == 1:
        return convert(broadcast_to(jnp.reshape(fp, ()), _shape(x)), dtype, weak)
    i = jnp.clip(jnp.searchsorted(xp, x, side="right"), 1, m - 1)
    x_lo, x_hi, f_lo, f_hi = jnp.take(xp, i - 1), jnp.take(xp, i), jnp.take(fp, i - 1), jnp.take(fp, i)
    step = x_hi - x_lo
    f = jnp.where(step == 0, f_hi, f_lo + (x - x_lo) / jnp.where(step == 0, 1, step) * (f_hi - f_lo))
    if period is None:
        first, last = jnp.take(xp, 0), jnp.take(xp, m - 1)  # (at x == last the last segment's formula, as JAX)
        if not (isinstance(left, str) and left == "extrapolate"):
            f = jnp.where(x < first, jnp.take(fp, 0) if left is None else convert(left, dtype), f)
        if not (isinstance(right, str) and right == "extrapolate"):
            f = jnp.where(x > last, jnp.take(fp, m - 1) if right is None else convert(right, dtype), f)
    return convert(f, dtype, weak)


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """Removes jumps larger than ``discont`` by adding multiples of ``period``."""
    p = _array("unwrap", p)
    # p and period promote together, as JAX's: integer phases with an integer period stay integers
    p, period = promote_dtypes(p, period)
    if aval(p).dtype.kind == "c":
        raise ValueError("jnp.unwrap does not support complex inputs.")
    axis = normalize_axis(axis, len(_shape(p)), "unwrap")
    if _shape(p)[axis] == 0:
        return p
    half = period // 2 if aval(p).dtype.kind in "iu" else period / 2
    discont = period / 2 if discont is None else discont
    steps = jnp.diff(p, axis=axis)
    # Each step brought into [-period/2, period/2); a step of exactly +period/2 stays positive.
    wrapped = jnp.remainder(steps + half, period) - half
    wrapped = jnp.where((wrapped == -half) & (steps > 0), half, wrapped)
    correction = jnp.where(jnp.abs(steps) < discont, 0, wrapped - steps)
    n = _shape(p)[axis]
    return jnp.concatenate([_slice(p, 0, 1, axis), _slice(p, 1, n, axis) + jnp.cumsum(correction, axis=axis)], axis)


# -- polynomials (coefficients from the highest power down) ----------------------------------------------------
def _poly1d(name: str, p: Any) -> Any:
    p = _array(name, p)
    if len(_shape(p)) != 1:
        raise ValueError(f"{name}: polynomial coefficients must be a 1-d array, got shape {_shape(p)}")
    return p


def _leading_axis(name: str, p: Any) -> Any:
    """Coefficients with a leading axis, the powers (more axes hold more polynomials, as in JAX); a 0-d array
    has none, which JAX reports as an ``IndexError``."""
    p = _array(name, p)
    if not _shape(p):
        raise IndexError(f"{name}: polynomial coefficients need a leading axis (the powers), got a 0-d array")
    return p


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """Horner's rule: ((p0 x + p1) x + p2) ... along ``p``'s first axis. A ``p`` of shape (M, *rest) holds
    polynomials side by side: the result has shape ``broadcast(rest, x.shape)`` (JAX's)."""
    p = _leading_axis("polyval", p)
    x = _array("polyval", x)
    p, x = promote_dtypes(p, x)
    y = jnp.zeros(jnp.broadcast_shapes(_shape(p)[1:], _shape(x)), aval(x).dtype)  # never weak, as in JAX
    for coefficient in jnp.unstack(p) if _shape(p)[0] else ():
        y = y * x + coefficient
    return y


def polyadd(a1: Any, a2: Any) -> Any:
    """The sum's coefficients: the shorter array added to the last entries of the longer (JAX's rule, which
    also adds arrays of more axes, the shorter broadcast to the longer's trailing shape)."""
    a1, a2 = promote_dtypes(_leading_axis("polyadd", a1), _leading_axis("polyadd", a2))
    n1, n2 = _shape(a1)[0], _shape(a2)[0]
    return a1.at[-n2:].add(a2) if n2 <= n1 else a2.at[-n1:].add(a1)


def polysub(a1: Any, a2: Any) -> Any:
    a1, a2 = promote_dtypes(_leading_axis("polysub", a1), _leading_axis("polysub", a2))
    return polyadd(a1, jnp.negative(a2))


def _trim_leading_zeros(p: Any, name: str) -> Any:
    if not is_concrete(p):
        raise TypeError(f"{name}: trim_leading_zeros=True needs concrete coefficients (the length depends on them)")
    trimmed = jnp.trim_zeros(p, "f")
    return trimmed if _shape(trimmed)[0] else _slice(p, _shape(p)[0] - 1, _shape(p)[0], 0)


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """The product's coefficients: the full convolution of the two coefficient arrays."""
    a1, a2 = promote_dtypes_inexact(_poly1d("polymul", a1), _poly1d("polymul", a2))
    if trim_leading_zeros and (_shape(a1)[0] > 1 or _shape(a2)[0] > 1):
        if not (is_concrete(a1) and is_concrete(a2)):
            raise TypeError("polymul: trim_leading_zeros=True needs concrete coefficients (the length depends on them)")
        a1, a2 = jnp.trim_zeros(a1, "f"), jnp.trim_zeros(a2, "f")
    # an empty polynomial is the zero polynomial, [0] (as in JAX)
    a1 = a1 if _shape(a1)[0] else jnp.zeros((1,), aval(a1).dtype)
    a2 = a2 if _shape(a2)[0] else jnp.zeros((1,), aval(a2).dtype)
    return jnp.convolve(a1, a2, mode="full")


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """Long division u = q v + r, step for step as JAX does it: r keeps u's length (its leading entries are
    zero), and ``trim_leading_zeros`` drops the leading entries of r below sqrt(eps) (concrete values only)."""
    check_arraylike("polydiv", u, v)
    u, v = promote_dtypes_inexact(jnp.asarray(u), jnp.asarray(v))
    m, n = len(u) - 1, len(v) - 1
    scale = 1.0 / v[0]
    q = jnp.zeros(max(m - n + 1, 1), aval(u).dtype)
    for k in range(m - n + 1):
        # cancel the leading term: q_k = r_k / v_0, then r -= q_k v shifted to position k
        d = scale * u[k]
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        if not is_concrete(u):
            raise TypeError("polydiv: trim_leading_zeros=True needs concrete values (the remainder's length "
                            "depends on them)")
        small = jnp.abs(u) < np.sqrt(np.finfo(aval(u).dtype).eps)
        u = u[int(jnp.argmin(small)):] if not bool(jnp.all(small)) else jnp.zeros((0,), aval(u).dtype)
    return q, u


def polyder(p: Any, m: int = 1) -> Any:
    """The m-th derivative: the coefficient of x^k gains the factor k (k-1) ... (k-m+1) and drops m terms."""
    p = _poly1d("polyder", p)
    (p,) = promote_dtypes_inexact(p)
    m = static_int(m, "polyder", "m")
    if m < 0:
        raise ValueError(f"polyder: order of derivative must be non-negative, got {m}")
    n = _shape(p)[0]
    keep = max(n - m, 0)
    powers = np.arange(n - 1, n - 1 - keep, -1)  # the power of x each kept coefficient belongs to
    factors = np.array([math.perm(int(k), m) for k in powers], np.float64)
    return _slice(p, 0, keep, 0) * convert(factors, aval(p).dtype)


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The m-th antiderivative; ``k`` gives the integration constants (first integration first)."""
    p = _poly1d("polyint", p)
    m = static_int(m, "polyint", "m")
    if m < 0:
        raise ValueError(f"polyint: order of integral must be non-negative, got {m}")
    k = 0 if k is None else k
    check_arraylike("polyint", k)
    p, k = promote_dtypes_inexact(p, jnp.asarray(k))
    if m == 0:
        return p
    k = jnp.ravel(k)
    if _shape(k)[0] == 1:
        k = broadcast_to(k, (m,))
    if _shape(k) != (m,):
        raise ValueError(f"polyint: k must be a scalar or have m={m} entries, got shape {_shape(k)}")
    for i in range(m):
        n = _shape(p)[0]
        divisors = convert(np.arange(n, 0, -1), aval(p).dtype)
        p = jnp.concatenate([p / divisors, _slice(k, i, i + 1, 0)])
    return p


def poly(seq_of_zeros: Any) -> Any:
    """The monic polynomial with the given roots (or with a square matrix's eigenvalues as roots)."""
    roots = jnp.atleast_1d(_array("poly", seq_of_zeros))  # a scalar is one root, as in JAX
    shape = _shape(roots)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] > 0:
        roots = jnp.linalg.eigvals(roots)
    elif len(shape) != 1:
        raise ValueError(f"poly: input must be a 1-d array or a non-empty square 2-d array, got shape {shape}")
    (roots,) = promote_dtypes_inexact(roots)
    if not _shape(roots)[0]:
        return jnp.ones((), aval(roots).dtype)  # no roots: the constant 1, a 0-d array as in JAX
    coefficients = jnp.ones((1,), aval(roots).dtype)
    for root in jnp.unstack(roots) if _shape(roots)[0] else ():  # multiply by (x - root)
        coefficients = jnp.pad(coefficients, (0, 1)) - root * jnp.pad(coefficients, (1, 0))
    return coefficients


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The roots of a polynomial: the eigenvalues of its companion matrix (always complex, as in JAX)."""
    p = _poly1d("roots", p)
    (p,) = promote_dtypes_inexact(p)
    complex_dtype = dtypes.promote_types(aval(p).dtype, dtypes.complex64)
    if _shape(p)[0] < 2:
        return jnp.zeros((0,), complex_dtype)
    if strip_zeros:
        if not is_concrete(p):
            raise TypeError("roots: strip_zeros=True needs concrete coefficients (the number of roots depends on "
                            "them); pass strip_zeros=False in a compiled function")
        return _companion_roots(jnp.trim_zeros(p, "f"), complex_dtype)
    # Without stripping (as JAX does it): the leading zeros are rolled to the end (an all-zero p becomes ones),
    # the zero roots they give are sorted last, and one root per leading zero is NaN.
    n = _shape(p)[0]
    is_zero = p == 0
    leading = jnp.where(jnp.all(is_zero), n, jnp.argmin(is_zero))
    p = jnp.roll(jnp.where(leading == n, jnp.ones_like(p), p), -leading)
    found = _companion_roots(p, complex_dtype)
    found = lax.sort_key_val(found == 0, found)[1]
    nan = jnp.asarray(complex(np.nan, np.nan), complex_dtype)
    return jnp.where(jnp.arange(n - 1) < n - 1 - leading, found, nan)


def _companion_roots(p: Any, complex_dtype: Any) -> Any:
    """The eigenvalues of p's companion matrix: its first row holds -p[1:] / p[0], ones sit below the diagonal."""
    n = _shape(p)[0]
    if n < 2:
        return jnp.zeros((0,), complex_dtype)
    first_row = jnp.expand_dims(-_slice(p, 1, n, 0) / jnp.take(p, 0), 0)
    companion = jnp.concatenate([first_row, jnp.eye(n - 2, n - 1, k=0, dtype=aval(p).dtype)], axis=0)
    return convert(jnp.linalg.eigvals(companion), complex_dtype)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """Columns are powers of x: x^(N-1), ..., x, 1 (or the reverse when ``increasing``)."""
    x = _array("vander", x)
    if len(_shape(x)) != 1:
        raise ValueError(f"vander: x must be a one-dimensional array, got shape {_shape(x)}")
    n = _shape(x)[0] if N is None else static_int(N, "vander", "N")
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    if n == 0:
        return jnp.zeros((_shape(x)[0], 0), aval(x).dtype)
    columns = [jnp.ones_like(x)]
    for _ in range(n - 1):
        columns.append(columns[-1] * x)
    out = jnp.stack(columns if increasing else columns[::-1], axis=1)
    return convert(out, aval(out).dtype)  # never weak, as in JAX


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False, w: Any = None,
            cov: bool | str = False) -> Any:
    """Least-squares polynomial fit of degree ``deg`` (highest power first), through ``jnp.linalg.lstsq``."""
    check_arraylike("polyfit", x, y)
    deg = static_int(deg, "polyfit", "deg")
    if deg < 0:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}")
    x, y = promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(y))
    if len(_shape(x)) != 1 or _shape(x)[0] == 0:
        raise TypeError(f"polyfit: expected a non-empty 1-d x, got shape {_shape(x)}")
    if len(_shape(y)) not in (1, 2) or _shape(y)[0] != _shape(x)[0]:
        raise TypeError(f"polyfit: expected y of shape ({_shape(x)[0]},) or ({_shape(x)[0]}, K), got {_shape(y)}")
    order = deg + 1
    rcond = _shape(x)[0] * float(np.finfo(aval(x).dtype).eps) if rcond is None else rcond
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = _array("polyfit", w)
        if _shape(w) != _shape(x):
            raise TypeError(f"polyfit: expected w of shape {_shape(x)}, got {_shape(w)}")
        lhs = lhs * jnp.expand_dims(w, 1)
        rhs = rhs * (w if len(_shape(rhs)) == 1 else jnp.expand_dims(w, 1))
    # Scaling the columns to unit length makes the least-squares problem better conditioned.
    # (broadcasts written out: library code must not trip jax_numpy_rank_promotion='raise')
    scale = jnp.sqrt(jnp.sum(lhs * lhs, axis=0))
    coefficients, residuals, rank, singular = jnp.linalg.lstsq(lhs / scale[None, :], rhs, rcond=rcond)
    coefficients = coefficients / (scale if len(_shape(coefficients)) == 1 else scale[:, None])
    if full:
        return coefficients, residuals, rank, singular, jnp.asarray(rcond)
    if cov:
        scaled = lhs / scale[None, :]
        base = jnp.linalg.inv(jnp.matmul(scaled.T, scaled)) / jnp.outer(scale, scale)
        if cov == "unscaled":
            factor = 1
        else:
            if _shape(x)[0] <= order:
                raise ValueError("polyfit: the number of data points must exceed the order to scale the covariance")
            factor = residuals / (_shape(x)[0] - order)
        if len(_shape(y)) == 1:
            return coefficients, base * factor
        return coefficients, base[:, :, None] * factor[None, None, :]
    return coefficients


def _i0_series(q: Any, terms: int) -> Any:
    """sum_k q^k / (k!)^2 with q = (x/2)^2: the power series of I0, every term positive."""
    term = total = jnp.ones_like(q)
    for k in range(1, terms + 1):
        term = term * q / (k * k)
        total = total + term
    return total


def _i0_asymptotic(x: Any, terms: int) -> Any:
    """I0(x) ~ e^x / sqrt(2 pi x) * sum_k c_k / x^k, c_k = prod_{j<=k} (2j - 1)^2 / (8 j), for large x."""
    coefficients = [1.0]
    for j in range(1, terms + 1):
        coefficients.append(coefficients[-1] * (2 * j - 1) ** 2 / (8 * j))
    inverse = 1 / x
    total = jnp.zeros_like(x)
    for c in reversed(coefficients):
        total = total * inverse + c
    half = jnp.exp(x / 2)  # e^x as a product of halves: stays finite wherever I0 does
    return half * (half / (math.sqrt(2 * math.pi) * jnp.sqrt(x))) * total  # (2 pi x itself could overflow)


def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind of order 0."""
    x = _array("i0", x)
    (x,) = promote_dtypes_inexact(x)
    if aval(x).dtype.kind == "c":
        raise TypeError("i0: complex arguments are not supported")
    if aval(x).dtype == np.float16:  # (in float32: the unused branch's e^(x/2) squared overflows float16 at the
        return convert(i0(convert(x, dtypes.float32)), np.float16)  # switch point, and its zero slope gives NaN)
    # Below the switch point the power series converges to the dtype's precision with this many terms; above it
    # the asymptotic series does.
    switch, series_terms, asymptotic_terms = (30.0, 46, 15) if aval(x).dtype == np.float64 else (15.0, 22, 7)
    magnitude = jnp.abs(x)
    small = jnp.minimum(magnitude, switch)
    large = jnp.maximum(magnitude, switch)
    return jnp.where(magnitude <= switch, _i0_series((small / 2) ** 2, series_terms),
                     _i0_asymptotic(large, asymptotic_terms))


# -- histograms and counting --------------------------------------------------------------------------------------
def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None,
             out_sharding=None) -> Any:
    """Counts (or summed weights) of each non-negative integer; negative values count as 0, as in JAX."""
    x = _array("bincount", x)
    if aval(x).dtype.kind not in "biu":
        raise TypeError(f"x argument to bincount must have an integer type; got {aval(x).dtype}")
    if aval(x).dtype.kind == "b":
        x = convert(x, dtypes.int32)
    if len(_shape(x)) != 1:
        raise ValueError(f"bincount: x must be one-dimensional, got shape {_shape(x)}")
    minlength = static_int(minlength, "bincount", "minlength")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        if not is_concrete(x):
            raise TypeError("bincount: the length of the result depends on the values of x; pass length= (a static "
                            "int) to use it in a compiled function")
        length = max(minlength, int(jnp.max(x)) + 1 if _shape(x)[0] else 0)
    length = static_int(length, "bincount", "length")
    if weights is None:
        weights = jnp.ones(_shape(x), dtypes.default_int_dtype())
    else:
        weights = _array("bincount", weights)
        if _shape(weights) != _shape(x):
            raise ValueError(f"bincount: weights must have the shape of x {_shape(x)}, got {_shape(weights)}")
    counts = jnp.zeros((length,), aval(weights).dtype)
    return counts.at[jnp.clip(x, 0, None)].add(weights, mode="drop")


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """The bin index of each x: bins[i-1] <= x < bins[i] for increasing bins (decreasing ones work too)."""
    check_arraylike("digitize", x, bins)
    bins = jnp.asarray(bins)
    if len(_shape(bins)) != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape {_shape(bins)}")
    x = jnp.asarray(x)
    n = _shape(bins)[0]
    if n == 0:
        return jnp.zeros(_shape(x), dtypes.int32)
    side = "left" if right else "right"
    kwargs = {} if method is None else {"method": method}
    increasing = jnp.searchsorted(bins, x, side=side, **kwargs)
    decreasing = n - jnp.searchsorted(jnp.flip(bins), x, side=side, **kwargs)
    return convert(jnp.where(jnp.take(bins, n - 1) >= jnp.take(bins, 0), increasing, decreasing), dtypes.int32)


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    a = jnp.ravel(_array("histogram_bin_edges", a))
    (a,) = promote_dtypes_inexact(a)
    dtype = aval(a).dtype
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram_bin_edges: string bins ({bins!r}) are not supported; give a count or "
                                  f"the edges")
    if is_arraylike(bins) and len(aval(bins).shape) == 1 or isinstance(bins, (list, tuple)):
        return jnp.asarray(bins, dtype=dtype)
    count = static_int(bins, "histogram_bin_edges", "bins")
    if count < 1:
        raise ValueError(f"histogram_bin_edges: bins must be positive, got {count}")
    if range is None:
        first, last = (jnp.min(a), jnp.max(a)) if _shape(a)[0] else (convert(0.0, dtype), convert(1.0, dtype))
    else:
        if len(range) != 2:
            raise ValueError(f"histogram: range must be a (min, max) pair, got {range!r}")
        first, last = convert(range[0], dtype), convert(range[1], dtype)
    # An empty range is widened to one unit around its value, as NumPy does.
    same = first == last
    first, last = jnp.where(same, first - 0.5, first), jnp.where(same, last + 0.5, last)
    return jnp.linspace(first, last, count + 1, dtype=dtype)


def _bin_index(values: Any, edges: Any) -> Any:
    """0 below the first edge, i for edges[i-1] <= v < edges[i], the last bin closed, len(edges) above."""
    n = _shape(edges)[0]
    index = jnp.searchsorted(edges, values, side="right")
    return jnp.where(values == jnp.take(edges, n - 1), n - 1, index)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None, density: bool | None = None) -> Any:
    a = _array("histogram", a)
    if weights is None:
        weights = jnp.ones_like(a)
    elif _shape(_array("histogram", weights)) != _shape(a):
        raise ValueError(f"histogram: weights must have the shape of a {_shape(a)}, got {_shape(weights)}")
    a, weights = jnp.ravel(a), jnp.ravel(weights)
    a, weights = promote_dtypes_inexact(a, weights)
    edges = histogram_bin_edges(a, bins, range)
    n = _shape(edges)[0]
    counts = bincount(_bin_index(a, edges), weights, length=n + 1)
    counts = _slice(counts, 1, n, 0)  # drop what fell outside the edges
    if density:
        counts = counts / (jnp.diff(edges) * jnp.sum(counts))
    return counts, edges


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool | None = None) -> tuple[Any, list[Any]]:
    sample = _array("histogramdd", sample)
    if weights is None:
        (sample,) = promote_dtypes_inexact(sample)
    else:  # the edges and a density take the dtype of both, as in JAX
        sample, weights = promote_dtypes_inexact(sample, _array("histogramdd", weights))
    if len(_shape(sample)) == 1:
        sample = jnp.expand_dims(sample, 1)
    if len(_shape(sample)) != 2:
        raise ValueError(f"histogramdd: sample must be (N, D), got shape {_shape(sample)}")
    count, dims = _shape(sample)
    bins_each = list(bins) if isinstance(bins, (list, tuple)) else [bins] * dims
    ranges = [None] * dims if range is None else list(range)
    if len(bins_each) != dims or len(ranges) != dims:
        raise ValueError(f"histogramdd: bins and range must have one entry for each of the {dims} dimensions")
    columns = jnp.unstack(sample, axis=1)
    edges = [histogram_bin_edges(c, b, r) for c, b, r in zip(columns, bins_each, ranges, strict=True)]
    sizes = tuple(_shape(e)[0] + 1 for e in edges)
    # One flat bin number per sample (row-major over the per-dimension indices), then one bincount.
    flat = jnp.zeros((count,), dtypes.int32)
    for column, edge, size in zip(columns, edges, sizes, strict=True):
        flat = flat * size + _bin_index(column, edge)
    counts = jnp.reshape(bincount(flat, weights, length=math.prod(sizes)), sizes)
    for axis, size in enumerate(sizes):
        counts = _slice(counts, 1, size - 1, axis)
    if density:
        counts = convert(counts, aval(sample).dtype)
        counts = counts / jnp.sum(counts)
        for axis, edge in enumerate(edges):
            counts = counts / _along(jnp.diff(edge), axis, dims)
    return counts, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool | None = None) -> tuple[Any, Any, Any]:
    check_arraylike("histogram2d", x, y)
    per_axis = isinstance(bins, (list, tuple)) and len(bins) == 2
    counts, (x_edges, y_edges) = histogramdd(jnp.stack([jnp.asarray(x), jnp.asarray(y)], axis=1),
                                             list(bins) if per_axis else [bins, bins], range, weights, density)
    return counts, x_edges, y_edges


# -- set operations ------------------------------------------------------------------------------------------------
_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
         method: str = "auto") -> Any:
    check_arraylike("isin", element, test_elements)
    if method not in _ISIN_METHODS:
        raise ValueError(f"isin: method must be one of {_ISIN_METHODS}, got {method!r}")
    element, tests = jnp.asarray(element), jnp.ravel(jnp.asarray(test_elements))
    if method in ("auto", "compare_all") or not _shape(tests)[0]:
        found = jnp.any(jnp.equal(jnp.expand_dims(element, -1), tests), axis=-1)
    else:  # sort the tests once and binary-search each element
        ordered = jnp.sort(tests)
        position = jnp.clip(jnp.searchsorted(ordered, element), 0, _shape(ordered)[0] - 1)
        found = jnp.take(ordered, position) == element
    return jnp.logical_not(found) if invert else found


def _first_of_runs(ordered: Any) -> Any:
    """True at the first element of each run of equal values of a sorted 1-d array, NaNs (sorted last) making one
    run, as JAX's ``unique`` (``equal_nan=True``) takes them in the set operations."""
    n = _shape(ordered)[0]
    if n == 0:
        return jnp.zeros((0,), bool)
    after, before = _slice(ordered, 1, n, 0), _slice(ordered, 0, n - 1, 0)
    differs = after != before
    if aval(ordered).dtype.kind in "fc":
        differs = jnp.logical_and(differs, jnp.logical_not(jnp.logical_and(jnp.isnan(after), jnp.isnan(before))))
    return jnp.concatenate([jnp.ones((1,), bool), differs])


def _compact(name: str, values: Any, keep: Any, size: int | None, fill_value: Any, default_fill: str) -> Any:
    """``values[keep]``, in order; with ``size``, cut or padded to that length with ``fill_value``."""
    if size is None:
        if not is_concrete(keep):
            raise TypeError(f"{name}: the size of the result depends on the values; pass size= (a static int) and "
                            f"optionally fill_value= to use it in a compiled function")
        size = int(jnp.sum(keep))
    size = static_int(size, name, "size")
    if size < 0:
        raise ValueError(f"{name}: size must be non-negative, got {size}")
    if _shape(values)[0] == 0:
        return jnp.full((size,), 0 if fill_value is None else fill_value, aval(values).dtype)
    (where,) = jnp.nonzero(keep, size=size, fill_value=0)
    picked = jnp.take(values, where)
    count = jnp.sum(keep)
    valid = lax.iota(dtypes.int32, size) < count
    if fill_value is None:  # JAX's defaults: the smallest kept value (zero where none is kept), or zero
        fill_value = jnp.where(count > 0, jnp.take(picked, 0), 0) if default_fill in ("min", "nanmin") and size else 0
        if default_fill == "nanmin" and size:  # NaN where a NaN is kept (JAX's setxor1d takes a min, not the first)
            fill_value = jnp.where(jnp.any(jnp.logical_and(valid, jnp.isnan(picked))), np.nan, fill_value) \
                if aval(values).dtype.kind in "fc" else fill_value
    return jnp.where(valid, picked, convert(fill_value, aval(values).dtype, aval(values).weak_type))


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted distinct values found in either array."""
    check_arraylike("union1d", ar1, ar2)
    ordered = jnp.sort(jnp.concatenate([jnp.ravel(ar1), jnp.ravel(ar2)]))
    return _compact("union1d", ordered, _first_of_runs(ordered), size, fill_value, "min")


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False, *,
                size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted distinct values found in both arrays (and, optionally, where each first occurs in them)."""
    check_arraylike("intersect1d", ar1, ar2)
    ar1, ar2 = promote_dtypes(jnp.ravel(ar1), jnp.ravel(ar2))
    order1 = jnp.argsort(ar1, stable=True)
    ordered = jnp.take(ar1, order1)
    keep = jnp.logical_and(_first_of_runs(ordered), isin(ordered, ar2))
    common = _compact("intersect1d", ordered, keep, size, fill_value, "min")
    if not return_indices:
        return common
    # (the padding of ``size`` gets the arrays' sizes, indices past their ends, as JAX's does)
    index1 = _compact("intersect1d", order1, keep, _shape(common)[0], _shape(ar1)[0], "zero")
    order2 = jnp.argsort(ar2, stable=True)
    n2 = _shape(ar2)[0]
    position = jnp.clip(jnp.searchsorted(jnp.take(ar2, order2), common), 0, max(n2 - 1, 0))
    index2 = jnp.take(order2, position) if n2 else jnp.zeros(_shape(common), dtypes.int32)
    found = lax.iota(dtypes.int32, _shape(common)[0]) < jnp.sum(keep)
    return common, index1, jnp.where(found, index2, convert(n2, aval(index2).dtype))


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    """The distinct values of ar1 not in ar2, sorted (in ar1's order when ``assume_unique``)."""
    check_arraylike("setdiff1d", ar1, ar2)
    values = jnp.ravel(ar1)
    if assume_unique:
        keep = isin(values, ar2, invert=True)
    else:
        values = jnp.sort(values)
        keep = jnp.logical_and(_first_of_runs(values), isin(values, ar2, invert=True))
    return _compact("setdiff1d", values, keep, size, fill_value, "zero")


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    """The sorted distinct values found in exactly one of the arrays."""
    check_arraylike("setxor1d", ar1, ar2)
    ar1, ar2 = jnp.ravel(ar1), jnp.ravel(ar2)
    ordered = jnp.sort(jnp.concatenate([ar1, ar2]))
    keep = jnp.logical_and(_first_of_runs(ordered), jnp.not_equal(isin(ordered, ar1), isin(ordered, ar2)))
    if aval(ordered).dtype.kind in "fc":  # as JAX: a NaN from each array that has one (NaNs never compare equal)
        nan = jnp.isnan(ordered)
        kept = jnp.sum(jnp.array([jnp.any(jnp.isnan(ar1)), jnp.any(jnp.isnan(ar2))]), dtype=dtypes.int32)
        keep = jnp.where(nan, jnp.cumsum(nan, dtype=dtypes.int32) <= kept, keep)
    return _compact("setxor1d", ordered, keep, size, fill_value, "nanmin")


# -- statistics of variables --------------------------------------------------------------------------------------
def _variables(name: str, m: Any, rowvar: bool) -> Any:
    m = _array(name, m)
    if len(_shape(m)) > 2:
        raise ValueError(f"{name}: m has more than 2 dimensions (shape {_shape(m)})")
    m = jnp.atleast_2d(m)
    return m.T if not rowvar and _shape(m)[0] != 1 else m


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None) -> Any:
    """Covariance of the variables in the rows of ``m`` (columns if not ``rowvar``), NumPy's weighting."""
    x = _variables("cov", m, rowvar)
    if y is not None:
        x = jnp.concatenate([x, _variables("cov", y, rowvar)], axis=0)
    (x,) = promote_dtypes_inexact(x)
    if dtype is not None:
        x = convert(x, canonical_dtype(dtype))
    observations = _shape(x)[1]
    ddof = (0 if bias else 1) if ddof is None else static_int(ddof, "cov", "ddof")
    weights = None
    for what, given in (("fweights", fweights), ("aweights", aweights)):
        if given is None:
            continue
        given = _array("cov", given)
        if _shape(given) != (observations,):
            raise ValueError(f"cov: {what} must be 1-d with one entry per observation ({observations}), got shape "
                             f"{_shape(given)}")
        if what == "fweights" and aval(given).dtype.kind not in "iub":
            raise TypeError("cov: fweights must be integers")
        weights = given if weights is None else weights * given
    if weights is None:
        mean = jnp.mean(x, axis=1, keepdims=True)
        factor = observations - ddof
    else:
        weights = convert(weights, aval(x).dtype)
        total = jnp.sum(weights)
        mean = jnp.sum(x * weights, axis=1, keepdims=True) / total
        if ddof == 0:
            factor = total
        elif aweights is None:
            factor = total - ddof
        else:
            factor = total - ddof * jnp.sum(weights * convert(aweights, aval(x).dtype)) / total
    factor = jnp.maximum(factor, 0)
    centred = x - mean
    weighted = centred if weights is None else centred * weights
    c = jnp.matmul(centred, jnp.conj(weighted).T) / factor
    return jnp.squeeze(c)


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """Pearson correlation coefficients: the covariance scaled by the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if not _shape(c):
        return c / c
    stddev = jnp.sqrt(jnp.real(jnp.diagonal(c)))
    c = c / jnp.expand_dims(stddev, 1) / jnp.expand_dims(stddev, 0)
    if aval(c).dtype.kind == "c":
        return jnp.clip(jnp.real(c), -1, 1) + 1j * jnp.clip(jnp.imag(c), -1, 1)
    return jnp.clip(c, -1, 1)


# -- applying functions ----------------------------------------------------------------------------------------------
# These loop in Python over the static index space; ``vmap`` will replace the loops once it exists.
def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    arr = _array("apply_along_axis", arr)
    shape = _shape(arr)
    axis = normalize_axis(axis, len(shape), "apply_along_axis")
    batch = shape[:axis] + shape[axis + 1:]
    lines = jnp.reshape(jnp.moveaxis(arr, axis, -1), (math.prod(batch), shape[axis]))
    if 0 in batch:  # no lines: one call on zeros gives the result's shape and dtype (JAX's vmap gives it too)
        probe = jnp.asarray(func1d(jnp.zeros((shape[axis],), aval(arr).dtype), *args, **kwargs))
        results = jnp.zeros((0, *_shape(probe)), aval(probe).dtype)
    else:
        results = jnp.stack([jnp.asarray(func1d(line, *args, **kwargs)) for line in jnp.unstack(lines)])
    result_ndim = len(_shape(results)) - 1
    out = jnp.reshape(results, batch + _shape(results)[1:])
    # The result's own axes take the place of ``axis``.
    return jnp.moveaxis(out, tuple(range(len(batch), len(batch) + result_ndim)),
                        tuple(range(axis, axis + result_ndim)))


def apply_over_axes(func: Callable[[Any, int], Any], a: Any, axes: int | Sequence[int]) -> Any:
    a = _array("apply_over_axes", a)
    for axis in (axes,) if isinstance(axes, (int, np.integer)) else axes:
        ndim = len(_shape(a))
        axis = normalize_axis(axis, ndim, "apply_over_axes")
        result = jnp.asarray(func(a, axis))
        if len(_shape(result)) == ndim - 1:
            result = jnp.expand_dims(result, axis)
        elif len(_shape(result)) != ndim:
            raise ValueError("apply_over_axes: function is not returning an array of the correct shape")
        a = result
    return a


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """Where condition k holds, funclist[k] (a function of x, or a value); later conditions take precedence, and
    an extra last entry gives the value where none holds (0 otherwise). The result has x's dtype."""
    x = _array("piecewise", x)
    if isinstance(condlist, (list, tuple)):
        conditions = [jnp.asarray(c, dtype=bool) for c in condlist]
    else:
        check_arraylike("piecewise", condlist)
        condlist = jnp.asarray(condlist, dtype=bool)
        if not _shape(condlist):
            raise TypeError("piecewise: condlist must be a sequence of conditions (or an array of them)")
        conditions = list(jnp.unstack(condlist))
    if len(funclist) not in (len(conditions), len(conditions) + 1):
        raise ValueError(f"with {len(conditions)} condition(s), either {len(conditions)} or {len(conditions) + 1} "
                         f"functions are expected; got {len(funclist)}")
    typ = aval(x)

    def value(f: Any) -> Any:  # in x's dtype, never weak (as in JAX)
        return convert(f(x, *args, **kw) if callable(f) else f, typ.dtype)

    out = broadcast_to(value(funclist[-1]), typ.shape) if len(funclist) > len(conditions) else jnp.zeros(
        typ.shape, typ.dtype)
    for condition, f in zip(conditions, funclist, strict=False):
        out = jnp.where(condition, value(f), out)
    return out


_DIMENSIONS = r"\(\s*(?:\w+(?:\s*,\s*\w+)*)?\s*\)"
_DIMENSION_LIST = rf"{_DIMENSIONS}(?:\s*,\s*{_DIMENSIONS})*"
_SIGNATURE = re.compile(rf"^\s*{_DIMENSION_LIST}\s*->\s*{_DIMENSION_LIST}\s*$")


def _parse_signature(signature: str) -> list[tuple[str, ...]]:
    """The core dimension names of each input of a signature such as '(m,n),(n)->(m)'."""
    if not _SIGNATURE.match(signature):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r}")
    inputs = signature.split("->")[0]
    return [tuple(d.strip() for d in group.split(",") if d.strip()) for group in re.findall(r"\(([^)]*)\)", inputs)]


def vectorize(pyfunc: Callable[..., Any], *, excluded: frozenset = frozenset(), signature: str | None = None
              ) -> Callable[..., Any]:
    """``pyfunc`` mapped over the leading (broadcast) axes of its array arguments.

    Until ``vmap`` exists this calls ``pyfunc`` once per element of the batch, in Python; ``vmap`` replaces the
    loop later (the function is then traced once). Positions in ``excluded`` and keyword arguments are passed
    through unchanged.
    """
    core_in = _parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        mapped = [i for i in range(len(args)) if i not in excluded]
        cores = core_in if core_in is not None else [()] * len(mapped)
        if len(cores) != len(mapped):
            raise TypeError(f"wrong number of positional arguments: expected {len(cores)}, got {len(mapped)}")
        arrays, sizes = [], {}
        for position, dims in zip(mapped, cores, strict=True):
            check_arraylike("vectorize", args[position])
            x = jnp.asarray(args[position])
            shape = _shape(x)
            if len(shape) < len(dims):
                raise ValueError(f"vectorize: argument {position} has shape {shape}, fewer dimensions than its core "
                                 f"dimensions {dims} in signature {signature!r}")
            for name, size in zip(dims, shape[len(shape) - len(dims):], strict=True):
                if sizes.setdefault(name, size) != size:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: {size} vs {sizes[name]} on "
                                     f"vectorized function with excluded={excluded!r} and signature={signature!r}")
            arrays.append(x)
        batch = jnp.broadcast_shapes(*(_shape(x)[:len(_shape(x)) - len(d)] for x, d in zip(arrays, cores,
                                                                                             strict=True)))
        count = math.prod(batch)
        columns = []
        for x, dims in zip(arrays, cores, strict=True):
            core = _shape(x)[len(_shape(x)) - len(dims):]
            flat = jnp.reshape(broadcast_to(x, batch + core), (count, *core))
            # With an empty batch, call once on zeros just to learn the shapes and dtypes of the results.
            columns.append(jnp.unstack(flat) if count else [jnp.zeros(core, aval(x).dtype)])

        def call(i: int) -> Any:
            full = list(args)
            for position, column in zip(mapped, columns, strict=True):
                full[position] = column[i]
            return pyfunc(*full, **kwargs)

        results = [call(i) for i in range(max(count, 1))]
        multiple = isinstance(results[0], tuple)
        outputs = list(zip(*results, strict=True)) if multiple else [results]
        stacked = []
        for output in outputs:
            first = jnp.asarray(output[0])
            if count:
                stacked.append(jnp.reshape(jnp.stack([jnp.asarray(o) for o in output]), batch + _shape(first)))
            else:
                stacked.append(jnp.zeros(batch + _shape(first), aval(first).dtype))
        return tuple(stacked) if multiple else stacked[0]

    return wrapped


# -- bits and diagonals -----------------------------------------------------------------------------------------------
def _bit_weights(bitorder: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
    powers = np.arange(8) if bitorder == "little" else np.arange(7, -1, -1)
    return powers.astype(np.uint8)


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """Eight truth values to a byte along ``axis`` (zero-padded at the end), first one highest for 'big'."""
    a = _array("packbits", a)
    if aval(a).dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    shifts = _bit_weights(bitorder)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = normalize_axis(axis, len(_shape(a)), "packbits")
    bits = convert(jnp.moveaxis(a, axis, -1) != 0, np.uint8)
    n = _shape(bits)[-1]
    bits = jnp.pad(bits, [(0, 0)] * (len(_shape(bits)) - 1) + [(0, -n % 8)])
    bits = jnp.reshape(bits, _shape(bits)[:-1] + (_shape(bits)[-1] // 8, 8))
    packed = jnp.sum(jnp.left_shift(bits, convert(shifts, np.uint8)), axis=-1, dtype=np.uint8)
    return jnp.moveaxis(packed, -1, axis)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Any:
    """Each byte to its eight bits along ``axis``; ``count`` keeps that many (negative: drops from the end)."""
    a = _array("unpackbits", a)
    if aval(a).dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shifts = _bit_weights(bitorder)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = normalize_axis(axis, len(_shape(a)), "unpackbits")
    moved = jnp.moveaxis(a, axis, -1)
    bits = jnp.bitwise_and(jnp.right_shift(jnp.expand_dims(moved, -1), convert(shifts, np.uint8)), np.uint8(1))
    bits = jnp.reshape(bits, _shape(moved)[:-1] + (_shape(moved)[-1] * 8,))
    if count is not None:
        count = static_int(count, "unpackbits", "count")
        n = _shape(bits)[-1]
        keep = count if count >= 0 else max(n + count, 0)
        if keep <= n:
            bits = _slice(bits, 0, keep, len(_shape(bits)) - 1)
        else:
            bits = jnp.pad(bits, [(0, 0)] * (len(_shape(bits)) - 1) + [(0, keep - n)])
    return jnp.moveaxis(bits, -1, axis)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """A copy of ``a`` with its main diagonal set to ``val`` (repeated as needed); ``inplace=False`` is required."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    a = _array("fill_diagonal", a)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError(f"fill_diagonal: array must be at least 2-d, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of input must be of equal length, got shape {shape}")
    size = math.prod(shape)
    # The diagonal is every step-th element of the flattened array (for a tall matrix without ``wrap``, only
    # its top square).
    step = shape[1] + 1 if len(shape) == 2 else 1 + int(np.sum(np.cumprod(shape[:-1])))
    end = shape[1] * shape[1] if len(shape) == 2 and not wrap else size
    count = len(range(0, min(end, size), step))
    values = jnp.ravel(_array("fill_diagonal", val))
    if count == 0 or _shape(values)[0] == 0:
        return a
    values = jnp.resize(convert(values, aval(a).dtype, aval(a).weak_type), (count,))
    # Spread value j to position j * step: pad each value with step - 1 fillers and flatten.
    spread = jnp.reshape(jnp.pad(jnp.expand_dims(values, 1), ((0, 0), (0, step - 1))), (count * step,))
    mask = jnp.reshape(jnp.pad(jnp.ones((count, 1), bool), ((0, 0), (0, step - 1))), (count * step,))
    spread, mask = (_fit(v, size) for v in (spread, mask))
    return jnp.reshape(jnp.where(mask, spread, jnp.ravel(a)), shape)


def _fit(v: Any, size: int) -> Any:
    n = _shape(v)[0]
    return _slice(v, 0, size, 0) if n >= size else jnp.pad(v, (0, size - n))


# -- printing, files, small predicates -----------------------------------------------------------------------------
printoptions = np.printoptions
set_printoptions = np.set_printoptions
get_printoptions = np.get_printoptions


def array_repr(arr: Any, max_line_width: int | None = None, precision: int | None = None,
               suppress_small: bool | None = None) -> str:
    with np.printoptions(**{k: v for k, v in (("linewidth", max_line_width), ("precision", precision),
                                              ("suppress", suppress_small)) if v is not None}):
        return repr(jnp.asarray(arr))


def array_str(a: Any, max_line_width: int | None = None, precision: int | None = None,
              suppress_small: bool | None = None) -> str:
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    np.savez(file, *(np.asarray(a) for a in args), allow_pickle=allow_pickle,
             **{k: np.asarray(v) for k, v in kwds.items()})


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.load``; a numeric array comes back as an ``Array`` (with the canonical dtype)."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype.kind in "biufc":
        return jnp.asarray(out)
    return out


def iterable(y: Any) -> bool:
    try:
        iter(y)
    except TypeError:
        return False
    return True
