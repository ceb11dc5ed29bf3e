"""Vectorisable transcendental functions in LLVM IR: exp, exp2, log, log1p, expm1, tanh, logistic, sin, cos, erf.

LLVM's own ``llvm.exp.v8f32`` becomes eight scalar ``expf`` calls on x86, so fused loops use these
instead: straight-line code of selects, bit manipulation, ``llvm.rint``/``llvm.fma`` and polynomials, which
the loop vectoriser widens. Each is an ``internal alwaysinline`` function added to a module on demand
(``math_function``). Accuracy is a few ulp against NumPy in float64 (``tests/codegen/test_math.py``).

The methods are textbook facts (Cody and Waite's range reduction, fdlibm's form of log); the polynomials
are truncated Taylor series with enough terms that truncation stays far below an ulp, so every
coefficient is an exact rational computed here:
- exp: x = n ln2 + r with |r| <= ln2/2, exp(x) = 2^n (1 + expm1(r)); 2^n applied in two halves so that
  subnormal results round once and 2^n itself never overflows.
- log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f):
  log(m) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R(s^2))), R(z) = sum_k 2 z^k / (2k + 1).
- sin, cos: x = j pi/2 + r with pi/2 in three pieces (the first two short, so that j * piece is exact for
  |j| < 2^20), then the Taylor series of sin or cos of r by j mod 4. Accurate for |x| < 2^20 pi/2; float32
  arguments are reduced and evaluated in float64.
- erf: Cody's rational approximations (the coefficients of ``transpiler.primitives.special``) in float64.
"""

from __future__ import annotations

import decimal
import math
from typing import Callable

import llvmlite.ir as ir

from transpiler.primitives import special

F32, F64 = ir.FloatType(), ir.DoubleType()

# -- exact constants ----------------------------------------------------------------------------------
decimal.getcontext().prec = 80
_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899")
_LN2 = decimal.Decimal(2).ln()


def _split(value: decimal.Decimal, bits: tuple[int, ...]) -> list[float]:
    """``value`` as a sum of doubles, the k-th holding the next ``bits[k]`` significant bits."""
    parts, rest = [], value
    for b in bits:
        exponent = math.frexp(float(rest))[1]
        scale = decimal.Decimal(2) ** (b - exponent)
        piece = (rest * scale).to_integral_value(rounding=decimal.ROUND_HALF_EVEN) / scale
        parts.append(float(piece))
        rest -= piece
    return parts


_PIO2 = _split(_PI / 2, (33, 33, 53))  # fdlibm's split: j * piece is exact for |j| < 2^20
_LN2_PARTS = {F64: _split(_LN2, (53, 53)), F32: [float(f) for f in _split(_LN2, (24, 24))]}
_LN2_SHORT = {F64: _split(_LN2, (33, 53)), F32: _split(_LN2, (12, 24))}  # hi * exponent is exact
_INV_FACTORIALS = [1 / math.factorial(k) for k in range(0, 25)]


