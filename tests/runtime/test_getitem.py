"""``x[index]``, ``x.at[index]`` and the index functions: a table of index expressions against NumPy, updates
against NumPy's ``ufunc.at``, JAX's out-of-bounds semantics (numbers recorded from jax 0.10), the primitives
chosen (static indexes slice, they do not gather), symbolic operands, and bad indexes."""

import numpy as np
import pytest

import srcjax.runtime.numpy as jnp
from srcjax.runtime.numpy.indexing import IndexUpdateHelper, getitem
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.ir import Value
from srcjax.transpiler.primitives.core import interpreting
from srcjax.transpiler.types import TensorType

X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
MASK0 = np.array([True, False])
MASK2 = (np.arange(12).reshape(3, 4) % 3) == 0
A = np.array

INDEXES = [
    0, -1, (1, 2), (1, -3, 2, 4), slice(None), slice(1, None), slice(None, None, -1), (slice(None), slice(3, 0, -2)),
    (Ellipsis, 1), (1, Ellipsis), (0, Ellipsis, 2), None, (None, 1, None), (Ellipsis, None), (slice(None), None, 0),
    slice(10, 20), slice(-10, 2), (slice(None), slice(None, None, 3)), (Ellipsis, slice(4, None, -3)),
    A([0, 1]), A([[0, 1], [1, 0]]), (slice(None), A([2, 0])), (A([0, 1]), A([1, 2])),
    (A([0, 1]), slice(None), A([1, 2])),
    (0, slice(None), A([0, 1])), (slice(None), 0, A([0, 1])), (A([0, 1]), None, A([1, 2])),
    (slice(None), A([0, 2]), A([[1], [3]])), (Ellipsis, A([1, -1])), A([-1, -2]), (slice(None, None, 2), A([0, 1])),
    (A([1]), slice(None, None, -1), A([0]), slice(1, 4, 2)), (slice(None), A([0, 1]), Ellipsis, A([0, 1])),
    (slice(None), A([0, 1]), A([0, 1]), Ellipsis), MASK0, (slice(None), MASK2), (1, MASK2, slice(None, 2)),
    (MASK0, A([0, 2])), True, False, (slice(None), True), (slice(None), False), [0, 1], [[0, 1]], [True, False],
    A([], np.int32), (slice(None), [], slice(None)), (np.int64(1), np.int32(-1)), A(1), ([0, 1], [2, 0], 1, [3, 4]),
    (slice(None), None, A([0, 1]), None), (Ellipsis,), (),
    # a scalar bool beside another advanced index is one of them (an index array on a new unit axis)
    (True, A([0, 1])), (A([0, 1]), True), (True, slice(None), A([0, 1])), (1, slice(None), True), (True, True),
    (True, False), (Ellipsis, True, A([0, 1])), (None, True, A([0, 1])), (False, slice(None), 0),
]


@pytest.mark.parametrize("index", INDEXES, ids=[repr(i).replace("\n", "") for i in INDEXES])
def test_getitem_matches_numpy(index):
    got = getitem(jnp.asarray(X), index)
    want = X[index]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("index", [A([0, 1]), (A([0, 1]), slice(None), A([2, 2])), (slice(None), A([[0], [2]]), 1)])
def test_srcjax_arrays_index_like_numpy_ones(index):
    if isinstance(index, tuple):
        as_arrays = tuple(jnp.asarray(i) if isinstance(i, np.ndarray) else i for i in index)
    else:
        as_arrays = jnp.asarray(index)
    np.testing.assert_array_equal(np.asarray(getitem(jnp.asarray(X), as_arrays)), X[index])


def test_0d_arrays_are_dynamic_indexes_that_clamp():
    x = jnp.asarray(X)
    np.testing.assert_array_equal(np.asarray(x[jnp.asarray(1), jnp.asarray(-1)]), X[1, -1])
    # recorded from JAX: a traced index out of range is clamped (x[7] of 2 rows is row 1; x[-7] is row 0)
    np.testing.assert_array_equal(np.asarray(x[jnp.asarray(7)]), X[1])
    np.testing.assert_array_equal(np.asarray(x[jnp.asarray(-7)]), X[0])
    np.testing.assert_array_equal(np.asarray(x[:, jnp.asarray(2), 1:3]), X[:, 2, 1:3])


def test_out_of_bounds_array_indexes_clamp():
    # recorded from JAX: jnp.arange(5)[jnp.array([7, -9])] == [4, 0]
    np.testing.assert_array_equal(np.asarray(jnp.arange(5)[jnp.asarray([7, -9])]), [4, 0])


