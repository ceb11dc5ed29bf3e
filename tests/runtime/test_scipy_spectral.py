"""srcjax.scipy.signal's spectral analysis (detrend, stft, istft, welch, csd) against float64 NumPy references
written from SciPy's definitions (scipy is not a dependency), round trips, and JAX 0.10.2's numbers."""

import numpy as np
import pytest

import srcjax
from srcjax.runtime import numpy as jnp
from srcjax.scipy import signal


def hann(n):
    return np.sin(np.pi * np.arange(n) / n) ** 2  # periodic


def segments(x, nperseg, noverlap):
    starts = range(0, len(x) - nperseg + 1, nperseg - noverlap)
    return np.stack([x[s:s + nperseg] for s in starts])


def reference_stft(x, nperseg, noverlap):
    """SciPy's stft of a 1-d signal: zeros of nperseg // 2 at both ends, then to whole segments; Hann windowed
    segments' one-sided spectra over sum(window); (frequencies, times)."""
    half = nperseg // 2
    x = np.concatenate([np.zeros(half), x, np.zeros(half)])
    step = nperseg - noverlap
    x = np.concatenate([x, np.zeros((-(len(x) - nperseg) % step) % nperseg)])
    window = hann(nperseg)
    return (np.fft.rfft(segments(x, nperseg, noverlap) * window, axis=-1) / window.sum()).T


def reference_welch(x, y, nperseg, noverlap, fs, detrend):
    """Welch's average of conj(X) Y over the segments, as a density, the one-sided interior bins doubled."""
    window = hann(nperseg)
    spectra = []
    for v in (x, y):
        s = segments(v, nperseg, noverlap)
        s = s - s.mean(axis=1, keepdims=True) if detrend else s
        spectra.append(np.fft.rfft(s * window, axis=-1))
    p = np.conj(spectra[0]) * spectra[1] / (fs * np.sum(window ** 2))
    p[:, 1:-1 if nperseg % 2 == 0 else None] *= 2
    return p.mean(axis=0)


def test_stft_and_its_inverse():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 50)).astype(np.float32)
    f, t, z = signal.stft(x, fs=4.0, nperseg=16, noverlap=10)
    assert f.dtype == np.float32 and z.dtype == np.complex64 and z.shape == (3, 9, 10)
    np.testing.assert_allclose(f, np.arange(9) * 4.0 / 16)
    np.testing.assert_allclose(t, np.arange(10) * 6 / 4.0)
    for k in range(3):
        np.testing.assert_allclose(z[k], reference_stft(x[k].astype(np.float64), 16, 10), rtol=1e-4, atol=1e-6)
    # the time axis of a signal stored along axis 0
    _, _, z0 = signal.stft(x.T, nperseg=16, noverlap=10, axis=0)
    assert z0.shape == (9, 3, 10)
    np.testing.assert_allclose(np.moveaxis(z0, 1, 0), z, rtol=1e-5, atol=1e-7)
    # the inverse by overlap-add gives the signal back
    t_back, x_back = signal.istft(z, fs=4.0, nperseg=16, noverlap=10)
    np.testing.assert_allclose(x_back[:, :50], x, atol=1e-5)
    np.testing.assert_allclose(t_back, np.arange(x_back.shape[0]) / 4.0)  # (x.shape[0]: JAX's choice)
    _, x_back = signal.istft(np.moveaxis(z, 2, 0), nperseg=16, noverlap=10, time_axis=0, freq_axis=-1)
    np.testing.assert_allclose(np.moveaxis(x_back, 0, -1)[:, :50], x, atol=1e-5)
    with pytest.raises(ValueError, match="at least 2d"):
        signal.istft(np.ones(5, np.complex64))
    with pytest.raises(ValueError, match="differing time and frequency"):
        signal.istft(z, time_axis=1, freq_axis=-2)
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        signal.stft(x, nperseg=8, noverlap=8)


