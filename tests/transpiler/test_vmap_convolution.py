"""Batching rules of the contractions: ``dot_general`` and ``conv_general_dilated`` on concrete batched arrays
against stacking the per-element results of ``bind``, for every way of batching the operands; vmap of a
matrix-vector product is one matrix-matrix product; the rules recorded as IR are single contractions."""

import numpy as np
import pytest

from tests.transpiler.ad_checks import x64  # noqa: F401
from tests.transpiler.vmap_checks import check_vmap, check_vmap_symbolic, dims_cases
from srcjax.transpiler.primitives import convolution as C
from srcjax.transpiler.primitives.ad import aval_of
from tests.transpiler.test_ad_convolution import DOTS, dot_params  # one table of dot_general cases

pytestmark = pytest.mark.usefixtures("x64")
SIZE = 3


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def batched(rng, shape, dim, dtype=np.float64, size=SIZE):
    shape = tuple(shape) if dim is None else (*shape[:dim], size, *shape[dim:])
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-9, 10, shape).astype(dtype)
    x = rng.standard_normal(shape)
    return (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)


# -- dot_general ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, lhs_shape, rhs_shape, dn", DOTS, ids=[c[0] for c in DOTS])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex128])
def test_dot_general(name, lhs_shape, rhs_shape, dn, dtype, rng):
    for dims in dims_cases([len(lhs_shape), len(rhs_shape)]):
        args = [batched(rng, lhs_shape, dims[0], dtype), batched(rng, rhs_shape, dims[1], dtype)]
        check_vmap(C.dot_general_p, args, dims, dot_params(dn), rtol=1e-12, atol=1e-12)


def test_dot_general_preferred_element_type(rng):
    dn = (((2,), (0,)), ((0,), (1,)))
    for dims in dims_cases([3, 3]):
        args = [batched(rng, (2, 3, 4), dims[0], np.int8), batched(rng, (4, 2, 5), dims[1], np.int8)]
        check_vmap(C.dot_general_p, args, dims, dot_params(dn, np.int32))


def test_vmap_of_matrix_vector_is_one_matrix_matrix_product(rng):
    # the vector batched, the matrix not: one dot_general whose result is M @ V^T, batched along axis 1
    matrix, vectors = batched(rng, (4, 3), None), batched(rng, (3,), 0, size=5)
    dn = (((1,), (0,)), ((), ()))
    fn = check_vmap_symbolic(C.dot_general_p, [matrix, vectors], [None, 0], dot_params(dn))
    assert [op.prim.name for op in fn.body.ops] == ["dot_general"]
    assert fn.body.results[0].aval.shape == (4, 5)
    out, out_dim = C.dot_general_p.vmap_rule([matrix, vectors], [None, 0], **dot_params(dn))
    assert out_dim == 1
    np.testing.assert_allclose(np.asarray(out), matrix @ vectors.T, rtol=1e-12)
    # the vectors stored as columns: the same product, contracted over the other axis
    out, out_dim = C.dot_general_p.vmap_rule([matrix, vectors.T], [None, 1], **dot_params(dn))
    assert out_dim == 1
    np.testing.assert_allclose(np.asarray(out), matrix @ vectors.T, rtol=1e-12)


def test_dot_general_both_batched_adds_a_batch_axis(rng):
    lhs, rhs = batched(rng, (2, 3), 1), batched(rng, (3, 5), 2)
    fn = check_vmap_symbolic(C.dot_general_p, [lhs, rhs], [1, 2], dot_params((((1,), (0,)), ((), ()))))
    (op,) = fn.body.ops
    assert op.params["dimension_numbers"] == (((2,), (0,)), ((1,), (2,)))  # no transposes of either operand


# -- conv_general_dilated ---------------------------------------------------------------------------------
def canonical(n):
    return C.ConvDimensionNumbers(tuple(range(n)), tuple(range(n)), tuple(range(n)))


NHWC = C.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))  # lhs NHWC, rhs HWIO, out NHWC
CONVS = [  # name, lhs shape, rhs shape, strides, padding, lhs dilation, rhs dilation, dimension numbers, groups
    ("1-d", (2, 3, 7), (4, 3, 3), (1,), ((0, 0),), (1,), (1,), canonical(3), (1, 1)),
    ("2-d strided, padded, dilated kernel", (2, 3, 7, 6), (4, 3, 2, 3), (2, 1), ((1, 2), (0, 1)), (1, 1), (2, 1),
     canonical(4), (1, 1)),
    ("dilated input, negative padding", (1, 2, 5), (3, 2, 3), (2,), ((2, -1),), (2,), (1,), canonical(3), (1, 1)),
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
    for dims in dims_cases([len(lhs_shape), len(rhs_shape)]):
        args = [batched(rng, lhs_shape, dims[0]), batched(rng, rhs_shape, dims[1])]
        out_dims = check_vmap(C.conv_general_dilated_p, args, dims, params, rtol=1e-12, atol=1e-12)
        if 0 not in lhs_shape + rhs_shape:  # the batch axis comes out of the batch or the feature axis
            assert out_dims == [dn.out_spec[0] if dims[1] is None else dn.out_spec[1]]


@pytest.mark.parametrize("size", [1, 0])
def test_conv_small_batches(size, rng):
    for groups in [(1, 1), (2, 1), (1, 2)]:
        params = conv_params((1,), ((1, 0),), (1,), (1,), canonical(3), groups)
        for dims in dims_cases([3, 3]):
            args = [batched(rng, (4, 4, 5), dims[0], size=size), batched(rng, (4, 4 // groups[0], 2), dims[1],
                                                                         size=size)]
            check_vmap(C.conv_general_dilated_p, args, dims, params, rtol=1e-12, atol=1e-12)


def test_conv_integers_and_preferred_element_type(rng):
    params = conv_params((2,), ((1, 0),), (1,), (2,), canonical(3), (2, 1), np.int32)
    for dims in dims_cases([3, 3]):
        args = [batched(rng, (2, 4, 7), dims[0], np.int8), batched(rng, (4, 2, 2), dims[1], np.int8)]
        check_vmap(C.conv_general_dilated_p, args, dims, params)


@pytest.mark.parametrize("dims", [(0, None), (None, 3), (2, 1)])
def test_conv_rule_is_one_convolution(dims, rng):
    # reshapes (folding the batch in and out) around a single convolution, whichever operand is batched
    params = conv_params((1, 2), ((1, 0), (0, 1)), (1, 1), (2, 1), NHWC, (3, 1))
    args = [batched(rng, (2, 5, 4, 6), dims[0]), batched(rng, (3, 2, 2, 9), dims[1])]
    fn = check_vmap_symbolic(C.conv_general_dilated_p, args, dims, params)
    names = [op.prim.name for op in fn.body.ops]
    assert names.count("conv_general_dilated") == 1 and set(names) <= {"conv_general_dilated", "reshape"}
    out = C.conv_general_dilated_p.vmap_rule([np.asarray(a) for a in args], list(dims), **params)[0]
    assert aval_of(out).shape == fn.body.results[0].aval.shape
