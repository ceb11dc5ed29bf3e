"""Householder reflectors as LAPACK's larfg makes them, with the 2-norm as its nrm2 takes it: the building
block of ``schur_host``'s Hessenberg reduction and of ``schur_qr``'s QR sweeps."""

from __future__ import annotations

import functools
import math

import numpy as np


def norm(x: np.ndarray):
    """The 2-norm of the vector x as LAPACK's nrm2 (Blue's algorithm) takes it: the square root of the sum of the
    squares (of real and imaginary parts) where none under- or overflows, else scaled by the largest entry."""
    small, big = _blue_thresholds(x.dtype)
    if x.dtype.kind == "f" and x.size <= 2:  # (the real QR sweeps' reflectors, in scalars: faster)
        total = x.dtype.type(0)
        for part in x:
            magnitude = abs(part)
            if magnitude > big or 0 < magnitude < small:
                break
            total = total + magnitude * magnitude
        else:
            return np.sqrt(total)
    parts = np.abs(np.concatenate([x.real, x.imag]) if x.dtype.kind == "c" else x)
    if np.all((parts <= big) & ((parts >= small) | (parts == 0))):
        return np.sqrt(np.sum(parts * parts))
    largest = np.max(parts)
    if not np.isfinite(largest):
        return largest
    return largest * np.sqrt(np.sum((parts / largest) ** 2))


@functools.cache
def _blue_thresholds(dtype: np.dtype) -> tuple[float, float]:
    """nrm2's range [small, big] of entries whose squares neither underflow nor overflow."""
    finfo = np.finfo(dtype)
    return 2.0 ** math.ceil(finfo.minexp / 2), 2.0 ** math.floor((finfo.maxexp - finfo.nmant) / 2)


def reflector(alpha, x: np.ndarray):
    """LAPACK's larfg: (beta, tau, v) with (I - tau [1; v] [1; v]^H)^H [alpha; x] = [beta; 0], beta real."""
    x_norm = norm(x) if x.size else x.real.dtype.type(0)
    if x_norm == 0 and np.imag(alpha) == 0:
        return alpha, alpha.dtype.type(0), x
    beta = -np.copysign(np.hypot(np.hypot(np.real(alpha), np.imag(alpha)), x_norm), np.real(alpha))
    if np.iscomplexobj(alpha):
        tau = alpha.dtype.type(complex((beta - alpha.real) / beta, -alpha.imag / beta))
    else:
        tau = (beta - alpha) / beta
    return alpha.dtype.type(beta), tau, x * (alpha.dtype.type(1) / (alpha - beta))
