"""srcjax.numpy sorting and searching, and lax.sort / top_k, against NumPy (exact: sorting only moves
elements) and against outputs recorded with JAX 0.10.2 where JAX's answer is not NumPy's (partition
layouts, descending ties, unique's size= padding); NaNs, 0-d, empty input and bad input."""

import numpy as np
import pytest

import srcjax.numpy as jnp
from srcjax import jit, lax, vmap

RNG = np.random.default_rng(0)
I32 = "int32"


def a(x, dtype=np.float32):
    return jnp.asarray(np.asarray(x).astype(dtype))


def same(out, expected, dtype=None):
    if dtype is not None:
        assert str(out.dtype) == dtype, (out.dtype, dtype)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))


X = RNG.standard_normal((4, 6))
TIES = RNG.integers(0, 4, size=(4, 6))
WITH_NAN = np.array([3.0, np.nan, -1.0, np.inf, -np.inf, 0.0, np.nan, 2.0])


# -- sort and argsort -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.float16, np.float32, np.complex64])
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_and_stable_argsort_match_numpy(dtype, axis):
    values = TIES if dtype != np.bool_ else TIES > 1
    x = a(values, dtype)
    same(jnp.sort(x, axis=axis), np.sort(values.astype(dtype), axis=axis), np.dtype(dtype).name)
    same(jnp.argsort(x, axis=axis), np.argsort(values.astype(dtype), axis=axis, kind="stable"), I32)


def test_sort_puts_nans_last_and_descending_first():
    same(jnp.sort(a(WITH_NAN)), np.sort(WITH_NAN))
    same(jnp.argsort(a(WITH_NAN)), np.argsort(WITH_NAN, kind="stable"))
    same(jnp.sort(a(WITH_NAN), descending=True), np.sort(WITH_NAN)[::-1])
    # recorded from jnp.argsort(x, descending=True): the largest first, ties (and NaNs) in index order
    same(jnp.argsort(a([1, 3, 1, 3, 2], np.int32), descending=True), [1, 3, 4, 0, 2])
    same(jnp.argsort(a([1.0, np.nan, 3.0, np.nan]), descending=True), [1, 3, 2, 0])
    same(jnp.argsort(a([1, 3, 1, 3, 2], np.int32), descending=True, stable=False), [3, 1, 4, 2, 0])
    same(jnp.argsort(a([[3, 1, 2], [1, 1, 0]], np.int32), axis=0, descending=True), [[0, 0, 0], [1, 1, 1]])


def test_sort_complex_orders_by_real_then_imaginary_part():
    # recorded from JAX: a NaN part sorts last within its own place in the order
    z = np.array([1 + 2j, complex(1, np.nan), 5j, complex(np.nan, 0), 1 + 1j], np.complex64)
    same(jnp.argsort(jnp.asarray(z)), [2, 4, 0, 1, 3])
    same(jnp.sort_complex(a([3, 1, 2], np.int8)), np.array([1, 2, 3], np.complex64), "complex64")
    same(jnp.sort_complex(a([3.0, 1, 2])), [1, 2, 3], "complex64")


def test_sort_keeps_the_weak_type_and_argsort_takes_a_dtype():
    assert jnp.sort(lax.broadcast(2.0, (3,))).weak_type
    same(jnp.argsort(a([3, 1, 2], np.int32), dtype=jnp.int16), [1, 2, 0], "int16")


def test_sort_of_empty_and_flattened_0d():
    same(jnp.sort(a(np.zeros((2, 0))), axis=0), np.zeros((2, 0)))
    same(jnp.sort(a(3.0), axis=None), [3.0])


# -- lexsort -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0])
def test_lexsort_matches_numpy(axis):
    keys = [TIES[0:3], TIES[1:4] % 2, (TIES[0:3] > 1).astype(np.int32)]
    expected = np.lexsort(keys, axis=axis)
    same(jnp.lexsort([a(k, np.int32) for k in keys], axis=axis), expected, I32)
    same(jnp.lexsort(a(np.stack(keys), np.int32), axis=axis), expected, I32)