class Floats:
    """Float arithmetic of one LLVM type in one builder (scalar code; the vectoriser widens it)."""

    def __init__(self, builder: ir.IRBuilder, typ: ir.Type):
        self.b, self.t = builder, typ
        self.double = typ == F64
        self.bits = 64 if self.double else 32
        self.mantissa = 52 if self.double else 23
        self.bias = 1023 if self.double else 127
        self.i = ir.IntType(self.bits)

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(self.t, float(value))

    def ci(self, value: int) -> ir.Constant:
        return ir.Constant(self.i, int(value))

    def intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        return self.b.call(intrinsic(self.b.module, name, self.t, len(args)), list(args))

    def add(self, x, y):
        return self.b.fadd(x, y)

    def sub(self, x, y):
        return self.b.fsub(x, y)

    def mul(self, x, y):
        return self.b.fmul(x, y)

    def div(self, x, y):
        return self.b.fdiv(x, y)

    def fma(self, x, y, z):
        return self.intrinsic("fma", x, y, z)

    def abs(self, x):
        return self.intrinsic("fabs", x)

    def rint(self, x):
        return self.intrinsic("rint", x)

    def copysign(self, magnitude, sign):
        return self.intrinsic("copysign", magnitude, sign)

    def cmp(self, op: str, x, y):
        return self.b.fcmp_ordered(op, x, y)

    def select(self, cond, x, y):
        return self.b.select(cond, x, y)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def isfinite(self, x):
        return self.cmp("<", self.abs(x), self.c(math.inf))

    def horner(self, coefficients: list[float], x):
        """sum c_k x^k with ``coefficients`` lowest degree first, by Horner's rule with FMAs."""
        acc = self.c(coefficients[-1])
        for coefficient in reversed(coefficients[:-1]):
            acc = self.fma(acc, x, self.c(coefficient))
        return acc

    def to_int(self, x):
        return self.b.fptosi(x, self.i)

    def from_int(self, n):
        return self.b.sitofp(n, self.t)

    def as_bits(self, x):
        return self.b.bitcast(x, self.i)

    def from_bits(self, n):
        return self.b.bitcast(n, self.t)

    def pow2(self, n):
        """2^n for an integer n in the normal range, built from its exponent bits."""
        return self.from_bits(self.b.shl(self.b.add(n, self.ci(self.bias)), self.ci(self.mantissa)))

    def scale(self, y, n):
        """y 2^n for |n| up to about twice the exponent range, in two steps (one rounding at most)."""
        half = self.b.ashr(n, self.ci(1))
        return self.mul(self.mul(y, self.pow2(half)), self.pow2(self.b.sub(n, half)))

    def widen(self, x):
        return self.b.fpext(x, F64) if not self.double else x

    def narrow(self, x, typ: ir.Type):
        return self.b.fptrunc(x, typ) if typ != F64 else x


def intrinsic(module: ir.Module, name: str, typ: ir.Type, nargs: int) -> ir.Function:
    """``llvm.<name>.<f32|f64>`` declared in ``module`` (once)."""
    full = f"llvm.{name}.{'f64' if typ == F64 else 'f32'}"
    if full in module.globals:
        return module.globals[full]
    return ir.Function(module, ir.FunctionType(typ, [typ] * nargs), name=full)


# -- exp, exp2, expm1 -------------------------------------------------------------------------------------
def _expm1_poly(f: Floats, r):
    """expm1(r) for |r| <= ln2/2: r + r^2 (1/2 + r/6 + ...), degree 13 (float64) or 7 (float32)."""
    degree = 13 if f.double else 7
    tail = f.horner(_INV_FACTORIALS[2 : degree + 1], r)
    return f.fma(f.mul(r, r), tail, r)


def _reduce_ln2(f: Floats, x, lo: float, hi: float):
    """(n, r, bad): x clamped to [lo, hi] as n ln2 + r with |r| <= ln2/2; NaN lanes compute with 0."""
    bad = f.isnan(x)
    x = f.select(bad, f.c(0.0), x)
    x = f.select(f.cmp(">", x, f.c(hi)), f.c(hi), f.select(f.cmp("<", x, f.c(lo)), f.c(lo), x))
    n = f.rint(f.mul(x, f.c(1 / math.log(2))))
    hi_part, lo_part = _LN2_PARTS[f.t]
    r = f.fma(f.b.fneg(n), f.c(hi_part), x)
    r = f.fma(f.b.fneg(n), f.c(lo_part), r)
    return f.to_int(n), r, bad


def _exp_limits(f: Floats) -> tuple[float, float]:
    # beyond these exp is 0 or inf anyway; inside them 2^n stays within twice the exponent range
    return (-760.0, 720.0) if f.double else (-110.0, 100.0)


def emit_exp(f: Floats, x):
    n, r, bad = _reduce_ln2(f, x, *_exp_limits(f))
    y = f.scale(f.add(_expm1_poly(f, r), f.c(1.0)), n)
    return f.select(bad, x, y)


