"""``lax.ragged_dot``/``ragged_dot_general`` and ``conv_general_dilated_local`` against NumPy loops,
``lax.rng_bit_generator`` against bits recorded from JAX 0.10.2 on the CPU, products' ``precision=`` algorithms
(``DotAlgorithmPreset``) against the roundings they name, and the ``accuracy=`` of transcendental functions."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ragged_reference(lhs, rhs, sizes):
    """Row i of lhs times rhs[group of i]; rows past the last group give zeros."""
    out = np.zeros((lhs.shape[0], rhs.shape[-1]))
    start = 0
    for g, size in enumerate(sizes):
        out[start:start + size] = lhs[start:start + size].astype(np.float64) @ rhs[g]
        start += size
    return out


# -- ragged_dot ------------------------------------------------------------------------------------------
def test_ragged_dot_values_gradients_and_batching():
    lhs, rhs, sizes = randn(7, 3), randn(3, 3, 2), np.array([2, 0, 4], np.int32)  # the last row is in no group
    np.testing.assert_allclose(lax.ragged_dot(lhs, rhs, sizes), ragged_reference(lhs, rhs, sizes), rtol=1e-5,
                               atol=1e-6)
    # d/dlhs of sum(out * c): row i is c[i] @ rhs[g(i)]^T; d/drhs[g] is lhs[rows of g]^T @ c[rows of g]
    c = randn(7, 2)
    glhs, grhs = srcjax.grad(lambda a, b: jnp.sum(lax.ragged_dot(a, b, sizes) * c), (0, 1))(lhs, rhs)
    groups = [0, 0, 2, 2, 2, 2]
    np.testing.assert_allclose(glhs[:6], [c[i] @ rhs[g].T for i, g in enumerate(groups)], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(glhs[6], 0)
    np.testing.assert_allclose(grhs[2], lhs[2:6].T @ c[2:6], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(grhs[1], 0)
    # batched over lhs and group sizes (JAX 0.10.2 refuses batched group sizes: NYI)
    sizes2 = np.stack([sizes, np.array([3, 3, 1], np.int32)])
    got = srcjax.vmap(lax.ragged_dot, in_axes=(0, None, 0))(np.stack([lhs, lhs + 1]), rhs, sizes2)
    np.testing.assert_allclose(got[1], ragged_reference(lhs + 1, rhs, sizes2[1]), rtol=1e-5, atol=1e-5)
    compiled = srcjax.jit(lambda a, b, s: lax.ragged_dot(a, b, s, preferred_element_type=jnp.float32))
    got = compiled(lhs.astype(np.float16), rhs.astype(np.float16), sizes)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ragged_reference(lhs.astype(np.float16), rhs.astype(np.float16), sizes),
                               rtol=2e-3, atol=2e-3)


def test_ragged_dot_general_contracting_and_batched_modes():
    # contracting: [m, k] x [k, n] -> [g, m, n], product g over group g's stretch of k
    lhs, rhs, sizes = randn(4, 6), randn(6, 5), np.array([1, 3, 1], np.int32)
    numbers = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
    got = lax.ragged_dot_general(lhs, rhs, sizes, numbers)
    bounds = [0, 1, 4, 5]
    want = [lhs[:, a:b].astype(np.float64) @ rhs[a:b] for a, b in zip(bounds, bounds[1:])]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # a batch axis with its own group sizes per batch entry (group_sizes [b, g]), ragged non-contracting
    lhs, rhs = randn(2, 5, 3), randn(2, 3, 3, 4)
    sizes = np.array([[1, 2, 2], [0, 4, 1]], np.int32)
    numbers = lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [0])), [1], [1])
    got = lax.ragged_dot_general(lhs, rhs, sizes, numbers)
    for b in range(2):
        np.testing.assert_allclose(got[b], ragged_reference(lhs[b], rhs[b], sizes[b]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, error, message", [
    (lambda: lax.ragged_dot(jnp.ones((4, 2)), jnp.ones((2, 2, 3)), jnp.array([1, 1, 2])), TypeError,
     "expected rhs group dimension size to be 3, got 2"),
    (lambda: lax.ragged_dot(jnp.ones((4, 2)), jnp.ones((2, 2, 3)), jnp.array([1.0, 3.0])), TypeError,
     "group_sizes.dtype is subtype of np.integer"),
    (lambda: lax.ragged_dot(jnp.ones((4, 2)), jnp.ones((2, 2, 3)), jnp.array([1, 3]), group_offset=jnp.array([0])),
     NotImplementedError, "group_offset"),
    (lambda: lax.ragged_dot_general(jnp.ones((4, 2)), jnp.ones((2, 3)), jnp.array([1, 1]),
                                    lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [0])),
     TypeError, "zero group dimensions"),
])
def test_ragged_dot_refuses_what_jax_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- conv_general_dilated_local --------------------------------------------------------------------------
def test_conv_general_dilated_local_is_a_kernel_per_output_position():
    lhs, rhs = randn(2, 3, 5, 4), randn(4, 3 * 3 * 2, 3, 3)  # NCHW; filter 3x2, VALID -> outputs 3x3
    got = lax.conv_general_dilated_local(lhs, rhs, (1, 1), "VALID", (3, 2))
    want = np.zeros((2, 4, 3, 3))
    for i in range(3):
        for j in range(3):
            patch = lhs[:, :, i:i + 3, j:j + 2].reshape(2, -1)  # (feature, window row, window column)
            want[:, :, i, j] = patch.astype(np.float64) @ rhs[:, :, i, j].T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="Unsupported precision"):
        lax.conv_general_dilated_local(lhs, rhs, (1, 1), "VALID", (3, 2), precision="F32_F32_F32")


# -- rng_bit_generator ----------------------------------------------------------------------------------
KEY = np.array([1, 2, 3, 4], np.uint32)


@pytest.mark.parametrize("key, shape, dtype, algorithm, new_key, bits", [
    # JAX 0.10.2's numbers on the CPU (RNG_DEFAULT is Philox there)
    (KEY, (5,), np.uint32, "RNG_DEFAULT", [1, 2, 5, 4], [512747620, 1298009047, 1267190206, 761827841, 1383286907]),
    (KEY, (2, 3), np.uint32, "RNG_THREE_FRY", [1, 2, 6, 4],
     [[1576285164, 740599976, 2436392515], [2249660814, 2425682526, 1497962777]]),
    (KEY, (), np.uint32, "RNG_THREE_FRY", [1, 2, 4, 4], 1576285164),
    (KEY, (3, 1), np.uint16, "RNG_PHILOX", [1, 2, 4, 4], [[59492], [3031], [51646]]),
    ([5, 6, 0xFFFFFFFE, 0xFFFFFFFF], (6,), np.uint32, "RNG_PHILOX", [5, 6, 0, 0],
     [3851460723, 1320486401, 3136348966, 3729489909, 415646568, 3034685952]),
    ([5, 6, 0xFFFFFFFE, 0xFFFFFFFF], (6,), np.uint32, "RNG_THREE_FRY", [5, 6, 1, 0],
     [4248992499, 1153752509, 2281824596, 886891200, 4093204993, 2146376121]),
])
def test_rng_bit_generator_bits_are_jaxs(key, shape, dtype, algorithm, new_key, bits):
    got_key, got = lax.rng_bit_generator(jnp.asarray(key, np.uint32), shape, dtype, lax.RandomAlgorithm[algorithm])
    assert got.dtype == dtype and got.shape == shape and got_key.dtype == np.uint32
    np.testing.assert_array_equal(got_key, new_key)
    np.testing.assert_array_equal(got, bits)


def test_rng_bit_generator_compiled_and_batched_as_jax():
    compiled = srcjax.jit(lambda k: lax.rng_bit_generator(k, (2, 3), algorithm=lax.RandomAlgorithm.RNG_THREE_FRY))
    np.testing.assert_array_equal(compiled(jnp.asarray(KEY))[1], [[1576285164, 740599976, 2436392515],
                                                                 [2249660814, 2425682526, 1497962777]])
    # JAX's batching: the first key draws the whole batch's bits and advances; the others come back unchanged
    keys, bits = srcjax.vmap(lambda k: lax.rng_bit_generator(k, (2,)))(jnp.asarray([[1, 2, 3, 4], [5, 6, 7, 8]],
                                                                                   np.uint32))
    np.testing.assert_array_equal(keys, [[1, 2, 4, 4], [5, 6, 7, 8]])
    np.testing.assert_array_equal(bits, [[512747620, 1298009047], [1267190206, 761827841]])
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        lax.rng_bit_generator(jnp.asarray(KEY), (2,), dtype=np.int32)
    with pytest.raises(TypeError, match="uint32"):
        lax.rng_bit_generator(jnp.zeros(4, np.int32), (2,))


# -- precision= algorithms -------------------------------------------------------------------------------
def test_dot_algorithm_presets_round_as_they_name(x64):
    a, b = RNG.standard_normal((4, 8)), RNG.standard_normal((8, 3))
    in_float32 = a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    got = lax.dot(a, b, precision="F32_F32_F32")  # float64 operands rounded to float32, result float64
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, in_float32, rtol=1e-6)
    assert np.abs(np.asarray(got) - a @ b).max() > 1e-9
    got = jnp.matmul(a, b, precision=lax.DotAlgorithmPreset.F64_F64_F64)
    np.testing.assert_allclose(got, a @ b, rtol=1e-14)
    # BF16_BF16_F32: float16 operands become bfloat16 (8 bits of mantissa); float32 ones stay as they are
    h, k = a.astype(np.float16), b.astype(np.float16)
    got = lax.dot(h, k, precision="BF16_BF16_F32", preferred_element_type=np.float32)
    rounded = [np.asarray(lax.reduce_precision(x.astype(np.float32), 8, 7), np.float64) for x in (h, k)]
    np.testing.assert_allclose(got, rounded[0] @ rounded[1], rtol=1e-5)
    f = a.astype(np.float32)
    np.testing.assert_array_equal(lax.dot(f, f.T, precision="BF16_BF16_F32_X3"), lax.dot(f, f.T))
    assert lax.dot(np.arange(3), np.arange(3), precision="F32_F32_F32").dtype == np.int64
    g = srcjax.grad(lambda x: jnp.sum(lax.dot(x, b, precision="F32_F32_F32") ** 2))(a)
    np.testing.assert_allclose(g, 2 * in_float32 @ b.astype(np.float32).astype(np.float64).T, rtol=1e-5)


@pytest.mark.parametrize("precision, message", [
    ("TF32_TF32_F32", "not supported by dot_general on CPU"),  # XLA's CPU backend has no TF32
    (lax.DotAlgorithm(np.float32, np.float32, np.float32), "not supported by dot_general on CPU"),
    ("HIGHEST", "Precision argument must be one of"),  # names are lower case
    (("highest", lax.Precision.HIGH), "Precision argument must be one of"),
])
def test_precisions_jax_refuses_on_the_cpu(precision, message, cpu_backend):
    with pytest.raises(ValueError, match=message):
        jnp.dot(jnp.ones((2, 2)), jnp.ones((2, 2)), precision=precision)


def test_presets_are_named_and_convolutions_take_them():
    preset = lax.DotAlgorithmPreset.BF16_BF16_F32
    assert repr(preset) == "DotAlgorithmPreset.BF16_BF16_F32" and str(preset) == "BF16_BF16_F32"
    assert preset.accumulation_type == np.float32 and preset.supported_lhs_types[1] == np.float32
    assert lax.DotAlgorithmPreset.F16_F16_F32.supported_output_types(np.float16, np.float16) == (np.float32,
                                                                                                np.float16)
    got = lax.conv(jnp.ones((1, 1, 4, 4)), jnp.ones((1, 1, 2, 2)), (1, 1), "VALID",
                   precision=lax.DotAlgorithmPreset.TF32_TF32_F32)  # a convolution ignores the algorithm
    np.testing.assert_array_equal(got, np.full((1, 1, 3, 3), 4.0))
    for name in ("fastest", "bfloat16_3x", ("high", "default")):
        np.testing.assert_array_equal(lax.dot(jnp.ones(3), jnp.ones(3), precision=name), 3.0)


# -- accuracy= -------------------------------------------------------------------------------------------
def test_accuracy_is_checked_and_keeps_the_value():
    x = jnp.linspace(-2.0, 2.0, 9)
    for fn in (lax.exp, lax.tanh, lax.log1p, lax.sin, lax.cbrt, lax.logistic):
        for accuracy in (lax.Tolerance(atol=1e-5), lax.AccuracyMode.HIGHEST, None):
            np.testing.assert_array_equal(fn(x, accuracy=accuracy), fn(x))
    with pytest.raises(NotImplementedError, match="Accuracy 3 not supported"):
        lax.exp(x, accuracy=3)
    with pytest.raises(ValueError, match="At least one of atol, rtol, or ulps"):
        lax.Tolerance()
    with pytest.raises(ValueError, match="non-negative"):
        lax.Tolerance(rtol=-1.0)
