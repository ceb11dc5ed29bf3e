"""srcjax.numpy reductions and lax's generic reductions against NumPy (float64 oracle, exact for integers and
bools), with the dtypes JAX 0.10.2 gives (recorded with jax, written here as literals), NumPy's keyword
arguments (axis, keepdims, dtype, where, initial, ddof), NaN handling, empty and 0-d input, and bad input."""

import warnings

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

RNG = np.random.default_rng(0)
F32, F16, I32, U32, I8, U8, B, C64 = "float32", "float16", "int32", "uint32", "int8", "uint8", "bool", "complex64"


def check(out, expected, dtype, weak=False):
    """``out`` has JAX's dtype and weak bit and NumPy's values (to the dtype's precision)."""
    assert str(out.dtype) == dtype, (out.dtype, dtype)
    assert out.weak_type == weak, (out.weak_type, weak)
    actual, expected = np.asarray(out), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "fc":
        tol = 5e-3 if dtype == F16 else 2e-5
        np.testing.assert_allclose(actual.astype(np.complex128), expected.astype(np.complex128), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(actual, expected)


X = RNG.standard_normal((3, 4))  # float64 data; the srcjax calls see it as float32
XN = X.copy()
XN[0, 1] = XN[2, 2] = XN[2, 3] = np.nan
XN[1] = np.nan
INTS = RNG.integers(-5, 6, size=(3, 4))
BOOLS = INTS > 0
MASK = RNG.integers(0, 2, size=(3, 4)).astype(bool)


def a(x, dtype=np.float32):
    return jnp.asarray(np.asarray(x).astype(dtype))


def quiet(fn, *args, **kwargs):
    """A NumPy oracle that may meet all-NaN or empty slices (its warnings are expected there)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


# (label, srcjax call, NumPy float64 oracle, JAX's dtype)
CASES = [
    # sum and prod: bools and narrow ints widen to int32, uint8 to uint32
    ("sum all", lambda: jnp.sum(a(X)), X.sum(), F32),
    ("sum axis", lambda: jnp.sum(a(X), axis=1), X.sum(1), F32),
    ("sum negative axis keepdims", lambda: jnp.sum(a(X), axis=-2, keepdims=True), X.sum(0, keepdims=True), F32),
    ("sum tuple axis", lambda: jnp.sum(a(X), axis=(0, 1)), X.sum(), F32),
    ("sum empty tuple axis", lambda: jnp.sum(a(X), axis=()), X, F32),
    ("sum bool", lambda: jnp.sum(a(BOOLS, bool)), BOOLS.sum(), I32),
    ("sum int8", lambda: jnp.sum(a(INTS, np.int8), axis=0), INTS.sum(0), I32),
    ("sum uint8", lambda: jnp.sum(a([200, 100], np.uint8)), 300, U32),
    ("sum float16", lambda: jnp.sum(a([1.5, 2.5], np.float16)), 4.0, F16),
    ("sum complex", lambda: jnp.sum(jnp.asarray(np.array([1 + 1j, 1 - 2j]))), 2 - 1j, C64),
    ("sum python int", lambda: jnp.sum(3), 3, I32),
    ("sum python float", lambda: jnp.sum(3.0), 3.0, F32),
    ("sum weak array", lambda: jnp.sum(lax.broadcast(2.0, (3,))), 6.0, F32),
    ("sum empty", lambda: jnp.sum(a(np.zeros((0, 4))), axis=0), np.zeros(4), F32),
    ("sum dtype int", lambda: jnp.sum(a([1.5, 2.5]), dtype=jnp.int32), 3, I32),
    ("sum initial", lambda: jnp.sum(a([1, 2], np.int32), initial=10), 13, I32),
    ("sum initial cast", lambda: jnp.sum(a([1, 2], np.int32), initial=0.5), 3, I32),
    ("sum no promotion", lambda: jnp.sum(a([1, 2], np.int8), promote_integers=False), 3, I8),
    ("sum bool no promotion", lambda: jnp.sum(a([True], bool), promote_integers=False), 1, I32),
    ("sum where", lambda: jnp.sum(a(X), axis=1, where=a(MASK, bool)), np.where(MASK, X, 0).sum(1), F32),
    ("sum where broadcast", lambda: jnp.sum(a(X), axis=0, where=a([True, False, True, True], bool)),
     np.where([True, False, True, True], X, 0).sum(0), F32),
    ("prod", lambda: jnp.prod(a(X), axis=0), X.prod(0), F32),
    ("prod bool", lambda: jnp.prod(a([True, False], bool)), 0, I32),
    ("prod uint8", lambda: jnp.prod(a([200, 100], np.uint8)), 20000, U32),
    ("prod where initial", lambda: jnp.prod(a([1.0, 2, 3]), where=a([True, False, True], bool), initial=2.0),
     6.0, F32),
    # max and min keep the dtype; where needs initial
    ("max", lambda: jnp.max(a(X), axis=1), X.max(1), F32),
    ("max keepdims", lambda: jnp.max(a(X), axis=1, keepdims=True), X.max(1, keepdims=True), F32),
    ("max bool", lambda: jnp.max(a(BOOLS, bool)), BOOLS.max(), B),
    ("max int8", lambda: jnp.max(a(INTS, np.int8)), INTS.max(), I8),
    ("max nan", lambda: jnp.max(a([1.0, np.nan, 3.0])), np.nan, F32),
    ("max where initial", lambda: jnp.max(a([1, 2], np.int32), where=a([True, False], bool), initial=0), 1, I32),
    ("max initial", lambda: jnp.max(a(np.zeros(0)), initial=3), 3.0, F32),
    ("max initial cast", lambda: jnp.max(a([1, 2], np.int32), initial=5.5), 5, I32),
    ("max over non-empty axis of empty", lambda: jnp.max(a(np.zeros((0, 3))), axis=1), np.zeros(0), F32),
    ("max complex", lambda: jnp.max(jnp.asarray(np.array([1 + 1j, 1 - 2j]))), 1 + 1j, C64),
    ("min", lambda: jnp.min(a(X), axis=(0, 1)), X.min(), F32),
    ("min where initial", lambda: jnp.min(a([1, 2], np.uint8), where=a([False, True], bool), initial=7), 2, U8),
    ("amax", lambda: jnp.amax(a(X), axis=0), X.max(0), F32),
    ("amin", lambda: jnp.amin(a(X), axis=0), X.min(0), F32),
    ("ptp", lambda: jnp.ptp(a(X), axis=0, keepdims=True), np.ptp(X, 0, keepdims=True), F32),
    ("ptp int", lambda: jnp.ptp(a(INTS, np.int32)), np.ptp(INTS), I32),
    ("allclose", lambda: jnp.allclose(a(X), a(X + 1e-7)), True, B),
    ("allclose nan", lambda: jnp.allclose(a([1.0, np.nan]), a([1.0, np.nan])), False, B),
    ("allclose equal_nan", lambda: jnp.allclose(a([1.0, np.nan]), a([1.0, np.nan]), equal_nan=True), True, B),
    ("allclose atol", lambda: jnp.allclose(a([1.0]), a([1.5]), atol=0.6), True, B),
    # all, any, count_nonzero
    ("all", lambda: jnp.all(a(INTS, np.int32), axis=0), INTS.all(0), B),
    ("all where", lambda: jnp.all(a([0.0, 2.0]), where=a([False, True], bool)), True, B),
    ("all nan is true", lambda: jnp.all(a([np.nan])), True, B),
    ("any keepdims", lambda: jnp.any(a(BOOLS, bool), axis=1, keepdims=True), BOOLS.any(1, keepdims=True), B),
    ("any empty", lambda: jnp.any(a(np.zeros(0))), False, B),
    ("all empty", lambda: jnp.all(a(np.zeros(0))), True, B),
    ("count_nonzero", lambda: jnp.count_nonzero(a(INTS, np.int32), axis=0, keepdims=True),
     np.count_nonzero(INTS, 0, keepdims=True), I32),
    ("count_nonzero nan and zeros", lambda: jnp.count_nonzero(a([np.nan, 0.0, -0.0])), 1, I32),
    # mean, var, std: integers become float32; float16 is accumulated in float32
    ("mean", lambda: jnp.mean(a(X), axis=0), X.mean(0), F32),
    ("mean keepdims", lambda: jnp.mean(a(X), axis=(0, 1), keepdims=True), X.mean(keepdims=True), F32),
    ("mean int8", lambda: jnp.mean(a(INTS, np.int8)), INTS.mean(), F32),
    ("mean bool", lambda: jnp.mean(a(BOOLS, bool)), BOOLS.mean(), F32),
    ("mean float16", lambda: jnp.mean(a([1.5, 2.5], np.float16)), 2.0, F16),
    ("mean python int", lambda: jnp.mean(3), 3.0, F32),
    ("mean dtype int", lambda: jnp.mean(a([1.0, 2.5]), dtype=jnp.int32), 1, I32),
    ("mean empty", lambda: jnp.mean(a(np.zeros(0))), np.nan, F32),
    ("mean where", lambda: jnp.mean(a(X), axis=1, where=a(MASK, bool)),
     quiet(np.divide, np.where(MASK, X, 0).sum(1), MASK.sum(1)), F32),
    ("mean complex", lambda: jnp.mean(jnp.asarray(np.array([1 + 1j, 1 - 2j]))), 1 - 0.5j, C64),
    ("var", lambda: jnp.var(a(X), axis=1), X.var(1), F32),
    ("var ddof keepdims", lambda: jnp.var(a(X), axis=1, ddof=1, keepdims=True), X.var(1, ddof=1, keepdims=True), F32),
    ("var int8", lambda: jnp.var(a(INTS, np.int8)), INTS.var(), F32),
    ("var float16", lambda: jnp.var(a([1.5, 2.5], np.float16)), 0.25, F16),
    ("var complex is real", lambda: jnp.var(jnp.asarray(np.array([1 + 1j, 2 - 1j]))), 1.25, F32),
    ("var correction", lambda: jnp.var(a([1.0, 2.0, 4.0]), correction=0.5), np.var([1.0, 2, 4]) * 3 / 2.5, F32),
    ("var ddof too large is nan", lambda: jnp.var(a([1.0, 2.0]), ddof=2), np.nan, F32),
    ("var given mean", lambda: jnp.var(a([1.0, 2.0]), mean=a(0.0)), 2.5, F32),
    ("var where", lambda: jnp.var(a([1.0, 2, 3, 8]), where=a([True, False, True, True], bool)),
     np.var([1.0, 3, 8]), F32),
    ("std", lambda: jnp.std(a(X), axis=0), X.std(0), F32),
    ("std int ddof", lambda: jnp.std(a([1, 2, 3], np.int32), ddof=1), 1.0, F32),
    ("std complex", lambda: jnp.std(jnp.asarray(np.array([1 + 1j, 2 - 1j, 0]))),
     np.std(np.array([1 + 1j, 2 - 1j, 0])), F32),
    # NaN-ignoring forms
    ("nansum", lambda: jnp.nansum(a(XN), axis=0), np.nansum(XN, 0), F32),
    ("nansum int8", lambda: jnp.nansum(a([1, 2], np.int8)), 3, I32),
    ("nanprod", lambda: jnp.nanprod(a(XN), axis=1), np.nanprod(XN, 1), F32),
    ("nanmax", lambda: jnp.nanmax(a(XN), axis=1), [np.nanmax(XN[0]), np.nan, np.nanmax(XN[2])], F32),
    ("nanmin keepdims", lambda: jnp.nanmin(a(XN), axis=0, keepdims=True), np.nanmin(XN, 0, keepdims=True), F32),
    ("nanmax all nan", lambda: jnp.nanmax(a([np.nan, np.nan])), np.nan, F32),
    ("nanmax int", lambda: jnp.nanmax(a([1, 2], np.int32)), 2, I32),
    # with an initial value, a slice of NaNs or one masked out gives it (JAX 0.10.2: [1, -5, 3])
    ("nanmax initial", lambda: jnp.nanmax(a([[1, np.nan, 3], [np.nan, np.nan, 2]]), axis=0, initial=-5.0,
                                          where=np.array([[1, 0, 1], [0, 0, 1]], bool)), [1, -5, 3], F32),
    ("nanmin initial all nan", lambda: jnp.nanmin(a([[np.nan, 1.0], [np.nan, 2.0]]), axis=0, initial=-5.0), [-5, -5],
     F32),
    ("nanmean", lambda: jnp.nanmean(a(XN), axis=1), [np.nanmean(XN[0]), np.nan, np.nanmean(XN[2])], F32),
    ("nanmean int8", lambda: jnp.nanmean(a([1, 2], np.int8)), 1.5, F32),
    ("nanvar", lambda: jnp.nanvar(a(XN), axis=1), [np.nanvar(XN[0]), np.nan, np.nanvar(XN[2])], F32),
    ("nanstd ddof", lambda: jnp.nanstd(a([np.nan, 1.0, 2.0, 4.0]), ddof=1), np.nanstd([1.0, 2, 4], ddof=1), F32),
    ("nanargmax", lambda: jnp.nanargmax(a(XN), axis=1), [np.nanargmax(XN[0]), -1, np.nanargmax(XN[2])], I32),
    ("nanargmin", lambda: jnp.nanargmin(a([np.nan, 3.0, 1.0])), 2, I32),
    ("nanargmax int", lambda: jnp.nanargmax(a([1, 3, 2], np.int32)), 1, I32),
    ("nancumsum", lambda: jnp.nancumsum(a(XN), axis=1), np.nancumsum(XN, 1), F32),
    ("nancumprod int8", lambda: jnp.nancumprod(a([1, 2, 3], np.int8)), [1, 2, 6], I8),
    ("nancumprod", lambda: jnp.nancumprod(a(XN)), np.nancumprod(XN), F32),
    # arg-reductions
    ("argmax", lambda: jnp.argmax(a(X), axis=1), X.argmax(1), I32),
    ("argmax flat", lambda: jnp.argmax(a(X)), X.argmax(), I32),
    ("argmax keepdims", lambda: jnp.argmax(a(X), axis=0, keepdims=True), X.argmax(0, keepdims=True), I32),
    ("argmax flat keepdims", lambda: jnp.argmax(a(X), keepdims=True), X.argmax(keepdims=True), I32),
    ("argmin", lambda: jnp.argmin(a(X), axis=-1), X.argmin(-1), I32),
    ("argmax bool", lambda: jnp.argmax(a([True, False, True], bool)), 0, I32),
    ("argmax 0-d", lambda: jnp.argmax(a(3.0)), 0, I32),
    ("argmax first nan", lambda: jnp.argmax(a([1.0, np.nan, 3.0, np.nan])), 1, I32),
    ("argmin first nan", lambda: jnp.argmin(a([1.0, np.nan, -3.0, np.nan])), 1, I32),
    # cumulative sums and products keep narrow ints (bools become int32); cumulative_* widens like sum
    ("cumsum flat", lambda: jnp.cumsum(a(X)), X.cumsum(), F32),
    ("cumsum axis", lambda: jnp.cumsum(a(X), axis=-1), X.cumsum(-1), F32),
    ("cumprod axis", lambda: jnp.cumprod(a(X), axis=0), X.cumprod(0), F32),
    ("cumsum bool", lambda: jnp.cumsum(a([True, False, True], bool)), [1, 1, 2], I32),
    ("cumsum int8", lambda: jnp.cumsum(a([1, 2, 3], np.int8)), [1, 3, 6], I8),
    ("cumsum uint8 wraps", lambda: jnp.cumsum(a([200, 100], np.uint8)), [200, 44], U8),
    ("cumprod bool", lambda: jnp.cumprod(a([True, False], bool)), [1, 0], I32),
    ("cumsum dtype", lambda: jnp.cumsum(a([1, 2, 3], np.int8), dtype=jnp.float32), [1.0, 3, 6], F32),
    ("cumsum 0-d", lambda: jnp.cumsum(a(3.0)), [3.0], F32),
    # (JAX 0.10.2: a Python scalar is a vector of one whatever the axis, as its _isscalar reads it)
    ("cumsum scalar axis", lambda: jnp.cumsum(3, axis=0), [3], I32),
    ("cumprod scalar axis", lambda: jnp.cumprod(2.5, axis=-1), [2.5], F32),
    ("cumsum weak", lambda: jnp.cumsum(lax.broadcast(2.0, (3,))), [2.0, 4, 6], F32),
    ("cumulative_sum int8", lambda: jnp.cumulative_sum(a([1, 2, 3], np.int8)), [1, 3, 6], I32),
    ("cumulative_sum bool", lambda: jnp.cumulative_sum(a([True, True], bool)), [1, 2], I32),
    ("cumulative_sum initial", lambda: jnp.cumulative_sum(a([1.0, 2, 3]), include_initial=True), [0.0, 1, 3, 6], F32),
    ("cumulative_prod initial", lambda: jnp.cumulative_prod(a([[1.0, 2], [3, 4]]), axis=1, include_initial=True),
     [[1.0, 1, 2], [1, 3, 12]], F32),
    # order statistics
    ("quantile", lambda: jnp.quantile(a([1.0, 2, 3, 4]), 0.3), 1.9, F32),
    ("quantile int and q array", lambda: jnp.quantile(a([1, 2, 3, 4], np.int32), a([0.3, 0.5])), [1.9, 2.5], F32),
    ("quantile float16", lambda: jnp.quantile(a([1, 2, 3, 4], np.float16), 0.3), 1.9, F16),
    ("quantile nan", lambda: jnp.quantile(a([1, 2, np.nan, 4]), 0.3), np.nan, F32),
    ("quantile q clamps", lambda: jnp.quantile(a([1.0, 2, 3, 4]), 1.3), 4.0, F32),
    ("quantile lower", lambda: jnp.quantile(a([1.0, 2, 3, 4]), 0.3, method="lower"), 1.0, F32),
    ("quantile higher", lambda: jnp.quantile(a([1.0, 2, 3, 4]), 0.3, method="higher"), 2.0, F32),
    ("quantile midpoint", lambda: jnp.quantile(a([1.0, 2, 3, 4]), 0.3, method="midpoint"), 1.5, F32),
    ("quantile nearest ties down", lambda: jnp.quantile(a([1.0, 2, 3, 4, 5]), a([0.125, 0.375, 0.625]),
                                                         method="nearest"), [1.0, 2, 3], F32),
    ("quantile axes keepdims", lambda: jnp.quantile(a(np.arange(24.0).reshape(2, 3, 4)), a([0.1, 0.7]), axis=(0, 2),
                                                    keepdims=True),
     np.quantile(np.arange(24.0).reshape(2, 3, 4), [0.1, 0.7], axis=(0, 2), keepdims=True), F32),
    ("quantile axis", lambda: jnp.quantile(a(X), 0.25, axis=1), np.quantile(X, 0.25, axis=1), F32),
    ("nanquantile", lambda: jnp.nanquantile(a(XN), 0.3, axis=1), quiet(np.nanquantile, XN, 0.3, axis=1), F32),
    ("nanquantile nearest", lambda: jnp.nanquantile(a([[1, 2, np.nan, 4], [np.nan, 1, 5, np.nan]]), a([0.3, 0.9]),
                                                    axis=1, method="nearest"), [[2.0, 1], [4, 5]], F32),
    ("median", lambda: jnp.median(a(X), axis=0), np.median(X, 0), F32),
    ("median keepdims", lambda: jnp.median(a(X), axis=1, keepdims=True), np.median(X, 1, keepdims=True), F32),
    ("median int", lambda: jnp.median(a([[1, 2, 3, 4], [2, 2, 9, 9]], np.int32), axis=1), [2.5, 5.5], F32),
    ("nanmedian", lambda: jnp.nanmedian(a([1, np.nan, 3, 4])), 3.0, F32),
    ("percentile", lambda: jnp.percentile(a([1, 2, 3, 4], np.int32), 30), 1.9, F32),
    ("percentile array", lambda: jnp.percentile(a(X), a([30, 95]), axis=0), np.percentile(X, [30, 95], axis=0), F32),
    ("nanpercentile", lambda: jnp.nanpercentile(a(XN), 50), np.nanpercentile(XN, 50), F32),
    ("percentile keeps float16", lambda: jnp.percentile(a([1, 2, 3, 4], np.float16), a(30.0)), 1.9, F16),
    ("quantile q does not promote", lambda: jnp.quantile(a([1, 2, 3, 4], np.int8), a(0.3, np.float16)),
     1 + 3 * float(np.float16(0.3)), F32),
    # average
    ("average", lambda: jnp.average(a(X)), X.mean(), F32),
    ("average weights axis", lambda: jnp.average(a(X), axis=-1, weights=a([1.0, 2, 3, 4]), keepdims=True),
     np.average(X, axis=-1, weights=[1.0, 2, 3, 4], keepdims=True), F32),
    ("average full weights", lambda: jnp.average(a(X), weights=a(np.abs(X))), np.average(X, weights=np.abs(X)), F32),
    ("average float16 with int weights", lambda: jnp.average(a([1, 2], np.float16), weights=a([1, 2], np.int32)),
     5 / 3, F16),
    ("average zero weights", lambda: jnp.average(a([1.0, 2]), weights=a([0.0, 0])), np.nan, F32),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_reduction_matches_numpy_with_jax_dtypes(case):
    _, call, expected, dtype = case
    check(call(), expected, dtype)


@pytest.mark.parametrize("call, expected, dtype", [
    (lambda: jnp.average(a([[1, 2], [3, 4]], np.int32), axis=1, weights=a([1, 3], np.int32), returned=True),
     ([1.75, 3.75], [4.0, 4.0]), F32),
    (lambda: jnp.average(a([[1, 2], [3, 4]], np.int32), axis=0, returned=True, keepdims=True),
     ([[2.0, 3.0]], [[2.0, 2.0]]), F32),
], ids=["weights", "no weights"])
def test_average_returned_gives_the_sum_of_weights(call, expected, dtype):
    avg, total = call()
    check(avg, expected[0], dtype)
    check(total, expected[1], dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.float16, np.float32, np.bool_])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax",
                                  "argmin", "cumsum", "cumprod", "median", "ptp", "count_nonzero"])
def test_every_reduction_over_dtypes_and_axes(name, dtype):
    """One table across dtypes: each function against NumPy's, over every axis form, in float64."""
    if name == "ptp" and dtype == np.bool_:  # max - min: bools cannot be subtracted, as in JAX
        with pytest.raises(TypeError, match="bool"):
            jnp.ptp(a(BOOLS, bool))
        return
    values = (np.abs(INTS) % 3 + 1) if dtype != np.bool_ else BOOLS  # small values: int32 products fit
    x = a(values, dtype)
    ref = values.astype(np.int64 if np.dtype(dtype).kind in "iu" else np.float64)
    for axis in ([None, 0, 1, -1] if name not in ("cumsum", "cumprod") else [None, 0, -1]):
        out = getattr(jnp, name)(x, axis=axis)
        expected = getattr(np, name)(ref, axis=axis)
        if name in ("cumsum", "cumprod") and np.dtype(dtype).kind in "iu":
            expected = expected.astype(dtype)  # JAX keeps narrow integers there, which wrap
        np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=2e-3 if dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("call, error, message", [
    (lambda: jnp.sum(a(X), axis=(0, -2)), ValueError, "duplicate value in 'axis'"),
    (lambda: jnp.sum(a(X), axis=2), ValueError, "axis 2 is out of bounds for array of dimension 2"),
    (lambda: jnp.sum(a(X), axis=1.0), TypeError, "axis must be"),
    (lambda: jnp.sum([1, 2]), TypeError, "sum requires ndarray or scalar arguments"),
    (lambda: jnp.sum(a(X), out=a(X)), NotImplementedError, "out"),
    (lambda: jnp.max(a([1, 2], np.int32), where=a([True, False], bool)), ValueError, "specify 'initial'"),
    (lambda: jnp.max(a(np.zeros(0))), ValueError, "zero-size array to reduction operation max"),
    (lambda: jnp.min(a(np.zeros((0, 3))), axis=0), ValueError, "zero-size array to reduction operation min"),
    (lambda: jnp.ptp(a([True, False], bool)), TypeError, "bool"),
    (lambda: jnp.var(a([1.0, 2.0]), ddof=1, correction=1), ValueError, "ddof and correction"),
    (lambda: jnp.argmax(a(np.zeros(0))), ValueError, "attempt to get argmax of an empty sequence"),
    (lambda: jnp.argmax(jnp.asarray(np.array([1j, 1]))), TypeError, "complex"),
    (lambda: jnp.argmin(a(X), axis=(0, 1)), TypeError, "axis must be an int"),
    (lambda: jnp.cumsum(a(3.0), axis=0), ValueError, "out of bounds"),
    (lambda: jnp.cumulative_sum(a(X)), ValueError, "axis may be omitted only for 1-d"),
    (lambda: jnp.cumulative_sum(a(2.0)), ValueError, "non-scalar"),
    (lambda: jnp.quantile(a([1.0, 2]), 0.3, method="weibull"), ValueError, "method can only be"),
    (lambda: jnp.quantile(a([1.0, 2]), 0.3, weights=a([1.0, 1.0])), NotImplementedError, "weights"),
    (lambda: jnp.quantile(a([1.0, 2]), 0.3, method="inverted_cdf", weights=a([1.0, 1.0], np.complex64)), ValueError,
     "complex"),
    (lambda: jnp.quantile(a(X), 0.3, method="inverted_cdf", weights=a([1.0, 2, 3, 4])), ValueError, "axis is None"),
    (lambda: jnp.median(a([1, 2], np.complex64)), ValueError, "complex input is not supported"),
    (lambda: jnp.average(a(X), weights=a([1.0, 2, 3, 4])), ValueError, "axis must be specified"),
    (lambda: jnp.average(a(X), axis=0, weights=a([1.0, 2, 3, 4])), ValueError, "must be 1-d with the length 3"),
], ids=lambda v: getattr(v, "__name__", str(v))[:30])
def test_bad_input_raises_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_inverted_cdf_quantiles_and_weights():
    # JAX 0.10.2 has method="inverted_cdf", the only one that takes weights (NumPy's values where weights are
    # non-negative); weights may have a's shape or the reduced axes' shape
    v, q = np.array([3.0, 1, 4, 1, 5, 9, 2, 6]), np.array([0.0, 0.1, 0.25, 0.5, 0.6, 0.75, 0.9, 1])
    w = np.array([1.0, 2, 0, 1, 3, 1, 1, 2])
    expected = np.quantile(v, q, method="inverted_cdf", weights=w)
    check(jnp.quantile(a(v), a(q), method="inverted_cdf", weights=a(w)), expected, F32)
    check(jnp.quantile(a(v), a(q), method="inverted_cdf"), np.quantile(v, q, method="inverted_cdf"), F32)
    compiled = srcjax.jit(lambda x, p, u: jnp.quantile(x, p, method="inverted_cdf", weights=u))(a(v), a(q), a(w))
    check(compiled, expected, F32)
    m = v.reshape(2, 4)
    check(jnp.percentile(a(m), 60.0, axis=1, method="inverted_cdf", weights=a(w[:4]), keepdims=True),
          np.percentile(m, 60.0, axis=1, method="inverted_cdf", weights=np.tile(w[:4], (2, 1)), keepdims=True), F32)
    t = np.arange(24.0).reshape(2, 3, 4) * 7 % 11
    wt = np.random.default_rng(3).random((2, 4))
    check(jnp.quantile(a(t), 0.4, axis=(2, 0), method="inverted_cdf", weights=a(wt.T)),
          np.quantile(t, 0.4, axis=(0, 2), method="inverted_cdf", weights=np.broadcast_to(wt[:, None, :], t.shape)),
          F32)
    # a negative or NaN weight gives NaN; nanquantile skips NaN values (JAX 0.10.2's numbers)
    check(jnp.quantile(a(v), 0.5, method="inverted_cdf", weights=a(w - 0.5)), np.nan, F32)
    check(jnp.nanquantile(a([3.0, np.nan, 1, 4, np.nan, 2]), a([0.1, 0.5, 1.0]), method="inverted_cdf",
                          weights=a([1.0, 2, 0, 1, 3, 1])), [2.0, 3.0, 4.0], F32)
    check(jnp.quantile(a([3.0, np.nan, 1]), 0.5, method="inverted_cdf"), np.nan, F32)


def test_results_are_never_weak():
    weak = lax.broadcast(2.0, (3,))
    assert weak.weak_type
    for fn in (jnp.sum, jnp.prod, jnp.max, jnp.mean, jnp.var, jnp.nansum, jnp.nanmax, jnp.median, jnp.cumsum):
        assert not fn(weak).weak_type, fn.__name__


def test_x64_sums_widen_to_int64():
    from srcjax import config

    config.update("jax_enable_x64", True)
    try:
        check(jnp.sum(a([1, 2], np.int32)), 3, "int64")
        # JAX 0.10.2 means narrower integers in float32 also with x64 on, 64-bit ones in float64
        check(jnp.mean(a([1, 2], np.int32)), 1.5, "float32")
        check(jnp.mean(a([1, 2], np.int64)), 1.5, "float64")
        check(jnp.argmax(a([1, 2], np.int32)), 1, "int64")
    finally:
        config.update("jax_enable_x64", False)


# -- lax's generic reductions -------------------------------------------------------------------------------
M = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("call, expected, dtype", [
    (lambda: lax.reduce(a(M), 0.0, lax.add, (1,)), [3.0, 12.0], F32),
    (lambda: lax.reduce(a(M), 1.0, lax.add, (1,)), [4.0, 13.0], F32),  # a non-identity init counts once
    (lambda: lax.reduce(a(M), 1.0, lax.mul, (0,)), [0.0, 4.0, 10.0], F32),
    (lambda: lax.reduce(a(M), -np.inf, lax.max, (0, 1)), 5.0, F32),
    (lambda: lax.reduce(a(M), 2.0, lax.min, (1,)), [0.0, 2.0], F32),
    (lambda: lax.reduce(a([[True, False], [True, True]], bool), True, lax.bitwise_and, (1,)), [False, True], B),
    (lambda: lax.reduce(a([3, 5, 6], np.int32), 0, lax.bitwise_xor, (0,)), 0, I32),
    (lambda: lax.reduce(a(M), 0.0, lambda x, y: lax.add(y, x), (0,)), [3.0, 5.0, 7.0], F32),
    (lambda: lax.reduce(a(M), 0.0, lambda x, y: lax.sub(x, y), (1,)), [-3.0, -12.0], F32),  # folded in order
    (lambda: lax.reduce(a(M, np.int32), 0, lax.add, (1,)), [3, 12], I32),
    (lambda: lax.reduce_window(a(M), 0.0, lax.add, (2, 2), (1, 1), "SAME"), [[8, 12, 7], [7, 9, 5]], F32),
    (lambda: lax.reduce_window(a(M), 1.0, lax.add, (2, 2), (1, 1), "SAME"), [[9, 13, 8], [8, 10, 6]], F32),
    (lambda: lax.reduce_window(a(M), -np.inf, lax.max, (2, 2), (1, 1), ((1, 0), (0, 1)), (1, 2), (1, 1)),
     [[0, 1, 1, 2, 2], [3, 4, 4, 5, 5]], F32),
    (lambda: lax.reduce_window(a(M), 0.0, lax.add, (2, 2), (1, 1), [(1, 1), (1, 1)], base_dilation=(2, 1)),
     [[0, 1, 3, 2], [0, 1, 3, 2], [3, 7, 9, 5], [3, 7, 9, 5]], F32),
    (lambda: lax.reduce_window(a(M, np.int32), 0, lax.max, (2, 2), (2, 2), "SAME"), [[4, 5]], I32),
    (lambda: lax.reduce_window(a([1.0, 2, 4, 8]), 0.0, lambda x, y: lax.sub(x, y), (2,), (1,), "VALID"),
     [-3.0, -6.0, -12.0], F32),
], ids=lambda v: getattr(v, "__name__", str(v))[:20])
def test_lax_generic_reductions_recorded_from_jax(call, expected, dtype):
    check(call(), expected, dtype)


def test_lax_reduce_of_several_operands():
    total, count = lax.reduce((a([1.0, 2, 3]), a([1, 1, 1], np.int32)), (0.0, 0),
                              lambda x, y: (lax.add(x[0], y[0]), lax.add(x[1], y[1])), (0,))
    check(total, 6.0, F32)
    check(count, 3, I32)


def test_lax_reduce_of_a_pytree_of_operands():
    # as JAX: operands, init values and the computation's results are one pytree (a dict here, keys unsorted)
    x = a([[1.0, -2, 3], [4, 5, -6]])
    out = lax.reduce({"max": x, "sum": x}, {"sum": 0.0, "max": -np.inf},
                     lambda p, q: {"sum": p["sum"] + q["sum"], "max": lax.max(p["max"], q["max"])}, (1,))
    check(out["sum"], [2.0, 3.0], F32)
    check(out["max"], [3.0, 5.0], F32)
    grad = srcjax.grad(lambda x: lax.reduce({"a": x}, {"a": 0.0}, lambda p, q: {"a": p["a"] + q["a"] * q["a"]},
                                            (0, 1))["a"])(x)
    check(grad, 2 * np.asarray(x), F32)
    # JAX returns the computation's structure
    pair = lax.reduce([x, x], [0.0, 1.0], lambda p, q: (p[0] + q[0], p[1] * q[1]), (0,))
    assert isinstance(pair, tuple)
    check(pair[1], [4.0, -10.0, -18.0], F32)
    with pytest.raises(ValueError, match="as many values"):
        lax.reduce({"a": x}, {"a": 0.0}, lambda p, q: (p["a"], q["a"]), (0,))


def test_lax_reduce_window_of_several_operands():
    # a max pool that keeps each window's column (the first where tied), recorded from JAX 0.10.2
    x = a([[1.0, 5, 2, 0], [3, 3, 4, 7], [0, 6, 1, 2]])

    def pool(x):
        def pick(p, q):
            first = p[0] >= q[0]
            return lax.select(first, p[0], q[0]), lax.select(first, p[1], q[1])

        columns = lax.broadcasted_iota(np.int32, x.shape, 1)
        return lax.reduce_window((x, columns), (-np.inf, np.int32(-1)), pick, (2, 2), (1, 2), [(0, 1), (1, 0)])

    for values, columns in [pool(x), srcjax.jit(pool)(x)]:
        check(values, [[3.0, 5.0], [3.0, 6.0], [0.0, 6.0]], F32)
        check(columns, [[0, 1], [0, 1], [0, 1]], I32)


def test_lax_integer_reductions_take_infinite_init_values_as_identities():
    # recorded from JAX 0.10.2: -inf and inf start max and min over integers (a max pool of an int image)
    x = a([[3, -5, 2], [7, 1, -9]], np.int32)
    check(lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "SAME"), [[7, 2, 2], [7, 1, -9]], I32)
    check(srcjax.jit(lambda x: lax.reduce_window(x, np.inf, lax.min, (1, 2), (1, 1), "SAME"))(x),
          [[-5, -5, 2], [1, -9, -9]], I32)
    check(lax.reduce(x, -np.inf, lax.max, (1,)), [3, 7], I32)
    check(lax.reduce_window(x.astype(np.uint8), -np.inf, lax.max, (2, 2), (1, 1), "SAME"),
          [[251, 251, 247], [7, 247, 247]], U8)


