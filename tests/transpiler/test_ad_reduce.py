"""Differentiation rules of the reduction primitives: JVPs against central differences, transposes by the
dot-product test, Zero tangents, the rules recorded as IR, JAX's conventions at ties, zeros and infinities
(tangents recorded from JAX 0.10 on CPU), and every primitive of the family either having each rule or
saying why not."""

import numpy as np
import pytest

from tests.transpiler.ad_checks import check_jvp, check_symbolic, check_transpose, x64  # noqa: F401
from srcjax.transpiler.primitives import reduce as R
from srcjax.transpiler.primitives.ad import UndefinedPrimal, Zero, aval_of, jvp_of
from srcjax.transpiler.primitives.core import PRIMITIVES

pytestmark = pytest.mark.usefixtures("x64")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def normal(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    return (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)


def spread(rng, shape):
    """Distinct values at least 0.1 apart (a random permutation of a grid), so that max/min/sort do not switch
    elements within a finite-difference step."""
    size = int(np.prod(shape, dtype=np.int64))
    return (rng.permutation(size) * 0.1 - size * 0.05).reshape(shape).astype(np.float64)


def tangent(prim, primals, tangents, **params):
    out, t = jvp_of(prim)(primals, tangents, **params)
    return out, t


# -- reductions over axes --------------------------------------------------------------------------------
REDUCTIONS = [  # shape, axes
    ((5,), (0,)),
    ((2, 3), (1,)),
    ((2, 3, 4), (0, 2)),
    ((3, 4), ()),
    ((), ()),
    ((2, 7), (0, 1)),
    ((0, 3), (1,)),
]


@pytest.mark.parametrize("shape, axes", REDUCTIONS + [((0, 3), (0,))])
def test_reduce_sum(shape, axes, rng):
    check_jvp(R.reduce_sum_p, [normal(rng, shape)], dict(axes=axes), rng=rng)
    check_transpose(R.reduce_sum_p, [normal(rng, shape, np.complex128)], dict(axes=axes), rng=rng, linear=[0])


@pytest.mark.parametrize("prim", [R.reduce_max_p, R.reduce_min_p])
@pytest.mark.parametrize("shape, axes", REDUCTIONS)
def test_reduce_max_min(prim, shape, axes, rng):
    check_jvp(prim, [spread(rng, shape)], dict(axes=axes), rng=rng)


@pytest.mark.parametrize("shape, axes", REDUCTIONS + [((0, 3), (0,)), ((3, 5, 2), (1,)), ((9,), (0,))])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_reduce_prod(shape, axes, dtype, rng):
    check_jvp(R.reduce_prod_p, [normal(rng, shape, dtype)], dict(axes=axes), rng=rng)


def test_reduce_max_min_share_the_tangent_between_ties():
    # recorded from JAX: the mean of the tangents at the tied maxima (10 + 100 + 10000) / 3
    x = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0])
    t = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0])
    assert float(tangent(R.reduce_max_p, [x], [t], axes=(0,))[1]) == 3370.0
    x, t = np.array([[1.0, 1.0, 2.0], [0.0, 3.0, 0.0]]), np.array([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]])
    np.testing.assert_array_equal(np.asarray(tangent(R.reduce_min_p, [x], [t], axes=(1,))[1]), [1.5, 20.0])


def test_reduce_prod_is_exact_at_zeros():
    # recorded from JAX: d prod([1, 0, 2]) = 1*0*2 + 1*1*2 + 1*0*1 = 2, two zeros give 0
    x = np.array([[1.0, 0.0, 2.0], [3.0, 0.0, 0.0]])
    out, t = tangent(R.reduce_prod_p, [x], [np.ones_like(x)], axes=(1,))
    np.testing.assert_array_equal(np.asarray(t), [2.0, 0.0])


def test_integer_reductions_get_zero_tangents():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for prim in (R.reduce_max_p, R.reduce_prod_p, R.reduce_sum_p):
        out, t = jvp_of(prim)([x], [Zero(aval_of(x))], axes=(1,))
        assert isinstance(t, Zero) and t.aval == aval_of(out).strong()


# -- cumulative scans -------------------------------------------------------------------------------------
SCANS = [  # shape, axis, reverse
    ((1,), 0, False),
    ((2,), 0, True),
    ((5,), 0, False),
    ((6,), 0, True),
    ((7, 3), 0, False),
    ((2, 9), 1, True),
    ((3, 8, 2), 1, False),
    ((0, 3), 1, False),
    ((3, 0), 1, True),
]