def test_static_indexes_use_slices_not_gathers():
    recorded = []

    class Recorder:
        def process(self, prim, operands, params):
            recorded.append(prim.name)
            from srcjax.transpiler.primitives import core

            return core.base_interpreter().process(prim, operands, params)

    x = jnp.asarray(X)
    with interpreting(Recorder()):
        x[1, ::-2, None, 3]
    assert "gather" not in recorded and "slice" in recorded and "rev" in recorded
    recorded.clear()
    with interpreting(Recorder()):
        x[jnp.asarray(1)]
    assert recorded.count("dynamic_slice") == 1 and "gather" not in recorded


# -- .at updates -----------------------------------------------------------------------------------------
UPDATE_INDEXES = [
    0, -1, (1, 2), slice(None), (slice(1, None, 2),), slice(None, None, -1), (Ellipsis, 1), A([0, 1, 1]),
    A([[0, 1], [1, 0]]), (slice(None), A([2, 0, 2])), (A([0, 1]), A([1, 2])), (A([0, 1]), slice(None), A([1, 2])),
    (0, slice(None), A([0, 1])), (slice(None), 0, A([0, 0, 1])), (None, 1), A([-1, -2]), MASK0, (slice(None), MASK2),
    (slice(3, 0, -2), A([1, 1])), (slice(None), slice(None), slice(None), [4, 0, 4]),
    (True, A([0, 1])), (1, slice(None), True), (True, True),
]
UFUNCS = {"add": np.add, "multiply": np.multiply, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


@pytest.mark.parametrize("index", UPDATE_INDEXES, ids=[repr(i).replace("\n", "") for i in UPDATE_INDEXES])
def test_at_updates_match_numpy(index):
    rng = np.random.default_rng(abs(hash(repr(index))) % 2**32)
    values = rng.integers(-9, 9, X[index].shape).astype(np.float32)
    ref = IndexUpdateHelper(jnp.asarray(X))[index]
    for name, ufunc in UFUNCS.items():
        want = X.copy()
        ufunc.at(want, index, values)
        np.testing.assert_array_equal(np.asarray(getattr(ref, name)(values)), want, err_msg=name)
    want = X.copy()
    want[index] = values  # repeated indices: the last write wins, in NumPy and here
    np.testing.assert_array_equal(np.asarray(ref.set(values)), want)
    np.testing.assert_array_equal(np.asarray(ref.get()), X[index])


def test_at_broadcasts_and_converts_values():
    x = jnp.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(x.at[:, 1].set(9)), [[0, 9, 2], [3, 9, 5]])
    out = jnp.arange(5).at[2].set(7.9)  # recorded from JAX: the value is converted to the array's int32
    assert out.dtype == np.int32 and out.tolist() == [0, 1, 7, 3, 4]
    np.testing.assert_array_equal(np.asarray(jnp.arange(5.0).at[None].set(jnp.ones((1, 5)))), np.ones(5))
    with pytest.raises(ValueError, match="broadcast"):
        x.at[0].set(jnp.ones(2))


def test_at_out_of_bounds_semantics_recorded_from_jax():
    a = jnp.arange(5)
    idx = jnp.asarray([1, 1, 7, -1])
    assert a.at[idx].add(10).tolist() == [0, 21, 2, 3, 14]  # 7 dropped, -1 is the last element
    assert a.at[idx].add(10, mode="clip").tolist() == [0, 21, 2, 3, 24]  # 7 clamped to 4
    assert a.at[idx].get().tolist() == [1, 1, 4, 4]
    assert jnp.arange(5.0).at[idx].get(mode="fill", fill_value=-3).tolist() == [1, 1, -3, 4]
    assert a.at[7].set(1).tolist() == [0, 1, 2, 3, 4]
    assert int(a.at[7].get(mode="fill")) == -2147483648
    np.testing.assert_array_equal(np.asarray(jnp.arange(5.0).at[jnp.asarray([7])].get(mode="fill")), [np.nan])
    assert jnp.arange(5.0).at[::-2].set(jnp.asarray([10.0, 20, 30])).tolist() == [30, 1, 20, 3, 10]
    assert jnp.arange(5.0).at[False].set(3.0).tolist() == [0, 1, 2, 3, 4]


def test_at_apply_divide_power_recorded_from_jax():
    from srcjax.transpiler.primitives import elementwise as ew

    x = jnp.arange(5.0)
    np.testing.assert_allclose(np.asarray(x.at[1].apply(ew.sin_p.bind)), [0, np.sin(1), 2, 3, 4], rtol=1e-6)
    assert x.at[jnp.asarray([7])].apply(ew.sin_p.bind).tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(np.asarray(x.at[jnp.asarray([7])].apply(ew.sin_p.bind, mode="clip")),
                               [0, 1, 2, 3, np.sin(4)], rtol=1e-6)
    # divide and power act once per occurrence: x / (v * v), x ** (v * v)
    np.testing.assert_allclose(np.asarray(jnp.arange(5).at[jnp.asarray([1, 1, 3])].divide(2)), [0, 0.25, 2, 1.5, 4])
    assert x.at[jnp.asarray([2, 2])].power(2.0).tolist() == [0, 1, 16, 3, 4]


