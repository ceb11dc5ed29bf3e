"""``jnp``'s elementwise functions: arithmetic, powers, exponentials, trigonometry, rounding, comparisons,
logic, bit operations, floating-point inspection, ``where``, ``clip`` and ``astype``.

Operands are broadcast NumPy-style and promoted with JAX's lattice (``promote_args``); functions that
only make sense for floats first promote integers to the default float (``promote_args_inexact``). The
result dtypes and weak types are JAX's, checked against a recorded table in ``tests/runtime``, including
its quirks: some functions build their result from strongly typed constants (``log2``, ``hypot``,
``heaviside``, ``nan_to_num``, ...) and so return a strong type even for Python-scalar input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.array import Array
from srcjax.runtime.eager import fast_path
from srcjax.runtime.numpy import reductions
from srcjax.runtime.numpy._core import (
    asarray,
    aval,
    broadcast_to,
    check_arraylike,
    convert,
    promote_args,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_args_inexact,
    promote_shapes,
)
from srcjax.runtime.numpy.ufunc_objects import builtin_ufunc
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives.custom import stop_gradient_p

__all__ = [
    "abs", "absolute", "acos", "acosh", "add", "angle", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctan2", "arctanh", "around", "asin", "asinh", "astype", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_count", "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "cbrt", "ceil", "clip", "conj", "conjugate", "copysign", "cos", "cosh", "deg2rad", "degrees",
    "divide", "divmod", "equal", "exp", "exp2", "expm1", "fabs", "fix", "float_power", "floor", "floor_divide",
    "fmax", "fmin", "fmod", "frexp", "gcd", "greater", "greater_equal", "heaviside", "hypot", "imag", "invert",
    "isclose", "iscomplex", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "lcm", "ldexp",
    "left_shift", "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "mod", "modf", "multiply", "nan_to_num",
    "negative", "nextafter", "not_equal", "positive", "pow", "power", "rad2deg", "radians", "real", "reciprocal",
    "remainder", "right_shift", "rint", "round", "sign", "signbit", "sin", "sinc", "sinh", "spacing", "sqrt",
    "square", "subtract", "tan", "tanh", "true_divide", "trunc", "where",
]

_PY_SCALARS = (bool, int, float, complex)


# -- helpers: operands of one shape and dtype, constants, selects -----------------------------------------
def _array(name: str, x: Any) -> Any:
    """One operand as an array (Python scalars weakly typed), for functions that do not promote."""
    check_arraylike(name, x)
    return asarray(x) if isinstance(x, (*_PY_SCALARS, np.ndarray, np.generic)) else x


def _kind(x: Any) -> str:
    return aval(x).dtype.kind


def _const(like: Any, value: Any, *, weak: bool | None = None, dtype: Any = None) -> Any:
    """``value`` filling ``like``'s shape, in ``like``'s dtype; weakly typed as ``like`` is unless told."""
    typ = aval(like)
    dtype = typ.dtype if dtype is None else np.dtype(dtype)
    weak = typ.weak_type if weak is None else weak
    scalar = np.asarray(value, dtype)
    scalar = convert(scalar, dtype, weak_type=True) if weak else asarray(scalar)
    return broadcast_to(scalar, typ.shape)


def _where(condition: Any, on_true: Any, on_false: Any) -> Any:
    return ew.select_n_p.bind(condition, on_false, on_true)


def _to_bool(x: Any) -> Any:
    return x if _kind(x) == "b" else ew.ne_p.bind(x, _lax_const(x, 0))


def _lax_const(like: Any, value: Any) -> Any:
    """``_const`` as JAX's ``lax._const`` types it: weakly typed only where ``like`` is a weakly typed scalar (a
    Python scalar then, a typed array otherwise), so ``x * _lax_const(x, 2)`` keeps the weak type of a 0-d x only."""
    typ = aval(like)
    return _const(like, value, weak=typ.weak_type and not typ.shape)


def _weak_if_scalar(out: Any, scalar: bool | None = None) -> Any:
    """``out`` (weakly typed where the promoted operands were), keeping the weak type only for a 0-d result (or
    where ``scalar`` says): JAX's version meets a ``lax._const`` on the way (see ``_lax_const``)."""
    typ = aval(out)
    return convert(out, typ.dtype, weak_type=typ.weak_type and (not typ.shape if scalar is None else scalar))


def _bool_to_int(*xs: Any) -> list[Any]:
    """Integer functions of bools compute in int32 (strongly typed, also with x64 on), as JAX's do."""
    return [convert(x, np.int32) if _kind(x) == "b" else x for x in xs]


def _reject(name: str, x: Any, kinds: str, what: str) -> None:
    if _kind(x) in kinds:
        raise TypeError(f"jnp.{name} does not accept {aval(x).dtype.name} arguments ({what})")


def _strong(x: Any) -> Any:
    return convert(x, aval(x).dtype, weak_type=False)


def _unary_inexact(name: str, prim):
    def fn(x: Any, /) -> Any:
        (x,) = promote_args_inexact(name, x)
        return prim.bind(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}; integers and bools are promoted to the default float."
    return fast_path(fn)


