"""Integrals among ``srcjax.scipy.special``'s functions: Dawson's ``dawsn``, the Fresnel integrals, the sine
and cosine integrals ``sici``, the generalized exponential integral ``expn``, Owen's T and the Faddeeva
function ``wofz``, by the same approximations as JAX's (Cephes' rational functions, Weideman's rational
series, a 13-point quadrature), so that the numbers agree with JAX's to the last bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcjax.runtime.numpy import _core
from srcjax.runtime.scipy._lazy import _custom_jvp, _jnp, _lax

__all__ = ["dawsn", "fresnel", "sici", "expn", "owens_t", "wofz"]


def _real(name: str, x: Any) -> Any:
    """``x`` promoted to an inexact dtype, refused when complex (JAX's ValueError)."""
    _core.check_arraylike(name, x)
    (x,) = _core.promote_args_inexact(name, x)
    if np.issubdtype(_core.aval(x).dtype, np.complexfloating):
        raise ValueError(f"{name} does not support complex-valued inputs.")
    return x


def _widened(x: Any) -> Any:
    """float16 and bfloat16 computed in float32 (the coefficients below need float32's digits), as JAX does."""
    if np.dtype(_core.aval(x).dtype) in (np.dtype(np.float32), np.dtype(np.float64)):
        return x
    return x.astype(np.float32)


def _poly(coefficients: Any, x: Any) -> Any:
    """The polynomial of ``coefficients`` (highest degree first) at x, the coefficients in x's dtype."""
    return _jnp().polyval(np.asarray(coefficients, _core.aval(x).dtype), x)


# -- Dawson's integral ---------------------------------------------------------------------------------------------
# Cody, Paciorek and Thacher (1970): y = x P(x^2) / Q(x^2) on [0, 3.25); y = (1 + t P(t) / Q(t)) / (2x), t = 1/x^2,
# on [3.25, 6.25) and [6.25, inf) with two other pairs.
_DAWSN_AN = (1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
             9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
             -8.50149846724410912031e-4, 4.22618223005546594270e-2, -9.17480371773452345351e-2,
             9.99999999999999994612e-1)
_DAWSN_AD = (2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
             1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
             3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
             5.74918629489320327824e-1, 1.00000000000000000539e0)
_DAWSN_BN = (5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
             -2.18711255142039025206e-2, 3.66207612329569181322e-3, -4.23209114460388756528e-4,
             3.59641304793896631888e-5, -2.14640351719968974225e-6, 9.10010780076391431042e-8,
             -2.40274520828250956942e-9, 3.59233385440928410398e-11)
_DAWSN_BD = (1.0, -6.31839869873368190192e-1, 2.36706788228248691528e-1, -5.31806367003223277662e-2,
             8.48041718586295374409e-3, -9.47996768486665330168e-4, 7.81025592944552338085e-5,
             -4.55875153252442634831e-6, 1.89100358111421846170e-7, -4.91324691331920606875e-9,
             7.18466403235734541950e-11)
_DAWSN_CN = (-5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
             1.64837047825189632310e-2, -4.86827613020462700845e-4)
_DAWSN_CD = (1.0, -2.69820057197544900361e0, 1.73270799045947845857e0, -3.93708582281939493482e-1,
             3.44278924041233391079e-2, -9.73655226040941223894e-4)


def _dawsn_value(x: Any) -> Any:
    jnp = _jnp()
    ax = jnp.abs(x)
    t = 1 / (ax * ax)
    near, middle = ax < 3.25, (ax >= 3.25) & (ax < 6.25)
    # each region at a harmless point elsewhere: the polynomials overflow far out, and inf / inf would be NaN
    ax1 = jnp.where(near, ax, 1)
    ax1_2 = ax1 * ax1
    region1 = ax1 * _poly(_DAWSN_AN, ax1_2) / _poly(_DAWSN_AD, ax1_2)
    t2, ax2 = jnp.where(middle, t, 1), jnp.where(middle, ax, 1)
    region2 = (0.5 / ax2) * (1 + t2 * _poly(_DAWSN_BN, t2) / _poly(_DAWSN_BD, t2))
    far = ax >= 6.25
    t3, ax3 = jnp.where(far, t, 1), jnp.where(far, ax, 1)
    region3 = (0.5 / ax3) * (1 + t3 * _poly(_DAWSN_CN, t3) / _poly(_DAWSN_CD, t3))
    return jnp.sign(x) * jnp.where(near, region1, jnp.where(middle, region2, region3))


@_custom_jvp()
def _dawsn(x: Any) -> Any:
    return _dawsn_value(_widened(x)).astype(_core.aval(x).dtype)


@_dawsn.defjvp
def _dawsn_jvp(primals, tangents):
    """d dawsn = 1 - 2 x dawsn(x)"""
    (x,), (x_dot,) = primals, tangents
    y = _dawsn(x)
    return y, x_dot * (1 - 2 * x * y)


def dawsn(x: Any) -> Any:
    """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt (real x)."""
    return _dawsn(_real("dawsn", x))


# -- the Fresnel integrals -----------------------------------------------------------------------------------------
# Cephes' fresnl (float64: rational functions) and fresnlf (float32: polynomials) for S(x) and C(x) when
# x^2 < 2.5625, and for the auxiliary functions f and g of 1 / (pi x^2) beyond.
_FRESNEL_32 = dict(
    sn=(1.647629463788700e-9, -1.522754752581096e-7, 8.424748808502400e-6, -3.120693124703272e-4,
        7.244727626597022e-3, -9.228055941124598e-2, 5.235987735681432e-1),
    cn=(1.416802502367354e-8, -1.157231412229871e-6, 5.387223446683264e-5, -1.604381798862293e-3,
        2.818489036795073e-2, -2.467398198317899e-1, 9.999999760004487e-1),
    fn=(-1.903009855649792e12, 1.355942388050252e11, -4.158143148511033e9, 7.343848463587323e7,
        -8.732356681548485e5, 8.560515466275470e3, -1.032877601091159e2, 2.999401847870011e0),
    gn=(-1.860843997624650e11, 1.278350673393208e10, -3.779387713202229e8, 6.492611570598858e6,
        -7.787789623358162e4, 8.602931494734327e2, -1.493439396592284e1, 9.999841934744914e-1),
)
_FRESNEL_64 = dict(
    sn=(-2.99181919401019853726e3, 7.08840045257738576863e5, -6.29741486205862506537e7, 2.54890880573376359104e9,
        -4.42979518059697779103e10, 3.18016297876567817986e11),
    sd=(1.0, 2.81376268889994315696e2, 4.55847810806532581675e4, 5.17343888770096400730e6,
        4.19320245898111231129e8, 2.24411795645340920940e10, 6.07366389490084639049e11),
    cn=(-4.98843114573573548651e-8, 9.50428062829859605134e-6, -6.45191435683965050962e-4,
        1.88843319396703850064e-2, -2.05525900955013891793e-1, 9.99999999999999998822e-1),
    cd=(3.99982968972495980367e-12, 9.15439215774657478799e-10, 1.25001862479598821474e-7,
        1.22262789024179030997e-5, 8.68029542941784300606e-4, 4.12142090722199792936e-2, 1.00000000000000000118e0),
    fn=(4.21543555043677546506e-1, 1.43407919780758885261e-1, 1.15220955073585758835e-2, 3.45017939782574027900e-4,
        4.63613749287867322088e-6, 3.05568983790257605827e-8, 1.02304514164907233465e-10,
        1.72010743268161828879e-13, 1.34283276233062758925e-16, 3.76329711269987889006e-20),
    fd=(1.0, 7.51586398353378947175e-1, 1.16888925859191382142e-1, 6.44051526508858611005e-3,
        1.55934409164153020873e-4, 1.84627567348930545870e-6, 1.12699224763999035261e-8,
        3.60140029589371370404e-11, 5.88754533621578410010e-14, 4.52001434074129701496e-17,
        1.25443237090011264384e-20),
    gn=(5.04442073643383265887e-1, 1.97102833525523411709e-1, 1.87648584092575249293e-2, 6.84079380915393090172e-4,
        1.15138826111884280931e-5, 9.82852443688422223854e-8, 4.45344415861750144738e-10,
        1.08268041139020870318e-12, 1.37555460633261799868e-15, 8.36354435630677421531e-19,
        1.86958710162783235106e-22),
    gd=(1.0, 1.47495759925128324529e0, 3.37748989120019970451e-1, 2.53603741420338795122e-2,
        8.14679107184306179049e-4, 1.27545075667729118702e-5, 1.04314589657571990585e-7,
        4.60680728146520428211e-10, 1.10273215066240270757e-12, 1.38796531259578871258e-15,
        8.39158816283118707363e-19, 1.86958710162783236342e-22),
)


def _sin_cos_half_pi_square(x: Any) -> tuple[Any, Any]:
    """(sin(pi x^2 / 2), cos(pi x^2 / 2)) with the argument reduced exactly: r = (x^2 / 2) mod 2 is
    (s (x - s/2)) mod 2 with s = x mod 2 (SciPy's sinpi and cospi), so that large x keep their phase."""
    jnp = _jnp()
    x = jnp.abs(x)
    s = jnp.fmod(x, 2.0)
    r = jnp.fmod(s * (x - s / 2), 2.0)
    sin = jnp.where(r < 0.5, jnp.sin(np.pi * r),
                    jnp.where(r > 1.5, jnp.sin(np.pi * (r - 2.0)), -jnp.sin(np.pi * (r - 1.0))))
    cos = jnp.where(r == 0.5, 0.0, jnp.where(r < 1.0, -jnp.sin(np.pi * (r - 0.5)), jnp.sin(np.pi * (r - 1.5))))
    return sin, cos


def _fresnel_value(signed_x: Any) -> tuple[Any, Any]:
    jnp = _jnp()
    single = np.dtype(_core.aval(signed_x).dtype) == np.dtype(np.float32)
    table = _FRESNEL_32 if single else _FRESNEL_64
    x = jnp.abs(signed_x)
    x2 = x * x
    t = x2 * x2
    if single:
        s_small, c_small = x * x2 * _poly(table["sn"], t), x * _poly(table["cn"], t)
    else:
        s_small = x * x2 * _poly(table["sn"], t) / _poly(table["sd"], t)
        c_small = x * _poly(table["cn"], t) / _poly(table["cd"], t)
    sin, cos = _sin_cos_half_pi_square(x)
    # beyond x = 36974 the leading asymptotic terms (float64) or the limits 1/2 (float32)
    c_large = 0.5 if single else 0.5 + 1 / (np.pi * x) * sin
    s_large = 0.5 if single else 0.5 - 1 / (np.pi * x) * cos
    t = 1.0 / (np.pi * x2)
    u = t * t
    if single:
        f, g = 1.0 - u * _poly(table["fn"], u), t * _poly(table["gn"], u)
    else:
        f = 1.0 - u * _poly(table["fn"], u) / _poly(table["fd"], u)
        g = t * _poly(table["gn"], u) / _poly(table["gd"], u)
    c_other = 0.5 + (f * sin - g * cos) / (np.pi * x)
    s_other = 0.5 - (f * cos + g * sin) / (np.pi * x)
    infinite, small, large = jnp.isinf(signed_x), x2 < 2.5625, x > 36974.0
    s = jnp.where(infinite, 0.5, jnp.where(small, s_small, jnp.where(large, s_large, s_other)))
    c = jnp.where(infinite, 0.5, jnp.where(small, c_small, jnp.where(large, c_large, c_other)))
    negative = signed_x < 0.0
    return jnp.where(negative, -s, s), jnp.where(negative, -c, c)


@_custom_jvp()
def _fresnel(x: Any) -> tuple[Any, Any]:
    s, c = _fresnel_value(_widened(x))
    dtype = _core.aval(x).dtype
    return s.astype(dtype), c.astype(dtype)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    """dS = sin(pi x^2 / 2) dx, dC = cos(pi x^2 / 2) dx"""
    (x,), (x_dot,) = primals, tangents
    sin, cos = _sin_cos_half_pi_square(x)
    return _fresnel(x), (sin * x_dot, cos * x_dot)


def fresnel(x: Any) -> tuple[Any, Any]:
    """The Fresnel integrals (S(x), C(x)) = (int_0^x sin(pi t^2 / 2) dt, int_0^x cos(pi t^2 / 2) dt), real x."""
    _core.check_arraylike("fresnel", x)
    (x,) = _core.promote_args_inexact("fresnel", x)
    dtype = np.dtype(_core.aval(x).dtype)
    if np.issubdtype(dtype, np.complexfloating):
        raise NotImplementedError("Support for complex-valued inputs is not implemented yet.")
    if dtype.name not in ("float16", "bfloat16", "float32", "float64"):
        raise NotImplementedError(f"Support for {dtype} dtype is not implemented yet.")
    return _fresnel(x)


# -- the sine and cosine integrals ---------------------------------------------------------------------------------
# Cephes' sici: rational functions of x^2 up to x = 4; beyond, Si = pi/2 - f cos x - g sin x and Ci = f sin x -
# g cos x with the auxiliary f and g rational in 1/x^2 (one pair below x = 8, another above); past 1e9 only the
# leading terms.
_SICI_SN = (-8.39167827910303881427e-11, 4.62591714427012837309e-8, -9.75759303843632795789e-6,
            9.76945438170435310816e-4, -4.13470316229406538752e-2, 1.00000000000000000302e0)
_SICI_SD = (2.03269266195951942049e-12, 1.27997891179943299903e-9, 4.41827842801218905784e-7,
            9.96412122043875552487e-5, 1.42085239326149893930e-2, 9.99999999999999996984e-1)
_SICI_CN = (2.02524002389102268789e-11, -1.35249504915790756375e-8, 3.59325051419993077021e-6,
            -4.74007206873407909465e-4, 2.89159652607555242092e-2, -1.00000000000000000080e0)
_SICI_CD = (4.07746040061880559506e-12, 3.06780997581887812692e-9, 1.23210355685883423679e-6,
            3.17442024775032769882e-4, 5.10028056236446052392e-2, 4.00000000000000000080e0)
_SICI_FN4 = (4.23612862892216586994e0, 5.45937717161812843388e0, 1.62083287701538329132e0,
             1.67006611831323023771e-1, 6.81020132472518137426e-3, 1.08936580650328664411e-4,
             5.48900223421373614008e-7)
_SICI_FD4 = (1.0, 8.16496634205391016773e0, 7.30828822505564552187e0, 1.86792257950184183883e0,
             1.78792052963149907262e-1, 7.01710668322789753610e-3, 1.10034357153915731354e-4,
             5.48900252756255700982e-7)
_SICI_GN4 = (8.71001698973114191777e-2, 6.11379109952219284151e-1, 3.97180296392337498885e-1,
             7.48527737628469092119e-2, 5.38868681462177273157e-3, 1.61999794598934024525e-4,
             1.97963874140963632189e-6, 7.82579040744090311069e-9)
_SICI_GD4 = (1.0, 1.64402202413355338886e0, 6.66296701268987968381e-1, 9.88771761277688796203e-2,
             6.22396345441768420760e-3, 1.73221081474177119497e-4, 2.02659182086343991969e-6,
             7.82579218933534490868e-9)
_SICI_FN8 = (4.55880873470465315206e-1, 7.13715274100146711374e-1, 1.60300158222319456320e-1,
             1.16064229408124407915e-2, 3.49556442447859055605e-4, 4.86215430826454749482e-6,
             3.20092790091004902806e-8, 9.41779576128512936592e-11, 9.70507110881952024631e-14)
_SICI_FD8 = (1.0, 9.17463611873684053703e-1, 1.78685545332074536321e-1, 1.22253594771971293032e-2,
             3.58696481881851580297e-4, 4.92435064317881464393e-6, 3.21956939101046018377e-8,
             9.43720590350276732376e-11, 9.70507110881952025725e-14)
_SICI_GN8 = (6.97359953443276214934e-1, 3.30410979305632063225e-1, 3.84878767649974295920e-2,
             1.71718239052347903558e-3, 3.48941165502279436777e-5, 3.47131167084116673800e-7,
             1.70404452782044526189e-9, 3.85945925430276600453e-12, 3.14040098946363334640e-15)
_SICI_GD8 = (1.0, 1.68548898811011640017e0, 4.87852258695304967486e-1, 4.67913194259625806320e-2,
             1.90284426674399523638e-3, 3.68475504442561108162e-5, 3.57043223443740838771e-7,
             1.72693748966316146736e-9, 3.87830166023954706752e-12, 3.14040098946363335242e-15)


def _sici_value(x: Any) -> tuple[Any, Any]:
    jnp = _jnp()
    ax = jnp.abs(x)
    t = ax * ax
    si_series = jnp.where(ax == 0, 0.0, ax * _poly(_SICI_SN, t) / _poly(_SICI_SD, t))
    ci_series = jnp.where(ax == 0, -np.inf, np.euler_gamma + jnp.log(ax) + t * _poly(_SICI_CN, t) / _poly(_SICI_CD, t))
    sin, cos = jnp.sin(ax), jnp.cos(ax)
    z = 1.0 / t
    below8 = ax < 8.0
    f = jnp.where(below8, _poly(_SICI_FN4, z) / (ax * _poly(_SICI_FD4, z)),
                  _poly(_SICI_FN8, z) / (ax * _poly(_SICI_FD8, z)))
    g = jnp.where(below8, z * _poly(_SICI_GN4, z) / _poly(_SICI_GD4, z), z * _poly(_SICI_GN8, z) / _poly(_SICI_GD8, z))
    si_asymptotic, ci_asymptotic = np.pi / 2 - f * cos - g * sin, f * sin - g * cos
    infinite = jnp.isposinf(ax)
    si_far = jnp.where(infinite, np.pi / 2, np.pi / 2 - cos / ax)
    ci_far = jnp.where(infinite, 0.0, sin / ax)
    near, middle = ax <= 4, (ax > 4) & (ax <= 1e9)
    si = jnp.where(near, si_series, jnp.where(middle, si_asymptotic, si_far))
    ci = jnp.where(near, ci_series, jnp.where(middle, ci_asymptotic, ci_far))
    return jnp.sign(x) * si, jnp.where(jnp.isneginf(x), np.nan, ci)


@_custom_jvp()
def _sici(x: Any) -> tuple[Any, Any]:
    return _sici_value(x)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    """dSi = sin(x)/x dx (as sinc(x / pi)), dCi = cos(x)/x dx"""
    jnp = _jnp()
    (x,), (x_dot,) = primals, tangents
    return _sici_value(x), (jnp.sinc(x / np.pi) * x_dot, jnp.cos(x) / x * x_dot)


def sici(x: Any) -> tuple[Any, Any]:
    """The sine and cosine integrals (Si(x), Ci(x)) = (int_0^x sin t / t dt, gamma + log x + int_0^x (cos t - 1)
    / t dt), real x; Ci is NaN for x < 0 (its real part is not returned), -inf at 0."""
    _core.check_arraylike("sici", x)
    (x,) = _core.promote_args_inexact("sici", x)
    if np.issubdtype(_core.aval(x).dtype, np.complexfloating):
        raise ValueError(f"Argument `x` to sici must be real-valued. Got dtype {_core.aval(x).dtype}.")
    return _sici(x)


# -- the generalized exponential integral ---------------------------------------------------------------------------
def _while(cond: Any, body: Any, state: tuple[Any, ...]) -> tuple[Any, ...]:
    """``while cond(state): state = body(state)`` for each element on its own (the state's arrays broadcast
    together): one ``while_loop`` runs while any element's condition holds, the others held fixed. This is
    what JAX's elementwise loops (a scalar ``while_loop`` under ``vectorize``) compute."""
    jnp = _jnp()
    shape = np.broadcast_shapes(*(_core.aval(s).shape for s in state))
    state = tuple(jnp.broadcast_to(s, shape) for s in state)

    def keep_going(carry):
        return jnp.any(cond(carry))

    def step(carry):
        active = cond(carry)
        return tuple(jnp.where(active, new, old) for new, old in zip(body(carry), carry))

    return _lax().while_loop(keep_going, step, state)


def _expn_series(n: Any, x: Any) -> Any:
    """E_n(x) for x <= 1 (Cephes' expn): (-x)^(n-1) psi(n) / (n-1)! - sum_k (-x)^k / ((k - n + 1) k!), with
    psi(n) = -gamma - log x + sum_{i<n} 1/i, the k = n-1 term left out."""
    jnp, lax = _jnp(), _lax()
    eps = float(np.finfo(_core.aval(x).dtype).eps)
    _, psi = _while(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] + 1 / s[0]),
                    (jnp.ones_like(n), -np.euler_gamma - jnp.log(x)))
    n1 = jnp.where(n == 1, 2.0, n)
    one = jnp.ones_like(x)

    def body(state):
        xk, yk, pk, total, _ = state
        xk, pk = xk + 1, pk + 1
        yk = yk * -x / xk
        total = total + jnp.where(pk != 0, yk / jnp.where(pk != 0, pk, 1), 0)
        return xk, yk, pk, total, jnp.where(total != 0, jnp.abs(yk / total), 1)

    start = (0 * one, one, 1 - n, jnp.where(n == 1, 0.0, 1 / (1 - n1)), np.inf * one)
    *_, total, _ = _while(lambda s: (x > 0) & (s[4] > eps), body, start)
    return jnp.power(-x, n - 1) * psi / jnp.exp(lax.lgamma(n)) - total


