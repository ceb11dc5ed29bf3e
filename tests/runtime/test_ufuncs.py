"""``jnp``'s elementwise functions (runtime/numpy/ufuncs.py) and ``lax``'s (runtime/lax/elementwise.py):
result dtypes and weak types against a table recorded from JAX 0.10.2 (quirks included), values against
NumPy in float64 over broadcast shapes (0-d and empty among them), integer and IEEE edge cases recorded
from JAX, the operators and methods of ``Array`` that call these functions, and clear errors."""

import math
import warnings

import numpy as np
import pytest

import srcjax
import srcjax.runtime.lax as lax
import srcjax.runtime.numpy as jnp
from srcjax.runtime.array import Array
from srcjax.runtime.config import config
from srcjax.transpiler.primitives import core

RNG = np.random.default_rng(0)
KINDS = ["bool", "i8", "u8", "i32", "u32", "f16", "f32", "c64", "i*", "f*", "c*"]
DTYPES = {"bool": np.bool_, "i8": np.int8, "u8": np.uint8, "i32": np.int32, "u32": np.uint32, "f16": np.float16,
          "f32": np.float32, "c64": np.complex64, "i16": np.int16, "u16": np.uint16}
SCALARS = {"i*": 3, "f*": 0.5, "c*": 0.5 + 1j}
SHORT = {np.dtype(v): k for k, v in DTYPES.items()}


def value(kind):
    if kind in SCALARS:
        return SCALARS[kind]
    return jnp.asarray(np.array([1, 2, 3]).astype(DTYPES[kind]) if kind != "bool" else np.array([True, False, True]))


def describe(out):
    """'f32', 'i32*' (weakly typed), 'f32,i32' for tuples, 'X' for an error: the tables' notation."""
    if isinstance(out, tuple):
        return ",".join(describe(o) for o in out)
    assert isinstance(out, Array), f"returned a {type(out).__name__}, not an Array"
    return SHORT[out.dtype] + ("*" if out.weak_type else "")


