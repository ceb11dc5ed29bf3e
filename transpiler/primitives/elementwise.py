"""Elementwise primitives: math, comparisons, logic and bit operations, selects and conversions.

Operands of an n-ary elementwise primitive have one shape and one dtype (``srcjax.lax`` and
``srcjax.numpy`` broadcast and promote before binding); ``pow`` also takes an integer exponent. The
result is weakly typed only when every operand is. The dtypes each primitive accepts are XLA's (checked
against JAX): transcendental functions take floats and complex numbers, ``erf``-like ones floats only,
bit operations integers (and bools for the logical ones). Each primitive is one line through a family
constructor; the ones with parameters or unusual typing are written out below them.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

import srcjax.transpiler.primitives.special as special
from srcjax.transpiler.primitives.batching import axis_size, elementwise_rule, move_batch_axis, moveaxis
from srcjax.transpiler.primitives.ad import Zero, aval_of, defjvp, defjvp2, is_undefined, zeros
from srcjax.transpiler.primitives.core import Primitive, check, register_module, registered
from srcjax.transpiler.types import TensorType, complex_dtype, real_dtype, short_name

# dtype classes, as sets of NumPy kind letters (b bool, i signed, u unsigned, f float, c complex)
KIND_NAMES = {
    "f": "floating",
    "fc": "floating or complex",
    "c": "complex",
    "iufc": "integer, floating or complex",
    "ifc": "signed integer, floating or complex",
    "iu": "integer",
    "biu": "bool or integer",
    "iuf": "integer or floating",
    "biuf": "bool, integer or floating",
    "biufc": "any",
}


# (the messages are built only on failure: these checks run on every eager call)
def check_kind(name: str, dtype: np.dtype, kinds: str, what: str = "operands") -> None:
    if dtype.kind not in kinds:
        check(False, name, f"does not accept {dtype.name} {what}; they must be {KIND_NAMES[kinds]}")


def check_same(name: str, types: tuple[TensorType, ...], kinds: str) -> None:
    """Every operand has the first one's shape and dtype, and that dtype is of ``kinds``."""
    first = types[0]
    if any(t.dtype != first.dtype for t in types):
        check(False, name, f"operands must have the same dtype, got {', '.join(short_name(t.dtype) for t in types)}")
    if any(t.shape != first.shape for t in types):
        check(False, name, f"operands must have the same shape, got {', '.join(str(t.shape) for t in types)}",
              kind="value")
    check_kind(name, first.dtype, kinds)


def elementwise(name: str, impl: Callable, arity: int, *, kinds: str = "fc",
                result: Callable[[np.dtype], np.dtype] | None = None) -> Primitive:
    """A primitive applying ``impl`` elementwise; ``result`` maps the operand dtype to the result's."""
    prim = Primitive(name)

    def shape_rule(*types: TensorType) -> TensorType:
        check(len(types) == arity, name, f"takes {arity} operand(s), got {len(types)}")
        check_same(name, types, kinds)
        dtype = types[0].dtype if result is None else np.dtype(result(types[0].dtype))
        return TensorType(dtype, types[0].shape, all(t.weak_type for t in types))

    prim.def_shape(shape_rule)
    prim.def_impl((lambda *xs, **params: impl(*map(_dense, xs), **params)) if name in _ROUNDED_BY_LOOP else impl)
    prim.def_vmap(elementwise_rule(prim))
    prim.lax_function = (name, arity > 1)  # (lax.<name>(x, y), which takes Python scalars too)
    return prim


def unary(name: str, impl: Callable, *, jvp: Callable | None = None, **kw) -> Primitive:
    """``jvp(g, x, y)``: the tangent of ``y = f(x)`` for a tangent ``g`` of ``x`` (``y`` is reused)."""
    prim = elementwise(name, impl, 1, **kw)
    if jvp is not None:
        defjvp2(prim, lambda g, y, x: jvp(g, x, y))
        prim.def_unsupported("transpose", "not linear")
    return prim


def binary(name: str, impl: Callable, *, jvp: tuple[Callable, Callable] | None = None, **kw) -> Primitive:
    """``jvp``: the partials ``(g, x, y) -> tangent`` for each operand."""
    prim = elementwise(name, impl, 2, **kw)
    if jvp is not None:
        defjvp(prim, *jvp)
    return prim


def _zero_derivative(*prims: Primitive, why: str) -> None:
    for prim in prims:
        prim.def_zero_jvp(why)
        prim.def_unsupported("transpose", "not linear")


def _bind(prim_name: str):
    """Late-bound access to a primitive of this module, for rules written above its declaration."""
    return lambda *args, **params: globals()[prim_name + "_p"].bind(*args, **params)


