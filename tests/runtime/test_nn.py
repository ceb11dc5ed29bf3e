"""srcjax.nn and srcjax.nn.initializers.

Values against NumPy float64 formulas; result dtypes/weak types and initializer draws are JAX's (recorded
from jax 0.10 with jax_threefry_partitionable=False, srcjax's default stream).
"""

import math

import numpy as np
import pytest

import srcjax
from srcjax.runtime import nn, random
from srcjax.runtime import nn_initializers as init
from srcjax.runtime import numpy as jnp

X = np.array([-30.0, -3.0, -1.5, -1.0, -0.5, 0.0, 0.25, 1.0, 2.0, 3.5, 30.0])
_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return 0.5 * (1 + np.tanh(x / 2))


def _softplus(x):
    return np.logaddexp(x, 0)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


ACTIVATIONS = [
    ("relu", lambda x: np.maximum(x, 0)),
    ("relu6", lambda x: np.clip(x, 0, 6)),
    ("sigmoid", _sigmoid),
    ("softplus", _softplus),
    ("sparse_plus", lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4))),
    ("sparse_sigmoid", lambda x: np.clip((x + 1) / 2, 0, 1)),
    ("soft_sign", lambda x: x / (np.abs(x) + 1)),
    ("silu", lambda x: x * _sigmoid(x)),
    ("swish", lambda x: x * _sigmoid(x)),
    ("log_sigmoid", lambda x: -_softplus(-x)),
    ("leaky_relu", lambda x: np.where(x >= 0, x, 0.01 * x)),
    ("hard_sigmoid", lambda x: np.clip(x + 3, 0, 6) / 6),
    ("hard_silu", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hard_swish", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hard_tanh", lambda x: np.clip(x, -1, 1)),
    ("elu", _elu),
    ("celu", lambda x: np.maximum(x, 0) + np.expm1(np.minimum(x, 0))),
    ("selu", lambda x: 1.0507009873554805 * _elu(x, 1.6732632423543772)),
    ("gelu", lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    ("squareplus", lambda x: (x + np.sqrt(x * x + 4)) / 2),
    ("mish", lambda x: x * np.tanh(_softplus(x))),
    ("tanh", np.tanh),
    ("identity", lambda x: x),
]


@pytest.mark.parametrize("name, reference", ACTIVATIONS)
def test_activations_against_numpy(name, reference):
    got = getattr(nn, name)(jnp.asarray(X.astype(np.float32)))
    assert got.dtype == np.float32 and got.shape == X.shape
    np.testing.assert_allclose(np.asarray(got), reference(X), rtol=2e-6, atol=1e-6)


def test_activation_parameters_and_exact_gelu():
    x = jnp.asarray(X.astype(np.float32))
    np.testing.assert_allclose(np.asarray(nn.gelu(x, approximate=False)), X * (1 + _erf(X / np.sqrt(2))) / 2,
                               rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.leaky_relu(x, 0.2)), np.where(X >= 0, X, 0.2 * X), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.elu(x, 0.5)), _elu(X, 0.5), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(nn.celu(x, 2.0)), np.maximum(X, 0) + 2 * np.expm1(np.minimum(X, 0) / 2),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(nn.squareplus(x, 1.0)), (X + np.sqrt(X * X + 1)) / 2, rtol=1e-6, atol=1e-6)
    positive = np.array([1e-6, 0.1, 0.6931, 1.0, 5.0, 40.0])
    np.testing.assert_allclose(np.asarray(nn.log1mexp(jnp.asarray(positive.astype(np.float32)))),
                               np.log1p(-np.exp(-positive)), rtol=3e-6)
    halves = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(np.asarray(nn.glu(jnp.asarray(halves), axis=1)), halves[:, :2] * _sigmoid(halves[:, 2:]),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.glu(jnp.asarray(halves.T), axis=0)),
                               halves.T[:2] * _sigmoid(halves.T[2:]), rtol=1e-6)


