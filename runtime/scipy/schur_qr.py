"""LAPACK's lahqr on the host, in NumPy: the QR iteration that takes an upper Hessenberg matrix to its Schur
form for ``schur_host``, accumulating the transformations. Real: implicit double shifts (the eigenvalues of the
trailing 2x2 block), bulges chased by 3x3 reflectors, each converged complex pair left as a 2x2 block that
``lanv2`` standardises (equal diagonal entries, off-diagonal entries of opposite signs). Complex: Wilkinson's
single shift, 2x2 reflectors, the subdiagonal kept real. Both with lahqr's deflation test (Ahues and Tisseur),
its search for two small consecutive subdiagonal entries, and its exceptional shifts after 10 and 20 iterations
without deflation; rows and columns outside the active block are updated too (the whole Schur form)."""

from __future__ import annotations

import numpy as np

from srcjax.runtime.scipy.householder_host import reflector

_EXCEPTIONAL_EVERY = 10  # lahqr's KEXSH: an exceptional shift every 10 iterations without deflation
_EXCEPTIONAL_A, _EXCEPTIONAL_B = 0.75, -0.4375  # lahqr's DAT1, DAT2


def _negligible(h: np.ndarray, k: int, low: int, high: int, small: float, ulp: float, cabs) -> bool:
    """lahqr's test that the subdiagonal entry h[k, k-1] can be set to zero (Ahues and Tisseur's criterion)."""
    sub = cabs(h[k, k - 1])
    if sub <= small:
        return True
    test = cabs(h[k - 1, k - 1]) + cabs(h[k, k])
    if test == 0:
        if k - 2 >= low:
            test += abs(np.real(h[k - 1, k - 2]))
        if k + 1 <= high:
            test += abs(np.real(h[k + 1, k]))
    if abs(np.real(h[k, k - 1])) > ulp * test:
        return False
    ab, ba = max(sub, cabs(h[k - 1, k])), min(sub, cabs(h[k - 1, k]))
    diff = cabs(h[k - 1, k - 1] - h[k, k])
    aa, bb = max(cabs(h[k, k]), diff), min(cabs(h[k, k]), diff)
    s = aa + ab
    return ba * (ab / s) <= max(small, ulp * (bb * (aa / s)))


def _deflation_point(h: np.ndarray, i: int, low: int, high: int, small: float, ulp: float, cabs) -> int:
    """The row l (low <= l <= i) where the active block ending at row i splits off: h[l, l-1] negligible."""
    k = i
    while k > low and not _negligible(h, k, low, high, small, ulp, cabs):
        k -= 1
    return k


def real_qr(h: np.ndarray, z: np.ndarray, first: int, last: int) -> bool:
    """LAPACK's dlahqr on the rows and columns first..last of the Hessenberg h (the whole of it updated),
    accumulating into z; False if it does not converge."""
    n = last - first + 1
    ulp, tiny = np.finfo(h.dtype).eps, np.finfo(h.dtype).tiny
    small = tiny * (n / ulp)
    iterations = 30 * max(10, n)
    without_deflation = 0
    i = last
    while i >= first:
        for _ in range(iterations + 1):
            low = _deflation_point(h, i, first, last, small, ulp, abs)
            if low > first:
                h[low, low - 1] = 0
            if low >= i - 1:
                break
            without_deflation += 1
            shifts = _real_shifts(h, i, low, without_deflation)
            m, v = _real_start(h, i, low, shifts, ulp)
            _real_sweep(h, z, i, low, m, v)
        else:
            return False
        if low == i - 1:
            _standardize_block(h, z, i)
        without_deflation = 0
        i = low - 1
    return True