def _like(value, x):
    """A Python number as an array of ``x``'s shape and dtype (operands of a primitive agree in both)."""
    return _full(np.asarray(value, aval_of(x).dtype), x)


def comparison(name: str, impl: Callable, kinds: str) -> Primitive:
    prim = binary(name, impl, kinds=kinds, result=lambda d: np.bool_)
    _zero_derivative(prim, why="comparisons have zero derivative")
    return prim


def _to_bool(dtype) -> np.dtype:
    return np.dtype(np.bool_)


# -- arithmetic ------------------------------------------------------------------------------------------
def _div(x, y):
    if x.dtype.kind not in "iu":
        return np.true_divide(x, y)
    # XLA's integer division rounds toward zero; x / 0 is -1 (signed) or all ones (unsigned), and
    # MIN / -1 wraps to MIN. NumPy floors, so the quotient is corrected where the remainder is nonzero.
    special_divisor = (y == 0) | (y == -1) if x.dtype.kind == "i" else y == 0
    safe = np.where(special_divisor, 1, y).astype(x.dtype)
    q = np.floor_divide(x, safe)
    q = q + ((np.remainder(x, safe) != 0) & ((x < 0) != (safe < 0)))
    q = np.where(y == -1, np.negative(x), q) if x.dtype.kind == "i" else q
    return np.where(y == 0, np.array(-1).astype(x.dtype), q).astype(x.dtype)


def _rem(x, y):
    if x.dtype.kind not in "iu":
        return np.fmod(x, y)  # the sign of the dividend, like C
    special_divisor = (y == 0) | (y == -1) if x.dtype.kind == "i" else y == 0
    return np.where(y == 0, x, np.fmod(x, np.where(special_divisor, 1, y).astype(x.dtype))).astype(x.dtype)


def _extremum(numpy_fn: Callable, prefer_negative_zero: bool) -> Callable:
    """np.maximum / np.minimum (NaN-propagating), except that XLA orders -0.0 below +0.0."""

    def impl(x, y):
        out = numpy_fn(x, y)
        if x.dtype.kind != "f":
            return out
        both_zero = (x == 0) & (y == 0)
        pick_x = np.signbit(x) if prefer_negative_zero else ~np.signbit(x)
        return np.where(both_zero, np.where(pick_x, x, y), out)

    return impl


def _sign(x):
    if x.dtype.kind == "c":
        magnitude = np.abs(x)
        return np.where(magnitude == 0, 0, x / np.where(magnitude == 0, 1, magnitude)).astype(x.dtype)
    if x.dtype.kind in "iu":
        return np.sign(x) if x.dtype.kind == "i" else (x != 0).astype(x.dtype)
    return np.where((x == 0) | np.isnan(x), x, np.sign(x)).astype(x.dtype)  # keeps -0.0 and NaN


def _round(x, rounding_method):
    if rounding_method == 1:  # to nearest even
        return np.round(x)
    # away from zero; x - trunc(x) is exact, so no rounding error decides the halfway cases
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _atan2(x, y):
    if x.dtype.kind != "c":
        return np.arctan2(x, y)
    # atan2(x, y) = -i log((y + i x) / sqrt(x^2 + y^2)), which reduces to arctan2 for real arguments
    return (-1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))).astype(x.dtype)


# functions whose NumPy results depend on the loop that computes them (vectorised or scalar); the arithmetic
# operations are correctly rounded either way
_ROUNDED_BY_LOOP = set(
    "exp exp2 expm1 log log1p sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh cbrt logistic erf "
    "erfc erf_inv lgamma digamma".split())


def _dense(x):
    """``x``, written out when it is a broadcast (a stride of 0): NumPy's vectorised loops, whose last bits can
    differ from its scalar ones, take only operands laid out in memory, so a broadcast would round otherwise than
    the same values written out (as emitted code, where a constant is a broadcast, would then show)."""
    return np.ascontiguousarray(x) if isinstance(x, np.ndarray) and x.size > 1 and 0 in x.strides else x


def _pow(x, y):
    x, y = _dense(x), _dense(y)
    if y.dtype.kind in "iu":  # x ** n with an integer n: compute in the widest float, round once
        wide = np.complex128 if x.dtype.kind == "c" else np.float64
        return np.power(x.astype(wide), y.astype(np.float64)).astype(x.dtype)
    return np.power(x, y)


def _balanced_eq(x, z, y):
    """1 where x is the extremum z alone, 0.5 where x and y tie, else 0 (JAX's convention for max/min)."""
    x_wins = select_n_p.bind(eq_p.bind(y, z), _like(1, x), _like(0.5, x))
    return select_n_p.bind(eq_p.bind(x, z), _like(0, x), x_wins)