def test_at_apply_applies_again_at_a_repeated_index():
    """JAX documents scatter_apply as applying ``func`` once per occurrence of an index: numbers recorded
    from jax 0.10.2, eagerly, compiled and batched, and through lax.scatter_apply."""
    import srcjax
    from srcjax.runtime import lax

    x = jnp.arange(5.0)
    idx = jnp.asarray([1, 1, 1, 3, 9])
    f = lambda x, i: x.at[i].apply(lambda v: v * 2 + 1)  # noqa: E731
    assert f(x, idx).tolist() == [0, 15, 2, 7, 4]
    assert srcjax.jit(f)(x, idx).tolist() == [0, 15, 2, 7, 4]
    batched = srcjax.vmap(f)(jnp.stack([x, x + 1]), jnp.asarray([[0, 0, 0, 1, 1], [2, 2, 2, 2, 2]]))
    assert batched.tolist() == [[7, 7, 2, 3, 4], [1, 2, 127, 4, 5]]
    assert x.at[jnp.asarray([9, 9])].apply(lambda v: v + 1, mode="clip").tolist() == [0, 1, 2, 3, 6]
    assert jnp.ones((2, 3)).at[:, jnp.asarray([0, 0])].apply(lambda v: v * 3).tolist() == [[9, 1, 1], [9, 1, 1]]
    assert jnp.arange(4).at[jnp.asarray([1, 1])].apply(lambda v: v * 2).tolist() == [0, 4, 2, 3]
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda x: f(x, idx).sum())(x)), [1, 8, 1, 2, 1])
    points = lax.ScatterDimensionNumbers((), (0,), (0,))
    out = lax.scatter_apply(x, jnp.asarray([[1], [1], [4], [7]]), lambda v: v * 2 + 1, points, update_shape=(4,))
    assert out.tolist() == [0, 7, 2, 3, 9]


def test_at_subtract_and_repr():
    x = jnp.arange(4)
    assert x.at[jnp.asarray([1, 1])].subtract(2).tolist() == [0, -3, 2, 3]
    assert "IndexUpdate" in repr(x.at) and "IndexUpdateRef" in repr(x.at[1])


# -- symbolic operands -----------------------------------------------------------------------------------
def test_indexing_symbolic_values_builds_ops():
    builder = Builder("f")
    with interpreting(builder):
        x = builder.param(TensorType(np.float32, (4, 5)))
        i = builder.param(TensorType(np.int32, (3,)))
        k = builder.param(TensorType(np.int32, ()))
        assert getitem(x, (i, slice(1, None, 2))).aval == TensorType(np.float32, (3, 2))
        assert getitem(x, k).aval == TensorType(np.float32, (5,))
        assert x.at[i].add(1.0).aval == TensorType(np.float32, (4, 5))
        assert jnp.take(x, i, axis=1).aval == TensorType(np.float32, (4, 3))
        assert jnp.nonzero(i, size=2)[0].aval.shape == (2,)
    names = [op.prim.name for op in builder.function.body.ops]
    assert "gather" in names and "dynamic_slice" in names and "scatter_add" in names


def test_boolean_masks_must_be_concrete():
    from srcjax.errors import ConcretizationTypeError, NonConcreteBooleanIndexError

    mask = Value(TensorType(np.bool_, (4,)))
    with pytest.raises(NonConcreteBooleanIndexError, match="must be concrete.*jnp.where"):  # an IndexError, as JAX's
        getitem(jnp.zeros(4), mask)
    with pytest.raises(ConcretizationTypeError, match="size="):
        jnp.nonzero(Value(TensorType(np.int32, (4,))))


# -- bad indexes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("index, error, message", [
    ((0, 0, 0, 0, 0), IndexError, "Too many indices"),
    ((Ellipsis, Ellipsis), IndexError, "single ellipsis"),
    (1.5, TypeError, "integer or boolean type"),
    (A([1.5]), TypeError, "integer or boolean type"),
    ("a", TypeError, "string indexing"),
    (A([True, False, True]), IndexError, "boolean index did not match"),
    (slice(None, None, 0), ValueError, "step cannot be zero"),
])
def test_bad_indexes(index, error, message):
    with pytest.raises(error, match=message):
        getitem(jnp.asarray(X), index)


# -- index functions -------------------------------------------------------------------------------------
def test_take_modes_recorded_from_jax():
    x = jnp.arange(5.0)
    idx = jnp.asarray([7, -1, -9])
    np.testing.assert_array_equal(np.asarray(jnp.take(x, idx)), [np.nan, 4, np.nan])
    assert jnp.take(x, idx, mode="clip").tolist() == [4, 0, 0]
    assert jnp.take(x, idx, mode="wrap").tolist() == [2, 4, 1]
    assert jnp.take(jnp.arange(5), jnp.asarray([9]), fill_value=-1).tolist() == [-1]
    with pytest.raises(NotImplementedError, match="'raise' mode"):
        jnp.take(x, idx, mode="raise")