def emit_exp2(f: Floats, x):
    """2^x = 2^n 2^t with n = rint(x), t = x - n exact, 2^t = 1 + expm1(t ln2)."""
    bad = f.isnan(x)
    lo, hi = (-1100.0, 1040.0) if f.double else (-160.0, 145.0)
    x0 = f.select(bad, f.c(0.0), x)
    x0 = f.select(f.cmp(">", x0, f.c(hi)), f.c(hi), f.select(f.cmp("<", x0, f.c(lo)), f.c(lo), x0))
    n = f.rint(x0)
    t = f.sub(x0, n)
    hi_part, lo_part = _LN2_PARTS[f.t]
    r = f.fma(t, f.c(hi_part), f.mul(t, f.c(lo_part)))
    y = f.scale(f.add(_expm1_poly(f, r), f.c(1.0)), f.to_int(n))
    return f.select(bad, x, y)


def emit_expm1(f: Floats, x):
    """2^n expm1(r) + (2^n - 1); exp(x) above ``big`` (where the -1 is below half an ulp), -1 below
    ``-big``, x itself where |x| is so small that expm1(x) rounds to it (this keeps -0)."""
    big, tiny = (50.0, 2.0**-54) if f.double else (20.0, 2.0**-25)
    n, r, bad = _reduce_ln2(f, x, *_exp_limits(f))
    p = _expm1_poly(f, r)
    large = f.scale(f.add(p, f.c(1.0)), n)
    limit = f.ci(int(big * 1.5))  # |n| <= 1.45 * big in the middle range; clamp keeps 2^n finite elsewhere
    n_mid = f.b.select(f.b.icmp_signed(">", n, limit), limit, n)
    n_mid = f.b.select(f.b.icmp_signed("<", n_mid, f.b.neg(limit)), f.b.neg(limit), n_mid)
    t = f.pow2(n_mid)
    middle = f.fma(t, p, f.sub(t, f.c(1.0)))
    y = f.select(f.cmp(">", x, f.c(big)), large, f.select(f.cmp("<", x, f.c(-big)), f.c(-1.0), middle))
    y = f.select(f.cmp("<", f.abs(x), f.c(tiny)), x, y)
    return f.select(bad, x, y)


# -- log, log1p -------------------------------------------------------------------------------------------
def _log_series(f: Floats, s2):
    """R(z) = sum_{k>=1} 2 z^k / (2k+1) for z = s^2 <= 0.0295 (10 terms in float64, 4 in float32)."""
    terms = 10 if f.double else 4
    return f.mul(s2, f.horner([2 / (2 * k + 1) for k in range(1, terms + 1)], s2))


def emit_log(f: Floats, x):
    b = f.b
    smallest_normal = 2.0**-1022 if f.double else 2.0**-126
    boost = 54 if f.double else 24
    subnormal = f.cmp("<", x, f.c(smallest_normal))
    xs = f.select(subnormal, f.mul(x, f.c(2.0**boost)), x)
    bits = f.as_bits(xs)
    exponent_field = b.and_(b.lshr(bits, f.ci(f.mantissa)), f.ci((1 << (f.bits - f.mantissa - 1)) - 1))
    e = b.sub(exponent_field, f.ci(f.bias))
    e = b.select(subnormal, b.sub(e, f.ci(boost)), e)
    m = f.from_bits(b.or_(b.and_(bits, f.ci((1 << f.mantissa) - 1)), f.ci(f.bias << f.mantissa)))
    above = f.cmp(">", m, f.c(math.sqrt(2.0)))
    m = f.select(above, f.mul(m, f.c(0.5)), m)
    e = b.select(above, b.add(e, f.ci(1)), e)
    fr = f.sub(m, f.c(1.0))
    s = f.div(fr, f.add(fr, f.c(2.0)))
    half_f2 = f.mul(f.mul(fr, fr), f.c(0.5))
    r = _log_series(f, f.mul(s, s))
    k = f.from_int(e)
    ln2_hi, ln2_lo = _LN2_SHORT[f.t]
    # log x = k ln2_hi - ((half_f2 - (s (half_f2 + R) + k ln2_lo)) - f)
    inner = f.fma(s, f.add(half_f2, r), f.mul(k, f.c(ln2_lo)))
    y = f.sub(f.mul(k, f.c(ln2_hi)), f.sub(f.sub(half_f2, inner), fr))
    y = f.select(f.cmp("==", x, f.c(math.inf)), x, y)
    y = f.select(f.cmp("==", x, f.c(0.0)), f.c(-math.inf), y)
    return f.select(b.fcmp_unordered("uge", f.c(0.0), x), f.select(f.cmp("==", x, f.c(0.0)), y, f.c(math.nan)), y)


