"""Elementwise primitives: one table of cases against NumPy in float64 (exact for integers and bools, whose
arithmetic wraps as XLA's does), over dtypes and shapes including 0-d and empty; the shape rule against
the implementation on every call; XLA's edge cases (integer division by zero, out-of-range shifts,
float -> int saturation, -0.0 ordering, selector clamping), recorded from JAX 0.10.2; bad operands."""

import math

import numpy as np
import pytest

from srcjax.transpiler.primitives import elementwise as E
from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(0)
SIGNED = [np.int8, np.int32]
INTS = [np.int8, np.uint8, np.int32, np.uint32]
FLOATS = [np.float16, np.float32, np.float64]
COMPLEX = [np.complex64]
SHAPES = [(), (5,), (2, 3), (0,), (3, 0, 2)]


def run(prim, *args, **params):
    """The implementation's result, after checking it has exactly the type the shape rule gives."""
    rule = prim.abstract_eval(*(TensorType(a.dtype, a.shape) for a in args), **params)
    with np.errstate(all="ignore"):
        out = np.asarray(prim.impl(*args, **params))
    assert (out.shape, out.dtype) == (rule.shape, rule.dtype), f"{prim}: computed {out.dtype}{out.shape}, rule {rule}"
    return out


def wide(x):
    return x.astype({"b": np.bool_, "i": np.int64, "u": np.int64, "f": np.float64, "c": np.complex128}[x.dtype.kind])


def close(actual, expected):
    """Within the result dtype's precision of the float64 oracle; exact (after wrapping) for ints and bools."""
    dtype = actual.dtype
    expected = np.asarray(expected)
    if dtype.kind in "fc":
        tol = {2: 4e-3, 4: 2e-6, 8: 1e-13}[np.finfo(dtype).dtype.itemsize]
        np.testing.assert_allclose(actual.astype(np.complex128), expected.astype(np.complex128), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(actual, expected.astype(dtype))


def data(shape, dtype, low=-3.0, high=3.0):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)
    x = RNG.uniform(low, high, size=shape)
    if dtype.kind == "c":
        x = x + 1j * RNG.uniform(low, high, size=shape)
    return x.astype(dtype)


# Oracles that NumPy lacks, in plain Python floats (independent of the implementations under test).
def _digamma(x: float) -> float:
    if x < 0.5:
        return _digamma(1 - x) - math.pi / math.tan(math.pi * x)
    shift = 0.0
    while x < 20:
        shift -= 1 / x
        x += 1
    inv2 = 1 / (x * x)
    return shift + math.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 / 240)))


def _erf_inv(y: float) -> float:
    x = 0.0
    for _ in range(60):  # Newton on erf(x) = y
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def _python(fn):
    return lambda x: np.vectorize(fn, otypes=[np.float64])(x)


def _bits(x):
    """Bit counts of the two's complement pattern, via Python ints."""
    width = x.dtype.itemsize * 8
    return [bin(int(v) % (1 << width)).count("1") for v in x.ravel()], width


def _popcount(x):
    counts, _ = _bits(x)
    return np.array(counts).reshape(x.shape)


def _clz(x):
    width = x.dtype.itemsize * 8
    return np.array([width - (int(v) % (1 << width)).bit_length() for v in x.ravel()]).reshape(x.shape)


def _sign(x):
    if x.dtype.kind == "c":
        return np.where(x == 0, 0, x / np.where(x == 0, 1, np.abs(x)))
    return np.sign(x)