def _full(scalar, like):
    shape = aval_of(like).shape
    return registered("broadcast_in_dim").bind(scalar, shape=shape, broadcast_dimensions=()) if shape else \
        convert_element_type_p.bind(scalar, new_dtype=aval_of(like).dtype, weak_type=False)


def _trunc(q):
    return mul_p.bind(sign_p.bind(q), floor_p.bind(abs_p.bind(q)))


def _sum_squares(x, y):
    return add_p.bind(mul_p.bind(x, x), mul_p.bind(y, y))


def _abs_jvp(g, x, y):
    if aval_of(x).dtype.kind == "c":  # d|x| = Re(conj(x) dx) / |x|, zero at 0
        safe = select_n_p.bind(eq_p.bind(y, _like(0, y)), y, _like(1, y))
        return div_p.bind(real_p.bind(mul_p.bind(conj_p.bind(x), g)), safe)
    # JAX's convention at 0: the slope of x itself (select(x >= 0, g, -g))
    return select_n_p.bind(ge_p.bind(x, _like(0, x)), neg_p.bind(g), g)


neg_p = unary("neg", np.negative, kinds="iufc")
neg_p.def_linear(lambda ct, x: [neg_p.bind(ct)])
add_p = binary("add", np.add, kinds="iufc")
add_p.def_linear(lambda ct, x, y: [ct if is_undefined(x) else None, ct if is_undefined(y) else None])
sub_p = binary("sub", np.subtract, kinds="iufc")
sub_p.def_linear(lambda ct, x, y: [ct if is_undefined(x) else None, neg_p.bind(ct) if is_undefined(y) else None])
mul_p = binary("mul", np.multiply, kinds="iufc",
               jvp=(lambda g, x, y: mul_p.bind(g, y), lambda g, x, y: mul_p.bind(x, g)))
mul_p.def_transpose(lambda ct, x, y: [mul_p.bind(ct, y) if is_undefined(x) else None,
                                      mul_p.bind(x, ct) if is_undefined(y) else None])
div_p = binary("div", _div, kinds="iufc",
               jvp=(lambda g, x, y: div_p.bind(g, y),
                    # -g x y^-2 (JAX's form: at y == 0 its own derivative is inf, where x / (y y)'s is NaN)
                    lambda g, x, y: mul_p.bind(mul_p.bind(neg_p.bind(g), x), integer_pow_p.bind(y, y=-2))))
div_p.def_transpose(lambda ct, x, y: [div_p.bind(ct, y), None])
rem_p = binary("rem", _rem, kinds="iuf",  # x - y * trunc(x / y)
               jvp=(lambda g, x, y: g, lambda g, x, y: mul_p.bind(neg_p.bind(g), _trunc(div_p.bind(x, y)))))
rem_p.def_unsupported("transpose", "not linear")
max_p = binary("max", _extremum(np.maximum, prefer_negative_zero=False), kinds="biufc")
defjvp2(max_p, lambda g, z, x, y: mul_p.bind(g, _balanced_eq(x, z, y)),
        lambda g, z, x, y: mul_p.bind(g, _balanced_eq(y, z, x)))
max_p.def_unsupported("transpose", "not linear")
min_p = binary("min", _extremum(np.minimum, prefer_negative_zero=True), kinds="biufc")
defjvp2(min_p, lambda g, z, x, y: mul_p.bind(g, _balanced_eq(x, z, y)),
        lambda g, z, x, y: mul_p.bind(g, _balanced_eq(y, z, x)))
min_p.def_unsupported("transpose", "not linear")
atan2_p = binary("atan2", _atan2, kinds="fc",  # d atan2(x, y) = (y dx - x dy) / (x^2 + y^2)
                 jvp=(lambda g, x, y: mul_p.bind(g, div_p.bind(y, _sum_squares(x, y))),
                      lambda g, x, y: mul_p.bind(g, div_p.bind(neg_p.bind(x), _sum_squares(x, y)))))
atan2_p.def_unsupported("transpose", "not linear")
# x1 moved by one ulp: slope 1 in x1 (spacing's is then 0); JAX has no rule and refuses to differentiate it
nextafter_p = binary("nextafter", np.nextafter, kinds="f", jvp=(lambda g, x, y: g, None))
nextafter_p.def_unsupported("transpose", "not linear")
abs_p = unary("abs", np.abs, kinds="ifc", result=real_dtype, jvp=lambda g, x, y: _abs_jvp(g, x, y))
sign_p = unary("sign", _sign, kinds="iufc")
square_p = unary("square", lambda x: x * x, kinds="iufc", jvp=lambda g, x, y: g * (2 * x))
floor_p = unary("floor", np.floor, kinds="f")
ceil_p = unary("ceil", np.ceil, kinds="f")
is_finite_p = unary("is_finite", np.isfinite, kinds="f", result=_to_bool)
_zero_derivative(is_finite_p, why="is_finite has zero derivative")
_zero_derivative(sign_p, floor_p, ceil_p, why="piecewise constant: the derivative is zero")