_EXPN_BIG = 1.44115188075855872e17  # 2^57: the convergents are rescaled past it


def _expn_fraction(n: Any, x: Any) -> Any:
    """E_n(x) for x > 1: e^-x times the continued fraction 1/(x + n/(1 + 1/(x + (n+1)/(1 + 2/(x + ...))))), by its
    convergents p_k / q_k (Cephes' expn)."""
    jnp = _jnp()
    eps = float(np.finfo(_core.aval(x).dtype).eps)

    def body(state):
        k, pkm2, qkm2, pkm1, qkm1, answer, _, r = state
        k = k + 1
        odd = k % 2 == 1
        yk = jnp.where(odd, 1.0, x)
        xk = jnp.where(odd, n + (k - 1) / 2, k / 2)
        pk, qk = pkm1 * yk + pkm2 * xk, qkm1 * yk + qkm2 * xk
        nonzero = qk != 0
        r = jnp.where(nonzero, pk / jnp.where(nonzero, qk, 1), r)
        change = jnp.where(nonzero, jnp.abs((answer - r) / r), 1.0)
        answer = jnp.where(nonzero, r, answer)
        big = jnp.abs(pk) > _EXPN_BIG
        pkm2, qkm2, pkm1, qkm1 = (jnp.where(big, v / _EXPN_BIG, v) for v in (pkm1, qkm1, pk, qk))
        return k, pkm2, qkm2, pkm1, qkm1, answer, change, r

    one = jnp.ones_like(x)
    start = (jnp.ones_like(n), one, x, one, x + n, 1 / (x + n), np.inf * one, 0 * one)
    answer = _while(lambda s: (x > 0) & (s[6] > eps), body, start)[5]
    return answer * jnp.exp(-x)