# (primitive, dtypes, input range (low, high), oracle on widened values; "bits": on the values themselves)
UNARY = [
    (E.neg_p, INTS + FLOATS + COMPLEX, None, np.negative),
    (E.abs_p, SIGNED + FLOATS + COMPLEX, None, np.abs),
    (E.sign_p, INTS + FLOATS + COMPLEX, None, _sign),
    (E.square_p, INTS + FLOATS + COMPLEX, None, np.square),
    (E.floor_p, FLOATS, None, np.floor),
    (E.ceil_p, FLOATS, None, np.ceil),
    (E.is_finite_p, FLOATS, None, np.isfinite),
    (E.exp_p, FLOATS + COMPLEX, None, np.exp),
    (E.exp2_p, FLOATS + COMPLEX, None, np.exp2),
    (E.log_p, FLOATS + COMPLEX, (0.1, 5.0), np.log),
    (E.log1p_p, FLOATS + COMPLEX, (-0.5, 5.0), np.log1p),
    (E.expm1_p, FLOATS + COMPLEX, None, np.expm1),
    (E.tanh_p, FLOATS + COMPLEX, None, np.tanh),
    (E.logistic_p, FLOATS + COMPLEX, None, lambda x: 1 / (1 + np.exp(-x))),
    (E.sin_p, FLOATS + COMPLEX, None, np.sin),
    (E.cos_p, FLOATS + COMPLEX, None, np.cos),
    (E.tan_p, FLOATS + COMPLEX, (-1.2, 1.2), np.tan),
    (E.asin_p, FLOATS + COMPLEX, (-0.9, 0.9), np.arcsin),
    (E.acos_p, FLOATS + COMPLEX, (-0.9, 0.9), np.arccos),
    (E.atan_p, FLOATS + COMPLEX, (-0.9, 0.9), np.arctan),
    (E.sinh_p, FLOATS + COMPLEX, None, np.sinh),
    (E.cosh_p, FLOATS + COMPLEX, None, np.cosh),
    (E.asinh_p, FLOATS + COMPLEX, None, np.arcsinh),
    (E.acosh_p, FLOATS + COMPLEX, (1.1, 5.0), np.arccosh),
    (E.atanh_p, FLOATS + COMPLEX, (-0.9, 0.9), np.arctanh),
    (E.sqrt_p, FLOATS + COMPLEX, (0.0, 5.0), np.sqrt),
    (E.rsqrt_p, FLOATS + COMPLEX, (0.1, 5.0), lambda x: 1 / np.sqrt(x)),
    (E.cbrt_p, FLOATS, None, np.cbrt),
    (E.erf_p, FLOATS, None, _python(math.erf)),
    (E.erfc_p, FLOATS, None, _python(math.erfc)),
    (E.erf_inv_p, FLOATS, (-0.99, 0.99), _python(_erf_inv)),
    (E.lgamma_p, FLOATS, (0.1, 8.0), _python(math.lgamma)),
    (E.digamma_p, FLOATS, (-2.9, 8.0), _python(_digamma)),
    (E.not_p, [np.bool_] + INTS, None, np.invert),
    (E.population_count_p, INTS, "bits", _popcount),
    (E.clz_p, INTS, "bits", _clz),
    (E.real_p, COMPLEX, None, np.real),
    (E.imag_p, COMPLEX, None, np.imag),
    (E.conj_p, FLOATS[1:] + COMPLEX, None, np.conj),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("prim, dtypes, domain, oracle", UNARY, ids=[case[0].name for case in UNARY])
def test_unary_matches_numpy(prim, dtypes, domain, oracle, shape):
    for dtype in dtypes:
        x = data(shape, dtype, *(domain if isinstance(domain, tuple) else (-3.0, 3.0)))
        if prim in (E.digamma_p,):  # keep away from the poles at 0, -1, -2, where the oracle is ill-conditioned
            x = np.where(np.abs(x - np.round(x)) < 0.1, x + 0.25, x).astype(dtype)
        with np.errstate(all="ignore"):
            expected = oracle(x if domain == "bits" else wide(x))
        close(run(prim, x), expected)


def _trunc_div(x, y):
    q = np.abs(x) // np.abs(y)
    return np.where((x < 0) != (y < 0), -q, q)


def _nonzero(x):
    return np.where(x == 0, 1, x).astype(x.dtype)


# (primitive, dtypes, input range, oracle on widened values, how to make the second operand valid)
BINARY = [
    (E.add_p, INTS + FLOATS + COMPLEX, None, np.add, None),
    (E.sub_p, INTS + FLOATS + COMPLEX, None, np.subtract, None),
    (E.mul_p, INTS + FLOATS + COMPLEX, None, np.multiply, None),
    (E.div_p, INTS, None, _trunc_div, _nonzero),
    (E.div_p, FLOATS + COMPLEX, (0.5, 3.0), np.divide, None),
    (E.rem_p, INTS, None, lambda x, y: x - y * _trunc_div(x, y), _nonzero),
    (E.rem_p, FLOATS, (0.5, 9.0), np.fmod, None),
    (E.pow_p, FLOATS + COMPLEX, (0.5, 3.0), np.power, None),
    (E.atan2_p, FLOATS, None, np.arctan2, None),
    (E.max_p, [np.bool_] + INTS + FLOATS + COMPLEX, None, np.maximum, None),
    (E.min_p, [np.bool_] + INTS + FLOATS + COMPLEX, None, np.minimum, None),
    (E.eq_p, [np.bool_] + INTS + FLOATS + COMPLEX, None, np.equal, None),
    (E.ne_p, [np.bool_] + INTS + FLOATS + COMPLEX, None, np.not_equal, None),
    (E.lt_p, [np.bool_] + INTS + FLOATS, None, np.less, None),
    (E.le_p, [np.bool_] + INTS + FLOATS, None, np.less_equal, None),
    (E.gt_p, [np.bool_] + INTS + FLOATS, None, np.greater, None),
    (E.ge_p, [np.bool_] + INTS + FLOATS, None, np.greater_equal, None),
    (E.and_p, [np.bool_] + INTS, None, np.bitwise_and, None),
    (E.or_p, [np.bool_] + INTS, None, np.bitwise_or, None),
    (E.xor_p, [np.bool_] + INTS, None, np.bitwise_xor, None),
    (E.complex_p, FLOATS[1:], None, lambda x, y: x + 1j * y, None),
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("prim, dtypes, domain, oracle, fix", BINARY, ids=[case[0].name for case in BINARY])
def test_binary_matches_numpy(prim, dtypes, domain, oracle, fix, shape):
    for dtype in dtypes:
        x, y = (data(shape, dtype, *(domain or (-3.0, 3.0))) for _ in range(2))
        y = fix(y) if fix else y
        with np.errstate(all="ignore"):
            expected = oracle(wide(x), wide(y))
        close(run(prim, x, y), expected)


# -- bit shifts: exact on every width, with XLA's out-of-range rules --------------------------------------
def _shift_oracle(kind, x, y):
    """Shifts through Python ints: out-of-range amounts give 0, or the sign fill (arithmetic right, which
    reads the bits as signed in unsigned dtypes too)."""
    width = x.dtype.itemsize * 8
    out = []
    for a, s in zip(x.ravel().tolist(), y.ravel().tolist()):
        pattern = a % (1 << width)
        a = pattern - (1 << width) if pattern >> (width - 1) else pattern
        if not 0 <= s < width:
            value = (-1 if a < 0 else 0) if kind == "right_arithmetic" else 0
        elif kind == "left":
            value = (pattern << s) % (1 << width)
        elif kind == "right_logical":
            value = pattern >> s
        else:
            value = a >> s
        out.append(value)
    return np.array([v % (1 << width) for v in out], np.uint64).reshape(x.shape).astype(x.dtype)


SHIFTS = [("left", E.shift_left_p), ("right_logical", E.shift_right_logical_p),
          ("right_arithmetic", E.shift_right_arithmetic_p)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind, prim", SHIFTS, ids=[s[0] for s in SHIFTS])
@pytest.mark.parametrize("dtype", INTS + [np.int64, np.uint64, np.int16, np.uint16])
def test_shifts_are_exact(kind, prim, dtype, shape):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    width = info.bits
    low = -3 if info.min < 0 else 0
    y = RNG.integers(low, width + 3, size=shape).astype(dtype)
    np.testing.assert_array_equal(run(prim, x, y), _shift_oracle(kind, x, y))


def test_arithmetic_shift_of_unsigned_fills_with_the_top_bit():
    x = np.array([0x80000000, 0xF0000000, 8], np.uint32)
    out = run(E.shift_right_arithmetic_p, x, np.array([4, 40, 1], np.uint32))
    np.testing.assert_array_equal(out, [4160749568, 4294967295, 4])  # recorded from JAX


def test_uint32_shifts_used_by_threefry():
    x = np.array([0xFFFFFFFF, 0x80000001, 0x12345678, 1], np.uint32)
    rot = np.array([13, 15, 26, 6], np.uint32)
    left = run(E.shift_left_p, x, rot)
    right = run(E.shift_right_logical_p, x, (np.uint32(32) - rot).astype(np.uint32))
    rotated = run(E.or_p, left, right)
    expected = [((int(v) << int(r)) | (int(v) >> (32 - int(r)))) & 0xFFFFFFFF for v, r in zip(x, rot)]
    np.testing.assert_array_equal(rotated, np.array(expected, np.uint32))


# -- edge cases recorded from JAX 0.10.2 ----------------------------------------------------------------------
def test_integer_division_and_remainder_as_xla():
    x = np.array([7, -7, 7, -7, 1, -1, -128], np.int8)
    y = np.array([2, 2, -2, -2, 0, 0, -1], np.int8)
    np.testing.assert_array_equal(run(E.div_p, x, y), [3, -3, -3, 3, -1, -1, -128])
    np.testing.assert_array_equal(run(E.rem_p, x, y), [1, -1, 1, -1, 1, -1, 0])
    u, v = np.array([7, 1], np.uint32), np.array([2, 0], np.uint32)
    np.testing.assert_array_equal(run(E.div_p, u, v), [3, 4294967295])
    np.testing.assert_array_equal(run(E.rem_p, u, v), [1, 1])
    np.testing.assert_array_equal(run(E.rem_p, np.array([5.5, -5.5], np.float32), np.array([2.0, 2.0], np.float32)),
                                  [1.5, -1.5])


SPECIAL = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 300, -5], np.float32)


@pytest.mark.parametrize(
    "new_dtype, expected",
    [
        (np.int32, [0, 2147483647, -2147483648, 2147483647, -2147483648, 2, -2, 300, -5]),
        (np.int8, [0, 127, -128, 127, -128, 2, -2, 127, -5]),
        (np.uint8, [0, 255, 0, 255, 0, 2, 0, 255, 0]),
        (np.uint32, [0, 4294967295, 0, 3000000000, 0, 2, 0, 300, 0]),
        (np.int64, [0, 2**63 - 1, -(2**63), 3000000000, -3000000000, 2, -2, 300, -5]),
        (np.bool_, [True, True, True, True, True, True, True, True, True]),
    ],
)
def test_float_to_int_conversion_saturates_like_xla(new_dtype, expected):
    np.testing.assert_array_equal(run(E.convert_element_type_p, SPECIAL, new_dtype=np.dtype(new_dtype)),
                                  np.array(expected).astype(new_dtype))


def test_other_conversions():
    ints = np.array([300, -5, 70000], np.int32)
    np.testing.assert_array_equal(run(E.convert_element_type_p, ints, new_dtype=np.dtype(np.uint8)), [44, 251, 112])
    np.testing.assert_array_equal(run(E.convert_element_type_p, np.array([0.0, 0.5, np.nan], np.float32),
                                      new_dtype=np.dtype(bool)), [False, True, True])
    # complex -> real or bool drops the imaginary part first (1j -> False)
    z = np.array([1 + 2j, 1j], np.complex64)
    np.testing.assert_array_equal(run(E.convert_element_type_p, z, new_dtype=np.dtype(np.float32)), [1.0, 0.0])
    np.testing.assert_array_equal(run(E.convert_element_type_p, z, new_dtype=np.dtype(bool)), [True, False])
    assert run(E.convert_element_type_p, np.array([1e10]), new_dtype=np.dtype(np.float16))[0] == np.inf
    typ = E.convert_element_type_p.abstract_eval(TensorType(np.float32, (2,)), new_dtype=np.dtype(np.int8),
                                                 weak_type=True)
    assert typ == TensorType(np.int8, (2,), True)


def test_round_methods():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.0, np.inf, np.nan], np.float32)
    away = run(E.round_p, x, rounding_method=0)
    even = run(E.round_p, x, rounding_method=1)
    np.testing.assert_array_equal(away, [1, 2, 3, -1, -3, 0, -0.0, np.inf, np.nan])
    np.testing.assert_array_equal(even, [0, 2, 2, -0.0, -2, 0, -0.0, np.inf, np.nan])
    assert np.signbit(away[3]) and np.signbit(even[3]) and np.signbit(away[6])