def test_lexsort_mixes_dtypes():
    primary, secondary = np.array([1.0, 0.0, 1.0, 0.0]), np.array([3, 1, 2, 1])
    same(jnp.lexsort((a(secondary, np.int8), a(primary))), np.lexsort((secondary, primary)))


# -- partition ------------------------------------------------------------------------------------------------
def check_partition(values, kth, axis=-1):
    """What every valid partition satisfies, for partition and for a gathered through argpartition: a
    permutation of each slice, the kth element in place, nothing larger before it nor smaller after it."""
    x = np.asarray(values, np.float32)
    index = np.asarray(jnp.argpartition(a(x), kth, axis=axis))
    np.testing.assert_array_equal(np.sort(index, axis=axis), np.indices(x.shape)[axis])
    kth_sorted = np.take(np.sort(x, axis=axis), [kth], axis=axis)
    for out in (np.asarray(jnp.partition(a(x), kth, axis=axis)), np.take_along_axis(x, index, axis)):
        np.testing.assert_array_equal(np.sort(out, axis=axis), np.sort(x, axis=axis))
        np.testing.assert_array_equal(np.take(out, [kth], axis=axis), kth_sorted)
        before = np.take(out, range(kth), axis=axis)
        after = np.take(out, range(kth + 1, x.shape[axis]), axis=axis)
        assert np.all(before <= kth_sorted) and np.all(after >= kth_sorted)


@pytest.mark.parametrize("kth", [0, 2, 5])
def test_partition_partitions(kth):
    check_partition(X, kth)
    check_partition(TIES, kth)
    check_partition(X.T, min(kth, 3), axis=0)


def test_partition_layout_recorded_from_jax():
    x = a([5, 1, 4, 2, 3, 0, 9, 7], np.int32)
    same(jnp.partition(x, 3), [0, 1, 2, 3, 9, 7, 5, 4], I32)  # top part from the largest down
    same(jnp.argpartition(x, 3), [5, 1, 3, 4, 0, 2, 6, 7], I32)  # top part in index order
    same(jnp.partition(a([5, 1, 4, 2, 3, 0, 255, 7], np.uint8), 3), [0, 1, 2, 3, 255, 7, 5, 4], "uint8")
    same(jnp.partition(a([5.0, np.nan, 4, 2, 3, 0, 9, 7]), 3), [0, 2, 3, 4, np.nan, 9, 7, 5])
    same(jnp.argpartition(a([5.0, np.nan, 4, 2, 3, 0, 9, 7]), 3), [5, 3, 4, 2, 0, 1, 6, 7])
    same(jnp.argpartition(a([1, 1, 1, 1, 1], np.int32), 2), [0, 1, 2, 3, 4])
    same(jnp.partition(a([4, 1, 3, 0], np.int32), -1), [0, 1, 3, 4])
    # JAX 0.10.2 negates to find the bottom part, which breaks on the smallest int32; we sort instead
    same(jnp.partition(a([5, -2**31, 4, 2**31 - 1], np.int32), 1), [-2**31, 4, 2**31 - 1, 5])


def test_argpartition_is_int32_with_x64(x64):
    """JAX's argpartition indices come from top_k: int32 with x64 on too (they were int64)."""
    x = np.array([[3.0, 1, 2, 5, 0], [1.0, 0, 4, 4, 2]])
    same(jnp.argpartition(a(x[0]), 2), [4, 1, 2, 0, 3], I32)
    same(vmap(lambda r: jnp.argpartition(r, 1))(a(x)), [[4, 1, 0, 2, 3], [1, 0, 2, 3, 4]], I32)


# -- searchsorted ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "sort", "compare_all"])
def test_searchsorted_matches_numpy(side, method):
    sorted_a = np.sort(TIES.ravel()).astype(np.float64)
    needles = np.array([[-1, 0, 0.5], [1, 2, 3], [3.5, 4, 10]])
    same(jnp.searchsorted(a(sorted_a), a(needles), side=side, method=method),
         np.searchsorted(sorted_a, needles, side=side), I32)