def _expn_large_order(n: Any, x: Any) -> Any:
    """E_n(x) for n >= 5000: e^-x / (x + n) (1 + n/(x+n)^2 + n (n - 2x)/(x+n)^4 + n (6x^2 - 8nx + n^2)/(x+n)^6)."""
    xk = x + n
    yk = 1 / (xk * xk)
    total = yk * n * (6 * x * x - 8 * n * x + n * n)
    total = yk * (total + n * (n - 2 * x))
    total = yk * (total + n)
    return (total + 1) * _jnp().exp(-x) / xk


def _expn_value(n: Any, x: Any) -> Any:
    """The pieces as JAX orders them (a later condition overrides an earlier one, as in ``piecewise``): each loop
    runs only on its own elements, the others at the harmless point n = 1, x = 2."""
    jnp = _jnp()
    n, x = jnp.broadcast_arrays(n, x)
    invalid = (n < 0) | (x < 0)
    pole = (x == 0) & (n < 2)
    at_zero = (x == 0) & (n >= 2)
    order_zero = (n == 0) & (x >= 0)
    large_order = n >= 5000
    fraction = x > 1
    piece = jnp.select([fraction, large_order, order_zero, at_zero, pole, invalid], [6, 5, 4, 3, 2, 1], 0)
    series_n, series_x = jnp.where(piece == 0, n, 1.0), jnp.where(piece == 0, x, 0.5)
    fraction_n, fraction_x = jnp.where(piece == 6, n, 1.0), jnp.where(piece == 6, x, 2.0)
    n1 = jnp.where(n == 1, n + n, n)
    values = [_expn_series(series_n, series_x), jnp.full_like(x, np.nan), jnp.full_like(x, np.inf), 1 / n1,
              jnp.exp(-x) / x, _expn_large_order(n, x), _expn_fraction(fraction_n, fraction_x)]
    return _lax().select_n(piece, *values)


