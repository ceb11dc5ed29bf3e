"""CPU lowering of elementwise primitives: one row per primitive, from LLVM values of the operands to the result.

A rule is ``rule(cx, x_types, out_type, params, *args) -> ir.Value`` where the types are NumPy dtypes and
the values are scalars (the loop vectoriser widens them). Semantics follow the primitives' NumPy
implementations (XLA's): integer division by zero gives -1, float -> integer conversion saturates and maps
NaN to 0, max/min propagate NaN and order -0.0 below +0.0, shifts by out-of-range amounts give 0 or the
sign. Transcendental functions come from ``math`` (vectorisable polynomials) where we have one, otherwise
from LLVM intrinsics or libm (correct, but scalar).
"""

from __future__ import annotations

from typing import Callable

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm.math import math_function

I1 = ir.IntType(1)


def ltype(dtype: np.dtype) -> ir.Type:
    """The register type of a dtype (bool is i1)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return I1
    if dtype.kind in "iu":
        return ir.IntType(dtype.itemsize * 8)
    if dtype == np.float32:
        return ir.FloatType()
    if dtype == np.float64:
        return ir.DoubleType()
    raise TypeError(f"no LLVM type for {dtype}")


def mtype(dtype: np.dtype) -> ir.Type:
    """The memory type of a dtype (bool is a byte)."""
    return ir.IntType(8) if np.dtype(dtype).kind == "b" else ltype(dtype)


def _suffix(typ: ir.Type) -> str:
    if isinstance(typ, ir.IntType):
        return f"i{typ.width}"
    return "f64" if isinstance(typ, ir.DoubleType) else "f32"


class Lowering:
    """What rules need: the builder and declarations of intrinsics and libm functions."""

    def __init__(self, builder: ir.IRBuilder):
        self.b = builder

    @property
    def module(self) -> ir.Module:
        return self.b.module

    def declare(self, name: str, ret: ir.Type, args: list[ir.Type], pure: bool = True) -> ir.Function:
        if name in self.module.globals:
            return self.module.globals[name]
        fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        if pure and not name.startswith("llvm."):
            fn.attributes.add("nounwind")
            fn.attributes.add("readnone")
        return fn

    def intrinsic(self, name: str, *args: ir.Value, overload: list[ir.Type] | None = None) -> ir.Value:
        """``llvm.<name>.<types>`` of ``args`` (overloaded on the first argument's type unless given)."""
        types = overload or [args[0].type]
        full = f"llvm.{name}." + ".".join(_suffix(t) for t in types)
        ret = types[0] if overload is None else overload[0]
        return self.b.call(self.declare(full, ret, [a.type for a in args]), list(args))

    def libm(self, name: str, *args: ir.Value) -> ir.Value:
        """A libm function (``name`` for double, ``name + 'f'`` for float)."""
        typ = args[0].type
        symbol = name if isinstance(typ, ir.DoubleType) else name + "f"
        return self.b.call(self.declare(symbol, typ, [a.type for a in args]), list(args))

    def const(self, dtype: np.dtype, value) -> ir.Constant:
        dtype = np.dtype(dtype)
        typ = ltype(dtype)
        if dtype.kind == "f":
            return ir.Constant(typ, float(value))
        if dtype.kind == "b":
            return ir.Constant(typ, int(bool(value)))
        return ir.Constant(typ, int(np.asarray(value, dtype).view(f"u{dtype.itemsize}")))


Rule = Callable[..., ir.Value]


def _is_float(t: np.dtype) -> bool:
    return t.kind == "f"


def _signed(t: np.dtype) -> bool:
    return t.kind == "i"


def _arith(int_op: str, float_op: str) -> Rule:
    def rule(cx, ts, out, params, x, y):
        return getattr(cx.b, float_op if _is_float(ts[0]) else int_op)(x, y)

    return rule


def _neg(cx, ts, out, params, x):
    return cx.b.fneg(x) if _is_float(ts[0]) else cx.b.neg(x)


def _div(cx, ts, out, params, x, y):
    b, t = cx.b, ts[0]
    if _is_float(t):
        return b.fdiv(x, y)
    zero, minus_one = ir.Constant(x.type, 0), ir.Constant(x.type, -1)
    by_zero = b.icmp_unsigned("==", y, zero)
    if not _signed(t):
        return b.select(by_zero, minus_one, b.udiv(x, b.select(by_zero, ir.Constant(x.type, 1), y)))
    by_minus_one = b.icmp_signed("==", y, minus_one)
    safe = b.select(b.or_(by_zero, by_minus_one), ir.Constant(x.type, 1), y)
    quotient = b.select(by_minus_one, b.neg(x), b.sdiv(x, safe))  # MIN / -1 wraps to MIN
    return b.select(by_zero, minus_one, quotient)


def _rem(cx, ts, out, params, x, y):
    b, t = cx.b, ts[0]
    if _is_float(t):
        return b.frem(x, y)  # fmod: the sign of the dividend
    zero = ir.Constant(x.type, 0)
    by_zero = b.icmp_unsigned("==", y, zero)
    if not _signed(t):
        return b.select(by_zero, x, b.urem(x, b.select(by_zero, ir.Constant(x.type, 1), y)))
    by_minus_one = b.icmp_signed("==", y, ir.Constant(x.type, -1))
    safe = b.select(b.or_(by_zero, by_minus_one), ir.Constant(x.type, 1), y)
    return b.select(by_zero, x, b.select(by_minus_one, zero, b.srem(x, safe)))


def _extremum(which: str) -> Rule:
    def rule(cx, ts, out, params, x, y):
        t = ts[0]
        if _is_float(t):  # NaN-propagating, -0.0 < +0.0
            return cx.intrinsic("maximum" if which == "max" else "minimum", x, y)
        if t.kind == "b":
            return cx.b.or_(x, y) if which == "max" else cx.b.and_(x, y)
        return cx.intrinsic(("s" if _signed(t) else "u") + which, x, y)

    return rule


def _abs(cx, ts, out, params, x):
    if _is_float(ts[0]):
        return cx.intrinsic("fabs", x)
    return cx.intrinsic("abs", x, ir.Constant(I1, 0))


def _sign(cx, ts, out, params, x):
    b, t = cx.b, ts[0]
    if _is_float(t):  # keeps -0.0, +0.0 and NaN
        one = ir.Constant(x.type, 1.0)
        signed_one = b.select(b.fcmp_ordered("<", x, ir.Constant(x.type, 0.0)), ir.Constant(x.type, -1.0), one)
        return b.select(
            b.fcmp_unordered("une", x, ir.Constant(x.type, 0.0)),
            b.select(b.fcmp_unordered("uno", x, x), x, signed_one),
            x,
        )
    zero = ir.Constant(x.type, 0)
    if not _signed(t):
        return b.zext(b.icmp_unsigned("!=", x, zero), x.type)
    return b.sub(b.zext(b.icmp_signed(">", x, zero), x.type), b.zext(b.icmp_signed("<", x, zero), x.type))


def _unary_intrinsic(name: str) -> Rule:
    return lambda cx, ts, out, params, x: cx.intrinsic(name, x)


def _polynomial(name: str) -> Rule:
    return lambda cx, ts, out, params, x: cx.b.call(math_function(cx.module, name, x.type), [x])


def _libm(name: str) -> Rule:
    return lambda cx, ts, out, params, *args: cx.libm(name, *args)


def _float32_polynomial(name: str) -> Rule:
    """``math``'s vectorised ``name`` for float32, libm's elsewhere."""
    def rule(cx, ts, out, params, x):
        if isinstance(x.type, ir.FloatType):
            return cx.b.call(math_function(cx.module, name, x.type), [x])
        return cx.libm(name, x)

    return rule


def _is_finite(cx, ts, out, params, x):
    return cx.b.fcmp_ordered("<", cx.intrinsic("fabs", x), ir.Constant(x.type, float("inf")))


def _round(cx, ts, out, params, x):
    return cx.intrinsic("roundeven" if params.get("rounding_method", 0) == 1 else "round", x)


def _rsqrt(cx, ts, out, params, x):
    return cx.b.fdiv(ir.Constant(x.type, 1.0), cx.intrinsic("sqrt", x))


def _compare(op: str) -> Rule:
    def rule(cx, ts, out, params, x, y):
        t = ts[0]
        if _is_float(t):  # ordered comparisons, except != which is true for NaN
            return cx.b.fcmp_unordered(op, x, y) if op == "!=" else cx.b.fcmp_ordered(op, x, y)
        return (cx.b.icmp_signed if _signed(t) else cx.b.icmp_unsigned)(op, x, y)

    return rule


def _not(cx, ts, out, params, x):
    return cx.b.xor(x, ir.Constant(x.type, -1 if x.type.width > 1 else 1))


def _bitwise(name: str) -> Rule:
    return lambda cx, ts, out, params, x, y: getattr(cx.b, name)(x, y)


def _clz(cx, ts, out, params, x):
    return cx.intrinsic("ctlz", x, ir.Constant(I1, 0))


def _shift(direction: str) -> Rule:
    """Amounts outside [0, bits) give 0, or the sign fill for an arithmetic right shift."""

    def rule(cx, ts, out, params, x, y):
        b = cx.b
        bits = ir.Constant(x.type, x.type.width)
        in_range = b.icmp_unsigned("<", y, bits)  # negative amounts are huge unsigned
        amount = b.select(in_range, y, ir.Constant(x.type, 0))
        if direction == "left":
            return b.select(in_range, b.shl(x, amount), ir.Constant(x.type, 0))
        if direction == "right_logical":
            return b.select(in_range, b.lshr(x, amount), ir.Constant(x.type, 0))
        fill = b.ashr(x, ir.Constant(x.type, x.type.width - 1))
        return b.select(in_range, b.ashr(x, amount), fill)

    return rule


def _mulhi(cx, ts, out, params, x, y):
    """The high half of the product in twice the width."""
    b = cx.b
    wide = ir.IntType(2 * x.type.width)
    extend = b.sext if ts[0].kind == "i" else b.zext
    product = b.mul(extend(x, wide), extend(y, wide))
    return b.trunc(b.lshr(product, ir.Constant(wide, x.type.width)), x.type)


def _select_n(cx, ts, out, params, which, *cases):
    b = cx.b
    if len(cases) == 1:
        return cases[0]
    if ts[0].kind == "b":
        return b.select(which, cases[1], cases[0])
    compare = b.icmp_signed if _signed(ts[0]) else b.icmp_unsigned
    result = cases[0]
    for i, case in enumerate(cases[1:], start=1):  # out-of-range selectors clamp to the first or last case
        result = b.select(compare(">=", which, ir.Constant(which.type, i)), case, result)
    return result


def _clamp(cx, ts, out, params, lo, x, hi):
    maximum, minimum = _extremum("max"), _extremum("min")
    return minimum(cx, ts[1:2], out, params, maximum(cx, ts[1:2], out, params, x, lo), hi)


def convert(cx: Lowering, x: ir.Value, old: np.dtype, new: np.dtype) -> ir.Value:
    """``x`` of dtype ``old`` as dtype ``new``, as ``convert_element_type`` does."""
    b = cx.b
    old, new = np.dtype(old), np.dtype(new)
    target = ltype(new)
    if old == new:
        return x
    if new.kind == "b":
        if old.kind == "f":
            return b.fcmp_unordered("une", x, ir.Constant(x.type, 0.0))  # NaN is true
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if old.kind == "f" and new.kind == "f":
        return b.fpext(x, target) if new.itemsize > old.itemsize else b.fptrunc(x, target)
    if old.kind == "f":  # toward zero, saturating, NaN -> 0
        name = "fptosi.sat" if new.kind == "i" else "fptoui.sat"
        return cx.intrinsic(name, x, overload=[target, x.type])
    if new.kind == "f":
        return b.sitofp(x, target) if old.kind == "i" else b.uitofp(x, target)
    if old.kind == "b":  # (an i1, whatever the byte a bool takes in memory: widened to 1, never -1)
        return b.zext(x, target)
    if new.itemsize < old.itemsize:
        return b.trunc(x, target)
    if new.itemsize == old.itemsize:
        return x
    return b.sext(x, target) if old.kind == "i" else b.zext(x, target)


def _convert(cx, ts, out, params, x):
    return convert(cx, x, ts[0], out)


def _integer_pow(cx, ts, out, params, x):
    """Binary exponentiation in the order the implementation multiplies: x^13 = x * x^4 * x^8."""
    b, y = cx.b, int(params["y"])
    n, power, acc = abs(y), x, None
    mul = b.fmul if _is_float(ts[0]) else b.mul
    while n:
        if n & 1:
            acc = power if acc is None else mul(acc, power)
        n >>= 1
        if n:
            power = mul(power, power)
    if acc is None:
        return cx.const(ts[0], 1)
    return b.fdiv(ir.Constant(x.type, 1.0), acc) if y < 0 else acc


def _pow(cx, ts, out, params, x, y):
    """float32: ``math.emit_pow`` (vectorised, in float64); otherwise libm's pow in float64, rounded once."""
    if ts[0] == ts[1] == out == np.dtype(np.float32):
        return cx.b.call(math_function(cx.module, "pow", x.type), [x, y])
    double = ir.DoubleType()
    xd = convert(cx, x, ts[0], np.dtype(np.float64))
    yd = convert(cx, y, ts[1], np.dtype(np.float64))
    return convert(cx, cx.intrinsic("pow", xd, yd, overload=[double]), np.dtype(np.float64), out)


def _bitcast(cx, ts, out, params, x):
    """The same bits as another dtype of the same width (bool has none: the planner leaves it to the host)."""
    if ts[0] == out:
        return x
    return cx.b.bitcast(x, ltype(out))


def _threefry_word(word: int) -> Rule:
    """Word ``word`` of threefry2x32(k0, k1, x0, x1), as the primitive's implementation computes it; the two
    words are two rules (the planner has one result per value), and LLVM shares their common rounds."""
    from srcjax.transpiler.primitives.random import KEY_PARITY, ROTATIONS

    def rule(cx, ts, out, params, k0, k1, x0, x1):
        b = cx.b
        u32 = ir.IntType(32)
        schedule = (k0, k1, b.xor(b.xor(k0, k1), ir.Constant(u32, KEY_PARITY)))
        x0, x1 = b.add(x0, schedule[0]), b.add(x1, schedule[1])
        for group in range(5):
            for r in ROTATIONS[group % 2]:
                x0 = b.add(x0, x1)
                rotated = b.or_(b.shl(x1, ir.Constant(u32, r)), b.lshr(x1, ir.Constant(u32, 32 - r)))
                x1 = b.xor(rotated, x0)
            x0 = b.add(x0, schedule[(group + 1) % 3])
            x1 = b.add(b.add(x1, schedule[(group + 2) % 3]), ir.Constant(u32, group + 1))
        return (x0, x1)[word]

    return rule


ELEMENTWISE: dict[str, Rule] = {
    "bitcast_convert_type": _bitcast,
    "threefry2x32.0": _threefry_word(0),
    "threefry2x32.1": _threefry_word(1),
    "neg": _neg,
    "add": _arith("add", "fadd"),
    "sub": _arith("sub", "fsub"),
    "mul": _arith("mul", "fmul"),
    "div": _div,
    "rem": _rem,
    "max": _extremum("max"),
    "min": _extremum("min"),
    "abs": _abs,
    "sign": _sign,
    "square": lambda cx, ts, out, params, x: (cx.b.fmul if _is_float(ts[0]) else cx.b.mul)(x, x),
    "floor": _unary_intrinsic("floor"),
    "ceil": _unary_intrinsic("ceil"),
    "round": _round,
    "is_finite": _is_finite,
    "sqrt": _unary_intrinsic("sqrt"),
    "rsqrt": _rsqrt,
    "exp": _polynomial("exp"),
    "exp2": _polynomial("exp2"),
    "log": _polynomial("log"),
    "log1p": _polynomial("log1p"),
    "expm1": _polynomial("expm1"),
    "tanh": _polynomial("tanh"),
    "logistic": _polynomial("logistic"),
    "sin": _polynomial("sin"),
    "cos": _polynomial("cos"),
    "erf": _polynomial("erf"),
    "erfc": _polynomial("erfc"),
    "erf_inv": _polynomial("erf_inv"),
    "lgamma": _polynomial("lgamma"),
    "digamma": _polynomial("digamma"),
    "tan": _libm("tan"),
    "asin": _libm("asin"),
    "acos": _libm("acos"),
    "atan": _libm("atan"),
    "atan2": _libm("atan2"),
    "sinh": _float32_polynomial("sinh"),
    "cosh": _float32_polynomial("cosh"),
    "asinh": _float32_polynomial("asinh"),
    "acosh": _float32_polynomial("acosh"),
    "atanh": _float32_polynomial("atanh"),
    "cbrt": _libm("cbrt"),
    "nextafter": _libm("nextafter"),
    "eq": _compare("=="),
    "ne": _compare("!="),
    "lt": _compare("<"),
    "le": _compare("<="),
    "gt": _compare(">"),
    "ge": _compare(">="),
    "not": _not,
    "and": _bitwise("and_"),
    "or": _bitwise("or_"),
    "xor": _bitwise("xor"),
    "population_count": _unary_intrinsic("ctpop"),
    "clz": _clz,
    "shift_left": _shift("left"),
    "shift_right_arithmetic": _shift("right_arithmetic"),
    "shift_right_logical": _shift("right_logical"),
    "mulhi": _mulhi,
    "select_n": _select_n,
    "clamp": _clamp,
    "convert_element_type": _convert,
    "integer_pow": _integer_pow,
    "pow": _pow,
}