pow_p = Primitive("pow")


@pow_p.def_shape
def _pow_shape(x: TensorType, y: TensorType) -> TensorType:
    check_kind("pow", x.dtype, "fc", "bases")
    check(y.dtype == x.dtype or y.dtype.kind in "iu", "pow",
          f"the exponent must have the base's dtype or an integer dtype, got {short_name(x.dtype)} and "
          f"{short_name(y.dtype)}")
    check(x.shape == y.shape, "pow", f"operands must have the same shape, got {x.shape}, {y.shape}", kind="value")
    return x.update(weak_type=x.weak_type and y.weak_type)


pow_p.def_impl(_pow)


def _pow_jvp(primals, tangents):
    x, y = primals
    gx, gy = tangents
    out = pow_p.bind(x, y)
    total = Zero(aval_of(out).update(weak_type=False))
    if not isinstance(gx, Zero):  # y x^(y-1)
        integer_exponent = aval_of(y).dtype.kind in "iu"
        yf = convert_element_type_p.bind(y, new_dtype=aval_of(x).dtype) if integer_exponent else y
        slope = mul_p.bind(yf, pow_p.bind(x, sub_p.bind(yf, _like(1, x))))
        if integer_exponent:  # x^0 is the constant 1 for an integer 0: slope 0, also at x == 0 (JAX's rule)
            slope = select_n_p.bind(eq_p.bind(yf, _like(0, x)), slope, _like(0, x))
        # a float exponent keeps 0 * 0^-1 = NaN at x == y == 0, as JAX's rule does
        total = mul_p.bind(gx, slope)
    if not isinstance(gy, Zero) and aval_of(y).dtype.kind in "fc":  # x^y log x, zero where x == 0
        safe = select_n_p.bind(eq_p.bind(x, _like(0, x)), x, _like(1, x))
        term = mul_p.bind(gy, mul_p.bind(out, log_p.bind(safe)))
        total = term if isinstance(total, Zero) else add_p.bind(total, term)
    return out, total


pow_p.def_jvp(_pow_jvp)
pow_p.def_unsupported("transpose", "not linear")
pow_p.def_vmap(elementwise_rule(pow_p))
pow_p.lax_function = ("pow", True)

integer_pow_p = Primitive("integer_pow", params=("y",))


@integer_pow_p.def_shape
def _integer_pow_shape(x: TensorType, *, y: int) -> TensorType:
    check(isinstance(y, (int, np.integer)) and not isinstance(y, bool), "integer_pow",
          f"the exponent must be a Python int, got {y!r}")
    check_kind("integer_pow", x.dtype, "iufc")
    check(y >= 0 or x.dtype.kind in "fc", "integer_pow",
          f"integers cannot be raised to negative powers, got {short_name(x.dtype)} ** {y}")
    return x


@integer_pow_p.def_impl
def _integer_pow_impl(x, *, y):
    # binary exponentiation, as XLA lowers it: x^13 = x * x^4 * x^8; a negative power is 1 / x^|y|
    n, power, acc = abs(int(y)), x, None
    while n:
        if n & 1:
            acc = power if acc is None else acc * power
        n >>= 1
        if n:
            power = power * power
    if acc is None:
        return np.ones_like(x)
    return np.reciprocal(acc) if y < 0 else acc


def _integer_pow_jvp(primals, tangents, *, y):
    (x,), (g,) = primals, tangents
    out = integer_pow_p.bind(x, y=y)
    if y == 0:
        return out, Zero(aval_of(out).update(weak_type=False))
    slope = _like(y, x) if y == 1 else mul_p.bind(_like(y, x), integer_pow_p.bind(x, y=y - 1))
    return out, mul_p.bind(g, slope)


integer_pow_p.def_jvp(_integer_pow_jvp)
integer_pow_p.def_unsupported("transpose", "not linear")
integer_pow_p.def_vmap(elementwise_rule(integer_pow_p))


round_p = Primitive("round", params=("rounding_method",))


@round_p.def_shape
def _round_shape(x: TensorType, *, rounding_method: int = 0) -> TensorType:
    check_kind("round", x.dtype, "f")
    check(rounding_method in (0, 1), "round", "rounding_method must be 0 (AWAY_FROM_ZERO) or 1 (TO_NEAREST_EVEN), "
          f"got {rounding_method!r}", kind="value")
    return x


round_p.def_impl(lambda x, *, rounding_method=0: _round(x, rounding_method))
_zero_derivative(round_p, why="piecewise constant: the derivative is zero")
round_p.def_vmap(elementwise_rule(round_p))