def _expn_jvp(n, primals, tangents):
    """dE_n / dx = -E_(n-1)(x)"""
    (x,), (x_dot,) = primals, tangents
    return _expn_value(n, x), -x_dot * _expn_value(n - 1, x)


_expn = _custom_jvp()(lambda n, x: _expn_value(n, x), nondiff_argnums=(0,))
_expn.defjvp(_expn_jvp)


def expn(n: Any, x: Any) -> Any:
    """The generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt (real n and x; NaN for n < 0
    or x < 0, inf at x = 0 for n < 2). Differentiable in x (n is held fixed, as in JAX)."""
    _core.check_arraylike("expn", n, x)
    n, x = _core.promote_args_inexact("expn", n, x)
    if np.issubdtype(_core.aval(x).dtype, np.complexfloating):
        raise ValueError("expn does not support complex-valued inputs.")
    return _expn(n, x)


# -- Owen's T function ---------------------------------------------------------------------------------------------
# T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + u^2) / 2) / (1 + u^2) du; with u^2 = a^2 t the 13-point rule of
# Patefield and Tandy (2000, method T5) gives a sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2) / (1 + a^2 t_i).
_OWENS_T_NODES = (0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
                  0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
                  0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
                  0.99178832974629704)
_OWENS_T_WEIGHTS = (0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
                    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
                    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239, 0.0038862217010742058,
                    0.0016793031084546090)