@pytest.mark.parametrize("shape, indices, axis", [
    ((3, 4), [[0, 2], [1, 3], [2, 0]], 1), ((3, 4), [[2, 1]], None), ((2, 3, 4), [[1, 0]], 2), ((5,), [[], []], 0),
])
def test_take_matches_numpy(shape, indices, axis):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    indices = np.asarray(indices, np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.take(a, indices, axis=axis)), np.take(a, indices, axis=axis))


def test_take_along_axis_and_put_along_axis():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    idx = np.array([[3, 0], [1, 1], [2, 0]])
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(a, idx, axis=1)), np.take_along_axis(a, idx, 1))
    rows = np.array([[2, 0, 1, 1]])
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(a, rows, axis=0)), np.take_along_axis(a, rows, 0))
    column = np.array([[1], [0], [3]])  # broadcast along the other axis
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(a[:1], column, axis=1)),
                                  np.take_along_axis(np.broadcast_to(a[:1], (3, 4)), column, 1))
    # recorded from JAX: fill (default) wraps -1 once and fills 7; clip clamps
    bad = jnp.asarray([[7], [-1], [0]])
    np.testing.assert_array_equal(np.asarray(jnp.take_along_axis(a, bad, axis=1)), [[np.nan], [7], [8]])
    assert jnp.take_along_axis(a, bad, axis=1, mode="clip").tolist() == [[3], [7], [8]]
    out = jnp.put_along_axis(a, jnp.asarray([[1], [2], [0]]), -1.0, axis=1, inplace=False)
    want = a.copy()
    np.put_along_axis(want, np.array([[1], [2], [0]]), -1.0, axis=1)
    np.testing.assert_array_equal(np.asarray(out), want)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put_along_axis(a, idx, 0.0, axis=1)
    with pytest.raises(ValueError, match="same number of dimensions"):
        jnp.take_along_axis(a, np.array([1]), axis=1)


def test_put_recorded_from_jax():
    assert jnp.put(jnp.arange(5), jnp.asarray([0, 7]), jnp.asarray([9, 8]), inplace=False).tolist() == [9, 1, 2, 3, 8]
    assert jnp.put(jnp.arange(5), jnp.asarray([0, 1, 2]), jnp.asarray([7, 8]), inplace=False).tolist() == \
        [7, 8, 7, 3, 4]
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put(jnp.arange(5), 0, 1)


def test_nonzero_family():
    a = np.array([[0, 3, 0], [4, 0, 5]], np.int32)
    for got, want in zip(jnp.nonzero(a), np.nonzero(a)):
        assert got.dtype == np.int32 and got.tolist() == want.tolist()
    # recorded from JAX: size pads with fill_value (default 0), or truncates
    assert [c.tolist() for c in jnp.nonzero(jnp.asarray([0, 3, 0, 4]), size=3, fill_value=-1)] == [[1, 3, -1]]
    assert [c.tolist() for c in jnp.nonzero(a, size=4)] == [[0, 1, 1, 0], [1, 0, 2, 0]]
    assert [c.tolist() for c in jnp.nonzero(a, size=1)] == [[0], [1]]
    assert [c.tolist() for c in jnp.nonzero(a, size=4, fill_value=(7, 8))] == [[0, 1, 1, 7], [1, 0, 2, 8]]
    assert jnp.flatnonzero(a).tolist() == [1, 3, 5]
    assert jnp.argwhere(a).tolist() == np.argwhere(a).tolist()
    assert jnp.argwhere(a, size=4, fill_value=9).tolist() == [[0, 1], [1, 0], [1, 2], [9, 9]]
    assert jnp.argwhere(jnp.asarray(5)).shape == (1, 0)
    assert jnp.nonzero(np.zeros((0, 2)), size=2)[0].tolist() == [0, 0]
    with pytest.raises(ValueError, match="0d arrays"):
        jnp.nonzero(jnp.asarray(1))


