"""Gradients of ``srcjax.scipy.special``, ``srcjax.scipy.stats.norm`` and ``srcjax.nn`` checked against
central finite differences, forward and reverse mode, in float64, inside each function's domain and away
from kinks; order 2 where the function is smooth there (``digamma`` to order 1: its derivative, polygamma,
is not a primitive, as in JAX); variants of a function already checked to second order (loc/scale, isf, tails)
to first order."""

import numpy as np
import pytest

import srcjax.nn as nn
import srcjax.scipy.special as sp
from srcjax.runtime.config import config
from srcjax.scipy.stats import norm
from srcjax.test_util import check_grads

R = np.random.RandomState(2)


def rn(*shape):
    return R.standard_normal(shape)


def pos(*shape):
    return R.uniform(0.3, 3.0, shape)


def prob(*shape):
    return R.uniform(0.05, 0.95, shape)


def away_from_zero(*shape):
    """Normal samples pushed at least 0.2 away from 0 (the kink of relu and friends)."""
    x = R.standard_normal(shape)
    return x + 0.2 * np.sign(x)


@pytest.fixture(autouse=True)
def x64():
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", saved)


def case(name, f, *args, order=2, atol=None, rtol=None, eps=None, modes=("fwd", "rev"), marks=()):
    return pytest.param(f, args, order, dict(atol=atol, rtol=rtol, eps=eps, modes=modes), id=name, marks=marks)


X = rn(2, 3)
SPECIAL = [
    case("logsumexp", sp.logsumexp, X), case("logsumexp_axis", lambda x: sp.logsumexp(x, axis=0, keepdims=True), X),
    case("logsumexp_b", lambda x, b: sp.logsumexp(x, axis=1, b=b), X, pos(2, 3)),
    case("logsumexp_sign", lambda x: sp.logsumexp(x, b=np.array([1.0, -0.2, 0.5]), return_sign=True)[0], rn(3)),
    case("logsumexp_large", lambda x: sp.logsumexp(x * 300.0), rn(4)),
    case("expit", sp.expit, X), case("logit", sp.logit, prob(2, 3)),
    case("erf", sp.erf, X), case("erfc", sp.erfc, X), case("erfinv", sp.erfinv, prob(4) * 1.6 - 0.8),
    case("gammaln", sp.gammaln, pos(2, 3), order=1),
    case("gammaln_negative", sp.gammaln, np.array([-0.5, -2.3]), order=1),
    case("digamma", sp.digamma, pos(2, 3), order=1), case("gamma", sp.gamma, pos(4), order=1),
    case("beta", sp.beta, pos(3), pos(3), order=1), case("betaln", sp.betaln, pos(3), pos(3), order=1),
    case("multigammaln", lambda a: sp.multigammaln(a, 3), pos(3) + 1.5, order=1),
    case("gammaln_order2", sp.gammaln, pos(2, 3)),
    case("gamma_order2", sp.gamma, pos(4)),
    case("betaln_order2", sp.betaln, pos(3), pos(3)),
    case("xlogy", sp.xlogy, rn(4), pos(4)), case("xlogy_zero", lambda y: sp.xlogy(0.0, y), pos(3)),
    # smooth in x at x == 0 (the derivative is log y there, as JAX's rule says), though the value is defined by cases
    case("xlogy_at_x_zero", sp.xlogy, np.array([0.0, 1.0, -0.7]), np.array([2.0, 3.0, 0.4])),
    case("xlog1py_at_x_zero", sp.xlog1py, np.array([0.0, 1.0, -0.7]), np.array([2.0, 3.0, -0.4])),
    case("xlog1py", sp.xlog1py, rn(4), pos(4) - 0.2), case("entr", sp.entr, pos(4)),
    case("rel_entr", sp.rel_entr, pos(3), pos(3)), case("kl_div", sp.kl_div, pos(3), pos(3)),
    case("softmax", lambda x: sp.softmax(x, axis=1), X), case("log_softmax", lambda x: sp.log_softmax(x, axis=0), X),
    case("ndtr", sp.ndtr, X * 2), case("ndtri", sp.ndtri, prob(4)),
    case("ndtri_tails", sp.ndtri, np.array([1e-3, 0.02, 0.98, 1 - 1e-3]), eps=1e-6, rtol=1e-4, order=1),
    case("log_ndtr", sp.log_ndtr, np.array([-25.0, -12.0, -3.0, -0.5, 0.4, 2.0, 9.0, 12.0])),
]


@pytest.mark.parametrize("f, args, order, kw", SPECIAL)
def test_special(f, args, order, kw):
    check_grads(f, args, order=order, **kw)


