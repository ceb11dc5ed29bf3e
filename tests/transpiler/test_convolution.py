"""dot_general and conv_general_dilated: implementations against float64 oracles (np.einsum for products, a
loop over output elements written from XLA's definition for convolutions), result dtypes (integers wrap,
half precision accumulates in float32, preferred_element_type), the shape rule against the
implementation, 0-d and empty operands, and bad operands."""

import numpy as np
import pytest

from srcjax.transpiler.primitives import convolution as C
from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(1)
T = TensorType


def run(prim, *args, **params):
    rule = prim.abstract_eval(*(T(a.dtype, a.shape) for a in args), **params)
    out = np.asarray(prim.impl(*args, **params))
    assert (out.shape, out.dtype) == (rule.shape, rule.dtype), f"{prim}: {out.shape} {out.dtype} vs {rule}"
    return out


# -- dot_general -----------------------------------------------------------------------------------------
def einsum_oracle(lhs, rhs, dims):
    """The same contraction spelled as an einsum: batch axes, then lhs free, then rhs free."""
    (lc, rc), (lb, rb) = dims
    letters = iter("abcdefghijklmnop")
    ls = [next(letters) for _ in range(lhs.ndim)]
    rs = [next(letters) for _ in range(rhs.ndim)]
    for a, b in zip(lc + lb, rc + rb):
        rs[b] = ls[a]
    out = [ls[a] for a in lb] + [c for a, c in enumerate(ls) if a not in lc + lb]
    out += [c for a, c in enumerate(rs) if a not in rc + rb]
    return np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", lhs, rhs)