def _real_shifts(h: np.ndarray, i: int, low: int, without_deflation: int):
    """The two shifts (re1, im1, re2, im2): the eigenvalues of the trailing 2x2 block (one of them twice when
    both are real), or an exceptional shift after 10 and 20 iterations without deflation."""
    if without_deflation % (2 * _EXCEPTIONAL_EVERY) == 0:
        s = abs(h[i, i - 1]) + abs(h[i - 1, i - 2])
        h11, h12, h21 = _EXCEPTIONAL_A * s + h[i, i], _EXCEPTIONAL_B * s, s
        h22 = h11
    elif without_deflation % _EXCEPTIONAL_EVERY == 0:
        s = abs(h[low + 1, low]) + abs(h[low + 2, low + 1])
        h11, h12, h21 = _EXCEPTIONAL_A * s + h[low, low], _EXCEPTIONAL_B * s, s
        h22 = h11
    else:
        h11, h21, h12, h22 = h[i - 1, i - 1], h[i, i - 1], h[i - 1, i], h[i, i]
    s = abs(h11) + abs(h12) + abs(h21) + abs(h22)
    zero = h.dtype.type(0)
    if s == 0:
        return zero, zero, zero, zero
    h11, h21, h12, h22 = h11 / s, h21 / s, h12 / s, h22 / s
    trace = (h11 + h22) / 2
    det = (h11 - trace) * (h22 - trace) - h12 * h21
    root = np.sqrt(abs(det))
    if det >= 0:  # a complex conjugate pair
        return trace * s, root * s, trace * s, -root * s
    re1, re2 = trace + root, trace - root  # real: the one nearer h22, twice
    shift = re1 * s if abs(re1 - h22) <= abs(re2 - h22) else re2 * s
    return shift, zero, shift, zero


def _real_start(h: np.ndarray, i: int, low: int, shifts, ulp: float):
    """The row m where the double-shift sweep starts (two consecutive small subdiagonal entries), and the
    first column of (h - s1)(h - s2) there, scaled."""
    re1, im1, re2, im2 = shifts
    for m in range(i - 2, low - 1, -1):
        h21s = h[m + 1, m]
        s = abs(h[m, m] - re2) + abs(im2) + abs(h21s)
        h21s = h[m + 1, m] / s
        v = np.array([h21s * h[m, m + 1] + (h[m, m] - re1) * ((h[m, m] - re2) / s) - im1 * (im2 / s),
                      h21s * (h[m, m] + h[m + 1, m + 1] - re1 - re2), h21s * h[m + 2, m + 1]], h.dtype)
        v = v / (abs(v[0]) + abs(v[1]) + abs(v[2]))
        if m == low:
            break
        h00 = abs(h[m, m - 1]) * (abs(v[1]) + abs(v[2]))
        h01 = abs(v[0]) * (abs(h[m - 1, m - 1]) + abs(h[m, m]) + abs(h[m + 1, m + 1]))
        if h00 <= ulp * h01:
            break
    return m, v


def _real_sweep(h: np.ndarray, z: np.ndarray, i: int, low: int, m: int, v: np.ndarray) -> None:
    """One implicit double-shift QR sweep on rows and columns m..i, chasing the bulge with 3x3 reflectors."""
    for k in range(m, i):
        rows = min(3, i - k + 1)
        if k > m:
            v = h[k:k + rows, k - 1].copy()
        beta, tau, tail = reflector(v[0], v[1:rows])
        if k > m:
            h[k, k - 1], h[k + 1:k + rows, k - 1] = beta, 0
        elif m > low:
            h[k, k - 1] *= 1 - tau  # (not -h[k, k-1], which is wrong when v's tail underflows)
        scaled = np.concatenate([[tau], tail * tau])
        last = min(k + 3, i)
        # sums in lahqr's order, h[k] + v2 h[k+1] + v3 h[k+2], not a BLAS product's
        for block, axis in ((h[k:k + rows, k:], 0), (h[:last + 1, k:k + rows], 1), (z[:, k:k + rows], 1)):
            lines = block if axis == 0 else block.T
            total = lines[0] + tail[0] * lines[1]
            if rows == 3:
                total = total + tail[1] * lines[2]
            lines -= scaled[:, None] * total


def _rotate(x: np.ndarray, y: np.ndarray, cs, sn) -> None:
    """LAPACK's rot: (x, y) <- (cs x + sn y, cs y - sn x), in place."""
    x_new = cs * x + sn * y
    y[...] = cs * y - sn * x
    x[...] = x_new