@pytest.mark.parametrize("shape, axis, reverse", SCANS)
def test_cumsum(shape, axis, reverse, rng):
    params = dict(axis=axis, reverse=reverse)
    check_jvp(R.cumsum_p, [normal(rng, shape)], params, rng=rng)
    check_transpose(R.cumsum_p, [normal(rng, shape)], params, rng=rng, linear=[0])


@pytest.mark.parametrize("prim", [R.cumprod_p, R.cummax_p, R.cummin_p, R.cumlogsumexp_p])
@pytest.mark.parametrize("shape, axis, reverse", SCANS)
def test_cumulative(prim, shape, axis, reverse, rng):
    x = normal(rng, shape) if prim is not R.cummax_p and prim is not R.cummin_p else spread(rng, shape)
    check_jvp(prim, [x], dict(axis=axis, reverse=reverse), rng=rng)


def test_cumprod_complex(rng):
    check_jvp(R.cumprod_p, [normal(rng, (3, 5), np.complex128)], dict(axis=1, reverse=False), rng=rng)


# recorded from JAX: ties share the tangent as the parallel prefix scan combines them (not a plain mean)
CUMULATIVE_FACTS = [  # prim, x, tangent, params, expected tangent
    (R.cummax_p, [2.0, 5.0, 5.0, 1.0, 5.0, 5.0, 0.0], 10.0 ** np.arange(7), dict(axis=0, reverse=False),
     [1.0, 10.0, 55.0, 55.0, 5027.5, 27527.5, 27527.5]),
    (R.cummax_p, [2.0, 5.0, 5.0, 1.0, 5.0, 5.0, 0.0], 10.0 ** np.arange(7), dict(axis=0, reverse=True),
     [27527.5, 27527.5, 27550.0, 55000.0, 55000.0, 100000.0, 1000000.0]),
    (R.cummin_p, [-2.0, -5.0, -5.0, -1.0, -5.0, -5.0, 0.0], 10.0 ** np.arange(7), dict(axis=0, reverse=True),
     [27527.5, 27527.5, 27550.0, 55000.0, 55000.0, 100000.0, 1000000.0]),
    (R.cummax_p, [1.0, 3.0, 3.0, 2.0, 3.0, 0.0], 10.0 ** np.arange(6), dict(axis=0, reverse=False),
     [1.0, 10.0, 55.0, 55.0, 5027.5, 5027.5]),
    (R.cumprod_p, [[1.0, 0.0, 2.0], [3.0, 0.0, 0.0]], np.arange(1.0, 7.0).reshape(2, 3), dict(axis=1, reverse=False),
     [[1.0, 2.0, 4.0], [4.0, 15.0, 0.0]]),
    (R.cumprod_p, [[2.0, 0.0, 3.0], [0.0, 0.0, 4.0]], np.ones((2, 3)), dict(axis=0, reverse=True),
     [[2.0, 0.0, 7.0], [1.0, 1.0, 1.0]]),
    (R.cumlogsumexp_p, [0.0, -np.inf, 1.0, np.inf, 2.0], np.arange(1.0, 6.0), dict(axis=0, reverse=False),
     [1.0, 1.0, 2.46211715726001, 13.154845485377137, 50.10012598003039]),
    (R.cumlogsumexp_p, [-np.inf, -np.inf, 1.0], np.arange(1.0, 4.0), dict(axis=0, reverse=False),
     [1.0, np.nan, np.nan]),
]


@pytest.mark.parametrize("prim, x, t, params, expected", CUMULATIVE_FACTS)
def test_cumulative_matches_jax_at_ties_zeros_and_infinities(prim, x, t, params, expected):
    out, result = tangent(prim, [np.asarray(x)], [np.asarray(t)], **params)
    np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-13)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(prim.bind(np.asarray(x), **params)))


# -- sort and top_k ---------------------------------------------------------------------------------------
SORTS = [  # operand shapes, dimension, num_keys
    ([(5,)], 0, 1),
    ([(3, 4)], 1, 1),
    ([(3, 4)], 0, 1),
    ([(4, 3), (4, 3)], 0, 1),
    ([(2, 5), (2, 5), (2, 5)], 1, 2),
    ([(0, 3)], 1, 1),
]


@pytest.mark.parametrize("shapes, dimension, num_keys", SORTS)
def test_sort(shapes, dimension, num_keys, rng):
    primals = [spread(rng, s) for s in shapes]
    check_jvp(R.sort_p, primals, dict(dimension=dimension, is_stable=True, num_keys=num_keys), rng=rng)


def test_sort_with_integer_keys_gathers_the_values_tangents(rng):
    keys = np.array([[3, 1, 2, 1], [0, 0, 1, 0]], np.int32)
    values = normal(rng, (2, 4))
    check_jvp(R.sort_p, [keys, values], dict(dimension=1, is_stable=True, num_keys=1), rng=rng)