# -- transcendental functions ----------------------------------------------------------------------------
exp_p = unary("exp", np.exp, jvp=lambda g, x, y: g * y)
exp2_p = unary("exp2", np.exp2, jvp=lambda g, x, y: g * (y * math.log(2)))
log_p = unary("log", np.log, jvp=lambda g, x, y: g / x)
log1p_p = unary("log1p", np.log1p, jvp=lambda g, x, y: g / (1 + x))
expm1_p = unary("expm1", np.expm1, jvp=lambda g, x, y: g * (y + 1))
tanh_p = unary("tanh", np.tanh, jvp=lambda g, x, y: g * (1 - y * y))  # d tanh = 1 - tanh^2
logistic_p = unary("logistic", special.logistic, jvp=lambda g, x, y: g * (y * (1 - y)))
sin_p = unary("sin", np.sin, jvp=lambda g, x, y: g * cos_p.bind(x))
cos_p = unary("cos", np.cos, jvp=lambda g, x, y: g * -sin_p.bind(x))
tan_p = unary("tan", np.tan, jvp=lambda g, x, y: g * (1 + y * y))
asin_p = unary("asin", np.arcsin, jvp=lambda g, x, y: g * rsqrt_p.bind(1 - x * x))
acos_p = unary("acos", np.arccos, jvp=lambda g, x, y: -g * rsqrt_p.bind(1 - x * x))
atan_p = unary("atan", np.arctan, jvp=lambda g, x, y: g / (1 + x * x))
sinh_p = unary("sinh", np.sinh, jvp=lambda g, x, y: g * cosh_p.bind(x))
cosh_p = unary("cosh", np.cosh, jvp=lambda g, x, y: g * sinh_p.bind(x))
asinh_p = unary("asinh", np.arcsinh, jvp=lambda g, x, y: g * rsqrt_p.bind(x * x + 1))
acosh_p = unary("acosh", np.arccosh, jvp=lambda g, x, y: g * rsqrt_p.bind(x * x - 1))
atanh_p = unary("atanh", np.arctanh, jvp=lambda g, x, y: g / (1 - x * x))
sqrt_p = unary("sqrt", np.sqrt, jvp=lambda g, x, y: g / (2 * y))
rsqrt_p = unary("rsqrt", lambda x: np.reciprocal(np.sqrt(x)), jvp=lambda g, x, y: g * (-0.5 * y / x))
cbrt_p = unary("cbrt", np.cbrt, kinds="f", jvp=lambda g, x, y: g * (1 / 3 * integer_pow_p.bind(y, y=-2)))  # as JAX
erf_p = unary("erf", special.erf, kinds="f", jvp=lambda g, x, y: g * (2 / math.sqrt(math.pi) * exp_p.bind(-x * x)))
erfc_p = unary("erfc", special.erfc, kinds="f", jvp=lambda g, x, y: g * (-2 / math.sqrt(math.pi) * exp_p.bind(-x * x)))
erf_inv_p = unary("erf_inv", special.erf_inv, kinds="f",
                  jvp=lambda g, x, y: g * (math.sqrt(math.pi) / 2 * exp_p.bind(y * y)))
lgamma_p = unary("lgamma", special.lgamma, kinds="f", jvp=lambda g, x, y: g * digamma_p.bind(x))
digamma_p = unary("digamma", special.digamma, kinds="f",
                  jvp=lambda g, x, y: g * polygamma_p.bind(np.ones(aval_of(x).shape, aval_of(x).dtype), x))
polygamma_p = binary("polygamma", special.polygamma, kinds="f",  # d psi^(m)(x)/dx = psi^(m+1)(x); m is an order
                     jvp=(None, lambda g, m, x: g * polygamma_p.bind(m + 1, x)))
polygamma_p.def_unsupported("transpose", "not linear")

# -- comparisons and logic -------------------------------------------------------------------------------
eq_p = comparison("eq", np.equal, "biufc")
ne_p = comparison("ne", np.not_equal, "biufc")
lt_p = comparison("lt", np.less, "biuf")
le_p = comparison("le", np.less_equal, "biuf")
gt_p = comparison("gt", np.greater, "biuf")
ge_p = comparison("ge", np.greater_equal, "biuf")
not_p = unary("not", np.invert, kinds="biu")
and_p = binary("and", np.bitwise_and, kinds="biu")
or_p = binary("or", np.bitwise_or, kinds="biu")
xor_p = binary("xor", np.bitwise_xor, kinds="biu")
population_count_p = unary("population_count", lambda x: special.population_count(x), kinds="iu")
clz_p = unary("clz", special.count_leading_zeros, kinds="iu")
for _p in (not_p, and_p, or_p, xor_p, population_count_p, clz_p):
    _zero_derivative(_p, why="bit operations act on integers and bools: zero derivative")