def outcome(fn, *args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return describe(fn(*args))
    except (TypeError, ValueError, NotImplementedError):
        return "X"


# -- result types: jnp.<name>(kind) and jnp.<name>(kind, kind), recorded from JAX (x64 off) ------------------
# Columns follow KINDS; i*, f*, c* are Python scalars; "X" is an error.
UNARY_TYPES = {
    "negative": "X i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "positive": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "abs": "bool i8 u8 i32 u32 f16 f32 f32 i32* f32* f32*",
    "absolute": "bool i8 u8 i32 u32 f16 f32 f32 i32* f32* f32*",
    "fabs": "f32 f32 f32 f32 f32 f16 f32 X f32* f32* X",
    "sign": "X i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "exp": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "exp2": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "expm1": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "log": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "log2": "f32 f32 f32 f32 f32 f16 f32 c64 f32 f32 c64",
    "log10": "f32 f32 f32 f32 f32 f16 f32 c64 f32 f32 c64",
    "log1p": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "sqrt": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "cbrt": "f32 f32 f32 f32 f32 f16 f32 X f32* f32* X",
    "square": "i32 i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "reciprocal": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "sin": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "cos": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "tan": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "arcsin": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "arccos": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "arctan": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "sinh": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "cosh": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "tanh": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "arcsinh": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "arccosh": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "arctanh": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "deg2rad": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "rad2deg": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "degrees": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "radians": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "floor": "bool i8 u8 i32 u32 f16 f32 X i32* f32* X",
    "ceil": "bool i8 u8 i32 u32 f16 f32 X i32* f32* X",
    "trunc": "bool i8 u8 i32 u32 f16 f32 X i32* f32* X",
    "rint": "f32 f32 f32 f32 f32 f16 f32 c64 f32 f32* c64*",
    "round": "X i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "around": "X i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "logical_not": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "bitwise_not": "bool i8 u8 i32 u32 X X X i32* X X",
    "bitwise_invert": "bool i8 u8 i32 u32 X X X i32* X X",
    "invert": "bool i8 u8 i32 u32 X X X i32* X X",
    "isfinite": "bool bool bool bool bool bool bool bool bool bool* bool*",
    "isinf": "bool bool bool bool bool bool bool bool bool bool bool",
    "isnan": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "isneginf": "bool bool bool bool bool bool bool X bool bool X",
    "isposinf": "bool bool bool bool bool bool bool X bool bool X",
    "signbit": "bool bool bool bool bool bool bool X bool bool X",
    "real": "bool i8 u8 i32 u32 f16 f32 f32 i32* f32* f32*",
    "imag": "bool i8 u8 i32 u32 f16 f32 f32 i32* f32* f32*",
    "conj": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "conjugate": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "angle": "f32 f32 f32 f32 f32 f16 f32 f32 f32 f32 f32*",
    "nan_to_num": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32 c64",
    "sinc": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "frexp": "f32,i32 f32,i32 f32,i32 f32,i32 f32,i32 f16,i32 f32,i32 X f32,i32 f32,i32 X",
    "modf": "f32,f32 f32,f32 f32,f32 f32,f32 f32,f32 f16,f16 f32,f32 X f32*,f32* f32*,f32* X",
    "bitwise_count": "u8 u8 u8 u8 u8 X X X u8 X X",
}
BINARY_TYPES = {
    "add": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "subtract": "X i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "multiply": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "divide": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "true_divide": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "floor_divide": "i32 i8 u8 i32 u32 f16 f32 X i32* f32* X",
    "remainder": "i32 i8 u8 i32 u32 f16 f32 X i32* f32* X",
    "mod": "i32 i8 u8 i32 u32 f16 f32 X i32* f32* X",
    "fmod": "i32 i8 u8 i32 u32 f16 f32 X i32* f32* X",
    "divmod": "i32,i32 i8,i8 u8,u8 i32,i32 u32,u32 f16,f16 f32,f32 X i32*,i32* f32*,f32* X",
    "power": "i32 i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "pow": "i32 i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "float_power": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "arctan2": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "hypot": "f32 f32 f32 f32 f32 f16 f32 X f32* f32* X",
    "logaddexp": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "logaddexp2": "f32 f32 f32 f32 f32 f16 f32 c64 f32* f32* c64*",
    "maximum": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "minimum": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "fmax": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "fmin": "bool i8 u8 i32 u32 f16 f32 c64 i32* f32* c64*",
    "equal": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "not_equal": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "less": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "less_equal": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "greater": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "greater_equal": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "logical_and": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "logical_or": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "logical_xor": "bool bool bool bool bool bool bool bool bool* bool* bool*",
    "bitwise_and": "bool i8 u8 i32 u32 X X X i32* X X",
    "bitwise_or": "bool i8 u8 i32 u32 X X X i32* X X",
    "bitwise_xor": "bool i8 u8 i32 u32 X X X i32* X X",
    "left_shift": "i32 i8 u8 i32 u32 X X X i32* X X",
    "right_shift": "i32 i8 u8 i32 u32 X X X i32* X X",
    "copysign": "f32 f32 f32 f32 f32 f16 f32 X f32* f32* X",
    "nextafter": "f32 f32 f32 f32 f32 f16 f32 X f32* f32* X",
    "ldexp": "f32 f32 f32 f32 f32 X X X f32 X X",
    "heaviside": "f32 f32 f32 f32 f32 f16 f32 X f32* f32* X",
    "gcd": "X i8 u8 i32 u32 X X X i32* X X",
    "lcm": "X i8 u8 i32 u32 X X X i32* X X",
}
MIXED_TYPES = {
    "add": "f32* u8 f16 f32* i32* c64 f16 i32 f32*",
    "subtract": "f32* u8 f16 f32* i32* c64 f16 i32 f32*",
    "multiply": "f32* u8 f16 f32* i32* c64 f16 i32 f32*",
    "divide": "f32* f32 f16 f32* f32* c64 f16 f32 f32*",
    "true_divide": "f32* f32 f16 f32* f32* c64 f16 f32 f32*",
    "floor_divide": "f32* u8 f16 f32* i32* X f16 i32 f32*",
    "remainder": "f32* u8 f16 f32* i32* X f16 i32 f32*",
    "mod": "f32* u8 f16 f32* i32* X f16 i32 f32*",
    "fmod": "f32* u8 f16 f32* i32* X f16 i32 f32*",
    "divmod": "f32*,f32* u8,u8 f16,f16 f32*,f32* i32*,i32* X f16,f16 i32,i32 f32*,f32*",
    "power": "f32* u8 f16 f32* i32 c64 f16 i32 f32*",
    "pow": "f32* u8 f16 f32* i32 c64 f16 i32 f32*",
    "float_power": "f32* f32 f16 f32* f32* c64 f16 f32 f32*",
    "arctan2": "f32* f32 f16 f32* f32* c64 f16 f32 f32*",
    "hypot": "f32 f32 f16 f32 f32 X f16 f32 f32",
    "logaddexp": "f32* f32 f16 f32* f32* c64 f16 f32 f32*",
    "logaddexp2": "f32 f32 f16 f32 f32 c64 f16 f32 f32",
    "maximum": "f32* u8 f16 f32* i32* c64 f16 i32 f32*",
    "minimum": "f32* u8 f16 f32* i32* c64 f16 i32 f32*",
    "fmax": "f32* u8 f16 f32* i32* c64 f16 i32 f32*",
    "fmin": "f32* u8 f16 f32* i32* c64 f16 i32 f32*",
    "equal": "bool* bool bool bool* bool* bool bool bool bool*",
    "not_equal": "bool* bool bool bool* bool* bool bool bool bool*",
    "less": "bool* bool bool bool* bool* bool bool bool bool*",
    "less_equal": "bool* bool bool bool* bool* bool bool bool bool*",
    "greater": "bool* bool bool bool* bool* bool bool bool bool*",
    "greater_equal": "bool* bool bool bool* bool* bool bool bool bool*",
    "logical_and": "bool bool bool bool bool bool bool bool bool",
    "logical_or": "bool bool bool bool bool bool bool bool bool",
    "logical_xor": "bool bool bool bool bool bool bool bool bool",
    "bitwise_and": "X u8 X X i32* X X i32 X",
    "bitwise_or": "X u8 X X i32* X X i32 X",
    "bitwise_xor": "X u8 X X i32* X X i32 X",
    "left_shift": "X u8 X X i32* X X i32 X",
    "right_shift": "X u8 X X i32* X X i32 X",
    "copysign": "f32* f32 f16 f32* f32* X f16 f32 f32*",
    "nextafter": "f32* f32 f16 f32* f32* X f16 f32 f32*",
    "ldexp": "X f32 X X f32 X X f32 X",
    "heaviside": "f32 f32 f16 f32 f32 X f16 f32 f32",
    "gcd": "X u8 X X i32 X X i32 X",
    "lcm": "X u8 X X i32 X X i32 X",
}
MIXED_PAIRS = [("i32", "f*"), ("u8", "i*"), ("f16", "f*"), ("i8", "f*"), ("bool", "i*"), ("f32", "c*"), ("i32", "f16"),
               ("u32", "i32"), ("bool", "f*")]


@pytest.mark.parametrize("name", sorted(UNARY_TYPES))
def test_unary_result_types_match_jax(name):
    got = [outcome(getattr(jnp, name), value(kind)) for kind in KINDS]
    assert " ".join(got) == UNARY_TYPES[name]


@pytest.mark.parametrize("name", sorted(BINARY_TYPES))
def test_binary_result_types_match_jax(name):
    got = [outcome(getattr(jnp, name), value(kind), value(kind)) for kind in KINDS]
    assert " ".join(got) == BINARY_TYPES[name]
    got = [outcome(getattr(jnp, name), value(a), value(b)) for a, b in MIXED_PAIRS]
    assert " ".join(got) == MIXED_TYPES[name]


# With x64 on, recorded from JAX: integers of up to 32 bits become float32 in float functions, int64 float64.
X64_TYPES = [
    ("sqrt", ["i32"], "f32"), ("sqrt", ["i64"], "f64"), ("sqrt", ["i*"], "f64*"), ("sqrt", ["bool"], "f32"),
    ("true_divide", ["i32", "i32"], "f32"), ("true_divide", ["u8", "u8"], "f32"), ("add", ["f32", "f*"], "f32"),
    ("add", ["i64", "u64"], "f64*"), ("frexp", ["f64"], "f64,i32"), ("bitwise_count", ["i64"], "u8"),
    ("power", ["i64", "i*"], "i64"), ("exp", ["f16"], "f16"), ("isclose", ["f32", "f*"], "bool"),
    ("clip", ["i32", "f*"], "f64*"), ("floor_divide", ["u64", "i64"], "f64*"), ("ldexp", ["f32", "i64"], "f32"),
    ("angle", ["i*"], "f64"), ("angle", ["i32"], "f64"), ("rint", ["i64"], "f64"), ("square", ["bool"], "i32"),
    ("floor_divide", ["bool", "bool"], "i32"), ("hypot", ["i*", "f*"], "f64*"), ("reciprocal", ["u32"], "f32"),
]
X64_DTYPES = {**DTYPES, "i64": np.int64, "u64": np.uint64, "f64": np.float64}


def test_result_types_with_x64_match_jax():
    config.update("jax_enable_x64", True)
    try:
        short = {np.dtype(v): k for k, v in X64_DTYPES.items()}
        for name, kinds, expected in X64_TYPES:
            args = [SCALARS[k] if k in SCALARS else jnp.asarray(np.array([1, 0]).astype(X64_DTYPES[k])) for k in kinds]
            out = getattr(jnp, name)(*args)
            outs = out if isinstance(out, tuple) else (out,)
            got = ",".join(short[o.dtype] + ("*" if o.weak_type else "") for o in outs)
            assert got == expected, (name, kinds)
    finally:
        config.update("jax_enable_x64", False)


# -- values against NumPy in float64 ---------------------------------------------------------------------------
SHAPE_PAIRS = [((), ()), ((4,), ()), ((2, 3), (3,)), ((3, 1), (1, 4)), ((0,), ()), ((2, 0), (2, 1))]


def f32_close(actual, expected):
    assert isinstance(actual, Array)
    np.testing.assert_allclose(np.asarray(actual).astype(np.complex128), np.asarray(expected, np.complex128),
                               rtol=3e-6, atol=3e-6)


def numpy_degrees(x):
    return np.degrees(x)


# (name, NumPy oracle, input range): unary functions on float32 input
UNARY_VALUES = [
    ("negative", np.negative, None), ("positive", np.positive, None), ("abs", np.abs, None), ("fabs", np.fabs, None),
    ("sign", np.sign, None), ("exp", np.exp, None), ("exp2", np.exp2, None), ("expm1", np.expm1, None),
    ("log", np.log, (0.1, 9)), ("log2", np.log2, (0.1, 9)), ("log10", np.log10, (0.1, 9)),
    ("log1p", np.log1p, (-0.5, 9)), ("sqrt", np.sqrt, (0, 9)), ("cbrt", np.cbrt, None), ("square", np.square, None),
    ("reciprocal", np.reciprocal, (0.5, 3)), ("sin", np.sin, None), ("cos", np.cos, None), ("tan", np.tan, (-1, 1)),
    ("arcsin", np.arcsin, (-0.9, 0.9)), ("arccos", np.arccos, (-0.9, 0.9)), ("arctan", np.arctan, None),
    ("sinh", np.sinh, None), ("cosh", np.cosh, None), ("tanh", np.tanh, None), ("arcsinh", np.arcsinh, None),
    ("arccosh", np.arccosh, (1.1, 5)), ("arctanh", np.arctanh, (-0.9, 0.9)), ("deg2rad", np.deg2rad, None),
    ("rad2deg", np.rad2deg, None), ("degrees", numpy_degrees, None), ("floor", np.floor, None),
    ("ceil", np.ceil, None), ("trunc", np.trunc, None), ("rint", np.rint, None), ("round", np.round, None),
    ("sinc", np.sinc, None), ("signbit", np.signbit, None), ("isfinite", np.isfinite, None),
    ("isnan", np.isnan, None), ("isinf", np.isinf, None), ("logical_not", np.logical_not, None),
    ("real", np.real, None), ("imag", np.imag, None), ("conj", np.conj, None), ("angle", np.angle, None),
    ("spacing", np.spacing, None),
]


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (0,), (0, 4)], ids=str)
@pytest.mark.parametrize("name, oracle, domain", UNARY_VALUES, ids=[c[0] for c in UNARY_VALUES])
def test_unary_values_match_numpy(name, oracle, domain, shape):
    x = RNG.uniform(*(domain or (-3, 3)), size=shape).astype(np.float32)
    expected = oracle(x) if name == "spacing" else oracle(x.astype(np.float64))
    f32_close(getattr(jnp, name)(x), expected)


