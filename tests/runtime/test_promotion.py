"""JAX's type promotion, the whole table: the dtype and weak type of ``jnp.add(a, b)`` for every pair of
argument kinds, recorded from JAX 0.10.2 (x64 off, then on), checked against ``runtime.dtypes`` and
against ``jnp.add`` itself. ``i*``, ``f*``, ``c*`` are Python scalars (weakly typed); a trailing ``*`` in
a result marks a weakly typed result."""

import numpy as np
import pytest

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes
from srcjax.runtime.config import config

KINDS_32 = ["bool", "u8", "u16", "u32", "i8", "i16", "i32", "f16", "f32", "c64", "i*", "f*", "c*"]
KINDS_64 = ["bool", "u8", "u16", "u32", "i8", "i16", "i32", "f16", "f32", "c64", "u64", "i64", "f64", "c128",
            "i*", "f*", "c*"]

# row: first argument, columns: second argument in the order of KINDS_32 / KINDS_64
TABLE_X64_OFF = {
    "bool": "bool u8 u16 u32 i8 i16 i32 f16 f32 c64 i32* f32* c64*",
    "u8": "u8 u8 u16 u32 i16 i16 i32 f16 f32 c64 u8 f32* c64*",
    "u16": "u16 u16 u16 u32 i32 i32 i32 f16 f32 c64 u16 f32* c64*",
    "u32": "u32 u32 u32 u32 i32 i32 i32 f16 f32 c64 u32 f32* c64*",
    "i8": "i8 i16 i32 i32 i8 i16 i32 f16 f32 c64 i8 f32* c64*",
    "i16": "i16 i16 i32 i32 i16 i16 i32 f16 f32 c64 i16 f32* c64*",
    "i32": "i32 i32 i32 i32 i32 i32 i32 f16 f32 c64 i32 f32* c64*",
    "f16": "f16 f16 f16 f16 f16 f16 f16 f16 f32 c64 f16 f16 c64",
    "f32": "f32 f32 f32 f32 f32 f32 f32 f32 f32 c64 f32 f32 c64",
    "c64": "c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64",
    "i*": "i32* u8 u16 u32 i8 i16 i32 f16 f32 c64 i32* f32* c64*",
    "f*": "f32* f32* f32* f32* f32* f32* f32* f16 f32 c64 f32* f32* c64*",
    "c*": "c64* c64* c64* c64* c64* c64* c64* c64 c64 c64 c64* c64* c64*",
}
TABLE_X64_ON = {
    "bool": "bool u8 u16 u32 i8 i16 i32 f16 f32 c64 u64 i64 f64 c128 i64* f64* c128*",
    "u8": "u8 u8 u16 u32 i16 i16 i32 f16 f32 c64 u64 i64 f64 c128 u8 f64* c128*",
    "u16": "u16 u16 u16 u32 i32 i32 i32 f16 f32 c64 u64 i64 f64 c128 u16 f64* c128*",
    "u32": "u32 u32 u32 u32 i64 i64 i64 f16 f32 c64 u64 i64 f64 c128 u32 f64* c128*",
    "i8": "i8 i16 i32 i64 i8 i16 i32 f16 f32 c64 f64* i64 f64 c128 i8 f64* c128*",
    "i16": "i16 i16 i32 i64 i16 i16 i32 f16 f32 c64 f64* i64 f64 c128 i16 f64* c128*",
    "i32": "i32 i32 i32 i64 i32 i32 i32 f16 f32 c64 f64* i64 f64 c128 i32 f64* c128*",
    "f16": "f16 f16 f16 f16 f16 f16 f16 f16 f32 c64 f16 f16 f64 c128 f16 f16 c64",
    "f32": "f32 f32 f32 f32 f32 f32 f32 f32 f32 c64 f32 f32 f64 c128 f32 f32 c64",
    "c64": "c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c128 c128 c64 c64 c64",
    "u64": "u64 u64 u64 u64 f64* f64* f64* f16 f32 c64 u64 f64* f64 c128 u64 f64* c128*",
    "i64": "i64 i64 i64 i64 i64 i64 i64 f16 f32 c64 f64* i64 f64 c128 i64 f64* c128*",
    "f64": "f64 f64 f64 f64 f64 f64 f64 f64 f64 c128 f64 f64 f64 c128 f64 f64 c128",
    "c128": "c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128",
    "i*": "i64* u8 u16 u32 i8 i16 i32 f16 f32 c64 u64 i64 f64 c128 i64* f64* c128*",
    "f*": "f64* f64* f64* f64* f64* f64* f64* f16 f32 c64 f64* f64* f64 c128 f64* f64* c128*",
    "c*": "c128* c128* c128* c128* c128* c128* c128* c64 c64 c64 c128* c128* c128 c128 c128* c128* c128*",
}