def test_sort_matches_jax_at_ties():
    # recorded from JAX: a stable sort, so tied keys keep their order and each takes its own tangent
    out, (t,) = tangent(R.sort_p, [np.array([3.0, 1.0, 3.0, 2.0])], [np.array([1.0, 10.0, 100.0, 1000.0])],
                        dimension=0, is_stable=True, num_keys=1)
    np.testing.assert_array_equal(np.asarray(t), [10.0, 1000.0, 1.0, 100.0])
    keys = np.array([1, 0, 1, 0], np.int32)
    primals = [keys, np.array([2.0, 3.0, 1.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0])]
    tangents = [Zero(aval_of(keys)), np.array([1.0, 10.0, 100.0, 1000.0]), np.array([0.1, 0.2, 0.3, 0.4])]
    out, (t_keys, t_a, t_b) = tangent(R.sort_p, primals, tangents, dimension=0, is_stable=True, num_keys=2)
    assert isinstance(t_keys, Zero)
    np.testing.assert_array_equal(np.asarray(t_a), [10.0, 1000.0, 100.0, 1.0])
    np.testing.assert_array_equal(np.asarray(t_b), [0.2, 0.4, 0.3, 0.1])


TOP_KS = [((5,), 3), ((2, 6), 6), ((2, 3, 4), 1), ((3,), 0), ((0, 4), 2)]


@pytest.mark.parametrize("shape, k", TOP_KS)
def test_top_k(shape, k, rng):
    check_jvp(R.top_k_p, [spread(rng, shape)], dict(k=k), rng=rng)


def test_top_k_matches_jax_at_ties():
    # recorded from JAX: tied values are taken lowest index first, each with its own tangent
    out, (t, t_indices) = tangent(R.top_k_p, [np.array([3.0, 1.0, 3.0, 2.0])], [np.array([1.0, 10.0, 100.0, 1000.0])],
                                  k=3)
    np.testing.assert_array_equal(np.asarray(t), [1.0, 100.0, 1000.0])
    assert isinstance(t_indices, Zero) and t_indices.aval.dtype == np.int32


# -- windowed reductions ----------------------------------------------------------------------------------
# Every window holds an operand element: a window of padding or base-dilation holes only is -inf (max) or
# +inf (min), where finite differences give NaN (its tangent, 0, is checked against JAX below).
WINDOWS = [  # shape, window_dimensions, window_strides, padding, base_dilation, window_dilation
    ((6,), (3,), (1,), ((0, 0),), (1,), (1,)),
    ((7,), (2,), (2,), ((1, 1),), (1,), (1,)),
    ((4, 5), (2, 3), (1, 2), ((0, 0), (1, 1)), (1, 1), (1, 1)),
    ((4, 5), (2, 2), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2)),  # base and window dilation
    ((3, 4), (3, 2), (1, 1), ((2, 2), (0, 0)), (1, 2), (2, 1)),
    ((6,), (2,), (3,), ((-1, 0),), (1,), (1,)),  # negative padding
    ((5,), (5,), (1,), ((0, 0),), (1,), (1,)),
    ((2, 3), (3, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),  # empty result
    ((), (), (), (), (), ()),
]


def window_params(window, strides, padding, base, dilation):
    return dict(window_dimensions=window, window_strides=strides, padding=padding, base_dilation=base,
                window_dilation=dilation)


@pytest.mark.parametrize("shape, window, strides, padding, base, dilation", WINDOWS + [
    ((0,), (2,), (1,), ((2, 2),), (1,), (1,)),
    ((3, 4), (3, 1), (1, 1), ((2, 2), (0, 0)), (1, 3), (2, 1)),  # windows of padding and holes only
    ((7,), (2,), (2,), ((1, 4),), (1,), (1,)),
])
def test_reduce_window_sum(shape, window, strides, padding, base, dilation, rng):
    params = window_params(window, strides, padding, base, dilation)
    check_jvp(R.reduce_window_sum_p, [normal(rng, shape)], params, rng=rng)
    check_transpose(R.reduce_window_sum_p, [normal(rng, shape)], params, rng=rng, linear=[0])


@pytest.mark.parametrize("prim", [R.reduce_window_max_p, R.reduce_window_min_p])
@pytest.mark.parametrize("shape, window, strides, padding, base, dilation", WINDOWS)
def test_reduce_window_max_min(prim, shape, window, strides, padding, base, dilation, rng):
    check_jvp(prim, [spread(rng, shape)], window_params(window, strides, padding, base, dilation), rng=rng)


