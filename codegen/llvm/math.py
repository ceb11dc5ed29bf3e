"""Vectorisable transcendental and special functions in LLVM IR: exp, exp2, log, log1p, expm1, tanh, logistic,
sin, cos, erf, erfc, erf_inv, lgamma, digamma, and float32's pow, sinh, cosh, asinh, acosh and atanh.

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
  |j| < 2^20), or beyond that by Payne and Hanek's reduction with a table of 2/pi (a slow path the vectorised
  loop tests for once per vector), then the Taylor series of sin or cos of r by j mod 4; float32 arguments are
  reduced and evaluated in float64.
- erf, erfc: Cody's rational approximations (the coefficients of ``transpiler.primitives.special``) in float64.
- erf_inv: XLA's algorithm (Giles' polynomials, XLA's log1p and float32 log, FMA Horner steps) operation by
  operation, so that float32 results are the eager path's (and JAX's) bits; float64 uses our log (1 ulp).
- lgamma, digamma: the eager path's series (at 2, at digamma's root, Stirling/asymptotic) in float64 with
  recurrences unrolled into selects and reflection below 0; float32 arguments are widened and need fewer
  terms and an earlier switch to the asymptotic series.
"""

from __future__ import annotations

import decimal
import math
import struct
from typing import Callable

import llvmlite.ir as ir

from srcjax.codegen.llvm import engine
from srcjax.transpiler.primitives import special

F32, F64 = ir.FloatType(), ir.DoubleType()

# -- exact constants ----------------------------------------------------------------------------------
_EXACT = decimal.Context(prec=80)  # (a context of our own: the user's decimal precision is theirs)
_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899")
_LN2 = decimal.Decimal(2).ln(_EXACT)


def _split(value: decimal.Decimal, bits: tuple[int, ...]) -> list[float]:
    """``value`` as a sum of doubles, the k-th holding the next ``bits[k]`` significant bits."""
    parts, rest = [], value
    with decimal.localcontext(_EXACT):
        for b in bits:
            exponent = math.frexp(float(rest))[1]
            scale = decimal.Decimal(2) ** (b - exponent)
            piece = (rest * scale).to_integral_value(rounding=decimal.ROUND_HALF_EVEN) / scale
            parts.append(float(piece))
            rest -= piece
    return parts


_PIO2 = _split(_EXACT.divide(_PI, 2), (33, 33, 53))  # fdlibm's split: j * piece is exact for |j| < 2^20
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
        """x * y + z with one rounding. Without an FMA instruction ``llvm.fma`` would become a libm call per
        element, so it is computed as the eager path computes it (``special._fma``, the same operations, so the
        same bits): float32 in float64, where the product is exact; float64 by Dekker's exact product and
        Knuth's exact sum."""
        if engine.has_fma():
            return self.intrinsic("fma", x, y, z)
        b = self.b
        if not self.double:
            wide = [b.fpext(v, F64) for v in (x, y, z)]
            return b.fptrunc(b.fadd(b.fmul(wide[0], wide[1]), wide[2]), self.t)
        split = self.c(special._SPLIT)

        def halves(v):
            high = b.fmul(v, split)
            high = b.fsub(high, b.fsub(high, v))
            return high, b.fsub(v, high)

        p = b.fmul(x, y)
        (x_hi, x_lo), (y_hi, y_lo) = halves(x), halves(y)
        e = b.fadd(b.fadd(b.fadd(b.fsub(b.fmul(x_hi, y_hi), p), b.fmul(x_hi, y_lo)), b.fmul(x_lo, y_hi)),
                   b.fmul(x_lo, y_lo))
        total = b.fadd(p, z)
        v = b.fsub(total, p)
        t = b.fadd(b.fsub(p, b.fsub(total, v)), b.fsub(z, v))
        fused = b.fadd(total, b.fadd(t, e))
        return self.select(self.isnan(fused), total, fused)  # (splitting overflows beyond 2^996: inf - inf)

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

    def clamp(self, x, lo: float, hi: float):
        """x limited to [lo, hi] by ``minnum``/``maxnum`` marked ``nnan`` (one vector min and max): a NaN lane of x
        gives poison, so only for values whose NaN lanes are selected away afterwards."""
        bound = intrinsic(self.b.module, "maxnum", self.t, 2)
        x = self.b.call(bound, [x, self.c(lo)], fastmath=("nnan",))
        return self.b.call(intrinsic(self.b.module, "minnum", self.t, 2), [x, self.c(hi)], fastmath=("nnan",))

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
        """y 2^n for |n| up to about twice the exponent range, with one rounding at most: one ``vscalef`` where
        AVX-512 has it (``llvm.ldexp``), else two multiplications by powers of two built from exponent bits."""
        if engine.has_vector_scale():
            i32 = ir.IntType(32)
            exponent = self.b.trunc(n, i32) if self.double else n
            name = f"llvm.ldexp.{'f64' if self.double else 'f32'}.i32"
            module = self.b.module
            ldexp = module.globals.get(name) or ir.Function(module, ir.FunctionType(self.t, [self.t, i32]), name=name)
            return self.b.call(ldexp, [y, exponent])
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
    """(n, r, bad): x clamped to [lo, hi] as n ln2 + r with |r| <= ln2/2. In the lanes ``bad`` marks (NaN) n and
    r are poison: the callers select x there."""
    bad = f.isnan(x)
    x = f.clamp(x, lo, hi)
    n = f.rint(f.mul(x, f.c(1 / math.log(2))))
    if engine.has_fma():  # x - n hi and the next step each round once
        hi_part, lo_part = _LN2_PARTS[f.t]
        r = f.fma(f.b.fneg(n), f.c(hi_part), x)
        r = f.fma(f.b.fneg(n), f.c(lo_part), r)
    else:  # hi holds so few bits that n hi is exact, and x - n hi is too (they are close)
        hi_part, lo_part = _LN2_SHORT[f.t]
        r = f.sub(f.sub(x, f.mul(n, f.c(hi_part))), f.mul(n, f.c(lo_part)))
    return f.to_int(n), r, bad


