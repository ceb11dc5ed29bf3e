"""Accuracy of the vectorised transcendental functions (codegen/llvm/math.py), through jit-compiled lax calls,
against NumPy (float64) over wide ranges and at the edge cases."""

import contextlib
import math
import re
import subprocess
import sys

import numpy as np
import pytest

import srcjax
from srcjax import lax
from srcjax.codegen.llvm import engine
from srcjax.transpiler.primitives import special
from tests.codegen.assembly import called, packed_multiply_add

FUNCTIONS = {  # name: (lax function, float64 oracle, max ulp in float32, max ulp in float64)
    "exp": (lax.exp, np.exp, 1, 1),
    "exp2": (lax.exp2, np.exp2, 1, 1),
    "log": (lax.log, np.log, 1, 1),
    "log1p": (lax.log1p, np.log1p, 2, 2),
    "expm1": (lax.expm1, np.expm1, 2, 2),
    "tanh": (lax.tanh, np.tanh, 3, 3),
    "logistic": (lax.logistic, special.logistic, 3, 3),
    "sin": (lax.sin, np.sin, 1, 1),
    "cos": (lax.cos, np.cos, 1, 1),
    "erf": (lax.erf, np.vectorize(math.erf), 1, 5),
    # (float32 in float64 here; float64 through libm)
    "sinh": (lax.sinh, np.sinh, 1, 2),
    "cosh": (lax.cosh, np.cosh, 1, 2),
    "asinh": (lax.asinh, np.arcsinh, 1, 2),
    "acosh": (lax.acosh, np.arccosh, 1, 2),
    "atanh": (lax.atanh, np.arctanh, 1, 2),
}


def _samples(dtype) -> np.ndarray:
    """Log-uniform magnitudes over the whole range of ``dtype``, dense samples near 0, and the edge cases."""
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    top = np.log10(float(info.max))
    wide = rng.uniform(-1, 1, 6000) * 10.0 ** rng.uniform(-top - 7, top, 6000)
    edges = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        info.tiny,
        -info.tiny,
        info.smallest_subnormal,
        -info.smallest_subnormal,
        info.max,
        -info.max,
        1.0,
        -1.0,
        0.5,
        88.72,
        88.73,
        -87.3,
        -103.9,
        -104.0,
        709.78,
        709.79,
        -745.1,
        -745.2,
        1e-8,
        -1e-8,
        np.pi / 4,
        np.pi / 2,
        3 * np.pi / 4,
    ]
    with np.errstate(over="ignore"):
        return np.concatenate([wide, rng.uniform(-30, 30, 4000), rng.uniform(-1, 1, 2000), edges]).astype(dtype)


def _ulp_error(got: np.ndarray, want: np.ndarray, dtype) -> np.ndarray:
    """|got - want| in units of the spacing of ``dtype`` at ``want`` (0 where both agree, NaNs included)."""
    want = want.astype(np.float64)
    got = got.astype(np.float64)
    with np.errstate(all="ignore"):
        rounded = want.astype(dtype).astype(np.float64)  # overflows to inf where the exact result does
        same = (got == want) | (got == rounded) | (np.isnan(got) & np.isnan(want))
        spacing = np.abs(np.spacing(want.astype(dtype))).astype(np.float64)
        spacing = np.where(np.isfinite(spacing), spacing, np.inf)
        spacing = np.maximum(spacing, float(np.finfo(dtype).smallest_subnormal))
        return np.where(same, 0.0, np.abs(got - want) / spacing)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_accuracy(name, dtype):
    fn, oracle, ulp32, ulp64 = FUNCTIONS[name]
    x = _samples(dtype)
    with x64(dtype == np.float64):
        compiled = srcjax.jit(fn)
        assert compiled.lower(x).compile().native is not None
        got = np.asarray(compiled(x))
    assert got.dtype == dtype
    with np.errstate(all="ignore"):
        want = oracle(x.astype(np.float64))
    err = _ulp_error(got, want, dtype)
    worst = int(np.argmax(err))
    limit = ulp32 if dtype == np.float32 else ulp64
    assert err[worst] <= limit + 0.01, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros].astype(dtype)))


@contextlib.contextmanager
def x64(enabled: bool):
    saved = srcjax.config.read("jax_enable_x64")
    srcjax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        srcjax.config.update("jax_enable_x64", saved)