def test_reduce_window_max_takes_the_first_tied_maximum_as_jax_does():
    # recorded from JAX (select-and-gather-add): the tangent of the first maximum of each window
    x, t = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0]), np.array([1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0])
    _, result = tangent(R.reduce_window_max_p, [x], [t], **window_params((3,), (1,), ((0, 0),), (1,), (1,)))
    np.testing.assert_array_equal(np.asarray(result), [10.0, 10.0, 100.0, 10000.0])
    x, t = np.ones((2, 2)), np.array([[1.0, 2.0], [3.0, 4.0]])
    params = window_params((2, 2), (1, 1), ((1, 0), (0, 1)), (1, 1), (1, 1))
    _, result = tangent(R.reduce_window_max_p, [x], [t], **params)
    np.testing.assert_array_equal(np.asarray(result), [[1.0, 2.0], [1.0, 2.0]])


def test_reduce_window_max_min_give_windows_of_padding_only_a_zero_tangent():
    # recorded from JAX: padding and the holes of base dilation carry no tangent
    x, t = np.arange(1.0, 5.0), np.array([1.0, 10.0, 100.0, 1000.0])
    _, result = tangent(R.reduce_window_max_p, [x], [t], **window_params((2,), (2,), ((1, 3),), (1,), (1,)))
    np.testing.assert_array_equal(np.asarray(result), [1.0, 100.0, 1000.0, 0.0])
    for prim in (R.reduce_window_max_p, R.reduce_window_min_p):
        _, result = tangent(prim, [x], [t], **window_params((1,), (1,), ((0, 0),), (2,), (1,)))
        np.testing.assert_array_equal(np.asarray(result), [1.0, 0.0, 10.0, 0.0, 100.0, 0.0, 1000.0])


def test_integer_windows_get_zero_tangents():
    x = np.arange(6, dtype=np.int32)
    params = window_params((2,), (1,), ((0, 0),), (1,), (1,))
    out, t = jvp_of(R.reduce_window_max_p)([x], [Zero(aval_of(x))], **params)
    assert isinstance(t, Zero) and t.aval.shape == (5,)


# -- the rules run under the IR builder --------------------------------------------------------------------
def test_rules_record_ir(rng):
    x = spread(rng, (3, 5))
    g = normal(rng, (3, 5))

    def jvp_tangent(prim, **params):
        return lambda v: [jvp_of(prim)([v[0]], [v[1]], **params)[1]]

    check_symbolic(jvp_tangent(R.reduce_prod_p, axes=(1,)), [x, g])
    check_symbolic(jvp_tangent(R.reduce_max_p, axes=(0, 1)), [x, g])
    for prim in (R.cumprod_p, R.cummax_p, R.cumlogsumexp_p):
        check_symbolic(jvp_tangent(prim, axis=1, reverse=True), [x, g])
    check_symbolic(lambda v: jvp_of(R.sort_p)([v[0]], [v[1]], dimension=1, is_stable=True, num_keys=1)[1], [x, g])
    check_symbolic(lambda v: jvp_of(R.top_k_p)([v[0]], [v[1]], k=2)[1], [x, g])
    params = window_params((2, 2), (1, 2), ((1, 0), (0, 1)), (1, 2), (1, 1))
    check_symbolic(jvp_tangent(R.reduce_window_max_p, **params), [x, g])
    ct = np.ones(aval_of(R.reduce_window_sum_p.bind(x, **params)).shape)
    check_symbolic(lambda v: R.reduce_window_sum_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)), **params), [ct])
    check_symbolic(lambda v: R.cumsum_p.transpose_rule(v[0], UndefinedPrimal(aval_of(x)), axis=0), [g])


def test_every_reduce_primitive_has_its_rules_or_says_why_not():
    family = [p for p in PRIMITIVES.values() if p.family.endswith("primitives/reduce.py")]
    assert {p.name for p in family} >= {
        "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or", "reduce_xor", "argmax",
        "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "sort", "top_k", "reduce_window_sum",
        "reduce_window_max", "reduce_window_min"}
    for prim in family:
        assert jvp_of(prim) is not None or prim.rule_state("jvp") != "missing", f"{prim}: no JVP rule and no reason"
        assert prim.rule_state("transpose") != "missing", f"{prim}: no transpose and no reason"
    for prim in (R.argmax_p, R.argmin_p, R.reduce_and_p, R.reduce_or_p, R.reduce_xor_p):
        assert prim.rule_state("jvp") == "zero"
    linear = {p.name for p in family if p.linear}
    assert linear == {"reduce_sum", "cumsum", "reduce_window_sum"}