def emit_log1p(f: Floats, x):
    """log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the quotient restores what the rounding lost."""
    u = f.add(x, f.c(1.0))
    log_u = emit_log(f, u)
    regular = f.b.and_(f.cmp("!=", u, f.c(0.0)), f.isfinite(u))
    correction = f.div(f.sub(x, f.sub(u, f.c(1.0))), f.select(regular, u, f.c(1.0)))
    y = f.select(regular, f.add(log_u, correction), log_u)
    return f.select(f.cmp("==", u, f.c(1.0)), x, y)


# -- tanh, logistic ---------------------------------------------------------------------------------------
def emit_tanh(f: Floats, x):
    """tanh|x| = t / (t + 2), t = expm1(2|x|), with |x| capped where tanh is 1 to the last bit."""
    cap = 20.0 if f.double else 10.0
    ax = f.abs(x)
    ax = f.select(f.cmp(">", ax, f.c(cap)), f.c(cap), ax)
    t = emit_expm1(f, f.add(ax, ax))
    return f.copysign(f.div(t, f.add(t, f.c(2.0))), x)


def emit_logistic(f: Floats, x):
    """1 / (1 + e) for x >= 0, e / (1 + e) below, with e = exp(-|x|): nothing overflows."""
    e = emit_exp(f, f.b.fneg(f.abs(x)))
    numerator = f.select(f.cmp(">=", x, f.c(0.0)), f.c(1.0), e)
    return f.div(numerator, f.add(f.c(1.0), e))


# -- sin, cos ---------------------------------------------------------------------------------------------
def _sin_cos_poly(d: Floats, r, terms: int):
    """(sin r, cos r) for |r| <= pi/4 from their Taylor series with ``terms`` terms after the first."""
    r2 = d.mul(r, r)
    sin_tail = d.horner([(-1) ** k * _INV_FACTORIALS[2 * k + 1] for k in range(1, terms + 1)], r2)
    sin_r = d.fma(d.mul(r, r2), sin_tail, r)
    cos_tail = d.horner([(-1) ** k * _INV_FACTORIALS[2 * k + 2] for k in range(1, terms + 1)], r2)
    half_r2 = d.mul(r2, d.c(0.5))
    cos_r = d.sub(d.c(1.0), d.fma(d.mul(r2, r2), cos_tail, half_r2))
    return sin_r, cos_r


def _sin_or_cos(f: Floats, x, quarter_shift: int):
    """sin(x + quarter_shift pi/2), in float64 (float32 arguments are widened, the result rounded)."""
    d = Floats(f.b, F64)
    xd = f.widen(x)
    finite = d.isfinite(xd)
    x0 = d.select(finite, xd, d.c(0.0))
    j = d.rint(d.mul(x0, d.c(2 / math.pi)))
    r = x0
    for piece in _PIO2:
        r = d.fma(d.b.fneg(j), d.c(piece), r)
    sin_r, cos_r = _sin_cos_poly(d, r, 9 if f.double else 5)
    quadrant = f.b.and_(f.b.add(d.to_int(j), d.ci(quarter_shift)), d.ci(3))
    use_cos = f.b.trunc(quadrant, ir.IntType(1))  # odd quadrants
    negate = f.b.icmp_unsigned(">=", quadrant, d.ci(2))
    y = d.select(use_cos, cos_r, sin_r)
    y = d.select(negate, d.b.fneg(y), y)
    y = d.select(finite, y, d.c(math.nan))
    y = f.narrow(y, f.t)
    if quarter_shift == 0:  # sin x = x for tiny x, which also keeps the sign of -0
        y = f.select(f.cmp("<", f.abs(x), f.c(2.0**-27 if f.double else 2.0**-12)), x, y)
    return f.select(f.isnan(x), x, y)