def test_searchsorted_nans_scalars_sorter_and_empty():
    # recorded from JAX: NaNs sort last and compare equal; -0.0 == 0.0
    base = a([1.0, 2, 2, 3, np.nan])
    needles = a([0.0, 2, 2.5, 3, 4, np.nan])
    same(jnp.searchsorted(base, needles), [0, 1, 3, 3, 4, 4])
    same(jnp.searchsorted(base, needles, side="right"), [0, 3, 3, 4, 4, 5])
    same(jnp.searchsorted(a([-1.0, -0.0, 0.0, 1.0]), a([0.0, -0.0]), side="right"), [3, 3])
    out = jnp.searchsorted(a([1.0, 2, 2, 3]), 2)
    assert out.shape == () and int(out) == 1
    same(jnp.searchsorted(a([1, 2, 3], np.int32), 2.5), 2)  # the array is promoted to float
    same(jnp.searchsorted(a([3.0, 1, 2]), a([2.5, 0]), sorter=a([1, 2, 0], np.int32)), [2, 0])
    same(jnp.searchsorted(a(np.zeros(0)), a([1.0, 2.0])), [0, 0])
    same(jnp.searchsorted(a([1, 2, 3], np.int32), a(np.zeros((0, 2)), np.int32)), np.zeros((0, 2)))


