"""srcjax.numpy manipulation functions against NumPy (float64 oracle, exact for integers and bools), with the
dtypes and weak types JAX 0.10.2 gives (recorded with jax, written here as literals), and bad inputs."""

import numpy as np
import pytest

import srcjax.numpy as jnp

F32, I32, B = "float32", "int32", "bool"

A = np.arange(6.0).reshape(2, 3)  # float64 oracle; jnp.asarray(A) is float32
T = np.arange(24).reshape(2, 3, 4)
V = np.arange(5)
a, t, v = jnp.asarray(A), jnp.asarray(T), jnp.asarray(V)


def check(out, expected, dtype, weak=False):
    """``out`` has JAX's dtype and weak bit and NumPy's values (to float32 precision for inexact dtypes)."""
    assert str(out.dtype) == dtype, (out.dtype, dtype)
    assert out.weak_type == weak, (out.weak_type, weak)
    actual, expected = np.asarray(out), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=2e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


def check_list(outs, expected, dtype, weak=False):
    assert isinstance(outs, (list, tuple)) and len(outs) == len(expected)
    for out, e in zip(outs, expected, strict=True):
        check(out, e, dtype, weak)


SHAPES = [
    ("reshape -1", lambda: jnp.reshape(a, (3, -1)), A.reshape(3, -1), F32, False),
    ("reshape int", lambda: jnp.reshape(t, 24), T.reshape(24), I32, False),
    ("reshape F", lambda: jnp.reshape(a, (3, 2), order="F"), A.reshape((3, 2), order="F"), F32, False),
    ("reshape scalar keeps weak", lambda: jnp.reshape(2.0, (1, 1)), np.full((1, 1), 2.0), F32, True),
    ("reshape method varargs", lambda: t.reshape(4, -1), T.reshape(4, -1), I32, False),
    ("reshape empty", lambda: jnp.reshape(jnp.zeros((0, 3)), (3, 0)), np.zeros((3, 0)), F32, False),
    ("ravel", lambda: jnp.ravel(t), T.ravel(), I32, False),
    ("ravel F", lambda: jnp.ravel(a, order="F"), A.ravel(order="F"), F32, False),
    ("flatten method", lambda: a.flatten(), A.flatten(), F32, False),
    ("transpose", lambda: jnp.transpose(t), T.transpose(), I32, False),
    ("transpose axes", lambda: jnp.transpose(t, (1, -1, 0)), T.transpose(1, 2, 0), I32, False),
    ("T", lambda: a.T, A.T, F32, False),
    ("matrix_transpose", lambda: jnp.matrix_transpose(t), np.swapaxes(T, -1, -2), I32, False),
    ("permute_dims", lambda: jnp.permute_dims(t, (2, 0, 1)), T.transpose(2, 0, 1), I32, False),
    ("swapaxes", lambda: jnp.swapaxes(t, 0, -1), np.swapaxes(T, 0, -1), I32, False),
    ("moveaxis", lambda: jnp.moveaxis(t, (0, 1), (-1, 0)), np.moveaxis(T, (0, 1), (-1, 0)), I32, False),
    ("moveaxis one", lambda: jnp.moveaxis(t, 2, 0), np.moveaxis(T, 2, 0), I32, False),
    ("rollaxis", lambda: jnp.rollaxis(t, 2), np.rollaxis(T, 2), I32, False),
    ("rollaxis start", lambda: jnp.rollaxis(t, 0, 3), np.rollaxis(T, 0, 3), I32, False),
    ("rollaxis negative start", lambda: jnp.rollaxis(t, -1, -2), np.rollaxis(T, -1, -2), I32, False),
    ("rollaxis start before", lambda: jnp.rollaxis(t, 2, 1), np.rollaxis(T, 2, 1), I32, False),
    ("squeeze", lambda: jnp.squeeze(jnp.zeros((1, 3, 1))), np.zeros(3), F32, False),
    ("squeeze axis", lambda: jnp.squeeze(jnp.zeros((1, 3, 1)), -1), np.zeros((1, 3)), F32, False),
    ("expand_dims tuple", lambda: jnp.expand_dims(a, (0, -1)), np.expand_dims(A, (0, -1)), F32, False),
    ("expand_dims scalar weak", lambda: jnp.expand_dims(3, 0), np.array([3]), I32, True),
    ("broadcast_to", lambda: jnp.broadcast_to(v, (2, 5)), np.broadcast_to(V, (2, 5)), I32, False),
    ("broadcast_to weak", lambda: jnp.broadcast_to(2.0, 3), np.full(3, 2.0), F32, True),
    # a float64 NumPy operand of the same shape still comes back as a float32 array, as JAX's
    ("broadcast_to same shape numpy", lambda: jnp.broadcast_to(np.asarray(A, np.float64), A.shape), A, F32, False),
    ("atleast_1d weak", lambda: jnp.atleast_1d(2.0), np.atleast_1d(2.0), F32, True),
    ("atleast_2d", lambda: jnp.atleast_2d(v), np.atleast_2d(V), I32, False),
    ("atleast_3d 1-d", lambda: jnp.atleast_3d(v), np.atleast_3d(V), I32, False),
    ("atleast_3d 2-d", lambda: jnp.atleast_3d(a), np.atleast_3d(A), F32, False),
    ("atleast_3d 0-d", lambda: jnp.atleast_3d(jnp.int32(4)), np.atleast_3d(4), I32, False),
]

