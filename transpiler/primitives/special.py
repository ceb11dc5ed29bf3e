"""NumPy implementations of the special functions that NumPy lacks (erf, erf_inv, lgamma, digamma, ...).

``erf_inv`` in float32 is XLA's polynomial (Giles), evaluated in float32, because ``random.normal`` must
be bit-identical to JAX's and any other approximation differs in the last bit.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_lgamma_scalar = np.vectorize(lambda v: math.lgamma(v) if not (v <= 0 and v == math.floor(v)) else math.inf,
                              otypes=[np.float64])


def logistic(x):
    # 1 / (1 + exp(-x)) without overflow for large negative x
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x))).astype(x.dtype)


def erf(x):
    return _erf(x).astype(x.dtype)


def erfc(x):
    return _erfc(x).astype(x.dtype)


def lgamma(x):
    return _lgamma_scalar(x).astype(x.dtype)


def digamma(x):
    x64 = np.asarray(x, np.float64)
    out = np.zeros_like(x64)
    # reflection for negative arguments: psi(1-x) - psi(x) = pi cot(pi x)
    neg = x64 < 0.5
    y = np.where(neg, 1.0 - x64, x64)
    acc = np.zeros_like(y)
    while True:  # shift up until the asymptotic series is accurate
        small = y < 10
        if not small.any():
            break
        acc = acc - np.where(small, 1.0 / y, 0.0)
        y = np.where(small, y + 1.0, y)
    inv2 = 1.0 / (y * y)
    series = np.log(y) - 0.5 / y - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    out = acc + series
    with np.errstate(all="ignore"):
        out = np.where(neg, out - np.pi / np.tan(np.pi * x64), out)
        out = np.where((x64 <= 0) & (x64 == np.floor(x64)), np.nan, out)
    return out.astype(x.dtype)


# XLA's ErfInv32 (M. Giles, "Approximating the erfinv function"), coefficients highest degree first.
_ERF_INV32_SMALL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERF_INV32_LARGE = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _erf_inv32(x):
    f = np.float32
    with np.errstate(all="ignore"):
        w = -np.log1p(-x * x).astype(f)
        small = w < f(5)
        ws = (w - f(2.5)).astype(f)
        wl = (np.sqrt(w) - f(3)).astype(f)
        w = np.where(small, ws, wl).astype(f)
        p = np.where(small, f(_ERF_INV32_SMALL[0]), f(_ERF_INV32_LARGE[0])).astype(f)
        for cs, cl in zip(_ERF_INV32_SMALL[1:], _ERF_INV32_LARGE[1:]):
            p = (np.where(small, f(cs), f(cl)) + p * w).astype(f)
        out = (p * x).astype(f)
        return np.where(np.abs(x) == f(1), x * np.finfo(f).max, out).astype(f)


def erf_inv(x):
    if x.dtype == np.float32:
        return _erf_inv32(x)
    # float64 (and float16 through float64): Newton refinement of the float32 guess on erf
    x64 = np.asarray(x, np.float64)
    y = _erf_inv32(x64.astype(np.float32)).astype(np.float64)
    with np.errstate(all="ignore"):
        for _ in range(3):
            y = y - (_erf(y) - x64) / (2 / np.sqrt(np.pi) * np.exp(-y * y))
        y = np.where(np.abs(x64) == 1, np.copysign(np.inf, x64), y)
        y = np.where(np.abs(x64) > 1, np.nan, y)
    return y.astype(x.dtype)


def count_leading_zeros(x):
    bits = x.dtype.itemsize * 8
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    out = np.full(x.shape, bits, np.int64)
    for b in range(bits):
        set_here = (unsigned >> np.uint64(b)) & np.uint64(1) == 1
        out = np.where(set_here, bits - 1 - b, out)
    return out.astype(x.dtype)
