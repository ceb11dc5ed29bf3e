"""example_libraries.stax: every layer's init/apply shapes, forward passes against NumPy, and JAX's
parameter draws and transposed-convolution values (recorded from jax 0.10, partitionable threefry off)."""

import numpy as np
import pytest

from srcjax.runtime import numpy as jnp
from srcjax.runtime import random
from srcjax.runtime.example_libraries import stax

KEY = random.PRNGKey(0)
RS = np.random.RandomState(0)
X = RS.randn(2, 6, 5, 3).astype(np.float32)  # NHWC


# -- NumPy references -----------------------------------------------------------------------------------------
def _same_pads(size, window, stride):
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def np_conv_nhwc(x, w, strides, padding):
    """Cross-correlation of NHWC x with HWIO w (float64)."""
    (kh, kw), (sh, sw) = w.shape[:2], strides
    if padding == "SAME":
        pads = [_same_pads(x.shape[1], kh, sh), _same_pads(x.shape[2], kw, sw)]
    else:
        pads = [(0, 0), (0, 0)]
    x = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)])
    oh, ow = (x.shape[1] - kh) // sh + 1, (x.shape[2] - kw) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def np_pool(x, window, strides, padding, reduce, fill):
    """Pool an NHWC array over H and W with ``reduce`` (windows over padding see ``fill``)."""
    (wh, ww), (sh, sw) = window, strides
    pads = [_same_pads(x.shape[1], wh, sh), _same_pads(x.shape[2], ww, sw)] if padding == "SAME" else [(0, 0)] * 2
    x = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)], constant_values=fill)
    oh, ow = (x.shape[1] - wh) // sh + 1, (x.shape[2] - ww) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j, :] = reduce(x[:, i * sh:i * sh + wh, j * sw:j * sw + ww, :], axis=(1, 2))
    return out


# -- shapes -------------------------------------------------------------------------------------------------
# (layer, input shape, output shape)
SHAPES = [
    (stax.Dense(7), (2, 5, 3), (2, 5, 7)),
    (stax.Conv(4, (3, 2)), (2, 6, 5, 3), (2, 4, 4, 4)),
    (stax.Conv(4, (3, 2), strides=(2, 1), padding="SAME"), (2, 6, 5, 3), (2, 3, 5, 4)),
    (stax.Conv(4, (2, 2), padding=((1, 0), (2, 2))), (2, 6, 5, 3), (2, 6, 8, 4)),
    (stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (2, 2)), (2, 6, 5, 3), (2, 4, 4, 2)),
    (stax.ConvTranspose(4, (3, 3), strides=(2, 2), padding="SAME"), (2, 6, 5, 3), (2, 12, 10, 4)),
    (stax.ConvTranspose(4, (3, 2), strides=(2, 1)), (2, 6, 5, 3), (2, 13, 6, 4)),
    (stax.Conv1DTranspose(2, (3,), strides=(2,), padding="SAME"), (2, 4, 3), (2, 8, 2)),
    (stax.MaxPool((2, 2), strides=(2, 2)), (2, 6, 5, 3), (2, 3, 2, 3)),
    (stax.AvgPool((3, 3), padding="SAME"), (2, 6, 5, 3), (2, 6, 5, 3)),
    (stax.SumPool((2, 3), strides=(1, 2)), (2, 6, 5, 3), (2, 5, 2, 3)),
    (stax.MaxPool((2,), spec="NCW"), (2, 3, 6), (2, 3, 5)),
    (stax.BatchNorm(), (2, 6, 5, 3), (2, 6, 5, 3)),
    (stax.BatchNorm(axis=0), (4, 3), (4, 3)),
    (stax.Flatten, (2, 6, 5, 3), (2, 90)),
    (stax.Identity, (2, 3), (2, 3)),
    (stax.Dropout(0.5, mode="test"), (2, 3), (2, 3)),
] + [(layer, (2, 3), (2, 3)) for layer in (stax.Tanh, stax.Relu, stax.Exp, stax.LogSoftmax, stax.Softmax,
                                           stax.Softplus, stax.Sigmoid, stax.Elu, stax.LeakyRelu, stax.Selu,
                                           stax.Gelu)]


@pytest.mark.parametrize("layer, in_shape, out_shape", SHAPES)
def test_init_shape_matches_apply_shape(layer, in_shape, out_shape):
    init_fun, apply_fun = layer
    shape, params = init_fun(KEY, in_shape)
    assert tuple(shape) == out_shape
    out = apply_fun(params, jnp.asarray(RS.randn(*in_shape).astype(np.float32)), rng=random.PRNGKey(1))
    assert out.shape == out_shape and out.dtype == np.float32