DOTS = [
    ("matmul", (3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ("x @ x.T layout", (3, 4), (5, 4), (((1,), (1,)), ((), ()))),
    ("vector dot", (7,), (7,), (((0,), (0,)), ((), ()))),
    ("matvec", (3, 4), (4,), (((1,), (0,)), ((), ()))),
    ("outer", (3,), (2,), (((), ()), ((), ()))),
    ("0-d", (), (), (((), ()), ((), ()))),
    ("scalar times matrix", (), (2, 3), (((), ()), ((), ()))),
    ("batched", (2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ("batch axes last", (3, 4, 2), (4, 5, 2), (((1,), (0,)), ((2,), (2,)))),
    ("two contractions", (2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
    ("two batch axes", (2, 3, 4, 5), (3, 2, 5, 6), (((3,), (2,)), ((0, 1), (1, 0)))),
    ("empty contraction", (3, 0), (0, 4), (((1,), (0,)), ((), ()))),
    ("empty free axis", (0, 4), (4, 2), (((1,), (0,)), ((), ()))),
]


@pytest.mark.parametrize("label, ls, rs, dims", DOTS, ids=[c[0] for c in DOTS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_dot_general_against_einsum(label, ls, rs, dims, dtype):
    lhs, rhs = RNG.standard_normal(ls), RNG.standard_normal(rs)
    if dtype == np.complex64:
        lhs, rhs = lhs + 1j * RNG.standard_normal(ls), rhs - 2j
    out = run(C.dot_general_p, lhs.astype(dtype), rhs.astype(dtype), dimension_numbers=dims)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out, einsum_oracle(lhs, rhs, dims), rtol=tol, atol=tol)


def test_dot_general_integers_wrap_in_their_dtype():
    # recorded from JAX: jnp.dot of arange(10**7, dtype=int32) with itself
    x = np.arange(10**7, dtype=np.int32)
    assert run(C.dot_general_p, x, x, dimension_numbers=(((0,), (0,)), ((), ()))) == -1039031360
    small = np.full(3, 100, np.int8)  # 30000 wraps in int8 to 48
    assert run(C.dot_general_p, small, small, dimension_numbers=(((0,), (0,)), ((), ()))) == np.int8(48)


def test_dot_general_bool_is_or_of_ands():
    a = np.array([[True, False], [False, False]])
    b = np.array([[True, True], [True, False]])
    np.testing.assert_array_equal(run(C.dot_general_p, a, b, dimension_numbers=(((1,), (0,)), ((), ()))),
                                  [[True, True], [False, False]])


def test_dot_general_preferred_element_type_and_half_precision():
    a = np.full(4, 100, np.int8)
    out = run(C.dot_general_p, a, a, dimension_numbers=(((0,), (0,)), ((), ())), preferred_element_type=np.int32)
    assert out == 40000 and out.dtype == np.int32
    h = np.full(3000, 0.1, np.float16)  # summed in float16 this stalls far below 30
    out = run(C.dot_general_p, h, np.ones(3000, np.float16), dimension_numbers=(((0,), (0,)), ((), ())))
    assert out.dtype == np.float16 and abs(float(out) - 3000 * float(np.float16(0.1))) < 0.5


def test_dot_general_weak_type():
    dims = (((), ()), ((), ()))
    assert C.dot_general_p.abstract_eval(T(np.float32, (), True), T(np.float32, (), True),
                                         dimension_numbers=dims).weak_type
    assert not C.dot_general_p.abstract_eval(T(np.float32, (), True), T(np.float32, (3,)),
                                             dimension_numbers=dims).weak_type


# -- conv_general_dilated --------------------------------------------------------------------------------
def conv_oracle(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, dn, groups, batch_groups):
    """XLA's convolution, one output element at a time, on the canonical layouts."""
    x = np.transpose(lhs, dn.lhs_spec)
    w = np.transpose(rhs, dn.rhs_spec)
    n, c = x.shape[:2]
    o, cin = w.shape[:2]
    out_spatial = C.conv_output_spatial(x.shape[2:], w.shape[2:], strides, padding, lhs_dilation, rhs_dilation)
    out = np.zeros((n // batch_groups, o, *out_spatial), np.result_type(lhs, rhs))
    per_group = o // (groups * batch_groups)
    for index in np.ndindex(*out.shape):
        b, f, pos = index[0], index[1], index[2:]
        g = f // per_group
        batch = b + g * (n // batch_groups) if batch_groups > 1 else b
        total = 0
        for ci in range(cin):
            channel = g * cin + ci if groups > 1 else ci
            for k in np.ndindex(*w.shape[2:]):
                source = []
                for p, kk, s, (lo, _), ld, rd, size in zip(pos, k, strides, padding, lhs_dilation, rhs_dilation,
                                                           x.shape[2:]):
                    dilated = p * s + kk * rd - lo  # position in the dilated input
                    q, r = divmod(dilated, ld)
                    if dilated < 0 or r or q >= size:
                        break
                    source.append(q)
                else:
                    total += x[(batch, channel, *source)] * w[(f, ci, *k)]
        out[index] = total
    return np.transpose(out, np.argsort(dn.out_spec))


def dn_of(lhs, rhs, out):
    """ConvDimensionNumbers from layout strings (spatial axes in the kernel's order)."""
    spatial = [c for c in rhs if c not in "OI"]
    return C.ConvDimensionNumbers(*(tuple(s.index(c) for c in pair + "".join(spatial)) for s, pair in
                                    ((lhs, "NC"), (rhs, "OI"), (out, "NC"))))


CONVS = [  # (label, lhs shape, rhs shape, strides, padding, lhs dilation, rhs dilation, layouts, groups, batch groups)
    ("1-d valid", (2, 3, 7), (4, 3, 3), (1,), ((0, 0),), (1,), (1,), ("NCH", "OIH", "NCH"), 1, 1),
    ("stride and padding", (2, 3, 7), (4, 3, 3), (2,), ((1, 2),), (1,), (1,), ("NCH", "OIH", "NCH"), 1, 1),
    ("negative padding, input dilation", (2, 3, 7), (4, 3, 3), (2,), ((-1, 2),), (2,), (1,), ("NCH", "OIH", "NCH"),
     1, 1),
    ("2-d dilations", (2, 3, 7, 6), (4, 3, 3, 2), (1, 2), ((1, 1), (0, 1)), (1, 2), (2, 1), ("NCHW", "OIHW", "NCHW"),
     1, 1),
    ("NHWC/HWIO", (2, 7, 6, 3), (3, 2, 3, 4), (1, 1), ((1, 1), (0, 1)), (1, 1), (1, 1), ("NHWC", "HWIO", "NHWC"), 1, 1),
    ("feature groups", (2, 7, 6, 4), (3, 2, 2, 6), (2, 1), ((1, 1), (0, 1)), (1, 1), (1, 2), ("NHWC", "HWIO", "NCHW"),
     2, 1),
    ("depthwise", (1, 4, 5), (8, 1, 3), (1,), ((1, 1),), (1,), (1,), ("NCH", "OIH", "NCH"), 4, 1),
    ("batch groups", (4, 7, 6, 3), (3, 2, 3, 6), (1, 1), ((1, 1), (0, 1)), (1, 1), (1, 1), ("NHWC", "HWIO", "NHWC"),
     1, 2),
    ("3-d", (1, 2, 4, 3, 5), (2, 2, 2, 2, 2), (1, 2, 1), ((0, 0), (1, 0), (0, 1)), (1, 1, 1), (1, 1, 2),
     ("NCDHW", "OIDHW", "NCDHW"), 1, 1),
    ("kernel larger than input", (2, 3, 2), (4, 3, 5), (1,), ((0, 0),), (1,), (1,), ("NCH", "OIH", "NCH"), 1, 1),
    ("empty batch", (0, 3, 7), (4, 3, 3), (1,), ((0, 0),), (1,), (1,), ("NCH", "OIH", "NCH"), 1, 1),
    ("no spatial axes", (2, 3), (4, 3), (), (), (), (), ("NC", "OI", "NC"), 1, 1),
    # unit strides with input dilation (transposed convolutions): computed phase by phase
    ("transposed 1-d", (2, 3, 7), (4, 3, 3), (1,), ((2, 1),), (2,), (1,), ("NCH", "OIH", "NCH"), 1, 1),
    ("transposed 2-d, negative padding", (2, 5, 4, 3), (4, 2, 3, 4), (1, 1), ((-1, 3), (2, 0)), (3, 2), (1, 1),
     ("NHWC", "HWIO", "NHWC"), 1, 1),
    ("transposed, kernel shorter than the dilation", (2, 3, 6), (4, 3, 2), (1,), ((1, 1),), (3,), (1,),
     ("NCH", "OIH", "NCH"), 1, 1),
    ("transposed, feature groups", (2, 7, 6, 4), (3, 2, 2, 6), (1, 1), ((1, 2), (2, 1)), (2, 2), (1, 1),
     ("NHWC", "HWIO", "NCHW"), 2, 1),
    ("transposed, batch groups", (4, 7, 6, 3), (3, 2, 3, 6), (1, 1), ((1, 1), (0, 1)), (2, 1), (1, 1),
     ("NHWC", "HWIO", "NHWC"), 1, 2),
]


@pytest.mark.parametrize("label, ls, rs, strides, padding, ld, rd, layouts, groups, batch_groups", CONVS,
                         ids=[c[0] for c in CONVS])
def test_conv_against_definition(label, ls, rs, strides, padding, ld, rd, layouts, groups, batch_groups):
    lhs, rhs = RNG.standard_normal(ls), RNG.standard_normal(rs)
    dn = dn_of(*layouts)
    params = dict(window_strides=strides, padding=padding, lhs_dilation=ld, rhs_dilation=rd, dimension_numbers=dn,
                  feature_group_count=groups, batch_group_count=batch_groups)
    want = conv_oracle(lhs, rhs, strides, padding, ld, rd, dn, groups, batch_groups)
    np.testing.assert_allclose(run(C.conv_general_dilated_p, lhs, rhs, **params), want, rtol=1e-12, atol=1e-12)
    out32 = run(C.conv_general_dilated_p, lhs.astype(np.float32), rhs.astype(np.float32), **params)
    np.testing.assert_allclose(out32, want, rtol=1e-4, atol=1e-4)


def test_conv_groups_are_major_recorded_from_jax():
    # recorded from jax.lax.conv_general_dilated: batch groups split the lhs batch group-major, and feature groups
    # split the lhs features group-major, both against group-major output features
    iota = C.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    params = dict(window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,), dimension_numbers=iota)
    lhs = (np.arange(4.0) + 1).reshape(4, 1, 1)
    out = run(C.conv_general_dilated_p, lhs, np.array([1.0, 10.0]).reshape(2, 1, 1), batch_group_count=2, **params)
    np.testing.assert_array_equal(out, [[[1.0], [30.0]], [[2.0], [40.0]]])
    lhs = (np.arange(4.0) + 1).reshape(1, 4, 1)
    rhs = np.array([[1.0, 10.0], [100.0, 1000.0]]).reshape(2, 2, 1)
    out = run(C.conv_general_dilated_p, lhs, rhs, feature_group_count=2, **params)
    np.testing.assert_array_equal(out, [[[21.0], [4300.0]]])


def test_conv_integers_and_preferred_type():
    iota = C.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    lhs = np.arange(6, dtype=np.int32).reshape(1, 1, 6)
    rhs = np.array([1, -2, 1], np.int32).reshape(1, 1, 3)
    params = dict(window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,),
                  dimension_numbers=iota)
    np.testing.assert_array_equal(run(C.conv_general_dilated_p, lhs, rhs, **params), [[[0, 0, 0, 0]]])
    out = run(C.conv_general_dilated_p, lhs.astype(np.int8), rhs.astype(np.int8), preferred_element_type=np.float32,
              **params)
    assert out.dtype == np.float32


@pytest.mark.parametrize("ls, rs, params, error, message", [
    ((2, 3, 7), (4, 2, 3), {}, PrimitiveValueError, "needs 3 input features"),
    ((2, 3, 7), (4, 3), {}, PrimitiveValueError, "one rank"),
    ((2, 4, 7), (3, 2, 3), dict(feature_group_count=2), PrimitiveValueError, "divide into 2 groups"),
    ((3, 3, 7), (4, 3, 3), dict(batch_group_count=2), PrimitiveValueError, "batch groups"),
    ((2, 3, 7), (4, 3, 3), dict(window_strides=(0,)), PrimitiveValueError, "must be positive"),
    ((2, 3, 7), (4, 3, 3), dict(padding=((0, 0), (0, 0))), PrimitiveValueError, "one entry per spatial axis"),
    ((2, 3, 7), (4, 3, 0), {}, PrimitiveValueError, "positive size on every spatial axis"),
    ((2, 3, 7), (4, 3, 3), dict(dimension_numbers=("NCH", "OIH", "NCH")), PrimitiveTypeError, "ConvDimensionNumbers"),
])
def test_conv_bad_operands(ls, rs, params, error, message):
    iota = C.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    full = dict(window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,), dimension_numbers=iota)
    full.update(params)
    with pytest.raises(error, match=message):
        C.conv_general_dilated_p.abstract_eval(T(np.float32, ls), T(np.float32, rs), **full)


@pytest.mark.parametrize("ls, rs, dims, error, message", [
    ((3, 4), (5, 6), (((1,), (0,)), ((), ())), PrimitiveValueError, "differ in number or size"),
    ((3, 4), (4, 6), (((2,), (0,)), ((), ())), PrimitiveValueError, "out of range"),
    ((3, 4), (4, 6), (((1, 1), (0, 0)), ((), ())), PrimitiveValueError, "distinct"),
    ((3, 4), (4, 6), (((1,), (0,)), ((0,), ())), PrimitiveValueError, "differ in number or size"),
    ((3, 4), (4, 6), ((1, 0),), PrimitiveValueError, "dimension_numbers must be"),
])
def test_dot_general_bad_operands(ls, rs, dims, error, message):
    with pytest.raises(error, match=message):
        C.dot_general_p.abstract_eval(T(np.float32, ls), T(np.float32, rs), dimension_numbers=dims)
    with pytest.raises(PrimitiveTypeError, match="same dtype"):
        C.dot_general_p.abstract_eval(T(np.float32, (3,)), T(np.int32, (3,)),
                                      dimension_numbers=(((0,), (0,)), ((), ())))