def test_sin_and_cos_of_huge_arguments():
    """Beyond 2^20 pi/2 the loop's slow path reduces by Payne and Hanek; the classic hard case and the largest
    finite numbers included, and the loop stays vectorised (the polynomial on full vector registers)."""
    hard = [1.7976931348623157e308, 1e22, 2.0**1000, 1.6e6, 1e300]
    for dtype in (np.float32, np.float64):
        with x64(dtype == np.float64):
            x = np.array([3.4e38, -1e30, 1e20, 2.0**100, -8.5e6] + (hard if dtype == np.float64 else []), dtype)
            for fn, oracle in ((lax.sin, np.sin), (lax.cos, np.cos)):
                got = np.asarray(srcjax.jit(fn)(x))
                err = _ulp_error(got, oracle(x.astype(np.float64)), dtype)
                assert err.max() <= 1.01, (fn.__name__, x[np.argmax(err)], err.max())
    with x64(True):  # the closest double to a multiple of pi/2 (NumPy's cos is 8 ulp off; mpmath's value)
        closest = np.array([6381956970095103 * 2.0**797])
        assert np.asarray(srcjax.jit(lax.cos)(closest))[0] == -4.687165924254628e-19
        assert np.asarray(srcjax.jit(lax.sin)(closest))[0] == 1.0
    assembly = srcjax.jit(lax.sin).lower(np.ones(1000, np.float32)).compile().native.assembly()
    assert packed_multiply_add(assembly, "pd")


def test_long_chains_mask_their_last_vector():
    """A map of many transcendental functions masks its last vector where the target does so cheaply (AVX-512) instead
    of finishing in a narrower vector loop and a scalar one, which doubled its code; the values are the same at
    every length, a huge argument in the masked vector included (its flag, not the lanes past the end, takes
    the slow path), and the loop stays vectorised."""

    def chain(x):
        for c in [0.25 * i for i in range(12)]:
            x = lax.sin(x) + c
        return x

    def oracle(x):
        x = x.astype(np.float64)
        for c in [0.25 * i for i in range(12)]:
            x = np.sin(x) + c
        return x

    compiled = srcjax.jit(chain)
    for n in (1, 7, 16, 17, 33, 1001):
        x = np.linspace(-4, 4, n).astype(np.float32)
        x[-1] = 3e7  # (beyond 2^20 pi/2: the slow path)
        got = np.asarray(compiled(x))
        np.testing.assert_allclose(got, oracle(x), rtol=0, atol=2e-5)
    assembly = compiled.lower(np.ones(1001, np.float32)).compile().native.assembly()
    assert packed_multiply_add(assembly, "pd")
    if engine.has_masked_moves():  # (a store under a {%k} mask register)
        assert re.search(r"vmovup[sd]\s[^\n]*\{%k[1-7]\}", assembly), "no masked store"


def test_no_libm_calls():
    """A fused loop of all the polynomial functions calls nothing but malloc/free and the thread helper."""

    def all_functions(x):
        return [fn(x) for fn, *_ in FUNCTIONS.values()]

    executable = srcjax.jit(all_functions).lower(np.ones(1000, np.float32)).compile().native
    assembly = executable.assembly()
    assert called(assembly) <= {"malloc@PLT", "free@PLT", "malloc", "free"}, called(assembly)
    assert packed_multiply_add(assembly, "ps")  # packed float32 polynomials on full vector registers


def test_the_code_generator_leaves_the_users_decimal_precision_alone():
    script = "import decimal\nimport srcjax.codegen.llvm.math\nprint(decimal.getcontext().prec)"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "28", run.stderr


def test_float32_pow_is_the_rounded_float64_power():
    """Compiled float32 pow (vectorised, in float64) against NumPy's float64 power rounded once, bit for bit: C99's
    special cases (zeros, infinities, NaN, negative bases), ties (17^6, 2^-150) and random magnitudes."""
    special_values = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf, np.nan, 1e-45,
                               -1e-45, 1e-40, 3.4e38, -3.4e38, 1 / 3, -8.0, 2.0**24, 2.0**24 + 2, -(2.0**25), 0.1,
                               88.0, 127.0, 128.0, -149.0, -150.0, 17.0, -11.0, 1e-7], np.float32)
    x, y = (v.ravel() for v in np.meshgrid(special_values, special_values))
    rng = np.random.default_rng(0)
    x = np.concatenate([x, rng.uniform(0, 10, 20000), -rng.integers(0, 20, 5000), 10.0 ** rng.uniform(-40, 38, 20000)])
    y = np.concatenate([y, rng.uniform(-30, 30, 20000), rng.integers(-30, 30, 5000), rng.uniform(-3, 3, 20000)])
    x, y = x.astype(np.float32), y.astype(np.float32)
    executable = srcjax.jit(lax.pow).lower(x, y).compile().native
    assert not called(executable.assembly()) - {"malloc@PLT", "free@PLT", "malloc", "free"}  # (no libm pow)
    got = np.asarray(srcjax.jit(lax.pow)(x, y))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(x[i], y[i], got[i], want[i]) for i in np.flatnonzero(~same)[:5]]
