"""Differentiation rules of the indexing primitives: JVPs against central differences, transposes by the
dot-product test, Zero tangents, the rules recorded as IR, and JAX's conventions (scatter_max ties averaged,
the landing update of a repeated-index scatter, out-of-bounds windows per mode) as recorded numbers."""

import numpy as np
import pytest

from tests.transpiler.ad_checks import check_jvp, check_symbolic, check_transpose, x64  # noqa: F401
from srcjax.transpiler.primitives import indexing as I
from srcjax.transpiler.primitives.ad import UndefinedPrimal, Zero, aval_of, jvp_of

pytestmark = pytest.mark.usefixtures("x64")

CLIP, FILL, PROMISE = I.GatherScatterMode.CLIP, I.GatherScatterMode.FILL_OR_DROP, I.GatherScatterMode.PROMISE_IN_BOUNDS


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def normal(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    return (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)


def ints(*values):
    return [np.int32(v) for v in values]


def check_joint_transpose(prim, primals, params, rng, jointly):
    """A primitive linear in the operands ``jointly`` together: transpose in all of them, and in each alone with
    the others zero (fixed at another value it is affine, not linear, in the rest)."""
    check_transpose(prim, primals, params, rng=rng, linear=jointly)
    for i in jointly:
        fixed = [np.zeros_like(p) if j in jointly and j != i else p for j, p in enumerate(primals)]
        check_transpose(prim, fixed, params, rng=rng, linear=[i])


# -- slice, dynamic_slice, dynamic_update_slice -----------------------------------------------------------
SLICES = [  # shape, start_indices, limit_indices, strides
    ((5,), (1,), (4,), None),
    ((5, 6), (1, 0), (5, 6), (2, 4)),
    ((7,), (1,), (7,), (4,)),  # the last element is skipped by the stride
    ((5, 6), (2, 6), (2, 6), None),  # empty result
    ((), (), (), None),
    ((0, 3), (0, 1), (0, 3), (1, 1)),
]


@pytest.mark.parametrize("shape, starts, limits, strides", SLICES)
def test_slice(shape, starts, limits, strides, rng):
    params = dict(start_indices=starts, limit_indices=limits, strides=strides)
    x = normal(rng, shape)
    check_jvp(I.slice_p, [x], params, rng=rng)
    check_transpose(I.slice_p, [x], params, rng=rng, linear=[0])


def test_slice_transpose_puts_the_cotangent_back_in_place():
    ct = np.array([1.0, 2.0])
    (out,) = I.slice_p.transpose_rule(ct, UndefinedPrimal(aval_of(np.zeros(6))), start_indices=(1,),
                                      limit_indices=(5,), strides=(3,))
    np.testing.assert_array_equal(np.asarray(out), [0, 1, 0, 0, 2, 0])


DYNAMIC_SLICES = [  # shape, starts, slice_sizes
    ((6,), (2,), (3,)),
    ((6,), (5,), (3,)),  # clamped to start 3
    ((4, 5), (1, 9), (2, 5)),
    ((4, 5), (-3, 2), (4, 1)),
    ((), (), ()),
    ((3, 0), (1, 0), (2, 0)),
]


@pytest.mark.parametrize("shape, starts, sizes", DYNAMIC_SLICES)
def test_dynamic_slice(shape, starts, sizes, rng):
    primals = [normal(rng, shape), *ints(*starts)]
    check_jvp(I.dynamic_slice_p, primals, dict(slice_sizes=sizes), rng=rng)
    check_transpose(I.dynamic_slice_p, primals, dict(slice_sizes=sizes), rng=rng, linear=[0])


DYNAMIC_UPDATES = [  # shape, update shape, starts
    ((6,), (2,), (1,)),
    ((6,), (3,), (5,)),  # clamped to start 3
    ((4, 5), (2, 3), (3, -1)),
    ((), (), ()),
    ((3, 4), (0, 4), (1, 0)),
]


@pytest.mark.parametrize("shape, update_shape, starts", DYNAMIC_UPDATES)
def test_dynamic_update_slice(shape, update_shape, starts, rng):
    primals = [normal(rng, shape), normal(rng, update_shape), *ints(*starts)]
    check_jvp(I.dynamic_update_slice_p, primals, rng=rng)
    check_joint_transpose(I.dynamic_update_slice_p, primals, {}, rng, [0, 1])


def test_dynamic_update_slice_transpose_splits_the_cotangent():
    ct = np.arange(1.0, 7.0)
    ct_x, ct_u, ct_start = I.dynamic_update_slice_p.transpose_rule(
        ct, UndefinedPrimal(aval_of(np.zeros(6))), UndefinedPrimal(aval_of(np.zeros(2))), np.int32(9))
    np.testing.assert_array_equal(np.asarray(ct_x), [1, 2, 3, 4, 0, 0])  # start 9 clamps to 4
    np.testing.assert_array_equal(np.asarray(ct_u), [5, 6])
    assert ct_start is None


# -- gather -----------------------------------------------------------------------------------------------
def gdn(offset, collapsed, index_map, operand_batching=(), indices_batching=()):
    return I.GatherDimensionNumbers(offset, collapsed, index_map, operand_batching, indices_batching)


GATHERS = [  # name, operand shape, indices, dimension numbers, slice sizes, mode
    ("rows, repeated", (5, 3), [[0], [4], [2], [4]], gdn((1,), (0,), (0,)), (1, 3), PROMISE),
    ("one element, 0-d result", (5,), [3], gdn((), (0,), (0,)), (1,), PROMISE),
    ("2-d windows, clipped", (4, 5), [[1, 2], [3, 4], [0, 0]], gdn((1, 2), (), (0, 1)), (2, 3), CLIP),
    ("no mode clamps", (5,), [[2], [9], [-4]], gdn((), (0,), (0,)), (1,), None),
    ("out of bounds filled", (5,), [[1], [7], [-1], [1]], gdn((), (0,), (0,)), (1,), FILL),
    ("batching axes", (2, 5, 3), np.array([[[0], [4], [4], [1]], [[2], [2], [3], [0]]]),
     gdn((2,), (1,), (1,), (0,), (0,)), (1, 1, 3), PROMISE),
    ("0-d operand", (), np.zeros((3, 0), np.int32), gdn((), (), ()), (), PROMISE),
    ("no indices", (4, 2), np.zeros((0, 1), np.int32), gdn((1,), (0,), (0,)), (1, 2), CLIP),
]


def gather_params(dn, sizes, mode, fill_value=None):
    return dict(dimension_numbers=dn, slice_sizes=sizes, mode=mode, fill_value=fill_value,
                indices_are_sorted=False, unique_indices=False)


@pytest.mark.parametrize("name, shape, indices, dn, sizes, mode", GATHERS, ids=[c[0] for c in GATHERS])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_gather(name, shape, indices, dn, sizes, mode, dtype, rng):
    primals = [normal(rng, shape, dtype), np.asarray(indices, np.int32)]
    # a finite fill value: the tangent there is 0, as finite differences see it
    check_jvp(I.gather_p, primals, gather_params(dn, sizes, mode, 5.0 if mode == FILL else None), rng=rng)
    # the transpose is of the linear map, the gather filling with 0 (what the JVP binds)
    check_transpose(I.gather_p, primals, gather_params(dn, sizes, mode, 0.0 if mode == FILL else None), rng=rng,
                    linear=[0])


def test_gather_tangent_is_zero_where_filled():
    x, indices = np.arange(5.0), np.array([[1], [7]], np.int32)
    params = gather_params(gdn((), (0,), (0,)), (1,), FILL)  # default fill: NaN
    out, tangent = jvp_of(I.gather_p)([x, indices], [np.ones(5), Zero(aval_of(indices))], **params)
    np.testing.assert_array_equal(np.asarray(out), [1.0, np.nan])
    np.testing.assert_array_equal(np.asarray(tangent), [1.0, 0.0])


@pytest.mark.parametrize("mode, expected", [
    (PROMISE, [0, 0, 0, 0, 0]),  # JAX: grad of x[[10, -7]] (indices promised in bounds) drops them
    (CLIP, [1, 0, 0, 0, 1]),  # clamped to 4 and 0
    (FILL, [0, 0, 0, 0, 0]),
    (None, [1, 0, 0, 0, 1]),  # the primitive without a mode clamps, so its transpose clips
])
def test_gather_transpose_out_of_bounds(mode, expected):
    params = gather_params(gdn((), (0,), (0,)), (1,), mode, 0.0 if mode == FILL else None)
    ct_x, ct_i = I.gather_p.transpose_rule(np.ones(2), UndefinedPrimal(aval_of(np.zeros(5))),
                                           np.array([[10], [-2]], np.int32), **params)
    np.testing.assert_array_equal(np.asarray(ct_x), expected)
    assert ct_i is None


def test_gather_of_integers_has_zero_tangent():
    x, indices = np.arange(5, dtype=np.int32), np.array([[1], [3]], np.int32)
    check_jvp(I.gather_p, [x, indices], gather_params(gdn((), (0,), (0,)), (1,), PROMISE), rng=None, diff=[])


# -- scatters ---------------------------------------------------------------------------------------------
def sdn(window, inserted, index_map, operand_batching=(), indices_batching=()):
    return I.ScatterDimensionNumbers(window, inserted, index_map, operand_batching, indices_batching)


SCATTERS = [  # name, operand shape, indices, updates shape, dimension numbers, mode, unique
    ("rows, repeated", (5, 3), [[0], [4], [2], [4]], (4, 3), sdn((1,), (0,), (0,)), FILL, False),
    ("rows, unique", (5, 3), [[0], [3], [1]], (3, 3), sdn((1,), (0,), (0,)), PROMISE, True),
    ("one element, 0-d update", (5,), [3], (), sdn((), (0,), (0,)), FILL, True),
    ("overlapping 2-d windows", (4, 5), [[1, 2], [0, 0], [2, 1]], (3, 2, 3), sdn((1, 2), (), (0, 1)), FILL, False),
    ("out of bounds dropped", (5,), [[1], [7], [-1], [1]], (4,), sdn((), (0,), (0,)), FILL, False),
    ("no mode drops", (5,), [[2], [9], [3]], (3,), sdn((), (0,), (0,)), None, True),
    ("out of bounds clipped", (5,), [[1], [7], [-1], [3]], (4,), sdn((), (0,), (0,)), CLIP, False),
    ("batching axes", (2, 5, 3), np.array([[[0], [4], [4], [1]], [[2], [2], [3], [0]]]), (2, 4, 3),
     sdn((2,), (1,), (1,), (0,), (0,)), FILL, False),
    ("0-d operand", (), np.zeros((3, 0), np.int32), (3,), sdn((), (), ()), FILL, False),
    ("no updates", (4, 2), np.zeros((0, 1), np.int32), (0, 2), sdn((1,), (0,), (0,)), FILL, True),
]
SCATTER_IDS = [c[0] for c in SCATTERS]


def scatter_case(rng, shape, indices, updates_shape, dn, mode, unique, dtype=np.float64):
    primals = [normal(rng, shape, dtype), np.asarray(indices, np.int32), normal(rng, updates_shape, dtype)]
    return primals, dict(dimension_numbers=dn, mode=mode, indices_are_sorted=False, unique_indices=unique)


@pytest.mark.parametrize("name, shape, indices, updates_shape, dn, mode, unique", SCATTERS, ids=SCATTER_IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_scatter_add(name, shape, indices, updates_shape, dn, mode, unique, dtype, rng):
    primals, params = scatter_case(rng, shape, indices, updates_shape, dn, mode, unique, dtype)
    check_jvp(I.scatter_add_p, primals, params, rng=rng)
    check_joint_transpose(I.scatter_add_p, primals, params, rng, [0, 2])


# each case with repeated indices allowed, and the cases without repeats also declared unique
SCATTER_SETS = [(*case[:-1], False) for case in SCATTERS] + [case for case in SCATTERS if case[-1]]


@pytest.mark.parametrize("name, shape, indices, updates_shape, dn, mode, declared_unique", SCATTER_SETS,
                         ids=[f"{c[0]}{', declared unique' if c[-1] else ''}" for c in SCATTER_SETS])
def test_scatter(name, shape, indices, updates_shape, dn, mode, declared_unique, rng):
    primals, params = scatter_case(rng, shape, indices, updates_shape, dn, mode, declared_unique)
    check_jvp(I.scatter_p, primals, params, rng=rng)
    check_joint_transpose(I.scatter_p, primals, params, rng, [0, 2])


def test_scatter_tangent_follows_the_landing_update():
    # JAX's rule with repeated indices: whichever update lands, the tangent is that update's tangent
    x, indices, y = np.array([1.0, 5.0, 3.0, 2.0]), np.array([[0], [0], [2], [1], [3]], np.int32), \
        np.array([4.0, 7.0, 3.0, 6.0, 1.0])
    gx, gy = np.array([1.0, 10.0, 100.0, 1000.0]), np.array([0.1, 0.01, 0.001, 0.0001, 0.00001])
    params = dict(dimension_numbers=sdn((), (0,), (0,)), mode=FILL, indices_are_sorted=False, unique_indices=False)
    out, tangent = jvp_of(I.scatter_p)([x, indices, y], [gx, Zero(aval_of(indices)), gy], **params)
    out, tangent = np.asarray(out), np.asarray(tangent)
    np.testing.assert_array_equal(out, I.scatter_p.bind(x, indices, y, **params))
    landed = int(np.flatnonzero(y[:2] == out[0])[0])
    np.testing.assert_allclose(tangent, [gy[landed], 1e-4, 1e-3, 1e-5])
    # and the transpose sends the cotangent at element 0 to the landing update only
    ct_x, _, ct_y = I.scatter_p.transpose_rule(np.array([1.0, 2.0, 3.0, 4.0]), UndefinedPrimal(aval_of(x)), indices,
                                               UndefinedPrimal(aval_of(y)), **params)
    np.testing.assert_array_equal(np.asarray(ct_x), [0, 0, 0, 0])
    expected = [0.0, 0.0, 3.0, 2.0, 4.0]
    expected[landed] = 1.0
    np.testing.assert_array_equal(np.asarray(ct_y), expected)


@pytest.mark.parametrize("name, shape, indices, updates_shape, dn, mode, unique", SCATTERS, ids=SCATTER_IDS)
def test_scatter_mul(name, shape, indices, updates_shape, dn, mode, unique, rng):
    primals, params = scatter_case(rng, shape, indices, updates_shape, dn, mode, unique)
    check_jvp(I.scatter_mul_p, primals, params, rng=rng, diff=[0, 2] if unique else [0])
    check_transpose(I.scatter_mul_p, primals, params, rng=rng, linear=[0])


def test_scatter_mul_updates_need_unique_indices(rng):
    primals, params = scatter_case(rng, (5,), [[1], [1]], (2,), sdn((), (0,), (0,)), FILL, False)
    tangents = [Zero(aval_of(primals[0])), Zero(aval_of(primals[1])), np.ones(2)]
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        jvp_of(I.scatter_mul_p)(primals, tangents, **params)
    with pytest.raises(NotImplementedError, match="not linear in its updates"):
        I.scatter_mul_p.transpose_rule(np.ones(5), primals[0], primals[1], UndefinedPrimal(aval_of(primals[2])),
                                       **params)


@pytest.mark.parametrize("name, shape, indices, updates_shape, dn, mode, unique", SCATTERS, ids=SCATTER_IDS)
@pytest.mark.parametrize("prim", [I.scatter_min_p, I.scatter_max_p], ids=["min", "max"])
def test_scatter_extremum(name, shape, indices, updates_shape, dn, mode, unique, prim, rng):
    # random normals: no ties, so finite differences see one winner per element
    primals, params = scatter_case(rng, shape, indices, updates_shape, dn, mode, unique)
    check_jvp(prim, primals, params, rng=rng)
    assert prim.rule_state("transpose") == "unsupported"


@pytest.mark.parametrize("prim, updates, tangent_both, tangent_operand, tangent_updates", [
    # recorded from JAX (jax.jvp of lax.scatter_max / scatter_min): tied winners share the tangent equally
    (I.scatter_max_p, [4.0, 4.0, 3.0, 6.0, 1.0], [0.055, 1e-4, 50.0005, 1000.0], [0, 0, 50, 1000],
     [0.055, 1e-4, 5e-4, 0]),
    (I.scatter_min_p, [1.0, 0.5, 3.0, 6.0, 1.0], [0.01, 10.0, 50.0005, 0.00001], [0, 10, 50, 0],
     [0.01, 0, 5e-4, 1e-5]),
])
def test_scatter_extremum_ties_like_jax(prim, updates, tangent_both, tangent_operand, tangent_updates):
    x, indices, y = np.array([1.0, 5.0, 3.0, 2.0]), np.array([[0], [0], [2], [1], [3]], np.int32), np.array(updates)
    gx, gy = np.array([1.0, 10.0, 100.0, 1000.0]), np.array([0.1, 0.01, 0.001, 0.0001, 0.00001])
    params = dict(dimension_numbers=sdn((), (0,), (0,)), mode=FILL, indices_are_sorted=False, unique_indices=False)
    zero_i = Zero(aval_of(indices))
    for tangents, expected in (([gx, zero_i, gy], tangent_both), ([gx, zero_i, Zero(aval_of(y))], tangent_operand),
                               ([Zero(aval_of(x)), zero_i, gy], tangent_updates)):
        _, tangent = jvp_of(prim)([x, indices, y], tangents, **params)
        np.testing.assert_allclose(np.asarray(tangent), expected, rtol=1e-8, atol=1e-15)


def test_scatter_max_nan_result_has_zero_tangent():
    x, indices, y = np.array([np.nan, 1.0]), np.array([[0]], np.int32), np.array([2.0])
    params = dict(dimension_numbers=sdn((), (0,), (0,)), mode=FILL, indices_are_sorted=False, unique_indices=False)
    _, tangent = jvp_of(I.scatter_max_p)([x, indices, y], [np.ones(2), Zero(aval_of(indices)), np.ones(1)], **params)
    np.testing.assert_array_equal(np.asarray(tangent), [0.0, 1.0])


@pytest.mark.parametrize("prim", [I.scatter_p, I.scatter_add_p, I.scatter_mul_p, I.scatter_min_p, I.scatter_max_p])
def test_scatter_of_integers_has_zero_tangent(prim):
    x, indices, y = np.arange(5, dtype=np.int32), np.array([[1], [1]], np.int32), np.array([7, 8], np.int32)
    params = dict(dimension_numbers=sdn((), (0,), (0,)), mode=FILL, indices_are_sorted=False, unique_indices=False)
    check_jvp(prim, [x, indices, y], params, rng=None, diff=[])


# -- the rules recorded as IR -----------------------------------------------------------------------------
def test_rules_record_ir():
    x, y = np.arange(20.0).reshape(4, 5), np.arange(18.0).reshape(3, 2, 3)
    indices = np.array([[1, 2], [0, 0], [2, 1]], np.int32)
    params = dict(dimension_numbers=sdn((1, 2), (), (0, 1)), mode=FILL, indices_are_sorted=False,
                  unique_indices=False)
    zero_i = Zero(aval_of(indices))
    for prim in (I.scatter_p, I.scatter_add_p, I.scatter_max_p):
        check_symbolic(lambda v, prim=prim: list(jvp_of(prim)([v[0], v[1], v[2]], [v[3], zero_i, v[4]], **params)),
                       [x, indices, y, x + 1, y - 1])
    check_symbolic(lambda v: I.scatter_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)), v[1],
                                                        UndefinedPrimal(aval_of(y)), **params), [x, indices])
    gather = gather_params(gdn((1, 2), (), (0, 1)), (2, 3), FILL)
    check_symbolic(lambda v: list(jvp_of(I.gather_p)([v[0], v[1]], [v[2], zero_i], **gather)), [x, indices, x * 2])
    check_symbolic(lambda v: I.gather_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)), v[1], **gather),
                   [y, indices])
    slice_params = dict(start_indices=(1, 0), limit_indices=(4, 5), strides=(2, 2))
    check_symbolic(lambda v: I.slice_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)), **slice_params),
                   [np.ones((2, 3))])
    start = np.int32(2)
    check_symbolic(lambda v: I.dynamic_update_slice_p.transpose_rule(
        v[0], UndefinedPrimal(aval_of(x)), UndefinedPrimal(aval_of(y[0])), v[1], v[1]), [x, start])