# result types for inputs 2, 2.0, int32[2], float16[2], bool[2] ("~" marks weak; "!" an error), recorded from JAX
DTYPES = {
    "relu": ["i32~", "f32~", "i32", "f16", "i32~"],
    "relu6": ["f32~", "f32~", "f32~", "f16", "f32~"],
    "sigmoid": ["!", "f32~", "!", "f16", "!"],
    "softplus": ["f32~", "f32~", "f32", "f16", "f32~"],
    "sparse_plus": ["f32~", "f32~", "f32~", "f16", "f32~"],
    "soft_sign": ["f32~", "f32~", "f32", "f16", "f32~"],
    "silu": ["!", "f32~", "!", "f16", "!"],
    "log_sigmoid": ["f32~", "f32~", "f32", "f16", "!"],
    "leaky_relu": ["f32~", "f32~", "f32~", "f16", "f32~"],
    "hard_silu": ["f32~", "f32~", "f32~", "f16", "f32~"],
    "hard_tanh": ["i32~", "f32~", "i32", "f16", "i32~"],
    "elu": ["f32~", "f32~", "f32~", "f16", "f32~"],
    "celu": ["f32~", "f32~", "f32~", "f16", "f32~"],
    "selu": ["f32~", "f32~", "f32~", "f16", "f32~"],
    "gelu": ["f32", "f32", "f32", "f16", "f32"],
    "squareplus": ["f32~", "f32~", "f32", "f16", "f32"],
    "mish": ["f32~", "f32~", "f32", "f16", "f32~"],
    "log1mexp": ["f32~", "f32~", "f32", "f16", "!"],
    "logmeanexp": ["f32", "f32", "f32", "f16", "f32"],
    "tanh": ["f32~", "f32~", "f32", "f16", "f32"],
    "identity": ["i32~", "f32~", "i32", "f16", "bool"],
    "softmax": ["!", "!", "f32", "f16", "!"],
    "log_softmax": ["!", "!", "f32", "f16", "!"],
    "logsumexp": ["f32", "f32", "f32", "f16", "f32"],
    "standardize": ["!", "!", "f32", "f16", "f32"],
}
INPUTS = [lambda: 2, lambda: 2.0, lambda: jnp.array([1, 2]), lambda: jnp.array([1.0, 2.0], jnp.float16),
          lambda: jnp.array([True, False])]
SHORT = {"float32": "f32", "int32": "i32", "float16": "f16", "bool": "bool"}


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_result_dtypes_and_weak_types_are_jax_s(name):
    got = []
    for make in INPUTS:
        try:
            out = getattr(nn, name)(make())
        except (TypeError, ValueError):
            got.append("!")
        else:
            got.append(SHORT[out.dtype.name] + ("~" if out.weak_type else ""))
    assert got == DTYPES[name]


def test_derivatives_at_nan_and_near_zero_follow_jax_s_rules():
    # JAX 0.10.2: relu, relu6 and hard_sigmoid have derivative 0 at NaN (their rules select on x > 0, 0 < x < 6);
    # log1mexp's is 1 / expm1(x) (1e8 at 1e-8 in float32, where exp(-x) rounds to 1)
    for name, expected in [("relu", [0, 0, 1]), ("relu6", [0, 0, 1]), ("hard_sigmoid", [0, 1 / 6, 1 / 6])]:
        fn = getattr(nn, name)
        x = jnp.array([np.nan, 0.0, 2.0])
        np.testing.assert_allclose(srcjax.vmap(srcjax.grad(fn))(x), expected, rtol=1e-6)
        assert np.isnan(np.asarray(fn(x))[0])
    x = jnp.array([1e-8, 1.0, -100.0])
    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(nn.log1mexp))(x), 1 / np.expm1(np.float64([1e-8, 1, -100])),
                               rtol=1e-6)


# -- softmax family -------------------------------------------------------------------------------------------
def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
def test_softmax_and_log_softmax(axis):
    x = np.random.RandomState(1).randn(3, 4) * 5
    np.testing.assert_allclose(np.asarray(nn.softmax(jnp.asarray(x.astype(np.float32)), axis=axis)),
                               _np_softmax(x, axis), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(nn.log_softmax(jnp.asarray(x.astype(np.float32)), axis=axis)),
                               np.log(_np_softmax(x, axis)), rtol=1e-5, atol=1e-5)