def test_lax_window_helpers():
    assert lax.padtype_to_pads((5, 6), (2, 3), (2, 2), "SAME") == [(0, 1), (0, 1)]
    assert lax.padtype_to_pads((5, 6), (2, 3), (2, 2), "SAME_LOWER") == [(1, 0), (1, 0)]
    assert lax.padtype_to_pads((5, 6), (2, 3), (2, 2), "VALID") == [(0, 0), (0, 0)]
    assert lax.reduce_window_shape_tuple((5, 6), (2, 3), (2, 2), ((0, 1), (1, 1))) == (3, 3)


@pytest.mark.parametrize("call, expected, dtype", [
    (lambda: lax.reduce_sum(a(M), (1,)), [3.0, 12.0], F32),
    (lambda: lax.reduce_max(a(np.zeros(0)), (0,)), -np.inf, F32),
    (lambda: lax.reduce_and(a([3, 5], np.int32), (0,)), 1, I32),
    (lambda: lax.reduce_xor(a([3, 5], np.int32), (0,)), 6, I32),
    (lambda: lax.argmax(a([1.0, 2]), 0, jnp.uint8), 1, U8),
    (lambda: lax.cumsum(a([1, 2, 3], np.int32), 0, reverse=True), [6, 5, 3], I32),
    (lambda: lax.cummax(a([1.0, 3, 2, 5]), reverse=True), [5.0, 5, 5, 5], F32),
    (lambda: lax.cumlogsumexp(a([1.0, 2, 3])), np.logaddexp.accumulate([1.0, 2, 3]), F32),
], ids=lambda v: getattr(v, "__name__", str(v))[:20])
def test_lax_reductions(call, expected, dtype):
    check(call(), expected, dtype)