def test_compress_extract_choose_select():
    a = np.arange(6).reshape(3, 2)
    assert jnp.compress(np.array([True, False, True]), a, axis=0).tolist() == [[0, 1], [4, 5]]
    assert jnp.compress(np.array([True, False]), a, axis=0).tolist() == [[0, 1]]  # recorded from JAX
    assert jnp.compress(np.array([False, True]), a, size=2, fill_value=-1).tolist() == [1, -1]
    assert jnp.extract(np.array([[1, 0], [0, 1]]), np.arange(4).reshape(2, 2), size=3).tolist() == [0, 3, 0]
    assert jnp.extract(np.array([1, 0, 1]), np.arange(3)).tolist() == [0, 2]
    choices = [np.arange(3.0), np.arange(3.0) * 10, np.arange(3.0) * 100]
    assert jnp.choose(np.array([0, 1, 2]), choices).tolist() == [0, 10, 200]
    assert jnp.choose(np.array([0, 1, 5]), choices, mode="clip").tolist() == [0, 10, 200]
    assert jnp.choose(np.array([0, -1, 5]), choices, mode="wrap").tolist() == [0, 100, 200]
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(np.array([0, 3, 1]), choices)
    conds = [np.array([True, False, False]), np.array([True, True, False])]
    assert jnp.select(conds, [np.ones(3), np.full(3, 2.0)], 7).tolist() == [1, 2, 7]
    with pytest.raises(ValueError, match="equal to choicelist"):
        jnp.select(conds, [np.ones(3)])
    with pytest.raises(TypeError, match="boolean"):
        jnp.select([np.ones(3)], [np.ones(3)])


def test_compress_with_size_keeps_shape():
    out = jnp.compress(np.array([False, True]), np.arange(6).reshape(3, 2), axis=1, size=3, fill_value=-1)
    assert out.tolist() == [[1, -1, -1], [3, -1, -1], [5, -1, -1]]


def test_index_builders():
    for got, want in zip(jnp.tril_indices(3, 1), np.tril_indices(3, 1)):
        assert got.dtype == np.int32 and got.tolist() == want.tolist()
    for got, want in zip(jnp.triu_indices(3, -1, 4), np.triu_indices(3, -1, 4)):
        assert got.tolist() == want.tolist()
    assert [c.tolist() for c in jnp.triu_indices_from(np.ones((2, 3)), 1)] == [[0, 0, 1], [1, 2, 2]]
    assert [c.tolist() for c in jnp.tril_indices_from(np.ones((2, 3)))] == [[0, 1, 1], [0, 0, 1]]
    assert [c.tolist() for c in jnp.diag_indices(2, 3)] == [[0, 1]] * 3
    assert [c.tolist() for c in jnp.diag_indices_from(np.ones((3, 3)))] == [[0, 1, 2]] * 2
    with pytest.raises(ValueError, match="equal length"):
        jnp.diag_indices_from(np.ones((2, 3)))
    rows, cols = jnp.ix_(np.array([0, 1]), np.array([True, False, True]))
    assert rows.shape == (2, 1) and cols.tolist() == [[0, 2]]
    grid = np.arange(12).reshape(3, 4)
    assert getitem(jnp.asarray(grid), jnp.ix_(np.array([2, 0]), np.array([3, 1]))).tolist() == \
        grid[np.ix_([2, 0], [3, 1])].tolist()
    assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3] and jnp.index_exp[2] == (2,)