def test_softmax_is_stable_for_large_inputs_and_respects_where():
    big = jnp.asarray([1000.0, 1001.0])
    np.testing.assert_allclose(np.asarray(nn.softmax(big)), [0.26894142, 0.7310586], rtol=1e-6)
    x = jnp.asarray([[1.0, 2.0], [3.0, 4.0]])
    where = jnp.asarray([[True, False], [True, True]])
    np.testing.assert_allclose(np.asarray(nn.softmax(x, where=where)), [[1.0, 0.0], [0.26894143, 0.7310586]],
                               rtol=1e-6)
    got = np.asarray(nn.log_softmax(x, where=where))
    assert got[0, 1] == -np.inf
    np.testing.assert_allclose(got[[0, 1, 1], [0, 0, 1]], [0.0, -1.3132616, -0.31326163], rtol=1e-6)


def test_logsumexp():
    a = np.random.RandomState(2).randn(2, 3, 4)
    lse = np.log(np.exp(a).sum(axis=(0, 2)))
    np.testing.assert_allclose(np.asarray(nn.logsumexp(jnp.asarray(a.astype(np.float32)), axis=(0, 2))), lse, rtol=1e-6)
    got = nn.logsumexp(jnp.asarray(a.astype(np.float32)), axis=1, keepdims=True)
    assert got.shape == (2, 1, 4)
    np.testing.assert_allclose(np.asarray(nn.logsumexp(jnp.asarray([1000.0, 1000.0]))), 1000 + np.log(2), rtol=1e-7)
    assert nn.logsumexp(jnp.asarray([-np.inf, -np.inf])).item() == -np.inf
    # with weights b, a negative sum has a sign (JAX: 2.96779, -1) or is NaN without return_sign
    value, sign = nn.logsumexp(jnp.asarray([1.0, 2.0]), b=jnp.asarray([1.0, -3.0]), return_sign=True)
    np.testing.assert_allclose(value.item(), np.log(3 * np.e**2 - np.e), rtol=1e-6)
    assert sign.item() == -1.0
    assert np.isnan(nn.logsumexp(jnp.asarray([1.0, 2.0]), b=jnp.asarray([1.0, -3.0])).item())
    got = nn.logsumexp(jnp.asarray([[1.0, 2.0], [3.0, 4.0]]), axis=1, where=jnp.asarray([[True, False], [True, True]]))
    np.testing.assert_allclose(np.asarray(got), [1.0, np.log(np.exp(3) + np.exp(4))], rtol=1e-6)
    np.testing.assert_allclose(nn.logmeanexp(jnp.asarray([1.0, 2.0, 4.0])).item(),
                               np.log(np.mean(np.exp([1.0, 2.0, 4.0]))), rtol=1e-6)
    np.testing.assert_allclose(
        nn.logmeanexp(jnp.asarray([1.0, 2.0, 4.0]), where=jnp.asarray([True, True, False])).item(),
        np.log(np.mean(np.exp([1.0, 2.0]))), rtol=1e-6)


def test_one_hot():
    got = nn.one_hot(jnp.asarray([0, 2, 5, -1]), 3)
    assert got.dtype == np.float32 and not got.weak_type
    assert got.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]]  # out of range gives a zero row
    got = nn.one_hot(jnp.asarray([0, 2]), 3, axis=0, dtype=jnp.int32)
    assert got.dtype == np.int32 and got.tolist() == [[1, 0], [0, 0], [0, 1]]
    assert nn.one_hot(jnp.asarray([[1], [0]]), 2).shape == (2, 1, 2)
    assert nn.one_hot(1, 3).tolist() == [0, 1, 0]
    assert nn.one_hot(jnp.asarray([0.0, 2.5]), 3).tolist() == [[1, 0, 0], [0, 0, 0]]
    with pytest.raises(TypeError, match="num_classes must be a static Python int"):
        nn.one_hot(jnp.asarray([0]), 2.5)
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        nn.one_hot(jnp.asarray([0]), 2, axis=3)


