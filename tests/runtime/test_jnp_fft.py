"""srcjax.numpy.fft against numpy.fft in double precision: every transform with its n/s, axis/axes and norm
arguments, JAX's result dtypes, frequencies and shifts, and bad arguments."""

import numpy as np
import pytest

import srcjax.numpy as jnp

RNG = np.random.default_rng(3)
FFT = jnp.fft


def random(shape, dtype=np.float32):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def wide(x):
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def check(actual, expected, dtype):
    actual = np.asarray(actual)
    assert actual.dtype == np.dtype(dtype), f"{actual.dtype} != {np.dtype(dtype)}"
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(expected).max(initial=0)))


# (name, input dtype, input shape, keyword arguments, result dtype)
CASES = [
    ("fft", np.complex64, (8,), {}, np.complex64),
    ("fft", np.float32, (3, 6), {"axis": 0}, np.complex64),
    ("fft", np.int32, (5,), {}, np.complex64),
    ("fft", np.complex64, (2, 6), {"n": 4}, np.complex64),
    ("fft", np.complex64, (2, 6), {"n": 9, "norm": "ortho"}, np.complex64),
    ("ifft", np.complex64, (2, 7), {"norm": "forward"}, np.complex64),
    ("ifft", np.complex64, (4, 3), {"axis": -2, "n": 6}, np.complex64),
    ("rfft", np.float32, (2, 9), {}, np.complex64),
    ("rfft", np.float32, (6, 2), {"axis": 0, "n": 5, "norm": "ortho"}, np.complex64),
    ("rfft", np.int32, (8,), {"norm": "forward"}, np.complex64),
    ("irfft", np.complex64, (2, 5), {}, np.float32),
    ("irfft", np.complex64, (2, 5), {"n": 9, "norm": "ortho"}, np.float32),
    ("irfft", np.complex64, (5, 3), {"axis": 0, "n": 4}, np.float32),
    ("irfft", np.float32, (4,), {"norm": "forward"}, np.float32),
    ("fft2", np.complex64, (2, 4, 6), {}, np.complex64),
    ("fft2", np.float32, (4, 5, 3), {"axes": (0, 2), "s": (3, 4)}, np.complex64),
    ("ifft2", np.complex64, (3, 5), {"norm": "ortho"}, np.complex64),
    ("rfft2", np.float32, (3, 4, 6), {}, np.complex64),
    ("irfft2", np.complex64, (3, 4, 4), {"s": (4, 6)}, np.float32),
    ("fftn", np.complex64, (2, 3, 4), {}, np.complex64),
    ("fftn", np.complex64, (2, 3, 2, 2, 3), {}, np.complex64),  # 5 axes: more than the primitive's 3 at once
    ("fftn", np.float32, (4, 6), {"s": (5,)}, np.complex64),
    ("fftn", np.complex64, (4, 6, 2), {"axes": (2, 0), "norm": "forward"}, np.complex64),
    ("ifftn", np.complex64, (2, 3, 4, 2), {"norm": "ortho"}, np.complex64),
    ("rfftn", np.float32, (2, 3, 2, 4), {}, np.complex64),
    ("rfftn", np.float32, (4, 6), {"axes": (1, 0), "s": (3, 5)}, np.complex64),
    ("irfftn", np.complex64, (2, 3, 2, 3), {}, np.float32),
    ("irfftn", np.complex64, (3, 5), {"s": (3, 7)}, np.float32),
    ("irfftn", np.complex64, (4, 6), {"axes": (1, 0)}, np.float32),
    ("hfft", np.complex64, (2, 5), {}, np.float32),
    ("hfft", np.float32, (3,), {"n": 5, "norm": "ortho"}, np.float32),
    ("hfft", np.complex64, (5, 2), {"axis": 0, "norm": "forward"}, np.float32),
    ("ihfft", np.float32, (2, 8), {}, np.complex64),
    ("ihfft", np.float32, (7,), {"n": 6, "norm": "ortho"}, np.complex64),
    ("ihfft", np.float32, (7,), {"norm": "forward"}, np.complex64),
]


@pytest.mark.parametrize("name, dtype, shape, kwargs, result_dtype", CASES)
def test_transform_matches_numpy(name, dtype, shape, kwargs, result_dtype):
    x = random(shape, dtype) if np.dtype(dtype).kind != "i" else RNG.integers(-5, 5, shape).astype(dtype)
    out = getattr(FFT, name)(x, **kwargs)
    if "s" in kwargs and "axes" not in kwargs:  # the last len(s) axes, which NumPy 2 wants spelled out
        kwargs = {**kwargs, "axes": tuple(range(-len(kwargs["s"]), 0))}
    expected = getattr(np.fft, name)(wide(x), **kwargs)
    check(out, expected, result_dtype)


