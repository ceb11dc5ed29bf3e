"""``jax.scipy.linalg``'s special matrices: from vectors (``companion``, ``fiedler``, ``fiedler_companion``,
``leslie``, ``convolution_matrix``, batched over the vectors' leading axes) and of a given order (``dft``,
``hadamard``, ``helmert``, ``hilbert``, ``invhilbert``, ``pascal``, ``invpascal``).

Dtypes are JAX's: the vector constructors keep the input's dtype (``companion`` and ``fiedler_companion``
promote it to inexact), the order constructors give the default float dtype, except ``pascal`` (always float32,
as JAX computes it), ``hadamard`` (its ``dtype``, int by default) and ``dft`` (complex). Binomial coefficients
are floats from lgamma, as in JAX (no exact integers).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.numpy._core import aval, check_arraylike, promote_dtypes, promote_dtypes_inexact

__all__ = ["companion", "convolution_matrix", "dft", "fiedler", "fiedler_companion", "hadamard", "helmert",
           "hilbert", "invhilbert", "invpascal", "leslie", "pascal"]


def _grid(rows: int, cols: int) -> tuple[Any, Any]:
    """The row and column index of each entry of a [rows, cols] matrix."""
    return (lax.broadcasted_iota(np.int32, (rows, cols), 0), lax.broadcasted_iota(np.int32, (rows, cols), 1))


def _entries(v: Any, index: Any) -> Any:
    """v[..., index] for an [r, c] array of indices: an [..., r, c] matrix."""
    rows, cols = aval(index).shape
    picked = jnp.take(v, jnp.ravel(index), axis=-1)
    return jnp.reshape(picked, (*aval(v).shape[:-1], rows, cols))


# -- from vectors ---------------------------------------------------------------------------------------------
def leslie(f: Any, s: Any) -> Any:
    """The Leslie matrix [..., n, n]: fecundities f [..., n] in the first row, survivals s [..., n-1] on the
    subdiagonal, zeros elsewhere."""
    check_arraylike("leslie", f, s)
    f, s = jnp.atleast_1d(f), jnp.atleast_1d(s)
    n = aval(f).shape[-1]
    if n < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape {aval(f).shape}.")
    if aval(s).shape[-1] != n - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis must be one less than "
                         f"the length of f; got f shape {aval(f).shape} and s shape {aval(s).shape}.")
    f, s = promote_dtypes(f, s)
    batch = jnp.broadcast_shapes(aval(f).shape[:-1], aval(s).shape[:-1])
    f, s = jnp.broadcast_to(f, (*batch, n)), jnp.broadcast_to(s, (*batch, n - 1))
    i, j = _grid(n, n)
    below = _entries(s, jnp.minimum(j, n - 2))  # s[j] where i = j + 1 (clipped elsewhere, and not used there)
    return jnp.where(i == 0, _entries(f, j), jnp.where(i == j + 1, below, jnp.zeros((), aval(f).dtype)))


def companion(a: Any) -> Any:
    """The companion matrix [..., n-1, n-1] of the polynomial with coefficients a [..., n] (highest degree
    first): first row -a[1:] / a[0], ones on the subdiagonal. (a[0] = 0 gives inf or NaN, as in JAX.)"""
    check_arraylike("companion", a)
    (a,) = promote_dtypes_inexact(jnp.atleast_1d(a))
    n = aval(a).shape[-1]
    if n < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape {aval(a).shape}.")
    first_row = -a[..., 1:] / a[..., :1]
    i, j = _grid(n - 1, n - 1)
    ones = (i == j + 1).astype(aval(a).dtype)
    return jnp.where(i == 0, _entries(first_row, j), ones)


def fiedler(a: Any) -> Any:
    """The symmetric Fiedler matrix F[..., i, j] = |a[..., i] - a[..., j]|."""
    check_arraylike("fiedler", a)
    a = jnp.atleast_1d(a)
    return jnp.abs(a[..., None] - a[..., None, :])


def fiedler_companion(a: Any) -> Any:
    """Fiedler's pentadiagonal companion matrix [..., n-1, n-1] of the polynomial with coefficients a [..., n]:
    its eigenvalues are the polynomial's roots."""
    check_arraylike("fiedler_companion", a)
    (a,) = promote_dtypes_inexact(jnp.atleast_1d(a))
    if aval(a).shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero length, but got an array "
                         f"of shape {aval(a).shape}.")
    n = aval(a).shape[-1] - 1
    batch, dtype = aval(a).shape[:-1], aval(a).dtype
    if n == 0:
        return jnp.zeros((*batch, 0, 0), dtype)
    a = a / a[..., :1]
    if n == 1:
        return -a[..., 1:, None]
    # -a[1] at (0, 0) and 1 at (1, 0); on even rows i, -a[i+2] at (i, i+1) and 1 at (i, i+2), and (from i = 2)
    # -a[i+1] at (i, i-1); on odd rows from i = 3, 1 at (i, i-2)
    i, j = _grid(n, n)
    even, odd = i % 2 == 0, i % 2 == 1
    one = jnp.ones((*batch, n, n), dtype)
    first = jnp.broadcast_to(-a[..., 1:2, None], (*batch, n, n))
    super_value = -_entries(a, jnp.minimum(i + 2, n))
    sub_value = -_entries(a, jnp.minimum(i + 1, n))
    places = [(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even, (j == i + 2) & even,
              (j == i - 1) & even & (i >= 2), (j == i - 2) & odd & (i >= 3)]
    values = [first, one, super_value, one, sub_value, one]
    return jnp.select([jnp.broadcast_to(p, (*batch, n, n)) for p in places], values, jnp.zeros((), dtype))


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The Toeplitz matrix A [..., k, n] with A @ v = jnp.convolve(a, v, mode) for v [n]; k is m + n - 1
    ('full'), max(m, n) ('same') or max(m, n) - min(m, n) + 1 ('valid'), m = a.shape[-1]."""
    from srcjax.runtime.scipy.linalg import toeplitz

    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    check_arraylike("convolution_matrix", a)
    a = jnp.asarray(a)
    if aval(a).ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = aval(a).shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {aval(a).shape}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    padding = [(0, 0)] * (aval(a).ndim - 1) + [(0, n - 1)]
    padded, reversed_padded = jnp.pad(a, padding), jnp.pad(jnp.flip(a, axis=-1), padding)
    length = m + n - 1
    if mode == "same":  # trim (min(m, n) - 1) rows of 'full', the smaller half from the top
        trim = min(n, m) - 1
        top, bottom = trim // 2, trim - trim // 2
    elif mode == "valid":
        top = bottom = min(n, m) - 1
    else:
        top = bottom = 0
    first_column = lax.slice_in_dim(padded, top, length - bottom, axis=aval(a).ndim - 1)
    first_row = lax.slice_in_dim(reversed_padded, length - n - top, length - top, axis=aval(a).ndim - 1)
    return toeplitz(first_column, first_row)


# -- of a given order -----------------------------------------------------------------------------------------
def hilbert(n: int) -> Any:
    """H[i, j] = 1 / (i + j + 1), i, j = 0..n-1."""
    i = lax.broadcasted_iota(dtypes.default_float_dtype(), (n, 1), 0)
    return 1 / (i + i.T + 1)


def invhilbert(n: int) -> Any:
    """The inverse of hilbert(n) in closed form: (-1)^(i+j) (i+j+1) C(n+i, n-j-1) C(n+j, n-i-1) C(i+j, i)^2."""
    from srcjax.runtime.scipy.special import comb

    a = jnp.arange(n, dtype=dtypes.default_float_dtype())
    i, j = a[:, None], a[None, :]
    s = i + j
    return (-1.0) ** s * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1) * comb(s, i) ** 2


def _binomial(n: Any, k: Any) -> Any:
    """C(n, k) = exp(lgamma(n + 1) - lgamma(n - k + 1) - lgamma(k + 1)); 0 for k > n."""
    return lax.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


_PASCAL_KINDS = ["symmetric", "lower", "upper"]


def pascal(n: int, kind: str | None = None) -> Any:
    """The Pascal matrix: lower L[i, j] = C(i, j), upper L^T, symmetric (the default) L L^T; float32."""
    kind = "symmetric" if kind is None else kind
    if kind not in _PASCAL_KINDS:
        raise ValueError(f"Expected kind to be on of: {_PASCAL_KINDS}; got {kind}")
    a = jnp.arange(n, dtype=np.float32)
    lower = _binomial(a[:, None], a[None, :])
    return lower if kind == "lower" else lower.T if kind == "upper" else jnp.dot(lower, lower.T)


def invpascal(n: int, kind: str | None = None) -> Any:
    """The inverse of pascal(n, kind): lower L^-1[i, j] = (-1)^(i-j) C(i, j), upper its transpose, symmetric
    L^-T L^-1."""
    kind = "symmetric" if kind is None else kind
    if kind not in _PASCAL_KINDS:
        raise ValueError(f"Expected kind to be one of: {_PASCAL_KINDS}; got {kind}")
    a = jnp.arange(n, dtype=dtypes.default_float_dtype())
    i, j = a[:, None], a[None, :]
    lower = (-1.0) ** (i - j) * _binomial(i, j)
    return lower if kind == "lower" else lower.T if kind == "upper" else jnp.dot(lower.T, lower)


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix [n-1, n]: row k-1 is (1, ..., 1 (k times), -k, 0, ...) / sqrt(k (k+1)); with ``full``,
    first a row of 1 / sqrt(n), making it [n, n] and orthogonal."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    i, j = jnp.arange(n - 1)[:, None], jnp.arange(n)[None, :]
    k = i + 1
    k_float = k.astype(dtypes.default_float_dtype())
    norm = jnp.sqrt(k_float * (k_float + 1))
    h = jnp.where(j <= i, 1.0 / norm, jnp.where(j == k, -k_float / norm, jnp.zeros_like(norm)))
    if full:
        h = jnp.concatenate([jnp.full((1, n), 1.0 / jnp.sqrt(n), dtype=aval(h).dtype), h], axis=0)
    return h


def hadamard(n: int, dtype: Any = int) -> Any:
    """The Sylvester-Hadamard matrix of order n (a power of 2): H_1 = [[1]], H_2m = [[H_m, H_m], [H_m, -H_m]]."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = jnp.ones((1, 1), dtype=dtype)
    for _ in range(int(math.log2(n))):
        h = jnp.block([[h, h], [h, -h]])
    return h


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The DFT matrix W[i, j] = exp(-2 pi i j sqrt(-1) / n), divided by sqrt(n) (scale 'sqrtn') or n ('n')."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    if dtype is None:
        dtype = dtypes.default_complex_dtype()
    else:
        dtype = dtypes.check_user_dtype(dtype, "dft")
        if np.dtype(dtype).kind != "c":
            raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    a = jnp.arange(n, dtype=dtype)
    omegas = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        omegas = omegas / jnp.sqrt(n)
    elif scale == "n":
        omegas = omegas / n
    return omegas