def emit_sin(f: Floats, x):
    return _sin_or_cos(f, x, 0)


def emit_cos(f: Floats, x):
    return _sin_or_cos(f, x, 1)


# -- erf --------------------------------------------------------------------------------------------------
def _ratio(d: Floats, numerator: list[float], denominator: list[float], x):
    """P(x) / Q(x), coefficients highest degree first (as ``special`` lists them)."""
    return d.div(d.horner(list(reversed(numerator)), x), d.horner(list(reversed(denominator)), x))


def emit_erf(f: Floats, x):
    """Cody: x P(x^2)/Q(x^2) for |x| <= 0.46875, else 1 - erfc(|x|) with erfc = exp(-x^2) R/S up to 4 and
    exp(-x^2)/x (1/sqrt(pi) - T/(x^2 U)) in 1/x^2 beyond; exp(-y^2) = exp(-h^2) exp(-(y-h)(y+h)) with h
    the multiple of 1/16 below y, so that y^2 is never rounded."""
    d = Floats(f.b, F64)
    xd = f.widen(x)
    y = d.abs(xd)
    small = d.cmp("<=", y, d.c(special._ERF_SMALL))
    x2 = d.mul(xd, xd)
    erf_small = d.mul(xd, _ratio(d, special._ERF_P, special._ERF_Q, x2))
    yl = d.select(small, d.c(1.0), d.select(d.cmp(">", y, d.c(6.0)), d.c(6.0), y))  # erf = 1 beyond 6
    middle = _ratio(d, special._ERFC_R, special._ERFC_S, yl)
    inv2 = d.div(d.c(1.0), d.mul(yl, yl))
    tail_ratio = d.div(
        d.mul(inv2, d.horner(list(reversed(special._ERFC_T)), inv2)), d.horner(list(reversed(special._ERFC_U)), inv2)
    )
    tail = d.div(d.sub(d.c(special._INV_SQRT_PI), tail_ratio), yl)
    ratio = d.select(d.cmp("<=", yl, d.c(4.0)), middle, tail)
    h = d.div(d.intrinsic("trunc", d.mul(yl, d.c(16.0))), d.c(16.0))
    gauss = d.mul(emit_exp(d, d.b.fneg(d.mul(h, h))), emit_exp(d, d.b.fneg(d.mul(d.sub(yl, h), d.add(yl, h)))))
    large = d.copysign(d.sub(d.c(1.0), d.mul(gauss, ratio)), xd)
    out = d.select(small, erf_small, large)
    return f.select(f.isnan(x), x, f.narrow(out, f.t))


# -- the table and the module-level entry ---------------------------------------------------------------
EMITTERS: dict[str, Callable[[Floats, ir.Value], ir.Value]] = {
    "exp": emit_exp,
    "exp2": emit_exp2,
    "log": emit_log,
    "log1p": emit_log1p,
    "expm1": emit_expm1,
    "tanh": emit_tanh,
    "logistic": emit_logistic,
    "sin": emit_sin,
    "cos": emit_cos,
    "erf": emit_erf,
}


def math_function(module: ir.Module, name: str, typ: ir.Type) -> ir.Function:
    """The function ``name`` (a key of ``EMITTERS``) for ``typ`` (float or double), defined in ``module``
    once as ``internal alwaysinline`` so that it disappears into the loops that call it."""
    symbol = f"srcjax.{name}.{'f64' if typ == F64 else 'f32'}"
    if symbol in module.globals:
        return module.globals[symbol]
    fn = ir.Function(module, ir.FunctionType(typ, [typ]), name=symbol)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(EMITTERS[name](Floats(builder, typ), fn.args[0]))
    return fn