def _shift(direction: str) -> Callable:
    """Shifts by amounts outside [0, bits) give 0, or the sign fill for an arithmetic right shift. Shifts
    work on the bit pattern: arithmetic ones read it as signed, even in an unsigned dtype, as XLA does."""

    def impl(x, y):
        bits = x.dtype.itemsize * 8
        unsigned, signed = np.dtype(f"u{x.dtype.itemsize}"), np.dtype(f"i{x.dtype.itemsize}")
        in_range = (y >= 0) & (y < bits) if x.dtype.kind == "i" else y < bits
        amount = np.where(in_range, y, 0).astype(unsigned)
        if direction == "right_arithmetic":
            pattern = np.asarray(x).view(signed)  # same itemsize: any layout views (and 0-d stays 0-d)
            shifted = np.right_shift(pattern, amount.astype(signed))
            outside = np.where(pattern < 0, signed.type(-1), signed.type(0))
        else:  # on the unsigned pattern, so that left shifts wrap and logical shifts fill with zeros
            pattern = np.asarray(x).view(unsigned)
            shifted = np.left_shift(pattern, amount) if direction == "left" else np.right_shift(pattern, amount)
            outside = np.zeros_like(pattern)
        return np.where(in_range, shifted, outside).view(x.dtype)

    return impl


shift_left_p = binary("shift_left", _shift("left"), kinds="iu")
shift_right_arithmetic_p = binary("shift_right_arithmetic", _shift("right_arithmetic"), kinds="iu")
shift_right_logical_p = binary("shift_right_logical", _shift("right_logical"), kinds="iu")
for _p in (shift_left_p, shift_right_arithmetic_p, shift_right_logical_p):
    _zero_derivative(_p, why="bit shifts act on integers: zero derivative")


def _mulhi(x, y):
    """The high half of the bits of each product: floor(x * y / 2**bits), in x's dtype."""
    bits = x.dtype.itemsize * 8
    if bits <= 32:  # exact in 64 bits
        wide = np.int64 if x.dtype.kind == "i" else np.uint64
        return (np.asarray(x).astype(wide) * np.asarray(y).astype(wide) >> wide(bits)).astype(x.dtype)
    # 64 bits: the unsigned product from 32-bit halves (no partial sum overflows), then the signed correction
    a, b = np.asarray(x).view(np.uint64), np.asarray(y).view(np.uint64)
    low, half = np.uint64(0xFFFFFFFF), np.uint64(32)
    with np.errstate(over="ignore"):
        a_lo, a_hi, b_lo, b_hi = a & low, a >> half, b & low, b >> half
        hi_lo = a_hi * b_lo
        cross = ((a_lo * b_lo) >> half) + (hi_lo & low) + a_lo * b_hi
        high = a_hi * b_hi + (hi_lo >> half) + (cross >> half)
        if x.dtype.kind == "i":  # (a signed operand below 0 stands for itself + 2**64: take the other away)
            high = high - np.where(np.asarray(x) < 0, b, 0).astype(np.uint64) \
                - np.where(np.asarray(y) < 0, a, 0).astype(np.uint64)
    return np.asarray(high).view(x.dtype)


mulhi_p = binary("mulhi", _mulhi, kinds="iu")
_zero_derivative(mulhi_p, why="integer products: zero derivative")


# -- complex numbers -------------------------------------------------------------------------------------
def _complex(x, y):
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), complex_dtype(x.dtype))
    out.real, out.imag = x, y  # not x + 1j * y, which turns an infinite y into a NaN real part
    return out


complex_p = binary("complex", _complex, kinds="f", result=complex_dtype)
complex_p.def_linear(lambda ct, x, y: [real_p.bind(ct) if is_undefined(x) else None,
                                       imag_p.bind(neg_p.bind(ct)) if is_undefined(y) else None])
real_p = unary("real", np.real, kinds="c", result=real_dtype)
real_p.def_linear(lambda ct, x: [complex_p.bind(ct, _like(0, ct))])
imag_p = unary("imag", np.imag, kinds="c", result=real_dtype)
imag_p.def_linear(lambda ct, x: [complex_p.bind(_like(0, ct), neg_p.bind(ct))])
conj_p = unary("conj", lambda x: np.conj(x).astype(complex_dtype(x.dtype) if x.dtype.kind == "f" else x.dtype),
               kinds="fc", result=lambda d: d if d.kind == "c" else complex_dtype(d))
conj_p.def_linear(lambda ct, x: [conj_p.bind(ct) if x.aval.dtype.kind == "c" else real_p.bind(ct)])

# -- selection and conversion ----------------------------------------------------------------------------
select_n_p = Primitive("select_n")