JOINS = [
    ("concatenate", lambda: jnp.concatenate([a, a], 1), np.concatenate([A, A], 1), F32, False),
    ("concatenate axis None", lambda: jnp.concatenate([a, v], axis=None), np.concatenate([A, V], axis=None), F32,
     False),
    ("concatenate promotes", lambda: jnp.concatenate([v, jnp.arange(3.0)]), np.concatenate([V, np.arange(3.0)]),
     F32, False),
    ("concatenate weak", lambda: jnp.concatenate([jnp.atleast_1d(1.0), jnp.atleast_1d(2.0)]), [1.0, 2.0], F32,
     True),
    ("concatenate dtype", lambda: jnp.concatenate([v, v], dtype=float), np.concatenate([V, V]), F32, False),
    ("concatenate an array", lambda: jnp.concatenate(t), np.concatenate(T), I32, False),
    ("concatenate empty piece", lambda: jnp.concatenate([a, jnp.zeros((0, 3))]), A, F32, False),
    ("concat", lambda: jnp.concat([a, a], axis=-1), np.concatenate([A, A], -1), F32, False),
    ("stack python scalars", lambda: jnp.stack([1, 2.0]), np.stack([1, 2.0]), F32, True),
    ("stack 0-d int8 and weak", lambda: jnp.stack([jnp.int8(1), 2]), np.array([1, 2]), "int8", False),
    ("stack axis", lambda: jnp.stack([a, a, a], axis=-1), np.stack([A, A, A], -1), F32, False),
    ("stack dtype", lambda: jnp.stack([v, v], dtype=jnp.float16), np.stack([V, V]), "float16", False),
    ("hstack 0-d", lambda: jnp.hstack([1, 2]), np.hstack([1, 2]), I32, True),
    ("hstack 2-d", lambda: jnp.hstack([a, a]), np.hstack([A, A]), F32, False),
    ("vstack", lambda: jnp.vstack([v, v]), np.vstack([V, V]), I32, False),
    ("dstack", lambda: jnp.dstack([v, v]), np.dstack([V, V]), I32, False),
    ("dstack 2-d", lambda: jnp.dstack([a, a]), np.dstack([A, A]), F32, False),
    ("column_stack", lambda: jnp.column_stack([v, v]), np.column_stack([V, V]), I32, False),
    ("column_stack mixed", lambda: jnp.column_stack([jnp.arange(2), a]), np.column_stack([np.arange(2), A]), F32,
     False),
    ("append flat", lambda: jnp.append(jnp.arange(3), 2.5), np.append(np.arange(3), 2.5), F32, True),
    ("append axis", lambda: jnp.append(a, a, axis=0), np.append(A, A, axis=0), F32, False),
    ("block 2-d", lambda: jnp.block([[a, a], [a, a]]), np.block([[A, A], [A, A]]), F32, False),
    ("block scalars", lambda: jnp.block([1, 2.0]), np.block([1, 2.0]), F32, True),
    ("block mixed ranks", lambda: jnp.block([[jnp.ones((2, 2)), jnp.zeros((2, 1))], [jnp.full((1, 3), 2.0)]]),
     np.block([[np.ones((2, 2)), np.zeros((2, 1))], [np.full((1, 3), 2.0)]]), F32, False),
    ("block 1-d rows", lambda: jnp.block([[v], [v]]), np.block([[V], [V]]), I32, False),
    ("block single", lambda: jnp.block(v), np.block(V), I32, False),
]