def test_lax_reduce_sum_keeps_the_weak_type():
    check(lax.reduce_sum(lax.broadcast(2.0, (3,)), (0,)), 6.0, F32, weak=True)


@pytest.mark.parametrize("call, error, message", [
    (lambda: lax.reduce_sum(a(M), (-1,)), ValueError, "out of range"),
    (lambda: lax.cumsum(a(M), -1), ValueError, "out of range"),
    (lambda: lax.argmax(a([1.0]), 0, jnp.float32), TypeError, "index_dtype"),
    (lambda: lax.reduce(a(M), a(0, np.int32), lax.add, (0,)), TypeError, "init value"),
    (lambda: lax.reduce((a(M),), (0.0, 1.0), lax.add, (0,)), ValueError, "init value"),
    (lambda: lax.reduce_window(a(M), 0.0, lax.add, (2,), (1,)), ValueError, "one entry"),
    (lambda: lax.padtype_to_pads((5,), (2,), (1,), "FULL"), ValueError, "padding must be"),
], ids=lambda v: getattr(v, "__name__", str(v))[:20])
def test_lax_bad_input(call, error, message):
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
    (lambda x: jnp.sum(x, axis=1, where=jnp.asarray(MASK)), [(F32, (3,))]),
    (lambda x: jnp.var(x, axis=0, ddof=1, keepdims=True), [(F32, (1, 4))]),
    (lambda x: jnp.nanstd(x), [(F32, ())]),
    (lambda x: jnp.nanargmax(x, axis=0), [(I32, (4,))]),
    (lambda x: jnp.cumulative_prod(x, axis=1, include_initial=True), [(F32, (3, 5))]),
    (lambda x: jnp.quantile(x, jnp.asarray([0.1, 0.5]), axis=1), [(F32, (2, 3))]),
    (lambda x: jnp.nanmedian(x, axis=0, keepdims=True), [(F32, (1, 4))]),
    (lambda x: jnp.average(x, axis=1, weights=jnp.asarray([1.0, 2, 3, 4]), returned=True),
     [(F32, (3,)), (F32, (3,))]),
    (lambda x: lax.reduce(x, jnp.max(x), lax.max, (1,)), [(F32, (3,))]),
    (lambda x: lax.reduce(x, 0.0, lambda p, q: lax.sub(p, q), (1,)), [(F32, (3,))]),
    (lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "SAME"), [(F32, (3, 4))]),
], ids=lambda v: getattr(v, "__name__", str(v))[:20])
def test_reductions_run_on_symbolic_values(fn, expected):
    from srcjax.transpiler.types import TensorType

    types = symbolic(fn, TensorType(np.float32, (3, 4)))
    assert [(str(t.dtype), t.shape) for t in types] == expected


