"""Batching rules of the reduce primitives: each rule on concrete batched arrays against stacking the
per-example results of ``bind``, for every way of batching the operands (first, middle or last axis, or
not at all), where the rule puts the batch axis, and a few rules recorded as IR on symbolic values."""

import numpy as np
import pytest

from tests.transpiler.vmap_checks import check_vmap, check_vmap_symbolic, dims_cases
from srcjax.transpiler.primitives import reduce as R
from srcjax.transpiler.primitives.core import PRIMITIVES

SIZE = 3  # batch size


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def batched(rng, shape, dim, dtype=np.float32, size=SIZE, low=-20, high=20):
    """Random operand of one example's ``shape``, batched along ``dim`` (None: unbatched). Integers are drawn
    from [low, high): a narrow range makes ties, which sorts and arg-reductions must break as bind does."""
    shape = tuple(shape) if dim is None else (*shape[:dim], size, *shape[dim:])
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(low, high, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def op_names(fn) -> list[str]:
    return [op.prim.name for op in fn.body.ops]


# -- reductions over axes --------------------------------------------------------------------------------
AXES = [((3, 4), (0,)), ((3, 4), (1,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (1,)), ((3,), ()), ((), ()),
        ((0, 3), (0,)), ((2, 3), (0, 1))]
REDUCTIONS = [  # primitive, dtypes
    (R.reduce_sum_p, [np.float32, np.int32]),
    (R.reduce_prod_p, [np.float32, np.int32]),
    (R.reduce_max_p, [np.float32, np.int32, np.bool_]),
    (R.reduce_min_p, [np.float32, np.uint8]),
    (R.reduce_and_p, [np.bool_, np.int32]),
    (R.reduce_or_p, [np.bool_, np.uint8]),
    (R.reduce_xor_p, [np.bool_, np.int32]),
]


@pytest.mark.parametrize("shape, axes", AXES)
@pytest.mark.parametrize("prim, dtypes", REDUCTIONS, ids=[p.name for p, _ in REDUCTIONS])
def test_reduction(prim, dtypes, shape, axes, rng):
    for dtype in dtypes:
        for (d,) in dims_cases([len(shape)]):
            (out_dim,) = check_vmap(prim, [batched(rng, shape, d, dtype, low=0, high=5)], [d], dict(axes=axes))
            assert out_dim == d - sum(a < d for a in axes)  # the reduced axes before it go, nothing moves


ARG_AXES = [((3, 4), (0,)), ((3, 4), (1,)), ((2, 3, 4), (1,)), ((5,), (0,)), ((1, 2), (0,))]


@pytest.mark.parametrize("shape, axes", ARG_AXES)
@pytest.mark.parametrize("prim", [R.argmax_p, R.argmin_p], ids=["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_arg_reduction(prim, shape, axes, dtype, rng):
    for (d,) in dims_cases([len(shape)]):
        x = batched(rng, shape, d, dtype, low=0, high=3)
        check_vmap(prim, [x], [d], dict(axes=axes, index_dtype=np.dtype(np.int32)))


def test_arg_reduction_with_nans(rng):
    x = batched(rng, (4, 5), 1)
    x[0, :, 2] = np.nan
    for prim in (R.argmax_p, R.argmin_p):
        check_vmap(prim, [x], [1], dict(axes=(1,), index_dtype=np.dtype(np.int32)))


# -- cumulative scans ------------------------------------------------------------------------------------
SCANS = [((4,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1), ((0, 2), 1)]
CUMULATIVES = [(R.cumsum_p, np.int32), (R.cumprod_p, np.float32), (R.cummax_p, np.int32), (R.cummin_p, np.float32),
               (R.cumlogsumexp_p, np.float32)]


@pytest.mark.parametrize("shape, axis", SCANS)
@pytest.mark.parametrize("prim, dtype", CUMULATIVES, ids=[p.name for p, _ in CUMULATIVES])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative(prim, dtype, shape, axis, reverse, rng):
    for (d,) in dims_cases([len(shape)]):
        x = batched(rng, shape, d, dtype, low=-3, high=4)
        assert check_vmap(prim, [x], [d], dict(axis=axis, reverse=reverse)) == [d]


# -- sort, top_k -----------------------------------------------------------------------------------------
SORTS = [  # operand shapes and dtypes, dimension, num_keys
    ([((5,), np.float32)], 0, 1),
    ([((3, 4), np.int32)], 1, 1),
    ([((3, 4), np.float32)], 0, 1),
    ([((4,), np.int32), ((4,), np.float32)], 0, 1),  # keys with ties carry values along
    ([((3, 4), np.int32), ((3, 4), np.int32), ((3, 4), np.float32)], 1, 2),
    ([((2, 0), np.float32), ((2, 0), np.int32)], 1, 1),
]


@pytest.mark.parametrize("operands, dimension, num_keys", SORTS)
def test_sort(operands, dimension, num_keys, rng):
    for dims in dims_cases([len(s) for s, _ in operands]):
        args = [batched(rng, s, d, t, low=0, high=3) for (s, t), d in zip(operands, dims)]
        out_dims = check_vmap(R.sort_p, args, dims, dict(dimension=dimension, is_stable=True, num_keys=num_keys))
        assert out_dims == [next(d for d in dims if d is not None)] * len(args)


def test_sort_symbolic_with_an_unbatched_key(rng):
    keys, values = batched(rng, (3, 4), None, np.int32, low=0, high=3), batched(rng, (3, 4), 2)
    fn = check_vmap_symbolic(R.sort_p, [keys, values], [None, 2], dict(dimension=1, is_stable=True, num_keys=1))
    assert op_names(fn) == ["broadcast_in_dim", "sort"]  # the keys are broadcast, nothing is transposed


TOP_KS = [((5,), 2), ((3, 4), 4), ((2, 3, 4), 1), ((3, 4), 0), ((1,), 1)]


@pytest.mark.parametrize("shape, k", TOP_KS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_top_k(shape, k, dtype, rng):
    for (d,) in dims_cases([len(shape)]):
        x = batched(rng, shape, d, dtype, low=0, high=3)
        out_dims = check_vmap(R.top_k_p, [x], [d], dict(k=k))
        # a batch axis in the last place, where top_k works, moves just before it
        assert out_dims == [min(d, len(shape) - 1)] * 2


def test_top_k_symbolic_moves_a_last_batch_axis(rng):
    fn = check_vmap_symbolic(R.top_k_p, [batched(rng, (3, 4), 2)], [2], dict(k=2))
    assert op_names(fn) == ["transpose", "top_k"]


# -- windowed reductions ---------------------------------------------------------------------------------
WINDOWS = [  # operand shape, window_dimensions, window_strides, padding, base_dilation, window_dilation
    ((5,), (2,), (1,), ((0, 0),), (1,), (1,)),
    ((6, 5), (3, 2), (2, 1), ((1, 0), (0, 2)), (1, 1), (1, 2)),
    ((4, 3), (2, 2), (1, 2), ((0, 0), (1, 1)), (2, 1), (1, 1)),
    ((2, 3, 4), (1, 2, 2), (1, 1, 2), ((0, 0), (0, 0), (1, 0)), (1, 2, 1), (1, 1, 1)),
    ((), (), (), (), (), ()),
    ((2,), (3,), (1,), ((0, 0),), (1,), (1,)),  # a window larger than the operand: empty result
]
WINDOW_PRIMS = [R.reduce_window_sum_p, R.reduce_window_max_p, R.reduce_window_min_p]


@pytest.mark.parametrize("shape, window, strides, padding, base, dilation", WINDOWS)
@pytest.mark.parametrize("prim", WINDOW_PRIMS, ids=[p.name for p in WINDOW_PRIMS])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reduce_window(prim, shape, window, strides, padding, base, dilation, dtype, rng):
    params = dict(window_dimensions=window, window_strides=strides, padding=padding, base_dilation=base,
                  window_dilation=dilation)
    for (d,) in dims_cases([len(shape)]):
        assert check_vmap(prim, [batched(rng, shape, d, dtype)], [d], params) == [d]


# -- rules recorded as IR ----------------------------------------------------------------------------------
def test_rules_run_on_symbolic_values(rng):
    x = batched(rng, (2, 3, 4), 1)
    fn = check_vmap_symbolic(R.reduce_sum_p, [x], [1], dict(axes=(0, 2)))
    assert op_names(fn) == ["reduce_sum"]
    check_vmap_symbolic(R.argmax_p, [x], [1], dict(axes=(2,), index_dtype=np.dtype(np.int32)))
    check_vmap_symbolic(R.cumlogsumexp_p, [x], [1], dict(axis=2, reverse=True), rtol=1e-6, atol=1e-6)
    fn = check_vmap_symbolic(R.reduce_window_max_p, [x], [1],
                             dict(window_dimensions=(2, 2, 2), window_strides=(1, 1, 2), padding=((0, 0),) * 3,
                                  base_dilation=(1, 1, 1), window_dilation=(1, 1, 1)))
    assert fn.body.ops[0].params["window_dimensions"] == (2, 1, 2, 2)


# -- every primitive of the family ------------------------------------------------------------------------
def test_every_reduce_primitive_has_a_batching_rule():
    family = [p for p in PRIMITIVES.values() if p.family == "transpiler/primitives/reduce.py"]
    assert len(family) == 19
    assert [p.name for p in family if p.vmap_rule is None] == []
