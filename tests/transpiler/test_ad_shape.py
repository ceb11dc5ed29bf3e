"""Differentiation rules of the shape primitives: JVPs against central differences, transposes by the
dot-product test, Zero tangents, the rules recorded as IR, and every primitive of the family either having
each rule or saying why not."""

import numpy as np
import pytest

from tests.transpiler.ad_checks import check_jvp, check_symbolic, check_transpose, x64  # noqa: F401
from srcjax.transpiler.primitives import shape as S
from srcjax.transpiler.primitives.ad import UndefinedPrimal, Zero, aval_of, jvp_of
from srcjax.transpiler.primitives.core import PRIMITIVES

pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def normal(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    return (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)


def check_linear(prim, primals, params, rng, linear=(0,)):
    check_jvp(prim, primals, params, rng=rng)
    check_transpose(prim, primals, params, rng=rng, linear=list(linear))


def check_joint_transpose(prim, primals, params, rng, jointly):
    """A primitive linear in the operands ``jointly`` together: transpose in all of them, and in each alone with
    the others zero (fixed at another value it is affine, not linear, in the rest)."""
    check_transpose(prim, primals, params, rng=rng, linear=jointly)
    for i in jointly:
        fixed = [np.zeros_like(p) if j in jointly and j != i else p for j, p in enumerate(primals)]
        check_transpose(prim, fixed, params, rng=rng, linear=[i])


# -- one table per primitive: operand shape(s) and params ------------------------------------------------
BROADCASTS = [  # operand shape, shape, broadcast_dimensions
    ((), (3,), ()),
    ((), (), ()),
    ((3,), (2, 3), (1,)),
    ((1, 3), (4, 3), (0, 1)),  # a stretched axis
    ((2, 1), (2, 5, 3), (0, 2)),  # a new axis and a stretched one
    ((1, 1), (1, 1), (0, 1)),  # size 1 kept at size 1
    ((0, 2), (3, 0, 2), (1, 2)),
]


@pytest.mark.parametrize("shape, out, dims", BROADCASTS)
def test_broadcast_in_dim(shape, out, dims, rng):
    check_linear(S.broadcast_in_dim_p, [normal(rng, shape)], dict(shape=out, broadcast_dimensions=dims), rng)


RESHAPES = [  # operand shape, new_sizes, dimensions
    ((2, 3), (3, 2), None),
    ((2, 3), (6,), (1, 0)),
    ((), (1, 1), None),
    ((2, 3, 4), (4, 6), (2, 0, 1)),
    ((0, 3), (3, 0), None),
]


@pytest.mark.parametrize("shape, sizes, dims", RESHAPES)
def test_reshape(shape, sizes, dims, rng):
    check_linear(S.reshape_p, [normal(rng, shape)], dict(new_sizes=sizes, dimensions=dims), rng)


TRANSPOSES = [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (1, 2, 0)), ((), ()), ((0, 2, 1), (1, 2, 0))]


@pytest.mark.parametrize("shape, perm", TRANSPOSES)
def test_transpose(shape, perm, rng):
    check_linear(S.transpose_p, [normal(rng, shape, np.complex128)], dict(permutation=perm), rng)


SQUEEZES = [((1, 3, 1), (0, 2)), ((1,), (0,)), ((2, 3), ()), ((2, 1, 3), (1,)), ((1, 0), (0,))]


@pytest.mark.parametrize("shape, dims", SQUEEZES)
def test_squeeze(shape, dims, rng):
    check_linear(S.squeeze_p, [normal(rng, shape)], dict(dimensions=dims), rng)


EXPANDS = [((3,), (0, 2)), ((), (0,)), ((2, 3), (1,)), ((2, 3), (3, 0)), ((0,), (1,))]


@pytest.mark.parametrize("shape, dims", EXPANDS)
def test_expand_dims(shape, dims, rng):
    check_linear(S.expand_dims_p, [normal(rng, shape)], dict(dimensions=dims), rng)


CONCATENATES = [  # operand shapes, dimension
    ([(2, 3), (1, 3)], 0),
    ([(2, 1), (2, 0), (2, 4)], 1),
    ([(4,)], 0),
    ([(2, 2, 3), (2, 1, 3), (2, 2, 3)], 1),
]


@pytest.mark.parametrize("shapes, dimension", CONCATENATES)
def test_concatenate(shapes, dimension, rng):
    primals = [normal(rng, s) for s in shapes]
    params = dict(dimension=dimension)
    check_jvp(S.concatenate_p, primals, params, rng=rng)
    check_joint_transpose(S.concatenate_p, primals, params, rng, list(range(len(shapes))))