# (name, NumPy oracle, first range, second range)
BINARY_VALUES = [
    ("add", np.add, None, None), ("subtract", np.subtract, None, None), ("multiply", np.multiply, None, None),
    ("divide", np.divide, None, (0.5, 3)), ("true_divide", np.true_divide, None, (-3, -0.5)),
    ("floor_divide", np.floor_divide, None, (0.5, 3)), ("remainder", np.remainder, None, (0.5, 3)),
    ("mod", np.mod, None, (-3, -0.5)), ("fmod", np.fmod, None, (0.5, 3)), ("power", np.power, (0.1, 3), None),
    ("float_power", np.float_power, (0.1, 3), None), ("arctan2", np.arctan2, None, None),
    ("hypot", np.hypot, None, None), ("logaddexp", np.logaddexp, None, None),
    ("logaddexp2", np.logaddexp2, None, None), ("maximum", np.maximum, None, None),
    ("minimum", np.minimum, None, None), ("fmax", np.fmax, None, None), ("fmin", np.fmin, None, None),
    ("equal", np.equal, None, None), ("not_equal", np.not_equal, None, None), ("less", np.less, None, None),
    ("less_equal", np.less_equal, None, None), ("greater", np.greater, None, None),
    ("greater_equal", np.greater_equal, None, None), ("logical_and", np.logical_and, None, None),
    ("logical_or", np.logical_or, None, None), ("logical_xor", np.logical_xor, None, None),
    ("copysign", np.copysign, None, None), ("heaviside", np.heaviside, None, None),
    ("arctan2", np.arctan2, None, None),
]


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("name, oracle, first, second", BINARY_VALUES, ids=[c[0] for c in BINARY_VALUES])
def test_binary_values_match_numpy_with_broadcasting(name, oracle, first, second, shapes):
    x = RNG.uniform(*(first or (-3, 3)), size=shapes[0]).astype(np.float32)
    y = RNG.uniform(*(second or (-3, 3)), size=shapes[1]).astype(np.float32)
    if name in ("logical_and", "logical_or", "logical_xor", "equal", "not_equal", "heaviside"):
        x, y = np.round(x), np.round(y)  # zeros and ties occur
    with np.errstate(invalid="ignore"):  # (negative bases to fractional powers: NaN on both sides)
        f32_close(getattr(jnp, name)(x, y), oracle(x.astype(np.float64), y.astype(np.float64)))
        f32_close(getattr(jnp, name)(y, x), oracle(y.astype(np.float64), x.astype(np.float64)))


INT_FUNCTIONS = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                 ("floor_divide", np.floor_divide), ("remainder", np.remainder), ("fmod", np.fmod),
                 ("maximum", np.maximum), ("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                 ("bitwise_xor", np.bitwise_xor), ("gcd", np.gcd), ("lcm", np.lcm), ("power", np.power),
                 ("left_shift", np.left_shift), ("right_shift", np.right_shift)]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32])
@pytest.mark.parametrize("name, oracle", INT_FUNCTIONS, ids=[c[0] for c in INT_FUNCTIONS])
def test_integer_functions_are_exact(name, oracle, dtype):
    low, high = (0 if np.dtype(dtype).kind == "u" else -20), 20
    if name == "lcm":  # (keep the multiple inside int8)
        low, high = low // 2, 10
    x = RNG.integers(low, high, size=(3, 4)).astype(dtype)
    y = RNG.integers(1, 6 if name in ("power", "left_shift", "right_shift") else 20, size=(4,)).astype(dtype)
    with np.errstate(all="ignore"):
        expected = oracle(x, y)
    out = getattr(jnp, name)(x, y)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, expected)


# -- edge cases, recorded from JAX 0.10.2 ------------------------------------------------------------------------
def a(values, dtype="float32"):
    return jnp.asarray(np.array(values, dtype))


def same(actual, expected, dtype=None):
    assert isinstance(actual, Array)
    if dtype is not None:
        assert actual.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))


def same_within_ulp(actual, expected, ulps=1):
    """Like ``same`` for float32 results computed by NumPy's transcendental functions, whose last bit depends on the
    SIMD code path NumPy dispatches to on this CPU (AVX2 and AVX-512 differ by an ulp): NaNs and infinities in the
    same places, finite values within ``ulps``."""
    assert isinstance(actual, Array) and actual.dtype == np.float32
    got, want = np.asarray(actual), np.asarray(expected, np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=ulps)


def test_integer_division_by_zero_and_signs_as_jax():
    x, y = a([7, -7, 7, -7, 1, -1, 0], "int32"), a([2, 2, -2, -2, 0, 0, 0], "int32")
    same(jnp.floor_divide(x, y), [3, -4, -4, 3, -2, -2, -1], "int32")
    same(jnp.remainder(x, y), [1, 1, -1, -1, 0, 0, 0], "int32")
    same(jnp.fmod(x, y), [1, -1, 1, -1, 0, 0, 0], "int32")
    same(jnp.floor_divide(a([-128], "int8"), a([-1], "int8")), [-128])
    same(jnp.floor_divide(a([5], "uint8"), a([0], "uint8")), [255])
    q, r = divmod(a([7.0, -7.0]), a([2.0, 2.0]))
    same(q, [3.0, -4.0])
    same(r, [1.0, 1.0])


