"""Convolutions compiled natively: im2col patches as one fused nest (zeros in the padding and in the holes of
input dilation), then BLAS per group. Every case of the definition oracle in tests/transpiler/test_convolution.py,
in float64 and float32, with no host call; the gradients of a strided, padded convolution; and the dtypes that
stay host calls (integers, mixed operands)."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.config import config
from srcjax import lax
from tests.transpiler.test_convolution import CONVS, conv_oracle, dn_of
from srcjax.transpiler.primitives import convolution as C

RNG = np.random.default_rng(3)


def jitted(fn, *args):
    f = srcjax.jit(fn)
    out = f(*args)
    (specialisation,) = f._cache.values()
    assert specialisation.native is not None, specialisation.native_error
    return out, specialisation.native.plan


@pytest.mark.parametrize("label, ls, rs, strides, padding, ld, rd, layouts, groups, batch_groups", CONVS,
                         ids=[c[0] for c in CONVS])
def test_conv_compiled_against_definition(label, ls, rs, strides, padding, ld, rd, layouts, groups, batch_groups):
    lhs, rhs = RNG.standard_normal(ls), RNG.standard_normal(rs)
    dn = dn_of(*layouts)
    params = dict(window_strides=strides, padding=padding, lhs_dilation=ld, rhs_dilation=rd, dimension_numbers=dn,
                  feature_group_count=groups, batch_group_count=batch_groups)
    want = conv_oracle(lhs, rhs, strides, padding, ld, rd, dn, groups, batch_groups)
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        conv = lambda a, b: C.conv_general_dilated_p.bind(a, b, **params)  # noqa: E731
        got, plan = jitted(conv, lhs, rhs)
        assert not plan.host_ops
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
        # float32, and the result read by a fused nest (a view of the product's buffer, not a copy)
        got, plan = jitted(lambda a, b: conv(a, b) * 2.0 + 1.0, lhs.astype(np.float32), rhs.astype(np.float32))
        assert not plan.host_ops
        np.testing.assert_allclose(np.asarray(got), want * 2.0 + 1.0, rtol=1e-4, atol=1e-4)
    finally:
        config.update("jax_enable_x64", saved)


def test_conv_gradients_compiled_agree_with_eager():
    x = RNG.standard_normal((3, 9, 8, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 2, 4)).astype(np.float32) * 0.3

    def loss(w, x):
        y = lax.conv_general_dilated(x, w, (2, 1), ((1, 1), (0, 2)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jnp.tanh(y) ** 2)

    grads = srcjax.grad(loss, argnums=(0, 1))
    got, plan = jitted(grads, w, x)
    assert not plan.host_ops
    want = grads(jnp.asarray(w), jnp.asarray(x))
    for g, e in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-5, atol=2e-5)


def test_integer_and_mixed_convs_stay_host_calls():
    iota = C.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    params = dict(window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,), dimension_numbers=iota)
    lhs = np.arange(6, dtype=np.int32).reshape(1, 1, 6)
    rhs = np.array([1, -2, 1], np.int32).reshape(1, 1, 3)
    got, plan = jitted(lambda a, b: C.conv_general_dilated_p.bind(a, b, **params), lhs, rhs)
    assert [op.name for op in plan.host_ops] == ["conv_general_dilated"]
    np.testing.assert_array_equal(np.asarray(got), [[[0, 0, 0, 0]]])


def test_conv_without_blas_is_a_loop_nest(monkeypatch):
    from srcjax.codegen.llvm import blas
    from srcjax.codegen.llvm.plan import Gemm

    monkeypatch.setattr(blas, "gemm_dtypes", lambda: set())
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    label, ls, rs, strides, padding, ld, rd, layouts, groups, batch_groups = CONVS[5]  # feature groups, dilations
    lhs, rhs = RNG.standard_normal(ls).astype(np.float32), RNG.standard_normal(rs).astype(np.float32)
    dn = dn_of(*layouts)
    params = dict(window_strides=strides, padding=padding, lhs_dilation=ld, rhs_dilation=rd, dimension_numbers=dn,
                  feature_group_count=groups, batch_group_count=batch_groups)
    got, plan = jitted(lambda a, b: C.conv_general_dilated_p.bind(a, b, **params), lhs, rhs)
    assert not plan.host_ops and not any(isinstance(step, Gemm) for step in plan.steps)
    want = conv_oracle(lhs.astype(np.float64), rhs.astype(np.float64), strides, padding, ld, rd, dn, groups,
                       batch_groups)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
