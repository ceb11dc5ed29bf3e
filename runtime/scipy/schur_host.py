"""The Hessenberg and Schur decompositions on the host, in NumPy, as LAPACK computes them for JAX on the CPU
(the reflectors: ``householder_host``; the QR iteration: ``schur_qr``).

NumPy has neither routine, so these follow LAPACK's: ``gehd2`` (Householder reflectors from ``larfg``) and
``orghr`` for a = q h q^H; ``gees`` for a = z t z^H: ``lahqr``'s implicit double-shift QR iteration (real:
t quasi-triangular, each complex pair a 2x2 block standardised by ``lanv2`` to equal diagonal entries and
off-diagonal entries of opposite signs) or its single-shift complex QR (t triangular, subdiagonal real). With
LAPACK's shifts, deflation tests and sign conventions (and gees's first steps: scaling a matrix near under- or
overflow, and gebal's permutation of rows and columns that isolate an eigenvalue) the factors are LAPACK's up
to rounding, and the eigenvalues come out along the diagonal in the same order. Rounding decides the phase of
a complex Schur vector (lahqr makes each subdiagonal entry real by a phase that, once the entry is negligible,
is noise) and a sign or rotation within a real 2x2 block, which may therefore differ from JAX's; in single
precision it also decides which of two eigenvalues deflates first, so their order along the diagonal, for about
2% of random matrices with n <= 20 and a tenth to a fifth with 20 < n <= 75 (float64: none in 2000 tried).
Not followed: for n > 75 LAPACK's ``hseqr`` switches to its multishift QR with aggressive early deflation (the
eigenvalues' order may then differ); the rescaling loops of ``larfg`` and ``lanv2`` for entries near underflow.
A matrix with a NaN or inf, or that does not converge, gives NaN factors.
"""

from __future__ import annotations

import numpy as np

from srcjax.runtime.scipy.householder_host import reflector
from srcjax.runtime.scipy.schur_qr import complex_qr, real_qr


def _stack(fn, a: np.ndarray, outputs: int) -> list[np.ndarray]:
    """``fn`` on each matrix of the stack ``a`` [..., n, n]."""
    outs = [np.empty_like(a) for _ in range(outputs)]
    for index in np.ndindex(*a.shape[:-2]):
        for out, result in zip(outs, fn(np.array(a[index])), strict=True):
            out[index] = result
    return outs


def hessenberg(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(h, q) with a = q h q^H, h zero below its first subdiagonal, for a stack of square matrices."""
    return _stack(_hessenberg, a, 2)


def _hessenberg(a: np.ndarray, low: int = 0, high: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """gehd2 and orghr on the rows and columns low..high of a (those outside already triangular)."""
    n = a.shape[0]
    high = n - 1 if high is None else high
    end = high + 1
    h, reflectors = a.copy(), []
    for i in range(low, high):
        beta, tau, tail = reflector(h[i + 1, i], h[i + 2:end, i])
        v = np.concatenate([np.ones(1, h.dtype), tail])
        h[:end, i + 1:end] -= tau * np.outer(h[:end, i + 1:end] @ v, v.conj())  # h H(i)
        h[i + 1:end, i + 1:] -= np.conj(tau) * np.outer(v, v.conj() @ h[i + 1:end, i + 1:])  # H(i)^H h
        h[i + 1, i], h[i + 2:end, i] = beta, 0
        reflectors.append((i, tau, v))
    q = np.eye(n, dtype=a.dtype)
    for i, tau, v in reversed(reflectors):  # q = H(low) H(low+1) ... H(high-1)
        q[i + 1:end, i + 1:end] -= tau * np.outer(v, v.conj() @ q[i + 1:end, i + 1:end])
    return h, q


def _isolate_eigenvalues(a: np.ndarray) -> tuple[np.ndarray, int, int, list[tuple[int, int]]]:
    """LAPACK's gebal with job 'P': permute rows and columns (the same way) so that rows whose off-diagonal
    entries vanish go to the bottom and such columns to the left, each an eigenvalue already isolated; returns
    the permuted a, the rows low..high left to reduce, and the swaps made, in order."""
    a, n = a.copy(), a.shape[0]
    low, high, swaps = 0, n - 1, []

    def swap(i, j, k, m):  # rows and columns i and j (columns within rows 0..m, rows within columns k..)
        if i != j:
            a[:m + 1, [i, j]] = a[:m + 1, [j, i]]
            a[[i, j], k:] = a[[j, i], k:]
        swaps.append((j, i))

    searching = True
    while searching:  # rows isolating an eigenvalue, pushed down
        searching = False
        for i in range(high, -1, -1):
            if np.count_nonzero(a[i, :high + 1]) - (a[i, i] != 0) == 0:
                swap(i, high, low, high)
                searching = True
                if high == 0:
                    return a, 0, 0, swaps
                high -= 1
    searching = True
    while searching:  # columns isolating an eigenvalue, pushed left
        searching = False
        for j in range(low, high + 1):
            if np.count_nonzero(a[low:high + 1, j]) - (a[j, j] != 0) == 0:
                swap(j, low, low, high)
                searching = True
                low += 1
    return a, low, high, swaps


def _undo_permutation(z: np.ndarray, swaps: list[tuple[int, int]]) -> np.ndarray:
    """LAPACK's gebak: the rows of the Schur vectors z swapped back (those of the isolated eigenvalues)."""
    z = z.copy()
    for position, source in reversed(swaps):
        if position != source:
            z[[position, source]] = z[[source, position]]
    return z


# -- the Schur form -------------------------------------------------------------------------------------------
def schur(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, z) with a = z t z^H for a stack of square matrices: t quasi-triangular for real a, triangular for
    complex a."""
    return _stack(_schur, a, 2)


def _schur(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not np.isfinite(a).all():
        return np.full_like(a, np.nan), np.full_like(a, np.nan)
    # gees: a matrix whose largest entry is below sqrt(safe minimum) / eps, or above its inverse, is scaled to
    # that bound first, and t back after
    finfo = np.finfo(a.dtype)
    small = np.sqrt(finfo.tiny) / finfo.eps
    largest = np.max(np.abs(a), initial=0)
    scale = small if 0 < largest < small else 1 / small if largest > 1 / small else None
    if scale is not None:
        a = a * (scale / largest)
    permuted, low, high, swaps = _isolate_eigenvalues(a)
    h, z = _hessenberg(permuted, low, high)
    converged = (complex_qr if np.iscomplexobj(a) else real_qr)(h, z, low, high)
    if not converged:
        return np.full_like(a, np.nan), np.full_like(a, np.nan)
    t = np.triu(h, -1) if not np.iscomplexobj(a) else np.triu(h)
    if scale is not None:
        t = t * (largest / scale)
    return t, _undo_permutation(z, swaps)