def _standardize_block(h: np.ndarray, z: np.ndarray, i: int) -> None:
    """Rotate the converged 2x2 block in rows i-1, i to LAPACK's standard form (lanv2), through h and z."""
    a, b, c, d, cs, sn = _standard_2x2(h[i - 1, i - 1], h[i - 1, i], h[i, i - 1], h[i, i])
    h[i - 1, i - 1], h[i - 1, i], h[i, i - 1], h[i, i] = a, b, c, d
    _rotate(h[i - 1, i + 1:], h[i, i + 1:], cs, sn)
    _rotate(h[:i - 1, i - 1], h[:i - 1, i], cs, sn)
    _rotate(z[:, i - 1], z[:, i], cs, sn)


def _sign(x, y):
    """Fortran's SIGN(x, y): |x| with the sign of y."""
    return np.copysign(x, y)


def _standard_2x2(a, b, c, d):
    """LAPACK's lanv2: the rotation [cs -sn; sn cs] that makes [a b; c d] upper triangular when its eigenvalues
    are real, else gives it equal diagonal entries and off-diagonal entries of opposite signs."""
    dtype = type(a)
    one, zero = dtype(1), dtype(0)
    eps = np.finfo(dtype).eps
    if c == 0:
        return a, b, c, d, one, zero
    if b == 0:  # swap the rows and columns
        return d, -c, zero, a, zero, one
    if a - d == 0 and _sign(one, b) != _sign(one, c):
        return a, b, c, d, one, zero
    temp = a - d
    p = temp / 2
    bcmax = max(abs(b), abs(c))
    bcmis = min(abs(b), abs(c)) * _sign(one, b) * _sign(one, c)
    scale = max(abs(p), bcmax)
    zz = (p / scale) * p + (bcmax / scale) * bcmis
    if zz >= 4 * eps:  # real eigenvalues
        zz = p + _sign(np.sqrt(scale) * np.sqrt(zz), p)
        a = d + zz
        d = d - (bcmax / zz) * bcmis
        tau = np.hypot(c, zz)
        return a, b - c, zero, d, zz / tau, c / tau
    # complex or nearly equal real eigenvalues: make the diagonal entries equal
    sigma = b + c
    tau = np.hypot(sigma, temp)
    cs = np.sqrt((one + abs(sigma) / tau) / 2)
    sn = -(p / (tau * cs)) * _sign(one, sigma)
    aa, bb = a * cs + b * sn, -a * sn + b * cs
    cc, dd = c * cs + d * sn, -c * sn + d * cs
    a, b = aa * cs + cc * sn, bb * cs + dd * sn
    c, d = -aa * sn + cc * cs, -bb * sn + dd * cs
    temp = (a + d) / 2
    a = d = temp
    if c != 0:
        if b != 0:
            if _sign(one, b) == _sign(one, c):  # real after all: make it upper triangular
                sab, sac = np.sqrt(abs(b)), np.sqrt(abs(c))
                p = _sign(sab * sac, c)
                tau = one / np.sqrt(abs(b + c))
                a, d = temp + p, temp - p
                b, c = b - c, zero
                cs1, sn1 = sab * tau, sac * tau
                cs, sn = cs * cs1 - sn * sn1, cs * sn1 + sn * cs1
        else:
            b, c, cs, sn = -c, zero, -sn, cs
    return a, b, c, d, cs, sn


def _cabs(x) -> float:
    """LAPACK's cabs1: |re x| + |im x|."""
    return abs(x.real) + abs(x.imag)


def complex_qr(h: np.ndarray, z: np.ndarray, first: int, last: int) -> bool:
    """LAPACK's zlahqr on the rows and columns first..last of the Hessenberg h (the whole of it updated),
    accumulating into z; False if it does not converge."""
    n = h.shape[0]
    ulp, tiny = np.finfo(h.dtype).eps, np.finfo(h.dtype).tiny
    for i in range(first + 1, last + 1):  # make the subdiagonal real
        if h[i, i - 1].imag != 0:
            sc = h[i, i - 1] / _cabs(h[i, i - 1])
            sc = np.conj(sc) / abs(sc)
            h[i, i - 1] = abs(h[i, i - 1])
            h[i, i:] *= sc
            h[:min(n - 1, i + 1) + 1, i] *= np.conj(sc)
            z[:, i] *= np.conj(sc)
    size = last - first + 1
    small = tiny * (size / ulp)
    iterations = 30 * max(10, size)
    without_deflation = 0
    i = last
    while i >= first:
        for _ in range(iterations + 1):
            low = _deflation_point(h, i, first, last, small, ulp, _cabs)
            if low > first:
                h[low, low - 1] = 0
            if low >= i:
                break
            without_deflation += 1
            shift = _complex_shift(h, i, low, without_deflation)
            m, v = _complex_start(h, i, low, shift, ulp)
            _complex_sweep(h, z, i, low, m, v)
        else:
            return False
        without_deflation = 0
        i = low - 1
    return True