def test_mask_indices():
    def upper(m, k):
        rows, cols = np.indices(np.shape(m))
        return jnp.asarray((cols - rows >= k).astype(np.int32))

    assert [c.tolist() for c in jnp.mask_indices(3, upper)] == [[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]


def test_unravel_and_ravel_multi_index_recorded_from_jax():
    rows, cols = jnp.unravel_index(jnp.asarray([0, 5, 13, -1, -20]), (3, 4))
    assert rows.tolist() == [0, 1, 2, 2, 0] and cols.tolist() == [0, 1, 3, 3, 0]  # clamped after one wrap
    coords = (jnp.asarray([0, 2, 5]), jnp.asarray([1, 3, -1]))
    assert jnp.ravel_multi_index(coords, (3, 4), mode="clip").tolist() == [1, 11, 8]
    assert jnp.ravel_multi_index(coords, (3, 4), mode="wrap").tolist() == [1, 11, 11]
    with pytest.raises(ValueError, match="invalid entry in coordinates array"):
        jnp.ravel_multi_index(coords, (3, 4))
    good = (np.array([0, 2, 1]), np.array([3, 0, 2]))
    assert jnp.ravel_multi_index(good, (3, 4)).tolist() == np.ravel_multi_index(good, (3, 4)).tolist()
    assert jnp.ravel_multi_index(good, (3, 4), order="F").tolist() == \
        np.ravel_multi_index(good, (3, 4), order="F").tolist()


def test_place():
    a = np.arange(6).reshape(2, 3)
    want = a.copy()
    np.place(want, a % 2 == 1, [10, 20])
    assert jnp.place(a, a % 2 == 1, jnp.asarray([10, 20]), inplace=False).tolist() == want.tolist()
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.place(a, a > 0, 1)


# -- lax -------------------------------------------------------------------------------------------------
def test_lax_slices_recorded_from_jax():
    from srcjax.runtime import lax

    r = jnp.arange(5)
    assert lax.slice(jnp.arange(10), (1,), (8,), (3,)).tolist() == [1, 4, 7]
    assert lax.slice_in_dim(r, -3, None).tolist() == [2, 3, 4]
    assert int(lax.index_in_dim(r, -1, keepdims=False)) == 4
    with pytest.raises(IndexError, match="out of bounds"):
        lax.index_in_dim(r, 5)
    assert lax.dynamic_slice(r, (-2,), (2,)).tolist() == [3, 4]  # wrapped once
    assert lax.dynamic_slice(r, (-9,), (2,)).tolist() == [0, 1]  # wrapped, then clamped
    assert lax.dynamic_slice(r, jnp.asarray([3]), (2,)).tolist() == [3, 4]
    assert lax.dynamic_slice(r, (jnp.asarray(-1),), (2,)).tolist() == [3, 4]
    with pytest.raises(ValueError, match="allow_negative_indices=False"):
        lax.dynamic_slice(r, (-2,), (2,), allow_negative_indices=False)
    assert lax.dynamic_update_slice(r, jnp.asarray([9, 9]), (-1,)).tolist() == [0, 1, 2, 9, 9]
    x = jnp.arange(12).reshape(3, 4)
    assert lax.dynamic_slice_in_dim(x, -1, 2, axis=1).tolist() == [[2, 3], [6, 7], [10, 11]]
    assert lax.dynamic_index_in_dim(x, 5, axis=0, keepdims=False).tolist() == [8, 9, 10, 11]
    assert lax.dynamic_update_index_in_dim(x, jnp.asarray([9, 9, 9, 9]), -1, 0).tolist() == \
        [[0, 1, 2, 3], [4, 5, 6, 7], [9, 9, 9, 9]]
    assert lax.dynamic_update_slice_in_dim(x, jnp.asarray([[7], [7], [7]]), 2, 1).tolist() == \
        [[0, 1, 7, 3], [4, 5, 7, 7], [8, 9, 7, 11]]


def test_lax_gather_scatter_defaults_recorded_from_jax():
    from srcjax.runtime import lax

    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    x = jnp.arange(5.0)
    assert lax.gather(x, jnp.asarray([[4]]), dn, (2,)).tolist() == [[3.0, 4.0]]  # default: clamp
    np.testing.assert_array_equal(np.asarray(lax.gather(x, jnp.asarray([[4]]), dn, (2,), mode="fill")), [[np.nan] * 2])
    assert lax.gather(x, jnp.asarray([[4]]), dn, (2,), mode="fill", fill_value=-1.0).tolist() == [[-1.0, -1.0]]
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(),
                                      scatter_dims_to_operand_dims=(0,))
    assert lax.scatter_add(jnp.zeros(5), jnp.asarray([[4]]), jnp.ones((1, 2)), sdn).tolist() == [0.0] * 5
    assert lax.scatter_add(jnp.zeros(5), jnp.asarray([[4]]), jnp.ones((1, 2)), sdn, mode="clip").tolist() == \
        [0, 0, 0, 1, 1]
    points = lax.ScatterDimensionNumbers((), (0,), (0,))
    assert lax.scatter_sub(jnp.arange(5), jnp.asarray([[1], [1]]), jnp.asarray([2, 3]), points).tolist() == \
        [0, -4, 2, 3, 4]
    assert lax.scatter_mul(jnp.arange(5), jnp.asarray([[2]]), jnp.asarray([10]), points).tolist() == [0, 1, 20, 3, 4]
    assert lax.scatter_max(jnp.arange(5), jnp.asarray([[2], [3]]), jnp.asarray([9, 0]), points).tolist() == \
        [0, 1, 9, 3, 4]
    out = lax.scatter_apply(jnp.arange(5.0), jnp.asarray([[1], [3], [7]]), lambda v: -v, points, update_shape=(3,))
    assert out.tolist() == [0, -1, 2, -3, 4]
    src = jnp.arange(24).reshape(2, 3, 4)
    taken = lax.index_take(src, (jnp.asarray([1, 0]), jnp.asarray([2, 3])), (0, 2))
    assert taken.tolist() == [[14, 18, 22], [3, 7, 11]]
    assert lax.index_take(src, (jnp.asarray([1, 0]),), (1,)).shape == (2, 2, 4)


