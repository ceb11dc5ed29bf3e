"""``lax``'s elementwise functions: arithmetic, math, comparisons, bit operations, selects and conversions.

Signatures are JAX's. lax is strict about dtypes: array operands must share one dtype (a mismatch is a
``TypeError`` naming both), and nothing is promoted. A Python scalar takes the dtype of the arrays it
meets, when its value fits that kind (an int goes into any number dtype, a float into floats and complex,
a complex into complex); its result stays weakly typed when every operand is. Shapes are broadcast as JAX's
lax does: 0-d operands go anywhere, other operands need equal ranks and sizes that match or are 1.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.lax._checks import unchanged as _unchanged
from srcjax.runtime.numpy._core import aval, broadcast_to, convert, is_arraylike
from srcjax.transpiler.primitives import elementwise as ew

__all__ = [
    "polygamma", "AccuracyMode", "Tolerance",
    "RoundingMethod", "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
    "bitcast_convert_type", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "cbrt", "ceil", "clamp",
    "clz", "complex", "conj", "convert_element_type", "cos", "cosh", "digamma", "div", "eq", "erf", "erf_inv",
    "erfc", "exp", "exp2", "expm1", "floor", "ge", "gt", "imag", "integer_pow", "is_finite", "le", "lgamma", "log",
    "log1p", "logistic", "lt", "max", "min", "mul", "mulhi", "ne", "neg", "nextafter", "population_count", "pow",
    "real", "reciprocal", "reduce_precision", "rem", "round", "rsqrt", "select", "select_n", "shift_left",
    "shift_right_arithmetic", "dtype", "igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc",
    "bessel_i0e", "bessel_i1e", "zeta",
    "shift_right_logical", "sign", "sin", "sinh", "sqrt", "square", "sub", "tan", "tanh",
]

_PY_SCALARS = (bool, int, float, complex)
# The dtype kinds a Python scalar may take on: its value keeps its meaning there.
_SCALAR_FITS = {bool: "b", int: "iufc", float: "fc", complex: "c"}


class RoundingMethod(enum.IntEnum):
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def _is_python_scalar(x: Any) -> bool:
    return isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic)


def _check_operands(name: str, args: tuple[Any, ...]) -> None:
    for i, x in enumerate(args):
        if not is_arraylike(x):
            hint = " (convert it with jnp.asarray first)" if isinstance(x, (list, tuple)) else ""
            raise TypeError(f"lax.{name}: argument {i} is a {type(x).__name__}, not an array or a scalar{hint}")


def _scalar_as(name: str, x: Any, dtype: np.dtype, all_dtypes: list[np.dtype]) -> Any:
    """A Python scalar as a weakly typed value of ``dtype``, if its value means the same there."""
    kind = type(x) if type(x) in _SCALAR_FITS else next(t for t in _SCALAR_FITS if isinstance(x, t))
    if dtype.kind not in _SCALAR_FITS[kind]:
        names = ", ".join(d.name for d in all_dtypes)
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {names} (a Python "
                        f"{kind.__name__} cannot take the dtype {dtype.name}; jnp.{name} promotes its arguments)")
    if kind is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"lax.{name}: Python int {x} does not fit in {dtype.name}")
    return convert(x, dtype, weak_type=True)


def _unify(name: str, args: tuple[Any, ...]) -> list[Any]:
    """lax's operand rule: arrays share one dtype; Python scalars take it (see the module docstring)."""
    _check_operands(name, args)
    typed = [aval(x).dtype for x in args if not _is_python_scalar(x)]
    if not typed:  # only Python scalars: each has its default (weak) dtype, and those must agree
        typed = [aval(x).dtype for x in args]
    if any(d != typed[0] for d in typed):
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(aval(x).dtype.name for x in args)} (jnp.{name} promotes its arguments)")
    return [_scalar_as(name, x, typed[0], [aval(a).dtype for a in args]) if _is_python_scalar(x) else x
            for x in args]