@select_n_p.def_shape
def _select_n_shape(which: TensorType, *cases: TensorType) -> TensorType:
    check(len(cases) >= 1, "select_n", "needs at least one case")
    check_kind("select_n", which.dtype, "biu", "selectors")
    check(which.dtype.kind != "b" or len(cases) <= 2, "select_n",
          f"a bool selector chooses between at most 2 cases, got {len(cases)}")
    check_same("select_n", cases, "biufc")
    check(which.shape in ((), cases[0].shape), "select_n",
          f"the selector has shape {which.shape}; it must be () or the cases' shape {cases[0].shape}", kind="value")
    return cases[0].update(weak_type=all(c.weak_type for c in cases))


@select_n_p.def_impl
def _select_n_impl(which, *cases):
    # case i where which == i; out-of-range selectors clamp to the first or last case, as XLA's do
    if len(cases) == 2 and which.dtype == np.bool_ and which.shape in ((), cases[0].shape):
        return np.where(which, cases[1], cases[0])
    out = np.broadcast_to(cases[0], np.broadcast_shapes(which.shape, cases[0].shape))
    for i, case in enumerate(cases[1:], start=1):
        out = np.where(which >= i, case, out)
    return out




def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    if all(isinstance(t, Zero) for t in tangents[1:]):
        return out, Zero(aval_of(out).update(weak_type=False))
    return out, select_n_p.bind(which, *(zeros(aval_of(c)) if isinstance(t, Zero) else t
                                         for c, t in zip(cases, tangents[1:])))


def _select_n_transpose(ct, which, *cases):
    zero = zeros(aval_of(ct))
    return [None] + [select_n_p.bind(which, *(ct if j == i else zero for j in range(len(cases))))
                     if is_undefined(case) else None for i, case in enumerate(cases)]


def _scalar_operands_vmap(prim: Primitive, may_be_scalar: tuple[int, ...]) -> Callable:
    """Batching for ``select_n`` and ``clamp``, whose operands have the result's shape, except those at
    ``may_be_scalar``, which may be scalars. The shaped operands meet at one batch axis (the first batched
    operand's that must be shaped, else the first batched shaped one's; unbatched ones are broadcast along
    it). An unbatched scalar stays a scalar; a batched one (a value per example) is broadcast along the
    batch axis to the result's shape."""

    def rule(args, dims):
        broadcast_in_dim_p = registered("broadcast_in_dim")  # (shape.py is above this family)
        size = axis_size(args, dims)
        examples = [aval_of(x).shape if d is None else aval_of(x).shape[:d] + aval_of(x).shape[d + 1:]
                    for x, d in zip(args, dims)]
        shape = max(examples, key=len)  # the result's, for one example
        shaped = [(i in may_be_scalar, i, d) for i, (d, e) in enumerate(zip(dims, examples))
                  if d is not None and e == shape]
        at = min(shaped)[2] if shaped else 0
        moved = []
        for i, (x, d, example) in enumerate(zip(args, dims, examples)):
            if d is None and example == () and i in may_be_scalar:
                moved.append(x)
            elif example == shape:
                moved.append(move_batch_axis(x, d, size, at))
            else:
                batched = (*shape[:at], size, *shape[at:])
                moved.append(broadcast_in_dim_p.bind(x, shape=batched, broadcast_dimensions=(at,)))
        return prim.bind(*moved), at

    return rule


select_n_p.def_jvp(_select_n_jvp)
select_n_p.def_transpose(_select_n_transpose)
select_n_p.def_vmap(_scalar_operands_vmap(select_n_p, may_be_scalar=(0,)))

clamp_p = Primitive("clamp")


@clamp_p.def_shape
def _clamp_shape(lo: TensorType, x: TensorType, hi: TensorType) -> TensorType:
    for name, bound in (("min", lo), ("max", hi)):
        check(bound.dtype == x.dtype, "clamp",
              f"{name} has dtype {short_name(bound.dtype)} but the operand has {short_name(x.dtype)}")
        check(bound.shape in ((), x.shape), "clamp",
              f"{name} has shape {bound.shape}; it must be () or the operand's {x.shape}", kind="value")
    check_kind("clamp", x.dtype, "biufc")
    return x.update(weak_type=lo.weak_type and x.weak_type and hi.weak_type)


clamp_p.def_impl(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))


