"""Reduction primitives: implementations against NumPy in float64 (exact for integers and bools, where
integer arithmetic wraps as XLA's does), the shape rule against the implementation on every call, 0-d and
empty operands, XLA's orders for NaN and -0.0 (recorded from JAX 0.10.2), and bad operands."""

import numpy as np
import pytest

from srcjax.transpiler.primitives import reduce as R
from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(0)
INTS = [np.int8, np.uint8, np.int32]
FLOATS = [np.float16, np.float32, np.float64]


def run(prim, *args, **params):
    """The implementation's results, after checking they have exactly the types the shape rule gives."""
    rule = prim.abstract_eval(*(TensorType(a.dtype, a.shape) for a in args), **params)
    with np.errstate(all="ignore"):
        out = prim.impl(*args, **params)
    outs, rules = (list(out), rule) if prim.multiple_results else ([out], [rule])
    for value, typ in zip(outs, rules, strict=True):
        assert (value.shape, value.dtype) == (typ.shape, typ.dtype), f"{prim}: {value.shape} {value.dtype} vs {typ}"
    return out


def data(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        return RNG.integers(0 if dtype.kind == "u" else -9, 10, size=shape).astype(dtype)
    x = RNG.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def close(actual, expected, dtype):
    dtype = np.dtype(dtype)
    assert actual.dtype == dtype
    if dtype.kind in "fc":
        tol = {2: 2e-2, 4: 2e-5, 8: 1e-12, 16: 1e-12}[dtype.itemsize if dtype.kind == "f" else dtype.itemsize // 2]
        np.testing.assert_allclose(actual.astype(np.complex128), np.asarray(expected, np.complex128), rtol=tol,
                                   atol=tol)
    else:
        np.testing.assert_array_equal(actual, np.asarray(expected).astype(dtype))


def wide(x):
    """x in float64 (complex128), or int64 for integers: the oracle's arithmetic."""
    return x.astype({"b": np.bool_, "i": np.int64, "u": np.int64, "f": np.float64, "c": np.complex128}[x.dtype.kind])


# -- reductions over axes -----------------------------------------------------------------------------------
# (primitive, dtypes, oracle on widened values and a tuple of axes)
REDUCTIONS = [
    (R.reduce_sum_p, INTS + FLOATS + [np.complex64], lambda x, axes: np.sum(x, axes)),
    (R.reduce_prod_p, INTS + FLOATS + [np.complex64], lambda x, axes: np.prod(x, axes)),
    (R.reduce_max_p, [np.bool_] + INTS + FLOATS, lambda x, axes: np.max(x, axes) if x.size else None),
    (R.reduce_min_p, [np.bool_] + INTS + FLOATS, lambda x, axes: np.min(x, axes) if x.size else None),
    (R.reduce_and_p, [np.bool_] + INTS, lambda x, axes: np.bitwise_and.reduce(x, axes)),
    (R.reduce_or_p, [np.bool_] + INTS, lambda x, axes: np.bitwise_or.reduce(x, axes)),
    (R.reduce_xor_p, [np.bool_] + INTS, lambda x, axes: np.bitwise_xor.reduce(x, axes)),
]
SHAPES_AND_AXES = [((), ()), ((5,), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)), ((2, 3, 4), (0, 2)), ((2, 3), ()),
                   ((0, 3), (1,))]


@pytest.mark.parametrize("shape, axes", SHAPES_AND_AXES, ids=str)
@pytest.mark.parametrize("prim, dtypes, oracle", REDUCTIONS, ids=[r[0].name for r in REDUCTIONS])
def test_reduction_matches_numpy(prim, dtypes, oracle, shape, axes):
    for dtype in dtypes:
        x = data(shape, dtype)
        expected = oracle(wide(x), axes)
        if expected is not None:  # (empty max/min is checked against the identities below)
            close(run(prim, x, axes=axes), expected, dtype)


def test_integer_sums_wrap_like_xla():
    x = np.array([100, 100, 100], np.int8)
    assert run(R.reduce_sum_p, x, axes=(0,)) == np.int8(300 - 256)
    assert run(R.reduce_prod_p, np.array([16, 16], np.uint8), axes=(0,)) == 0


@pytest.mark.parametrize("prim, dtype, identity", [
    (R.reduce_max_p, np.float32, -np.inf), (R.reduce_min_p, np.float32, np.inf), (R.reduce_max_p, np.int8, -128),
    (R.reduce_min_p, np.uint8, 255), (R.reduce_max_p, np.bool_, False), (R.reduce_min_p, np.bool_, True),
    (R.reduce_sum_p, np.float32, 0), (R.reduce_prod_p, np.int32, 1), (R.reduce_and_p, np.uint8, 255),
    (R.reduce_and_p, np.bool_, True), (R.reduce_or_p, np.int32, 0),
])
def test_empty_reductions_give_the_identity(prim, dtype, identity):
    out = run(prim, np.zeros((0, 2), dtype), axes=(0,))
    np.testing.assert_array_equal(out, np.full(2, identity, dtype))


def test_max_and_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.float32)
    np.testing.assert_array_equal(run(R.reduce_max_p, x, axes=(1,)), [np.nan, 3.0])
    np.testing.assert_array_equal(run(R.reduce_min_p, x, axes=(1,)), [np.nan, 1.0])


