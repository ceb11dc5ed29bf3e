"""Elementwise primitives: math, comparisons, logic and bit operations, selects and conversions.

Operands of an n-ary elementwise primitive have one shape and one dtype (``srcjax.lax`` and
``srcjax.numpy`` broadcast and promote before binding). The result is weakly typed only when every
operand is. Each primitive is one line through a family constructor; the ones with parameters or
unusual typing are written out below them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from transpiler.primitives import special
from transpiler.primitives.core import Primitive, check, register_module
from transpiler.types import TensorType, complex_dtype, real_dtype, short_name

# -- dtype classes ---------------------------------------------------------------------------------------
KINDS = {
    "float": "f",
    "inexact": "fc",
    "complex": "c",
    "number": "iufc",
    "signed": "ifc",
    "int": "iu",
    "int_or_bool": "iub",
    "real": "iuf",
    "any": "biufc",
    "real_or_bool": "biuf",
}


def _same_shape_and_dtype(name: str, types: tuple[TensorType, ...], kinds: str) -> None:
    first = types[0]
    for t in types[1:]:
        check(t.shape == first.shape, name, f"operands must have the same shape, got {[t.shape for t in types]}",
              kind="value")
        check(t.dtype == first.dtype, name,
              f"operands must have the same dtype, got {', '.join(short_name(t.dtype) for t in types)}")
    check(first.dtype.kind in KINDS[kinds], name, f"does not accept {first.dtype.name} operands ({kinds} only)")


def elementwise(name: str, impl: Callable, arity: int, *, kinds: str = "inexact",
                result: Callable[[np.dtype], np.dtype] | None = None, params: tuple[str, ...] = ()) -> Primitive:
    """A primitive applying ``impl`` elementwise; ``result`` maps the operand dtype to the result's."""
    prim = Primitive(name, params=params)

    def shape_rule(*types: TensorType, **kw) -> TensorType:
        check(len(types) == arity, name, f"takes {arity} operand(s), got {len(types)}")
        _same_shape_and_dtype(name, types, kinds)
        dtype = types[0].dtype if result is None else np.dtype(result(types[0].dtype))
        weak = all(t.weak_type for t in types) and dtype.kind != "b"
        return TensorType(dtype, types[0].shape, weak)

    prim.def_shape(shape_rule)
    prim.def_impl(impl)
    return prim


def unary(name: str, impl: Callable, **kw) -> Primitive:
    return elementwise(name, impl, 1, **kw)


def binary(name: str, impl: Callable, **kw) -> Primitive:
    return elementwise(name, impl, 2, **kw)


def comparison(name: str, impl: Callable) -> Primitive:
    prim = elementwise(name, impl, 2, kinds="any", result=lambda d: np.bool_)
    prim.mark_no_rule("jvp", "comparisons have zero derivative")
    return prim


def _to_bool(dtype) -> np.dtype:
    return np.dtype(np.bool_)


# -- arithmetic ------------------------------------------------------------------------------------------
neg_p = unary("neg", np.negative, kinds="number")
add_p = binary("add", np.add, kinds="number")
sub_p = binary("sub", np.subtract, kinds="number")
mul_p = binary("mul", np.multiply, kinds="number")


def _div_impl(x, y):
    if x.dtype.kind in "iu":  # C-style division, rounding toward zero, as XLA does
        q = np.floor_divide(x, np.where(y == 0, 1, y))
        fix = (np.remainder(x, np.where(y == 0, 1, y)) != 0) & ((x < 0) != (y < 0))
        return np.where(y == 0, -1 if x.dtype.kind == "i" else np.iinfo(x.dtype).max, q + fix).astype(x.dtype)
    return np.true_divide(x, y)


def _rem_impl(x, y):
    if x.dtype.kind in "iu":  # C-style remainder: the sign of the dividend
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, x, x - safe * _div_impl(x, safe)).astype(x.dtype)
    return np.fmod(x, y)


div_p = binary("div", _div_impl, kinds="number")
rem_p = binary("rem", _rem_impl, kinds="real")
max_p = binary("max", np.maximum, kinds="any")
min_p = binary("min", np.minimum, kinds="any")
pow_p = binary("pow", np.power, kinds="inexact")
atan2_p = binary("atan2", np.arctan2, kinds="float")
nextafter_p = binary("nextafter", np.nextafter, kinds="float")
abs_p = unary("abs", np.abs, kinds="signed", result=real_dtype)
sign_p = unary("sign", lambda x: np.sign(x) if x.dtype.kind != "c" else np.where(x == 0, 0, x / np.abs(x)),
               kinds="number")
floor_p = unary("floor", np.floor, kinds="float")
ceil_p = unary("ceil", np.ceil, kinds="float")
is_finite_p = unary("is_finite", np.isfinite, kinds="float", result=_to_bool)
is_finite_p.mark_no_rule("jvp", "is_finite has zero derivative")