def test_float_floor_divide_and_remainder_as_jax():
    x = a([7.0, -7.0, 7.0, -7.0, 1.0, -1.0, 0.0, 5.5, np.inf])
    y = a([2.0, 2.0, -2.0, -2.0, 0.0, 0.0, 0.0, np.inf, 2.0])
    same(jnp.floor_divide(x, y), [3.0, -4.0, -4.0, 3.0, np.inf, -np.inf, np.nan, 0.0, np.nan])
    # a zero quotient takes the divisor's sign (recorded from JAX 0.10.2; NumPy gives the exact quotient's)
    zeros = jnp.floor_divide(a([-0.0, 0.0, -1.0, -0.5, 0.5, -0.0]), a([1.0, -1.0, -3.0, -np.inf, 2.0, -2.0]))
    same(zeros, [0.0, -0.0, -0.0, -0.0, 0.0, -0.0])
    np.testing.assert_array_equal(np.signbit(np.asarray(zeros)), [False, True, True, True, False, True])
    x = a([7.0, -7.0, 7.0, -7.0, 1.0, -1.0, 0.0, 5.5, np.inf, -0.0])
    y = a([2.0, 2.0, -2.0, -2.0, 0.0, 0.0, 0.0, np.inf, 2.0, 3.0])
    out = jnp.remainder(x, y)
    same(out, [1.0, 1.0, -1.0, -1.0, np.nan, np.nan, np.nan, 5.5, np.nan, -0.0])
    assert np.signbit(np.asarray(out)[-1])


def test_integer_powers_as_jax():
    same(jnp.power(a([2, -2, 1, -1, 0, 3], "int32"), a([-1, -1, -2, -3, -1, 40], "int32")),
         [0, 0, 1, -1, 0, 689956897], "int32")
    same(jnp.power(a([2, 3], "uint8"), a([2, 9], "uint8")), [4, 227], "uint8")
    same(jnp.power(2, a([2, 3], "int32")), [4, 8], "int32")
    same(jnp.power(a([2.0, 3.0]), -1), [0.5, np.float32(1 / 3)])
    same(jnp.power(a([0.0, -8.0]), a([0.0, 1 / 3])), [1.0, np.nan])
    with pytest.raises(TypeError, match="negative powers"):
        jnp.power(a([2, 3], "int32"), -1)


def test_x_squared_binds_integer_pow():
    class Recorder(core.Interpreter):
        def __init__(self):
            self.names = []

        def process(self, prim, operands, params):
            self.names.append((prim.name, params))
            return core.base_interpreter().process(prim, operands, params)

    x = a([1.0, 2.0, 3.0])
    with core.interpreting(Recorder()) as recorder:
        out = x**2
    assert recorder.names == [("integer_pow", {"y": 2})]
    same(out, [1.0, 4.0, 9.0], "float32")
    with core.interpreting(Recorder()) as recorder:
        x**2.5
    assert [name for name, _ in recorder.names][-1] == "pow"


def test_rounding_as_jax():
    same(jnp.round(a([1.25, 2.5, -1.35, 1234.5678]), 1), np.array([1.2, 2.5, -1.4, 1234.6], np.float32))
    same(jnp.round(a([125, -135, 1234], "int32"), -1), [120, -140, 1230], "int32")  # (NumPy's; JAX refuses)
    same(jnp.round(a([125, -135], "int32"), 1), [125, -135], "int32")
    same(jnp.round(a([1.5 + 2.5j], "complex64")), [2 + 2j])
    same(jnp.rint(a([1.5, 2.5, -0.5])), [2.0, 2.0, -0.0])
    same(jnp.trunc(a([1.5, -2.5, -0.5])), [1.0, -2.0, -0.0])
    assert np.signbit(np.asarray(jnp.trunc(a([-0.5])))[0])
    same(jnp.round(a([1.5, 2.25], "float16"), 1), np.array([1.5, 2.2], np.float16), "float16")
    assert describe(jnp.round(2.5)) == "f32*" and float(jnp.round(2.5)) == 2.0
    with pytest.raises(ValueError, match="booleans"):
        jnp.round(a([True], "bool"))


def test_rounding_past_the_dtype_range():
    # more decimals than the dtype holds round nothing (JAX returns the input: float32 past 38, float16 past 4,
    # so the derivative is 1); 10**decimals must not overflow to inf (then inf * 0 gave NaN)
    x = a([1.5, -2.25, 0.0, 3e38])
    for decimals in (39, 400):
        same(jnp.round(x, decimals), np.asarray(x))
        same(srcjax.jit(lambda x, d=decimals: jnp.round(x, d))(x), np.asarray(x))
    same(srcjax.grad(lambda x: jnp.sum(jnp.round(x, 5)))(a([1.5, 0.25], "float16")), [1.0, 1.0], "float16")
    assert np.isnan(np.asarray(jnp.round(x, -400))).all()  # x * 0 / 0, NaN as JAX's
    # integers to a multiple of 10**-decimals: narrow types must not overflow on the way (NumPy's values)
    i8 = np.arange(-128, 128).astype(np.int8)
    for decimals in (-1, -2, -3):
        same(jnp.round(a(i8, "int8"), decimals), np.round(i8, decimals), "int8")
    same(jnp.round(a([7, -9], "int32"), -400), [0, 0], "int32")


def test_floating_point_inspection_as_jax():
    mantissa, exponent = jnp.frexp(a([0.0, 1.0, -3.0, np.inf, np.nan, 0.75, -0.0, 1e-40]))
    same(mantissa, [0.0, 0.5, -0.75, np.inf, np.nan, 0.75, -0.0, np.float32(1e-40) / np.float32(2.0**-132)])
    same(exponent, [0, 1, 2, 0, 0, 0, 0, -132], "int32")  # (the subnormal is NumPy's answer: XLA flushes it)
    same(jnp.frexp(a([0.0, 1.0, -3.0, 6e-8], "float16"))[1], [0, 1, 2, -23])
    same(jnp.ldexp(a([1.0, 3.0, 1.0]), a([2, -1, 200], "int32")), [4.0, 1.5, np.inf])
    frac, whole = jnp.modf(a([np.inf, -2.5, np.nan, -0.0]))
    same(frac, [np.nan, -0.5, np.nan, 0.0])
    same(whole, [np.inf, -2.0, np.nan, -0.0])
    same(jnp.signbit(a([-0.0, 0.0, -1.0, np.nan, -np.nan])), [True, False, True, False, True])
    same(jnp.copysign(a([1.0, 2.0]), a([-0.0, 1.0])), [-1.0, 2.0])
    tiny = np.float32(1.401298464324817e-45)
    same(jnp.spacing(a([1.0, -1.0, 0.0, -0.0, np.inf, np.nan])),
         [np.float32(2**-23), -np.float32(2**-23), tiny, -tiny, np.nan, np.nan])
    same(jnp.nextafter(a([0.0, 1.0]), a([1.0, 0.0])), [tiny, np.float32(0.99999994)])
    same(jnp.isposinf(a([np.inf, -np.inf, 1.0])), [True, False, False])
    same(jnp.isneginf(a([np.inf, -np.inf, 1.0])), [False, True, False])
    same(jnp.isinf(a([1 + 1j, complex(np.inf, 0)], "complex64")), [False, True])
    same(jnp.isfinite(a([1 + 1j, complex(np.nan, 0)], "complex64")), [True, False])
    same(jnp.iscomplex(a([1 + 0j, 1 + 1j], "complex64")), [False, True])
    same(jnp.isreal(a([1 + 0j, 1 + 1j], "complex64")), [True, False])