def _clamp_jvp(primals, tangents):
    """clamp(lo, x, hi) = min(max(x, lo), hi) passes on the slope of the operand it returns, as JAX's rule: x's
    strictly inside the bounds, lo's where x < lo < hi, hi's where hi < x. At a bound no operand gets a slope;
    where the bounds cross (lo >= hi, the result is hi) only hi does, and only where hi < x."""
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    total = Zero(aval_of(out).update(weak_type=False))
    zero = _like(0, x)

    def full(bound):  # a scalar bound at x's shape (built only for the tangents asked for)
        return _full(bound, x) if not aval_of(bound).shape else bound

    picks = (lambda: and_p.bind(gt_p.bind(full(lo), x), lt_p.bind(full(lo), full(hi))),
             lambda: and_p.bind(gt_p.bind(x, full(lo)), lt_p.bind(x, full(hi))),
             lambda: lt_p.bind(full(hi), x))
    for g, picked in zip(tangents, picks):
        if isinstance(g, Zero):
            continue
        g = _full(g, x) if aval_of(g).shape != aval_of(x).shape else g
        term = select_n_p.bind(picked(), zero, g)
        total = term if isinstance(total, Zero) else add_p.bind(total, term)
    return out, total


clamp_p.def_jvp(_clamp_jvp)
clamp_p.def_unsupported("transpose", "not linear")
clamp_p.def_vmap(_scalar_operands_vmap(clamp_p, may_be_scalar=(0, 2)))

convert_element_type_p = Primitive("convert_element_type", params=("new_dtype", "weak_type"))


@convert_element_type_p.def_shape
def _convert_shape(x: TensorType, *, new_dtype, weak_type: bool = False) -> TensorType:
    new_dtype = np.dtype(new_dtype)
    check(new_dtype.kind in "biufc", "convert_element_type", f"cannot convert to {new_dtype}")
    return TensorType(new_dtype, x.shape, bool(weak_type))


@convert_element_type_p.def_impl
def _convert_impl(x, *, new_dtype, weak_type=False):
    new_dtype = np.dtype(new_dtype)
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = np.real(x)  # XLA drops the imaginary part, also when converting to bool
    if x.dtype.kind != "f" or new_dtype.kind not in "iu":
        return x.astype(new_dtype)
    # float -> integer, as XLA converts: round toward zero, NaN -> 0, saturate at the integer's range
    info = np.iinfo(new_dtype)
    t = np.trunc(np.where(np.isnan(x), 0, x).astype(np.float64))
    too_big, too_small = t >= float(info.max), t <= float(info.min)
    inside = np.where(too_big | too_small, 0, t).astype(new_dtype)
    return np.where(too_big, info.max, np.where(too_small, info.min, inside)).astype(new_dtype)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (g,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if isinstance(g, Zero) or np.dtype(new_dtype).kind not in "fc" or aval_of(x).dtype.kind not in "fc":
        return out, Zero(aval_of(out).update(weak_type=False))
    return out, convert_element_type_p.bind(g, new_dtype=new_dtype, weak_type=False)


def _convert_transpose(ct, x, *, new_dtype, weak_type=False):
    return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=False)]


convert_element_type_p.def_jvp(_convert_jvp)
convert_element_type_p.def_transpose(_convert_transpose)
convert_element_type_p.def_vmap(elementwise_rule(convert_element_type_p))

bitcast_convert_type_p = Primitive("bitcast_convert_type", params=("new_dtype",))
_zero_derivative(bitcast_convert_type_p, why="reinterpreting bits has zero derivative, as in JAX")


@bitcast_convert_type_p.def_shape
def _bitcast_shape(x: TensorType, *, new_dtype) -> TensorType:
    new_dtype = np.dtype(new_dtype)
    name = "bitcast_convert_type"
    check(new_dtype == x.dtype or (new_dtype.kind not in "bc" and x.dtype.kind not in "bc"), name,
          f"cannot reinterpret {short_name(x.dtype)} as {short_name(new_dtype)}: bool and complex values can "
          "only be bitcast to their own dtype")
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if old == new:
        return TensorType(new_dtype, x.shape)
    if old > new:
        return TensorType(new_dtype, (*x.shape, old // new))
    check(x.ndim >= 1 and x.shape[-1] == new // old, name,
          f"converting {x} to {new_dtype.name} needs a last axis of size {new // old}", kind="value")
    return TensorType(new_dtype, x.shape[:-1])


@bitcast_convert_type_p.def_impl
def _bitcast_impl(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    out_shape = _bitcast_shape(TensorType(x.dtype, x.shape), new_dtype=new_dtype).shape
    return np.ascontiguousarray(x).view(new_dtype).reshape(out_shape)


@bitcast_convert_type_p.def_vmap
def _bitcast_vmap(args, dims, *, new_dtype):
    """Elementwise, except that items joined into a wider one use up the last axis: a batch axis there moves
    to the front first. (Items split into narrower ones make a new last axis, after the batch axis.)"""
    (x,), (dim,) = args, dims
    aval = aval_of(x)
    if dim == aval.ndim - 1 and np.dtype(new_dtype).itemsize > aval.dtype.itemsize:
        x, dim = moveaxis(x, dim, 0), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), dim


register_module(globals())