DTYPES = {
    "bool": np.bool_, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "i8": np.int8,
    "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
}
SCALARS = {"i*": 3, "f*": 0.5, "c*": 0.5 + 1j}


def value(kind):
    """A Python scalar for a weak kind, else a small array of that dtype."""
    return SCALARS[kind] if kind in SCALARS else jnp.asarray(np.array([1, 0, 1]).astype(DTYPES[kind]))


def pair(kind):
    """The (dtype, weak) a kind takes part in promotion with, under the current x64 setting."""
    return dtypes.dtype_and_weak(SCALARS[kind]) if kind in SCALARS else (np.dtype(DTYPES[kind]), False)


def expected(text):
    return np.dtype(DTYPES[text.rstrip("*")]), text.endswith("*")


@pytest.fixture(params=[False, True], ids=["x64_off", "x64_on"])
def table(request):
    config.update("jax_enable_x64", request.param)
    yield (KINDS_64, TABLE_X64_ON) if request.param else (KINDS_32, TABLE_X64_OFF)
    config.update("jax_enable_x64", False)


def cases(kinds, rows):
    for a in kinds:
        for b, result in zip(kinds, rows[a].split(), strict=True):
            yield a, b, expected(result)


def test_the_tables_are_complete_and_symmetric(table):
    kinds, rows = table
    assert list(rows) == kinds
    for a, b, result in cases(kinds, rows):
        assert expected(rows[b].split()[kinds.index(a)]) == result


def test_runtime_dtypes_promote_like_jax(table):
    kinds, rows = table
    wrong = [(a, b, result, dtypes.promote_types_and_weak(pair(a), pair(b)))
             for a, b, result in cases(kinds, rows) if dtypes.promote_types_and_weak(pair(a), pair(b)) != result]
    assert not wrong


def test_jnp_add_promotes_like_jax(table):
    kinds, rows = table
    wrong = []
    for a, b, (dtype, weak) in cases(kinds, rows):
        out = jnp.add(value(a), value(b))
        if (out.dtype, out.weak_type) != (dtype, weak):
            wrong.append((a, b, dtype, weak, out.dtype, out.weak_type))
    assert not wrong


def test_result_type_agrees_with_the_table(table):
    kinds, rows = table
    for a, b, (dtype, weak) in cases(kinds, rows):
        assert jnp.result_type(value(a), value(b)) == dtype
        assert dtypes.result_type(value(a), value(b), return_weak_type=True) == (dtype, weak)


