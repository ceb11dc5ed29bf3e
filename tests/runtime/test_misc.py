"""srcjax.numpy's numerical odds and ends against NumPy (float64 oracle, exact for integers and bools), with
the dtypes and weak types JAX 0.10.2 gives (recorded with jax, written here as literals), and bad inputs."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp

F32, I32, B, C64, U8 = "float32", "int32", "bool", "complex64", "uint8"

RNG = np.random.default_rng(7)
X = RNG.standard_normal(9)  # float64 oracle data; jnp.asarray(X) is float32
M = RNG.standard_normal((3, 5))
x, m = jnp.asarray(X), jnp.asarray(M)
I = np.array([3, 1, 4, 1, 5, 9, 2, 6])
i = jnp.asarray(I)


def f32(a):
    """The float32 values the srcjax call sees, in float64 for the NumPy oracle."""
    return np.asarray(a, np.float32).astype(np.float64)


def _filled(a, value, **kwargs):
    np.fill_diagonal(a, value, **kwargs)
    return a


def check(out, expected, dtype, weak=False, rtol=2e-6, atol=2e-6):
    """``out`` has JAX's dtype and weak bit and NumPy's values (to float32 precision for inexact dtypes)."""
    assert str(out.dtype) == dtype, (out.dtype, dtype)
    assert out.weak_type == weak, (out.weak_type, weak)
    actual, expected = np.asarray(out), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, expected)


DIFFERENCES = [
    ("diff", lambda: jnp.diff(x), np.diff(f32(X)), F32, False),
    ("diff int", lambda: jnp.diff(i), np.diff(I), I32, False),
    ("diff n=2 axis 0", lambda: jnp.diff(m, 2, axis=0), np.diff(f32(M), 2, axis=0), F32, False),
    ("diff n=0", lambda: jnp.diff(i, 0), I, I32, False),
    ("diff n past length", lambda: jnp.diff(jnp.arange(3), 5), np.diff(np.arange(3), 5), I32, False),
    ("diff bool", lambda: jnp.diff(jnp.array([True, False, False])), np.diff([True, False, False]), B, False),
    ("diff prepend weak int", lambda: jnp.diff(i, prepend=0), np.diff(I, prepend=0), I32, False),
    ("diff prepend float weak", lambda: jnp.diff(jnp.arange(5), prepend=0.5),
     np.diff(np.arange(5), prepend=0.5), F32, True),
    ("diff append array", lambda: jnp.diff(m, append=jnp.zeros((3, 2))), np.diff(f32(M), append=np.zeros((3, 2))),
     F32, False),
    ("ediff1d", lambda: jnp.ediff1d(m), np.ediff1d(f32(M)), F32, False),
    ("ediff1d ends cast", lambda: jnp.ediff1d(jnp.arange(5), to_begin=jnp.array(9.5), to_end=jnp.array([7, 8])),
     [9, 1, 1, 1, 1, 7, 8], I32, False),
    ("gradient", lambda: jnp.gradient(x), np.gradient(f32(X)), F32, False),
    ("gradient int", lambda: jnp.gradient(i * i), np.gradient(I * I), F32, False),
    ("gradient spacing", lambda: jnp.gradient(x, 0.5), np.gradient(f32(X), 0.5), F32, False),
    ("gradient coordinates", lambda: jnp.gradient(x, jnp.asarray(np.cumsum(np.arange(1.0, 10)))),
     np.gradient(f32(X), np.cumsum(np.arange(1.0, 10))), F32, False),
    ("gradient one axis", lambda: jnp.gradient(m, axis=1), np.gradient(f32(M), axis=1), F32, False),
    ("gradient keeps weak", lambda: jnp.gradient(jnp.full(3, 2.0)), np.zeros(3), F32, True),
    ("gradient two points", lambda: jnp.gradient(jnp.array([1.0, 4.0])), np.gradient([1.0, 4.0]), F32, False),
    ("trapezoid", lambda: jnp.trapezoid(x), np.trapezoid(f32(X)), F32, False),
    ("trapezoid int", lambda: jnp.trapezoid(jnp.arange(5)), np.trapezoid(np.arange(5)), F32, False),
    ("trapezoid dx axis", lambda: jnp.trapezoid(m, dx=0.5, axis=0), np.trapezoid(f32(M), dx=0.5, axis=0), F32,
     False),
    ("trapezoid x", lambda: jnp.trapezoid(m, jnp.arange(5.0) ** 2), np.trapezoid(f32(M), np.arange(5.0) ** 2),
     F32, False),
    ("trapezoid x 2-d", lambda: jnp.trapezoid(jnp.ones((2, 3)), x=jnp.array([[0.0, 1, 3], [0, 2, 3]])),
     np.trapezoid(np.ones((2, 3)), x=[[0.0, 1, 3], [0, 2, 3]]), F32, False),
    ("unwrap", lambda: jnp.unwrap(jnp.array([0.0, 3, 6.5, 1])), np.unwrap([0.0, 3, 6.5, 1]), F32, False),
    ("unwrap int", lambda: jnp.unwrap(jnp.array([0, 3, 7, 1])), np.unwrap(np.array([0.0, 3, 7, 1])), F32, False),
    ("unwrap period", lambda: jnp.unwrap(jnp.array([0.0, 5, 9, 2, 7]), period=6),
     np.unwrap([0.0, 5, 9, 2, 7], period=6), F32, False),
    ("unwrap discont axis", lambda: jnp.unwrap(m * 4, discont=4.0, axis=0),
     np.unwrap(f32(M) * 4, discont=4.0, axis=0), F32, False),
]

XP, FP = np.array([0.0, 1, 2.5, 4]), np.array([1.0, -2, 3, 0])
POINTS = np.array([-1.0, 0, 0.5, 1, 2, 2.5, 3.9, 4, 5])
INTERPOLATION = [
    ("interp", lambda: jnp.interp(POINTS, XP, FP), np.interp(POINTS, XP, FP), F32, False),
    ("interp left right", lambda: jnp.interp(POINTS, XP, FP, left=-9, right=9),
     np.interp(POINTS, XP, FP, left=-9, right=9), F32, False),
    ("interp ints", lambda: jnp.interp(jnp.array([0.5, 1.5]), jnp.array([0, 1, 2]), jnp.array([0, 10, 20])),
     [5.0, 15.0], F32, False),
    ("interp scalar", lambda: jnp.interp(1, jnp.array([0, 1, 2]), jnp.array([0, 10, 20])), 10.0, F32, False),
    ("interp period", lambda: jnp.interp(jnp.array([-1.0, 5, 7.5]), jnp.array([0.0, 2, 4, 6]),
                                         jnp.array([1.0, 3, 2, 0]), period=8),
     np.interp([-1.0, 5, 7.5], [0.0, 2, 4, 6], [1.0, 3, 2, 0], period=8), F32, False),
    ("interp complex", lambda: jnp.interp(jnp.array([0.5]), jnp.array([0.0, 1]), jnp.array([0, 1j])), [0.5j], C64,
     False),
    ("interp all weak stays weak", lambda: jnp.interp(jnp.full(2, 2.0), jnp.full(2, 1.0) * jnp.array([0, 1]),
                                                      jnp.full(2, 3.0)), [3.0, 3.0], F32, True),
    ("interp extrapolate", lambda: jnp.interp(-1.0, jnp.array([0.0, 1]), jnp.array([3.0, 4]), left="extrapolate"),
     2.0, F32, False),
]

POLYNOMIALS = [
    ("polyval", lambda: jnp.polyval(jnp.array([1.0, -2, 3]), x), np.polyval([1.0, -2, 3], f32(X)), F32, False),
    ("polyval int", lambda: jnp.polyval(jnp.array([1, 2]), 3), 5, I32, False),
    ("polyval weak x", lambda: jnp.polyval(jnp.array([1.0, 2]), 3.0), 5.0, F32, False),
    ("polyval is never weak", lambda: jnp.polyval(jnp.array([1, 2]), 3.5), 5.5, F32, False),
    ("polyadd", lambda: jnp.polyadd(jnp.array([1, 2]), jnp.array([1.0, 2, 3])), np.polyadd([1, 2], [1.0, 2, 3]),
     F32, False),
    ("polyadd int", lambda: jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 2, 3])), np.polyadd([1, 2], [1, 2, 3]),
     I32, False),
    ("polysub", lambda: jnp.polysub(jnp.array([1.0, 2, 3]), jnp.array([4.0, 5])), np.polysub([1.0, 2, 3], [4, 5]),
     F32, False),
    ("polymul int", lambda: jnp.polymul(jnp.array([1, 2]), jnp.array([1, 2, 3])), np.polymul([1, 2], [1, 2, 3]),
     F32, False),
    ("polymul trim", lambda: jnp.polymul(jnp.array([0.0, 1, 2]), jnp.array([3.0]), trim_leading_zeros=True),
     np.polymul([1, 2], [3.0]), F32, False),
    ("polyder int", lambda: jnp.polyder(jnp.array([1, 2, 3, 4]), 2), np.polyder([1, 2, 3, 4], 2), F32, False),
    ("polyder 0", lambda: jnp.polyder(jnp.array([1.0, 2, 3]), 0), [1.0, 2, 3], F32, False),
    ("polyder past degree", lambda: jnp.polyder(jnp.array([1.0, 2, 3]), 3), np.zeros(0), F32, False),
    ("polyint int", lambda: jnp.polyint(jnp.array([1, 2, 3])), np.polyint([1, 2, 3]), F32, False),
    ("polyint constants", lambda: jnp.polyint(jnp.array([1.0, 2, 3]), m=2, k=jnp.array([5, 7])),
     np.polyint([1.0, 2, 3], m=2, k=[5, 7]), F32, False),
    ("polyint scalar constant", lambda: jnp.polyint(jnp.array([3.0]), m=3, k=2), np.polyint([3.0], m=3, k=2), F32,
     False),
    ("poly int", lambda: jnp.poly(jnp.array([1, 2])), np.poly([1, 2]), F32, False),
    ("poly", lambda: jnp.poly(x[:4]), np.poly(f32(X)[:4]), F32, False),
    ("poly complex", lambda: jnp.poly(jnp.array([1j, -1j])), [1.0, 0, 1], C64, False),
    ("poly empty", lambda: jnp.poly(jnp.zeros(0)), np.float64(1.0), F32, False),  # 0-d, as JAX and NumPy give
    ("poly scalar is one root", lambda: jnp.poly(jnp.float32(2.0)), [1.0, -2.0], F32, False),  # JAX's; NumPy raises
    # an empty polynomial multiplies as [0] (JAX 0.10.2: polymul([], [2, 1]) = [0, 0])
    ("polymul empty", lambda: jnp.polymul(jnp.zeros(0), jnp.array([2.0, 1])), [0.0, 0.0], F32, False),
    ("polymul empty trim", lambda: jnp.polymul(jnp.zeros(0), jnp.array([0.0, 2, 1]), trim_leading_zeros=True),
     [0.0, 0.0], F32, False),
    ("vander int", lambda: jnp.vander(jnp.array([1, 2, 3])), np.vander([1, 2, 3]), I32, False),
    ("vander increasing", lambda: jnp.vander(x, 4, increasing=True), np.vander(f32(X), 4, increasing=True), F32,
     False),
    ("vander is never weak", lambda: jnp.vander(jnp.full(2, 2.0)), [[2.0, 1], [2, 1]], F32, False),
    ("vander no columns", lambda: jnp.vander(jnp.arange(3), 0), np.vander(np.arange(3), 0), I32, False),
]

COUNTING = [
    ("bincount", lambda: jnp.bincount(i), np.bincount(I), I32, False),
    ("bincount weights", lambda: jnp.bincount(i, weights=x[:8]), np.bincount(I, f32(X)[:8]), F32, False),
    ("bincount minlength", lambda: jnp.bincount(jnp.array([1]), minlength=3), [0, 1, 0], I32, False),
    ("bincount length drops", lambda: jnp.bincount(jnp.array([1, 4]), length=3), [0, 1, 0], I32, False),
    ("bincount negative clipped", lambda: jnp.bincount(jnp.array([-1, 1])), [1, 1], I32, False),
    ("bincount bool", lambda: jnp.bincount(jnp.array([True, True])), [0, 2], I32, False),
    ("bincount empty", lambda: jnp.bincount(jnp.zeros(0, int)), np.zeros(0), I32, False),
    ("digitize", lambda: jnp.digitize(x, jnp.array([-1.0, 0, 0.5])), np.digitize(f32(X), [-1.0, 0, 0.5]), I32,
     False),
    ("digitize right", lambda: jnp.digitize(jnp.array([1.0, 2.5, 4]), jnp.array([1.0, 2.5, 4]), right=True),
     np.digitize([1.0, 2.5, 4], [1.0, 2.5, 4], right=True), I32, False),
    ("digitize decreasing", lambda: jnp.digitize(jnp.array([0.2, 6.4, 3.0, 1.6]), jnp.array([10.0, 4, 2.5, 1, 0])),
     np.digitize([0.2, 6.4, 3.0, 1.6], [10.0, 4, 2.5, 1, 0]), I32, False),
    ("digitize decreasing right", lambda: jnp.digitize(jnp.array([4.0, 1, 7]), jnp.array([10.0, 4, 1]), True),
     np.digitize([4.0, 1, 7], [10.0, 4, 1], True), I32, False),
    ("histogram_bin_edges", lambda: jnp.histogram_bin_edges(x, 4), np.histogram_bin_edges(f32(X), 4), F32, False),
    ("histogram_bin_edges range", lambda: jnp.histogram_bin_edges(x, 3, range=(-1, 2)),
     np.histogram_bin_edges(X, 3, range=(-1, 2)), F32, False),
    ("histogram_bin_edges flat", lambda: jnp.histogram_bin_edges(jnp.array([1, 1]), 2), [0.5, 1, 1.5], F32, False),
    ("histogram_bin_edges given", lambda: jnp.histogram_bin_edges(jnp.array([1, 2]), jnp.array([0, 1, 5])),
     [0.0, 1, 5], F32, False),
]

SETS = [
    ("isin", lambda: jnp.isin(jnp.arange(6).reshape(2, 3), jnp.array([1, 3, 5, 7])),
     np.isin(np.arange(6).reshape(2, 3), [1, 3, 5, 7]), B, False),
    ("isin invert", lambda: jnp.isin(i, jnp.array([1, 9]), invert=True), np.isin(I, [1, 9], invert=True), B, False),
    ("isin sort", lambda: jnp.isin(i, jnp.array([9, 1, 2]), method="sort"), np.isin(I, [9, 1, 2]), B, False),
    ("isin binary_search", lambda: jnp.isin(x, x[::2], method="binary_search"), np.isin(X, X[::2]), B, False),
    ("isin nothing", lambda: jnp.isin(i, jnp.zeros(0, int)), np.zeros(8, bool), B, False),
    ("union1d", lambda: jnp.union1d(i, jnp.array([0, 4, 11])), np.union1d(I, [0, 4, 11]), I32, False),
    ("union1d mixed", lambda: jnp.union1d(jnp.array([1, 2]), jnp.array([1.5])), [1.0, 1.5, 2], F32, False),
    ("union1d keeps weak", lambda: jnp.union1d(jnp.full(3, 2.0), jnp.full(3, 3.0)), [2.0, 3], F32, True),
    ("union1d 2-d", lambda: jnp.union1d(jnp.array([[3, 1], [1, 2]]), jnp.array([2])), [1, 2, 3], I32, False),
    ("intersect1d", lambda: jnp.intersect1d(i, jnp.array([9, 1, 7, 1])), np.intersect1d(I, [9, 1, 7, 1]), I32,
     False),
    ("intersect1d empty", lambda: jnp.intersect1d(i, jnp.array([0])), np.zeros(0), I32, False),
    ("setdiff1d", lambda: jnp.setdiff1d(i, jnp.array([1, 5])), np.setdiff1d(I, [1, 5]), I32, False),
    ("setdiff1d assume unique keeps order", lambda: jnp.setdiff1d(jnp.array([5, 1, 3]), jnp.array([1]), True),
     [5, 3], I32, False),
    ("setxor1d", lambda: jnp.setxor1d(i, jnp.array([1, 7, 7, 2])), np.setxor1d(I, [1, 7, 7, 2]), I32, False),
    # recorded from jax 0.10.2: the fill values JAX uses when size= is larger than the result
    ("intersect1d size", lambda: jnp.intersect1d(jnp.array([1, 3, 4, 3]), jnp.array([3, 1, 2, 1]), size=4),
     [1, 3, 1, 1], I32, False),
    ("union1d size", lambda: jnp.union1d(jnp.array([1, 3, 4, 3]), jnp.array([3, 1, 2, 1]), size=6),
     [1, 2, 3, 4, 1, 1], I32, False),
    ("setdiff1d size", lambda: jnp.setdiff1d(jnp.array([1, 3, 4, 3, 7]), jnp.array([3, 1, 2, 1]), size=4),
     [4, 7, 0, 0], I32, False),
    ("setxor1d size", lambda: jnp.setxor1d(jnp.array([1, 3, 4, 3, 7]), jnp.array([3, 1, 2, 1]), size=5),
     [2, 4, 7, 2, 2], I32, False),
    ("setxor1d size fill", lambda: jnp.setxor1d(jnp.array([1, 3, 4, 3, 7]), jnp.array([3, 1, 2, 1]), size=5,
                                                fill_value=-1), [2, 4, 7, -1, -1], I32, False),
    ("union1d size cuts", lambda: jnp.union1d(i, i, size=2), [1, 2], I32, False),
]

STATISTICS = [
    ("cov", lambda: jnp.cov(m), np.cov(f32(M)), F32, False),
    ("cov int", lambda: jnp.cov(jnp.array([[0, 2], [1, 1], [2, 0]]).T), np.cov(np.array([[0, 2], [1, 1], [2, 0]]).T),
     F32, False),
    ("cov 1-d", lambda: jnp.cov(jnp.array([1.0, 2, 4])), np.cov([1.0, 2, 4]), F32, False),
    ("cov columns", lambda: jnp.cov(m, rowvar=False), np.cov(f32(M), rowvar=False), F32, False),
    ("cov with y", lambda: jnp.cov(m[0], m[1]), np.cov(f32(M)[0], f32(M)[1]), F32, False),
    ("cov bias", lambda: jnp.cov(m, bias=True), np.cov(f32(M), bias=True), F32, False),
    ("cov ddof", lambda: jnp.cov(m, ddof=2), np.cov(f32(M), ddof=2), F32, False),
    ("cov weights", lambda: jnp.cov(m, fweights=jnp.array([1, 2, 1, 3, 1]), aweights=jnp.array([0.5, 1, 2, 1, 1])),
     np.cov(f32(M), fweights=[1, 2, 1, 3, 1], aweights=[0.5, 1, 2, 1, 1]), F32, False),
    ("cov fweights ddof 0", lambda: jnp.cov(m, fweights=jnp.array([1, 2, 1, 3, 1]), ddof=0),
     np.cov(f32(M), fweights=[1, 2, 1, 3, 1], ddof=0), F32, False),
    ("cov complex", lambda: jnp.cov(m + 1j * m[::-1]), np.cov(f32(M) + 1j * f32(M)[::-1]), C64, False),
    ("corrcoef", lambda: jnp.corrcoef(m), np.corrcoef(f32(M)), F32, False),
    ("corrcoef with y", lambda: jnp.corrcoef(x[:5], m[1]), np.corrcoef(f32(X)[:5], f32(M)[1]), F32, False),
    ("corrcoef single", lambda: jnp.corrcoef(jnp.array([1.0, 2, 4])), 1.0, F32, False),
]

BITS = [
    ("packbits", lambda: jnp.packbits(jnp.array([1, 0, 1, 1, 0, 0, 0, 0, 1])),
     np.packbits([1, 0, 1, 1, 0, 0, 0, 0, 1]), U8, False),
    ("packbits little axis", lambda: jnp.packbits(jnp.array([[1, 0, 1], [0, 1, 1]]), axis=1, bitorder="little"),
     np.packbits([[1, 0, 1], [0, 1, 1]], axis=1, bitorder="little"), U8, False),
    ("packbits bool axis 0", lambda: jnp.packbits(jnp.asarray(M > 0), axis=0), np.packbits(M > 0, axis=0), U8,
     False),
    ("packbits nonzero counts", lambda: jnp.packbits(jnp.array([2, -1, 0])), np.packbits(np.array([2, -1, 0]) != 0),
     U8, False),
    ("unpackbits", lambda: jnp.unpackbits(jnp.array([3, 255], jnp.uint8)), np.unpackbits(np.array([3, 255], np.uint8)),
     U8, False),
    ("unpackbits count", lambda: jnp.unpackbits(jnp.array([3, 255], jnp.uint8), count=-3),
     np.unpackbits(np.array([3, 255], np.uint8), count=-3), U8, False),
    ("unpackbits count pads", lambda: jnp.unpackbits(jnp.array([3], jnp.uint8), count=10),
     np.unpackbits(np.array([3], np.uint8), count=10), U8, False),
    ("unpackbits axis little", lambda: jnp.unpackbits(jnp.array([[3], [128]], jnp.uint8), axis=0, bitorder="little"),
     np.unpackbits(np.array([[3], [128]], np.uint8), axis=0, bitorder="little"), U8, False),
    ("fill_diagonal", lambda: jnp.fill_diagonal(jnp.zeros((3, 3)), 5, inplace=False),
     np.diag(np.full(3, 5.0)), F32, False),
    ("fill_diagonal cycles values", lambda: jnp.fill_diagonal(jnp.zeros((4, 4), int), jnp.array([1, 2]),
                                                              inplace=False),
     _filled(np.zeros((4, 4), int), [1, 2]), I32, False),
    ("fill_diagonal tall", lambda: jnp.fill_diagonal(jnp.zeros((4, 2), int), jnp.array([1.0, 2, 3]), inplace=False),
     [[1, 0], [0, 2], [0, 0], [0, 0]], I32, False),
    ("fill_diagonal tall wrap", lambda: jnp.fill_diagonal(jnp.zeros((7, 3)), jnp.arange(1.0, 4), wrap=True,
                                                          inplace=False),
     _filled(np.zeros((7, 3)), np.arange(1.0, 4), wrap=True), F32, False),
    ("fill_diagonal wide", lambda: jnp.fill_diagonal(jnp.zeros((2, 5)), 1, inplace=False),
     _filled(np.zeros((2, 5)), 1), F32, False),
    ("fill_diagonal cube", lambda: jnp.fill_diagonal(jnp.zeros((2, 2, 2)), 5, inplace=False),
     _filled(np.zeros((2, 2, 2)), 5), F32, False),
]


CASES = DIFFERENCES + INTERPOLATION + POLYNOMIALS + COUNTING + SETS + STATISTICS + BITS


@pytest.mark.parametrize("label, call, expected, dtype, weak", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_with_jax_dtypes(label, call, expected, dtype, weak):
    check(call(), expected, dtype, weak, rtol=2e-5, atol=2e-5)


def test_gradient_over_several_axes_gives_a_list():
    out = jnp.gradient(m, 2.0, jnp.asarray(np.arange(5.0) ** 2))
    expected = np.gradient(f32(M), 2.0, np.arange(5.0) ** 2)
    assert isinstance(out, list) and len(out) == 2
    for o, e in zip(out, expected, strict=True):
        check(o, e, F32, rtol=2e-5, atol=2e-5)


def test_i0_against_numpy():
    xs = np.concatenate([np.linspace(-88, 88, 801), [0.0, 14.999, 15.0, 15.001]])
    out = jnp.i0(jnp.asarray(xs, np.float32))
    check(out, np.i0(f32(xs)), F32, rtol=1e-6, atol=0)
    check(jnp.i0(1), np.i0(1.0), F32, weak=True)  # recorded from jax 0.10.2: a Python scalar stays weak
    check(jnp.i0(jnp.arange(3)), np.i0(np.arange(3.0)), F32)
    assert np.isinf(np.asarray(jnp.i0(100.0)))  # I0(100) ~ 1e42 overflows float32
    # float16: the value and a finite slope I1(x) (it was NaN: the unused branch overflowed float16)
    h = np.array([-1.5, 0.0, 0.7, 5.0, 11.0], np.float16)
    check(jnp.i0(h), np.i0(h.astype(np.float64)).astype(np.float16), "float16", rtol=2e-3, atol=0)
    slope = srcjax.vmap(srcjax.grad(jnp.i0))(h)
    assert slope.dtype == np.float16
    np.testing.assert_allclose(np.asarray(slope, np.float64), [-0.9814, 0.0, 0.3721, 24.31, 6948.0],
                               rtol=3e-3)  # I1(x), as JAX 0.10.2 gives in float16
    srcjax.config.update("jax_enable_x64", True)
    try:
        xs = np.linspace(-60, 60, 1201)
        out = jnp.i0(jnp.asarray(xs))
        assert out.dtype == np.float64
        np.testing.assert_allclose(np.asarray(out), np.i0(xs), rtol=1e-14)
    finally:
        srcjax.config.update("jax_enable_x64", False)
    with pytest.raises(TypeError, match="complex"):
        jnp.i0(jnp.ones(2, jnp.complex64))


@pytest.mark.parametrize("coefficients", [[1.0, -3, 2], [0.0, 1, -3, 2, 0], [2.0, 0, 1], [1.0, 2], [3.0], [0.0, 0],
                                          [1.0, -6, 11, -6, 0.5]])
def test_roots(coefficients):
    out = jnp.roots(jnp.asarray(coefficients))
    assert out.dtype == np.complex64  # always complex in JAX
    expected = np.roots(coefficients)
    key = lambda z: (round(z.real, 3), round(z.imag, 3))  # noqa: E731
    np.testing.assert_allclose(sorted(np.asarray(out), key=key), sorted(expected, key=key), atol=2e-5)


def test_roots_without_stripping_gives_nan_for_each_leading_zero():
    # JAX 0.10.2: roots([0, 0, 1, -3, 2], strip_zeros=False) = [1, 2, nan+nanj, nan+nanj] (the zero roots the
    # leading zeros give sort last and become NaN); all zeros give only NaNs; it compiles, as JAX's does
    p = jnp.array([0.0, 0, 1, -3, 2])
    for out in (jnp.roots(p, strip_zeros=False), srcjax.jit(lambda p: jnp.roots(p, strip_zeros=False))(p)):
        assert out.dtype == np.complex64 and out.shape == (4,)
        np.testing.assert_allclose(np.sort_complex(np.asarray(out)[:2]), [1.0, 2.0], atol=1e-5)
        assert np.isnan(np.asarray(out)[2:].real).all() and np.isnan(np.asarray(out)[2:].imag).all()
    assert np.isnan(np.asarray(jnp.roots(jnp.zeros(3), strip_zeros=False))).all()
    np.testing.assert_allclose(np.sort_complex(np.asarray(jnp.roots(jnp.array([1.0, -3, 2, 0]), strip_zeros=False))),
                               [0.0, 1.0, 2.0], atol=1e-5)


def test_polydiv():
    q, r = jnp.polydiv(jnp.array([1.0, 3, 2]), jnp.array([1.0, 1]))
    check(q, [1.0, 2], F32)
    check(r, [0.0, 0, 0], F32)  # JAX keeps the dividend's length
    q, r = jnp.polydiv(jnp.array([2.0, -3, 0, 5, 1]), jnp.array([2.0, 0, 1]))
    nq, nr = np.polydiv([2.0, -3, 0, 5, 1], [2.0, 0, 1])
    check(q, nq, F32)
    check(r[-len(nr):], nr, F32, atol=1e-5)


def test_polyfit_against_numpy():
    xs, ys = np.linspace(-1, 2, 12), np.polyval([0.5, -1.0, 2.0], np.linspace(-1, 2, 12)) + 0.01 * X[:1]
    check(jnp.polyfit(xs, ys, 2), np.polyfit(xs, ys, 2), F32, rtol=1e-4, atol=1e-4)
    coefficients, residuals, rank, singular, rcond = jnp.polyfit(xs, ys + 0.1 * np.sin(xs * 5), 3, full=True)
    expected = np.polyfit(xs, ys + 0.1 * np.sin(xs * 5), 3, full=True)
    check(coefficients, expected[0], F32, rtol=1e-3, atol=1e-3)
    assert int(rank) == expected[2]
    weights = np.linspace(1, 2, 12)
    check(jnp.polyfit(xs, ys, 1, w=weights), np.polyfit(xs, ys, 1, w=weights), F32, rtol=1e-4, atol=1e-4)
    c, covariance = jnp.polyfit(xs, ys + 0.1 * np.sin(xs * 5), 2, cov=True)
    nc, ncov = np.polyfit(xs, ys + 0.1 * np.sin(xs * 5), 2, cov=True)
    check(covariance, ncov, F32, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("bins, range_, weighted, density", [
    (3, None, False, False), (5, (-1, 1), False, False), (4, None, True, False), (4, None, False, True),
    (np.array([-2.0, -0.5, 0, 3]), None, True, True),
])
def test_histogram(bins, range_, weighted, density):
    weights = np.abs(X) if weighted else None
    counts, edges = jnp.histogram(x, bins, range_, None if weights is None else jnp.asarray(weights), density)
    n_counts, n_edges = np.histogram(f32(X), bins, range_, weights=None if weights is None else f32(weights),
                                     density=density)
    check(edges, n_edges, F32, rtol=1e-6)
    check(counts, n_counts, F32, rtol=1e-5)


def test_histogram_of_integers_counts_in_floats():
    # recorded from jax 0.10.2
    counts, edges = jnp.histogram(jnp.array([1, 2, 2, 3, 9]), bins=3)
    check(counts, [4.0, 0.0, 1.0], F32)
    check(edges, [1.0, 3.6666665, 6.3333335, 9.0], F32)


def test_histogram2d_and_histogramdd():
    a, b, c = X, np.roll(X, 3), np.cos(X)
    counts, x_edges, y_edges = jnp.histogram2d(a, b, bins=(3, 4))
    n_counts, nx, ny = np.histogram2d(f32(a), f32(b), bins=(3, 4))
    check(counts, n_counts, I32)  # JAX: integer counts without weights
    check(x_edges, nx, F32)
    check(y_edges, ny, F32)
    counts, edges = jnp.histogramdd(np.stack([a, b, c], 1), bins=2, weights=np.arange(9), density=True)
    n_counts, n_edges = np.histogramdd(np.stack([f32(a), f32(b), f32(c)], 1), bins=2, weights=np.arange(9),
                                       density=True)
    check(counts, n_counts, F32, rtol=1e-5)
    assert len(edges) == 3


def test_histogramdd_density_takes_the_sample_dtype_with_x64():
    # JAX casts the counts to the (promoted) sample's dtype before normalizing: float32 with x64 on, where
    # integer counts over their sum would give float64
    srcjax.config.update("jax_enable_x64", True)
    try:
        xs, ys = np.float32([0.1, 0.5, 0.9, 0.3]), np.float32([0.2, 0.4, 0.8, 0.9])
        counts, _, _ = jnp.histogram2d(jnp.asarray(xs), jnp.asarray(ys), bins=2, density=True)
        check(counts, np.histogram2d(xs, ys, bins=2, density=True)[0], F32)
        counts, edges = jnp.histogramdd(jnp.asarray(np.stack([xs, ys], 1)), bins=2, density=True,
                                        weights=jnp.asarray([1.0, 2, 1, 3], np.float64))
        assert counts.dtype == np.float64 and edges[0].dtype == np.float64  # float64 weights promote both
    finally:
        srcjax.config.update("jax_enable_x64", False)


def test_intersect1d_return_indices():
    common, first, second = jnp.intersect1d(jnp.array([4, 1, 3, 1]), jnp.array([3, 1, 2, 1]), return_indices=True)
    expected = np.intersect1d([4, 1, 3, 1], [3, 1, 2, 1], return_indices=True)
    for out, e in zip((common, first, second), expected, strict=True):
        check(out, e, I32)
    # padded to size=, the indices past the values found are the arrays' sizes (JAX 0.10.2's), under vmap too
    padded = jnp.intersect1d(jnp.array([1, 2, 3, 3]), jnp.array([3, 5, 6, 7, 8]), size=3, return_indices=True)
    for out, e in zip(padded, ([3, 3, 3], [2, 4, 4], [0, 5, 5]), strict=True):
        check(out, np.array(e), I32)
    both = srcjax.vmap(lambda a, b: jnp.intersect1d(a, b, size=2, return_indices=True))(
        np.array([[1, 2, 3, 3], [3, 5, 6, 7]]), np.array([[3, 5, 6, 7], [1, 2, 3, 3]]))
    for out, e in zip(both, ([[3, 3], [3, 3]], [[2, 4], [0, 4]], [[0, 4], [2, 4]]), strict=True):
        check(out, np.array(e), I32)
    # an empty intersection (or symmetric difference) padded without fill_value is zeros, as in JAX 0.10.2
    check(jnp.intersect1d(jnp.array([-3, 2]), jnp.array([5, 7]), size=3), np.zeros(3), I32)
    check(jnp.setxor1d(jnp.array([3, 3]), jnp.array([3]), size=2), np.zeros(2), I32)
    check(srcjax.vmap(lambda a: jnp.intersect1d(a, jnp.array([1, 2]), size=2))(jnp.array([[2, 5], [4, 3]])),
          np.array([[2, 2], [0, 0]]), I32)


# -- applying functions ----------------------------------------------------------------------------------------------
def test_apply_along_axis():
    t = np.arange(24).reshape(2, 3, 4)
    check(jnp.apply_along_axis(lambda w: w[::-1], 1, jnp.asarray(t)), np.apply_along_axis(lambda w: w[::-1], 1, t),
          I32)
    check(jnp.apply_along_axis(jnp.sum, 0, jnp.asarray(t)), np.apply_along_axis(np.sum, 0, t), I32)
    check(jnp.apply_along_axis(lambda w, k: jnp.outer(w, w) * k, -1, jnp.asarray(t), 2),
          np.apply_along_axis(lambda w, k: np.outer(w, w) * k, -1, t, 2), I32)
    # no lines to apply to: an empty result of the function's shape (JAX 0.10.2's; NumPy raises)
    check(jnp.apply_along_axis(jnp.sum, 0, jnp.ones((2, 0))), np.zeros(0), F32)
    out = jnp.apply_along_axis(lambda w: jnp.outer(w, w[:1]), 0, jnp.ones((3, 0), jnp.int32))
    assert out.shape == (3, 1, 0) and out.dtype == np.int32


def test_apply_over_axes():
    t = np.arange(24).reshape(2, 3, 4)
    check(jnp.apply_over_axes(jnp.sum, jnp.asarray(t), [0, 2]), np.apply_over_axes(np.sum, t, [0, 2]), I32)
    check(jnp.apply_over_axes(lambda a, axis: jnp.max(a, axis, keepdims=True), jnp.asarray(t), 1),
          np.apply_over_axes(np.max, t, 1), I32)


def test_piecewise():
    f = jnp.arange(5.0)
    # recorded from jax 0.10.2: later conditions win; an extra function is the default; x's dtype is kept
    check(jnp.piecewise(f, [f < 2, f > 3], [lambda v: -v, 7, 0.5]), [0.0, -1, 0.5, 0.5, 7], F32)
    check(jnp.piecewise(f, [f < 2, f > 3], [lambda v: -v, 7]), [0.0, -1, 0, 0, 7], F32)
    check(jnp.piecewise(jnp.arange(5), [jnp.arange(5) < 2], [lambda v: v * 2.5, 1]), [0, 2, 1, 1, 1], I32)
    check(jnp.piecewise(jnp.asarray(2.0), [True], [lambda v: v * 3]), 6.0, F32, False)  # never weak
    check(jnp.piecewise(jnp.arange(3.0), [True, False, True], [1, 2, 3]), [3.0, 3, 3], F32)  # 3 scalar conditions
    check(jnp.piecewise(f, jnp.stack([f < 2, f > 3]), [lambda v, k: v * k, 7], 3.0), [0.0, 3, 0, 0, 7], F32)
    overlap = jnp.piecewise(f, [f < 3, f > 1], [1, 2])
    check(overlap, np.piecewise(np.arange(5.0), [np.arange(5) < 3, np.arange(5) > 1], [1, 2]), F32)


def test_vectorize():
    add = jnp.vectorize(lambda a, b: a + b)
    check(add(jnp.arange(3), 1.5), [1.5, 2.5, 3.5], F32, True)  # JAX: int32 + weak float is weak
    check(add(jnp.ones((2, 1)), jnp.arange(3.0)), np.ones((2, 1)) + np.arange(3.0), F32)
    dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
    check(dot(jnp.ones((2, 3)), jnp.arange(3.0)), [3.0, 3.0], F32)
    scale = jnp.vectorize(lambda a, b: a * b, signature="(n),()->(n)")
    check(scale(jnp.ones((2, 3)), jnp.arange(2.0)[:, None]), np.ones((2, 2, 3)) * np.arange(2.0)[:, None, None],
          F32)
    pair = jnp.vectorize(lambda a: (a, 2 * a), signature="()->(),()")
    first, second = pair(jnp.ones(2))
    check(first, [1.0, 1.0], F32)
    check(second, [2.0, 2.0], F32)
    total = jnp.vectorize(lambda a: a.sum(), signature="(n)->()")
    check(total(jnp.ones((0, 3))), np.zeros(0), F32)
    power = jnp.vectorize(lambda a, p: a ** p, excluded={1})
    check(power(jnp.arange(3.0), 2), [0.0, 1, 4], F32)
    assert jnp.vectorize(np.add).__name__ == "add"


# -- printing, files, predicates -------------------------------------------------------------------------------------
def test_numpy_s_other_type_names_and_jax_s_process_and_dlpack_helpers():
    # JAX 0.10.2 exports these as NumPy's (csingle is complex64, character is NumPy's abstract type, ...)
    assert jnp.csingle is jnp.complex64 and jnp.cdouble is jnp.complex128
    assert jnp.character is np.character and jnp.flexible is np.flexible and jnp.object_ is np.object_
    assert jnp.ComplexWarning is np.exceptions.ComplexWarning
    assert jnp.issubdtype(np.dtype("U2"), jnp.character) and not jnp.issubdtype(jnp.float32, jnp.flexible)
    assert jnp.cdouble(3).dtype == np.complex64  # (x64 off)
    assert srcjax.process_indices() == [0]
    np.testing.assert_array_equal(srcjax.dlpack.from_dlpack(np.arange(3.0, dtype=np.float32)), [0, 1, 2])
    assert srcjax.dlpack.is_supported_dtype(np.int8) and not srcjax.dlpack.is_supported_dtype(np.dtype("U3"))


def test_devices_and_iinfo_print_as_jax_s():
    # JAX 0.10.2: str(jax.devices()[0]) == "cpu:0", repr "CpuDevice(id=0)"; jnp.iinfo's str is its repr
    device = srcjax.devices()[0]
    assert (str(device), repr(device)) == ("cpu:0", "CpuDevice(id=0)")
    assert str(jnp.iinfo(jnp.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    assert jnp.iinfo(jnp.uint16).max == 65535 and isinstance(jnp.iinfo(np.int32), np.iinfo)


def test_printoptions_and_repr():
    assert jnp.get_printoptions()["precision"] == np.get_printoptions()["precision"]
    with jnp.printoptions(precision=2):
        assert "3.14" in repr(jnp.array([3.14159])) and "3.142" not in repr(jnp.array([3.14159]))
    assert jnp.array_repr(jnp.arange(3)) == "Array([0, 1, 2], dtype=int32)"
    assert jnp.array_str(jnp.arange(3)) == "[0 1 2]"


def test_save_and_load(tmp_path):
    jnp.save(tmp_path / "a.npy", jnp.arange(3.0))
    loaded = jnp.load(tmp_path / "a.npy")
    check(loaded, [0.0, 1, 2], F32)
    np.save(tmp_path / "b.npy", np.arange(3.0))  # float64 on disk becomes float32, as in JAX
    check(jnp.load(tmp_path / "b.npy"), [0.0, 1, 2], F32)
    jnp.savez(tmp_path / "c.npz", jnp.arange(2), named=jnp.ones(2))
    with np.load(tmp_path / "c.npz") as archive:
        np.testing.assert_array_equal(archive["arr_0"], [0, 1])
        np.testing.assert_array_equal(archive["named"], [1.0, 1.0])


def test_iterable():
    assert jnp.iterable([1]) and jnp.iterable(jnp.arange(2)) and not jnp.iterable(3)


# -- bad inputs --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, message", [
    (lambda: jnp.diff(jnp.float32(1)), ValueError, "at least one dimensional"),
    (lambda: jnp.diff(i, -1), ValueError, "non-negative"),
    (lambda: jnp.ediff1d([1, 2]), TypeError, "ediff1d requires ndarray"),
    (lambda: jnp.gradient(jnp.arange(1.0)), ValueError, "at least 2 elements"),
    (lambda: jnp.gradient(x, edge_order=2), NotImplementedError, "edge_order"),
    (lambda: jnp.gradient(m, 1.0, 2.0, 3.0), TypeError, "one spacing"),
    (lambda: jnp.gradient(x, jnp.ones(3)), ValueError, "length 9"),
    (lambda: jnp.interp(x, jnp.ones((2, 2)), jnp.ones((2, 2))), ValueError, "one-dimensional"),
    (lambda: jnp.interp(x, jnp.ones(3), jnp.ones(2)), ValueError, "equal length"),
    (lambda: jnp.polyval(jnp.ones(()), 1.0), IndexError, "leading axis"),  # (2-d coefficients are JAX's too)
    (lambda: jnp.polyder(x, -1), ValueError, "non-negative"),
    (lambda: jnp.polyint(x, 2, k=jnp.ones(3)), ValueError, "m=2 entries"),
    (lambda: jnp.poly(jnp.ones((2, 3))), ValueError, "square"),
    (lambda: jnp.vander(m), ValueError, "one-dimensional"),
    (lambda: jnp.polyfit(x, x[:3], 1), TypeError, "expected y"),
    (lambda: jnp.bincount(x), TypeError, "must have an integer type"),
    (lambda: jnp.bincount(jnp.ones((2, 2), int)), ValueError, "one-dimensional"),
    (lambda: jnp.bincount(i, weights=jnp.ones(3)), ValueError, "weights"),
    (lambda: jnp.digitize(x, jnp.ones((2, 2))), ValueError, "1-dimensional"),
    (lambda: jnp.histogram(x, bins="auto"), NotImplementedError, "string bins"),
    (lambda: jnp.histogram(x, bins=0), ValueError, "positive"),
    (lambda: jnp.histogram(x, weights=jnp.ones(3)), ValueError, "weights"),
    (lambda: jnp.isin(i, i, method="guess"), ValueError, "method"),
    (lambda: jnp.union1d(i, i, size=-1), ValueError, "non-negative"),
    (lambda: jnp.cov(jnp.ones((2, 2, 2))), ValueError, "more than 2 dimensions"),
    (lambda: jnp.cov(m, fweights=jnp.ones(5)), TypeError, "integers"),
    (lambda: jnp.cov(m, aweights=jnp.ones(4)), ValueError, "one entry per observation"),
    (lambda: jnp.apply_over_axes(lambda a, k: jnp.sum(a), m, 0), ValueError, "correct shape"),
    (lambda: jnp.piecewise(x, [x > 0, x < 0], [1]), ValueError, "either 2 or 3 functions"),
    (lambda: jnp.vectorize(jnp.dot, signature="(n),(n)->()")(jnp.ones(3), jnp.ones(4)), ValueError,
     "inconsistent size for core dimension 'n'"),
    (lambda: jnp.vectorize(jnp.dot, signature="(n),(n)->()")(jnp.ones(3)), TypeError, "wrong number"),
    (lambda: jnp.vectorize(jnp.dot, signature="(n)(n)->")(jnp.ones(3)), ValueError, "signature"),
    (lambda: jnp.packbits(x), TypeError, "integer or boolean"),
    (lambda: jnp.packbits(i, bitorder="middle"), ValueError, "bitorder"),
    (lambda: jnp.unpackbits(i), TypeError, "unsigned byte"),
    (lambda: jnp.fill_diagonal(m, 1.0), NotImplementedError, "inplace=False"),
    (lambda: jnp.fill_diagonal(x, 1.0, inplace=False), ValueError, "at least 2-d"),
    (lambda: jnp.fill_diagonal(jnp.zeros((2, 2, 3)), 1.0, inplace=False), ValueError, "equal length"),
])
def test_bad_inputs(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_data_dependent_sizes_need_concrete_values():
    class Symbolic:  # stands for a value of a function being compiled: it has a type but no data
        aval = jnp.array([1, 2, 3]).aval

    with pytest.raises(TypeError, match="length="):
        jnp.bincount(Symbolic())