def test_signed_zero_and_nan_in_max_min_sign():
    nz, pz = np.array([-0.0, 0.0], np.float32), np.array([0.0, -0.0], np.float32)
    assert list(np.signbit(run(E.min_p, nz, pz))) == [True, True]
    assert list(np.signbit(run(E.max_p, nz, pz))) == [False, False]
    nan_max = run(E.max_p, np.array([np.nan, 1.0]), np.array([1.0, np.nan]))
    assert np.isnan(nan_max).all()
    signs = run(E.sign_p, np.array([-0.0, 0.0, np.nan, -3.0, 2.0], np.float32))
    assert np.signbit(signs[0]) and not np.signbit(signs[1]) and np.isnan(signs[2])
    np.testing.assert_array_equal(signs[3:], [-1, 1])
    np.testing.assert_array_equal(run(E.sign_p, np.array([255, 0, 7], np.uint8)), [1, 0, 1])
    np.testing.assert_allclose(run(E.sign_p, np.array([3 + 4j, 0], np.complex64)), [0.6 + 0.8j, 0])
    np.testing.assert_array_equal(run(E.max_p, np.array([1 + 5j, 2 + 0j]), np.array([2 + 0j, 2 + 1j])),
                                  [2 + 0j, 2 + 1j])


def test_integer_pow_wraps_and_inverts():
    np.testing.assert_array_equal(run(E.integer_pow_p, np.array([2, -3], np.int8), y=7), [-128, 117])
    np.testing.assert_array_equal(run(E.integer_pow_p, np.array([0.0, 2.0], np.float32), y=-1), [np.inf, 0.5])
    np.testing.assert_array_equal(run(E.integer_pow_p, np.array([2 + 1j], np.complex64), y=3), [2 + 11j])
    np.testing.assert_array_equal(run(E.integer_pow_p, np.array(5.0, np.float16), y=0), 1.0)
    x = data((4, 3), np.float64, 0.5, 2.0)
    for y in range(-9, 10):
        np.testing.assert_allclose(run(E.integer_pow_p, x, y=y), x**y, rtol=1e-14)