integer_pow_p = Primitive("integer_pow", params=("y",))


@integer_pow_p.def_shape
def _integer_pow_shape(x: TensorType, *, y: int) -> TensorType:
    check(isinstance(y, (int, np.integer)), "integer_pow", f"exponent must be a Python int, got {y!r}")
    check(x.dtype.kind in "iufc", "integer_pow", f"does not accept {x.dtype.name} operands")
    check(y >= 0 or x.dtype.kind in "fc", "integer_pow", "integers cannot be raised to a negative power",
          kind="value")
    return x


@integer_pow_p.def_impl
def _integer_pow_impl(x, *, y):
    if y == 0:
        return np.ones_like(x)
    return np.power(x, x.dtype.type(y)) if y > 0 else np.reciprocal(np.power(x, x.dtype.type(-y)))


round_p = Primitive("round", params=("rounding_method",))


@round_p.def_shape
def _round_shape(x: TensorType, *, rounding_method: int = 0) -> TensorType:
    check(x.dtype.kind == "f", "round", f"does not accept {x.dtype.name} operands (float only)")
    check(rounding_method in (0, 1), "round", f"rounding_method must be 0 (away from zero) or 1 (to nearest even), "
          f"got {rounding_method!r}", kind="value")
    return x


@round_p.def_impl
def _round_impl(x, *, rounding_method=0):
    if rounding_method == 1:
        return np.round(x)
    return np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))


# -- transcendental functions ----------------------------------------------------------------------------
exp_p = unary("exp", np.exp)
exp2_p = unary("exp2", np.exp2)
log_p = unary("log", np.log)
log1p_p = unary("log1p", np.log1p)
expm1_p = unary("expm1", np.expm1)
tanh_p = unary("tanh", np.tanh)
logistic_p = unary("logistic", special.logistic)
sin_p = unary("sin", np.sin)
cos_p = unary("cos", np.cos)
tan_p = unary("tan", np.tan)
asin_p = unary("asin", np.arcsin)
acos_p = unary("acos", np.arccos)
atan_p = unary("atan", np.arctan)
sinh_p = unary("sinh", np.sinh)
cosh_p = unary("cosh", np.cosh)
asinh_p = unary("asinh", np.arcsinh)
acosh_p = unary("acosh", np.arccosh)
atanh_p = unary("atanh", np.arctanh)
sqrt_p = unary("sqrt", np.sqrt)
rsqrt_p = unary("rsqrt", lambda x: np.reciprocal(np.sqrt(x)))
cbrt_p = unary("cbrt", np.cbrt, kinds="float")
erf_p = unary("erf", special.erf, kinds="float")
erfc_p = unary("erfc", special.erfc, kinds="float")
erf_inv_p = unary("erf_inv", special.erf_inv, kinds="float")
lgamma_p = unary("lgamma", special.lgamma, kinds="float")
digamma_p = unary("digamma", special.digamma, kinds="float")

# -- comparisons and logic -------------------------------------------------------------------------------
eq_p = comparison("eq", np.equal)
ne_p = comparison("ne", np.not_equal)
lt_p = comparison("lt", np.less)
le_p = comparison("le", np.less_equal)
gt_p = comparison("gt", np.greater)
ge_p = comparison("ge", np.greater_equal)
not_p = unary("not", np.invert, kinds="int_or_bool")
and_p = binary("and", np.bitwise_and, kinds="int_or_bool")
or_p = binary("or", np.bitwise_or, kinds="int_or_bool")
xor_p = binary("xor", np.bitwise_xor, kinds="int_or_bool")
population_count_p = unary("population_count", np.bitwise_count, kinds="int")
clz_p = unary("clz", lambda x: special.count_leading_zeros(x), kinds="int")
for _p in (not_p, and_p, or_p, xor_p, population_count_p, clz_p):
    _p.mark_no_rule("jvp", "bitwise operations are not differentiable")


def _shift(kind: str):
    def impl(x, y):
        bits = x.dtype.itemsize * 8
        in_range = (y >= 0) & (y < bits) if x.dtype.kind == "i" else y < bits
        safe = np.where(in_range, y, 0).astype(x.dtype)
        if kind == "left":
            out, overflow = np.left_shift(x, safe), 0
        elif kind == "right_arithmetic":
            out, overflow = np.right_shift(x, safe), np.where(x < 0, -1, 0)
        else:  # logical: shift the unsigned view
            unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
            out, overflow = np.right_shift(unsigned, safe.view(unsigned.dtype)).view(x.dtype), 0
        return np.where(in_range, out, overflow).astype(x.dtype)

    return impl