def _owens_t_value(h: Any, a: Any) -> Any:
    """The quadrature for |a| <= 1; for |a| > 1 the reflection T(h, a) = (Phi(h) + Phi(ah))/2 - Phi(h) Phi(ah)
    - T(ah, 1/a) (in erf or erfc, whichever keeps the digits); exact values at h = 0 and a = 1."""
    jnp, lax = _jnp(), _lax()
    dtype = _core.aval(h).dtype
    h, a = jnp.broadcast_arrays(h, a)
    h, abs_a = jnp.abs(h), jnp.abs(a)
    inside = abs_a <= 1.0
    reduced_a = jnp.where(inside, abs_a, 1 / abs_a)
    reduced_h = jnp.where(inside, h, abs_a * h)
    # (the nodes and weights as NumPy float64 arrays, which promote the sum as they do in JAX)
    ratio = jnp.square(reduced_a)[..., None] * np.asarray(_OWENS_T_NODES)
    integrand = jnp.exp(-0.5 * jnp.square(reduced_h)[..., None] * (1.0 + ratio)) / (1.0 + ratio)
    result = reduced_a * (integrand @ np.asarray(_OWENS_T_WEIGHTS))
    root_2 = np.asarray(math.sqrt(2), dtype)
    result = jnp.where(reduced_h == 0.0, jnp.arctan(reduced_a) / (2 * np.pi), result)
    result = jnp.where(reduced_a == 1.0,
                       0.125 * lax.erfc(-reduced_h / root_2) * lax.erfc(reduced_h / root_2), result)
    h_scaled = h / root_2
    erfc_h, erfc_ah = lax.erfc(h_scaled), lax.erfc(abs_a * h_scaled)
    reflected = jnp.where(abs_a * h <= 0.67, 0.25 - 0.25 * lax.erf(h_scaled) * lax.erf(abs_a * h_scaled) - result,
                          0.25 * (erfc_h + erfc_ah - erfc_h * erfc_ah) - result)
    result = lax.sign(a) * jnp.where(abs_a > 1.0, reflected, result)
    return jnp.where(jnp.isnan(a) | jnp.isnan(h), np.nan, result)