def test_fill_values_outside_the_dtype_compile_as_they_run_eagerly():
    """A ``fill_value`` the operand's dtype cannot hold is cast as JAX 0.10.2 casts it (NaN into int32 is
    INT32_MIN, 2**40 wraps to 0, -1 into uint8 is 255, 1e6 into float16 is inf), eagerly and compiled natively,
    where compiling it once failed."""
    import srcjax

    idx = jnp.asarray([1, 9])
    cases = [(jnp.arange(4), np.nan, [1, -2147483648]), (jnp.arange(4), 2**40, [1, 0]),
             (jnp.arange(4).astype(np.uint8), -1, [1, 255]), (jnp.arange(4).astype(np.float16), 1e6, [1.0, np.inf])]
    for x, fill, want in cases:
        for fn in (lambda x, fill=fill: x.at[idx].get(mode="fill", fill_value=fill),
                   lambda x, fill=fill: jnp.take(x, idx, mode="fill", fill_value=fill)):
            assert np.asarray(fn(x)).tolist() == want
            assert np.asarray(srcjax.jit(fn)(x)).tolist() == want


def test_a_scalar_index_of_an_empty_axis_is_refused_as_jax():
    # (JAX 0.10.2 raises this IndexError for reads and updates alike, a static or a 0-d array index; a slice or
    # a 1-d index array of an empty axis is no such error)
    import srcjax

    z = jnp.zeros((0, 3))
    for index in (0, -1, np.int32(0), jnp.asarray(np.int32(0))):
        with pytest.raises(IndexError, match="index is out of bounds for axis 0 with size 0"):
            z[index]
        with pytest.raises(IndexError, match="axis 0 with size 0"):
            z.at[index].set(1.0)
    with pytest.raises(IndexError, match="axis 0 with size 0"):
        srcjax.jit(lambda z, i: z.at[i].add(1.0))(z, 0)
    assert z[:, 0].shape == (0,) and z.at[jnp.asarray([0])].set(1.0).shape == (0, 3)


def test_at_computes_in_the_promoted_dtype_recorded_from_jax():
    # JAX promotes the array and the values together, scatters, then converts back (with a FutureWarning):
    # an int32 array plus 0.5 truncates the sum, not the 0.5; float16 plus float32 rounds once
    import srcjax

    cases = [
        (lambda: jnp.asarray([-5, 5]).at[jnp.asarray([0, 1, 1])].add(0.5), [-4, 6]),
        (lambda: jnp.asarray([-5, 5]).at[0].add(1.5), [-3, 5]),
        (lambda: jnp.asarray([-5, 5]).at[0].subtract(1.5), [-6, 5]),
        (lambda: jnp.asarray([-5, 5]).at[0].multiply(0.5), [-2, 5]),
        (lambda: jnp.asarray([3, 5], np.uint8).at[0].subtract(5), [254, 5]),
        (lambda: jnp.asarray([16777217, 3]).at[1].set(0.5), [16777216, 0]),  # (float32 holds no 2**24 + 1)
        (lambda: jnp.asarray([1.0, 2048.0], np.float16).at[jnp.asarray([1, 1])].add(jnp.ones(2, np.float32)),
         [1.0, 2050.0]),
        # (min and max of complex values order them by real part, then imaginary part)
        (lambda: jnp.asarray(np.int8([1, 0, 1])).at[jnp.asarray([0, 2])].min(jnp.asarray(np.complex64([1 + 2j, -3j]))),
         [1, 0, 0]),
        (lambda: jnp.asarray([False, False]).at[0].min(-2), [True, False]),  # (bool(min(0, -2)))
    ]
    for make, want in cases:
        got = make()
        assert got.tolist() == want
        assert srcjax.jit(make)().tolist() == want
    assert jnp.asarray([1, 2]).at[0].add(0.5).dtype == np.int32


def test_at_wrap_negative_indices_recorded_from_jax():
    # wrap_negative_indices=False: a negative index is out of bounds (reads clamp it to 0 or fill, updates drop it)
    import srcjax

    x = jnp.arange(5.0)
    i = jnp.asarray([-1, 1, -7])
    assert x.at[i].get(wrap_negative_indices=False).tolist() == [0, 1, 0]
    assert x.at[i].get(mode="fill", fill_value=9, wrap_negative_indices=False).tolist() == [9, 1, 9]
    assert float(x.at[-1].get(wrap_negative_indices=False)) == 0.0
    assert float(x.at[-1].get(wrap_negative_indices=False, mode="fill", fill_value=9)) == 9.0
    assert float(x.at[jnp.asarray(-1)].get(wrap_negative_indices=False)) == 0.0
    assert x.at[-3:].get(wrap_negative_indices=False).tolist() == [2, 3, 4]  # slices are not indexes
    assert x.at[i].set(9.0, wrap_negative_indices=False).tolist() == [0, 9, 2, 3, 4]
    assert x.at[-1].set(9.0, wrap_negative_indices=False).tolist() == [0, 1, 2, 3, 4]
    assert x.at[jnp.asarray(-1)].set(9.0, wrap_negative_indices=False).tolist() == [0, 1, 2, 3, 4]
    assert x.at[i].add(9.0, wrap_negative_indices=False, mode="clip").tolist() == [18, 10, 2, 3, 4]
    assert x.at[i].multiply(3.0, wrap_negative_indices=False).tolist() == [0, 3, 2, 3, 4]
    assert srcjax.jit(lambda x, i: x.at[i].set(9.0, wrap_negative_indices=False))(x, i).tolist() == [0, 9, 2, 3, 4]
    assert srcjax.jit(lambda x, i: x.at[i[0]].get(wrap_negative_indices=False))(x, i).tolist() == 0.0
    # a fill_value without a mode is ignored: JAX's default mode (promise_in_bounds) clamps
    assert x.at[jnp.asarray([9, 1])].get(fill_value=5.0).tolist() == [4, 1]