def test_float16_sums_accumulate_in_float32():
    x = np.full(4096, 1.0, np.float16)  # in float16 itself the running sum sticks at 2048
    assert run(R.reduce_sum_p, x, axes=(0,)) == np.float16(4096)


# -- arg-reductions -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("prim, oracle", [(R.argmax_p, np.argmax), (R.argmin_p, np.argmin)], ids=["max", "min"])
@pytest.mark.parametrize("dtype", [np.bool_] + INTS + FLOATS)
@pytest.mark.parametrize("shape, axis", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 2), ((0, 3), 1)])
def test_arg_reduction_matches_numpy(prim, oracle, dtype, shape, axis):
    x = data(shape, dtype)
    for index_dtype in (np.int32, np.uint8):
        out = run(prim, x, axes=(axis,), index_dtype=np.dtype(index_dtype))
        np.testing.assert_array_equal(out, oracle(wide(x), axis).astype(index_dtype))


def test_arg_reductions_return_the_first_nan_and_the_first_tie():
    # recorded from jax.lax.argmax / argmin
    x = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    assert run(R.argmax_p, x, axes=(0,), index_dtype=np.dtype(np.int32)) == 1
    assert run(R.argmin_p, np.array([1.0, np.nan, -3.0, np.nan], np.float32), axes=(0,),
               index_dtype=np.dtype(np.int32)) == 1
    assert run(R.argmax_p, np.array([2, 5, 5, 1], np.int8), axes=(0,), index_dtype=np.dtype(np.int32)) == 1


# -- cumulative scans ---------------------------------------------------------------------------------------
SCANS = [
    (R.cumsum_p, INTS + FLOATS + [np.complex64], np.cumsum),
    (R.cumprod_p, INTS + FLOATS, np.cumprod),
    (R.cummax_p, INTS + FLOATS, np.maximum.accumulate),
    (R.cummin_p, INTS + FLOATS, np.minimum.accumulate),
    (R.cumlogsumexp_p, FLOATS, np.logaddexp.accumulate),
]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape, axis", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((0,), 0), ((2, 0), 0)])
@pytest.mark.parametrize("prim, dtypes, oracle", SCANS, ids=[s[0].name for s in SCANS])
def test_scan_matches_numpy(prim, dtypes, oracle, shape, axis, reverse):
    for dtype in dtypes:
        x = data(shape, dtype)
        x64 = wide(x)
        expected = np.flip(oracle(np.flip(x64, axis), axis), axis) if reverse else oracle(x64, axis)
        if np.dtype(dtype).kind in "iu":
            expected = expected.astype(dtype)  # wraps
        close(run(prim, x, axis=axis, reverse=reverse), expected, dtype)


def test_float16_running_sums_accumulate_wide():
    # a float16 running sum of 0.1s stalls at 256 (256 + 0.1 rounds back to 256); JAX 0.10.2 gives 299.0 here,
    # the float64 running value rounded once gives 300.0 (3000 * float16(0.1) = 299.93)
    x = np.full(3000, 0.1, np.float16)
    assert run(R.cumsum_p, x, axis=0, reverse=False)[-1] == np.float16(np.sum(x, dtype=np.float64))
    assert run(R.cumsum_p, x, axis=0, reverse=True)[0] == np.float16(300.0)


def test_cummax_propagates_nan():
    out = run(R.cummax_p, np.array([1.0, np.nan, 3.0], np.float32), axis=0, reverse=False)
    np.testing.assert_array_equal(out, [1.0, np.nan, np.nan])