shift_left_p = binary("shift_left", _shift("left"), kinds="int")
shift_right_arithmetic_p = binary("shift_right_arithmetic", _shift("right_arithmetic"), kinds="int")
shift_right_logical_p = binary("shift_right_logical", _shift("right_logical"), kinds="int")
for _p in (shift_left_p, shift_right_arithmetic_p, shift_right_logical_p):
    _p.mark_no_rule("jvp", "bit shifts are not differentiable")

# -- complex numbers -------------------------------------------------------------------------------------
complex_p = binary("complex", lambda x, y: x + np.asarray(1j, complex_dtype(x.dtype)) * y, kinds="float",
                   result=complex_dtype)
real_p = unary("real", np.real, kinds="complex", result=real_dtype)
imag_p = unary("imag", np.imag, kinds="complex", result=real_dtype)
conj_p = unary("conj", np.conj, kinds="number", result=lambda d: d if d.kind == "c" else complex_dtype(d))

# -- selection and conversion ----------------------------------------------------------------------------
select_n_p = Primitive("select_n")


@select_n_p.def_shape
def _select_n_shape(which: TensorType, *cases: TensorType) -> TensorType:
    check(len(cases) >= 1, "select_n", "needs at least one case")
    check(which.dtype.kind in "biu", "select_n", f"the selector must be bool or integer, got {which.dtype.name}")
    check(which.dtype.kind != "b" or len(cases) <= 2, "select_n", "a bool selector chooses between at most 2 cases")
    _same_shape_and_dtype("select_n", cases, "any")
    check(which.shape in ((), cases[0].shape), "select_n",
          f"the selector has shape {which.shape}; it must be () or the cases' shape {cases[0].shape}", kind="value")
    return cases[0].update(weak_type=all(c.weak_type for c in cases))


@select_n_p.def_impl
def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return cases[0]
    return np.choose(which.astype(np.int32), cases) if which.ndim else cases[int(which)]


clamp_p = Primitive("clamp")


@clamp_p.def_shape
def _clamp_shape(lo: TensorType, x: TensorType, hi: TensorType) -> TensorType:
    for name, bound in (("min", lo), ("max", hi)):
        check(bound.dtype == x.dtype, "clamp", f"{name} has dtype {bound.dtype.name}, operand has {x.dtype.name}")
        check(bound.shape in ((), x.shape), "clamp",
              f"{name} has shape {bound.shape}; it must be () or the operand's {x.shape}", kind="value")
    check(x.dtype.kind in "iuf", "clamp", f"does not accept {x.dtype.name} operands")
    return x


clamp_p.def_impl(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))

convert_element_type_p = Primitive("convert_element_type", params=("new_dtype", "weak_type"))


@convert_element_type_p.def_shape
def _convert_shape(x: TensorType, *, new_dtype, weak_type: bool = False) -> TensorType:
    new_dtype = np.dtype(new_dtype)
    check(new_dtype.kind in "biufc", "convert_element_type", f"cannot convert to {new_dtype}")
    return TensorType(new_dtype, x.shape, weak_type)


@convert_element_type_p.def_impl
def _convert_impl(x, *, new_dtype, weak_type=False):
    new_dtype = np.dtype(new_dtype)
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = np.real(x)
    if x.dtype.kind == "f" and new_dtype.kind in "iu":  # NaN -> 0 and saturation, as XLA converts
        info = np.iinfo(new_dtype)
        x = np.clip(np.nan_to_num(np.trunc(x), nan=0.0), info.min, info.max)
        return np.where(x >= float(info.max), info.max, x.astype(np.float64).astype(new_dtype)).astype(new_dtype)
    return x.astype(new_dtype)


bitcast_convert_type_p = Primitive("bitcast_convert_type", params=("new_dtype",))


@bitcast_convert_type_p.def_shape
def _bitcast_shape(x: TensorType, *, new_dtype) -> TensorType:
    new_dtype = np.dtype(new_dtype)
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if old == new:
        return TensorType(new_dtype, x.shape)
    if old > new:
        return TensorType(new_dtype, (*x.shape, old // new))
    check(x.ndim >= 1 and x.shape[-1] == new // old, "bitcast_convert_type",
          f"converting {x} to {new_dtype.name} needs a last axis of size {new // old}", kind="value")
    return TensorType(new_dtype, x.shape[:-1])


@bitcast_convert_type_p.def_impl
def _bitcast_impl(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    x = np.ascontiguousarray(x)
    if x.dtype.itemsize >= new_dtype.itemsize:
        return x.view(new_dtype).reshape(_bitcast_shape(TensorType(x.dtype, x.shape), new_dtype=new_dtype).shape)
    return x.view(new_dtype).reshape(x.shape[:-1])


register_module(globals())