REORDER = [
    ("tile", lambda: jnp.tile(jnp.arange(3), (2, 2)), np.tile(np.arange(3), (2, 2)), I32, False),
    ("tile int", lambda: jnp.tile(a, 2), np.tile(A, 2), F32, False),
    ("tile more dims", lambda: jnp.tile(a, (2, 1, 2)), np.tile(A, (2, 1, 2)), F32, False),
    ("tile zero", lambda: jnp.tile(a, (0, 2)), np.tile(A, (0, 2)), F32, False),
    ("tile scalar", lambda: jnp.tile(2.0, 3), np.tile(2.0, 3), F32, True),
    ("repeat flat", lambda: jnp.repeat(a, 2), np.repeat(A, 2), F32, False),
    ("repeat axis", lambda: jnp.repeat(t, 3, axis=1), np.repeat(T, 3, axis=1), I32, False),
    ("repeat zero", lambda: jnp.repeat(a, 0, axis=0), np.repeat(A, 0, axis=0), F32, False),
    ("repeat array", lambda: jnp.repeat(jnp.arange(3), jnp.array([1, 0, 2])), np.repeat(np.arange(3), [1, 0, 2]),
     I32, False),
    ("repeat array axis", lambda: jnp.repeat(a, jnp.array([2, 1, 3]), axis=1), np.repeat(A, [2, 1, 3], axis=1),
     F32, False),
    ("repeat method", lambda: v.repeat(2), np.repeat(V, 2), I32, False),
    ("flip", lambda: jnp.flip(t), np.flip(T), I32, False),
    ("flip axes", lambda: jnp.flip(t, (0, -1)), np.flip(T, (0, -1)), I32, False),
    ("flip weak scalar", lambda: jnp.flip(2.0), np.flip(2.0), F32, True),
    ("fliplr", lambda: jnp.fliplr(a), np.fliplr(A), F32, False),
    ("flipud", lambda: jnp.flipud(v), np.flipud(V), I32, False),
    ("rot90", lambda: jnp.rot90(a), np.rot90(A), F32, False),
    ("rot90 -1", lambda: jnp.rot90(a, -1), np.rot90(A, -1), F32, False),
    ("rot90 2", lambda: jnp.rot90(t, 2, (1, 2)), np.rot90(T, 2, (1, 2)), I32, False),
    ("rot90 3 other axes", lambda: jnp.rot90(t, 3, (2, 0)), np.rot90(T, 3, (2, 0)), I32, False),
    ("roll", lambda: jnp.roll(a, (1, -1), (0, 1)), np.roll(A, (1, -1), (0, 1)), F32, False),
    ("roll flat", lambda: jnp.roll(a, 2), np.roll(A, 2), F32, False),
    ("roll big negative", lambda: jnp.roll(v, -7), np.roll(V, -7), I32, False),
    ("roll one shift two axes", lambda: jnp.roll(t, 1, (0, 2)), np.roll(T, 1, (0, 2)), I32, False),
    ("roll array shift", lambda: jnp.roll(v, jnp.asarray(3)), np.roll(V, 3), I32, False),
    ("roll array shifts", lambda: jnp.roll(t, jnp.array([1, -5]), (1, 2)), np.roll(T, (1, -5), (1, 2)), I32,
     False),
    ("roll no axes", lambda: jnp.roll(v, (), ()), V, I32, False),
    ("roll empty", lambda: jnp.roll(jnp.zeros((0, 2)), 1, 0), np.zeros((0, 2)), F32, False),
    ("resize grow", lambda: jnp.resize(jnp.arange(3), (2, 4)), np.resize(np.arange(3), (2, 4)), I32, False),
    ("resize shrink", lambda: jnp.resize(a, 4), np.resize(A, 4), F32, False),
    ("resize empty", lambda: jnp.resize(jnp.zeros(0, int), 3), np.zeros(3), I32, False),
    ("trim_zeros", lambda: jnp.trim_zeros(jnp.array([0, 0, 1, 0, 2, 0])), np.trim_zeros(np.array([0, 0, 1, 0, 2, 0])),
     I32, False),
    ("trim_zeros front", lambda: jnp.trim_zeros(jnp.array([0, 0, 1, 0, 2, 0]), "f"), [1, 0, 2, 0], I32, False),
    ("trim_zeros back", lambda: jnp.trim_zeros(jnp.array([0.0, 1, 0]), "B"), [0.0, 1], F32, False),
    ("trim_zeros all zero", lambda: jnp.trim_zeros(jnp.zeros(3)), np.zeros(0), F32, False),
    ("trim_zeros 2-d", lambda: jnp.trim_zeros(jnp.array([[0, 0, 0], [0, 1, 0]])), [[1]], I32, False),
]

