"""Indexing primitives: slices, dynamic slices, gather and scatter against oracles written from XLA's
definitions element by element (float64 data, so results match exactly), the shape rule against the
implementation on every call, 0-d and empty operands, out-of-bounds modes, and bad operands."""

import numpy as np
import pytest

from srcjax.transpiler.primitives import indexing as I
from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(0)
CLIP, FILL, PROMISE = I.GatherScatterMode.CLIP, I.GatherScatterMode.FILL_OR_DROP, I.GatherScatterMode.PROMISE_IN_BOUNDS


def run(prim, *args, **params):
    """The implementation's result, after checking it has exactly the type the shape rule gives."""
    rule = prim.abstract_eval(*(TensorType(np.asarray(a).dtype, np.shape(a)) for a in args), **params)
    out = np.asarray(prim.impl(*args, **params))
    assert (out.shape, out.dtype) == (rule.shape, rule.dtype), f"{prim}: {out.shape} {out.dtype} vs {rule}"
    return out


def data(shape, dtype=np.float64):
    return RNG.integers(-50, 50, size=shape).astype(dtype)


# -- slice, dynamic_slice, dynamic_update_slice -----------------------------------------------------------
@pytest.mark.parametrize("shape, starts, limits, strides", [
    ((5,), (1,), (4,), None),
    ((5, 6), (0, 1), (5, 6), (2, 3)),
    ((5, 6), (2, 6), (2, 6), None),  # empty
    ((), (), (), None),
    ((0, 3), (0, 1), (0, 3), (1, 1)),
    ((7,), (1,), (7,), (4,)),
])
def test_slice(shape, starts, limits, strides):
    x = data(shape)
    out = run(I.slice_p, x, start_indices=starts, limit_indices=limits, strides=strides)
    steps = strides or (1,) * len(shape)
    np.testing.assert_array_equal(out, x[tuple(slice(a, b, c) for a, b, c in zip(starts, limits, steps))])


@pytest.mark.parametrize("shape, starts, sizes, expected_lows", [
    ((6,), (2,), (3,), (2,)),
    ((6,), (5,), (3,), (3,)),  # clamped so the window fits
    ((6,), (-4,), (3,), (0,)),  # negative starts clamp to 0 (wrapping is lax's job)
    ((4, 5), (1, 9), (2, 5), (1, 0)),
    ((), (), (), ()),
    ((3, 0), (1, 0), (2, 0), (1, 0)),
])
def test_dynamic_slice_clamps(shape, starts, sizes, expected_lows):
    x = data(shape)
    starts = [np.int32(s) for s in starts]
    out = run(I.dynamic_slice_p, x, *starts, slice_sizes=sizes)
    np.testing.assert_array_equal(out, x[tuple(slice(lo, lo + k) for lo, k in zip(expected_lows, sizes))])


@pytest.mark.parametrize("shape, update_shape, starts, expected_lows", [
    ((6,), (2,), (1,), (1,)),
    ((6,), (2,), (9,), (4,)),
    ((4, 5), (2, 3), (-1, 4), (0, 2)),
    ((), (), (), ()),
    ((3, 4), (0, 2), (1, 1), (1, 1)),
])
def test_dynamic_update_slice_clamps(shape, update_shape, starts, expected_lows):
    x, u = data(shape), data(update_shape) + 1000
    before = x.copy()
    out = run(I.dynamic_update_slice_p, x, u, *[np.int64(s) for s in starts])
    want = x.copy()
    want[tuple(slice(lo, lo + k) for lo, k in zip(expected_lows, update_shape))] = u
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(x, before)  # the operand is not written