def test_concatenate_transpose_hands_each_operand_its_stretch():
    ct = np.arange(10.0).reshape(2, 5)
    a, b = UndefinedPrimal(aval_of(np.zeros((2, 2)))), UndefinedPrimal(aval_of(np.zeros((2, 3))))
    ct_a, ct_b = S.concatenate_p.transpose_rule(ct, a, b, dimension=1)
    np.testing.assert_array_equal(np.asarray(ct_a), ct[:, :2])
    np.testing.assert_array_equal(np.asarray(ct_b), ct[:, 2:])
    ct_a, ct_b = S.concatenate_p.transpose_rule(ct, np.zeros((2, 2)), b, dimension=1)
    assert ct_a is None
    np.testing.assert_array_equal(np.asarray(ct_b), ct[:, 2:])


PADS = [  # operand shape, padding_config
    ((3,), ((1, 2, 0),)),
    ((3,), ((0, 0, 2),)),
    ((4, 3), ((1, -1, 1), (-2, 2, 0))),  # negative lo/hi cut elements
    ((5,), ((-3, -1, 1),)),  # cuts into the interior padding
    ((2, 3), ((0, 0, 0), (0, 0, 0))),
    ((), ()),
    ((0, 2), ((1, 1, 3), (0, 1, 1))),
    ((1,), ((2, 0, 5),)),
]


@pytest.mark.parametrize("shape, config", PADS)
def test_pad(shape, config, rng):
    primals = [normal(rng, shape), np.float64(rng.standard_normal())]
    params = dict(padding_config=config)
    check_jvp(S.pad_p, primals, params, rng=rng)
    check_joint_transpose(S.pad_p, primals, params, rng, [0, 1])


def test_pad_transpose_splits_the_cotangent_between_operand_and_value():
    # pad [a, b] to [v, a, v, b, v, v]: a and b get their positions' cotangent, v the sum of the rest
    ct = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    x, v = UndefinedPrimal(aval_of(np.zeros(2))), UndefinedPrimal(aval_of(np.float64(0)))
    ct_x, ct_v = S.pad_p.transpose_rule(ct, x, v, padding_config=((1, 2, 1),))
    np.testing.assert_array_equal(np.asarray(ct_x), [2.0, 8.0])
    assert float(ct_v) == 1 + 4 + 16 + 32
    ct_x, ct_v = S.pad_p.transpose_rule(ct, x, np.float64(3), padding_config=((1, 2, 1),))
    assert ct_v is None


REVS = [((3,), (0,)), ((2, 3), (0, 1)), ((2, 3), ()), ((), ()), ((2, 0, 3), (2,))]


@pytest.mark.parametrize("shape, dims", REVS)
def test_rev(shape, dims, rng):
    check_linear(S.rev_p, [normal(rng, shape)], dict(dimensions=dims), rng)


def test_integer_operands_get_zero_tangents():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out, tangent = jvp_of(S.transpose_p)([x], [Zero(aval_of(x))], permutation=(1, 0))
    assert isinstance(tangent, Zero) and tangent.aval.shape == (3, 2) and tangent.aval.dtype == np.int32


def test_rules_record_ir():
    x = np.arange(12.0).reshape(3, 4)
    check_symbolic(lambda v: S.pad_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)),
                                                    UndefinedPrimal(aval_of(np.float64(0))),
                                                    padding_config=((1, -1, 1), (0, 2, 0))), [np.ones((5, 6))])
    check_symbolic(lambda v: S.concatenate_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)), v[1], dimension=0),
                   [np.ones((5, 4)), np.ones((2, 4))])
    check_symbolic(lambda v: S.reshape_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)), new_sizes=(2, 6),
                                                        dimensions=(1, 0)), [np.arange(12.0).reshape(2, 6)])
    check_symbolic(lambda v: S.broadcast_in_dim_p.transpose_rule(
        v[0], UndefinedPrimal(aval_of(np.zeros((3, 1)))), shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
        [np.arange(24.0).reshape(2, 3, 4)])
    check_symbolic(lambda v: list(jvp_of(S.pad_p)([v[0], v[1]], [v[2], Zero(aval_of(v[1]))],
                                                  padding_config=((0, 1, 1), (1, 0, 0)))),
                   [x, np.float64(2), x * 3])


def test_every_shape_primitive_has_its_rules_or_says_why_not():
    family = [p for p in PRIMITIVES.values() if p.family.endswith("primitives/shape.py")]
    assert {p.name for p in family} >= {"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims",
                                        "concatenate", "pad", "iota", "rev"}
    for prim in family:
        assert jvp_of(prim) is not None or prim.rule_state("jvp") != "missing", f"{prim}: no JVP rule and no reason"
        assert prim.rule_state("transpose") != "missing", f"{prim}: no transpose and no reason"
    assert S.iota_p.rule_state("jvp") == "zero" and S.iota_p.rule_state("transpose") == "unsupported"