@pytest.mark.parametrize("dtype, bounds", [(np.float32, (-10.0, 5.0)), (np.float64, (-20.0, 8.0))])
def test_log_ndtr_slope_at_the_pieces_boundaries(dtype, bounds):
    # d log Phi = phi / Phi (JAX's rule); exactly at the points where log_ndtr switches method the pieces'
    # clipped arguments once halved it (float32 -10: 5.05 for 10.098, as JAX's float32 value is)
    import math

    import srcjax

    x = np.array([*bounds, bounds[0] - 1, bounds[1] + 1, 0.0], dtype)
    want = [math.exp(-v * v / 2) / math.sqrt(2 * math.pi) / (0.5 * math.erfc(-v / math.sqrt(2))) for v in x.tolist()]
    got = srcjax.vmap(srcjax.grad(sp.log_ndtr))(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-8)  # the series is 3 terms


NORM = [
    case("pdf", norm.pdf, X), case("pdf_loc_scale", norm.pdf, X, rn(3), pos(2, 3)),
    case("logpdf", norm.logpdf, X, 0.3, pos(3)), case("cdf", norm.cdf, X),
    case("cdf_loc_scale", norm.cdf, X, rn(3), pos(3)),
    case("logcdf", norm.logcdf, X * 3), case("sf", norm.sf, X, 0.5, 2.0), case("logsf", norm.logsf, X * 3, order=1),
    case("ppf", norm.ppf, prob(4)), case("ppf_loc_scale", norm.ppf, prob(4), rn(4), pos(4), order=1),
    case("isf", norm.isf, prob(3), 1.0, pos(3), order=1),
]


@pytest.mark.parametrize("f, args, order, kw", NORM)
def test_stats_norm(f, args, order, kw):
    check_grads(f, args, order=order, **kw)


K = away_from_zero(2, 3)
NN = [
    case("relu", nn.relu, K, order=1), case("relu6", nn.relu6, K * 4 + 0.1, order=1),
    case("gelu_tanh", nn.gelu, X), case("gelu_exact", lambda x: nn.gelu(x, approximate=False), X),
    case("softmax", nn.softmax, X), case("softmax_axis0", lambda x: nn.softmax(x, axis=0), X),
    case("softmax_where", lambda x: nn.softmax(x, where=np.array([True, False, True])), X),
    case("log_softmax", nn.log_softmax, X), case("logsumexp", lambda x: nn.logsumexp(x, axis=-1), X),
    case("logmeanexp", lambda x: nn.logmeanexp(x, axis=0), X),
    case("softplus", nn.softplus, X * 5), case("silu", nn.silu, X), case("swish", nn.swish, X),
    case("sigmoid", nn.sigmoid, X), case("log_sigmoid", nn.log_sigmoid, X * 5),
    case("elu", nn.elu, K, order=1), case("elu_alpha", lambda x: nn.elu(x, 0.5), K, order=1),
    case("celu", nn.celu, K, order=1), case("selu", nn.selu, K, order=1),
    case("leaky_relu", nn.leaky_relu, K, order=1), case("hard_tanh", nn.hard_tanh, K * 0.6, order=1),
    case("hard_sigmoid", nn.hard_sigmoid, K * 2, order=1), case("hard_silu", nn.hard_silu, K * 2, order=1),
    case("hard_swish", nn.hard_swish, K * 2, order=1),
    case("mish", nn.mish, X), case("soft_sign", nn.soft_sign, K), case("squareplus", nn.squareplus, X),
    case("sparse_plus", nn.sparse_plus, K * 0.5, order=1), case("sparse_sigmoid", nn.sparse_sigmoid, K * 0.5, order=1),
    case("glu", nn.glu, rn(3, 4)), case("standardize", lambda x: nn.standardize(x, axis=1), rn(2, 4)),
    case("log1mexp", nn.log1mexp, pos(4)), case("tanh", nn.tanh, X),
    case("one_hot_free", lambda x: x * nn.one_hot(np.array([0, 2]), 3), rn(2, 3)),
    # the softmax runs in float32 (as JAX's does): float32 tolerances
    case("dot_product_attention", lambda q, k, v: nn.dot_product_attention(q, k, v), rn(1, 3, 2, 4), rn(1, 3, 2, 4),
         rn(1, 3, 2, 4), eps=1e-3, atol=2e-3, rtol=2e-3),
]


@pytest.mark.parametrize("f, args, order, kw", NN)
def test_nn(f, args, order, kw):
    check_grads(f, args, order=order, **kw)