# -- gather ----------------------------------------------------------------------------------------------
def gather_oracle(x, indices, dn, slice_sizes, mode, fill):
    """XLA's gather, one output element at a time."""
    batch_shape = indices.shape[:-1]
    windowed = [a for a in range(x.ndim) if a not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    rank = len(batch_shape) + len(dn.offset_dims)
    window, batch = iter([slice_sizes[a] for a in windowed]), iter(batch_shape)
    out_shape = [next(window) if i in dn.offset_dims else next(batch) for i in range(rank)]
    out = np.zeros(out_shape, x.dtype)
    for out_index in np.ndindex(*out_shape):
        batch_index = tuple(out_index[i] for i in range(rank) if i not in dn.offset_dims)
        offsets = [out_index[i] for i in dn.offset_dims]
        vector = indices[batch_index]
        start = [0] * x.ndim
        for k, axis in enumerate(dn.start_index_map):
            start[axis] = int(vector[k])
        for axis, b in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            start[axis] = batch_index[b]
        fits = all(0 <= start[a] <= x.shape[a] - slice_sizes[a] for a in dn.start_index_map)
        start = [min(max(s, 0), n - k) for s, n, k in zip(start, x.shape, slice_sizes)]
        for j, axis in enumerate(windowed):
            start[axis] += offsets[j]
        out[out_index] = x[tuple(start)] if fits or mode != FILL else fill
    return out


G = I.GatherDimensionNumbers
# (label, operand shape, indices, dimension numbers, slice sizes)
GATHERS = [
    ("rows", (4, 5), [[1], [3], [7], [-2]], G((1,), (0,), (0,)), (1, 5)),
    ("partial rows", (4, 5), [[1], [3], [7], [-2]], G((1,), (0,), (0,)), (1, 3)),
    ("columns first", (4, 5), [[1], [4]], G((0,), (1,), (1,)), (4, 1)),
    ("points", (4, 5, 6), [[1, 2], [3, 0], [2, 4]], G((1,), (0, 2), (0, 2)), (1, 5, 1)),
    ("2-d batch, map reordered", (4, 5, 6), [[[1, 2], [3, 0]], [[2, 4], [0, 9]]], G((2, 3), (0,), (2, 0)), (1, 3, 2)),
    ("offsets first", (4, 5, 6), [[[1, 2], [3, 0]], [[2, 4], [0, 9]]], G((0, 3), (1,), (1, 0)), (2, 1, 2)),
    ("batching dims", (3, 5, 6), [[[1], [3]], [[2], [4]], [[0], [9]]], G((2,), (1,), (1,), (0,), (0,)), (1, 1, 6)),
    ("batching dim in the middle", (5, 3, 6), [[[1], [3]], [[2], [4]], [[0], [9]]], G((2,), (0,), (0,), (1,), (0,)),
     (1, 1, 4)),
    ("no indices", (5,), np.zeros((0, 1)), G((), (0,), (0,)), (1,)),
    ("0-d operand", (), np.zeros((3, 0)), G((), (), ()), ()),
    ("empty index vectors", (4, 5), np.zeros((2, 3, 0)), G((2, 3), (), ()), (2, 2)),
    ("empty operand axis", (0, 5), np.zeros((2, 1)), G((1, 2), (), (1,)), (0, 2)),
]


@pytest.mark.parametrize("mode", [CLIP, FILL, PROMISE])
@pytest.mark.parametrize("label, shape, indices, dn, sizes", GATHERS, ids=[c[0] for c in GATHERS])
def test_gather_against_definition(label, shape, indices, dn, sizes, mode):
    x, indices = data(shape), np.asarray(indices, np.int32)
    fill = -999.0 if mode == FILL else None
    out = run(I.gather_p, x, indices, dimension_numbers=dn, slice_sizes=sizes, mode=mode, fill_value=fill)
    np.testing.assert_array_equal(out, gather_oracle(x, indices, dn, sizes, mode, fill))


@pytest.mark.parametrize("dtype, fill", [(np.float32, np.nan), (np.float16, np.nan), (np.complex64, np.nan),
                                         (np.int8, -128), (np.int32, -2**31), (np.uint8, 255), (np.bool_, True)])
def test_gather_default_fill_values(dtype, fill):
    # recorded from jax.lax.gather(..., mode='fill'): NaN, the most negative int, the largest uint, True
    x = np.zeros(5, dtype)
    out = run(I.gather_p, x, np.array([[7], [1]]), dimension_numbers=G((1,), (), (0,)), slice_sizes=(2,),
              mode=FILL, fill_value=None)
    np.testing.assert_array_equal(out[0], np.full(2, fill, dtype))
    np.testing.assert_array_equal(out[1], np.zeros(2, dtype))


def test_gather_window_must_fit_to_count_as_in_bounds():
    # recorded from JAX: arange(5.) gathering windows of 2 at 3, 4, -1, 5 gives [3,4] / fill / fill / fill
    x = np.arange(5.0)
    out = run(I.gather_p, x, np.array([[3], [4], [-1], [5]]), dimension_numbers=G((1,), (), (0,)),
              slice_sizes=(2,), mode=FILL, fill_value=None)
    np.testing.assert_array_equal(out, [[3, 4], [np.nan, np.nan], [np.nan, np.nan], [np.nan, np.nan]])
    clipped = run(I.gather_p, x, np.array([[4], [-1]]), dimension_numbers=G((1,), (), (0,)), slice_sizes=(2,),
                  mode=CLIP, fill_value=None)
    np.testing.assert_array_equal(clipped, [[3, 4], [0, 1]])


# -- scatter ---------------------------------------------------------------------------------------------
COMBINE = {"scatter": lambda old, new: new, "scatter_add": np.add, "scatter_mul": np.multiply,
           "scatter_min": np.minimum, "scatter_max": np.maximum}


def scatter_oracle(name, x, indices, updates, dn, mode):
    """XLA's scatter, one update element at a time (windows that do not fit are skipped unless clipping)."""
    out = x.copy()
    windowed = [a for a in range(x.ndim) if a not in dn.inserted_window_dims + dn.operand_batching_dims]
    sizes = [1] * x.ndim
    for axis, u in zip(windowed, dn.update_window_dims):
        sizes[axis] = updates.shape[u]
    scatter_axes = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
    for u_index in np.ndindex(*updates.shape):
        batch_index = tuple(u_index[i] for i in scatter_axes)
        vector = indices[batch_index]
        start = [0] * x.ndim
        for k, axis in enumerate(dn.scatter_dims_to_operand_dims):
            start[axis] = int(vector[k])
        for axis, b in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            start[axis] = batch_index[b]
        if mode == CLIP:
            start = [min(max(s, 0), n - k) for s, n, k in zip(start, x.shape, sizes)]
        if not all(0 <= start[a] <= x.shape[a] - sizes[a] for a in dn.scatter_dims_to_operand_dims):
            continue
        for axis, u in zip(windowed, dn.update_window_dims):
            start[axis] += u_index[u]
        out[tuple(start)] = COMBINE[name](out[tuple(start)], updates[u_index])
    return out


S = I.ScatterDimensionNumbers
# (label, operand shape, indices, updates shape, dimension numbers); indices are unique so replacement is exact
SCATTERS = [
    ("rows", (4, 5), [[1], [3], [7], [-2]], (4, 5), S((1,), (0,), (0,))),
    ("partial rows", (4, 5), [[1], [2], [7], [-2]], (4, 3), S((1,), (0,), (0,))),
    ("windows", (4, 5, 6), [[1, 2], [3, 0], [2, 4], [0, 5]], (4, 5, 2), S((1, 2), (0,), (0, 2))),
    ("batching dims", (3, 5, 6), [[[1], [3]], [[2], [4]], [[0], [9]]], (3, 2, 4), S((2,), (1,), (1,), (0,), (0,))),
    ("points", (6,), [[1], [0], [5], [6]], (4,), S((), (0,), (0,))),
    ("no updates", (6,), np.zeros((0, 1)), (0,), S((), (0,), (0,))),
    ("0-d operand", (), np.zeros((3, 0)), (3,), S((), (), ())),
]


@pytest.mark.parametrize("mode", [CLIP, FILL, PROMISE])
@pytest.mark.parametrize("name", list(COMBINE))
@pytest.mark.parametrize("label, shape, indices, updates_shape, dn", SCATTERS, ids=[c[0] for c in SCATTERS])
def test_scatter_against_definition(label, shape, indices, updates_shape, dn, name, mode):
    if name == "scatter" and mode == CLIP and label != "points":
        pytest.skip("clipping makes windows overlap, and overlapping replacements have no defined order")
    x, indices, updates = data(shape), np.asarray(indices, np.int64), data(updates_shape)
    prim = getattr(I, name + "_p")
    out = run(prim, x, indices, updates, dimension_numbers=dn, mode=mode)
    np.testing.assert_array_equal(out, scatter_oracle(name, x, indices, updates, dn, mode))


def test_scatter_add_accumulates_duplicates_and_wraps_integers():
    x = np.zeros(3, np.int8)
    out = run(I.scatter_add_p, x, np.array([[1]] * 300), np.ones(300, np.int8), dimension_numbers=S((), (0,), (0,)))
    np.testing.assert_array_equal(out, [0, 300 - 256, 0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_scatter_add_of_floats_sums_repeats_in_order_in_their_dtype(dtype):
    # XLA's scatter (so JAX's) adds each update to the running element in turn, rounding each time: summing
    # the updates in float64 first rounds differently (by an ulp or more) where an index repeats
    rng = np.random.default_rng(1)
    x, updates = rng.standard_normal(3).astype(dtype), rng.standard_normal(200).astype(dtype)
    idx = rng.integers(0, 3, (200, 1))
    want = x.copy()
    for i, u in zip(idx[:, 0], updates):
        want[i] = want[i] + u
    out = run(I.scatter_add_p, x, idx, updates, dimension_numbers=S((), (0,), (0,)))
    np.testing.assert_array_equal(out, want)


def test_scatter_on_bools_combines_logically():
    x = np.array([False, True, False])
    idx, upd = np.array([[0], [1], [2]]), np.array([True, False, False])
    dn = S((), (0,), (0,))
    np.testing.assert_array_equal(run(I.scatter_add_p, x, idx, upd, dimension_numbers=dn), [True, True, False])
    np.testing.assert_array_equal(run(I.scatter_mul_p, x, idx, upd, dimension_numbers=dn), [False, False, False])


def test_scatter_drops_windows_that_do_not_fit():
    # recorded from JAX: scatter_add of [1, 2] as a window into zeros(5) at 3, 4, -1, 5 (default mode)
    dn = S((1,), (), (0,))
    for start, want in [(3, [0, 0, 0, 1, 2]), (4, [0] * 5), (-1, [0] * 5), (5, [0] * 5)]:
        out = run(I.scatter_add_p, np.zeros(5), np.array([[start]]), np.array([[1.0, 2.0]]), dimension_numbers=dn)
        np.testing.assert_array_equal(out, want)
    clipped = run(I.scatter_add_p, np.zeros(5), np.array([[-1]]), np.array([[1.0, 2.0]]), dimension_numbers=dn,
                  mode=CLIP)
    np.testing.assert_array_equal(clipped, [1, 2, 0, 0, 0])


# -- modes and parameters --------------------------------------------------------------------------------
def test_mode_from_any():
    assert I.GatherScatterMode.from_any(None) == FILL
    assert I.GatherScatterMode.from_any("drop") == FILL
    assert I.GatherScatterMode.from_any("clip") == CLIP
    assert I.GatherScatterMode.from_any("promise_in_bounds") == PROMISE
    with pytest.raises(ValueError, match="unknown gather/scatter mode"):
        I.GatherScatterMode.from_any("nearest")


def test_dimension_numbers_are_hashable_tuples():
    dn = G([1], [0], [0])
    assert dn.offset_dims == (1,) and hash(dn) == hash(G((1,), (0,), (0,)))


# -- bad operands ----------------------------------------------------------------------------------------
T = TensorType


def gather_type(operand, indices, dn, sizes):
    return I.gather_p.abstract_eval(operand, indices, dimension_numbers=dn, slice_sizes=sizes)


@pytest.mark.parametrize("call, error, message", [
    (lambda: I.slice_p.abstract_eval(T(np.float32, (5,)), start_indices=(2,), limit_indices=(6,), strides=None),
     PrimitiveValueError, r"limit \(6\) <= size \(5\)"),
    (lambda: I.slice_p.abstract_eval(T(np.float32, (5,)), start_indices=(0,), limit_indices=(5,), strides=(0,)),
     PrimitiveValueError, "strides .* must be positive"),
    (lambda: I.slice_p.abstract_eval(T(np.float32, (5, 2)), start_indices=(0,), limit_indices=(5,), strides=None),
     PrimitiveValueError, "one entry per operand axis"),
    (lambda: I.dynamic_slice_p.abstract_eval(T(np.float32, (5,)), T(np.float32, ()), slice_sizes=(2,)),
     PrimitiveTypeError, "must be an integer scalar"),
    (lambda: I.dynamic_slice_p.abstract_eval(T(np.float32, (5,)), T(np.int32, ()), slice_sizes=(6,)),
     PrimitiveValueError, "slice_sizes"),
    (lambda: I.dynamic_slice_p.abstract_eval(T(np.float32, (5, 5)), T(np.int32, ()), T(np.int8, ()),
                                             slice_sizes=(1, 1)), PrimitiveTypeError, "one integer dtype"),
    (lambda: I.dynamic_update_slice_p.abstract_eval(T(np.float32, (5,)), T(np.float64, (2,)), T(np.int32, ())),
     PrimitiveTypeError, "operand's dtype"),
    (lambda: I.dynamic_update_slice_p.abstract_eval(T(np.float32, (5,)), T(np.float32, (6,)), T(np.int32, ())),
     PrimitiveValueError, "fit inside"),
    (lambda: gather_type(T(np.float32, (4, 5)), T(np.float32, (2, 1)), G((1,), (0,), (0,)), (1, 5)),
     PrimitiveValueError, "indices must be integers"),  # (JAX: a ValueError)
    (lambda: gather_type(T(np.float32, (4, 5)), T(np.int32, (2, 2)), G((1,), (0,), (0,)), (1, 5)),
     PrimitiveValueError, "index vector"),
    (lambda: gather_type(T(np.float32, (4, 5)), T(np.int32, (2, 1)), G((1,), (0,), (0,)), (2, 5)),
     PrimitiveValueError, "slice size must be 1"),
    (lambda: gather_type(T(np.float32, (4, 5)), T(np.int32, (2, 1)), G((1,), (0,), (0,)), (1, 6)),
     PrimitiveValueError, "between 0 and the operand's shape"),
    (lambda: gather_type(T(np.float32, (4, 5)), T(np.int32, (2, 1)), G((), (0,), (0,)), (1, 5)),
     PrimitiveValueError, "offset_dims"),
    (lambda: gather_type(T(np.float32, (4, 5)), T(np.int32, (2, 1)), ((1,), (0,), (0,)), (1, 5)),
     PrimitiveTypeError, "GatherDimensionNumbers"),
    (lambda: gather_type(T(np.float32, (3, 5)), T(np.int32, (4, 1)), G((1,), (), (1,), (0,), (0,)), (1, 1)),
     PrimitiveValueError, "differ in size"),
    (lambda: I.scatter_add_p.abstract_eval(T(np.float32, (4,)), T(np.int32, (2, 1)), T(np.float64, (2,)),
                                           dimension_numbers=S((), (0,), (0,))), PrimitiveTypeError, "operand's dtype"),
    (lambda: I.scatter_add_p.abstract_eval(T(np.float32, (4,)), T(np.int32, (2, 1)), T(np.float32, (3,)),
                                           dimension_numbers=S((), (0,), (0,))), PrimitiveValueError,
     "must match the batch axes"),
    (lambda: I.scatter_p.abstract_eval(T(np.float32, (4, 2)), T(np.int32, (2, 1)), T(np.float32, (2, 3)),
                                       dimension_numbers=S((1,), (0,), (0,))), PrimitiveValueError, "larger than"),
    (lambda: I.scatter_max_p.abstract_eval(T(np.complex64, (4,)), T(np.int32, (2, 1)), T(np.complex64, (2,)),
                                           dimension_numbers=S((), (0,), (0,))), PrimitiveTypeError, "complex64"),
])
def test_bad_operands(call, error, message):
    with pytest.raises(error, match=message):
        call()