def test_pow_takes_an_integer_exponent():
    out = run(E.pow_p, np.array([-2.0, 2.0, 0.0], np.float32), np.array([3, -1, -1], np.int32))
    np.testing.assert_array_equal(out, [-8.0, 0.5, np.inf])
    assert E.pow_p.abstract_eval(TensorType(np.float32, (), True), TensorType(np.int32, (), True)).weak_type


def test_special_values_of_special_functions():
    x = np.array([-1.0, 0.0, -0.5, np.inf, -np.inf, np.nan], np.float32)
    lg, dg = run(E.lgamma_p, x), run(E.digamma_p, x)
    np.testing.assert_array_equal(lg[[0, 1, 3, 4]], np.inf)
    np.testing.assert_allclose(lg[2], 1.2655121234846454, rtol=1e-6)  # log(2 sqrt(pi))
    assert np.isnan(lg[5]) and np.isnan(dg[[0, 1, 4, 5]]).all() and dg[3] == np.inf
    np.testing.assert_allclose(dg[2], 0.03648997397857652, rtol=1e-6)
    ei = run(E.erf_inv_p, np.array([-1.0, 1.0, 2.0, 0.0], np.float32))
    np.testing.assert_array_equal(ei[:2], [-np.inf, np.inf])
    assert np.isnan(ei[2]) and ei[3] == 0
    np.testing.assert_array_equal(run(E.logistic_p, np.array([-1000.0, 0.0, 1000.0], np.float32)), [0.0, 0.5, 1.0])


