"""srcjax.scipy.signal against a float64 NumPy reference (a direct N-d convolution sum; scipy is not a dependency),
with JAX's choices of centring and of which input slides, and values recorded from JAX 0.10.2."""

import itertools

import numpy as np
import pytest

import srcjax
from srcjax.runtime import numpy as jnp
from srcjax.runtime.scipy import signal


def full_convolution(a, b):
    """sum_k a[n - k] b[k], of shape a.shape + b.shape - 1."""
    out = np.zeros(tuple(s + t - 1 for s, t in zip(a.shape, b.shape)), np.result_type(a, b, np.float64))
    for k in itertools.product(*map(range, b.shape)):
        out[tuple(slice(i, i + s) for i, s in zip(k, a.shape))] += a * b[k]
    return out


def reference(a, b, mode):
    """SciPy's convolve: 'same' is centred on a's shape, 'valid' keeps the full-overlap part (either input larger)."""
    full = full_convolution(a, b)
    sizes = {"full": full.shape, "same": a.shape,
             "valid": tuple(abs(s - t) + 1 for s, t in zip(a.shape, b.shape))}[mode]
    return full[tuple(slice((f - o) // 2, (f - o) // 2 + o) for f, o in zip(full.shape, sizes))]


SHAPES = [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((6, 5), (3, 2)), ((2, 3), (4, 5)), ((4, 5, 3), (2, 3, 2)),
          ((1,), (4,))]


def _inputs(s1, s2, kind):
    rng = np.random.default_rng(len(s1) * 10 + s1[0])
    a, b = rng.normal(size=s1) * 3, rng.normal(size=s2) * 3
    if kind == "int":
        return a.astype(np.int32), b.astype(np.int32)
    if kind == "complex":
        a, b = a + 1j * rng.normal(size=s1), b - 0.5j * rng.normal(size=s2)
        return a.astype(np.complex64), b.astype(np.complex64)
    return a.astype(np.float32), b.astype(np.float32)


@pytest.mark.parametrize("s1, s2", SHAPES)
@pytest.mark.parametrize("kind", ["float", "int", "complex"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate(s1, s2, kind, mode):
    a, b = _inputs(s1, s2, kind)
    want = reference(a.astype(np.complex128), b.astype(np.complex128), mode)
    # correlation is the convolution with the conjugated second input flipped in every axis
    want_corr = reference(a.astype(np.complex128), np.conj(b[(slice(None, None, -1),) * b.ndim]), mode)
    dtype = np.complex64 if kind == "complex" else np.float32
    for method in ("direct", "fft", "auto"):
        got = signal.convolve(jnp.asarray(a), jnp.asarray(b), mode=mode, method=method)
        assert got.dtype == dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-3)
        got = signal.correlate(jnp.asarray(a), jnp.asarray(b), mode=mode, method=method)
        np.testing.assert_allclose(np.asarray(got), want_corr, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(signal.fftconvolve(a, b, mode=mode)), want, rtol=1e-4, atol=1e-3)
    if len(s1) == 2:
        np.testing.assert_allclose(np.asarray(signal.convolve2d(a, b, mode=mode)), want, rtol=1e-4, atol=1e-3)
        if mode == "same":
            # JAX centres correlate2d's 'same' window as flip(convolve(flip(in1), conj(in2))), one step off
            # correlate's for an even-sized in2
            flipped = (slice(None, None, -1),) * 2
            want_corr = reference(a[flipped].astype(np.complex128), np.conj(b), mode)[flipped]
        if mode == "valid" and a.shape != b.shape and all(s <= t for s, t in zip(a.shape, b.shape)):
            # where in2 is the larger, SciPy's correlate2d (and JAX's, after it) gives the conjugate of the
            # correlation in 'valid' mode: it slides in2 over conj(in1) and reverses the result
            want_corr = np.conj(want_corr)
        np.testing.assert_allclose(np.asarray(signal.correlate2d(a, b, mode=mode)), want_corr, rtol=1e-4, atol=1e-3)


def test_recorded_from_jax():
    x, y = np.array([1, 2, 3, 2, 1]), np.array([1, 1, 1])
    np.testing.assert_array_equal(np.asarray(signal.convolve(x, y, mode="same")), [3.0, 6.0, 7.0, 6.0, 3.0])
    x2, y2 = np.array([[1, 2], [3, 4]]), np.array([[2, 1, 1], [4, 3, 4], [1, 3, 2]])
    np.testing.assert_array_equal(np.asarray(signal.convolve2d(x2, y2, mode="valid")), [[22.0, 17.0], [30.0, 32.0]])
    # JAX 0.10.2: correlate2d of a smaller in1, 'valid' and 'same'; for complex inputs 'valid' is the conjugate
    # of correlate's answer (as in SciPy's correlate2d), 'full' is not
    np.testing.assert_array_equal(np.asarray(signal.correlate2d(x2, y2, mode="valid")), [[28.0, 25.0], [28.0, 28.0]])
    np.testing.assert_array_equal(np.asarray(signal.correlate2d(x2, y2, mode="same")), [[28.0, 25.0], [28.0, 28.0]])
    c1, c2 = np.array([[1 + 2j, 3 - 1j]], np.complex64), np.array([[2 - 1j, 1 + 1j, 0.5j]], np.complex64)
    np.testing.assert_array_equal(np.asarray(signal.correlate2d(c1, c2, "valid")), [[2.5 + 0.5j, 2 - 1j]])
    np.testing.assert_array_equal(np.asarray(signal.correlate(c1, c2, "valid")), [[2.5 - 0.5j, 2 + 1j]])
    np.testing.assert_array_equal(np.asarray(signal.correlate2d(c1, c2, "full")),
                                  [[1 - 0.5j, 2.5 - 0.5j, 2 + 1j, 7 + 1j]])
    # correlate2d and correlate centre 'same' differently for an even-sized in2 in JAX 0.10.2
    row, pair = np.arange(4.0)[None], np.array([[1.0, 2.0]])
    np.testing.assert_array_equal(np.asarray(signal.correlate2d(row, pair, mode="same")), [[2.0, 5.0, 8.0, 3.0]])
    np.testing.assert_array_equal(np.asarray(signal.correlate(row, pair, mode="same")), [[0.0, 2.0, 5.0, 8.0]])


def test_fftconvolve_axes():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 7, 4)), rng.normal(size=(3, 2, 4))
    for mode in ("full", "same", "valid"):
        got = np.asarray(signal.fftconvolve(a.astype(np.float32), b.astype(np.float32), mode=mode, axes=-2))
        want = np.stack([np.stack([reference(a[i, :, j], b[i, :, j], mode) for j in range(4)], -1) for i in range(3)])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="mapped axes must have same shape"):
        signal.fftconvolve(a, b[:2], axes=(1,))


def test_errors():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="mode must be one of"):
        signal.convolve(a, a, mode="middle")
    with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
        signal.convolve(a, a, method="fast")
    with pytest.raises(ValueError, match="same number of dimensions"):
        signal.convolve(a, a[0])
    with pytest.raises(ValueError, match="at least as large"):
        signal.convolve(a, b)
    with pytest.raises(ValueError, match="zero-size"):
        signal.convolve(a[:0], a)
    with pytest.raises(NotImplementedError, match="boundary='fill'"):
        signal.convolve2d(a, a, boundary="wrap")
    with pytest.raises(ValueError, match="2-dimensional"):
        signal.correlate2d(a[0], a[0])


@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_gradients_against_finite_differences(name, mode):
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=6), rng.normal(size=3)
    weights = rng.normal(size=reference(x, y, mode).shape)
    f = getattr(signal, name)

    def loss(p, q):
        return jnp.sum(f(p, q, mode=mode) * weights)

    with srcjax.enable_x64(True):
        gx, gy = srcjax.grad(loss, argnums=(0, 1))(x, y)
        jx, jy = srcjax.jit(srcjax.grad(loss, argnums=(0, 1)))(x, y)
        for i, (g, j, v) in enumerate([(gx, jx, x), (gy, jy, y)]):
            eye = np.eye(v.size) * 1e-6
            args = [(x + e, y) if i == 0 else (x, y + e) for e in eye]
            back = [(x - e, y) if i == 0 else (x, y - e) for e in eye]
            numeric = [(float(loss(*p)) - float(loss(*m))) / 2e-6 for p, m in zip(args, back)]
            np.testing.assert_allclose(np.asarray(g), numeric, rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(np.asarray(j), np.asarray(g), rtol=1e-10, atol=1e-12)