@_custom_jvp()
def _owens_t(h: Any, a: Any) -> Any:
    return _owens_t_value(h, a)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    """dT/dh = -exp(-h^2/2) erf(a h / sqrt 2) / (2 sqrt(2 pi)), dT/da = exp(-(1 + a^2) h^2 / 2) / (2 pi (1 + a^2))"""
    jnp, lax = _jnp(), _lax()
    (h, a), (h_dot, a_dot) = primals, tangents
    out = _owens_t_value(h, a)
    root_2 = np.asarray(math.sqrt(2), _core.aval(h).dtype)
    d_dh = -jnp.exp(-0.5 * h * h) * lax.erf(a * h / root_2) / (2.0 * math.sqrt(2 * np.pi))
    d_da = jnp.exp(-0.5 * (a * a + 1.0) * h * h) / (2.0 * np.pi * (a * a + 1.0))
    return out, (d_dh * h_dot + d_da * a_dot).astype(_core.aval(out).dtype)


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx (real h and a)."""
    _core.check_arraylike("owens_t", h, a)
    h, a = _core.promote_args_inexact("owens_t", h, a)
    return _owens_t(h, a)


# -- the Faddeeva function -----------------------------------------------------------------------------------------
# Weideman (1994), N = 32: for Im z >= 0, w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)) with
# Z = (L + iz) / (L - iz) and p the polynomial below (highest degree first).
_WOFZ_L = 4.7568284600108841
_WOFZ_C = (-1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12, -2.1543593557490879e-11,
           -5.5442449963237932e-11, 1.165824698850374e-10, 4.1537441121999766e-10, -5.2310202114920615e-10,
           -3.2080151339721323e-09, 8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
           -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07, 4.4015317312832251e-06,
           6.8210319443575151e-06, -2.1409619201999998e-05, -0.00013075449254579421, -0.00024532980270038237,
           0.00039259136070109705, 0.0045195411053493093, 0.019006155784845501, 0.057304403529837282,
           0.14060716226893755, 0.29544451071508743, 0.54601397206393376, 0.9019254893648001,
           1.3455441692345449, 1.8256696296324815, 2.2635372999002676, 2.5722534081245696)


def _wofz_upper(z: Any) -> Any:
    lax = _lax()
    real_dtype = _core.aval(lax.real(z)).dtype
    length = np.asarray(_WOFZ_L, _core.aval(z).dtype)
    iz = lax.complex(-lax.imag(z), lax.real(z))
    denominator = length - iz
    big_z = (length + iz) / denominator
    p = _poly(_WOFZ_C, big_z)
    return 2 * p / (denominator * denominator) + np.asarray(1 / math.sqrt(math.pi), real_dtype) / denominator


def _wofz_value(z: Any) -> Any:
    """w(z) for Im z >= 0 directly, below by the reflection w(z) = 2 exp(-z^2) - w(-z)."""
    jnp, lax = _jnp(), _lax()
    upper = lax.imag(z) >= 0
    w = _wofz_upper(jnp.where(upper, z, -z))
    return jnp.where(upper, w, 2 * jnp.exp(-z * z) - w)


@_custom_jvp()
def _wofz(z: Any) -> Any:
    return _wofz_value(z)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    """dw/dz = -2 z w(z) + 2i / sqrt(pi)"""
    (z,), (z_dot,) = primals, tangents
    w = _wofz_value(z)
    return w, z_dot * (-2 * z * w + 2j / math.sqrt(math.pi))


def wofz(z: Any) -> Any:
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz), complex-valued (real arguments are made complex)."""
    _core.check_arraylike("wofz", z)
    (z,) = _core.promote_args_inexact("wofz", z)
    dtype = np.dtype(_core.aval(z).dtype)
    if not np.issubdtype(dtype, np.complexfloating):
        z = z.astype(np.complex128 if dtype == np.dtype(np.float64) else np.complex64)
    return _wofz(z)
