"""``lax.reduce_precision`` and ``lax.dtype``: against NumPy's float16 rounding (the same format as 5 exponent and
10 mantissa bits, within float16's normal range), values recorded from JAX 0.10.2 at the edges (halfway cases,
overflow, underflow without subnormals, NaN and infinities), weak types, and under jit, vmap and grad."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

RNG = np.random.default_rng(0)


def test_five_and_ten_bits_round_as_float16_does_in_its_normal_range():
    x = (RNG.normal(size=2000) * 10.0 ** RNG.uniform(-4, 4.8, size=2000)).astype(np.float32)
    x = x[(np.abs(x) >= 2.0**-14) & (np.abs(x) <= 65504)]
    got = np.asarray(lax.reduce_precision(x, 5, 10))
    np.testing.assert_array_equal(got, x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(lax.reduce_precision(x.astype(np.float64), 5, 10)),
                                  x.astype(np.float16).astype(np.float32))  # (float64 narrows: x64 is off)


@pytest.mark.parametrize("x, bits, want", [
    # halfway between 1 + 2^-10 and 1 + 2^-9: ties go to the even mantissa
    (1.00146484375, (5, 10), 1.001953125),
    (1.0009765625, (5, 10), 1.0009765625),
    (1.2345678, (5, 10), 1.234375),
    (70000.0, (5, 10), np.inf),  # beyond float16's largest
    (-70000.0, (5, 10), -np.inf),
    (1e-30, (5, 10), 0.0),  # below the normal range: zero (no subnormals)
    (6e-5, (5, 10), 0.0),
    (-1e-30, (5, 10), -0.0),
    (3.0e38, (8, 7), 3.0040553e38),  # bfloat16's rounding
    (1e-45, (8, 7), 0.0),
    (np.inf, (8, 7), np.inf),
    (np.nan, (8, 7), np.nan),
    (np.nan, (8, 0), np.nan),
    (2.5, (8, 23), 2.5),  # float32's own format: unchanged
])
def test_edges_as_jax(x, bits, want):
    got = np.asarray(lax.reduce_precision(np.float32(x), *bits))
    np.testing.assert_array_equal(got, np.float32(want))
    assert np.signbit(got) == np.signbit(np.float32(want))


def test_types_and_transformations():
    out = lax.reduce_precision(2.5, 8, 7)
    assert out.dtype == np.float32 and out.weak_type
    half = lax.reduce_precision(np.array([1.0, 3.14159], np.float16), 4, 3)
    assert half.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(half), np.array([1.0, 3.25], np.float16))
    x = np.array([12575.0, -1e-30, 1e9, 10489.0], np.float32)
    want = np.array([12576.0, -0.0, np.inf, 10488.0], np.float32)
    np.testing.assert_array_equal(np.asarray(srcjax.jit(lambda x: lax.reduce_precision(x, 5, 10))(x)), want)
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(lambda x: lax.reduce_precision(x, 5, 10))(x)), want)
    assert float(srcjax.grad(lambda x: lax.reduce_precision(x, 5, 10))(1.3)) == 1.0  # (JAX: linear)
    with pytest.raises(TypeError, match="floating point"):
        lax.reduce_precision(jnp.arange(3), 5, 10)
    with pytest.raises(ValueError, match="exponent_bits >= 1"):
        lax.reduce_precision(1.0, 0, 10)


def test_dtype_is_canonical():
    assert lax.dtype(1.0) == np.float32 and lax.dtype(np.float64(1)) == np.float32
    assert lax.dtype(jnp.arange(3)) == np.int32 and lax.dtype(jnp.int64) == np.int32
    assert lax.dtype("float16") == np.float16 and lax.dtype(True) == np.bool_