def test_bit_counts_and_nextafter():
    np.testing.assert_array_equal(run(E.population_count_p, np.array([-1, 7], np.int8)), [8, 3])
    np.testing.assert_array_equal(run(E.clz_p, np.array([-1, 7, 0], np.int8)), [0, 5, 8])
    np.testing.assert_array_equal(run(E.clz_p, np.array([1, 0xFFFF, 0], np.uint32)), [31, 16, 32])
    np.testing.assert_array_equal(run(E.clz_p, np.array([1, 2**63], np.uint64)), [63, 0])
    out = run(E.nextafter_p, np.array([0.0, 1.0], np.float32), np.array([1.0, 0.0], np.float32))
    np.testing.assert_array_equal(out, [np.float32(1.401298464324817e-45), np.float32(0.99999994)])


def test_atan2_and_complex_construction():
    z = run(E.atan2_p, np.array([1 + 1j, 1 + 0j], np.complex64), np.array([1 + 0j, -1 + 0j], np.complex64))
    np.testing.assert_allclose(z, [1.0172219 + 0.40235934j, 2.3561945 + 0j], atol=1e-6)
    c = run(E.complex_p, np.array([1.0, 0.0], np.float32), np.array([np.inf, 2.0], np.float32))
    assert c[0].real == 1.0 and c[0].imag == np.inf  # not NaN, as 1 + 1j * inf would give
    assert run(E.conj_p, np.array([1.0], np.float32)).dtype == np.complex64