def test_init_accepts_unknown_batch_size():
    shape, _ = stax.serial(stax.Dense(4), stax.Relu, stax.Dense(2))[0](KEY, (-1, 3))
    assert shape == (-1, 2)


# -- forward passes ------------------------------------------------------------------------------------------
def test_tiny_mlp_against_numpy_and_jax_parameters():
    init_fun, apply_fun = stax.serial(stax.Dense(3), stax.Relu, stax.Dense(2), stax.LogSoftmax)
    shape, params = init_fun(KEY, (-1, 2))
    assert shape == (-1, 2) and params[1] == () and params[3] == ()
    (w1, b1), (w2, b2) = params[0], params[2]
    # JAX's draws for the same key
    np.testing.assert_allclose(np.asarray(w1), [[0.28651, -0.711253, 0.364026], [0.255849, -0.442047, -0.56286]],
                               atol=2e-6)
    np.testing.assert_allclose(np.asarray(b1), [0.001569, 0.016315, -0.008946], atol=2e-6)
    np.testing.assert_allclose(np.asarray(w2), [[-0.255069, -0.862445], [0.591427, 0.15102], [0.361432, -0.511307]],
                               atol=2e-6)
    np.testing.assert_allclose(np.asarray(b2), [0.005803, 0.009879], atol=2e-6)
    x = RS.randn(4, 2)
    w1, b1, w2, b2 = (np.asarray(a, np.float64) for a in (w1, b1, w2, b2))
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    expected = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(apply_fun(params, jnp.asarray(x.astype(np.float32)))), expected,
                               rtol=1e-5, atol=1e-6)


def test_tiny_conv_net_against_numpy():
    init_fun, apply_fun = stax.serial(stax.Conv(4, (3, 3), strides=(1, 2), padding="SAME"), stax.Relu,
                                      stax.MaxPool((2, 2), strides=(2, 2)), stax.Flatten, stax.Dense(3))
    shape, params = init_fun(KEY, X.shape)
    (w, b), _, _, _, (wd, bd) = params
    assert w.shape == (3, 3, 3, 4) and b.shape == (1, 1, 1, 4) and shape == (2, 3)
    h = np.maximum(np_conv_nhwc(X, np.asarray(w, np.float64), (1, 2), "SAME") + np.asarray(b), 0)
    h = np_pool(h, (2, 2), (2, 2), "VALID", np.max, -np.inf).reshape(2, -1)
    expected = h @ np.asarray(wd, np.float64) + np.asarray(bd)
    np.testing.assert_allclose(np.asarray(apply_fun(params, jnp.asarray(X))), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_pools_against_numpy(padding):
    for layer, reduce, fill in [(stax.MaxPool, np.max, -np.inf), (stax.SumPool, np.sum, 0.0)]:
        _, apply_fun = layer((3, 2), strides=(2, 1), padding=padding)
        np.testing.assert_allclose(np.asarray(apply_fun((), jnp.asarray(X))),
                                   np_pool(X, (3, 2), (2, 1), padding, reduce, fill), rtol=1e-5, atol=1e-6)
    # AvgPool divides by the number of real (unpadded) elements under each window
    _, apply_fun = stax.AvgPool((3, 2), strides=(2, 1), padding=padding)
    counts = np_pool(np.ones_like(X[:1, ..., :1]), (3, 2), (2, 1), padding, np.sum, 0.0)
    np.testing.assert_allclose(np.asarray(apply_fun((), jnp.asarray(X))),
                               np_pool(X, (3, 2), (2, 1), padding, np.sum, 0.0) / counts, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("padding, stride, expected", [
    ("SAME", 1, [210.0, -79.0, -8.0]),
    ("SAME", 2, [100.0, 10.0, 201.0, 20.0, -98.0, -10.0]),
    ("VALID", 1, [100.0, 210.0, -79.0, -8.0, -1.0]),
    ("VALID", 2, [100.0, 10.0, 201.0, 20.0, -98.0, -10.0, -1.0]),
])
def test_conv_transpose_values_are_jax_s(padding, stride, expected):
    init_fun, apply_fun = stax.Conv1DTranspose(1, (3,), strides=(stride,), padding=padding)
    shape, _ = init_fun(KEY, (1, 3, 1))
    assert shape == (1, len(expected), 1)
    w, b = jnp.asarray([[[1.0]], [[10.0]], [[100.0]]]), jnp.zeros((1, 1, 1))
    assert apply_fun((w, b), jnp.asarray([[[1.0], [2.0], [-1.0]]])).ravel().tolist() == expected


def test_batch_norm():
    init_fun, apply_fun = stax.BatchNorm(axis=(0, 1, 2))
    _, (beta, gamma) = init_fun(KEY, X.shape)
    assert beta.tolist() == [0.0] * 3 and gamma.tolist() == [1.0] * 3
    x = X.astype(np.float64)
    z = (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-5)
    params = (jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.5, 1.0, -1.0]))
    np.testing.assert_allclose(np.asarray(apply_fun(params, jnp.asarray(X))), np.array([0.5, 1, -1]) * z + [1, 2, 3],
                               rtol=1e-4, atol=1e-5)
    init_fun, apply_fun = stax.BatchNorm(axis=0, center=False, scale=False)
    shape, params = init_fun(KEY, (4, 3))
    assert params == ((), ())
    np.testing.assert_allclose(np.asarray(apply_fun(params, jnp.asarray(X[0, 0, :4]))),
                               (X[0, 0, :4] - X[0, 0, :4].mean(0)) / np.sqrt(X[0, 0, :4].var(0) + 1e-5), rtol=1e-4)