EDITS = [
    ("insert scalar", lambda: jnp.insert(v, 2, 9.5), np.insert(V, 2, 9), I32, False),
    ("insert end", lambda: jnp.insert(v, 5, 7), np.insert(V, 5, 7), I32, False),
    ("insert negative", lambda: jnp.insert(v, -1, 7), np.insert(V, -1, 7), I32, False),
    ("insert indices", lambda: jnp.insert(v, jnp.array([1, 3, 1]), jnp.array([7, 8, 9])),
     np.insert(V, [1, 3, 1], [7, 8, 9]), I32, False),
    ("insert slice", lambda: jnp.insert(v, slice(0, 4, 2), 0), np.insert(V, slice(0, 4, 2), 0), I32, False),
    ("insert column", lambda: jnp.insert(a, 1, 0, axis=1), np.insert(A, 1, 0, axis=1), F32, False),
    ("insert column values", lambda: jnp.insert(a, 1, jnp.array([7.0, 8]), axis=1),
     np.insert(A, 1, [7.0, 8], axis=1), F32, False),
    ("insert rows", lambda: jnp.insert(a, jnp.array([0, 2]), jnp.array([1.0, 2, 3]), axis=0),
     np.insert(A, [0, 2], [1.0, 2, 3], axis=0), F32, False),
    ("insert one index array", lambda: jnp.insert(a, jnp.array([1]), jnp.array([7.0, 8]), axis=1),
     np.insert(A, [1], [7.0, 8], axis=1), F32, False),
    ("insert one index column", lambda: jnp.insert(a, jnp.array([1]), jnp.array([[7.0], [8]]), axis=1),
     np.insert(A, [1], [[7.0], [8]], axis=1), F32, False),
    # recorded from jax 0.10.2: indices past either end are clipped (NumPy raises)
    ("insert clips", lambda: jnp.insert(v, 9, 1), [0, 1, 2, 3, 4, 1], I32, False),
    ("insert clips both ends", lambda: jnp.insert(v, jnp.array([-9, 9]), jnp.array([7, 8])), [7, 0, 1, 2, 3, 4, 8],
     I32, False),
    ("insert flattens", lambda: jnp.insert(a, 3, -1), np.insert(A, 3, -1), F32, False),
    ("delete", lambda: jnp.delete(v, jnp.array([0, 3])), np.delete(V, [0, 3]), I32, False),
    ("delete scalar", lambda: jnp.delete(v, -1), np.delete(V, -1), I32, False),
    ("delete slice", lambda: jnp.delete(v, slice(1, 3)), np.delete(V, slice(1, 3)), I32, False),
    ("delete mask", lambda: jnp.delete(v, jnp.array([True, False, True, False, False])),
     np.delete(V, np.array([True, False, True, False, False])), I32, False),
    ("delete axis", lambda: jnp.delete(t, 1, axis=1), np.delete(T, 1, axis=1), I32, False),
    ("delete duplicates", lambda: jnp.delete(v, jnp.array([1, 1, 4])), np.delete(V, [1, 1, 4]), I32, False),
    ("delete nothing", lambda: jnp.delete(v, jnp.array([], dtype=int)), V, I32, False),
    ("delete unique indices", lambda: jnp.delete(t, jnp.array([3, 0]), axis=2, assume_unique_indices=True),
     np.delete(T, [3, 0], axis=2), I32, False),
    ("delete unique negative", lambda: jnp.delete(v, jnp.array([-1, 1]), assume_unique_indices=True),
     np.delete(V, [-1, 1]), I32, False),
]


CASES = SHAPES + JOINS + REORDER + EDITS