def test_known_values_recorded_from_jax():
    check(FFT.fft(jnp.arange(4)), [6, -2 + 2j, -2, -2 - 2j], np.complex64)
    check(FFT.hfft(jnp.array([1.0, 2.0, 3.0])), [8, -2, 0, -2], np.float32)
    check(FFT.ihfft(jnp.array([1.0, 2.0, 3.0, 4.0])), [2.5, -0.5 - 0.5j, -0.5], np.complex64)


def test_results_are_strongly_typed_and_inputs_round_trip():
    x = jnp.full((3,), 2.0)
    assert x.weak_type and not FFT.fft(x).weak_type and not FFT.rfft(x).weak_type
    y = random((4, 6))
    check(FFT.irfft2(FFT.rfft2(y), s=y.shape), y, np.float32)
    z = random((4, 6), np.complex64)
    check(FFT.ifftn(FFT.fftn(z)), z, np.complex64)


def test_axes_and_empty_arrays():
    x = random((2, 3), np.complex64)
    check(FFT.fftn(x, axes=()), x, np.complex64)  # no axes: only the conversion to complex
    check(FFT.fftn(jnp.asarray(2.0)), np.asarray(2.0 + 0j), np.complex64)
    assert FFT.fft(jnp.zeros((0, 4))).shape == (0, 4)
    assert FFT.rfft(jnp.zeros((0, 4))).shape == (0, 3)
    assert FFT.fft(jnp.zeros(0)).shape == (0,)


@pytest.mark.parametrize("call, error, message", [
    (lambda: FFT.fft(jnp.ones(4), norm="bad"), ValueError, "invalid norm value 'bad'"),
    (lambda: FFT.hfft(jnp.ones(4), norm="bad"), ValueError, "invalid norm value 'bad'"),
    (lambda: FFT.fft(jnp.ones(4), n=0), ValueError, "must be positive"),
    (lambda: FFT.fft(jnp.ones((2, 3)), axis=2), ValueError, "axis 2 is out of bounds"),
    (lambda: FFT.fft2(jnp.ones(3)), ValueError, "axis -2 is out of bounds"),
    (lambda: FFT.fftn(jnp.ones((2, 3)), axes=(0, 0)), ValueError, "repeated axes"),
    (lambda: FFT.fftn(jnp.ones((2, 3)), s=(2,), axes=(0, 1)), ValueError, "different lengths"),
    (lambda: FFT.rfft(jnp.ones(4, jnp.complex64)), ValueError, "only real inputs"),
    (lambda: FFT.fft([1.0, 2.0]), TypeError, "requires ndarray or scalar arguments"),
])
def test_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- frequencies and shifts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, d", [(1, 1.0), (5, 0.5), (8, 2.0), (7, 1)])
def test_fftfreq_and_rfftfreq(n, d):
    check(FFT.fftfreq(n, d), np.fft.fftfreq(n, d), np.float32)
    check(FFT.rfftfreq(n, d), np.fft.rfftfreq(n, d), np.float32)


def test_fftfreq_dtypes_and_array_spacing():
    check(FFT.fftfreq(4, jnp.array(2.0)), [0, 0.125, -0.25, -0.125], np.float32)  # recorded from jax 0.10.2
    np.testing.assert_array_equal(FFT.fftfreq(4, dtype=jnp.int32), [0, 0, 0, 0])
    assert FFT.rfftfreq(4, dtype=jnp.float16).dtype == jnp.float16


@pytest.mark.parametrize("shape, axes", [((5,), None), ((4, 5), None), ((4, 5), 0), ((3, 4, 5), (0, 2)), ((6,), ())])
def test_shifts_match_numpy(shape, axes):
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    np.testing.assert_array_equal(FFT.fftshift(x, axes), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(FFT.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    np.testing.assert_array_equal(FFT.ifftshift(FFT.fftshift(x, axes), axes), x)


def test_namespace():
    assert set(FFT.__all__) == {"fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
                                "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"}


def _transforms(x):
    return FFT.fft(x), FFT.rfftn(x, s=(4, 6)), FFT.irfft2(x, norm="ortho"), FFT.hfft(x), FFT.fftshift(x, axes=0)


def test_transforms_compile_under_jit():
    import srcjax

    x = random((3, 5))
    eager = srcjax.tree_util.tree_leaves(_transforms(x))
    compiled = srcjax.tree_util.tree_leaves(srcjax.jit(_transforms)(x))
    for e, c in zip(eager, compiled, strict=True):
        assert e.dtype == c.dtype
        np.testing.assert_allclose(np.asarray(c), np.asarray(e), rtol=1e-5, atol=1e-5)


def test_hfft_of_a_single_bin_and_too_many_sizes():
    # one Hermitian bin is the spectrum of n = 2 (1 - 1) = 0 points: an empty result, as JAX's (srcjax refused)
    x = random((3, 1), np.complex64)
    assert FFT.hfft(x).shape == (3, 0) and FFT.irfft(x).shape == (3, 0)
    with pytest.raises(ValueError, match="more sizes than the input has axes"):
        FFT.fftn(random((3, 4)), s=(2, 3, 4))