def _broadcast(name: str, args: list[Any]) -> list[Any]:
    """JAX's lax broadcasting: 0-d operands broadcast anywhere, the others need one rank and sizes n or 1."""
    shapes = [aval(x).shape for x in args]
    ranks = {len(s) for s in shapes if s}
    if len(ranks) > 1:
        raise TypeError(f"lax.{name}: arrays must have the same number of dimensions, got shapes "
                        f"{', '.join(map(str, shapes))} (lax does not add leading axes; use jnp.{name} or "
                        "lax.broadcast_in_dim)")
    if not ranks:
        return args
    target = []
    for sizes in zip(*(s for s in shapes if s)):
        sizes = set(sizes) - {1}
        if len(sizes) > 1:
            raise TypeError(f"lax.{name}: incompatible shapes {', '.join(map(str, shapes))}")
        target.append(sizes.pop() if sizes else 1)
    return [broadcast_to(x, tuple(target)) if aval(x).shape != tuple(target) else x for x in args]


def _nary(prim, name: str, *args: Any) -> Any:
    return prim.bind(*_broadcast(name, _unify(name, args)))


def _unary(prim, name: str, x: Any) -> Any:
    _check_operands(name, (x,))
    return prim.bind(x)


# -- arithmetic ------------------------------------------------------------------------------------------
def add(x: Any, y: Any) -> Any:
    return _nary(ew.add_p, "add", x, y)


def sub(x: Any, y: Any) -> Any:
    return _nary(ew.sub_p, "sub", x, y)


def mul(x: Any, y: Any, *, out_dtype: Any = None) -> Any:
    if out_dtype is not None:  # multiply in ``out_dtype`` (e.g. int8 operands, an int32 product)
        want = dtypes.canonicalize_dtype(dtypes.to_dtype(out_dtype))
        x, y = (v if _is_python_scalar(v) else convert_element_type(v, want) for v in (x, y))
    return _nary(ew.mul_p, "mul", x, y)


def div(x: Any, y: Any) -> Any:
    """x / y; integers round toward zero."""
    return _nary(ew.div_p, "div", x, y)


def rem(x: Any, y: Any) -> Any:
    """The remainder of ``div``: it has the sign of ``x``."""
    return _nary(ew.rem_p, "rem", x, y)


def pow(x: Any, y: Any) -> Any:
    """x ** y for an inexact ``x``; ``y`` has ``x``'s dtype or an integer dtype."""
    _check_operands("pow", (x, y))
    y_is_int = (isinstance(y, int) and not isinstance(y, bool)) or (
        not _is_python_scalar(y) and aval(y).dtype.kind in "iu")
    if y_is_int:
        x = x if not _is_python_scalar(x) else convert(x, aval(x).dtype, weak_type=True)
        y = y if not _is_python_scalar(y) else convert(y, aval(y).dtype, weak_type=True)
        return ew.pow_p.bind(*_broadcast("pow", [x, y]))
    return _nary(ew.pow_p, "pow", x, y)


def integer_pow(x: Any, y: int) -> Any:
    return _unary_with(ew.integer_pow_p, "integer_pow", x, y=y)


def _unary_with(prim, name: str, x: Any, **params: Any) -> Any:
    _check_operands(name, (x,))
    return prim.bind(x, **params)


def square(x: Any) -> Any:
    return _unary(ew.square_p, "square", x)


def reciprocal(x: Any) -> Any:
    return integer_pow(x, -1)


def neg(x: Any) -> Any:
    return _unary(ew.neg_p, "neg", x)


def abs(x: Any) -> Any:  # noqa: A001 - lax's name
    return _unary(ew.abs_p, "abs", x)


def sign(x: Any) -> Any:
    return _unary(ew.sign_p, "sign", x)


def floor(x: Any) -> Any:
    return _unary(ew.floor_p, "floor", x)


def ceil(x: Any) -> Any:
    return _unary(ew.ceil_p, "ceil", x)


def round(x: Any, rounding_method: Any = RoundingMethod.AWAY_FROM_ZERO) -> Any:  # noqa: A001 - lax's name
    try:
        method = RoundingMethod(rounding_method)
    except ValueError:
        raise ValueError(f"lax.round: rounding_method must be a lax.RoundingMethod, got {rounding_method!r}") from None
    return _unary_with(ew.round_p, "round", x, rounding_method=int(method))


def max(x: Any, y: Any) -> Any:  # noqa: A001 - lax's name
    return _nary(ew.max_p, "max", x, y)


def min(x: Any, y: Any) -> Any:  # noqa: A001 - lax's name
    return _nary(ew.min_p, "min", x, y)


def nextafter(x1: Any, x2: Any) -> Any:
    return _nary(ew.nextafter_p, "nextafter", x1, x2)