@pytest.mark.parametrize("label, call, expected, dtype, weak", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_with_jax_dtypes(label, call, expected, dtype, weak):
    check(call(), expected, dtype, weak)


def test_repeat_with_total_repeat_length():
    # recorded from jax 0.10.2: a longer total repeats the last element, a shorter one cuts
    check(jnp.repeat(jnp.arange(3), jnp.array([1, 0, 2]), total_repeat_length=5), [0, 2, 2, 2, 2], I32)
    check(jnp.repeat(jnp.arange(3), 2, total_repeat_length=4), [0, 0, 1, 1], I32)
    check(jnp.repeat(jnp.arange(3), 2, total_repeat_length=8), [0, 0, 1, 1, 2, 2, 2, 2], I32)


# -- splitting ----------------------------------------------------------------------------------------------------
SPLITS = [
    ("split sections", lambda m: m.split(m.arange(6), 3), I32),
    ("split indices", lambda m: m.split(m.arange(6), [1, 4]), I32),
    ("split indices past the end", lambda m: m.split(m.arange(6), [2, 10]), I32),
    ("split decreasing indices", lambda m: m.split(m.arange(6), [4, 2]), I32),
    ("split negative indices", lambda m: m.split(m.arange(6), [-2]), I32),
    ("split axis", lambda m: m.split(m.arange(24).reshape(2, 3, 4), 2, axis=-1), I32),
    ("split array of indices", lambda m: m.split(m.arange(6), m.array([3])), I32),
    ("array_split", lambda m: m.array_split(m.arange(7), 3), I32),
    ("array_split more than elements", lambda m: m.array_split(m.arange(2), 3), I32),
    ("hsplit", lambda m: m.hsplit(m.arange(24).reshape(2, 3, 4), 3), I32),
    ("hsplit 1-d", lambda m: m.hsplit(m.arange(4), 2), I32),
    ("vsplit", lambda m: m.vsplit(m.arange(24).reshape(2, 3, 4), [1]), I32),
    ("dsplit", lambda m: m.dsplit(m.arange(24).reshape(2, 3, 4), 2), I32),
    # JAX splits a 1-d array along axis 0 (NumPy refuses it)
    ("vsplit 1-d", lambda m: m.vsplit(m.arange(6), 2) if m is jnp else [np.arange(3), np.arange(3, 6)], I32),
    ("unstack", lambda m: (m.unstack(m.arange(24).reshape(2, 3, 4), axis=1) if m is jnp
                           else tuple(np.moveaxis(T, 1, 0))), I32),
    ("broadcast_arrays", lambda m: m.broadcast_arrays(m.arange(3), m.arange(2).reshape(2, 1)), I32),
]


@pytest.mark.parametrize("label, call, dtype", SPLITS, ids=[c[0] for c in SPLITS])
def test_splits_match_numpy(label, call, dtype):
    check_list(call(jnp), call(np), dtype)


def test_broadcast_arrays_keep_weak_types():
    x, y = jnp.broadcast_arrays(1.0, jnp.arange(3))
    check(x, np.ones(3), F32, True)
    check(y, np.arange(3), I32, False)


def test_broadcast_shapes():
    assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert jnp.broadcast_shapes(3, (2, 1)) == (2, 3)
    assert jnp.broadcast_shapes() == ()
    with pytest.raises(ValueError, match="incompatible shapes"):
        jnp.broadcast_shapes((2,), (3,))


# -- padding ------------------------------------------------------------------------------------------------------
PADS = [
    ("constant", (4,), 2, "constant", {}),
    ("constant value", (3,), (1, 2), "constant", {"constant_values": 7}),
    ("constant per axis", (2, 3), ((1, 2), (0, 1)), "constant", {"constant_values": ((1, 2), (3, 4))}),
    ("constant pairs", (2, 3), 1, "constant", {"constant_values": (5, 6)}),
    ("edge", (2, 3), ((1, 2), (3, 1)), "edge", {}),
    ("reflect", (3,), (4, 5), "reflect", {}),
    ("reflect 2-d", (3, 4), ((5, 2), (1, 7)), "reflect", {}),
    ("reflect odd", (3,), (4, 5), "reflect", {"reflect_type": "odd"}),
    ("reflect odd 2-d", (2, 3), ((3, 1), (5, 4)), "reflect", {"reflect_type": "odd"}),
    ("reflect single", (1, 3), ((2, 1), (1, 1)), "reflect", {}),
    ("symmetric", (3,), (4, 5), "symmetric", {}),
    ("symmetric 2-d", (2, 3), ((3, 4), (7, 2)), "symmetric", {}),
    ("symmetric odd", (4,), (6, 9), "symmetric", {"reflect_type": "odd"}),
    ("wrap", (3,), (4, 5), "wrap", {}),
    ("wrap 2-d", (2, 3), ((3, 4), (7, 2)), "wrap", {}),
    ("linear_ramp", (3,), (4, 5), "linear_ramp", {"end_values": (9, -3)}),
    ("linear_ramp 2-d", (2, 3), ((2, 1), (1, 3)), "linear_ramp", {"end_values": ((1, 2), (3, 4))}),
    ("maximum", (2, 4), ((1, 2), (2, 1)), "maximum", {}),
    ("minimum stat_length", (2, 5), ((1, 2), (2, 1)), "minimum", {"stat_length": 2}),
    ("mean", (4,), (2, 1), "mean", {}),
    ("mean stat_length", (2, 5), ((1, 1), (2, 2)), "mean", {"stat_length": ((1, 2), (2, 3))}),
    ("median", (5,), (2, 1), "median", {}),
    ("zero width", (2, 3), 0, "reflect", {}),
]


@pytest.mark.parametrize("label, shape, width, mode, kwargs", PADS, ids=[c[0] for c in PADS])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_matches_numpy(label, shape, width, mode, kwargs, dtype):
    x = (np.arange(np.prod(shape)).reshape(shape) * 3 % 7).astype(dtype)
    out = jnp.pad(jnp.asarray(x), width, mode, **kwargs)
    expected = np.pad(x.astype(np.float64) if dtype == np.float32 else x, width, mode, **kwargs)
    if label == "linear_ramp 2-d" and dtype == np.int32:
        # integer ramps floor JAX's linspace, start (1 - t) + stop t, whose float32 rounding puts two samples a
        # unit below NumPy's (recorded with jax 0.10.2)
        expected[0, 5] = expected[3, 5] = 2
    check(out, expected, np.dtype(dtype).name)


def test_pad_keeps_weak_type_and_fills_empty_with_zeros():
    check(jnp.pad(jnp.atleast_1d(2.0), 1), [0.0, 2.0, 0.0], F32, True)
    check(jnp.pad(jnp.arange(4), (2, 1), mode="empty"), [0, 0, 0, 1, 2, 3, 0], I32)  # JAX fills zeros
    check(jnp.pad(jnp.arange(4), (2, 1), mode="mean"), [2, 2, 0, 1, 2, 3, 2], I32)  # mean 1.5 rounds to even


def test_pad_with_a_function():
    def ends(vector, width, axis, kwargs):
        return vector.at[: width[0]].set(kwargs["value"]) if width[0] else vector

    out = jnp.pad(jnp.arange(3), 2, mode=ends, value=9)
    check(out, [9, 9, 0, 1, 2, 0, 0], I32)


# -- bad inputs ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, message", [
    (lambda: jnp.reshape([1, 2], (2,)), TypeError, "reshape requires ndarray or scalar arguments"),
    (lambda: jnp.reshape(a, (4, -1)), TypeError, "cannot reshape array of size 6"),  # TypeError, as in JAX
    (lambda: jnp.reshape(a, (-1, -1)), TypeError, "one unknown dimension"),
    (lambda: jnp.reshape(a, (7,)), TypeError, "cannot reshape"),
    (lambda: jnp.reshape(a, 6, order="Z"), ValueError, "order must be"),
    (lambda: jnp.transpose(a, (0, 0)), TypeError, "not a permutation"),
    (lambda: jnp.transpose(a, (0, 2)), np.exceptions.AxisError, "out of bounds"),
    (lambda: jnp.matrix_transpose(v), ValueError, "at least two-dimensional"),
    (lambda: jnp.swapaxes(a, 0, 2), IndexError, "axis 2 is out of bounds"),
    (lambda: jnp.moveaxis(t, (0, 1), 0), ValueError, "same number of elements"),
    (lambda: jnp.squeeze(a, 0), ValueError, "size not equal to one"),
    (lambda: jnp.expand_dims(a, (0, 0)), ValueError, "repeated axis"),
    (lambda: jnp.expand_dims(a, 4), np.exceptions.AxisError, "out of bounds"),
    (lambda: jnp.concatenate([]), ValueError, "at least one array"),
    (lambda: jnp.concatenate([jnp.float32(1), jnp.float32(2)]), ValueError, "Zero-dimensional"),
    (lambda: jnp.concatenate([a, v]), TypeError, "same number of dimensions"),
    (lambda: jnp.concatenate([a, jnp.zeros((2, 2))]), TypeError, "must match exactly"),
    (lambda: jnp.append(a, v, axis=0), TypeError, "same number of dimensions"),
    (lambda: jnp.concatenate([[1, 2], [3]]), TypeError, "requires ndarray or scalar"),
    (lambda: jnp.concatenate(jnp.float32(3)), ValueError, "0-d"),
    (lambda: jnp.stack([a, v]), ValueError, "same shape"),
    (lambda: jnp.stack([a], out=a), NotImplementedError, "out"),
    (lambda: jnp.split(jnp.arange(6), 4), ValueError, "equal division"),
    (lambda: jnp.split(jnp.arange(6), 0), ValueError, "larger than 0"),
    (lambda: jnp.split(jnp.float32(1), 1), ValueError, "0-d"),
    (lambda: jnp.vsplit(jnp.float32(1), 1), ValueError, "1 or more dimensions"),
    (lambda: jnp.unstack(jnp.float32(1)), ValueError, "at least one dimension"),
    (lambda: jnp.tile(a, -1), ValueError, "negative"),
    (lambda: jnp.repeat(v, -1), ValueError, "negative"),
    (lambda: jnp.repeat(v, jnp.array([1, -1, 0, 0, 0])), ValueError, "negative"),
    (lambda: jnp.repeat(v, jnp.array([1, 2])), ValueError, "one entry per element"),
    (lambda: jnp.repeat(v, 1.5), TypeError, "integers"),
    (lambda: jnp.flip(a, 2), np.exceptions.AxisError, "out of bounds"),
    (lambda: jnp.fliplr(v), ValueError, "at least two dimensions"),
    (lambda: jnp.rot90(v), ValueError, "at least two dimensions"),
    (lambda: jnp.rot90(a, axes=(0, 0)), ValueError, "repeated axis"),
    (lambda: jnp.roll(t, (1, 2, 3), (0, 1)), ValueError, "same length"),
    (lambda: jnp.pad(v, -1), ValueError, "non-negative"),
    (lambda: jnp.pad(v, ((1, 2), (3, 4))), ValueError, "cannot be broadcast"),
    (lambda: jnp.pad(v, 1, mode="bogus"), NotImplementedError, "unimplemented padding mode"),
    (lambda: jnp.pad(v, 1, mode="edge", constant_values=3), ValueError, "unsupported keyword"),
    (lambda: jnp.pad(v, 1, mode="reflect", reflect_type="weird"), ValueError, "reflect_type"),
    (lambda: jnp.pad(jnp.zeros(0), 1, mode="edge"), ValueError, "empty axis"),
    (lambda: jnp.pad(v, 1, mode="maximum", stat_length=0), ValueError, "stat_length"),
    (lambda: jnp.broadcast_to(a, (3, 3)), ValueError, "cannot broadcast"),
    (lambda: jnp.insert(v, jnp.array([[1]]), 0), ValueError, "one-dimensional"),
    (lambda: jnp.delete(v, 5), IndexError, "out of bounds"),
    (lambda: jnp.delete(v, -6), ValueError, "out of bounds"),  # JAX raises ValueError, NumPy IndexError
    (lambda: jnp.delete(v, jnp.array([True, False])), ValueError, "boolean mask"),
    (lambda: jnp.delete(v, 1.5), ValueError, "integer"),
    (lambda: jnp.trim_zeros(v, "x"), ValueError, "trim"),
    (lambda: jnp.block((v, v)), TypeError, "tuple"),
    (lambda: jnp.block([v, [v]]), ValueError, "depths are mismatched"),
    (lambda: jnp.block([]), ValueError, "cannot be empty"),
])
def test_bad_inputs(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_data_dependent_shapes_need_concrete_values():
    class Symbolic:  # stands for a value of a function being compiled: it has a type but no data
        aval = jnp.array([1, 2, 3, 4, 5]).aval

    with pytest.raises(TypeError, match="total_repeat_length"):
        jnp.repeat(v, Symbolic())
    with pytest.raises(TypeError, match="must be static"):
        jnp.delete(v, Symbolic())
    with pytest.raises(TypeError, match="must be static"):
        jnp.split(v, Symbolic())
    with pytest.raises(TypeError, match="concrete"):
        jnp.trim_zeros(Symbolic())