PROMOTE_TYPES = [  # (a, b, x64 off, x64 on), recorded from jnp.promote_types: never weak, not narrowed
    (np.uint32, np.int32, "int32", "int64"), (np.int64, np.uint64, "float64", "float64"),
    (np.uint64, np.int8, "float64", "float64"), (np.int8, np.int64, "int64", "int64"),
    (np.uint32, np.int64, "int64", "int64"), (np.uint32, np.int8, "int32", "int64"),
    (np.float16, np.float64, "float64", "float64"), (np.int64, np.float16, "float16", "float16"),
    (np.bool_, np.int64, "int64", "int64"), (np.uint16, np.int16, "int32", "int32"), (int, np.int8, "int8", "int8"),
    (float, np.int32, "float64", "float64"), (np.int32, np.int32, "int32", "int32"),
]


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
def test_promote_types_of_dtypes(x64):
    config.update("jax_enable_x64", x64)
    try:
        got = [str(jnp.promote_types(a, b)) for a, b, *_ in PROMOTE_TYPES]
    finally:
        config.update("jax_enable_x64", False)
    assert got == [on if x64 else off for *_, off, on in PROMOTE_TYPES]


def test_python_ints_must_fit_the_default_int():
    with pytest.raises(OverflowError, match="2147483648"):
        jnp.add(jnp.asarray(np.ones(2, np.int32)), 2**31)
    wrapped = jnp.add(jnp.asarray(np.ones(1, np.uint8)), 300)  # fits int32, then wraps into uint8 as JAX's does
    assert wrapped.dtype == np.uint8 and int(wrapped[0]) == 45