def test_welch_and_csd():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(2, 2, 40))
    f, pxx = signal.welch(x.astype(np.float32), fs=2.0, nperseg=8)
    assert pxx.dtype == np.float32 and pxx.shape == (2, 5)
    np.testing.assert_allclose(f, np.arange(5) * 2.0 / 8)
    for k in range(2):
        np.testing.assert_allclose(pxx[k], reference_welch(x[k], x[k], 8, 4, 2.0, True).real, rtol=1e-4)
    f, pxy = signal.csd(x.astype(np.float32), y.astype(np.float32), fs=2.0, nperseg=8, detrend=False)
    assert pxy.dtype == np.complex64
    for k in range(2):
        np.testing.assert_allclose(pxy[k], reference_welch(x[k], y[k], 8, 4, 2.0, False), rtol=1e-4, atol=1e-6)
    # JAX 0.10.2's numbers, of its defaults (constant detrend, Hann window, half overlap) and of other options
    t = np.arange(24, dtype=np.float32)
    s, c = np.sin(0.7 * t) + 0.1 * t, np.cos(0.4 * t) - 0.05 * t
    np.testing.assert_allclose(signal.welch(s, nperseg=8)[1],
                               [7.2956151e-01, 2.2975500e+00, 4.6426883e-01, 6.8257173e-04, 3.1387986e-05], rtol=1e-4)
    np.testing.assert_allclose(signal.welch(s, nperseg=8, noverlap=2, detrend="linear", average="median",
                                            scaling="spectrum")[1],
                               [6.3543968e-02, 2.2369635e-01, 7.0003740e-02, 1.3731275e-04, 4.7917979e-06],
                               rtol=2e-4, atol=1e-9)
    np.testing.assert_allclose(signal.csd(s, c, nperseg=8, fs=2.0)[1],
                               [-4.8895355e-02, -5.9061177e-02 + 2.4081409e-02j, -2.8049441e-03 - 9.2678814e-04j,
                                -1.0461738e-04 + 5.7758297e-07j, -3.1150739e-06], rtol=1e-4, atol=1e-9)
    with pytest.raises(ValueError, match="Unknown scaling"):
        signal.welch(s, scaling="power")
    with pytest.raises(ValueError, match="nfft must be greater"):
        signal.welch(s, nperseg=8, nfft=4)


def test_detrend():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 2)) + np.arange(30)[:, None] * [0.5, -2.0]
    got = signal.detrend(x.astype(np.float32), axis=0, bp=[12])
    want = np.empty_like(x)
    for piece in (slice(0, 12), slice(12, 30)):  # the residual of a least-squares line, piece by piece
        n = np.arange(piece.start, piece.stop)
        for k in range(2):
            want[piece, k] = x[piece, k] - np.polyval(np.polyfit(n, x[piece, k], 1), n)
    np.testing.assert_allclose(got, want, atol=2e-5)
    np.testing.assert_allclose(signal.detrend(x, type="constant", axis=0), x - x.mean(0), atol=2e-5)
    assert signal.detrend(np.arange(6)).dtype == np.float32
    with pytest.raises(ValueError, match="Trend type"):
        signal.detrend(x, type="quadratic")
    with pytest.raises(ValueError, match="Breakpoints"):
        signal.detrend(x, bp=[-1])


def test_spectral_gradient_and_jit():
    rng = np.random.default_rng(3)
    x, weights = rng.normal(size=64).astype(np.float32), rng.normal(size=(9, 9))

    def loss(x):  # linear in x through stft and istft
        z = signal.stft(x, nperseg=16)[2]
        return jnp.sum(jnp.real(z) * weights) + jnp.sum(signal.istft(z, nperseg=16)[1][:64] * np.arange(64.0))

    grad = srcjax.grad(loss)(x)
    direction = rng.normal(size=64)
    np.testing.assert_allclose(np.dot(grad, direction), loss(direction) - loss(np.zeros(64)), rtol=1e-4)
    got = srcjax.jit(lambda x, fs: signal.welch(x, fs, nperseg=16))(x, 3.0)
    np.testing.assert_allclose(got[1], signal.welch(x, 3.0, nperseg=16)[1], rtol=1e-5)
    np.testing.assert_allclose(got[0], np.arange(9) * 3.0 / 16)
