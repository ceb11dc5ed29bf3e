"""Differentiation rules of the contractions: ``dot_general`` and ``conv_general_dilated`` JVPs against central
differences (exact for bilinear maps up to rounding), transposes in each operand by the dot-product test
(which pins a transpose down uniquely), over batch/contracting axes, strides, padding, dilations, feature and
batch groups and layouts; a preferred result dtype; the rules recorded as IR."""

import numpy as np
import pytest

from tests.transpiler.ad_checks import check_jvp, check_symbolic, check_transpose, x64  # noqa: F401
from srcjax.transpiler.primitives import convolution as C
from srcjax.transpiler.primitives.ad import UndefinedPrimal, aval_of

pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def normal(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    return (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)


# -- dot_general ------------------------------------------------------------------------------------------
DOTS = [  # name, lhs shape, rhs shape, ((lhs contract, rhs contract), (lhs batch, rhs batch))
    ("inner product, 0-d result", (3,), (3,), (((0,), (0,)), ((), ()))),
    ("matrix-vector", (4, 3), (3,), (((1,), (0,)), ((), ()))),
    ("matrix product", (2, 3), (3, 5), (((1,), (0,)), ((), ()))),
    ("transposed operands", (3, 2), (5, 3), (((0,), (1,)), ((), ()))),
    ("batch axes apart", (2, 3, 4), (4, 2, 5), (((2,), (0,)), ((0,), (1,)))),
    ("two contractions, crossed", (3, 4, 5), (5, 3, 2), (((0, 2), (1, 0)), ((), ()))),
    ("two batch axes", (2, 3, 4, 5), (3, 5, 2, 6), (((3,), (1,)), ((1, 0), (0, 2)))),
    ("outer product", (3,), (2,), (((), ()), ((), ()))),
    ("scalars", (), (), (((), ()), ((), ()))),
    ("empty contraction", (2, 0), (0, 3), (((1,), (0,)), ((), ()))),
    ("empty result", (0, 3), (3, 2), (((1,), (0,)), ((), ()))),
]


def dot_params(dn, preferred=None):
    return dict(dimension_numbers=dn, precision=None, preferred_element_type=preferred)


@pytest.mark.parametrize("name, lhs_shape, rhs_shape, dn", DOTS, ids=[c[0] for c in DOTS])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_dot_general(name, lhs_shape, rhs_shape, dn, dtype, rng):
    primals = [normal(rng, lhs_shape, dtype), normal(rng, rhs_shape, dtype)]
    check_jvp(C.dot_general_p, primals, dot_params(dn), rng=rng)
    for linear in ([0], [1]):
        check_transpose(C.dot_general_p, primals, dot_params(dn), rng=rng, linear=linear)


def test_dot_general_preferred_element_type(rng):
    # float32 operands, float64 product: the tangent is float64, cotangents come back float32
    primals = [normal(rng, (2, 3, 4), np.float32), normal(rng, (4, 2, 5), np.float32)]
    params = dot_params((((2,), (0,)), ((0,), (1,))), np.float64)
    check_jvp(C.dot_general_p, primals, params, rng=rng, eps=1e-2, rtol=1e-4, atol=1e-4)
    for linear in ([0], [1]):
        check_transpose(C.dot_general_p, primals, params, rng=rng, linear=linear, rtol=1e-5, atol=1e-5)


# -- conv_general_dilated ---------------------------------------------------------------------------------
def canonical(n):
    return C.ConvDimensionNumbers(tuple(range(n)), tuple(range(n)), tuple(range(n)))


NHWC = C.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))  # lhs NHWC, rhs HWIO, out NHWC
CONVS = [  # name, lhs shape, rhs shape, strides, padding, lhs dilation, rhs dilation, dimension numbers, groups
    ("1-d", (2, 3, 7), (4, 3, 3), (1,), ((0, 0),), (1,), (1,), canonical(3), (1, 1)),
    ("2-d strided, padded, dilated kernel", (2, 3, 7, 6), (4, 3, 2, 3), (2, 1), ((1, 2), (0, 1)), (1, 1), (2, 1),
     canonical(4), (1, 1)),
    ("dilated input", (1, 2, 5), (3, 2, 3), (1,), ((2, 1),), (2,), (1,), canonical(3), (1, 1)),
    ("stride leaves a tail", (1, 2, 8), (2, 2, 3), (3,), ((0, 0),), (1,), (1,), canonical(3), (1, 1)),
    ("negative padding", (2, 1, 9), (2, 1, 2), (2,), ((-1, 2),), (1,), (2,), canonical(3), (1, 1)),
    ("everything", (2, 2, 6, 5), (3, 2, 3, 2), (2, 3), ((2, -1), (1, 3)), (2, 1), (1, 2), canonical(4), (1, 1)),
    ("feature groups", (2, 4, 6), (6, 2, 3), (1,), ((1, 1),), (1,), (1,), canonical(3), (2, 1)),
    ("depthwise, strided", (1, 3, 9), (6, 1, 2), (2,), ((0, 1),), (1,), (1,), canonical(3), (3, 1)),
    ("batch groups", (4, 3, 6), (6, 3, 3), (1,), ((0, 0),), (1,), (1,), canonical(3), (1, 2)),
    ("batch groups, strided, dilated", (6, 2, 7), (3, 2, 2), (2,), ((1, 0),), (2,), (2,), canonical(3), (1, 3)),
    ("NHWC, feature groups", (2, 5, 4, 6), (3, 2, 2, 9), (1, 2), ((1, 0), (0, 1)), (1, 1), (2, 1), NHWC, (3, 1)),
    ("NHWC, batch groups", (4, 5, 4, 3), (2, 3, 3, 4), (2, 1), ((0, 0), (1, 1)), (1, 2), (1, 1), NHWC, (1, 2)),
    ("no spatial axes", (3, 4), (5, 4), (), (), (), (), canonical(2), (1, 1)),
    ("empty output", (2, 1, 2), (3, 1, 4), (1,), ((0, 0),), (1,), (1,), canonical(3), (1, 1)),
    ("empty batch", (0, 2, 5), (3, 2, 2), (1,), ((0, 0),), (1,), (1,), canonical(3), (1, 1)),
]