def test_max_and_min_order_negative_zero_below_zero_as_xla():
    # recorded from JAX 0.10.2: max picks 0.0 and min -0.0 whichever comes first (NumPy keeps the first)
    for x, max_, min_, cummax, cummin in [
        ([0.0, -0.0], 0.0, -0.0, [0.0, 0.0], [0.0, -0.0]),
        ([-0.0, 0.0], 0.0, -0.0, [-0.0, 0.0], [-0.0, -0.0]),
        ([-0.0, -0.0, 0.0, -0.0], 0.0, -0.0, [-0.0, -0.0, 0.0, 0.0], [-0.0, -0.0, -0.0, -0.0]),
    ]:
        x = np.array(x, np.float32)
        got = [run(R.reduce_max_p, x, axes=(0,)), run(R.reduce_min_p, x, axes=(0,)),
               run(R.cummax_p, x, axis=0, reverse=False), run(R.cummin_p, x, axis=0, reverse=False)]
        for value, want in zip(got, [max_, min_, cummax, cummin], strict=True):
            np.testing.assert_array_equal(np.signbit(value), np.signbit(want))
    both = np.array([[0.0, -0.0], [-0.0, -0.0]], np.float32)
    np.testing.assert_array_equal(np.signbit(run(R.reduce_max_p, both, axes=(1,))), [False, True])


@pytest.mark.parametrize("width", [2, 70], ids=["small_window", "large_window"])
def test_window_max_and_min_order_negative_zero_below_zero(width):
    # as JAX 0.10.2's reduce_window: a window's max is 0.0 if it holds one, its min -0.0 (the small windows
    # combine one strided slice per offset, the large ones reduce a sliding view)
    x = np.array([0.0, -0.0] * width, np.float32)
    params = dict(window_dimensions=(width,), window_strides=(1,), padding=((0, 0),), base_dilation=(1,),
                  window_dilation=(1,))
    assert not np.signbit(run(R.reduce_window_max_p, x, **params)).any()
    assert np.signbit(run(R.reduce_window_min_p, x[::-1].copy(), **params)).all()


# -- sort and top_k -----------------------------------------------------------------------------------------
def sort_key(value):
    """XLA's order for one element: NaNs last (all equal), -0.0 == 0.0, complex by real then imaginary part."""
    if isinstance(value, complex | np.complexfloating):
        return sort_key(value.real) + sort_key(value.imag)
    if isinstance(value, float | np.floating):
        return (bool(np.isnan(value)), 0.0 if np.isnan(value) else float(value))
    return (value,)


def sort_oracle(operands, num_keys):
    """Python's stable sort of the positions by the key tuples, applied to every operand (1-d)."""
    n = len(operands[0])
    order = sorted(range(n), key=lambda i: sum((sort_key(k[i]) for k in operands[:num_keys]), ()))
    return [op[order] for op in operands]


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16, np.float32, np.complex64])
def test_sort_matches_a_stable_python_sort(dtype):
    x = data((20,), dtype)
    if np.dtype(dtype).kind in "fc":
        x[[2, 7, 11]] = np.nan
        x[[3, 4]] = [0.0, -0.0]
    payload = np.arange(20, dtype=np.int32)
    out = run(R.sort_p, x, payload, dimension=0, is_stable=True, num_keys=1)
    for actual, expected in zip(out, sort_oracle([x, payload], 1), strict=True):
        np.testing.assert_array_equal(actual, expected)


def test_sort_with_several_keys_and_along_an_inner_axis():
    keys = RNG.integers(0, 3, size=(3, 12)).astype(np.int8)
    second = RNG.integers(0, 3, size=(3, 12)).astype(np.float32)
    payload = np.broadcast_to(np.arange(12, dtype=np.int32), (3, 12)).copy()
    moved = [np.ascontiguousarray(a.T) for a in (keys, second, payload)]  # sort along axis 0 of (12, 3)
    out = run(R.sort_p, *moved, dimension=0, is_stable=True, num_keys=2)
    for column in range(3):
        expected = sort_oracle([m[:, column] for m in moved], 2)
        for actual, want in zip(out, expected, strict=True):
            np.testing.assert_array_equal(actual[:, column], want)


def test_sort_treats_nans_and_signed_zeros_as_equal():
    # recorded from jax.lax.sort((x, arange), num_keys=1)
    x = np.array([np.nan, -np.nan, 1.0, 0.0, -0.0], np.float32)
    values, index = run(R.sort_p, x, np.arange(5, dtype=np.int32), dimension=0, is_stable=True, num_keys=1)
    np.testing.assert_array_equal(index, [3, 4, 2, 0, 1])