def test_standardize():
    x = np.random.RandomState(3).randn(4, 5) * 3 + 1
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    for algorithm in ("fast", "stable"):
        got = nn.standardize(jnp.asarray(x.astype(np.float32)), algorithm=algorithm)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)
    got = nn.standardize(jnp.asarray(x.astype(np.float32)), axis=0, mean=0.0, variance=1.0, epsilon=0.0)
    np.testing.assert_allclose(np.asarray(got), x, rtol=1e-6)
    with pytest.raises(ValueError, match="Unknown algorithm 'standard'"):
        nn.standardize(jnp.ones(3), algorithm="standard")


def test_glu_errors():
    with pytest.raises(ValueError, match="odd size 3"):
        nn.glu(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="out of bounds"):
        nn.glu(2.0)


# -- attention ---------------------------------------------------------------------------------------------
def _np_attention(q, k, v, bias=None, mask=None, causal=False, kv_lengths=None):
    """Reference in float64: heads of k/v repeated to the query's head count."""
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    k = np.repeat(k, N // K, axis=2)
    v = np.repeat(v, N // K, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(H)
    if bias is not None:
        logits = logits + bias
    keep = np.ones((B, N, T, S), bool)
    if mask is not None:
        keep &= mask
    if causal:
        keep &= np.tril(np.ones((T, S), bool))
    if kv_lengths is not None:
        keep &= (np.arange(S)[None, :] < np.asarray(kv_lengths)[:, None])[:, None, None, :]
    logits = np.where(keep, logits, -1e30)
    return np.einsum("bnts,bsnh->btnh", _np_softmax(logits, -1), v)


def test_dot_product_attention_against_numpy():
    rs = np.random.RandomState(0)
    q, k, v = rs.randn(2, 3, 4, 5), rs.randn(2, 6, 2, 5), rs.randn(2, 6, 2, 5)  # 4 query heads share 2 kv heads
    bias, mask = rs.randn(2, 4, 3, 6), rs.rand(2, 1, 3, 6) > 0.3
    f32 = [jnp.asarray(a.astype(np.float32)) for a in (q, k, v, bias)]
    got = nn.dot_product_attention(*f32[:3])
    np.testing.assert_allclose(np.asarray(got), _np_attention(q, k, v), rtol=1e-4, atol=1e-5)
    got = nn.dot_product_attention(*f32, jnp.asarray(mask), is_causal=True, key_value_seq_lengths=jnp.asarray([5, 6]))
    expected = _np_attention(q, k, v, bias, mask, causal=True, kv_lengths=[5, 6])
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)
    unbatched = nn.dot_product_attention(f32[0][0], f32[1][0], f32[2][0])
    np.testing.assert_allclose(np.asarray(unbatched), _np_attention(q, k, v)[0], rtol=1e-4, atol=1e-5)
    assert got.dtype == np.float32 and got.shape == (2, 3, 4, 5)


def test_dot_product_attention_errors():
    with pytest.raises(ValueError, match="all be rank 3"):
        nn.dot_product_attention(jnp.ones((1, 2, 3, 4)), jnp.ones((2, 3, 4)), jnp.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="K dividing N=4"):
        nn.dot_product_attention(jnp.ones((1, 2, 4, 4)), jnp.ones((1, 2, 3, 4)), jnp.ones((1, 2, 3, 4)))
    with pytest.raises(NotImplementedError, match="implementation='cudnn'"):
        nn.dot_product_attention(jnp.ones((2, 1, 4)), jnp.ones((2, 1, 4)), jnp.ones((2, 1, 4)), implementation="cudnn")


# -- initializers ------------------------------------------------------------------------------------------
# init(PRNGKey(0), (2, 3)) in JAX
RECORDED = {
    "glorot_normal": [[0.128848, -0.852415, 0.442697], [0.831464, 0.167627, -0.080588]],
    "glorot_uniform": [[0.163222, -0.877044, 0.530121], [0.863601, 0.211567, -0.10242]],
    "he_normal": [[0.203726, -1.347787, 0.699966], [1.31466, 0.265042, -0.127421]],
    "he_uniform": [[0.258077, -1.386728, 0.838194], [1.365474, 0.334516, -0.16194]],
    "lecun_normal": [[0.144056, -0.953029, 0.494951], [0.929605, 0.187413, -0.0901]],
    "lecun_uniform": [[0.182488, -0.980565, 0.592693], [0.965536, 0.236539, -0.114509]],
    "normal": [[0.001878, -0.012833, 0.006494], [0.012491, 0.002445, -0.001174]],
    "uniform": [[0.005745, 0.000997, 0.00742], [0.008942, 0.005966, 0.004533]],
    "truncated_normal": [[0.001792, -0.011855, 0.006157], [0.011564, 0.002331, -0.001121]],
    "orthogonal": [[0.261299, 0.903369, 0.340069], [-0.908585, 0.349129, -0.229307]],
}
MADE = {
    "glorot_normal": init.glorot_normal, "glorot_uniform": init.glorot_uniform, "he_normal": init.he_normal,
    "he_uniform": init.he_uniform, "lecun_normal": init.lecun_normal, "lecun_uniform": init.lecun_uniform,
    "normal": init.normal, "uniform": init.uniform, "truncated_normal": init.truncated_normal,
    "orthogonal": init.orthogonal,
}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_initializers_draw_jax_s_values(name):
    got = MADE[name]()(random.PRNGKey(0), (2, 3))
    assert got.dtype == np.float32 and got.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(got), RECORDED[name], atol=2e-6)