def atan2(x: Any, y: Any) -> Any:
    return _nary(ew.atan2_p, "atan2", x, y)


# -- transcendental functions ---------------------------------------------------------------------------
class Tolerance:
    """The error a transcendental function may make: at most two of ``atol``, ``rtol`` and ``ulps``."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps


class AccuracyMode(enum.Enum):
    HIGHEST = 1
    DEFAULT = 2


def _accurate(prim, name: str, x: Any, accuracy: Any) -> Any:
    """``prim(x)``; ``accuracy`` picks between implementations where a backend has several (XLA's CPU backend has
    one: srcjax's, like it, has one), so it is only checked."""
    if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")
    return _unary(prim, name, x)


def exp(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.exp_p, "exp", x, accuracy)


def exp2(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.exp2_p, "exp2", x, accuracy)


def log(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.log_p, "log", x, accuracy)


def log1p(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.log1p_p, "log1p", x, accuracy)


def expm1(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.expm1_p, "expm1", x, accuracy)


def tanh(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.tanh_p, "tanh", x, accuracy)


def logistic(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.logistic_p, "logistic", x, accuracy)


def sin(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.sin_p, "sin", x, accuracy)


def cos(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.cos_p, "cos", x, accuracy)


def tan(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.tan_p, "tan", x, accuracy)


def sqrt(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.sqrt_p, "sqrt", x, accuracy)


def rsqrt(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.rsqrt_p, "rsqrt", x, accuracy)


def cbrt(x: Any, *, accuracy: Tolerance | AccuracyMode | None = None) -> Any:
    return _accurate(ew.cbrt_p, "cbrt", x, accuracy)


def asin(x: Any) -> Any:
    return _unary(ew.asin_p, "asin", x)


def acos(x: Any) -> Any:
    return _unary(ew.acos_p, "acos", x)


def atan(x: Any) -> Any:
    return _unary(ew.atan_p, "atan", x)


def sinh(x: Any) -> Any:
    return _unary(ew.sinh_p, "sinh", x)


def cosh(x: Any) -> Any:
    return _unary(ew.cosh_p, "cosh", x)


def asinh(x: Any) -> Any:
    return _unary(ew.asinh_p, "asinh", x)


def acosh(x: Any) -> Any:
    return _unary(ew.acosh_p, "acosh", x)


def atanh(x: Any) -> Any:
    return _unary(ew.atanh_p, "atanh", x)


def erf(x: Any) -> Any:
    return _unary(ew.erf_p, "erf", x)


def erfc(x: Any) -> Any:
    return _unary(ew.erfc_p, "erfc", x)


def erf_inv(x: Any) -> Any:
    return _unary(ew.erf_inv_p, "erf_inv", x)


def lgamma(x: Any) -> Any:
    return _unary(ew.lgamma_p, "lgamma", x)


def digamma(x: Any) -> Any:
    return _unary(ew.digamma_p, "digamma", x)


def polygamma(m: Any, x: Any) -> Any:
    """The m-th derivative of digamma (``m`` an integer-valued array or number, promoted to ``x``'s dtype)."""
    from srcjax.runtime.numpy import _core

    m, x = _core.promote_args_inexact("polygamma", m, x)
    return ew.polygamma_p.bind(m, x)


def is_finite(x: Any) -> Any:
    return _unary(ew.is_finite_p, "is_finite", x)


# -- comparisons and bit operations ----------------------------------------------------------------------
def eq(x: Any, y: Any) -> Any:
    return _nary(ew.eq_p, "eq", x, y)


def ne(x: Any, y: Any) -> Any:
    return _nary(ew.ne_p, "ne", x, y)


def lt(x: Any, y: Any) -> Any:
    return _nary(ew.lt_p, "lt", x, y)


def le(x: Any, y: Any) -> Any:
    return _nary(ew.le_p, "le", x, y)


def gt(x: Any, y: Any) -> Any:
    return _nary(ew.gt_p, "gt", x, y)


def ge(x: Any, y: Any) -> Any:
    return _nary(ew.ge_p, "ge", x, y)


def bitwise_and(x: Any, y: Any) -> Any:
    return _nary(ew.and_p, "bitwise_and", x, y)


def bitwise_or(x: Any, y: Any) -> Any:
    return _nary(ew.or_p, "bitwise_or", x, y)


def bitwise_xor(x: Any, y: Any) -> Any:
    return _nary(ew.xor_p, "bitwise_xor", x, y)


def bitwise_not(x: Any) -> Any:
    return _unary(ew.not_p, "bitwise_not", x)


def population_count(x: Any) -> Any:
    return _unary(ew.population_count_p, "population_count", x)


def clz(x: Any) -> Any:
    return _unary(ew.clz_p, "clz", x)


def mulhi(x: Any, y: Any) -> Any:
    """The high half of the bits of ``x * y`` (integers): ``floor(x * y / 2**bits)``."""
    return _nary(ew.mulhi_p, "mulhi", x, y)


def shift_left(x: Any, y: Any) -> Any:
    return _nary(ew.shift_left_p, "shift_left", x, y)


def shift_right_logical(x: Any, y: Any) -> Any:
    return _nary(ew.shift_right_logical_p, "shift_right_logical", x, y)


def shift_right_arithmetic(x: Any, y: Any) -> Any:
    return _nary(ew.shift_right_arithmetic_p, "shift_right_arithmetic", x, y)


# -- selection -------------------------------------------------------------------------------------------
def select_n(which: Any, *cases: Any) -> Any:
    """cases[which] elementwise; ``which`` is bool (two cases) or integer, of shape () or the cases'."""
    if not cases:
        raise ValueError("lax.select_n: needs at least one case")
    _check_operands("select_n", (which,))
    cases = _broadcast("select_n", _unify("select_n", cases))
    which_shape = aval(which).shape
    if which_shape and which_shape != aval(cases[0]).shape:
        cases = _broadcast("select_n", [which, *cases])[1:]
    return ew.select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """on_true where ``pred`` holds, else on_false."""
    return select_n(pred, on_false, on_true)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002 - lax's names
    """x limited to [min, max]; the bounds are scalars or have x's shape."""
    return ew.clamp_p.bind(*_unify("clamp", (min, x, max)))


# -- complex numbers -------------------------------------------------------------------------------------
def complex(x: Any, y: Any) -> Any:  # noqa: A001 - lax's name
    """x + i y."""
    return _nary(ew.complex_p, "complex", x, y)


def real(x: Any) -> Any:
    return _unary(ew.real_p, "real", x)


def imag(x: Any) -> Any:
    return _unary(ew.imag_p, "imag", x)


def conj(x: Any) -> Any:
    return _unary(ew.conj_p, "conj", x)


# -- conversion ------------------------------------------------------------------------------------------
def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """``operand`` as ``new_dtype`` (canonicalised: float64 is float32 unless x64 is on); never weak."""
    _check_operands("convert_element_type", (operand,))
    want = dtypes.check_user_dtype(new_dtype, "convert_element_type")
    typ = aval(operand)
    if typ.dtype.kind == "c" and want.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                      stacklevel=2)
    if typ.dtype == want and not typ.weak_type and not _is_python_scalar(operand):
        return _unchanged(operand)
    if _is_python_scalar(operand):  # through its own weak dtype, so a float keeps XLA's conversion rules
        operand = convert(operand, typ.dtype, weak_type=True)
    return ew.convert_element_type_p.bind(operand, new_dtype=want, weak_type=False)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """The bits of ``operand`` read as ``new_dtype``; a narrower type adds a last axis, a wider one eats it."""
    _check_operands("bitcast_convert_type", (operand,))
    want = dtypes.canonicalize_dtype(dtypes.to_dtype(new_dtype))
    return ew.bitcast_convert_type_p.bind(operand, new_dtype=want)