@pytest.mark.parametrize("computation, primitive", [
    (lax.add, "reduce_sum"), (lambda p, q: p + q, "reduce_sum"), (jnp.maximum, "reduce_max"),
    (lambda p, q: lax.min(q, p), "reduce_min"), (jnp.multiply, "reduce_prod"),
    (lambda p, q: p - q, None), (lambda p, q: p + 2 * q, None),
], ids=["lax.add", "plus", "jnp.maximum", "lax.min swapped", "jnp.multiply", "minus", "not a monoid"])
def test_lax_reduce_recognises_monoid_computations(computation, primitive):
    from srcjax.transpiler.builder import Builder
    from srcjax.transpiler.primitives import core
    from srcjax.transpiler.types import TensorType

    builder = Builder("f")
    x = builder.param(TensorType(np.float32, (3, 4)))
    with core.interpreting(builder):
        lax.reduce(x, 0.0, computation, (1,))
    names = [op.prim.name for op in builder.function.body.ops]
    if primitive is None:  # folded one element at a time
        assert "slice" in names and not any(name.startswith("reduce_") for name in names)
    else:
        assert names[0] == primitive


def test_compiled_float32_products_overflow_as_eagerly():
    # the compiled product accumulated float32 in float64 (and reordered it): 1e30 * 1e30 * 1e-30 * 1e-30 came
    # out 1 where NumPy, eager srcjax and JAX (inf, recorded from JAX 0.10.2) overflow on the way
    x = np.array([1e30, 1e30, 1e-30, 1e-30], np.float32)
    rows = np.tile(np.concatenate([x, np.ones(60, np.float32)]), (3, 1))
    with np.errstate(over="ignore"):
        assert np.isinf(float(jnp.prod(x))) and np.isinf(np.prod(x))
    for fn, arg in ((jnp.prod, x), (lambda v: jnp.prod(v * 1.0), x), (lambda v: jnp.prod(v, axis=1), rows)):
        out = np.asarray(srcjax.jit(fn)(arg))
        assert out.dtype == np.float32 and np.isinf(out).all()
    many = np.random.default_rng(0).uniform(0.99, 1.01, 5000).astype(np.float32)  # (in order: NumPy's bits)
    np.testing.assert_allclose(float(srcjax.jit(jnp.prod)(many)), np.prod(many), rtol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
def test_sums_and_products_to_bool_are_any_and_all(compiled):
    # dtype=bool: JAX 0.10.2 reduces with or (sum) and and (prod), and accumulates the truth values as ints for
    # cumsum / cumprod (srcjax refused: "reduce_sum: does not accept bool operands")
    x = np.array([[0.0, np.nan, -1.0], [0.0, 0.0, 0.0]], np.float32)
    cases = [(jnp.sum, {}), (jnp.sum, {"axis": 1}), (jnp.prod, {"axis": 0}),
             (jnp.prod, {"axis": 1, "keepdims": True, "initial": True}), (jnp.cumsum, {"axis": 1}),
             (jnp.cumprod, {"axis": 1}), (jnp.cumsum, {})]
    for fn, options in cases:
        call = lambda a, fn=fn, options=options: fn(a, dtype=bool, **options)  # noqa: E731
        for arg in (x, x.astype(np.int32)):
            out = (srcjax.jit(call) if compiled else call)(jnp.asarray(arg))
            check(out, _bool_reference(fn, options, arg != 0), B)


def _bool_reference(fn, options, truth):
    axis, keep = options.get("axis"), options.get("keepdims", False)
    if fn is jnp.sum:
        return truth.any(axis, keepdims=keep)
    if fn is jnp.prod:
        return truth.all(axis, keepdims=keep)
    accumulate = np.logical_or if fn is jnp.cumsum else np.logical_and
    return accumulate.accumulate(truth.ravel() if axis is None else truth, 0 if axis is None else axis)