def _exp_limits(f: Floats) -> tuple[float, float]:
    # beyond these exp is 0 or inf anyway; inside them 2^n stays within twice the exponent range
    return (-760.0, 720.0) if f.double else (-110.0, 100.0)


def emit_exp(f: Floats, x, degree: int | None = None):
    """exp(x); ``degree`` of the series below the type's default where fewer digits are needed (|r| <= ln2/2:
    degree 9 leaves 1e-11)."""
    n, r, bad = _reduce_ln2(f, x, *_exp_limits(f))
    degree = degree or (13 if f.double else 7)
    y = f.scale(f.horner(_INV_FACTORIALS[: degree + 1], r), n)  # (1 + expm1(r) by the same series)
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
    """tanh|x| = t / (t + 2), t = expm1(2|x|), with |x| capped where tanh is 1 to the last bit. expm1 of a
    number in [0, 2 cap] needs none of ``emit_expm1``'s cases: 2^n fits the exponent, and n = 0 near 0."""
    cap = 20.0 if f.double else 10.0
    ax = f.clamp(f.abs(x), 0.0, cap)
    n, r, _ = _reduce_ln2(f, f.add(ax, ax), 0.0, 2 * cap)
    scale = f.pow2(n)
    t = f.fma(scale, _expm1_poly(f, r), f.sub(scale, f.c(1.0)))
    return f.select(f.isnan(x), x, f.copysign(f.div(t, f.add(t, f.c(2.0))), x))


def emit_logistic(f: Floats, x):
    """1 / (1 + e) for x >= 0, e / (1 + e) below, with e = exp(-|x|): nothing overflows."""
    e = emit_exp(f, f.b.fneg(f.abs(x)))
    numerator = f.select(f.cmp(">=", x, f.c(0.0)), f.c(1.0), e)
    return f.div(numerator, f.add(f.c(1.0), e))


# -- float32's hyperbolic functions and their inverses: in float64 from exp, expm1, log1p, rounded once ---------
# (float64's keep libm: near its overflow sinh and cosh need exp(|x| - ln 2), and near 1 acosh needs more care)
def emit_sinh(f: Floats, x):
    """sinh|x| = (e + e / (e + 1)) / 2 with e = expm1(|x|): no cancellation near 0; |x| capped at 100, where
    float32 has long overflowed."""
    d = Floats(f.b, F64)
    e = emit_expm1(d, d.clamp(d.abs(f.widen(x)), 0.0, 100.0))
    out = d.mul(d.add(e, d.div(e, d.add(e, d.c(1.0)))), d.c(0.5))
    return f.select(f.isnan(x), x, f.copysign(f.narrow(out, f.t), x))


def emit_cosh(f: Floats, x):
    """(e + 1/e) / 2 with e = exp(|x|), |x| capped at 100."""
    d = Floats(f.b, F64)
    e = emit_exp(d, d.clamp(d.abs(f.widen(x)), 0.0, 100.0))
    out = d.mul(d.add(e, d.div(d.c(1.0), e)), d.c(0.5))
    return f.select(f.isnan(x), x, f.narrow(out, f.t))


def emit_asinh(f: Floats, x):
    """asinh|x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): exact enough near 0, and x^2 cannot overflow float64."""
    d = Floats(f.b, F64)
    ax = d.abs(f.widen(x))
    x2 = d.mul(ax, ax)
    out = emit_log1p(d, d.add(ax, d.div(x2, d.add(d.c(1.0), d.intrinsic("sqrt", d.add(d.c(1.0), x2))))))
    out = d.select(d.cmp("==", ax, d.c(math.inf)), ax, out)  # (inf / inf above)
    return f.select(f.isnan(x), x, f.copysign(f.narrow(out, f.t), x))


def emit_acosh(f: Floats, x):
    """log1p(t + sqrt(t (2 + t))) with t = x - 1, exact in float64; NaN below 1."""
    d = Floats(f.b, F64)
    t = d.sub(f.widen(x), d.c(1.0))
    out = emit_log1p(d, d.add(t, d.intrinsic("sqrt", d.mul(t, d.add(d.c(2.0), t)))))
    return f.narrow(d.select(d.cmp("<", t, d.c(0.0)), d.c(math.nan), out), f.t)


def emit_atanh(f: Floats, x):
    """atanh|x| = log1p(2|x| / (1 - |x|)) / 2: inf at 1, NaN beyond."""
    d = Floats(f.b, F64)
    ax = d.abs(f.widen(x))
    out = d.mul(emit_log1p(d, d.div(d.add(ax, ax), d.sub(d.c(1.0), ax))), d.c(0.5))
    return f.select(f.isnan(x), x, f.copysign(f.narrow(out, f.t), x))


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


# Payne and Hanek's reduction, for |x| >= _LARGE (where j pi/2 in Cody and Waite's three pieces is no longer
# exact): x = m 2^k with m < 2^53 an integer, and x 2/pi = m G_k (mod 4) for G_k = (2^k 2/pi) mod 4, so only
# the bits of 2/pi near 2^-k matter. A table holds G_k for each k in pieces of 53 bits; the products m g are
# exact (two-product by FMA) and their sum is compensated, so the fraction left after the quadrant keeps its
# bits however close x is to a multiple of pi/2.
_LARGE = 1.5e6  # below 2^20 pi/2, and at least 2^20