def _complex_shift(h: np.ndarray, i: int, low: int, without_deflation: int):
    """Wilkinson's shift (the eigenvalue of the trailing 2x2 block nearer h[i, i]), or an exceptional one."""
    if without_deflation % (2 * _EXCEPTIONAL_EVERY) == 0:
        return _EXCEPTIONAL_A * abs(h[i, i - 1].real) + h[i, i]
    if without_deflation % _EXCEPTIONAL_EVERY == 0:
        return _EXCEPTIONAL_A * abs(h[low + 1, low].real) + h[low, low]
    t = h[i, i]
    u = np.sqrt(h[i - 1, i]) * np.sqrt(h[i, i - 1])
    s = _cabs(u)
    if s != 0:
        x = (h[i - 1, i - 1] - t) / 2
        sx = _cabs(x)
        s = max(s, _cabs(x))
        y = s * np.sqrt((x / s) ** 2 + (u / s) ** 2)
        if sx > 0 and (x / sx).real * y.real + (x / sx).imag * y.imag < 0:
            y = -y
        t = t - u * (u / (x + y))
    return t


def _complex_start(h: np.ndarray, i: int, low: int, shift, ulp: float):
    """The row m where the single-shift sweep starts, and the first column of h - shift there, scaled."""
    for m in range(i - 1, low - 1, -1):
        h11, h22 = h[m, m], h[m + 1, m + 1]
        h11s, h21 = h11 - shift, h[m + 1, m].real
        s = _cabs(h11s) + abs(h21)
        h11s, h21 = h11s / s, h21 / s
        v = np.array([h11s, h21], h.dtype)
        if m == low or abs(h[m, m - 1].real) * abs(h21) <= ulp * (_cabs(h11s) * (_cabs(h11) + _cabs(h22))):
            return m, v
    raise AssertionError("unreachable: the loop ends at m == low")


def _complex_sweep(h: np.ndarray, z: np.ndarray, i: int, low: int, m: int, v: np.ndarray) -> None:
    """One implicit single-shift QR sweep on rows and columns m..i, chasing the bulge with 2x2 reflectors; the
    subdiagonal stays real."""
    for k in range(m, i):
        if k > m:
            v = h[k:k + 2, k - 1].copy()
        beta, tau, tail = reflector(v[0], v[1:])
        if k > m:
            h[k, k - 1], h[k + 1, k - 1] = beta, 0
        v2 = tail[0]
        t2 = (tau * v2).real
        total = np.conj(tau) * h[k, k:] + t2 * h[k + 1, k:]
        h[k, k:] -= total
        h[k + 1, k:] -= total * v2
        last = min(k + 2, i)
        total = tau * h[:last + 1, k] + t2 * h[:last + 1, k + 1]
        h[:last + 1, k] -= total
        h[:last + 1, k + 1] -= total * np.conj(v2)
        total = tau * z[:, k] + t2 * z[:, k + 1]
        z[:, k] -= total
        z[:, k + 1] -= total * np.conj(v2)
        if k == m and m > low:  # keep h[m, m-1] real after a sweep that started below low
            temp = 1 - tau
            temp = temp / abs(temp)
            h[m + 1, m] *= np.conj(temp)
            if m + 2 <= i:
                h[m + 2, m + 1] *= temp
            for j in range(m, i + 1):
                if j != m + 1:
                    h[j, j + 1:] *= temp
                    h[:j, j] *= np.conj(temp)
                    z[:, j] *= np.conj(temp)
    temp = h[i, i - 1]
    if temp.imag != 0:  # make h[i, i-1] real
        modulus = abs(temp)
        h[i, i - 1] = modulus
        temp = temp / modulus
        h[i, i + 1:] *= np.conj(temp)
        h[:i, i] *= temp
        z[:, i] *= temp