# -- selection ------------------------------------------------------------------------------------------
def test_select_n_clamps_out_of_range_selectors():
    ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
    np.testing.assert_array_equal(run(E.select_n_p, np.array([0, 5, -1], np.int32), ones, zeros), [1, 0, 1])
    np.testing.assert_array_equal(run(E.select_n_p, np.array(True), ones, zeros), zeros)
    three = run(E.select_n_p, np.array([2, 1, 0], np.uint8), ones, zeros, np.full(3, 7, np.float32))
    np.testing.assert_array_equal(three, [7, 0, 1])
    np.testing.assert_array_equal(run(E.select_n_p, np.array([True, False]), np.arange(2), np.arange(2) + 5), [5, 1])
    assert run(E.select_n_p, np.zeros((0, 2), bool), np.zeros((0, 2)), np.ones((0, 2))).shape == (0, 2)


def test_clamp():
    x = np.array([-2.0, 0.5, 9.0], np.float32)
    np.testing.assert_array_equal(run(E.clamp_p, np.float32(0.0) * np.ones((), np.float32), x,
                                      np.ones((), np.float32)), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(run(E.clamp_p, np.array([-3, 1, 1]), np.array([-2, 0, 9]), np.array([0, 2, 5])),
                                  [-2, 1, 5])


def test_bitcast():
    x = np.array([1.0, -2.0], np.float32)
    as_bytes = run(E.bitcast_convert_type_p, x, new_dtype=np.dtype(np.uint8))
    assert as_bytes.shape == (2, 4)
    back = run(E.bitcast_convert_type_p, as_bytes, new_dtype=np.dtype(np.float32))
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(run(E.bitcast_convert_type_p, x, new_dtype=np.dtype(np.uint32)),
                                  [0x3F800000, 0xC0000000])
    assert run(E.bitcast_convert_type_p, np.array(1.0, np.float32), new_dtype=np.dtype(np.int32)).shape == ()


# -- the weak type --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prim", [E.add_p, E.atan2_p, E.eq_p, E.max_p])
def test_result_is_weak_only_when_every_operand_is(prim):
    weak, strong = TensorType(np.float32, (2,), True), TensorType(np.float32, (2,))
    assert prim.abstract_eval(weak, weak).weak_type
    assert not prim.abstract_eval(weak, strong).weak_type
    assert not prim.abstract_eval(strong, strong).weak_type


# -- bad operands ---------------------------------------------------------------------------------------------
def t(dtype, shape=(3,)):
    return TensorType(dtype, shape)


BAD = [
    (E.add_p, [t(np.float32), t(np.int32)], {}, PrimitiveTypeError, r"operands must have the same dtype, got f32, i32"),
    (E.add_p, [t(np.float32), t(np.float32, (4,))], {}, PrimitiveValueError, r"same shape, got \(3,\), \(4,\)"),
    (E.add_p, [t(np.bool_), t(np.bool_)], {}, PrimitiveTypeError, r"add: does not accept bool operands"),
    (E.add_p, [t(np.float32)], {}, PrimitiveTypeError, r"takes 2 operand\(s\), got 1"),
    (E.exp_p, [t(np.int32)], {}, PrimitiveTypeError, r"exp: does not accept int32 operands; they must be floating"),
    (E.erf_p, [t(np.complex64)], {}, PrimitiveTypeError, r"erf: .*complex64.*floating"),
    (E.lt_p, [t(np.complex64), t(np.complex64)], {}, PrimitiveTypeError, r"lt: does not accept complex64"),
    (E.and_p, [t(np.float32), t(np.float32)], {}, PrimitiveTypeError, r"and: .*bool or integer"),
    (E.abs_p, [t(np.uint8)], {}, PrimitiveTypeError, r"abs: does not accept uint8"),
    (E.shift_left_p, [t(np.uint32), t(np.int32)], {}, PrimitiveTypeError, r"same dtype, got u32, i32"),
    (E.real_p, [t(np.float32)], {}, PrimitiveTypeError, r"real: .*complex"),
    (E.conj_p, [t(np.int32)], {}, PrimitiveTypeError, r"conj: does not accept int32"),
    (E.pow_p, [t(np.float32), t(np.float16)], {}, PrimitiveTypeError, r"pow: the exponent must have the base's dtype"),
    (E.pow_p, [t(np.int32), t(np.int32)], {}, PrimitiveTypeError, r"pow: does not accept int32 bases"),
    (E.integer_pow_p, [t(np.int32)], {"y": -2}, PrimitiveTypeError, r"integers cannot be raised to negative powers"),
    (E.integer_pow_p, [t(np.bool_)], {"y": 2}, PrimitiveTypeError, r"integer_pow: does not accept bool"),
    (E.integer_pow_p, [t(np.float32)], {"y": 2.5}, PrimitiveTypeError, r"exponent must be a Python int"),
    (E.round_p, [t(np.float32)], {"rounding_method": 3}, PrimitiveValueError, r"rounding_method must be 0"),
    (E.round_p, [t(np.int32)], {"rounding_method": 0}, PrimitiveTypeError, r"round: does not accept int32"),
    (E.select_n_p, [t(np.float32), t(np.int32), t(np.int32)], {}, PrimitiveTypeError, r"float32 selectors"),
    (E.select_n_p, [t(np.bool_)] + [t(np.int32)] * 3, {}, PrimitiveTypeError, r"bool selector chooses between at most"),
    (E.select_n_p, [t(np.bool_, (2,)), t(np.int32), t(np.int32)], {}, PrimitiveValueError, r"selector has shape"),
    (E.select_n_p, [t(np.bool_)], {}, PrimitiveTypeError, r"needs at least one case"),
    (E.clamp_p, [t(np.int32, ()), t(np.float32), t(np.float32, ())], {}, PrimitiveTypeError, r"min has dtype i32"),
    (E.clamp_p, [t(np.float32, (2,)), t(np.float32), t(np.float32, ())], {}, PrimitiveValueError, r"min has shape"),
    (E.bitcast_convert_type_p, [t(np.uint16)], {"new_dtype": np.dtype(np.float32)}, PrimitiveValueError,
     r"needs a last axis of size 2"),
    (E.bitcast_convert_type_p, [t(np.bool_)], {"new_dtype": np.dtype(np.uint8)}, PrimitiveTypeError,
     r"bool and complex values can only be bitcast"),
]


@pytest.mark.parametrize("prim, types, params, error, message", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_operands_raise_clear_errors(prim, types, params, error, message):
    with pytest.raises(error, match=message):
        prim.abstract_eval(*types, **params)


def test_every_primitive_of_the_issue_is_declared():
    names = (
        "exp exp2 log log1p expm1 tanh logistic sin cos tan asin acos atan atan2 sinh cosh asinh acosh atanh sqrt "
        "rsqrt cbrt pow integer_pow abs sign floor ceil round nextafter erf erfc erf_inv lgamma digamma is_finite "
        "max min rem eq ne lt le gt ge not and or xor population_count clz shift_left shift_right_logical "
        "shift_right_arithmetic select_n clamp convert_element_type bitcast_convert_type complex real imag conj "
        "neg add sub mul div square"
    ).split()
    from srcjax.transpiler.primitives.core import PRIMITIVES

    missing = [n for n in names if n not in PRIMITIVES or None in (PRIMITIVES[n].impl, PRIMITIVES[n].shape_rule)]
    assert not missing
