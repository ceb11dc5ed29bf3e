"""Batching rules of the indexing primitives: each rule on concrete batched arrays against stacking the
per-element results of ``bind``, for every way of batching the operands (first, middle or last axis, or
not at all), and a few rules recorded as IR (dynamic slices with batched starts become gathers/scatters)."""

import numpy as np
import pytest

from tests.transpiler.vmap_checks import axis_options, check_vmap, check_vmap_symbolic, dims_cases
from srcjax.transpiler.primitives import indexing as I

CLIP, FILL, PROMISE = I.GatherScatterMode.CLIP, I.GatherScatterMode.FILL_OR_DROP, I.GatherScatterMode.PROMISE_IN_BOUNDS
SIZE = 3  # batch size


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def values(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def batched(rng, shape, dim, dtype=np.float32, size=SIZE):
    """Random operand of one element's ``shape``, batched along ``dim`` (None: unbatched)."""
    shape = tuple(shape) if dim is None else (*shape[:dim], size, *shape[dim:])
    return values(rng, shape, dtype)


def batched_indices(rng, shape, dim, low, high, size=SIZE):
    shape = tuple(shape) if dim is None else (*shape[:dim], size, *shape[dim:])
    return rng.integers(low, high, shape).astype(np.int32)


# -- slice -------------------------------------------------------------------------------------------------
SLICES = [  # shape, start_indices, limit_indices, strides
    ((5,), (1,), (4,), None),
    ((5, 6), (1, 0), (5, 6), (2, 4)),
    ((4, 3, 5), (0, 1, 1), (4, 3, 4), (3, 1, 2)),
    ((5, 6), (2, 6), (2, 6), None),  # empty result
    ((), (), (), None),
]


@pytest.mark.parametrize("shape, starts, limits, strides", SLICES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_slice(shape, starts, limits, strides, dtype, rng):
    params = dict(start_indices=starts, limit_indices=limits, strides=strides)
    for (d,) in dims_cases([len(shape)]):
        out_dims = check_vmap(I.slice_p, [batched(rng, shape, d, dtype)], [d], params)
        assert out_dims == [d]  # no transpose: the batch axis stays where it is


# -- dynamic_slice ------------------------------------------------------------------------------------------
DYNAMIC_SLICES = [  # operand shape, slice sizes
    ((6,), (2,)),
    ((5, 4), (2, 4)),
    ((4, 5, 3), (3, 1, 2)),
    ((5, 4), (0, 4)),  # empty window
    ((), ()),
]


@pytest.mark.parametrize("shape, sizes", DYNAMIC_SLICES)
def test_dynamic_slice(shape, sizes, rng):
    for dims in dims_cases([len(shape)] + [0] * len(shape), limit=24):
        x = batched(rng, shape, dims[0])
        # starts out of range on both sides: dynamic_slice and the gather it may become both clamp them
        starts = [batched_indices(rng, (), d, -2, n + 2) for d, n in zip(dims[1:], shape)]
        out_dims = check_vmap(I.dynamic_slice_p, [x, *starts], dims, dict(slice_sizes=sizes))
        if all(d is None for d in dims[1:]):
            assert out_dims == [dims[0]]


def test_dynamic_slice_with_batched_starts_is_one_gather(rng):
    x, i, j = batched(rng, (5, 4), 1), batched_indices(rng, (), 0, -1, 6), np.int32(1)
    fn = check_vmap_symbolic(I.dynamic_slice_p, [x, i, j], [1, 0, None], dict(slice_sizes=(2, 3)))
    assert [op.prim.name for op in fn.body.ops].count("gather") == 1
    assert "dynamic_slice" not in [op.prim.name for op in fn.body.ops]


def test_dynamic_slice_with_one_window_takes_the_batch_axis_whole(rng):
    x = batched(rng, (5,), 1)  # [5, SIZE]
    fn = check_vmap_symbolic(I.dynamic_slice_p, [x, np.int32(1)], [1, None], dict(slice_sizes=(2,)))
    (op,) = fn.body.ops
    assert op.prim is I.dynamic_slice_p and op.params["slice_sizes"] == (2, SIZE)


# -- dynamic_update_slice ------------------------------------------------------------------------------------
DYNAMIC_UPDATES = [  # operand shape, update shape
    ((6,), (2,)),
    ((5, 4), (2, 4)),
    ((4, 5, 3), (3, 1, 2)),
    ((5, 4), (0, 4)),  # empty update
    ((), ()),
]


@pytest.mark.parametrize("shape, update_shape", DYNAMIC_UPDATES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_dynamic_update_slice(shape, update_shape, dtype, rng):
    for dims in dims_cases([len(shape), len(shape)] + [0] * len(shape), limit=30):
        x, update = batched(rng, shape, dims[0], dtype), batched(rng, update_shape, dims[1], dtype)
        starts = [batched_indices(rng, (), d, -2, n + 2) for d, n in zip(dims[2:], shape)]
        check_vmap(I.dynamic_update_slice_p, [x, update, *starts], dims)


def test_dynamic_update_slice_with_batched_starts_is_one_scatter(rng):
    x, update, i, j = batched(rng, (5, 4), 0), batched(rng, (2, 3), None), batched_indices(rng, (), 0, -1, 6), \
        np.int32(1)
    fn = check_vmap_symbolic(I.dynamic_update_slice_p, [x, update, i, j], [0, None, 0, None])
    names = [op.prim.name for op in fn.body.ops]
    assert names.count("scatter") == 1 and "dynamic_update_slice" not in names


def test_dynamic_update_slice_with_one_window_spans_the_batch_axis(rng):
    x, update = batched(rng, (5, 4), 1), batched(rng, (2, 4), None)
    fn = check_vmap_symbolic(I.dynamic_update_slice_p, [x, update, np.int32(4), np.int32(0)], [1, None, None, None])
    assert [op.prim.name for op in fn.body.ops] == ["broadcast_in_dim", "dynamic_update_slice"]


# -- gather ---------------------------------------------------------------------------------------------------
def gdn(offset, collapsed, index_map, operand_batching=(), indices_batching=()):
    return I.GatherDimensionNumbers(offset, collapsed, index_map, operand_batching, indices_batching)


GATHERS = [  # name, operand shape, indices shape, dimension numbers, slice sizes, mode
    ("rows", (5, 3), (4, 1), gdn((1,), (0,), (0,)), (1, 3), PROMISE),
    ("one element, 0-d result", (5,), (1,), gdn((), (0,), (0,)), (1,), CLIP),
    ("2-d windows, clamped", (4, 5), (3, 2), gdn((1, 2), (), (0, 1)), (2, 3), None),
    ("windows before the batch", (4, 5), (2, 3, 1), gdn((0,), (0,), (0,)), (1, 2), CLIP),
    ("index map reversed", (4, 5, 2), (3, 2), gdn((1,), (0, 1), (1, 0)), (1, 1, 2), CLIP),
    ("out of bounds filled", (5, 2), (2, 2, 1), gdn((2,), (0,), (0,)), (1, 2), FILL),
    ("batching axes", (2, 5, 3), (2, 4, 1), gdn((2,), (1,), (1,), (0,), (0,)), (1, 1, 3), PROMISE),
    ("batching axes, indices batch second", (5, 2, 3), (4, 2, 1), gdn((1,), (0,), (0,), (1,), (1,)), (1, 1, 3),
     CLIP),
    ("0-d operand", (), (3, 0), gdn((), (), ()), (), PROMISE),
    ("no indices", (4, 2), (0, 1), gdn((1,), (0,), (0,)), (1, 2), CLIP),
]


def gather_params(dn, sizes, mode):
    return dict(dimension_numbers=dn, slice_sizes=sizes, mode=mode, fill_value=None, indices_are_sorted=False,
                unique_indices=False)


@pytest.mark.parametrize("name, shape, index_shape, dn, sizes, mode", GATHERS, ids=[c[0] for c in GATHERS])
def test_gather(name, shape, index_shape, dn, sizes, mode, rng):
    dtype = np.int32 if "index map" in name else np.float32
    bound = max(shape, default=1)
    for dims in dims_cases([len(shape), len(index_shape)]):
        x = batched(rng, shape, dims[0], dtype)
        indices = batched_indices(rng, index_shape, dims[1], -2, bound + 2)
        check_vmap(I.gather_p, [x, indices], dims, gather_params(dn, sizes, mode))


def test_gather_batch_axis_placement(rng):
    # the operand's batch axis is read whole as one more window axis, placed among the window axes of the
    # output as it sits among the operand's: no transpose of the operand or of the result
    dn, sizes = gdn((1,), (0,), (0,)), (1, 3)
    x, indices = batched(rng, (5, 3), 2), batched_indices(rng, (4, 1), None, 0, 5)
    assert check_vmap(I.gather_p, [x, indices], [2, None], gather_params(dn, sizes, CLIP)) == [2]
    # batched indices add an output batch axis where their batch axis sits among the index axes
    indices = batched_indices(rng, (4, 1), 1, 0, 5)
    assert check_vmap(I.gather_p, [x, indices], [2, 1], gather_params(dn, sizes, CLIP)) == [1]


def test_gather_symbolic(rng):
    dn = gdn((1,), (0,), (0,))
    x, indices = batched(rng, (5, 3), 1), batched_indices(rng, (4, 1), 0, 0, 5)
    fn = check_vmap_symbolic(I.gather_p, [x, indices], [1, 0], gather_params(dn, (1, 3), CLIP))
    assert [op.prim.name for op in fn.body.ops] == ["gather"]


# -- scatters -----------------------------------------------------------------------------------------------
def sdn(window, inserted, index_map, operand_batching=(), indices_batching=()):
    return I.ScatterDimensionNumbers(window, inserted, index_map, operand_batching, indices_batching)


SCATTERS = [  # name, operand shape, indices shape, updates shape, dimension numbers, mode
    ("rows", (5, 3), (4, 1), (4, 3), sdn((1,), (0,), (0,)), FILL),
    ("one element, 0-d update", (5,), (1,), (), sdn((), (0,), (0,)), CLIP),
    ("2-d windows", (4, 5), (3, 2), (3, 2, 3), sdn((1, 2), (), (0, 1)), FILL),
    ("window before the scatter axes", (4, 5), (2, 3, 1), (2, 2, 3), sdn((0,), (0,), (0,)), CLIP),
    ("out of bounds dropped", (6,), (2, 2, 1), (2, 2), sdn((), (0,), (0,)), None),
    ("batching axes", (2, 5, 3), (2, 4, 1), (2, 4, 3), sdn((2,), (1,), (1,), (0,), (0,)), PROMISE),
    ("0-d operand", (), (3, 0), (3,), sdn((), (), ()), FILL),
    ("no updates", (4, 2), (0, 1), (0, 2), sdn((1,), (0,), (0,)), FILL),
]
SCATTER_PRIMS = [I.scatter_p, I.scatter_add_p, I.scatter_mul_p, I.scatter_min_p, I.scatter_max_p]


@pytest.mark.parametrize("name, shape, index_shape, updates_shape, dn, mode", SCATTERS, ids=[c[0] for c in SCATTERS])
@pytest.mark.parametrize("prim", SCATTER_PRIMS, ids=lambda p: p.name)
def test_scatter(name, shape, index_shape, updates_shape, dn, mode, prim, rng):
    dtype = np.int32 if prim is I.scatter_mul_p else np.float32  # products of ints stay exact
    bound = max(shape, default=1)
    params = dict(dimension_numbers=dn, mode=mode, indices_are_sorted=False, unique_indices=False)
    for dims in dims_cases([len(shape), len(index_shape), len(updates_shape)], limit=14):
        x, updates = batched(rng, shape, dims[0], dtype), batched(rng, updates_shape, dims[2], dtype)
        # repeated indices included: the rule keeps each element's updates in their order
        indices = batched_indices(rng, index_shape, dims[1], -1, bound + 1)
        check_vmap(prim, [x, indices, updates], dims, params)


def test_scatter_keeps_the_operand_batch_axis(rng):
    dn = sdn((1,), (0,), (0,))
    params = dict(dimension_numbers=dn, mode=FILL, indices_are_sorted=False, unique_indices=False)
    # the operand's batch axis is its last window axis, so the updates' window for it is their last axis
    x, indices, updates = batched(rng, (5, 3), 2), batched_indices(rng, (4, 1), None, 0, 5), batched(rng, (4, 3), 2)
    assert check_vmap(I.scatter_add_p, [x, indices, updates], [2, None, 2], params) == [2]
    fn = check_vmap_symbolic(I.scatter_add_p, [x, indices, updates], [2, None, 2], params)
    assert [op.prim.name for op in fn.body.ops] == ["scatter_add"]  # nothing to move: no transpose
    fn = check_vmap_symbolic(I.scatter_add_p, [x, indices, np.moveaxis(updates, 2, 0)], [2, None, 0], params)
    assert [op.prim.name for op in fn.body.ops] == ["transpose", "scatter_add"]


def test_scatter_symbolic_with_batched_indices(rng):
    dn = sdn((1,), (0,), (0,))
    params = dict(dimension_numbers=dn, mode=CLIP, indices_are_sorted=False, unique_indices=False)
    x, indices, updates = batched(rng, (5, 3), None), batched_indices(rng, (4, 1), 1, 0, 5), batched(rng, (4, 3), 0)
    check_vmap_symbolic(I.scatter_max_p, [x, indices, updates], [None, 1, 0], params)


# -- batch sizes 1 and 0 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 0])
def test_small_batches(size, rng):
    params = gather_params(gdn((1,), (0,), (0,)), (1, 3), CLIP)
    for dims in dims_cases([2, 2]):
        x = batched(rng, (5, 3), dims[0], size=size)
        indices = batched_indices(rng, (4, 1), dims[1], 0, 5, size=size)
        check_vmap(I.gather_p, [x, indices], dims, params)
    params = dict(dimension_numbers=sdn((1,), (0,), (0,)), mode=FILL, indices_are_sorted=False, unique_indices=False)
    for dims in dims_cases([2, 2, 2], limit=14):
        x, updates = batched(rng, (5, 3), dims[0], size=size), batched(rng, (4, 3), dims[2], size=size)
        check_vmap(I.scatter_add_p, [x, batched_indices(rng, (4, 1), dims[1], 0, 5, size=size), updates], dims,
                   params)
    for dims in dims_cases([1, 1, 0]):
        x, update = batched(rng, (5,), dims[0], size=size), batched(rng, (2,), dims[1], size=size)
        starts = batched_indices(rng, (), dims[2], 0, 5, size=size)
        if (dims[0], dims[2]) != (None, None):
            check_vmap(I.dynamic_slice_p, [x, starts], [dims[0], dims[2]], dict(slice_sizes=(2,)))
        check_vmap(I.dynamic_update_slice_p, [x, update, starts], dims)


def test_axis_options_cover_first_middle_last():
    assert axis_options(0) == [None, 0]
    assert axis_options(2) == [None, 0, 1, 2]