def conv_params(strides, padding, lhs_dilation, rhs_dilation, dn, groups, preferred=None):
    return dict(window_strides=strides, padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                dimension_numbers=dn, feature_group_count=groups[0], batch_group_count=groups[1], precision=None,
                preferred_element_type=preferred)


@pytest.mark.parametrize("name, lhs_shape, rhs_shape, strides, padding, lhs_dilation, rhs_dilation, dn, groups",
                         CONVS, ids=[c[0] for c in CONVS])
def test_conv_general_dilated(name, lhs_shape, rhs_shape, strides, padding, lhs_dilation, rhs_dilation, dn, groups,
                              rng):
    params = conv_params(strides, padding, lhs_dilation, rhs_dilation, dn, groups)
    primals = [normal(rng, lhs_shape), normal(rng, rhs_shape)]
    check_jvp(C.conv_general_dilated_p, primals, params, rng=rng)
    for linear in ([0], [1]):
        check_transpose(C.conv_general_dilated_p, primals, params, rng=rng, linear=linear)


def test_conv_complex_and_preferred_element_type(rng):
    params = conv_params((2,), ((1, 0),), (1,), (2,), canonical(3), (2, 1))
    primals = [normal(rng, (2, 4, 7), np.complex128), normal(rng, (4, 2, 2), np.complex128)]
    check_jvp(C.conv_general_dilated_p, primals, params, rng=rng)
    for linear in ([0], [1]):
        check_transpose(C.conv_general_dilated_p, primals, params, rng=rng, linear=linear)
    params = conv_params((2,), ((1, 0),), (1,), (2,), canonical(3), (1, 2), np.float64)
    primals = [normal(rng, (4, 2, 7), np.float32), normal(rng, (4, 2, 2), np.float32)]
    for linear in ([0], [1]):
        check_transpose(C.conv_general_dilated_p, primals, params, rng=rng, linear=linear, rtol=1e-5, atol=1e-5)


def test_conv_transpose_of_identity_kernel_is_the_cotangent():
    # a 1x1 identity kernel: the input's cotangent is the output's, the kernel's is sum(x * ct)
    x, ct = np.arange(6.0).reshape(1, 2, 3), np.arange(6.0, 12.0).reshape(1, 2, 3)
    params = conv_params((1,), ((0, 0),), (1,), (1,), canonical(3), (1, 1))
    kernel = np.eye(2).reshape(2, 2, 1)
    ct_x, ct_k = C.conv_general_dilated_p.transpose_rule(ct, UndefinedPrimal(aval_of(x)), kernel, **params)
    np.testing.assert_array_equal(np.asarray(ct_x), ct)
    assert ct_k is None
    _, ct_k = C.conv_general_dilated_p.transpose_rule(ct, x, UndefinedPrimal(aval_of(kernel)), **params)
    np.testing.assert_allclose(np.asarray(ct_k)[:, :, 0], np.einsum("bot,bit->oi", ct, x))


# -- the rules recorded as IR -----------------------------------------------------------------------------
def test_rules_record_ir(rng):
    lhs, rhs = normal(rng, (4, 5, 4, 3)), normal(rng, (2, 3, 3, 4))
    params = conv_params((2, 1), ((0, 0), (1, 1)), (1, 2), (1, 1), NHWC, (1, 2))
    ct = normal(rng, aval_of(C.conv_general_dilated_p.bind(lhs, rhs, **params)).shape)
    text = check_symbolic(lambda v: C.conv_general_dilated_p.transpose_rule(
        v[0], UndefinedPrimal(aval_of(lhs)), v[1], **params), [ct, rhs])
    assert "rev" in text and "conv_general_dilated" in text
    check_symbolic(lambda v: C.conv_general_dilated_p.transpose_rule(
        v[0], v[1], UndefinedPrimal(aval_of(rhs)), **params), [ct, lhs])
    a, b = normal(rng, (2, 3, 4)), normal(rng, (4, 2, 5))
    dot = dot_params((((2,), (0,)), ((0,), (1,))))
    ct = normal(rng, (2, 3, 5))
    for linear in (0, 1):
        check_symbolic(lambda v, linear=linear: C.dot_general_p.transpose_rule(
            v[0], *[UndefinedPrimal(aval_of(x)) if i == linear else v[1] for i, x in enumerate((a, b))], **dot),
            [ct, b if linear == 0 else a])