# -- unique -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.float32, np.complex64])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique_matches_numpy(dtype, axis):
    values = (TIES % 2 if axis is not None else TIES) if dtype != np.bool_ else TIES > 1
    values = values.astype(dtype)
    got = jnp.unique(a(values, dtype), return_index=True, return_inverse=True, return_counts=True, axis=axis)
    expected = np.unique(values, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    for g, e in zip(got, expected, strict=True):
        same(g, e)


def test_unique_nans_and_signed_zeros():
    same(jnp.unique(a([3.0, np.nan, 1, np.nan])), [1, 3, np.nan])
    same(jnp.unique(a([3.0, np.nan, 1, np.nan]), equal_nan=False), [1, 3, np.nan, np.nan])
    same(jnp.unique(a([0.0, -0.0, 1.0])), [0.0, 1.0])
    values, index, counts = jnp.unique(a([3.0, np.nan, 1, np.nan]), return_index=True, return_counts=True)
    same(index, [2, 0, 1])
    same(counts, [1, 1, 2])


def test_unique_with_size_recorded_from_jax():
    x = a([3, 1, 3, 2], np.int32)
    values, index, inverse, counts = jnp.unique(x, size=5, return_index=True, return_inverse=True,
                                                return_counts=True)
    same(values, [1, 2, 3, 1, 1], I32)  # padded with the smallest value
    same(index, [1, 3, 0, 1, 1], I32)  # ... and its index
    same(inverse, [2, 0, 2, 1], I32)
    same(counts, [1, 1, 2, 0, 0], I32)
    values, index, counts = jnp.unique(x, size=5, fill_value=-7, return_index=True, return_counts=True)
    same(values, [1, 2, 3, -7, -7])
    same(index, [1, 3, 0, 1, 1])
    values, index, inverse, counts = jnp.unique(x, size=2, return_index=True, return_inverse=True,
                                                return_counts=True)
    same(values, [1, 2])
    same(inverse, [2, 0, 2, 1])  # still indexes the uncut list
    same(counts, [1, 1])
    same(jnp.unique(x, size=0), np.zeros(0))
    rows = a([[1, 2], [0, 5], [1, 2]], np.int32)
    same(jnp.unique(rows, axis=0, size=4, fill_value=9), [[0, 5], [1, 2], [9, 9], [9, 9]])
    same(jnp.unique(rows, axis=0, size=4), [[0, 5], [1, 2], [0, 5], [0, 5]])


def test_unique_shapes_of_inverse_0d_and_empty():
    values, inverse = jnp.unique(a([[1, 2], [0, 5], [1, 2]], np.int32), return_inverse=True)
    same(inverse, [[1, 2], [0, 3], [1, 2]])  # the input's shape
    values, index, inverse, counts = jnp.unique(a(3, np.int32), return_index=True, return_inverse=True,
                                                return_counts=True)
    same(values, [3])
    assert inverse.shape == () and int(inverse) == 0
    same(counts, [1])
    for out in jnp.unique(a(np.zeros(0), np.int32), return_index=True, return_inverse=True, return_counts=True):
        assert out.shape == (0,)
    same(jnp.unique(a(np.zeros((2, 0))), axis=0), np.zeros((1, 0)))
    same(jnp.unique(a([[1.0, np.nan], [1.0, np.nan]]), axis=0), [[1.0, np.nan]])


def test_unique_array_api_forms():
    x = a([[3, 1], [3, 2]], np.int32)
    same(jnp.unique_values(x), [1, 2, 3])
    counts = jnp.unique_counts(x)
    same(counts.values, [1, 2, 3])
    same(counts.counts, [1, 1, 2])
    inverse = jnp.unique_inverse(x)
    same(inverse.inverse_indices, [[2, 0], [2, 1]])
    everything = jnp.unique_all(x)
    same(everything.indices, [1, 3, 0])
    same(everything.inverse_indices, [[2, 0], [2, 1]])
    same(everything.counts, [1, 1, 2])


def test_nans_in_set_operations_recorded_from_jax():
    # JAX 0.10.2: the array API's unique forms keep NaNs apart; the set operations take one NaN per array that has
    # any, and setxor1d keeps one from each array (NaNs never compare equal)
    x, y = a([3.0, np.nan, 1.0, np.nan]), a([1.0, 5.0, np.nan])
    same(jnp.unique_values(x), [1.0, 3.0, np.nan, np.nan])
    same(jnp.unique_counts(x).counts, [1, 1, 1, 1])
    same(jnp.union1d(x, y), [1.0, 3.0, 5.0, np.nan])
    same(jnp.setdiff1d(x, y), [3.0, np.nan])
    same(jnp.setxor1d(x, y), [3.0, 5.0, np.nan, np.nan])
    same(jnp.setxor1d(x, a([1.0])), [3.0, np.nan])
    same(jnp.intersect1d(x, y), [1.0])
    same(jit(lambda p, q: jnp.setxor1d(p, q, size=5, fill_value=-1.0))(x, y), [3.0, 5.0, np.nan, np.nan, -1.0])
    # without fill_value JAX pads with the min of the kept values, NaN once a NaN is kept (not the first value)
    same(jnp.setxor1d(x, y, size=6), [3.0, 5.0, np.nan, np.nan, np.nan, np.nan])
    same(jit(lambda p, q: jnp.setxor1d(p, q, size=4))(a([2.0, 1.0]), a([1.0, 4.0])), [2.0, 4.0, 2.0, 2.0])


# -- lax.sort and lax.top_k --------------------------------------------------------------------------------------
def test_lax_sort_several_operands_and_keys():
    keys, second = a([1, 0, 1, 0], np.int32), a([3.0, 2, 1, 0])
    out = lax.sort((keys, second, a([0, 1, 2, 3], np.int32)), num_keys=2)
    assert isinstance(out, tuple) and len(out) == 3
    same(out[0], [0, 0, 1, 1])
    same(out[1], [0.0, 2, 1, 3])
    same(out[2], [3, 1, 2, 0])
    k, v = lax.sort_key_val(a([3, 1, 2], np.int32), a([0.0, 1, 2]))
    same(k, [1, 2, 3])
    same(v, [1.0, 2, 0])
    same(lax.sort(a(X), dimension=0), np.sort(X.astype(np.float32), axis=0))


def test_lax_top_k():
    values, indices = lax.top_k(a([1.0, np.nan, -np.inf, np.inf, 3, 3, -0.0, 0.0]), 6)
    same(values, [np.nan, np.inf, 3, 3, 1, 0])
    same(indices, [1, 3, 4, 5, 0, 7], I32)
    values, indices = lax.top_k(a([[1.0, 2], [4, 3]]), 1, axis=0)
    same(values, [[4.0, 3.0]])
    same(indices, [[1, 1]])
    values, indices = lax.top_k(a(X), 2)
    same(values, -np.sort(-X.astype(np.float32), axis=1)[:, :2])


@pytest.mark.parametrize("call, error, message", [
    (lambda: jnp.sort(a(3.0)), ValueError, "axis -1 is out of bounds"),
    (lambda: jnp.argsort(a(3.0)), ValueError, "axis -1 is out of bounds"),
    (lambda: jnp.sort(a([3, 1]), order="x"), TypeError, "'order' argument is not supported"),
    (lambda: jnp.lexsort([]), TypeError, "len > 0"),
    (lambda: jnp.lexsort([a([1.0, 2]), a([1, 2, 3])]), ValueError, "same shape"),
    (lambda: jnp.partition(a([4, 1, 3]), 4), ValueError, "out of bounds"),
    (lambda: jnp.partition(a([4, 1, 3]), 1.5), TypeError, "kth must be an int"),
    (lambda: jnp.searchsorted(a([[1, 2, 3]]), 2.5), ValueError, "a should be 1-dimensional"),
    (lambda: jnp.searchsorted(a([1, 2]), 1, side="middle"), ValueError, "invalid argument side='middle'"),
    (lambda: jnp.searchsorted(a([1, 2]), 1, method="foo"), ValueError, "invalid argument method='foo'"),
    (lambda: jnp.unique(a([1, 2]), axis=2), ValueError, "out of bounds"),
    (lambda: lax.sort(a(1.0)), ValueError, "out of bounds"),
    (lambda: lax.top_k(a(1.0), 1), ValueError, "rank >= 1"),
    (lambda: lax.top_k(a([1.0]), 2), ValueError, "larger than the last axis"),
], ids=lambda v: getattr(v, "__name__", str(v))[:24])
def test_bad_input_raises_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- no data needed: the same calls record ops on the symbolic values of a function being compiled --------------
def symbolic(fn, *types):
    """The result types of ``fn`` run on fresh IR parameters of ``types`` (it must not need their data)."""
    from srcjax.transpiler.builder import Builder
    from srcjax.transpiler.primitives import core

    builder = Builder("f")
    params = [builder.param(t) for t in types]
    with core.interpreting(builder):
        out = fn(*params)
    assert builder.function.body.ops, "nothing was recorded"
    return [o.aval for o in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("fn, expected", [
    (lambda x: jnp.argsort(x, axis=0, descending=True), [(I32, (3, 4))]),
    (lambda x: jnp.lexsort(x), [(I32, (4,))]),
    (lambda x: jnp.argpartition(x, 2), [(I32, (3, 4))]),
    (lambda x: jnp.searchsorted(jnp.sort(x, axis=None), x, side="right"), [(I32, (3, 4))]),
    (lambda x: jnp.searchsorted(x, x, sorter=jnp.argsort(x)), None),
    (lambda x: jnp.unique(x, size=5, return_index=True, return_inverse=True, return_counts=True),
     [("float32", (5,)), (I32, (5,)), (I32, (3, 4)), (I32, (5,))]),
    (lambda x: jnp.unique(x, axis=1, size=2, fill_value=0), [("float32", (3, 2))]),
    (lambda x: lax.top_k(x, 2, axis=0), [("float32", (2, 4)), (I32, (2, 4))]),
], ids=lambda v: getattr(v, "__name__", str(v))[:20])
def test_sorting_runs_on_symbolic_values(fn, expected):
    from srcjax.transpiler.types import TensorType

    if expected is None:  # searchsorted needs a 1-d array, even a symbolic one
        with pytest.raises(ValueError, match="1-dimensional"):
            symbolic(fn, TensorType(np.float32, (3, 4)))
        return
    types = symbolic(fn, TensorType(np.float32, (3, 4)))
    assert [(str(t.dtype), t.shape) for t in types] == expected


def test_unique_without_size_needs_concrete_input():
    from srcjax.transpiler.types import TensorType

    from srcjax.errors import ConcretizationTypeError

    with pytest.raises(ConcretizationTypeError, match="pass size="):  # (JAX 0.10.2's class)
        symbolic(jnp.unique, TensorType(np.float32, (3, 4)))