def test_sort_of_empty_and_single_element_axes():
    x = np.zeros((0, 3), np.float32)
    assert run(R.sort_p, x, dimension=0, is_stable=True, num_keys=1)[0].shape == (0, 3)
    np.testing.assert_array_equal(run(R.sort_p, np.array([[2.0], [1.0]]), dimension=1, is_stable=True,
                                      num_keys=1)[0], [[2.0], [1.0]])


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16, np.float32])
@pytest.mark.parametrize("shape, k", [((7,), 3), ((3, 6), 6), ((2, 5), 0), ((0, 4), 2)])
def test_top_k_matches_a_stable_descending_sort(dtype, shape, k):
    x = data(shape, dtype)
    values, indices = run(R.top_k_p, x, k=k)
    rows, batch = x.reshape(-1, shape[-1]), int(np.prod(shape[:-1]))
    for row, got_values, got_indices in zip(rows, values.reshape(batch, k), indices.reshape(batch, k), strict=True):
        order = sorted(range(len(row)), key=lambda i: (-float(row[i]), i))[:k]
        np.testing.assert_array_equal(got_indices, order)
        np.testing.assert_array_equal(got_values, row[order])


def test_top_k_orders_floats_by_their_bits():
    # recorded from jax.lax.top_k(x, 6): NaN is largest, 0.0 beats -0.0, ties keep index order
    x = np.array([1.0, np.nan, -np.inf, np.inf, 3.0, 3.0, -0.0, 0.0], np.float32)
    values, indices = run(R.top_k_p, x, k=6)
    np.testing.assert_array_equal(indices, [1, 3, 4, 5, 0, 7])
    np.testing.assert_array_equal(values, [np.nan, np.inf, 3.0, 3.0, 1.0, 0.0])
    assert run(R.top_k_p, -x, k=1)[1][0] == 2  # negating makes the NaN a -NaN, the smallest, so -(-inf) wins