def test_put_negative_and_empty_and_put_along_no_axis_recorded_from_jax():
    # put's default mode counts a negative index from the end once, then clamps (JAX's unravel_index)
    got = jnp.put(jnp.zeros(4), jnp.asarray([-3, -2, 2, -5]), jnp.asarray([1.0, 2, 3, 4]), inplace=False)
    assert got.tolist() == [4, 1, 3, 0]
    assert jnp.put(jnp.zeros(4), jnp.asarray([1]), jnp.zeros(0), inplace=False).tolist() == [0, 0, 0, 0]
    got = jnp.put_along_axis(jnp.zeros((3, 4)), jnp.asarray([0, 5, -1]), jnp.asarray([1.0, 2, 3]), axis=None,
                             inplace=False)
    assert got.shape == (3, 4) and got.ravel().tolist() == [1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3]


def test_an_empty_read_of_an_empty_axis_is_zeros_as_jax():
    import srcjax

    z = jnp.zeros((0, 3))
    empty = jnp.zeros((0,), np.int32)
    assert z[empty].shape == (0, 3) and srcjax.jit(lambda z, i: z[i])(z, empty).shape == (0, 3)
    assert z.at[empty].get(mode="fill", fill_value=1.0).shape == (0, 3)


def test_narrow_index_dtypes_count_from_the_end_of_long_axes():
    # an int8 index -100 into 300 elements is element 200 (as NumPy's; the axis size does not fit int8, so the
    # wrap is computed wider), on every path: 0-d and 1-d indexes, updates, lax's dynamic slices, take
    import srcjax
    from srcjax.runtime import lax

    x = jnp.arange(300.0)
    i8 = jnp.asarray(np.int8(-100))
    assert float(x[i8]) == 200.0 and float(srcjax.jit(lambda x, i: x[i])(x, i8)) == 200.0
    assert x[jnp.asarray(np.array([-100, 5], np.int8))].tolist() == [200, 5]
    assert x.at[i8].set(-1.0)[200].tolist() == -1.0
    assert lax.dynamic_slice(x, (i8,), (2,)).tolist() == [200, 201]
    assert lax.dynamic_update_slice(x, jnp.zeros(2), (i8,))[199:203].tolist() == [199, 0, 0, 202]
    assert jnp.take(x, jnp.asarray(np.array([-100], np.int8))).tolist() == [200]
    assert float(jnp.arange(70000.0)[jnp.asarray(np.int16(-1))]) == 69999.0
    assert float(jnp.arange(600.0).reshape(2, 300)[jnp.asarray(np.int8(1)), 290]) == 590.0


def test_unsigned_indexes_beyond_the_index_dtype_stay_out_of_bounds():
    # uint32 4294967295 (0 - 1 in uint32) is out of bounds: recorded from JAX, updates drop it, take fills or
    # clamps it to the last element; it must not become int32 -1 and count from the end
    import srcjax

    x = jnp.arange(5.0)
    big = jnp.asarray(np.array([2**32 - 1, 1], np.uint32))
    assert x.at[big].set(9.0).tolist() == [0, 9, 2, 3, 4]
    assert x.at[big[0]].add(9.0).tolist() == [0, 1, 2, 3, 4]
    assert srcjax.jit(lambda x, i: x.at[i].set(9.0))(x, big).tolist() == [0, 9, 2, 3, 4]
    np.testing.assert_array_equal(np.asarray(jnp.take(x, big)), [np.nan, 1])
    assert jnp.take(x, big, mode="clip").tolist() == [4, 1]
    assert float(x[np.uint32(2**32 - 1)]) == 4.0 and float(x[big[0]]) == 4.0  # (a NumPy scalar: no overflow)
    assert x.at[np.uint32(2**32 - 1)].set(9.0).tolist() == [0, 1, 2, 3, 4]


def test_lax_index_errors_are_value_errors_as_jax():
    from srcjax.runtime import lax

    x = jnp.zeros((3, 4))
    with pytest.raises(ValueError, match="one start index per operand axis"):
        lax.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(ValueError, match="indices must be integers"):
        lax.gather(x, jnp.asarray([[0.0]]), lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                                                        start_index_map=(0,)), (1, 4))