def _binary(name: str, prim, *, inexact: bool = False):
    def fn(x1: Any, x2: Any, /) -> Any:
        x1, x2 = (promote_args_inexact if inexact else promote_args)(name, x1, x2)
        return prim.bind(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, with NumPy broadcasting and JAX's type promotion."
    return fast_path(fn)


# -- arithmetic ------------------------------------------------------------------------------------------
@fast_path
def add(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_args("add", x1, x2)
    return (ew.or_p if _kind(x1) == "b" else ew.add_p).bind(x1, x2)  # True + True is True


@fast_path
def subtract(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_args("subtract", x1, x2)
    _reject("subtract", x1, "b", "use jnp.logical_xor or jnp.not_equal for booleans")
    return ew.sub_p.bind(x1, x2)


@fast_path
def multiply(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_args("multiply", x1, x2)
    return (ew.and_p if _kind(x1) == "b" else ew.mul_p).bind(x1, x2)


true_divide = _binary("true_divide", ew.div_p, inexact=True)
divide = true_divide


def _int_operands(name: str, x1: Any, x2: Any) -> list[Any]:
    x1, x2 = _bool_to_int(*promote_args(name, x1, x2))
    _reject(name, x1, "c", "complex numbers have no ordering")
    return [x1, x2]


def floor_divide(x1: Any, x2: Any, /) -> Any:
    """x1 // x2, rounding toward minus infinity (Python's rule)."""
    x1, x2 = _int_operands("floor_divide", x1, x2)
    if _kind(x1) == "u":
        return ew.div_p.bind(x1, x2)
    if _kind(x1) == "i":  # truncated quotient, one less where the signs differ and it was inexact
        q = ew.div_p.bind(x1, x2)
        inexact = ew.and_p.bind(ew.ne_p.bind(ew.sign_p.bind(x1), ew.sign_p.bind(x2)),
                                ew.ne_p.bind(ew.rem_p.bind(x1, x2), _const(x1, 0)))
        return _where(inexact, ew.sub_p.bind(q, _const(q, 1)), q)
    # floats, as JAX: q = (x1 - fmod(x1, x2)) / x2 is an integer up to rounding; round it; x1 / 0 is +-inf.
    # A zero quotient is (+0) / x2, so it has x2's sign (NumPy gives the exact quotient's: -0.0 // 1 is -0.0)
    mod = ew.rem_p.bind(x1, x2)
    q = ew.div_p.bind(ew.sub_p.bind(x1, mod), x2)
    zero = _const(x1, 0)
    adjust = ew.and_p.bind(ew.ne_p.bind(mod, zero), ew.ne_p.bind(ew.lt_p.bind(x2, zero), ew.lt_p.bind(mod, zero)))
    q = _where(adjust, ew.sub_p.bind(q, _const(q, 1)), q)
    floor = ew.floor_p.bind(q)
    floor = _where(ew.gt_p.bind(ew.sub_p.bind(q, floor), _const(q, 0.5)), ew.add_p.bind(floor, _const(q, 1)), floor)
    return _where(ew.eq_p.bind(x2, zero), ew.div_p.bind(x1, x2), floor)


def remainder(x1: Any, x2: Any, /) -> Any:
    """x1 % x2 with the sign of x2 (Python's rule); integer x % 0 is 0."""
    x1, x2 = _int_operands("remainder", x1, x2)
    if _kind(x1) in "iu":
        x2 = _where(ew.eq_p.bind(x2, _const(x2, 0)), _const(x2, 1), x2)
    mod = ew.rem_p.bind(x1, x2)
    zero = _const(mod, 0)
    shift = ew.and_p.bind(ew.ne_p.bind(ew.lt_p.bind(mod, zero), ew.lt_p.bind(x2, _const(x2, 0))),
                          ew.ne_p.bind(mod, zero))
    return _where(shift, ew.add_p.bind(mod, x2), mod)


mod = remainder


def fmod(x1: Any, x2: Any, /) -> Any:
    """The remainder with the sign of x1 (C's rule); integer x % 0 is 0."""
    x1, x2 = _int_operands("fmod", x1, x2)
    if _kind(x1) in "iu":
        x2 = _where(ew.eq_p.bind(x2, _const(x2, 0)), _const(x2, 1), x2)
    return ew.rem_p.bind(x1, x2)


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:  # noqa: A001 - NumPy's name
    return floor_divide(x1, x2), remainder(x1, x2)


def power(x1: Any, x2: Any, /) -> Any:
    """x1 ** x2. A concrete integer scalar exponent (a Python or NumPy integer, or a 0-d integer array outside
    a function being compiled) binds ``integer_pow`` in ``x1``'s dtype, as JAX does: ``int8_array **
    jnp.int32(7)`` is int8, and a negative one is refused for an integer base; a float base to an integer
    array binds ``pow`` with the integer exponent; integer arrays to integer powers use binary
    exponentiation over the exponent's low 6 bits, as JAX does (anything above overflows anyway)."""
    if isinstance(x2, (Array, np.ndarray)) and np.ndim(x2) == 0 and x2.dtype.kind in "iu":
        x2 = int(x2)  # (read here, not in the fast path below, which keys on an array's type, not its value)
    return _power(x1, x2)


@fast_path
def _power(x1: Any, x2: Any, /) -> Any:
    if isinstance(x2, (int, np.integer)):  # (a Python bool too: JAX takes operator.index of the exponent)
        (x1,) = _bool_to_int(_array("power", x1))
        return ew.integer_pow_p.bind(x1, y=int(x2))
    base, exponent = _array("power", x1), _array("power", x2)
    if _kind(base) in "fc" and _kind(exponent) in "iu":
        # a float base to an integer array keeps the integer exponent unpromoted (as JAX does): pow's
        # derivative in the base is then 0 where the exponent is 0, also at base 0, instead of 0 * 0^-1;
        # the two still promote first, as in JAX, so that jax_numpy_dtype_promotion="strict" refuses them
        dtypes.result_type(base, exponent)
        return ew.pow_p.bind(*promote_shapes(base, exponent, name="power"))
    x1, x2 = _bool_to_int(*promote_args("power", x1, x2))
    if _kind(x1) not in "iu":
        return ew.pow_p.bind(x1, x2)
    one = _const(x2, 1)
    # pow(0, n) is 0 for n != 0, and 1 for n == 0; the accumulator is strongly typed, so the result is too
    # (JAX's is, even of two weakly typed operands)
    acc = _where(ew.and_p.bind(ew.eq_p.bind(x1, _const(x1, 0)), ew.ne_p.bind(x2, _const(x2, 0))),
                 _const(x1, 0, weak=False), _const(x1, 1, weak=False))
    for _ in range(6):
        acc = _where(ew.ne_p.bind(ew.and_p.bind(x2, one), _const(x2, 0)), ew.mul_p.bind(acc, x1), acc)
        x1 = ew.mul_p.bind(x1, x1)
        x2 = ew.shift_right_logical_p.bind(x2, one)
    return acc


pow = power  # noqa: A001 - NumPy 2's name
float_power = _binary("float_power", ew.pow_p, inexact=True)


@fast_path
def negative(x: Any, /) -> Any:
    x = _array("negative", x)
    _reject("negative", x, "b", "use jnp.logical_not for booleans")
    return ew.neg_p.bind(x)


def positive(x: Any, /) -> Any:
    return _array("positive", x)


@fast_path
def abs(x: Any, /) -> Any:  # noqa: A001 - NumPy's name
    x = _array("abs", x)
    return x if _kind(x) in "bu" else ew.abs_p.bind(x)


absolute = abs


def fabs(x: Any, /) -> Any:
    (x,) = promote_args_inexact("fabs", x)
    _reject("fabs", x, "c", "use jnp.abs for complex numbers")
    return ew.abs_p.bind(x)


def sign(x: Any, /) -> Any:
    x = _array("sign", x)
    _reject("sign", x, "b", "booleans have no sign")
    return ew.sign_p.bind(x)


@fast_path
def square(x: Any, /) -> Any:
    (x,) = _bool_to_int(_array("square", x))
    return ew.square_p.bind(x)


def reciprocal(x: Any, /) -> Any:
    (x,) = promote_args_inexact("reciprocal", x)
    return ew.integer_pow_p.bind(x, y=-1)


# -- exponentials and logarithms ---------------------------------------------------------------------------
exp = _unary_inexact("exp", ew.exp_p)
exp2 = _unary_inexact("exp2", ew.exp2_p)
expm1 = _unary_inexact("expm1", ew.expm1_p)
log = _unary_inexact("log", ew.log_p)
log1p = _unary_inexact("log1p", ew.log1p_p)
sqrt = _unary_inexact("sqrt", ew.sqrt_p)
cbrt = _unary_inexact("cbrt", ew.cbrt_p)


def _log_base(name: str, base: float):
    def fn(x: Any, /) -> Any:
        (x,) = promote_args_inexact(name, x)
        return ew.div_p.bind(ew.log_p.bind(x), _const(x, math.log(base), weak=False))  # log_b x = log x / log b

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise base-{base:g} logarithm."
    return fn


log2 = _log_base("log2", 2.0)
log10 = _log_base("log10", 10.0)


def _logaddexp_real(x1: Any, x2: Any, exp_prim: Any, log_base: float) -> Any:
    """log_b(b^x1 + b^x2) = big + log1p(b^(small - big)) / ln b, with big, small = x1, x2 ordered.

    big and small are selects, not max and min: at a tie x1 == x2 the selected formula is still the function
    itself, smooth there, so every derivative is right (1/2 and 1/2 first, JAX's values), where max's split
    of the tie would cancel against the kink of -|x1 - x2| in the tail (and give 0 and 1). Equal infinities
    make small - big NaN; there the value is x1 + x2 (each slope 1, as JAX's), and the tail's argument is a safe
    0 so that no NaN slope reaches the derivative through the unselected branch. A NaN argument stays NaN.
    """
    first = ew.ge_p.bind(x1, x2)
    big, small = _where(first, x1, x2), _where(first, x2, x1)
    delta = ew.sub_p.bind(small, big)
    same_infinity = ew.and_p.bind(ew.eq_p.bind(x1, x2), ew.eq_p.bind(ew.abs_p.bind(x1), _const(x1, np.inf)))
    tail = ew.log1p_p.bind(exp_prim.bind(_where(same_infinity, _const(delta, 0), delta)))
    if log_base != math.e:
        tail = ew.div_p.bind(tail, _const(tail, math.log(log_base)))
    return _where(same_infinity, ew.add_p.bind(x1, x2), ew.add_p.bind(big, tail))


def logaddexp(x1: Any, x2: Any, /) -> Any:
    """log(exp(x1) + exp(x2)) without overflow."""
    x1, x2 = promote_args_inexact("logaddexp", x1, x2)
    if _kind(x1) == "c":
        return _weak_if_scalar(_logaddexp_complex(x1, x2))
    return _logaddexp_real(x1, x2, ew.exp_p, math.e)


def _logaddexp_complex(x1: Any, x2: Any) -> Any:
    """The complex log's value with its imaginary part in [-pi, pi), the branch JAX's takes."""
    first = ew.ge_p.bind(ew.real_p.bind(x1), ew.real_p.bind(x2))
    big, small = _where(first, x1, x2), _where(first, x2, x1)
    out = ew.add_p.bind(big, ew.log1p_p.bind(ew.exp_p.bind(ew.sub_p.bind(small, big))))
    angle = ew.imag_p.bind(out)
    turn = ew.rem_p.bind(ew.add_p.bind(angle, _const(angle, math.pi)), _const(angle, 2 * math.pi))
    turn = _where(ew.lt_p.bind(turn, _const(turn, 0)), ew.add_p.bind(turn, _const(turn, 2 * math.pi)), turn)
    return ew.complex_p.bind(ew.real_p.bind(out), ew.sub_p.bind(turn, _const(turn, math.pi)))


def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """log2(2**x1 + 2**x2) without overflow."""
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
    if _kind(x1) == "c":  # log2(2^a + 2^b) = logaddexp(a ln 2, b ln 2) / ln 2
        ln2 = _const(x1, math.log(2))
        out = ew.div_p.bind(_logaddexp_complex(ew.mul_p.bind(x1, ln2), ew.mul_p.bind(x2, ln2)), ln2)
        return _weak_if_scalar(out)
    return _weak_if_scalar(_logaddexp_real(x1, x2, ew.exp2_p, 2.0))


# -- trigonometric and hyperbolic functions ------------------------------------------------------------------
sin = _unary_inexact("sin", ew.sin_p)
cos = _unary_inexact("cos", ew.cos_p)
tan = _unary_inexact("tan", ew.tan_p)
arcsin = asin = _unary_inexact("arcsin", ew.asin_p)
arccos = acos = _unary_inexact("arccos", ew.acos_p)
arctan = atan = _unary_inexact("arctan", ew.atan_p)
sinh = _unary_inexact("sinh", ew.sinh_p)
cosh = _unary_inexact("cosh", ew.cosh_p)
tanh = _unary_inexact("tanh", ew.tanh_p)
arcsinh = asinh = _unary_inexact("arcsinh", ew.asinh_p)
arccosh = acosh = _unary_inexact("arccosh", ew.acosh_p)
arctanh = atanh = _unary_inexact("arctanh", ew.atanh_p)
arctan2 = atan2 = _binary("arctan2", ew.atan2_p, inexact=True)


def hypot(x1: Any, x2: Any, /) -> Any:
    """sqrt(x1^2 + x2^2) as big * sqrt(1 + (small/big)^2), which neither overflows nor underflows."""
    x1, x2 = promote_args_inexact("hypot", x1, x2)
    _reject("hypot", x1, "c", "use jnp.abs of a complex number")
    x1, x2 = ew.abs_p.bind(x1), ew.abs_p.bind(x2)
    infinite = ew.or_p.bind(isposinf(x1), isposinf(x2))  # hypot(inf, nan) is inf
    big, small = ew.max_p.bind(x1, x2), ew.min_p.bind(x1, x2)
    big_is_zero = ew.eq_p.bind(big, _const(big, 0))
    ratio = ew.div_p.bind(small, _where(big_is_zero, _const(big, 1), big))
    out = ew.mul_p.bind(big, ew.sqrt_p.bind(ew.add_p.bind(_const(ratio, 1), ew.square_p.bind(ratio))))
    return _weak_if_scalar(_where(infinite, _const(out, np.inf), _where(big_is_zero, big, out)))


def deg2rad(x: Any, /) -> Any:
    (x,) = promote_args_inexact("deg2rad", x)
    return ew.mul_p.bind(x, _lax_const(x, np.pi / 180))


def rad2deg(x: Any, /) -> Any:
    (x,) = promote_args_inexact("rad2deg", x)
    return ew.mul_p.bind(x, _lax_const(x, 180 / np.pi))


radians, degrees = deg2rad, rad2deg


def sinc(x: Any, /) -> Any:
    """sin(pi x) / (pi x), 1 at 0.

    Near 0 (|pi x| < 1/2) it is its Maclaurin series sum_k (-y^2)^k / (2k+1)!, y = pi x, to y^12 (the first term
    left out is below 1e-16 there), so that every derivative at 0 is right, not only the value."""
    (x,) = promote_args_inexact("sinc", x)
    y = ew.mul_p.bind(x, _const(x, np.pi))
    size = ew.abs_p.bind(y)
    near = ew.lt_p.bind(size, _const(size, 0.5))
    z = ew.mul_p.bind(y, y)
    series = _const(z, 1.0)
    for k in (6, 5, 4, 3, 2, 1):  # Horner: 1 - z/(2k(2k+1)) * (...)
        step = ew.mul_p.bind(ew.div_p.bind(z, _const(z, 2 * k * (2 * k + 1))), series)
        series = ew.sub_p.bind(_const(z, 1.0), step)
    safe = _where(near, _const(y, 1), y)
    return _weak_if_scalar(_where(near, series, ew.div_p.bind(ew.sin_p.bind(safe), safe)))


# -- rounding --------------------------------------------------------------------------------------------
def _round_to_integer(name: str, prim):
    def fn(x: Any, /) -> Any:
        x = _array(name, x)
        if _kind(x) in "biu":  # already integral: returned unchanged, as JAX does
            return x
        _reject(name, x, "c", "complex numbers cannot be rounded this way")
        return prim(x)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _trunc(x: Any) -> Any:
    return _where(ew.lt_p.bind(x, _const(x, 0)), ew.ceil_p.bind(x), ew.floor_p.bind(x))


floor = _round_to_integer("floor", ew.floor_p.bind)
ceil = _round_to_integer("ceil", ew.ceil_p.bind)
trunc = _round_to_integer("trunc", _trunc)
fix = trunc  # removed from JAX's namespace; NumPy's fix is trunc


def _complex_parts(fn, x: Any) -> Any:
    return ew.complex_p.bind(fn(ew.real_p.bind(x)), fn(ew.imag_p.bind(x)))


def _round_even(x: Any) -> Any:
    return ew.round_p.bind(x, rounding_method=1)


def rint(x: Any, /) -> Any:
    """Round to the nearest integer, halves to even; integers become the default float."""
    x = _array("rint", x)
    if _kind(x) in "biu":
        return convert(x, dtypes.default_float_dtype())
    return _complex_parts(_round_even, x) if _kind(x) == "c" else _round_even(x)


def round(a: Any, decimals: int = 0, out: None = None) -> Any:  # noqa: A001 - NumPy's name
    """Round to ``decimals`` decimal places, halves to even."""
    if out is not None:
        raise NotImplementedError("jnp.round: the 'out' argument is not supported (arrays are immutable)")
    decimals = int(decimals)
    a = _array("round", a)
    if _kind(a) == "b":
        raise ValueError("jnp.round: booleans cannot be rounded (convert to a number first)")
    if _kind(a) in "iu":
        if decimals >= 0:
            return a
        if 10**-decimals > np.iinfo(aval(a).dtype).max:  # past the dtype's range every value rounds to 0
            return ew.mul_p.bind(a, _const(a, 0))
        return _round_int(a, 10**-decimals)
    if decimals > np.log10(np.finfo(aval(a).dtype).max):
        return a  # finer than the dtype holds: nothing to round (as in JAX; 10**decimals would overflow)
    if _kind(a) == "c":
        return _complex_parts(lambda part: _round_float(part, decimals), a)
    return _round_float(a, decimals)


around = round


def _round_float(x: Any, decimals: int) -> Any:
    if decimals == 0:
        return _round_even(x)
    dtype = aval(x).dtype
    work = convert(x, np.float32, aval(x).weak_type) if dtype == np.float16 else x  # float16 rounds in float32
    # (times 10**-decimals rather than over 10**decimals, as JAX: the last bit differs between the two)
    scale = 10.0**-decimals if -decimals <= 308 else math.inf  # past float64's range: x 0 x inf, NaN as in JAX
    out = ew.mul_p.bind(_round_even(ew.mul_p.bind(work, _lax_const(work, 10.0**decimals))), _lax_const(work, scale))
    return convert(out, dtype, aval(x).weak_type) if dtype == np.float16 else out


def _round_int(x: Any, factor: int) -> Any:
    """Integers to a multiple of ``factor``, halves to even, exactly in integer arithmetic."""
    f = _const(x, factor)
    q, r = floor_divide(x, f), remainder(x, f)
    rest = ew.sub_p.bind(f, r)  # r against f - r, not 2 r against f: 2 r can overflow a narrow integer
    odd = ew.ne_p.bind(ew.and_p.bind(q, _const(q, 1)), _const(q, 0))
    up = ew.or_p.bind(ew.gt_p.bind(r, rest), ew.and_p.bind(ew.eq_p.bind(r, rest), odd))
    return ew.mul_p.bind(_where(up, ew.add_p.bind(q, _const(q, 1)), q), f)


# -- comparisons -----------------------------------------------------------------------------------------
def _comparison(name: str, prim):
    """Comparisons of complex numbers order by real part, then by imaginary part, as NumPy does."""

    def fn(x1: Any, x2: Any, /) -> Any:
        x1, x2 = promote_args(name, x1, x2)
        if _kind(x1) == "c" and prim not in (ew.eq_p, ew.ne_p):
            re1, re2, im1, im2 = (p.bind(v) for p in (ew.real_p, ew.imag_p) for v in (x1, x2))
            return _where(ew.eq_p.bind(re1, re2), prim.bind(im1, im2), prim.bind(re1, re2))
        return prim.bind(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, a boolean array."
    return fast_path(fn)


equal = _comparison("equal", ew.eq_p)
not_equal = _comparison("not_equal", ew.ne_p)
less = _comparison("less", ew.lt_p)
less_equal = _comparison("less_equal", ew.le_p)
greater = _comparison("greater", ew.gt_p)
greater_equal = _comparison("greater_equal", ew.ge_p)
maximum = _binary("maximum", ew.max_p)  # NaN wins, as in JAX
minimum = _binary("minimum", ew.min_p)


def fmax(x1: Any, x2: Any) -> Any:
    """maximum, except that a NaN loses to a number."""
    x1, x2 = promote_args("fmax", x1, x2)
    return _where(ew.or_p.bind(greater(x1, x2), ew.ne_p.bind(x2, x2)), x1, x2)


def fmin(x1: Any, x2: Any) -> Any:
    """minimum, except that a NaN loses to a number."""
    x1, x2 = promote_args("fmin", x1, x2)
    return _where(ew.or_p.bind(less(x1, x2), ew.ne_p.bind(x2, x2)), x1, x2)


def _tolerance(like: Any, value: Any) -> Any:
    """A tolerance in ``like``'s (real) dtype and shape, strongly typed, as JAX converts it."""
    if isinstance(value, (*_PY_SCALARS, np.generic)):
        return _const(like, value, weak=False)
    return broadcast_to(convert(_array("isclose", value), aval(like).dtype), aval(like).shape)


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """|a - b| <= atol + rtol |b| elementwise; infinities are close only to themselves."""
    a, b = promote_args_inexact("isclose", a, b)
    abs_b = ew.abs_p.bind(b)
    rtol, atol = (_tolerance(abs_b, t) for t in (rtol, atol))
    in_range = ew.le_p.bind(ew.abs_p.bind(ew.sub_p.bind(a, b)), ew.add_p.bind(atol, ew.mul_p.bind(rtol, abs_b)))
    out = ew.or_p.bind(ew.eq_p.bind(a, b), ew.and_p.bind(ew.and_p.bind(isfinite(a), isfinite(b)), in_range))
    if equal_nan:
        out = ew.or_p.bind(out, ew.and_p.bind(isnan(a), isnan(b)))
    return out


# -- logic and bits --------------------------------------------------------------------------------------
def logical_not(x: Any, /) -> Any:
    return ew.not_p.bind(_to_bool(_array("logical_not", x)))


def _logical(name: str, prim):
    def fn(x1: Any, x2: Any, /) -> Any:
        check_arraylike(name, x1, x2)
        # (JAX promotes first: jax_numpy_dtype_promotion="strict" refuses mixed types, and the truth values of
        # two weakly typed scalars, or of one met with a 0-d array, are weakly typed: see _lax_const)
        dtype, weak = dtypes.result_type(x1, x2, return_weak_type=True)
        x1, x2 = promote_shapes(_to_bool(_array(name, x1)), _to_bool(_array(name, x2)), name=name)
        return convert(prim.bind(x1, x2), np.bool_, weak and np.dtype(dtype).kind != "b" and not aval(x1).shape)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of the operands' truth values."
    return fast_path(fn)


logical_and = _logical("logical_and", ew.and_p)
logical_or = _logical("logical_or", ew.or_p)
logical_xor = _logical("logical_xor", ew.xor_p)
bitwise_and = _binary("bitwise_and", ew.and_p)
bitwise_or = _binary("bitwise_or", ew.or_p)
bitwise_xor = _binary("bitwise_xor", ew.xor_p)


def invert(x: Any, /) -> Any:
    return ew.not_p.bind(_array("invert", x))


bitwise_not = bitwise_invert = invert


def left_shift(x: Any, y: Any, /) -> Any:
    x, y = _bool_to_int(*promote_args("left_shift", x, y))
    return ew.shift_left_p.bind(x, y)


def right_shift(x: Any, y: Any, /) -> Any:
    """Arithmetic (sign-filling) for signed integers, logical for unsigned ones."""
    x, y = _bool_to_int(*promote_args("right_shift", x, y))
    prim = ew.shift_right_logical_p if _kind(x) == "u" else ew.shift_right_arithmetic_p
    return prim.bind(x, y)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def bitwise_count(x: Any, /) -> Any:
    """The number of 1 bits in |x|, as uint8 (NumPy's definition)."""
    x = _array("bitwise_count", x)
    _reject("bitwise_count", x, "fc", "only integers and booleans have bits to count")
    x = convert(x, np.uint8) if _kind(x) == "b" else x
    return convert(ew.population_count_p.bind(ew.abs_p.bind(x) if _kind(x) == "i" else x), np.uint8)


def gcd(x1: Any, x2: Any) -> Any:
    """Greatest common divisor, by Euclid's algorithm unrolled for the dtype's worst case."""
    check_arraylike("gcd", x1, x2)
    x1, x2 = promote_shapes(*promote_dtypes(x1, x2))  # (JAX's broadcasts without the rank check)
    weak = aval(x1).weak_type and not aval(x1).shape  # (see _lax_const)
    _reject("gcd", x1, "bfc", "gcd is defined for integers")
    a, b = abs(x1), abs(x2)
    zero = _const(b, 0)
    # Lamé: Euclid takes at most ~1.44 log2(max) steps, worst on consecutive Fibonacci numbers
    for _ in range(int(1.45 * aval(a).dtype.itemsize * 8) + 2):
        done = ew.eq_p.bind(b, zero)
        a, b = _where(done, a, b), _where(done, zero, ew.rem_p.bind(a, _where(done, _const(b, 1), b)))
    return convert(a, aval(a).dtype, weak)


def lcm(x1: Any, x2: Any) -> Any:
    """Least common multiple: |x1 (x2 / gcd)|, 0 when either is 0."""
    x1, x2 = promote_args("lcm", x1, x2)
    weak = aval(x1).weak_type and not aval(x1).shape  # (see _lax_const)
    d = gcd(x1, x2)
    d_is_zero = ew.eq_p.bind(d, _const(d, 0))
    out = abs(ew.mul_p.bind(x1, ew.div_p.bind(x2, _where(d_is_zero, _const(d, 1), d))))
    return convert(_where(d_is_zero, _const(out, 0), out), aval(out).dtype, weak)


# -- floating-point inspection -----------------------------------------------------------------------------
def isfinite(x: Any, /) -> Any:
    x = _array("isfinite", x)
    if _kind(x) == "c":
        return ew.and_p.bind(ew.is_finite_p.bind(ew.real_p.bind(x)), ew.is_finite_p.bind(ew.imag_p.bind(x)))
    if _kind(x) == "f":
        return ew.is_finite_p.bind(x)
    return _const(x, True, weak=False, dtype=np.bool_)


def isnan(x: Any, /) -> Any:
    x = _array("isnan", x)
    return ew.ne_p.bind(x, x)  # NaN is the only value unequal to itself


def isinf(x: Any, /) -> Any:
    x = _array("isinf", x)
    if _kind(x) == "c":
        return ew.or_p.bind(isinf(ew.real_p.bind(x)), isinf(ew.imag_p.bind(x)))
    if _kind(x) == "f":
        return ew.eq_p.bind(ew.abs_p.bind(x), _const(x, np.inf, weak=False))
    return _const(x, False, weak=False, dtype=np.bool_)


def _isinf_signed(name: str, value: float):
    def fn(x: Any, /) -> Any:
        x = _array(name, x)
        if _kind(x) == "c":
            raise ValueError(f"jnp.{name} is not defined for complex numbers")
        if _kind(x) == "f":
            return ew.eq_p.bind(x, _const(x, value, weak=False))
        return _const(x, False, weak=False, dtype=np.bool_)

    fn.__name__ = fn.__qualname__ = name
    return fn


isposinf = _isinf_signed("isposinf", np.inf)
isneginf = _isinf_signed("isneginf", -np.inf)


def signbit(x: Any, /) -> Any:
    """Whether the sign bit is set (true for -0.0 and for NaNs with the bit set)."""
    x = _array("signbit", x)
    _reject("signbit", x, "c", "complex numbers have no sign bit")
    if _kind(x) == "b":
        return _const(x, False, weak=False, dtype=np.bool_)
    if _kind(x) in "iu":
        return ew.lt_p.bind(x, _const(x, 0, weak=False))
    bits = aval(x).dtype.itemsize * 8
    pattern = ew.bitcast_convert_type_p.bind(x, new_dtype=np.dtype(f"u{bits // 8}"))
    return ew.ne_p.bind(ew.shift_right_logical_p.bind(pattern, _const(pattern, bits - 1)), _const(pattern, 0))


def copysign(x1: Any, x2: Any, /) -> Any:
    x1, x2 = promote_args_inexact("copysign", x1, x2)
    _reject("copysign", x1, "c", "complex numbers have no sign")
    magnitude = ew.abs_p.bind(x1)
    return _where(signbit(x2), ew.neg_p.bind(magnitude), magnitude)


nextafter = _binary("nextafter", ew.nextafter_p, inexact=True)


def spacing(x: Any, /) -> Any:
    """The distance from x to the next float away from zero (negative for negative x)."""
    (x,) = promote_args_inexact("spacing", x)
    _reject("spacing", x, "c", "complex numbers have no spacing")
    away = _where(signbit(x), _const(x, -np.inf, weak=False), _const(x, np.inf, weak=False))
    out = ew.sub_p.bind(ew.nextafter_p.bind(_strong(x), away), _strong(x))
    return _where(isinf(x), _const(out, np.nan), out)


_FLOAT_LAYOUT = {2: (10, 15), 4: (23, 127), 8: (52, 1023)}  # itemsize -> (mantissa bits, exponent bias)


def frexp(x: Any, /) -> tuple[Any, Any]:
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1 (0, inf, NaN: (x, 0))."""
    (x,) = promote_args_inexact("frexp", x)
    _reject("frexp", x, "c", "complex numbers have no exponent")
    dtype = aval(x).dtype
    mantissa_bits, bias = _FLOAT_LAYOUT[dtype.itemsize]
    uint = np.dtype(f"u{dtype.itemsize}")
    # subnormals are scaled up by 2**mantissa_bits first, which makes them normal
    subnormal = ew.and_p.bind(ew.ne_p.bind(x, _const(x, 0)),
                              ew.lt_p.bind(ew.abs_p.bind(x), _const(x, np.finfo(dtype).tiny)))
    scaled = _where(subnormal, ew.mul_p.bind(x, _const(x, 2.0**mantissa_bits)), x)
    bits = ew.bitcast_convert_type_p.bind(scaled, new_dtype=uint)
    field_mask = (1 << (dtype.itemsize * 8 - 1 - mantissa_bits)) - 1
    field = ew.and_p.bind(ew.shift_right_logical_p.bind(bits, _const(bits, mantissa_bits)), _const(bits, field_mask))
    field = convert(field, np.int32)
    exponent = ew.sub_p.bind(field, _const(field, bias - 1))
    exponent = ew.sub_p.bind(exponent, _where(subnormal, _const(exponent, mantissa_bits), _const(exponent, 0)))
    keep = ~np.uint64(field_mask << mantissa_bits) & np.uint64((1 << dtype.itemsize * 8) - 1)
    mantissa_bits_pattern = ew.or_p.bind(ew.and_p.bind(bits, _const(bits, int(keep))),
                                         _const(bits, (bias - 1) << mantissa_bits))
    mantissa = ew.bitcast_convert_type_p.bind(mantissa_bits_pattern, new_dtype=dtype)
    # the bits give the exact value; the derivative is that of x * 2**-exponent (the exponent is locally constant):
    # add (x - stop_gradient(x)) * 2**-exponent, which is exactly zero and carries d mantissa / dx = 2**-exponent
    carrier = ew.sub_p.bind(x, stop_gradient_p.bind(x))
    mantissa = ew.add_p.bind(mantissa, ldexp(carrier, ew.neg_p.bind(exponent)))
    special = ew.or_p.bind(ew.eq_p.bind(x, _const(x, 0)), ew.not_p.bind(ew.is_finite_p.bind(x)))
    return _where(special, x, mantissa), _where(special, _const(exponent, 0), exponent)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """x1 * 2**x2 for an integer x2."""
    check_arraylike("ldexp", x1, x2)
    x2 = _array("ldexp", x2)
    if _kind(x2) not in "biu":
        raise TypeError(f"jnp.ldexp: the exponent must be an integer, got {aval(x2).dtype.name}")
    (x1,) = promote_args_inexact("ldexp", x1)
    _reject("ldexp", x1, "c", "use x * 2**n for complex numbers")
    x1, x2 = promote_shapes(x1, _bool_to_int(x2)[0], name="ldexp")
    dtype = aval(x1).dtype
    # two half steps, so that 2**x2 itself may overflow or underflow while the product does not
    half = ew.shift_right_arithmetic_p.bind(x2, _const(x2, 1)) if _kind(x2) == "i" else \
        ew.shift_right_logical_p.bind(x2, _const(x2, 1))
    rest = ew.sub_p.bind(x2, half)
    out = ew.mul_p.bind(x1, ew.exp2_p.bind(convert(half, dtype)))
    return ew.mul_p.bind(out, ew.exp2_p.bind(convert(rest, dtype)))


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """(fractional part, integral part), both with x's sign."""
    if out is not None:
        raise NotImplementedError("jnp.modf: the 'out' argument is not supported (arrays are immutable)")
    (x,) = promote_args_inexact("modf", x)
    _reject("modf", x, "c", "complex numbers have no integral part")
    whole = _trunc(x)
    return ew.sub_p.bind(x, whole), whole


def heaviside(x1: Any, x2: Any, /) -> Any:
    """0 for x1 < 0, x2 for x1 == 0, 1 for x1 > 0."""
    check_arraylike("heaviside", x1, x2)
    x1, x2 = promote_dtypes_inexact(x1, x2)
    scalar = not aval(x1).shape  # (JAX's constants are made like x1 before the shapes meet)
    x1, x2 = promote_shapes(x1, x2)  # (JAX's broadcasts without the rank check)
    _reject("heaviside", x1, "c", "complex numbers have no sign")
    zero = _const(x1, 0)
    step = _where(ew.gt_p.bind(x1, zero), _const(x1, 1), x2)
    step = _where(ew.lt_p.bind(x1, zero), zero, step)
    return _weak_if_scalar(_where(ew.ne_p.bind(x1, x1), x1, step), scalar)  # (NaN stays NaN, as NumPy's and JAX's)


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    """NaN -> nan, +inf -> posinf (default: the largest float), -inf -> neginf (default: the lowest)."""
    x = _array("nan_to_num", x)
    if _kind(x) in "biu":
        return x
    if _kind(x) == "c":
        return _complex_parts(lambda part: nan_to_num(part, nan=nan, posinf=posinf, neginf=neginf), x)
    info = np.finfo(aval(x).dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf

    def fill(value):  # a number, or an array (traced too) broadcast to x, in x's dtype
        if isinstance(value, (int, float, complex, np.generic)):
            return _const(x, value, weak=False)
        return broadcast_to(convert(asarray(value), aval(x).dtype, weak_type=False), aval(x).shape)

    out = _where(ew.ne_p.bind(x, x), fill(nan), x)
    out = _where(isposinf(x), fill(posinf), out)
    return _where(isneginf(x), fill(neginf), out)


# -- complex numbers -------------------------------------------------------------------------------------
def real(val: Any, /) -> Any:
    val = _array("real", val)
    return ew.real_p.bind(val) if _kind(val) == "c" else val


def imag(val: Any, /) -> Any:
    val = _array("imag", val)
    return ew.imag_p.bind(val) if _kind(val) == "c" else _const(val, 0)


def conjugate(x: Any, /) -> Any:
    x = _array("conjugate", x)
    return ew.conj_p.bind(x) if _kind(x) == "c" else x


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """The argument of z, in radians (degrees with ``deg=True``)."""
    z = _array("angle", z)
    if _kind(z) == "c":
        out = ew.atan2_p.bind(ew.imag_p.bind(z), ew.real_p.bind(z))
    else:  # integers, and 0-d floats of any width, become the default float here (JAX's rule, not its usual one)
        z = z if _kind(z) == "f" and aval(z).shape else convert(z, dtypes.default_float_dtype())
        out = ew.atan2_p.bind(_const(z, 0, weak=False), z)
    return ew.mul_p.bind(out, _const(out, 180 / np.pi)) if deg else out


def iscomplex(x: Any) -> Any:
    part = imag(x)
    return ew.ne_p.bind(part, _lax_const(part, 0))


def isreal(x: Any) -> Any:
    part = imag(x)
    return ew.eq_p.bind(part, _lax_const(part, 0))


# -- selection, clipping and conversion --------------------------------------------------------------------
@fast_path
def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None) -> Any:
    """x where ``condition`` holds, else y; with only ``condition``, ``jnp.nonzero(condition)``."""
    if x is None and y is None:
        from srcjax.runtime.numpy.indexing import nonzero

        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TypeError("jnp.where: pass both x and y, or neither (then it returns the indices of nonzeros)")
    if size is not None or fill_value is not None:
        raise TypeError("jnp.where: size and fill_value apply only to the one-argument form")
    check_arraylike("where", condition, x, y)
    x, y = promote_dtypes(x, y)
    condition, x, y = promote_shapes(_to_bool(_array("where", condition)), x, y)
    return _where(condition, x, y)


def clip(arr: Any = None, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """arr limited to [min, max] (either bound may be None). JAX 0.10 no longer takes the old names ``a``,
    ``a_min`` and ``a_max`` (a TypeError, as Python gives for any unknown keyword)."""
    if arr is None:
        raise TypeError("jnp.clip: missing the array to clip")
    check_arraylike("clip", *(v for v in (arr, min, max) if v is not None))
    if any(_kind(_array("clip", v)) == "c" for v in (arr, min, max) if v is not None):
        raise ValueError("jnp.clip: complex numbers have no ordering and cannot be clipped; clip the real "
                         "or imaginary part")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return _array("clip", arr)


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """x converted to ``dtype`` (canonicalised: float64 means float32 unless x64 is on); never weak."""
    x = _array("astype", x)
    want = dtypes.default_float_dtype() if dtype is None else dtypes.check_user_dtype(dtype, "astype")
    if _kind(x) == "c" and want == np.bool_:  # (x != 0, as JAX's: a conversion would read only the real part)
        return ew.ne_p.bind(x, _const(x, 0, weak=False))
    return convert(x, want)


# -- the built-in ufuncs: the names JAX makes ``jnp.ufunc`` objects, with its methods --------------------------
def _add_at(a: Any, indices: Any, b: Any) -> Any:
    a = _array("add.at", a)
    if _kind(a) == "b":  # (True + True is True: the count of additions is what matters)
        added = a.astype(np.int32).at[indices].add(convert(_array("add.at", b), np.bool_).astype(np.int32))
        return added.astype(np.bool_)
    return a.at[indices].add(b)


def _multiply_at(a: Any, indices: Any, b: Any) -> Any:
    a = _array("multiply.at", a)
    if _kind(a) == "b":
        product = a.astype(np.int32).at[indices].multiply(convert(_array("multiply.at", b), np.bool_).astype(np.int32))
        return product.astype(np.bool_)
    return a.at[indices].multiply(b)


def _subtract_at(a: Any, indices: Any, b: Any) -> Any:
    return _array("subtract.at", a).at[indices].subtract(b)


def _logsumexp(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
    """log(sum(exp(a))) over ``axis``, shifted by the maximum so that it neither overflows nor underflows;
    ``dtype`` is checked and not used (JAX's)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.logaddexp.reduce is not supported.")
    if dtype is not None:
        dtypes.to_dtype(dtype)
    (a,) = promote_args_inexact("logsumexp", a)
    axes = reductions._axes("logsumexp", axis, aval(a).ndim)
    top = reductions.max(real(a), axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    top = stop_gradient_p.bind(_where(isfinite(top), top, _const(top, 0)))
    shift = top if keepdims else reductions._keepdims(top, axes, aval(a).ndim)
    total = reductions.sum(exp(subtract(a, convert(shift, aval(a).dtype))), axis=axes, keepdims=keepdims, where=where)
    result = add(log(total), convert(top, aval(total).dtype))
    return result if initial is None else logaddexp(initial, result)


def _logsumexp2(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
                initial: Any = None, where: Any = None) -> Any:
    """log2(sum(2 ** a)) = logsumexp(a ln 2) / ln 2."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.logaddexp2.reduce is not supported.")
    check_arraylike("logsumexp2", a)
    ln2 = math.log(2)
    initial = None if initial is None else multiply(initial, ln2)
    result = _logsumexp(multiply(a, ln2), axis, dtype, keepdims=keepdims, initial=initial, where=where)
    return true_divide(result, ln2)


# (the fast-path functions above are what these call, by their ``__wrapped__`` functions)
add = builtin_ufunc(add.__wrapped__, 2, identity=0, reduce=reductions.sum, accumulate=reductions.cumsum, at=_add_at)
multiply = builtin_ufunc(multiply.__wrapped__, 2, identity=1, reduce=reductions.prod,
                         accumulate=reductions.cumprod, at=_multiply_at)
subtract = builtin_ufunc(subtract.__wrapped__, 2, at=_subtract_at)
negative = builtin_ufunc(negative.__wrapped__, 1)
maximum = builtin_ufunc(maximum.__wrapped__, 2, reduce=reductions._reduce_max)
minimum = builtin_ufunc(minimum.__wrapped__, 2, reduce=reductions._reduce_min)
bitwise_and = builtin_ufunc(bitwise_and.__wrapped__, 2, identity=-1, reduce=reductions._reduce_bitwise_and)
bitwise_or = builtin_ufunc(bitwise_or.__wrapped__, 2, identity=0, reduce=reductions._reduce_bitwise_or)
bitwise_xor = builtin_ufunc(bitwise_xor.__wrapped__, 2, identity=0, reduce=reductions._reduce_bitwise_xor)
logical_and = builtin_ufunc(logical_and.__wrapped__, 2, identity=True, reduce=reductions._reduce_logical_and)
logical_or = builtin_ufunc(logical_or.__wrapped__, 2, identity=False, reduce=reductions._reduce_logical_or)
logical_xor = builtin_ufunc(logical_xor.__wrapped__, 2, identity=False, reduce=reductions._reduce_logical_xor)
logaddexp = builtin_ufunc(logaddexp, 2, identity=-np.inf, reduce=_logsumexp)
logaddexp2 = builtin_ufunc(logaddexp2, 2, identity=-np.inf, reduce=_logsumexp2)