def test_nan_to_num_isclose_clip_where_as_jax():
    big = np.finfo(np.float32).max
    same(jnp.nan_to_num(a([np.nan, np.inf, -np.inf, 1.0])), [0.0, big, -big, 1.0])
    same(jnp.nan_to_num(a([np.nan, np.inf, -np.inf, 1.0]), nan=5, posinf=7, neginf=-7), [5.0, 7.0, -7.0, 1.0])

    def replace_with(x, fills):  # the replacements may be arrays, traced ones too (as JAX takes them)
        return jnp.nan_to_num(x, nan=fills[0], posinf=fills[1:2], neginf=fills)

    x, fills = a([np.nan, np.inf, -np.inf, 1.0]), a([5.0, 6.0, 7.0, 8.0])
    same(replace_with(x, fills), [5.0, 6.0, 7.0, 1.0])
    same(srcjax.jit(replace_with)(x, fills), [5.0, 6.0, 7.0, 1.0])
    same(jnp.nan_to_num(a([complex(np.nan, np.inf)], "complex64")), [complex(0, big)])
    same(jnp.isclose(a([1.0, np.nan, np.inf, np.inf, 1.0]), a([1.00001, np.nan, np.inf, -np.inf, 1.1])),
         [False, False, True, False, False])
    same(jnp.isclose(a([1.0, np.nan]), a([1.00001, np.nan]), equal_nan=True), [False, True])
    same(jnp.isclose(a([1.0, 2.0]), a([1.5, 2.0]), rtol=0.0, atol=a(0.6)), [True, True])
    same(jnp.isclose(a([1, 2], "int32"), a([1, 3], "int32")), [True, False])
    same(jnp.clip(a([1, 5, 9], "int32"), 2, 6), [2, 5, 6], "int32")
    assert describe(jnp.clip(a([1, 5, 9], "int32"), 2.5, 6)) == "f32*"
    same(jnp.clip(a([1.0, 5, 9]), max=6), [1.0, 5.0, 6.0])
    same(jnp.clip(a([1, 5, 9], "uint8"), -1, 300), [44, 44, 44], "uint8")  # -1 and 300 wrap into uint8, as in JAX
    same(jnp.clip(a([np.nan, 3.0]), 0.0, 1.0), [np.nan, 1.0])
    with pytest.raises(TypeError, match="a_min"):  # (JAX 0.10 removed the old names: its TypeError)
        jnp.clip(a([1.0, 5, 9]), a_min=2)
    same(jnp.where(a([True, False], "bool"), 1, 2.0), [1.0, 2.0])
    assert describe(jnp.where(a([True, False], "bool"), 1, 2.0)) == "f32*"
    same(jnp.where(a([1, 0], "int32"), a([1, 2], "int8"), 3), [1, 3], "int8")
    same(jnp.where(a([[True], [False]], "bool"), a([1.0, 2.0]), 0.0), [[1.0, 2.0], [0.0, 0.0]])
    rows, cols = jnp.where(a([[0, 1], [1, 0]], "int32"))
    same(rows, [0, 1])
    same(cols, [1, 0])


def test_other_functions_as_jax():
    same(jnp.sinc(a([0.0, 0.5, 1.0])), [1.0, np.float32(2 / np.pi), np.sin(np.float32(np.pi)) / np.float32(np.pi)])
    same(jnp.heaviside(a([-1.0, 0.0, 2.0]), 0.5), [0.0, 0.5, 1.0])
    same(jnp.gcd(a([12, -18, 0, 7], "int32"), a([18, 12, 0, 0], "int32")), [6, 6, 0, 7])
    same(jnp.lcm(a([12, -18, 0, 7], "int32"), a([18, 12, 0, 0], "int32")), [36, 36, 0, 0])
    fib = a([832040, 2**31 - 1], "int32")  # consecutive Fibonacci numbers: Euclid's longest case
    same(jnp.gcd(fib, a([514229, 2**30], "int32")), [1, 1])
    same_within_ulp(jnp.logaddexp(a([1.0, -np.inf, np.inf, np.nan]), a([2.0, -np.inf, np.inf, 1.0])),
                    [np.float32(np.logaddexp(1.0, 2.0)), -np.inf, np.inf, np.nan])
    same_within_ulp(jnp.logaddexp(a([1e30]), a([1e30])), [np.float32(1e30) + np.float32(np.log(2))])
    np.testing.assert_allclose(jnp.logaddexp(a([1 + 1j], "complex64"), a([2 - 1j], "complex64")),
                               [1.906323790550232 - 0.623828649520874j], rtol=1e-6)
    same(jnp.fmax(a([1.0, np.nan, np.nan]), a([np.nan, 2.0, np.nan])), [1.0, 2.0, np.nan])
    same(jnp.maximum(a([1.0, np.nan]), a([np.nan, 2.0])), [np.nan, np.nan])
    same(jnp.less(a([1 + 2j, 1 + 2j], "complex64"), a([1 + 3j, 0 + 5j], "complex64")), [True, False])
    same(jnp.right_shift(a([-8], "int32"), 1), [-4])
    same(jnp.right_shift(a([0x80000000], "uint32"), 4), [0x08000000])
    same(jnp.left_shift(a([1], "int32"), 40), [0])
    np.testing.assert_allclose(jnp.angle(a([1 + 1j, -1], "complex64"), deg=True), [45.0, 180.0])
    same(jnp.hypot(a([3e30, 0.0, np.inf]), a([4e30, 0.0, np.nan])), [np.float32(5e30), 0.0, np.inf])
    same(jnp.bitwise_count(a([-1, 7], "int8")), [1, 3], "uint8")
    same(jnp.astype(a([1.5, np.nan]), jnp.int32), [1, 0], "int32")
    same(jnp.astype(a([1 + 2j], "complex64"), jnp.float32), [1.0], "float32")
    same(jnp.astype(a([1.5]), "float64"), [1.5], "float32")  # canonicalised with x64 off
    same(jnp.true_divide(a([1], "int32"), a([0], "int32")), [np.inf], "float32")
    same(jnp.add(a([True, False], "bool"), a([True, True], "bool")), [True, True], "bool")
    same(jnp.multiply(a([True, False], "bool"), a([True, True], "bool")), [True, False], "bool")