def test_dropout():
    _, apply_fun = stax.Dropout(0.7)
    got = apply_fun((), jnp.arange(1.0, 9.0), rng=KEY)
    # JAX's mask for this key; kept values are scaled by 1 / rate (rate is the keep probability)
    np.testing.assert_allclose(np.asarray(got), [1.428572, 2.857143, 4.285714, 0, 7.142858, 0, 10.0, 0], rtol=1e-6)
    with pytest.raises(ValueError, match="requires apply_fun to be called with a PRNG key"):
        apply_fun((), jnp.ones(3))
    _, apply_fun = stax.Dropout(0.7, mode="eval")
    assert apply_fun((), jnp.ones(3), rng=KEY).tolist() == [1.0, 1.0, 1.0]
    # serial splits its rng between layers as JAX does
    init_fun, apply_fun = stax.serial(stax.Dense(2), stax.Dropout(0.5))
    _, params = init_fun(KEY, (-1, 3))
    got = apply_fun(params, jnp.ones((2, 3)), rng=random.PRNGKey(1))
    np.testing.assert_allclose(np.asarray(got), [[0.0, -2.007762], [0.0, -2.007762]], rtol=1e-6)


def test_fan_out_parallel_fan_in():
    init_fun, apply_fun = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(4), stax.Identity), stax.FanInConcat())
    shape, params = init_fun(KEY, (-1, 3))
    assert shape == (-1, 7)
    x = RS.randn(2, 3).astype(np.float32)
    (w, b), _ = params[1]
    expected = np.concatenate([x @ np.asarray(w, np.float64) + np.asarray(b), x], axis=1)
    np.testing.assert_allclose(np.asarray(apply_fun(params, jnp.asarray(x))), expected, rtol=1e-5, atol=1e-6)
    init_fun, apply_fun = stax.serial(stax.FanOut(3), stax.parallel(stax.Identity, stax.Tanh, stax.Exp),
                                      stax.FanInSum)
    shape, params = init_fun(KEY, (2, 3))
    assert shape == (2, 3)
    np.testing.assert_allclose(np.asarray(apply_fun(params, jnp.asarray(x))), x + np.tanh(x) + np.exp(x), rtol=1e-5)
    shapes, _ = stax.FanInConcat(axis=0)[0](KEY, [(2, 3), (4, 3)])
    assert shapes == (6, 3)


def test_shape_dependent_and_elementwise():
    def make(input_shape):
        return stax.Dense(input_shape[-1] * 2)

    init_fun, apply_fun = stax.shape_dependent(make)
    shape, params = init_fun(KEY, (5, 3))
    assert shape == (5, 6) and apply_fun(params, jnp.ones((5, 3))).shape == (5, 6)
    init_fun, apply_fun = stax.elementwise(jnp.clip, min=-1.0, max=1.0)
    assert init_fun(KEY, (3,)) == ((3,), ())
    assert apply_fun((), jnp.asarray([-3.0, 0.5, 2.0])).tolist() == [-1.0, 0.5, 1.0]
    assert stax.Elementwise is stax.elementwise


def test_bad_padding_is_reported():
    with pytest.raises(ValueError, match="unknown padding 'FULL'"):
        stax.Conv(2, (2, 2), padding="FULL")[0](KEY, (1, 4, 4, 1))