def _two_over_pi(bits: int) -> int:
    """floor(2/pi 2^bits) (within one unit), from Machin's pi = 16 atan(1/5) - 4 atan(1/239) in integers."""
    scale = bits + 32

    def atan_inverse(n: int) -> int:  # atan(1/n) 2^scale
        total, power, k = 0, (1 << scale) // n, 0
        while power:
            total += (-1) ** k * (power // (2 * k + 1))
            power //= n * n
            k += 1
        return total

    pi = 16 * atan_inverse(5) - 4 * atan_inverse(239)
    return (1 << (scale + bits + 1)) // pi


_2_OVER_PI_BITS = 1400  # k <= 971 shifts 971 bits off the front; 4 pieces need 212 more and a margin


def _reduction_table(module: ir.Module, k_min: int, k_max: int, pieces: int) -> ir.GlobalVariable:
    """G_k for k in [k_min, k_max] as ``pieces`` doubles each: the first at multiples of 2^-51, each next one 53
    bits further down (all rounded to nearest, so signed and exact)."""
    name = f"srcjax.two_over_pi.{k_min}.{k_max}.{pieces}"
    if name in module.globals:
        return module.globals[name]
    bits = _2_OVER_PI_BITS
    two_over_pi = _two_over_pi(bits)
    rows = []
    for k in range(k_min, k_max + 1):
        g = (two_over_pi << k if k >= 0 else two_over_pi >> -k) % (4 << bits)
        row = []
        for i in range(pieces):
            shift = bits - 51 - 53 * i
            piece = (g + (1 << (shift - 1))) >> shift
            row.append(math.ldexp(piece, -51 - 53 * i))
            g -= piece << shift
        rows.append(ir.Constant(ir.ArrayType(F64, pieces), row))
    kind = ir.ArrayType(ir.ArrayType(F64, pieces), len(rows))
    table = ir.GlobalVariable(module, kind, name=name)
    table.global_constant, table.linkage, table.initializer = True, "internal", ir.Constant(kind, rows)
    return table


def _two_sum(d: Floats, a, b):
    """(a + b rounded, its rounding error), exactly (Knuth)."""
    s = d.add(a, b)
    v = d.sub(s, a)
    return s, d.add(d.sub(a, d.sub(s, v)), d.sub(b, v))


def _reduce_large(d: Floats, a, precision: int, max_exponent: int, pieces: int):
    """(j, r) with a = j pi/2 + r, j an integer (as a double) and |r| <= pi/4 (to rounding), for finite
    a >= _LARGE with ``precision`` significant bits below 2^(max_exponent + 1) (scalar code: the slow path)."""
    b = d.b
    bits = d.as_bits(a)
    m = d.from_bits(b.or_(b.and_(bits, d.ci((1 << 52) - 1)), d.ci(1075 << 52)))  # 2^52 <= m < 2^53
    m = d.mul(m, d.c(2.0 ** (precision - 53)))  # the integer of ``precision`` bits (the rest are zero)
    k_min, k_max = 20 - (precision - 1), max_exponent - (precision - 1)  # a = m 2^k
    row = b.sub(b.and_(b.lshr(bits, d.ci(52)), d.ci(2047)), d.ci(1023 + precision - 1 + k_min))
    row = b.select(b.icmp_signed("<", row, d.ci(0)), d.ci(0), row)
    row = b.select(b.icmp_signed(">", row, d.ci(k_max - k_min)), d.ci(k_max - k_min), row)
    table = _reduction_table(b.module, k_min, k_max, pieces)
    i32 = ir.IntType(32)
    g = [b.load(b.gep(table, [i32(0), row, i32(i)], inbounds=True)) for i in range(pieces)]

    def mod4(v):  # exact for the multiples of 2^-51 below 2^55 it meets
        return d.sub(v, d.mul(d.rint(d.mul(v, d.c(0.25))), d.c(4.0)))

    p0 = d.mul(m, g[0])
    e0 = d.fma(m, g[0], d.b.fneg(p0))  # m g0 = p0 + e0 exactly
    if precision == 24:  # m g1 < 2^-27 needs no more than its rounding, nor the sum with it a compensation
        s = d.add(mod4(p0), e0)
        p1 = d.mul(m, g[1])
        j = d.rint(d.add(s, p1))
        return j, d.mul(d.add(d.sub(s, j), p1), d.c(math.pi / 2))
    products = [(p0, e0)]
    for piece in g[1:]:
        p = d.mul(m, piece)
        products.append((p, d.fma(m, piece, d.b.fneg(p))))
    (p0, e0), (p1, e1) = products[0], products[1]
    high, low = _two_sum(d, mod4(d.add(mod4(p0), e0)), p1)
    j = d.rint(high)
    fraction, compensation = d.sub(high, j), low
    for term in [e1] + [t for p, e in products[2:] for t in (p, e)]:
        fraction, error = _two_sum(d, fraction, term)
        compensation = d.add(compensation, error)
    fraction, compensation = _two_sum(d, fraction, compensation)
    pio2_hi, pio2_lo = _split(_EXACT.divide(_PI, 2), (53, 53))
    r = d.mul(fraction, d.c(pio2_hi))
    r_low = d.fma(fraction, d.c(pio2_hi), d.b.fneg(r))
    r_low = d.add(r_low, d.fma(fraction, d.c(pio2_lo), d.mul(compensation, d.c(pio2_hi))))
    return j, d.add(r, r_low)


_VECTOR_WIDTHS = (2, 4, 8, 16)  # the loop vectoriser's choices (up to 512 bits of float32): one variant each


def _trig_large(module: ir.Module, typ: ir.Type, quarter_shift: int) -> ir.Function:
    """sin(x + quarter_shift pi/2) for |x| >= _LARGE by Payne and Hanek, for a fused loop that calls it for every
    element and selects its result where it passed flag 1: a scalar function of (x, flag) that returns x at once
    for flag 0, with vector variants (VFABI) that return at once when no lane's flag is set and otherwise work
    lane by lane. The vectoriser so keeps the loop vectorised with one variant call per vector, and after the
    inlining that follows vectorisation (``codegen_worker``) a vector of small arguments costs a test and a branch
    not taken. (Both call a third function that does the work: a variant calling the scalar function itself would
    be vectorised into a call of itself.)"""
    suffix = "f64" if typ == F64 else "f32"
    name = f"srcjax_{'sin' if quarter_shift == 0 else 'cos'}_large_{suffix}"
    if name in module.globals:
        return module.globals[name]
    i32 = ir.IntType(32)
    work = _trig_large_work(module, f"{name}_work", typ, quarter_shift)
    fn = ir.Function(module, ir.FunctionType(typ, [typ, i32]), name=name)
    fn.linkage = "internal"
    for attribute in ("noinline", "nounwind", "readonly"):  # (its work reads a table: readnone would make that UB)
        fn.attributes.add(attribute)
    set.add(fn.attributes, "willreturn")  # (llvmlite knows no willreturn, nor the mapping below)
    # (masked variants for loops whose last vector is masked, ``kernels.masked_tail``: lanes past the end hold no
    # argument, so their flags must not count)
    set.add(fn.attributes, '"vector-function-abi-variant"="' + ",".join(
        f"_ZGV_LLVM_{mask}{n}vv_{name}({name}_{mask.lower()}{n})" for n in _VECTOR_WIDTHS for mask in "NM") + '"')
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, flag = fn.args
    with b.if_then(b.icmp_unsigned("!=", flag, i32(0))):
        b.ret(b.call(work, [x]))
    b.ret(x)
    variants = [_lanes_variant(module, work, f"{name}_n{n}", typ, n) for n in _VECTOR_WIDTHS]
    masked = [_masked_variant(module, v, f"{name}_m{n}") for v, n in zip(variants, _VECTOR_WIDTHS)]
    _keep(module, [fn] + variants + masked)
    return fn


def _masked_variant(module: ir.Module, variant: ir.Function, name: str) -> ir.Function:
    """``variant`` with a mask of the lanes that hold arguments (the last vector of a masked loop): the others'
    flags are cleared first (their values are poison)."""
    vector, flags = variant.function_type.args
    n = vector.count
    fn = ir.Function(module, ir.FunctionType(vector, [vector, flags, ir.VectorType(ir.IntType(1), n)]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, flag, mask = fn.args
    b.ret(b.call(variant, [x, b.select(mask, flag, ir.Constant(flags, [0] * n))]))
    return fn


def _trig_large_work(module: ir.Module, name: str, typ: ir.Type, quarter_shift: int) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(typ, [typ]), name=name)
    fn.linkage = "internal"
    for attribute in ("noinline", "nounwind", "readonly"):
        fn.attributes.add(attribute)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    f, d = Floats(b, typ), Floats(b, F64)
    xd = f.widen(fn.args[0])
    j, r = _reduce_large(d, d.abs(xd), *((53, 1023, 4) if f.double else (24, 127, 2)))
    negative = d.cmp("<", xd, d.c(0.0))
    j, r = d.select(negative, b.fneg(j), j), d.select(negative, b.fneg(r), r)
    b.ret(f.narrow(_by_quadrant(d, f, j, r, quarter_shift), typ))
    return fn


def _lanes_variant(module: ir.Module, work: ir.Function, name: str, typ: ir.Type, n: int) -> ir.Function:
    """The ``n``-lane variant: the vector unchanged unless a flag is set, then ``work`` on each flagged lane. It is
    inlined where the loop calls it: a test and a branch not taken, the lane by lane work a call away (inlined
    too, it was 16 branches and calls in every vectorised sin or cos: most of a long chain's compile time)."""
    i32 = ir.IntType(32)
    vector, flags = ir.VectorType(typ, n), ir.VectorType(i32, n)
    fn, lanes = (ir.Function(module, ir.FunctionType(vector, [vector, flags]), name=f) for f in (name, name + "_lanes"))
    for function, inline in ((fn, "alwaysinline"), (lanes, "noinline")):
        function.linkage = "internal"
        function.attributes.add(inline)
        function.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, flag = fn.args
    reduce_or = module.globals.get(f"llvm.vector.reduce.or.v{n}i1") or ir.Function(
        module, ir.FunctionType(ir.IntType(1), [ir.VectorType(ir.IntType(1), n)]), name=f"llvm.vector.reduce.or.v{n}i1")
    with b.if_then(b.call(reduce_or, [b.icmp_unsigned("!=", flag, ir.Constant(flags, [0] * n))]), likely=False):
        b.ret(b.call(lanes, [x, flag]))
    b.ret(x)
    b = ir.IRBuilder(lanes.append_basic_block("entry"))
    x, flag = lanes.args
    out = x
    for lane in range(n):
        before = b.block
        value = b.extract_element(x, i32(lane))
        with b.if_then(b.icmp_unsigned("!=", b.extract_element(flag, i32(lane)), i32(0))):
            done = b.call(work, [value])
            inside = b.block
        merged = b.phi(typ)
        merged.add_incoming(done, inside)
        merged.add_incoming(value, before)
        out = b.insert_element(out, merged, i32(lane))
    b.ret(out)
    return fn


def _keep(module: ir.Module, functions: list[ir.Function]) -> None:
    """Functions the optimiser must not delete before the vectoriser calls them (``llvm.compiler.used``)."""
    ptr = ir.PointerType(ir.IntType(8))
    old = module.globals.get("llvm.compiler.used")
    kept = list(old.initializer.constant) if old is not None else []
    kept += [f.bitcast(ptr) for f in functions]
    if old is not None:
        del module.globals["llvm.compiler.used"]
        module.scope._useset.discard("llvm.compiler.used")
    keep = ir.GlobalVariable(module, ir.ArrayType(ptr, len(kept)), name="llvm.compiler.used")
    keep.linkage, keep.section = "appending", "llvm.metadata"
    keep.initializer = ir.Constant(ir.ArrayType(ptr, len(kept)), kept)


def _by_quadrant(d: Floats, f: Floats, j, r, quarter_shift: int):
    """sin(j pi/2 + r + quarter_shift pi/2) in float64 from the Taylor series of sin r or cos r by j mod 4."""
    sin_r, cos_r = _sin_cos_poly(d, r, 9 if f.double else 5)
    quadrant = f.b.and_(f.b.add(d.to_int(j), d.ci(quarter_shift)), d.ci(3))
    use_cos = f.b.trunc(quadrant, ir.IntType(1))  # odd quadrants
    negate = f.b.icmp_unsigned(">=", quadrant, d.ci(2))
    y = d.select(use_cos, cos_r, sin_r)
    return d.select(negate, d.b.fneg(y), y)


def _sin_or_cos(f: Floats, x, quarter_shift: int):
    """sin(x + quarter_shift pi/2), in float64 (float32 arguments are widened, the result rounded); beyond
    2^20 pi/2, in the host's code, by ``_trig_large``."""
    d = Floats(f.b, F64)
    xd = f.widen(x)
    finite = d.isfinite(xd)
    x0 = d.select(finite, xd, d.c(0.0))
    j = d.rint(d.mul(x0, d.c(2 / math.pi)))
    r = x0
    for piece in _PIO2:
        r = d.fma(d.b.fneg(j), d.c(piece), r)
    y = d.select(finite, _by_quadrant(d, f, j, r, quarter_shift), d.c(math.nan))
    y = f.narrow(y, f.t)
    if engine.emitting_for_host():
        large = f.b.and_(finite, d.cmp(">=", d.abs(xd), d.c(_LARGE)))
        slow = f.b.call(_trig_large(f.b.module, f.t, quarter_shift), [x, f.b.zext(large, ir.IntType(32))])
        y = f.select(large, slow, y)
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


def _erfc_positive(d: Floats, y, cap: float):
    """erfc(y) for y > 0.46875 in float64, y capped at ``cap``: exp(-y^2) R/S up to 4, exp(-y^2)/y (1/sqrt(pi) -
    T/(y^2 U)) in 1/y^2 beyond; exp(-y^2) = exp(-h^2) exp(-(y-h)(y+h)) with h the multiple of 1/16 below y,
    so that y^2 is never rounded."""
    yl = d.select(d.cmp(">", y, d.c(cap)), d.c(cap), y)
    middle = _ratio(d, special._ERFC_R, special._ERFC_S, yl)
    inv2 = d.div(d.c(1.0), d.mul(yl, yl))
    tail_ratio = d.div(
        d.mul(inv2, d.horner(list(reversed(special._ERFC_T)), inv2)), d.horner(list(reversed(special._ERFC_U)), inv2)
    )
    tail = d.div(d.sub(d.c(special._INV_SQRT_PI), tail_ratio), yl)
    ratio = d.select(d.cmp("<=", yl, d.c(4.0)), middle, tail)
    h = d.div(d.intrinsic("trunc", d.mul(yl, d.c(16.0))), d.c(16.0))
    gauss = d.mul(emit_exp(d, d.b.fneg(d.mul(h, h))), emit_exp(d, d.b.fneg(d.mul(d.sub(yl, h), d.add(yl, h)))))
    return d.mul(gauss, ratio)


# float32's erf and erfc, computed in float64 with one division and one exp (Cody's five divisions and two exps
# are for float64's last bits). erf(x) = x T(x^2) for |x| <= 0.46875, with T the Taylor series of erf(x)/x to
# x^14 (the first term left out is below 1e-10 of the sum there). Above, erfc(y) = exp(-y^2) erfcx(y), y^2 exact
# in float64, and erfcx(y) = exp(y^2) erfc(y) on [0.46875, 10.1] (erf is 1 in float32 beyond 3.92, erfc 0
# beyond 10.06) is a polynomial of degree 10 in s = A (y - 3)/(y + 3) + B, which maps the interval to [-1, 1]
# and makes erfcx's 1/(sqrt(pi) y) tail smooth: a least-squares fit on 600 Chebyshev nodes of s against
# mpmath's erfc at 40 digits, relative error below 6e-10 (float32's half ulp is 3e-8). The exp needs no more
# digits than that either (degree 9).
_TWO_OVER_SQRT_PI = float(_EXACT.divide(2, _PI.sqrt(_EXACT)))
_ERF_TAYLOR = [_TWO_OVER_SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(8)]
_ERFCX_RANGE = (0.46875, 10.1)
_ERFCX_MAP = (float.fromhex("0x1.929b295d87648p+0"), float.fromhex("0x1.2e59602fd8213p-3"))  # A, B
_ERFCX_POLY = [float.fromhex(h) for h in (  # lowest degree first
    "0x1.b202f562674f5p-3", "-0x1.ea5e9596f582ap-3", "0x1.e35d9ee76522dp-4", "-0x1.797f081ce4935p-5",
    "0x1.c01b881a8290ap-7", "-0x1.6aec3063f2adbp-9", "0x1.fa709b2a60004p-13", "0x1.9ab2060d9c96fp-15",
    "-0x1.0ec466707b88bp-16", "-0x1.990f11570adf6p-22", "0x1.6791880e705c3p-21",
)]


def _erf_float32(f: Floats, x):
    """(x in float64, |x| <= 0.46875, erf(x) there, erfc(|x|) elsewhere) for a float32 x; NaN lanes are poison."""
    d = Floats(f.b, F64)
    xd = f.widen(x)
    y = d.abs(xd)
    erf_small = d.mul(xd, d.horner(_ERF_TAYLOR, d.mul(xd, xd)))
    yl = d.clamp(y, *_ERFCX_RANGE)
    scale, shift = _ERFCX_MAP
    s = d.fma(d.div(d.sub(yl, d.c(3.0)), d.add(yl, d.c(3.0))), d.c(scale), d.c(shift))
    erfc_large = d.mul(emit_exp(d, d.b.fneg(d.mul(yl, yl)), degree=9), d.horner(_ERFCX_POLY, s))
    return d, xd, d.cmp("<=", y, d.c(_ERFCX_RANGE[0])), erf_small, erfc_large


def emit_erf(f: Floats, x):
    """Cody: x P(x^2)/Q(x^2) for |x| <= 0.46875, else 1 - erfc(|x|) (erf is 1 to the last bit beyond 6); float32
    by the cheaper series above."""
    if not f.double:
        d, xd, small, erf_small, erfc_large = _erf_float32(f, x)
        out = d.select(small, erf_small, d.copysign(d.sub(d.c(1.0), erfc_large), xd))
        return f.select(f.isnan(x), x, f.narrow(out, f.t))
    d = Floats(f.b, F64)
    xd = f.widen(x)
    y = d.abs(xd)
    small = d.cmp("<=", y, d.c(special._ERF_SMALL))
    erf_small = d.mul(xd, _ratio(d, special._ERF_P, special._ERF_Q, d.mul(xd, xd)))
    large = d.copysign(d.sub(d.c(1.0), _erfc_positive(d, d.select(small, d.c(1.0), y), 6.0)), xd)
    out = d.select(small, erf_small, large)
    return f.select(f.isnan(x), x, f.narrow(out, f.t))


def emit_erfc(f: Floats, x):
    """1 - x P(x^2)/Q(x^2) for |x| <= 0.46875, erfc(|x|) above and 2 - erfc(|x|) below (it underflows
    to 0 before |x| = 27.3, where exp(-h^2) does); float32 by the cheaper series above."""
    if not f.double:
        d, xd, small, erf_small, erfc_large = _erf_float32(f, x)
        large = d.select(d.cmp("<", xd, d.c(0.0)), d.sub(d.c(2.0), erfc_large), erfc_large)
        return f.select(f.isnan(x), x, f.narrow(d.select(small, d.sub(d.c(1.0), erf_small), large), f.t))
    d = Floats(f.b, F64)
    xd = f.widen(x)
    y = d.abs(xd)
    small = d.cmp("<=", y, d.c(special._ERF_SMALL))
    erfc_small = d.sub(d.c(1.0), d.mul(xd, _ratio(d, special._ERF_P, special._ERF_Q, d.mul(xd, xd))))
    tail = _erfc_positive(d, d.select(small, d.c(1.0), y), 28.0)
    large = d.select(d.cmp("<", xd, d.c(0.0)), d.sub(d.c(2.0), tail), tail)
    out = d.select(small, erfc_small, large)
    return f.select(f.isnan(x), x, f.narrow(out, f.t))


# -- erf_inv: XLA's algorithm operation by operation (see ``special.erf_inv``) ------------------------------
def _f32_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _xla_log_f32(f: Floats, y):
    """XLA's float32 log: y = 2^e m, m in [sqrt(1/2), sqrt(2)), e log2 + log1p(m - 1) with log1p(r) =
    r - r^2/2 + r^3 q(r), q of degree 8 in three interleaved parts, log 2 in two pieces."""
    b = f.b
    smallest = f.c(2.0**-126)
    bits = f.as_bits(f.select(f.cmp(">", y, smallest), y, smallest))
    m = f.from_bits(b.or_(b.and_(bits, f.ci(0x807FFFFF)), f.ci(0x3F000000)))  # in [1/2, 1)
    e = f.add(f.from_int(b.sub(b.lshr(bits, f.ci(23)), f.ci(127))), f.c(1.0))
    below = f.cmp("<", m, f.c(_f32_bits(0x3F3504F3)))
    r = f.add(f.sub(m, f.c(1.0)), f.select(below, m, f.c(0.0)))
    e = f.sub(e, f.select(below, f.c(1.0), f.c(0.0)))
    r2 = f.mul(r, r)
    r3 = f.mul(r2, r)
    q0, q1, q2 = (
        f.fma(f.fma(r, f.c(_f32_bits(p)), f.c(_f32_bits(q))), r, f.c(_f32_bits(s))) for p, q, s in special._LOG_Q
    )
    q = f.fma(f.fma(q0, r3, q1), r3, q2)
    tail = f.fma(q, r3, f.mul(e, f.c(_f32_bits(0xB95E8083))))
    out = f.fma(e, f.c(_f32_bits(0x3F318000)), f.add(f.sub(r, f.mul(r2, f.c(0.5))), tail))
    out = f.select(f.cmp("==", y, f.c(0.0)), f.c(-math.inf), f.select(f.cmp("==", y, f.c(math.inf)), y, out))
    return f.select(f.b.fcmp_unordered("ult", y, f.c(0.0)), f.c(math.nan), out)


def _xla_log1p(f: Floats, v):
    """Cephes' rational v - v^2/2 + v^3 P(v)/Q(v) for |v| < sqrt(2) - 1, else log(1 + v)."""
    v2 = f.mul(v, v)
    ratio = f.div(
        f.horner(list(reversed(special._LOG1P_NUMERATOR)), v), f.horner(list(reversed(special._LOG1P_DENOMINATOR)), v)
    )
    small = f.add(v, f.add(f.mul(v2, f.c(-0.5)), f.mul(f.mul(v, v2), ratio)))
    one = f.add(v, f.c(1.0))
    large = emit_log(f, one) if f.double else _xla_log_f32(f, one)
    return f.select(f.cmp("<", f.abs(v), f.c(0.41421356237309504880)), small, large)


def emit_erf_inv(f: Floats, x):
    """x p(t) with w = -log1p(-x^2) and Giles' polynomials p in t = w - c or sqrt(w) - c, by range of w;
    +-inf at +-1, NaN outside [-1, 1]. Every Horner step is an FMA, as in XLA's CPU code."""
    if f.double:
        pieces = [special._ERF_INV64_SMALL, special._ERF_INV64_MIDDLE, special._ERF_INV64_LARGE]
        bounds, centers = [6.25, 16.0], [3.125, 3.25, 5.0]
    else:
        pieces, bounds, centers = [special._ERF_INV32_SMALL, special._ERF_INV32_LARGE], [5.0], [2.5, 3.0]
    w = f.b.fneg(_xla_log1p(f, f.mul(x, f.b.fneg(x))))
    root = f.intrinsic("sqrt", w)
    p = None
    for i in reversed(range(len(pieces))):  # the last piece also takes NaN
        t = f.sub(w if i == 0 else root, f.c(centers[i]))
        value = f.horner(list(reversed(pieces[i])), t)
        p = value if p is None else f.select(f.cmp("<", w, f.c(bounds[i])), value, p)
    return f.mul(x, f.select(f.cmp("==", f.abs(x), f.c(1.0)), f.c(math.inf), p))


# -- lgamma, digamma: in float64, the series of ``special`` (float32 needs fewer terms) ---------------------
def _sin_cos_pi(d: Floats, r, terms: int):
    """(sin(pi r), cos(pi r)) for |r| <= 1/2: the Taylor series at pi |r| <= pi/4, or at pi (1/2 - |r|) with
    sine and cosine swapped (1/2 - |r| is exact)."""
    a = d.abs(r)
    swap = d.cmp(">", a, d.c(0.25))
    s, c = _sin_cos_poly(d, d.mul(d.select(swap, d.sub(d.c(0.5), a), a), d.c(math.pi)), terms)
    return d.copysign(d.select(swap, c, s), r), d.select(swap, s, c)


def _high_first(d: Floats, coefficients: list[float], x, terms: int | None = None):
    """Horner on coefficients listed highest degree first, keeping only the lowest ``terms`` of them."""
    kept = coefficients if terms is None else coefficients[-terms:]
    return d.horner(list(reversed(kept)), x)


def _poles(d: Floats, x):
    """x is 0 or a negative integer."""
    return d.b.and_(d.cmp("<=", x, d.c(0.0)), d.cmp("==", x, d.intrinsic("floor", x)))


def _reflect(d: Floats, x):
    """(x < 0, the positive argument): 1 - x below 0, x above, 1 for 0 and NaN (their results are fixed)."""
    negative = d.cmp("<", x, d.c(0.0))
    return negative, d.select(negative, d.sub(d.c(1.0), x), d.select(d.cmp(">", x, d.c(0.0)), x, d.c(1.0)))


def _lgamma_positive(d: Floats, x, double: bool):
    """lgamma for x > 0: lgamma(2 + z) by its series in |z| <= 1/2 after recurrences, Stirling from ``big``
    on. One log serves every branch: -log x below 3/2 (x (1 + x) below 1/2), log of the product of the
    recurrence's factors up to ``big``, log x in Stirling's formula."""
    big_from, steps, terms = (13.0, 11, None) if double else (4.0, 2, 17)
    big = d.cmp(">=", x, d.c(big_from))
    small = d.select(big, d.c(2.0), x)
    tiny = d.cmp("<", small, d.c(0.5))
    low = d.b.and_(d.cmp(">=", small, d.c(0.5)), d.cmp("<", small, d.c(1.5)))
    z = d.select(low, d.sub(small, d.c(1.0)), small)  # exact
    product = d.c(1.0)
    for _ in range(steps):  # lgamma(z) = lgamma(z - 1) + log(z - 1)
        down = d.cmp(">", z, d.c(2.5))
        z = d.select(down, d.sub(z, d.c(1.0)), z)
        product = d.select(down, d.mul(product, z), product)
    below = d.b.or_(tiny, low)
    z = d.select(below, z, d.sub(z, d.c(2.0)))
    log_arg = d.select(d.b.or_(big, low), x, d.select(tiny, d.mul(small, d.add(small, d.c(1.0))), product))
    log_value = emit_log(d, log_arg)
    series = d.add(_high_first(d, special._LGAMMA_AT_2, z, terms), d.select(below, d.b.fneg(log_value), log_value))
    xb = d.select(big, x, d.c(big_from))
    inv = d.div(d.c(1.0), xb)
    stirling = d.fma(d.sub(xb, d.c(0.5)), d.sub(log_value, d.c(1.0)), d.c(special._HALF_LOG_2PI - 0.5))
    stirling = d.fma(inv, _high_first(d, special._STIRLING, d.mul(inv, inv)), stirling)
    return d.select(big, stirling, series)


def emit_lgamma(f: Floats, x):
    """log |Gamma(x)|, reflected below 0 (Gamma(x) Gamma(1 - x) = pi / sin(pi x)); +inf at the poles and at
    +-inf."""
    d = Floats(f.b, F64)
    xd = f.widen(x)
    negative, argument = _reflect(d, xd)
    positive = _lgamma_positive(d, argument, f.double)
    sin_pi, _ = _sin_cos_pi(d, d.sub(xd, d.rint(xd)), 9 if f.double else 5)
    # next to 0 pi x would lose bits as a subnormal; lgamma(x) = -log|x| to the last bit there
    tiny = d.cmp("<", d.abs(xd), d.c(2.0**-60))
    log_sin = emit_log(d, d.select(tiny, d.abs(xd), d.abs(sin_pi)))
    reflected = d.sub(d.sub(d.c(special._LOG_PI), log_sin), positive)
    out = d.select(negative, d.select(tiny, d.b.fneg(log_sin), reflected), positive)
    out = d.select(d.b.or_(_poles(d, xd), d.cmp("==", d.abs(xd), d.c(math.inf))), d.c(math.inf), out)
    return f.select(f.isnan(x), x, f.narrow(out, f.t))


def _digamma_positive(d: Floats, x, double: bool):
    """psi for x > 0: the series at the root x0 on (1, 2] after psi(x) = psi(x + 1) - 1/x below 1 or
    psi(x) = psi(x - 1) + 1/(x - 1) above 2, the asymptotic series from ``big`` on. The recurrence's sum of
    reciprocals is kept as one fraction num/den (all its terms have one sign), so it costs one division."""
    big_from, steps, terms = (10.0, 8, None) if double else (4.0, 2, 25)
    big = d.cmp(">=", x, d.c(big_from))
    z = d.select(big, d.c(1.5), x)
    up = d.cmp("<", z, d.c(1.0))
    num = d.select(up, d.c(-1.0), d.c(0.0))
    den = d.select(up, z, d.c(1.0))
    z = d.select(up, d.add(z, d.c(1.0)), z)
    for _ in range(steps):  # num/den + 1/z = (num z + den) / (den z)
        down = d.cmp(">", z, d.c(2.0))
        z = d.select(down, d.sub(z, d.c(1.0)), z)
        num = d.select(down, d.fma(num, z, den), num)
        den = d.select(down, d.mul(den, z), den)
    t = d.sub(d.sub(z, d.c(special._ROOT_HI)), d.c(special._ROOT_LO))
    near_root = d.add(_high_first(d, special._DIGAMMA_AT_ROOT, t, terms), d.div(num, den))
    xb = d.select(big, x, d.c(big_from))
    inv = d.div(d.c(1.0), xb)
    inv2 = d.mul(inv, inv)
    asymptotic = d.sub(
        emit_log(d, xb), d.fma(inv, d.c(0.5), d.mul(inv2, _high_first(d, special._DIGAMMA_ASYMPTOTIC, inv2)))
    )
    return d.select(big, asymptotic, near_root)


def emit_digamma(f: Floats, x):
    """psi(x), reflected below 0 (psi(1 - x) - psi(x) = pi cot(pi x), cot taken at x - rint(x)); NaN at the
    poles and at -inf, +inf at +inf."""
    d = Floats(f.b, F64)
    xd = f.widen(x)
    negative, argument = _reflect(d, xd)
    positive = _digamma_positive(d, argument, f.double)
    r = d.sub(xd, d.rint(xd))
    sin_pi, cos_pi = _sin_cos_pi(d, r, 9 if f.double else 5)
    # next to 0 pi r would lose bits as a subnormal; pi cot(pi r) = 1/r to the last bit there
    tiny = d.cmp("<", d.abs(r), d.c(2.0**-60))
    cot = d.div(d.select(tiny, d.c(1.0), d.mul(d.c(math.pi), cos_pi)), d.select(tiny, r, sin_pi))
    reflected = d.sub(positive, cot)
    out = d.select(negative, reflected, positive)
    out = d.select(d.b.or_(_poles(d, xd), d.cmp("==", xd, d.c(-math.inf))), d.c(math.nan), out)
    out = d.select(d.cmp("==", xd, d.c(math.inf)), xd, out)
    return f.select(f.isnan(x), x, f.narrow(out, f.t))


# -- pow --------------------------------------------------------------------------------------------------
def emit_pow(f: Floats, x, y):
    """x^y for float32 (float64 keeps libm's pow): exp2(y log2|x|) in float64, where the product's rounding
    costs 2^-53 of a result float32 rounds to 2^-24, or binary powering for integer y below 64; the sign of x for
    odd integer y, and C99's (NumPy's) special cases: x^0 = 1^y = 1 even for NaN, (-1)^(+-inf) = 1, NaN for
    finite x < 0 and finite y not an integer; zeros and infinities come out of log and exp as C99 has them
    (0^-3 = inf, (-0)^-3 = -inf)."""
    d = Floats(f.b, F64)
    xd, yd = f.widen(x), f.widen(y)
    magnitude = emit_exp2(d, d.mul(yd, _log2_exact_powers(d, d.abs(xd))))
    b = f.b
    integer = d.cmp("==", d.intrinsic("floor", yd), yd)
    half = d.mul(yd, d.c(0.5))
    odd = b.and_(integer, d.cmp("!=", d.intrinsic("floor", half), half))  # (beyond 2^53 every double is even)
    negative = b.icmp_signed("<", d.as_bits(xd), d.ci(0))  # (-0 included)
    out = d.select(b.and_(negative, odd), b.fneg(magnitude), magnitude)
    finite_pair = b.and_(d.isfinite(xd), d.isfinite(yd))
    out = d.select(b.and_(b.and_(d.cmp("<", xd, d.c(0.0)), finite_pair), b.not_(integer)), d.c(math.nan), out)
    out = d.select(b.and_(integer, d.cmp("<", d.abs(yd), d.c(64.0))), _integer_power(d, xd, yd), out)
    one = b.or_(b.or_(d.cmp("==", xd, d.c(1.0)), d.cmp("==", yd, d.c(0.0))),
                b.and_(d.cmp("==", d.abs(xd), d.c(1.0)), d.cmp("==", d.abs(yd), d.c(math.inf))))
    return f.narrow(d.select(one, d.c(1.0), out), f.t)


def _log2_exact_powers(d: Floats, x):
    """log2(x) for a float64 x >= 0 that is a widened float32 (never subnormal) as e + log(m)/ln2: exactly e for
    x = 2^e, so that (2^e)^y = exp2(y e) is exact and ties round as they should (2^-150 to 0)."""
    b = d.b
    bits = d.as_bits(x)
    e = d.from_int(b.sub(b.lshr(bits, d.ci(52)), d.ci(1023)))
    m = d.from_bits(b.or_(b.and_(bits, d.ci((1 << 52) - 1)), d.ci(1023 << 52)))
    out = d.fma(emit_log(d, m), d.c(1 / math.log(2)), e)
    out = d.select(d.cmp("==", x, d.c(0.0)), d.c(-math.inf), out)
    return d.select(d.cmp("==", x, d.c(math.inf)), x, d.select(d.isnan(x), x, out))


def _integer_power(d: Floats, x, y):
    """x^y for integer |y| < 64 (in the lanes that have one) by binary powering in float64, of 1/x for y < 0.
    Where x^y is a float32 tie (25 significant bits) it is exact: x then has at most 25/|y| + 1 bits, so every
    partial product fits in 53; elsewhere it is within a few 2^-53 like exp(y log|x|), whose rounding can
    fall on either side of a tie."""
    b = d.b
    n = b.fptosi(d.select(d.cmp("<", d.abs(y), d.c(64.0)), d.abs(y), d.c(0.0)), ir.IntType(32))
    power = d.select(d.cmp("<", y, d.c(0.0)), d.div(d.c(1.0), x), x)
    result = d.c(1.0)
    for bit in range(6):
        chosen = b.icmp_unsigned("!=", b.and_(n, ir.Constant(ir.IntType(32), 1 << bit)), ir.Constant(ir.IntType(32), 0))
        result = d.select(chosen, d.mul(result, power), result)
        if bit < 5:
            power = d.mul(power, power)
    return result


# -- the table and the module-level entry ---------------------------------------------------------------
BINARY = {"pow"}  # (the others take one argument)
EMITTERS: dict[str, Callable[..., ir.Value]] = {
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
    "erfc": emit_erfc,
    "erf_inv": emit_erf_inv,
    "lgamma": emit_lgamma,
    "digamma": emit_digamma,
    "pow": emit_pow,
    "sinh": emit_sinh,
    "cosh": emit_cosh,
    "asinh": emit_asinh,
    "acosh": emit_acosh,
    "atanh": emit_atanh,
}


def math_function(module: ir.Module, name: str, typ: ir.Type) -> ir.Function:
    """The function ``name`` (a key of ``EMITTERS``) for ``typ`` (float or double), defined in ``module``
    once as ``internal alwaysinline`` so that it disappears into the loops that call it."""
    symbol = f"srcjax.{name}.{'f64' if typ == F64 else 'f32'}"
    if symbol in module.globals:
        return module.globals[symbol]
    fn = ir.Function(module, ir.FunctionType(typ, [typ] * (2 if name in BINARY else 1)), name=symbol)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(EMITTERS[name](Floats(builder, typ), *fn.args))
    return fn