def test_variance_scaling_modes_axes_and_aliases():
    key = random.PRNGKey(0)
    got = init.variance_scaling(2.0, "fan_out", "normal")(key, (2, 3))
    np.testing.assert_allclose(np.asarray(got), [[0.153374, -1.047845, 0.530248], [1.019853, 0.199609, -0.095897]],
                               atol=2e-6)
    got = init.variance_scaling(0.5, "fan_geo_avg", "truncated_normal")(key, (2, 3))
    np.testing.assert_allclose(np.asarray(got), [[0.092044, -0.608932, 0.316245], [0.593965, 0.119746, -0.057569]],
                               atol=2e-6)
    conv = init.glorot_normal(in_axis=2, out_axis=3)(key, (2, 2, 1, 2))  # receptive field 4: fans 4 and 8
    np.testing.assert_allclose(np.asarray(conv).ravel(), [0.035821, -0.170719, -0.166058, 0.691408, -0.547275,
                                                          0.817898, -0.375486, 0.489082], atol=2e-6)
    assert init.xavier_normal is init.glorot_normal and init.kaiming_uniform is init.he_uniform
    big = np.asarray(init.he_normal()(key, (400, 300)))  # variance 2 / fan_in
    assert abs(big.var() - 2 / 400) < 0.05 * 2 / 400 and np.abs(big).max() <= 2 * np.sqrt(2 / 400) / 0.8796 + 1e-6
    with pytest.raises(ValueError, match="invalid mode"):
        init.variance_scaling(1.0, "fan_sideways", "normal")
    with pytest.raises(ValueError, match="invalid distribution"):
        init.variance_scaling(1.0, "fan_in", "cauchy")


def test_constant_zeros_ones_orthogonal_and_delta():
    key = random.PRNGKey(0)
    assert init.zeros(key, (2,)).tolist() == [0.0, 0.0] and init.ones(key, 3, jnp.int32).tolist() == [1, 1, 1]
    got = init.constant(-0.5, jnp.float16)(key, (2, 2))
    assert got.dtype == np.float16 and got.tolist() == [[-0.5, -0.5], [-0.5, -0.5]]
    q = np.asarray(init.orthogonal()(key, (5, 3)), np.float64)
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-5)
    wide = np.asarray(init.orthogonal(scale=2.0, column_axis=0)(key, (2, 6)), np.float64)
    np.testing.assert_allclose(wide @ wide.T, 4 * np.eye(2), atol=1e-5)
    delta = np.asarray(init.delta_orthogonal()(key, (3, 2, 2)))
    np.testing.assert_allclose(delta[1], [[0.982934, 0.183961], [0.183961, -0.982934]], atol=2e-6)
    assert not delta[0].any() and not delta[2].any()
    with pytest.raises(ValueError, match="at least a 2D shape"):
        init.orthogonal()(key, (3,))