# -- Array operators and methods that call these functions --------------------------------------------------------
def test_array_operators_and_methods():
    x, y = a([1.0, -2.0, 3.5]), a([2.0, 4.0, -1.0])
    for result, expected in [
        (x + y, [3.0, 2.0, 2.5]), (x - 1, [0.0, -3.0, 2.5]), (2 * x, [2.0, -4.0, 7.0]), (x / y, [0.5, -0.5, -3.5]),
        (x // y, [0.0, -1.0, -4.0]), (x % y, [1.0, 2.0, -0.5]), (x**2, [1.0, 4.0, 12.25]), (2**y, [4.0, 16.0, 0.5]),
        (-x, [-1.0, 2.0, -3.5]), (+x, [1.0, -2.0, 3.5]), (abs(x), [1.0, 2.0, 3.5]), (x < y, [True, True, False]),
        (x == y, [False, False, False]), (x != 3.5, [True, True, False]), (x >= -2, [True, True, True]),
        (x.clip(0, 2), [1.0, 0.0, 2.0]), (x.round(), [1.0, -2.0, 4.0]), (x.conj(), [1.0, -2.0, 3.5]),
        (x.astype(jnp.int32), [1, -2, 3]), (x.real, [1.0, -2.0, 3.5]), (x.imag, [0.0, 0.0, 0.0]),
    ]:
        same(result, expected)
    q, r = divmod(x, y)
    same(q, [0.0, -1.0, -4.0])
    same(r, [1.0, 2.0, -0.5])
    i = a([6, 3], "int32")
    same(i & 2, [2, 2])
    same(i | 1, [7, 3])
    same(i ^ 5, [3, 6])
    same(~i, [-7, -4])
    same(i << 2, [24, 12])
    same(i >> 1, [3, 1])
    same(1 << i, [64, 8])
    z = a([1 + 2j], "complex64")
    same(z.conjugate(), [1 - 2j])
    same(z.real, [1.0])
    same(z.imag, [2.0])
    assert round(a(2.5)) == 2 and describe(x.astype(jnp.float16)) == "f16"


# -- errors --------------------------------------------------------------------------------------------------------
ERRORS = [
    (lambda: jnp.negative(a([True], "bool")), TypeError, "negative does not accept bool"),
    (lambda: jnp.subtract(a([True], "bool"), a([True], "bool")), TypeError, "logical_xor"),
    (lambda: jnp.sign(a([True], "bool")), TypeError, "booleans have no sign"),
    (lambda: jnp.add([1, 2], 3), TypeError, "add requires ndarray or scalar arguments, got list"),
    (lambda: jnp.sqrt("a"), TypeError, "sqrt requires ndarray or scalar arguments, got str"),
    (lambda: jnp.add(a([1.0, 2.0, 3.0]), a([1.0, 2.0])), ValueError, r"incompatible shapes.*\(3,\), \(2,\)"),
    (lambda: jnp.bitwise_and(a([1.0]), a([1.0])), TypeError, "float32"),
    (lambda: jnp.floor(a([1j], "complex64")), TypeError, "complex"),
    (lambda: jnp.floor_divide(a([1j], "complex64"), 1), TypeError, "complex numbers have no ordering"),
    (lambda: jnp.clip(a([1j], "complex64"), 0, 1), ValueError, "complex numbers have no ordering"),
    (lambda: jnp.where(a([True], "bool"), 1), TypeError, "pass both x and y, or neither"),
    (lambda: jnp.ldexp(a([1.0]), a([1.0])), TypeError, "exponent must be an integer"),
    (lambda: jnp.isneginf(a([1j], "complex64")), ValueError, "not defined for complex"),
    (lambda: jnp.gcd(a([1.5]), a([1.0])), TypeError, "gcd is defined for integers"),
    (lambda: jnp.hypot(a([1j], "complex64"), 1), TypeError, "complex"),
    (lambda: jnp.round(a([1.0]), out=a([1.0])), NotImplementedError, "out"),
    (lambda: jnp.add(a([1], "int32"), 2**40), OverflowError, "too large"),
]


@pytest.mark.parametrize("call, error, message", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_bad_input_raises_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_every_jax_numpy_elementwise_name_exists():
    mine = set(jnp.ufuncs.__all__)
    for name in mine:
        assert callable(getattr(jnp, name)), name
    used_by_arrays = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "divmod", "power",
                      "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "equal", "not_equal",
                      "less", "less_equal", "greater", "greater_equal", "negative", "positive", "abs", "invert", "real",
                      "imag", "conj", "conjugate", "clip", "round", "astype"]
    assert set(used_by_arrays) <= mine


# -- lax ------------------------------------------------------------------------------------------------------------
LAX_NAMES = (
    "AccuracyMode RoundingMethod Tolerance abs acos acosh add asin asinh atan atan2 atanh bitcast_convert_type "
    "bitwise_and bitwise_not bitwise_or bitwise_xor cbrt ceil clamp clz complex conj convert_element_type cos cosh "
    "digamma div dtype eq erf erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow is_finite le lgamma log "
    "log1p logistic lt max min mul mulhi polygamma ne neg nextafter population_count pow real reciprocal "
    "reduce_precision rem round rsqrt select select_n shift_left igamma igammac igamma_grad_a random_gamma_grad "
    "betainc bessel_i0e bessel_i1e zeta shift_right_arithmetic shift_right_logical sign sin sinh sqrt square sub "
    "tan tanh"
).split()


def test_lax_has_the_elementwise_names():
    from srcjax.runtime.lax import elementwise

    assert sorted(elementwise.__all__) == sorted(LAX_NAMES)
    assert all(hasattr(lax, name) for name in LAX_NAMES)


def test_lax_is_strict_about_dtypes():
    x = a([0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="lax.add requires arguments to have the same dtypes, got float32, int32"):
        lax.add(x, a([1, 2, 3], "int32"))
    with pytest.raises(TypeError, match="same dtypes, got float32, complex64"):
        lax.add(x, 1j)
    with pytest.raises(TypeError, match="same dtypes, got float16, float32"):
        lax.add(a([1.0], "float16"), a([1.0]))
    with pytest.raises(TypeError, match="not an array or a scalar"):
        lax.add(x, [1.0, 2.0, 3.0])
    with pytest.raises(OverflowError, match="1000 does not fit in int8"):
        lax.add(a([1], "int8"), 1000)
    with pytest.raises(TypeError, match="integers cannot be raised to negative powers"):
        lax.reciprocal(a([2], "int32"))
    with pytest.raises(TypeError, match="exp: does not accept int32"):
        lax.exp(1)


def test_lax_python_scalars_take_the_arrays_dtype_and_stay_weak():
    same(lax.add(a([1.0, 2.0], "float16"), 2.0), [3.0, 4.0], "float16")
    same(lax.mul(a([3], "uint8"), 100), [44], "uint8")
    assert describe(lax.add(1, 2)) == "i32*" and describe(lax.add(1.0, 2.0)) == "f32*"
    assert describe(lax.eq(1.0, 1.0)) == "bool*" and describe(lax.neg(1.0)) == "f32*"
    same(lax.shift_right_logical(a([0x80000000], "uint32"), 31), [1], "uint32")
    same(lax.pow(a([2.0, 3.0]), 2), [4.0, 9.0], "float32")
    same(lax.pow(a([-2.0, 2.0]), a([3, -1], "int32")), [-8.0, 0.5])
    same(lax.mul(a([100], "int8"), a([100], "int8"), out_dtype=jnp.int32), [10000], "int32")


def test_lax_broadcasting_rules():
    x = a([[1.0, 2.0, 3.0]])
    same(lax.add(x, a(1.0)), [[2.0, 3.0, 4.0]])  # 0-d operands broadcast
    same(lax.add(x, a([[1.0], [2.0]])), [[2.0, 3.0, 4.0], [3.0, 4.0, 5.0]])  # equal ranks, sizes 1 stretch
    with pytest.raises(TypeError, match="same number of dimensions"):
        lax.add(x, a([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.add(a([1.0, 2.0]), a([1.0, 2.0, 3.0]))


def test_lax_selection_rounding_and_conversion():
    pred, x = a([True, False, True], "bool"), a([1.0, 2.0, 3.0])
    same(lax.select(pred, x, -x), [1.0, -2.0, 3.0])
    same(lax.select(True, x, -x), [1.0, 2.0, 3.0])
    same(lax.select_n(a([0, 5, -1], "int32"), x, -x), [1.0, -2.0, 3.0])
    same(lax.clamp(0.5, x, 2.5), [1.0, 2.0, 2.5])
    with pytest.raises(TypeError, match="lax.clamp requires arguments to have the same dtypes"):
        lax.clamp(a(0, "int32"), x, 1.0)
    halves = a([0.5, 1.5, 2.5, -0.5])
    same(lax.round(halves), [1.0, 2.0, 3.0, -1.0])
    same(lax.round(halves, lax.RoundingMethod.TO_NEAREST_EVEN), [0.0, 2.0, 2.0, -0.0])
    with pytest.raises(ValueError, match="RoundingMethod"):
        lax.round(halves, 7)
    same(lax.convert_element_type(a([np.nan, 3e9, -2.7]), jnp.int32), [0, 2147483647, -2], "int32")
    same(lax.convert_element_type(1.7, jnp.int32), 1, "int32")
    assert describe(lax.convert_element_type(a([1.0]), float)) == "f32"  # float64 is canonicalised away
    same(lax.bitcast_convert_type(a([1.0]), jnp.uint32), [0x3F800000], "uint32")
    assert lax.bitcast_convert_type(a([1.0, 2.0]), jnp.uint8).shape == (2, 4)
    same(lax.complex(a([1.0]), 2.0), [1 + 2j], "complex64")
    same(lax.integer_pow(a([2, -3], "int8"), 7), [-128, 117], "int8")
    same(lax.square(a([3], "int32")), [9], "int32")
    np.testing.assert_allclose(lax.erf_inv(a([0.5])), [0.47693628], rtol=1e-7)
    assert math.isinf(float(lax.lgamma(0.0)))


# -- built-in ufunc objects: jnp.add.reduce and the rest, as JAX's jnp.ufunc ------------------------------------------
# (name, identity, nin), recorded from JAX 0.10.2: exactly these names are jnp.ufunc instances there
BUILTIN_UFUNCS = [("add", 0, 2), ("bitwise_and", -1, 2), ("bitwise_or", 0, 2), ("bitwise_xor", 0, 2),
                  ("logaddexp", -np.inf, 2), ("logaddexp2", -np.inf, 2), ("logical_and", True, 2),
                  ("logical_or", False, 2), ("logical_xor", False, 2), ("maximum", None, 2), ("minimum", None, 2),
                  ("multiply", 1, 2), ("negative", None, 1), ("subtract", None, 2)]
M = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
IM = np.array([[1, -2, 3], [5, 4, -1], [6, 7, 3]])


def test_builtin_ufuncs_are_ufunc_objects():
    names = [n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc)]
    assert names == [name for name, _, _ in BUILTIN_UFUNCS]
    for name, identity, nin in BUILTIN_UFUNCS:
        u = getattr(jnp, name)
        assert (u.__name__, u.nin, u.nout, u.nargs, repr(u)) == (name, nin, 1, nin, f"<jnp.ufunc '{name}'>")
        assert u.identity == identity and type(u.identity) is type(identity)
        for method in ("outer", "reduce", "accumulate", "at", "reduceat"):
            assert callable(getattr(u, method))
    assert not isinstance(jnp.divmod, jnp.ufunc) and not isinstance(jnp.true_divide, jnp.ufunc)
    x = jnp.asarray(M.astype(np.float32))
    assert jnp.add(x, x, out=None, where=None).dtype == np.float32
    with pytest.raises(NotImplementedError, match="out argument of <jnp.ufunc 'add'>"):
        jnp.add(x, x, out=x)
    with pytest.raises(NotImplementedError, match="where argument"):
        jnp.multiply(x, x, where=True)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "subtract", "logaddexp", "logaddexp2"])
def test_reduce_and_accumulate_match_numpy(name):
    u, oracle = getattr(jnp, name), getattr(np, name)
    x = jnp.asarray(M.astype(np.float32))
    cases = [dict(), dict(axis=1), dict(axis=-1), dict(keepdims=True), dict(axis=-2, keepdims=True)]
    if name != "subtract":  # (a tuple of axes, or all of them, needs a reorderable function: JAX's refusal below)
        cases += [dict(axis=None), dict(axis=(0, 1)), dict(axis=(1,)), dict(axis=None, keepdims=True)]
    for kw in cases:
        got = u.reduce(x, **kw)
        want = oracle.reduce(M, **{"axis": 0, **kw}) if kw.get("axis", 0) is not None else oracle.reduce(M.ravel())
        want = np.reshape(want, (1, 1)) if kw.get("axis", 0) is None and kw.get("keepdims") else want
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name}.reduce {kw}")
        assert got.dtype == np.float32 and not got.weak_type
    for axis in (0, 1, -1):
        np.testing.assert_allclose(u.accumulate(x, axis=axis), oracle.accumulate(M, axis=axis), rtol=1e-6)
    np.testing.assert_allclose(u.outer(x, x[0]), oracle.outer(M, M[0]), rtol=1e-6)
    if name != "subtract":
        with pytest.raises((TypeError, ValueError)):
            u.reduce(x, axis=[0, 1])  # (JAX: a list is no hashable static argument)


def test_reduce_options_as_jax():
    x = jnp.asarray(M.astype(np.float32))
    mask = np.array([True, False, True])
    np.testing.assert_allclose(jnp.add.reduce(x, initial=2), M.sum(0) + 2)
    np.testing.assert_allclose(jnp.add.reduce(x, where=mask), np.add.reduce(M, where=mask))
    np.testing.assert_allclose(jnp.maximum.reduce(x, where=mask, initial=0.0), [1.5, 0.0, 3.0])
    np.testing.assert_allclose(jnp.logaddexp.reduce(x, where=mask), np.logaddexp.reduce(M, where=mask, initial=-np.inf))
    i = jnp.asarray(IM.astype(np.int32))
    assert jnp.bitwise_and.reduce(i).tolist() == np.bitwise_and.reduce(IM).tolist()
    assert jnp.bitwise_xor.reduce(i, axis=1, initial=8).tolist() == (np.bitwise_xor.reduce(IM, axis=1) ^ 8).tolist()
    assert jnp.add.reduce(jnp.asarray(IM.astype(np.uint8))).dtype == np.uint32  # (JAX's sum widens it)
    assert jnp.add.reduce(x, dtype=jnp.int8).tolist() == [1, 2, 2]  # (converted first, then summed: JAX's)
    # values recorded from JAX 0.10.2: logical reductions in an integer dtype reduce 0s and 1s from 1 (and) or 0
    empty = jnp.zeros((0, 3))
    assert jnp.logical_and.reduce(empty, dtype=jnp.int8).tolist() == [1, 1, 1]
    assert jnp.logical_or.reduce(empty, dtype=jnp.int8).tolist() == [0, 0, 0]
    assert jnp.logical_and.reduce(jnp.asarray([[4j, 0j, 1]]), dtype=jnp.int8).tolist() == [0, 0, 1]  # (real parts)
    assert jnp.logical_xor.reduce(i, axis=1).tolist() == [True, True, True]
    assert jnp.bitwise_or.reduce(3, axis=None).weak_type is False


@pytest.mark.parametrize("call, error, message", [
    (lambda x: jnp.subtract.reduce(x, axis=(0, 1)), NotImplementedError, "tuple of axes"),
    (lambda x: jnp.negative.reduce(x), ValueError, "only supported for binary ufuncs"),
    (lambda x: jnp.negative.outer(x, x), ValueError, "only supported for binary ufuncs"),
    (lambda x: jnp.add.reduce(x, out=x), ValueError, "Non-hashable static arguments"),
    (lambda x: jnp.add.accumulate(x, out=3), NotImplementedError, "out argument of add.accumulate"),
    (lambda x: jnp.maximum.reduce(x, where=np.array([True, False, True])), ValueError, "does not have an identity"),
    (lambda x: jnp.add.reduce(x, where=np.array([1, 0, 1]), initial=1), ValueError, "where argument must have"),
    (lambda x: jnp.bitwise_and.reduce(x), ValueError, "integer argument required"),
    (lambda x: jnp.maximum.reduce(x, dtype=jnp.float32), TypeError, "takes no dtype"),
    (lambda x: jnp.logical_and.reduce(x, dtype=jnp.float32), TypeError, "does not accept dtype float32"),
    (lambda x: jnp.subtract.accumulate(x, axis=None), ValueError, "accumulate does not allow multiple axes"),
    (lambda x: jnp.add.at(x, 0, 1.0), NotImplementedError, "cannot operate inplace"),
    (lambda x: jnp.add.at(x, [0, 1], 1.0, inplace=False), TypeError, "non-tuple sequence"),
    (lambda x: jnp.add.at(x, slice(None), 1.0, inplace=False), TypeError, "an index must be an array"),
    (lambda x: jnp.add.at(x, 0, inplace=False), TypeError, "missing 1 required positional argument"),
    (lambda x: jnp.add.at(jnp.zeros((0, 3)), 0, 1.0, inplace=False), IndexError, "axis 0 with size 0"),
    (lambda x: jnp.add.reduceat(x, jnp.array([0, 1]), axis=None), ValueError, "single integer axis"),
    (lambda x: jnp.add.reduceat(x, 0), ValueError, "indices must be one-dimensional"),
])
def test_ufunc_methods_refuse_as_jax(call, error, message):
    with pytest.raises(error, match=message):
        call(jnp.asarray(M.astype(np.float32)))


def test_at_outer_reduceat_accumulate_match_numpy():
    x = jnp.asarray(M.astype(np.float32))
    index, values = np.array([0, 0, 1]), np.array([1.0, 2.0, 3.0])
    for name in ("add", "subtract", "multiply", "maximum", "minimum", "logaddexp"):
        want = M.copy()
        getattr(np, name).at(want, index, values[:, None])
        got = getattr(jnp, name).at(x, jnp.asarray(index), jnp.asarray(values[:, None]), inplace=False)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    want = M.copy()
    np.add.at(want, (index, np.array([2, 2, 0])), values)
    np.testing.assert_allclose(jnp.add.at(x, (jnp.asarray(index), jnp.array([2, 2, 0])), values, inplace=False), want)
    np.testing.assert_allclose(jnp.negative.at(x, 1, inplace=False), [M[0], -M[1]])
    # values recorded from JAX 0.10.2: add.at of bools counts, the generic at keeps a weak scalar's operand's dtype
    assert jnp.add.at(jnp.array([True, False]), jnp.array([1, 1]), True, inplace=False).tolist() == [True, True]
    assert jnp.bitwise_and.at(jnp.array([True, False]), 0, 1, inplace=False).dtype == np.int32
    assert jnp.bitwise_or.at(jnp.asarray(np.array([1, 2], np.uint8)), 0, 2, inplace=False).dtype == np.uint8
    assert jnp.logical_and.at(jnp.asarray([4j, 1]), 0, 1, inplace=False).tolist() == [True, True]
    # outer of non-1-d operands: A.shape + B.shape; Python scalars are 0-d
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((4, 1))
    out = jnp.multiply.outer(jnp.asarray(a), jnp.asarray(b))
    assert out.shape == (2, 3, 4, 1)
    np.testing.assert_allclose(out, np.multiply.outer(a, b), rtol=1e-6)
    assert jnp.add.outer(3, 2.5).shape == () and jnp.add.outer(jnp.arange(2), 1).dtype == np.int32
    for indices, axis in (([0, 2, 1], 1), ([1, 0], 0), ([0, 0, 2], -1)):
        for name in ("add", "maximum", "subtract"):
            got = getattr(jnp, name).reduceat(x, jnp.asarray(indices), axis=axis)
            np.testing.assert_allclose(got, getattr(np, name).reduceat(M, indices, axis=axis), rtol=1e-6)
    # accumulate: JAX's loop promotes func's result to dtype (logical_and's bools become float32 here)
    np.testing.assert_allclose(jnp.logical_and.accumulate(x, dtype=jnp.float32), [[1.5, -2, 3], [1, 1, 1]])
    assert jnp.add.accumulate(3).tolist() == [3]  # (a Python scalar is a vector of one, as in jnp.cumsum)


def test_ufunc_methods_compile_batch_and_differentiate():
    x = jnp.asarray(M.astype(np.float32))

    def f(x, y):
        return (jnp.add.outer(x, y), jnp.multiply.reduce(x, axis=None), jnp.add.accumulate(x, axis=1),
                jnp.subtract.reduce(x, axis=1), jnp.maximum.reduce(x), jnp.add.at(x, (0, 1), 5.0, inplace=False),
                jnp.minimum.accumulate(y), jnp.logaddexp.reduce(x, axis=-1), jnp.add.reduceat(y, jnp.array([0, 2])),
                jnp.maximum.at(x, jnp.array([1, 1]), 10.0, inplace=False), jnp.logical_or.reduce(x > 1, axis=None))

    y = jnp.asarray([0.5, -1.0, 2.0])
    for got, want in zip(srcjax.jit(f)(x, y), f(x, y)):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    rows = srcjax.vmap(lambda r: (jnp.multiply.reduce(r), jnp.subtract.accumulate(r), jnp.add.outer(r, r)))(x)
    for i in range(2):
        np.testing.assert_allclose(rows[0][i], np.prod(M[i]), rtol=1e-6)
        np.testing.assert_allclose(rows[1][i], np.subtract.accumulate(M[i]), rtol=1e-6)
        np.testing.assert_allclose(rows[2][i], np.add.outer(M[i], M[i]), rtol=1e-6)
    r = x[0]
    np.testing.assert_allclose(srcjax.grad(jnp.multiply.reduce)(r), srcjax.grad(jnp.prod)(r))
    np.testing.assert_allclose(srcjax.grad(lambda r: jnp.add.accumulate(r).sum())(r), [3, 2, 1])
    np.testing.assert_allclose(srcjax.grad(jnp.logaddexp.reduce)(r), np.exp(M[0]) / np.exp(M[0]).sum(), rtol=1e-6)
    np.testing.assert_allclose(srcjax.grad(lambda r: jnp.maximum.accumulate(r).sum())(r), [2, 0, 1])
    np.testing.assert_allclose(srcjax.jit(srcjax.grad(lambda r: jnp.multiply.outer(r, r).sum()))(r), [5, 5, 5])


def test_complex_logaddexp_and_astype_to_bool_as_jax():
    c = jnp.asarray([4j, 1 + 3j, 0j])
    # (recorded from JAX 0.10.2: the imaginary part in [-pi, pi); a complex is true where it is not 0)
    np.testing.assert_allclose(jnp.logaddexp(c, c), [0.6931472 - 2.2831852j, 1.6931472 + 3j, 0.6931472],
                               rtol=1e-6)
    assert c.astype(bool).tolist() == [True, True, False]