@pytest.mark.parametrize("jitted", [False, True])
def test_rank_promotion_raise_and_warn(jitted):
    """jax_numpy_rank_promotion: operands of different ranks (scalars aside) are an error under 'raise' and a
    warning under 'warn' for ufuncs, with JAX's message; jnp.where broadcasts without the check, as in JAX."""
    import warnings

    import srcjax

    call = (lambda f, *a: srcjax.jit(f)(*a)) if jitted else (lambda f, *a: f(*a))
    v, m = jnp.ones(3, np.float32), jnp.ones((2, 3), np.float32)
    with srcjax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match=r"Operands could not be broadcast together for add on shapes \(3,\) "
                                             r"\(2, 3\) and with the config option jax_numpy_rank_promotion='raise'"):
            call(lambda a, b: a + b, v, m)
        with pytest.raises(ValueError, match="for logical_and on shapes"):
            call(jnp.logical_and, v, m)
        np.testing.assert_array_equal(call(lambda a, b: a * b, jnp.float32(2), m), 2 * m)  # a scalar is no rank
        np.testing.assert_array_equal(call(lambda a, b: a * b, m[:1], m), m)  # same rank
        np.testing.assert_array_equal(call(lambda c, a, b: jnp.where(c > 0, a, b), m, v, 0.0), m)
    with srcjax.numpy_rank_promotion("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(call(jnp.maximum, v, m), m)
    assert any("Following NumPy automatic rank promotion for maximum on shapes (3,) (2, 3)" in str(w.message)
               for w in caught)
    assert config.jax_numpy_rank_promotion == "allow"
    np.testing.assert_array_equal(call(lambda a, b: a + b, v, m), 2 * m)


def _kind_of(x):
    return f"{np.dtype(x.dtype).name}{'*' if x.weak_type else ''}"


def test_integer_power_results_are_strongly_typed():
    """JAX's integer ** integer array power is strongly typed even of two weakly typed operands (its binary
    exponentiation starts from a strong constant), and a Python bool exponent, or a concrete 0-d integer array
    one (eagerly), is a static one (JAX takes its operator.index): the results recorded from JAX 0.10.2, eagerly
    and under jit."""
    import srcjax

    weak = jnp.asarray(3) * 1
    bools = jnp.asarray(np.array([True, False]))
    got = [weak ** weak, srcjax.jit(lambda a, b: a ** b)(weak, weak), bools ** weak, 3 ** bools, weak ** True,
           srcjax.jit(lambda a: a ** True)(weak)]
    assert [_kind_of(r) for r in got] == ["int32*", "int32", "int32", "int32", "int32*", "int32*"]
    assert [np.asarray(r).tolist() for r in got] == [27, 27, [1, 0], [3, 1], 3, 3]
    # so the traced result no longer defers to a narrower operand (JAX: int32, not int8); the eager one does
    assert (got[1] + jnp.asarray(np.int8(1))).dtype == np.int32
    assert (got[0] + jnp.asarray(np.int8(1))).dtype == np.int8


def test_concrete_integer_scalar_array_exponent_keeps_the_base_dtype():
    """JAX takes ``operator.index`` of a concrete exponent, a 0-d integer array included, and binds
    ``integer_pow`` in the base's dtype (so int8 wraps, and a negative one is refused for an integer base);
    under jit a traced exponent promotes. Recorded from JAX 0.10.2."""
    import srcjax

    a8 = jnp.asarray(np.array([2, 3, -2], np.int8))
    got = [a8 ** jnp.asarray(np.int32(7)), jnp.power(a8, jnp.asarray(np.uint8(3))), jnp.power(a8, np.array(2)),
           jnp.power(jnp.asarray(np.uint32(3)), jnp.asarray(np.int32(2))), jnp.power(2, jnp.asarray(np.int8(3))),
           srcjax.jit(jnp.power)(a8, jnp.asarray(np.uint8(3)))]
    assert [_kind_of(r) for r in got] == ["int8", "int8", "int8", "uint32", "int32*", "int16"]
    assert [np.asarray(r).tolist() for r in got] == [[-128, -117, -128], [8, 27, -8], [4, 9, 4], 9, 8, [8, 27, -8]]
    with pytest.raises(TypeError, match="negative"):
        jnp.power(a8, jnp.asarray(np.int32(-1)))


def test_asarray_with_a_dtype_makes_a_weak_array_strong():
    """``jnp.asarray(x, dtype)`` of a weakly typed array of that very dtype is strongly typed (JAX 0.10.2),
    so it then promotes as a float32 array, not as a Python float; without a dtype it stays weak."""
    weak = jnp.asarray(1.0) * 2
    assert [_kind_of(r) for r in (jnp.asarray(weak, np.float32), jnp.array(weak, np.float32), jnp.asarray(weak))] \
        == ["float32", "float32", "float32*"]
    assert (jnp.asarray(weak, np.float32) + jnp.asarray(np.float16(1))).dtype == np.float32


INEXACT_X64 = [  # function, recorded from JAX 0.10.2 with x64 on: (int8, int32, uint32, bool, int64) inputs
    (jnp.mean, "float32 float32 float32 float32 float64"),
    (jnp.var, "float32 float32 float32 float32 float64"),
    (jnp.nanstd, "float32 float32 float32 float32 float64"),
    (jnp.median, "float32 float32 float32 float32 float64"),
    (lambda a: jnp.quantile(a, 0.5), "float32 float32 float32 float32 float64"),
    (lambda a: jnp.average(a, weights=a), "float32 float32 float32 float32 float64"),
    (lambda a: jnp.linspace(a[0], a[1], 3), "float32 float32 float32 float32 float64"),
    (lambda a: jnp.geomspace(a[0], a[1], 3), "float32 float32 float32 float32 float64"),
    (jnp.trapezoid, "float32 float32 float32 float32 float64"),
    (jnp.fft.fft, "complex64 complex64 complex64 complex64 complex128"),
    (jnp.fft.rfft, "complex64 complex64 complex64 complex64 complex128"),
    (jnp.sort_complex, "complex64 complex64 complex64 complex64 complex128"),
    (jnp.unwrap, "float64 float64 float64 float64 float64"),  # promoted with the period, a Python float
    (lambda a: jnp.unwrap(a, period=4), "int8 int32 uint32 int64 int64"),  # an integer period keeps integers
]


@pytest.mark.parametrize("fn, want", INEXACT_X64)
def test_integers_become_float32_where_a_function_needs_a_float(fn, want, x64):
    """With x64 on, JAX computes in float32 for integers of up to 32 bits and bools, float64 for 64-bit ones
    (its to_inexact_dtype table), not in the default float."""
    got = [fn(jnp.asarray(np.array([1, 2], dt))).dtype.name for dt in ("int8", "int32", "uint32", "bool", "int64")]
    assert got == want.split()


# jax_numpy_dtype_promotion="strict": jnp.add of each pair, recorded from JAX 0.10.2 ("-": TypePromotionError)
STRICT_KINDS_32 = KINDS_32
STRICT_X64_OFF = {
    "bool": "bool - - - - - - - - - - - -",
    "u8": "- u8 - - - - - - - - u8 - -",
    "u16": "- - u16 - - - - - - - u16 - -",
    "u32": "- - - u32 - - - - - - u32 - -",
    "i8": "- - - - i8 - - - - - i8 - -",
    "i16": "- - - - - i16 - - - - i16 - -",
    "i32": "- - - - - - i32 - - - i32 - -",
    "f16": "- - - - - - - f16 - - f16 f16 -",
    "f32": "- - - - - - - - f32 - f32 f32 -",
    "c64": "- - - - - - - - - c64 c64 c64 c64",
    "i*": "- u8 u16 u32 i8 i16 i32 f16 f32 c64 i32* f32* c64*",
    "f*": "- - - - - - - f16 f32 c64 f32* f32* c64*",
    "c*": "- - - - - - - - - c64 c64* c64* c64*",
}
STRICT_KINDS_64 = ["bool", "u8", "u32", "u64", "i8", "i64", "f16", "f32", "f64", "c64", "c128", "i*", "f*", "c*"]
STRICT_X64_ON = {
    "bool": "bool - - - - - - - - - - - - -",
    "u8": "- u8 - - - - - - - - - u8 - -",
    "u32": "- - u32 - - - - - - - - u32 - -",
    "u64": "- - - u64 - - - - - - - u64 - -",
    "i8": "- - - - i8 - - - - - - i8 - -",
    "i64": "- - - - - i64 - - - - - i64 - -",
    "f16": "- - - - - - f16 - - - - f16 f16 -",
    "f32": "- - - - - - - f32 - - - f32 f32 -",
    "f64": "- - - - - - - - f64 - - f64 f64 -",
    "c64": "- - - - - - - - - c64 - c64 c64 c64",
    "c128": "- - - - - - - - - - c128 c128 c128 c128",
    "i*": "- u8 u32 u64 i8 i64 f16 f32 f64 c64 c128 i64* f64* c128*",
    "f*": "- - - - - - f16 f32 f64 c64 c128 f64* f64* c128*",
    "c*": "- - - - - - - - - c64 c128 c128* c128* c128*",
}


def _strict_outcome(fn, *args):
    import srcjax

    try:
        out = fn(*args)
    except srcjax.dtypes.TypePromotionError:
        return "-"
    return f"{jnp.zeros(0, out.dtype).dtype.name}{'*' if out.weak_type else ''}"


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
def test_strict_dtype_promotion_table(x64):
    """Under jax_numpy_dtype_promotion='strict' only Python scalars (weak types) promote, each into its own kind
    or above; any two different strong dtypes (bool and a Python int included) raise TypePromotionError, eagerly
    and under jit, and jnp.result_type agrees."""
    import srcjax

    kinds, rows = (STRICT_KINDS_64, STRICT_X64_ON) if x64 else (STRICT_KINDS_32, STRICT_X64_OFF)
    names = {np.dtype(t).name: k for k, t in DTYPES.items()}
    config.update("jax_enable_x64", x64)
    try:
        with srcjax.numpy_dtype_promotion("strict"):
            assert config.jax_numpy_dtype_promotion == "strict"
            got = {a: [_strict_outcome(jnp.add, value(a), value(b)) for b in kinds] for a in kinds}
            typed = {a: [_strict_outcome(lambda p, q: jnp.zeros((), jnp.result_type(p, q)), value(a), value(b))
                         for b in kinds] for a in kinds}
            traced = [_strict_outcome(srcjax.jit(jnp.add), value(a), value(b)) for a, b in
                      [("i8", "i16"), ("f32", "i32"), ("f16", "f*"), ("i*", "u8"), ("bool", "i*")]]
    finally:
        config.update("jax_enable_x64", False)
    short = {a: " ".join(names.get(r.rstrip("*"), r.rstrip("*")) + ("*" if r.endswith("*") else "")
                         for r in row) for a, row in got.items()}
    assert short == rows
    for a in kinds:  # result_type names the dtype; a weak result there is the kind's default dtype
        assert [r.rstrip("*") for r in typed[a]] == [r.rstrip("*") for r in got[a]]
    assert traced == ["-", "-", "float16", "uint8", "-"]
    assert config.jax_numpy_dtype_promotion == "standard"


def test_strict_dtype_promotion_errors_and_what_stays_allowed():
    """JAX 0.10.2's behaviour under the strict option: the error is a ValueError named
    jax.dtypes.TypePromotionError, raised by operators, jnp functions, promote_types and a float base to an
    integer power; Python scalars and functions that cast explicitly (mean, sqrt of integers) still work. The
    option is part of jit's cache key: a function compiled under 'standard' is traced again under 'strict'."""
    import srcjax

    x, i = jnp.arange(3.0), jnp.arange(3)
    double = srcjax.jit(lambda a, b: a * b)
    np.testing.assert_array_equal(double(x, i), [0.0, 1.0, 4.0])  # compiled under 'standard'
    srcjax.config.update("jax_numpy_dtype_promotion", "strict")
    try:
        for fn in (lambda: x * i, lambda: double(x, i), lambda: x ** i, lambda: 2.0 ** i,
                   lambda: jnp.concatenate([x, i]), lambda: jnp.logical_and(i > 0, i), lambda: jnp.logical_or(x, i),
                   lambda: jnp.promote_types("int8", "int16"),
                   lambda: jnp.promote_types("uint32", "int32"), lambda: jnp.promote_types(bool, int)):
            with pytest.raises(srcjax.dtypes.TypePromotionError, match="no available implicit dtype promotion path "
                                                                      "when jax_numpy_dtype_promotion=strict"):
                fn()
        assert issubclass(srcjax.dtypes.TypePromotionError, ValueError)
        np.testing.assert_array_equal(x ** 2, [0.0, 1.0, 4.0])
        np.testing.assert_array_equal(jnp.where(i > 0, x, 1), [1.0, 1.0, 2.0])
        np.testing.assert_array_equal(x.astype(jnp.int32) + i, [0, 2, 4])
        assert jnp.mean(i).dtype == np.float32 and jnp.sqrt(i).dtype == np.float32
        assert jnp.promote_types(int, "int8") == np.int8 and jnp.promote_types(float, int) == np.float64
        assert jnp.result_type(np.int8, np.int8) == np.int8
    finally:
        srcjax.config.update("jax_numpy_dtype_promotion", "standard")
    np.testing.assert_array_equal(double(x, i), [0.0, 1.0, 4.0])
    with pytest.raises(ValueError, match="must be one of"):
        srcjax.config.update("jax_numpy_dtype_promotion", "loose")


def test_dtypes_result_type_takes_jax_keyword_and_none():
    """jax.dtypes.result_type(..., return_weak_type_flag=True) gives (dtype, weak), and None stands for the
    default float dtype (JAX 0.10.2's answers)."""
    import srcjax

    assert srcjax.dtypes.result_type(np.int8, 2.0, return_weak_type_flag=True) == (np.dtype("float32"), True)
    assert srcjax.dtypes.result_type(3, return_weak_type_flag=True) == (np.dtype("int32"), True)
    assert srcjax.dtypes.result_type(np.int8, return_weak_type_flag=False) == np.int8
    assert srcjax.dtypes.result_type(None, np.int8) == np.float32
    assert jnp.result_type(None) == np.float32


def test_explicit_64_bit_dtypes_warn_with_x64_off():
    """With x64 off, asking for a 64-bit dtype by name gives its 32-bit form with JAX's UserWarning ("Explicitly
    requested dtype float64 requested in asarray is not available, and will be truncated to dtype float32");
    the Python types int and float name the default dtypes and do not warn. lax.convert_element_type from complex
    to real warns as JAX's does (ComplexWarning); jnp's astype does not."""
    import warnings

    import srcjax

    asked = [lambda: jnp.asarray([1.0], dtype=np.float64), lambda: jnp.zeros(2, np.float64),
             lambda: jnp.ones(2, "int64"), lambda: jnp.arange(3, dtype=np.uint64), lambda: jnp.float64(1.5),
             lambda: jnp.ones(2).astype(np.complex128), lambda: jnp.sum(jnp.ones(2), dtype=np.float64),
             lambda: srcjax.lax.convert_element_type(jnp.ones(2), np.float64), lambda: jnp.eye(2, dtype=np.int64)]
    for make in asked:
        with pytest.warns(UserWarning, match=r"Explicitly requested dtype \w+ (requested in \w+ )?is not available, "
                                             r"and will be truncated to dtype \w+\."):
            assert make().dtype in (np.float32, np.int32, np.uint32, np.complex64)
    with pytest.warns(np.exceptions.ComplexWarning, match="Casting complex values to real discards the imaginary"):
        srcjax.lax.convert_element_type(jnp.asarray([1 + 2j]), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jnp.asarray([1 + 2j]).astype(np.float32).dtype == np.float32  # (jnp's astype does not warn)
        assert jnp.zeros(2, float).dtype == np.float32 and jnp.zeros(2, int).dtype == np.int32
        assert jnp.asarray(np.ones(2)).dtype == np.float32  # an array's own float64 narrows quietly
        config.update("jax_enable_x64", True)
        try:
            assert jnp.zeros(2, np.float64).dtype == np.float64
        finally:
            config.update("jax_enable_x64", False)


def test_tri_defaults_to_float32_and_angle_of_a_0d_float_is_the_default_float(x64):
    """jnp.tri's default dtype is float32 even with x64 on, and jnp.angle of a 0-d float array of any width is
    the default float dtype (an array of float16 stays float16): JAX 0.10.2's rules, recorded with x64 on."""
    assert jnp.tri(2).dtype == np.float32 and jnp.tri(2, dtype=np.float64).dtype == np.float64
    assert jnp.angle(jnp.asarray(np.float16(-1))).dtype == np.float64
    assert jnp.angle(jnp.asarray(np.array([-1], np.float16))).dtype == np.float16
    np.testing.assert_allclose(jnp.angle(jnp.asarray(np.float16(-1))), np.pi)


@pytest.mark.parametrize("jitted", [False, True])
def test_array_view_reinterprets_bytes_as_numpy_does(jitted):
    """Array.view(dtype) reads the bytes as NumPy's view does: the last axis grows or shrinks by the ratio of the
    itemsizes; bools and complex numbers go through uint8 and (real, imag) pairs; a 0-d array keeps its size."""
    import srcjax

    call = (lambda f, a: srcjax.jit(f)(a)) if jitted else (lambda f, a: f(a))
    raw = np.arange(16, dtype=np.uint8).reshape(2, 8)
    for src, dst in [("uint8", "int32"), ("float32", "uint8"), ("float32", "int32"), ("int16", "float16"),
                     ("uint8", "bool"), ("complex64", "float32"), ("float32", "complex64"), ("int32", "uint16")]:
        base = raw % 2 == 1 if src == "bool" else raw.view(src)
        got = call(lambda a, dst=dst: a.view(dst), jnp.asarray(base))
        want = base.view(dst)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want)
    scalar = call(lambda a: a.view(np.int32), jnp.asarray(np.float32(1.0)))
    assert scalar.shape == () and int(scalar) == 1065353216
    with pytest.raises(ValueError, match="0d array"):
        jnp.asarray(np.float32(1.0)).view(np.int8)


def test_cross_of_3_vectors_is_strongly_typed_and_ediff1d_refuses_bools():
    """JAX's cross stacks its three components with jnp.array, so the result is strongly typed even of weakly
    typed operands (then int8 meets it as an int32 array), while two 2-vectors' z component keeps the weak type;
    ediff1d subtracts, which booleans refuse (JAX 0.10.2)."""
    weak3, weak2 = jnp.broadcast_to(2.0, (3,)), jnp.broadcast_to(2.0, (2,))
    assert not jnp.cross(jnp.asarray(np.array([1, 2, 3], np.int8)), weak3).weak_type
    assert not jnp.cross(jnp.broadcast_to(2, (2, 3)), jnp.broadcast_to(1, (2, 3))).weak_type
    assert jnp.cross(weak2, weak2).weak_type
    assert (jnp.cross(jnp.broadcast_to(2, (3,)), jnp.broadcast_to(1, (3,))) + np.int8(1)).dtype == np.int32
    with pytest.raises(TypeError, match="bool"):
        jnp.ediff1d(jnp.asarray([True, False, True]))
    np.testing.assert_array_equal(jnp.ediff1d(jnp.asarray(np.array([1, 4, 2], np.int8))), [3, -2])


# JAX's functions below meet their constants through ``lax._const``, a Python scalar (weak) for a weakly typed
# scalar and a typed array otherwise: a weakly typed promotion stays weak only for 0-d operands (heaviside: a 0-d
# x1). Recorded from JAX 0.10.2 (W weak, s strong, E an error), rows and columns in the order of WEAK_OPERANDS.
WEAK_OPERANDS = {"f*": lambda: 2.5, "i*": lambda: 3, "i8[]": lambda: jnp.int8(3), "f*[]": lambda: jnp.asarray(1.5),
                 "f*[2]": lambda: jnp.full((2,), 1.5), "f32[2]": lambda: jnp.asarray([1.5, -0.5], np.float32),
                 "bool[]": lambda: jnp.asarray(True)}
WEAK_BINARY = {
    "hypot": "WWWWssWWWsWssWWssWsssWWWWssWssssssssssssssWWsWsss",
    "logaddexp2": "WWWWssWWWsWssWWssWsssWWWWssWssssssssssssssWWsWsss",
    "heaviside": "WWWWWsWWWsWWsWWssWWssWWWWWsWssssssssssssssWWsWWss",
    "logical_and": "WWWWssWWWsWssWWssWsssWWWWssWssssssssssssssWWsWsss",
    "gcd": "EEEEEEEEWsEEEWEssEEEsEEEEEEEEEEEEEEEEEEEEEEWsEEEE",
}
WEAK_UNARY = {"deg2rad": "WWsWsss", "sinc": "WWsWsss", "logical_not": "WWsWsss", "iscomplex": "WWsWsss",
              "round": "WWsWssE"}  # (round to 1 decimal)


@pytest.mark.parametrize("name", sorted(WEAK_BINARY) + sorted(WEAK_UNARY))
def test_weak_type_through_jax_internal_constants(name):
    got = []
    for x in WEAK_OPERANDS.values():
        for y in WEAK_OPERANDS.values() if name in WEAK_BINARY else [None]:
            try:
                args = (x(), y()) if y else (x(), 1) if name == "round" else (x(),)
                out = getattr(jnp, name)(*args)
            except (TypeError, ValueError):
                got.append("E")
            else:
                got.append("W" if out.weak_type else "s")
    assert "".join(got) == {**WEAK_BINARY, **WEAK_UNARY}[name]