def dtype(x: Any) -> np.dtype:
    """The canonical dtype of a value or a dtype-like (``float64`` is ``float32`` unless x64 is on)."""
    if is_arraylike(x) and not isinstance(x, type):
        return dtypes.canonicalize_dtype(aval(x).dtype)
    return dtypes.canonicalize_dtype(dtypes.to_dtype(x))


# (exponent bits, mantissa bits, unsigned integer of the same width) of the float dtypes
_FLOAT_FORMAT = {np.dtype(np.float16): (5, 10, np.uint16), np.dtype(np.float32): (8, 23, np.uint32),
                 np.dtype(np.float64): (11, 52, np.uint64)}


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """``operand`` rounded to a float format of ``exponent_bits`` and ``mantissa_bits``, kept in its own dtype:
    the mantissa rounded to nearest even, exponents beyond the format's range to infinity, those below its
    normal range to zero (no subnormals, as XLA's ReducePrecision); NaN stays NaN. Its derivative passes
    tangents through (JAX rounds them too, which differs only for a tangent the format cannot hold)."""
    import operator

    _check_operands("reduce_precision", (operand,))
    exponent_bits, mantissa_bits = operator.index(exponent_bits), operator.index(mantissa_bits)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"lax.reduce_precision: needs exponent_bits >= 1 and mantissa_bits >= 0, got "
                         f"{exponent_bits} and {mantissa_bits}")
    if not _reduce_precision:
        from srcjax.runtime.autodiff import custom_jvp

        rounded = custom_jvp(_round_to_format, nondiff_argnums=(1, 2))
        rounded.defjvp(lambda e, m, primals, tangents: (rounded(primals[0], e, m), tangents[0]))
        _reduce_precision.append(rounded)
    return _reduce_precision[0](operand, exponent_bits, mantissa_bits)