# -- windowed reductions ------------------------------------------------------------------------------------
def window_oracle(x, identity, reduce, dims, strides, padding, base, dilation):
    """Loops over output positions and window offsets of the padded, base-dilated operand."""
    dilated_shape = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base)]
    dilated = np.full(dilated_shape, identity, dtype=x.dtype)
    dilated[tuple(slice(None, None, b) for b in base)] = x
    padded_shape = [lo + n + hi for n, (lo, hi) in zip(dilated_shape, padding)]
    padded = np.full(padded_shape, identity, dtype=x.dtype)
    padded[tuple(slice(lo, lo + n) for n, (lo, _) in zip(dilated_shape, padding))] = dilated
    extent = [(w - 1) * d + 1 for w, d in zip(dims, dilation)]
    out_shape = [max((p - e) // s + 1, 0) if p >= e else 0 for p, e, s in zip(padded_shape, extent, strides)]
    out = np.empty(out_shape, dtype=x.dtype)
    for index in np.ndindex(*out_shape):
        items = [padded[tuple(i * s + k * d for i, s, k, d in zip(index, strides, offset, dilation))]
                 for offset in np.ndindex(*dims)]
        out[index] = reduce(np.array(items))
    return out


WINDOWS = [  # window_dimensions, window_strides, padding, base_dilation, window_dilation
    ((2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((3, 2), (2, 1), ((1, 1), (0, 2)), (1, 1), (1, 1)),
    ((2, 3), (1, 2), ((2, 1), (0, 3)), (2, 1), (1, 2)),
    ((1, 1), (3, 3), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((5, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),  # taller than the operand: empty result
]


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("prim, identity_of, reduce", [
    (R.reduce_window_sum_p, lambda d: 0, np.sum),
    (R.reduce_window_max_p, lambda d: -np.inf if np.dtype(d).kind == "f" else np.iinfo(d).min, np.max),
    (R.reduce_window_min_p, lambda d: np.inf if np.dtype(d).kind == "f" else np.iinfo(d).max, np.min),
], ids=["sum", "max", "min"])
def test_window_reduction_matches_loops(prim, identity_of, reduce, window):
    dims, strides, padding, base, dilation = window
    for dtype in (np.int8, np.int32, np.float32, np.float64):
        x = data((4, 5), dtype)
        expected = window_oracle(wide(x), identity_of(dtype), reduce, dims, strides, padding, base, dilation)
        if np.dtype(dtype).kind in "iu":
            expected = expected.astype(dtype)
        out = run(prim, x, window_dimensions=dims, window_strides=strides, padding=padding, base_dilation=base,
                  window_dilation=dilation)
        close(out, expected, dtype)


def test_window_max_recorded_from_jax():
    # jax.lax.reduce_window(arange(6.).reshape(2, 3), -inf, lax.max, (2, 2), (1, 1), ((1, 0), (0, 1)), (1, 2))
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out = run(R.reduce_window_max_p, x, window_dimensions=(2, 2), window_strides=(1, 1), padding=((1, 0), (0, 1)),
              base_dilation=(1, 2), window_dilation=(1, 1))
    np.testing.assert_array_equal(out, [[0, 1, 1, 2, 2], [3, 4, 4, 5, 5]])


# -- bad operands -------------------------------------------------------------------------------------------
f32 = TensorType(np.float32, (2, 3))
i32 = np.dtype(np.int32)
W = dict(window_dimensions=(2, 2), window_strides=(1, 1), padding=((0, 0), (0, 0)), base_dilation=(1, 1),
         window_dilation=(1, 1))
BAD = [
    (R.reduce_sum_p, [TensorType(np.bool_, (2,))], dict(axes=(0,)), PrimitiveTypeError, "bool"),
    (R.reduce_sum_p, [f32], dict(axes=(0, 0)), PrimitiveValueError, "repeat"),
    (R.reduce_sum_p, [f32], dict(axes=(2,)), PrimitiveValueError, "out of range"),
    (R.reduce_max_p, [f32], dict(axes=(-1,)), PrimitiveValueError, "out of range"),
    (R.reduce_and_p, [f32], dict(axes=(0,)), PrimitiveTypeError, "float32"),
    (R.argmax_p, [f32], dict(axes=(0, 1), index_dtype=i32), PrimitiveValueError, "exactly one"),
    (R.argmax_p, [TensorType(np.float32, (0, 2))], dict(axes=(0,), index_dtype=i32), PrimitiveValueError, "empty"),
    (R.argmin_p, [f32], dict(axes=(0,), index_dtype=np.dtype(np.float32)), PrimitiveTypeError, "index_dtype"),
    (R.argmax_p, [TensorType(np.complex64, (2,))], dict(axes=(0,), index_dtype=i32), PrimitiveTypeError, "complex"),
    (R.cumsum_p, [TensorType(np.float32, ())], dict(axis=0, reverse=False), PrimitiveValueError, "out of range"),
    (R.cumsum_p, [TensorType(np.bool_, (2,))], dict(axis=0, reverse=False), PrimitiveTypeError, "bool"),
    (R.cumlogsumexp_p, [TensorType(np.int32, (2,))], dict(axis=0, reverse=False), PrimitiveTypeError, "int32"),
    (R.sort_p, [f32, TensorType(np.int32, (3, 2))], dict(dimension=0, is_stable=True, num_keys=1),
     PrimitiveValueError, "one shape"),
    (R.sort_p, [f32], dict(dimension=0, is_stable=True, num_keys=2), PrimitiveValueError, "num_keys"),
    (R.sort_p, [TensorType(np.float32, ())], dict(dimension=0, is_stable=True, num_keys=1), PrimitiveValueError,
     "out of range"),
    (R.sort_p, [], dict(dimension=0, is_stable=True, num_keys=1), PrimitiveTypeError, "at least one"),
    (R.top_k_p, [f32], dict(k=4), PrimitiveValueError, "larger"),
    (R.top_k_p, [f32], dict(k=-1), PrimitiveValueError, "non-negative"),
    (R.top_k_p, [TensorType(np.float32, ())], dict(k=0), PrimitiveValueError, "rank"),
    (R.reduce_window_sum_p, [f32], {**W, "window_dimensions": (2,)}, PrimitiveValueError, "one entry"),
    (R.reduce_window_max_p, [f32], {**W, "window_strides": (0, 1)}, PrimitiveValueError, ">= 1"),
    (R.reduce_window_min_p, [TensorType(np.complex64, (2, 2))], W, PrimitiveTypeError, "complex64"),
]


@pytest.mark.parametrize("prim, types, params, error, message", BAD,
                         ids=[f"{b[0].name}-{i}" for i, b in enumerate(BAD)])
def test_bad_operands_raise_clear_errors(prim, types, params, error, message):
    with pytest.raises(error, match=message) as info:
        prim.abstract_eval(*types, **params)
    assert str(info.value).startswith(prim.name + ":")


def test_shape_rules_keep_the_weak_type_and_drop_axes():
    weak = TensorType(np.float32, (2, 3, 4), True)
    assert R.reduce_sum_p.abstract_eval(weak, axes=(0, 2)) == TensorType(np.float32, (3,), True)
    assert R.cumsum_p.abstract_eval(weak, axis=1, reverse=True) == weak
    assert R.argmax_p.abstract_eval(weak, axes=(1,), index_dtype=i32) == TensorType(np.int32, (2, 4))
    values, indices = R.top_k_p.abstract_eval(weak, k=2)
    assert (values, indices) == (TensorType(np.float32, (2, 3, 2), True), TensorType(np.int32, (2, 3, 2)))