_reduce_precision: list = []  # reduce_precision's rounding as a custom_jvp function, made at the first call


def _round_to_format(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    typ = aval(operand)
    if typ.dtype == dtypes.bfloat16:
        source = (8, 7, np.uint16)
    elif typ.dtype in _FLOAT_FORMAT:
        source = _FLOAT_FORMAT[typ.dtype]
    else:
        raise TypeError(f"lax.reduce_precision: operand must be a floating point array, got {typ.dtype}")
    if _is_python_scalar(operand):
        operand = convert(operand, typ.dtype, weak_type=True)
    source_exponent, source_mantissa, uint = source
    if exponent_bits >= source_exponent and mantissa_bits >= source_mantissa:
        return _unchanged(operand)
    width = 1 + source_exponent + source_mantissa
    bits = bitcast_convert_type(operand, uint)
    u = lambda value: np.asarray(value, uint)  # noqa: E731 - unsigned constants of the operand's width
    if mantissa_bits < source_mantissa:
        dropped = source_mantissa - mantissa_bits
        last_kept = shift_right_logical(bitwise_and(bits, u(1 << dropped)), u(dropped))
        rounded = add(bits, add(last_kept, u((1 << (dropped - 1)) - 1)))
        bits = bitwise_and(rounded, u(((1 << width) - 1) ^ ((1 << dropped) - 1)))
    if exponent_bits < source_exponent:
        exponent_mask = ((1 << source_exponent) - 1) << source_mantissa
        sign = bitwise_and(bits, u(1 << (width - 1)))
        exponent = bitwise_and(bits, u(exponent_mask))
        bias, reduced_bias = (1 << (source_exponent - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        overflow = gt(exponent, u((bias + reduced_bias) << source_mantissa))
        underflow = le(exponent, u((bias - reduced_bias) << source_mantissa))
        bits = select(overflow, bitwise_or(sign, u(exponent_mask)), select(underflow, sign, bits))
    result = select(ne(operand, operand), operand, bitcast_convert_type(bits, typ.dtype))  # (NaN's payload may round)
    if typ.weak_type:
        result = convert(result, typ.dtype, weak_type=True)
    return result


# -- special functions (scipy.special's, under lax's names) ------------------------------------------------------
def _special() -> Any:
    from srcjax.runtime.scipy import special

    return special


def igamma(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x)."""
    return _special().gammainc(a, x)


def igammac(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _special().gammaincc(a, x)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """dP(a, x) / da."""
    a, x = _special()._inexact("igamma_grad_a", a, x)
    return _special().igamma_da(a, x)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """The derivative in ``a`` of a Gamma(a, 1) sample ``x`` held at its quantile: -(dP/da) / (dP/dx)."""
    a, x = _special()._inexact("random_gamma_grad", a, x)
    return _special().gamma_sample_grad(a, x)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function I_x(a, b)."""
    return _special().betainc(a, b, x)


def bessel_i0e(x: Any) -> Any:
    """exp(-|x|) I0(x)."""
    return _special().i0e(x)


def bessel_i1e(x: Any) -> Any:
    """exp(-|x|) I1(x)."""
    return _special().i1e(x)


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function sum_k (q + k)^-x."""
    return _special().zeta(x, q)
