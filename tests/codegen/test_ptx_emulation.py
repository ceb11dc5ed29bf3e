"""The GPU backend (codegen/ptx) without a GPU: every function's kernels run in the host emulation of a small grid
(blocks of 64 threads, at most 3 blocks per axis, so grid-stride loops, warp shuffles, shared memory and partial
results all occur on small arrays) and agree with the IR interpreter, integers and booleans exactly, floats
within a few ulp of the result's scale; the same function's device program is PTX that ``ptxas`` assembles for
every architecture CI targets (skipped where CUDA's toolkit is missing).

Covered: the elementwise tables of tests/transpiler/test_elementwise.py (also against their float64 NumPy
oracles) and XLA's edge values; reductions of every kernel kind (serial, block, block + combine of partials,
checked through ``describe()``) with NaNs and ties; scans both ways; scatters with repeated and out-of-range
indices; gathers, concatenation, padding, ``where``; products through the gemm step and through a reduction
kernel; convolutions and windowed reductions; the corpus."""

import functools
import re

import numpy as np
import pytest

import srcjax.numpy as jnp
from srcjax import lax
from srcjax.codegen.llvm.plan import Unsupported
from srcjax.codegen.ptx import target
from srcjax.codegen.ptx.emulated import Emulation
from srcjax.codegen.ptx.program import build, plan_for_gpu
from srcjax.runtime.config import config
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.primitives import elementwise as E
from srcjax.transpiler.types import TensorType
from tests.corpus import programs
from tests.transpiler.test_corpus import abstract, dynamic_leaves, sample
from tests.transpiler.test_elementwise import BINARY, UNARY, close, data, wide

RNG = np.random.default_rng(0)
SHAPES = [(37,), (3, 70), (0, 3)]  # fewer elements than threads, more than the emulated grid's, none
CPU_ONLY = {np.dtype(np.float16), np.dtype(np.complex64)}  # not in the kernels' dtypes: host calls, on the CPU


@pytest.fixture
def x64():
    """float64 stays float64 (with x64 off, the interpreter's reductions give float32)."""
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", saved)


# -- helpers -----------------------------------------------------------------------------------------------------
def traced(fn, *args):
    ir, _ = trace_function(fn, [TensorType(np.asarray(a).dtype, np.shape(a)) for a in args])
    return ir


def assert_agrees(got, want, what, ulps=8):
    """Integers and booleans exactly; floats within ``ulps`` of the result's scale (NaNs and infinities in place)."""
    got, want = np.asarray(got), np.asarray(want)
    types = f"{got.dtype}{got.shape}, not {want.dtype}{want.shape}"
    assert (got.dtype, got.shape) == (want.dtype, want.shape), f"{what}: {types}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
    eps = float(np.finfo(want.dtype).eps)
    np.testing.assert_allclose(got, want, rtol=ulps * eps, atol=ulps * eps * scale, err_msg=what)


def assembles(fn) -> None:
    """The device program of IR function ``fn`` is PTX that ptxas assembles for every CI architecture."""
    if target.ptxas_path() is None:
        pytest.skip("ptxas (CUDA's toolkit) not found: the PTX is not assembled")
    program = build(fn)
    for arch in target.ARCHES:
        target.assemble(program.ptx(arch), arch)


def kinds(emulation: Emulation) -> set[str]:
    """The steps' kinds: map, serial, block, combine (kernels), cublas (products), fill."""
    return {line.split()[0] for line in emulation.program.describe().splitlines()}


def emulated(fn, *args, ulps=8, ptx=True):
    """``fn`` traced on ``args``, run in the emulation and checked against the interpreter, its PTX assembled
    (unless not ``ptx``); returns the results and the emulation."""
    ir = traced(fn, *args)
    emulation = Emulation(ir)
    got = emulation(*args)
    want = [np.asarray(v) for v in eval_function(ir, *args)]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert_agrees(g, w, f"{fn.__name__}: result {k} of {emulation.program.describe()}", ulps)
    if ptx:
        assembles(ir)
    return got, emulation


# -- elementwise primitives --------------------------------------------------------------------------------------
def _table_inputs(case, arity, shapes):
    """Per GPU dtype of a table row: its operands over ``shapes`` (valid for the primitive)."""
    prim, dtypes, domain = case[0], case[1], case[2]
    low, high = domain if isinstance(domain, tuple) else (-3.0, 3.0)
    fix = case[4] if arity == 2 else None
    out = []
    for dtype in [np.dtype(d) for d in dtypes if np.dtype(d) not in CPU_ONLY]:
        for shape in shapes:
            xs = [data(shape, dtype, low, high) for _ in range(arity)]
            if fix:
                xs[1] = fix(xs[1])
            if prim is E.digamma_p:  # away from the poles
                xs[0] = np.where(np.abs(xs[0] - np.round(xs[0])) < 0.1, xs[0] + 0.25, xs[0]).astype(dtype)
            out.append(xs)
    return out


def _applied(prim, arity):
    def fn(*xs):
        return [prim.bind(*xs[i:i + arity]) for i in range(0, len(xs), arity)]

    fn.__name__ = prim.name
    return fn


TABLE = [(case, 1) for case in UNARY] + [(case, 2) for case in BINARY]
GPU_TABLE = [(case, arity) for case, arity in TABLE if case[0] not in (E.conj_p, E.complex_p, E.real_p, E.imag_p)]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("case, arity", GPU_TABLE, ids=[c[0].name for c, _ in GPU_TABLE])
def test_elementwise_primitive_emulated(case, arity):
    """Each GPU dtype on each shape in one function: the interpreter's results, and the float64 oracle's."""
    prim, oracle = case[0], case[3]
    operands = _table_inputs(case, arity, SHAPES)
    got, _ = emulated(_applied(prim, arity), *[x for xs in operands for x in xs], ptx=False)
    for xs, g in zip(operands, got):
        with np.errstate(all="ignore"):
            close(g, oracle(*(xs if case[2] == "bits" else [wide(x) for x in xs])))


@pytest.mark.usefixtures("x64")
def test_elementwise_ptx_assembles():
    """Every primitive and GPU dtype of the tables in one device program (one libdevice link per arch)."""
    operands, ops = [], []
    for case, arity in GPU_TABLE:
        for xs in _table_inputs(case, arity, [(37,)]):
            ops.append((case[0], len(operands), arity))
            operands.extend(xs)

    def every_primitive(*xs):
        return [prim.bind(*xs[at:at + arity]) for prim, at, arity in ops]

    assert len(ops) > 150
    assembles(traced(every_primitive, *operands))


@pytest.mark.parametrize("prim, dtype", [(E.exp_p, np.float16), (E.exp_p, np.complex64), (E.conj_p, np.float32),
                                         (E.real_p, np.complex64)])
def test_float16_and_complex_stay_on_the_cpu(prim, dtype):
    with pytest.raises(Unsupported):
        build(traced(_applied(prim, 1), np.zeros(3, dtype)))


_FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 1.5, -2.5, 2.5, -7.0, 300.0, -129.0, 3e9, -3e9]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_edge_values(dtype):
    """NaN, infinities, signed zeros, halfway cases and out-of-range conversions, every pair of them."""
    x, y = (np.array(v, dtype) for v in zip(*[(a, b) for a in _FLOAT_SPECIALS for b in _FLOAT_SPECIALS]))

    def edges(x, y):
        to = lambda t: E.convert_element_type_p.bind(x, new_dtype=np.dtype(t), weak_type=False)
        binary = [p.bind(x, y) for p in (E.max_p, E.min_p, E.rem_p, E.div_p, E.pow_p, E.atan2_p, E.nextafter_p,
                                         E.eq_p, E.lt_p)]
        unary = [p.bind(x) for p in (E.sign_p, E.is_finite_p, E.floor_p, E.sqrt_p, E.exp_p, E.log_p, E.tanh_p)]
        return [*binary, *unary, *[to(t) for t in (np.int32, np.uint8, np.int8, np.uint32, np.bool_)],
                E.round_p.bind(x, rounding_method=0), E.round_p.bind(x, rounding_method=1),
                E.integer_pow_p.bind(x, y=3), E.integer_pow_p.bind(x, y=-2), jnp.clip(x, -1.0, 2.0)]

    emulated(edges, x, y)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32])
def test_integer_edge_values(dtype):
    """Division by zero, MIN / -1, out-of-range shifts, wrapping, bit counts: every pair of edge values."""
    info = np.iinfo(dtype)
    values = np.array([0, 1, -1, 2, -2, 7, -7, 8, 9, 31, 32, 33, info.min, info.min + 1, info.max]).astype(dtype)
    a, b = np.repeat(values, len(values)), np.tile(values, len(values))

    def edges(a, b):
        binary = [p.bind(a, b) for p in (E.div_p, E.rem_p, E.shift_left_p, E.shift_right_arithmetic_p,
                                         E.shift_right_logical_p, E.mul_p, E.add_p, E.max_p, E.lt_p)]
        unary = [p.bind(a) for p in (E.neg_p, E.sign_p, E.not_p, E.population_count_p, E.clz_p)]
        converted = [E.convert_element_type_p.bind(a, new_dtype=np.dtype(t), weak_type=False)
                     for t in (np.float32, np.int8)]
        return [*binary, *unary, *converted, E.integer_pow_p.bind(a, y=5)]

    emulated(edges, a, b)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("n", [63, 203])
def test_contiguous_maps_in_vector_runs(n):
    """One-axis maps whose every access starts aligned go in runs of 16-byte vectors, then a scalar tail; a
    slice starting between vectors keeps the map scalar. Mixed widths: bool and int8 beside float32, float64."""
    x, y = RNG.standard_normal(n + 9).astype(np.float32), RNG.standard_normal(n + 9)
    b, c = RNG.random(n + 9) > 0.5, RNG.integers(-100, 100, n + 9).astype(np.int8)

    def aligned(x, y, b, c):
        return [x[4:4 + n] * 2 + x[:n], y[2:2 + n] + 1, jnp.where(b[:n], x[:n], 0.0), c[:n] * 3]

    def unaligned(x, y, b, c):
        return [x[1:1 + n] * 2 + x[:n], y[3:3 + n] + 1, jnp.where(b[5:5 + n], x[:n], 0.0), c[7:7 + n] * 3]

    for fn, vectors in [(aligned, True), (unaligned, False)]:
        emulated(fn, x, y, b, c)
        ptx = build(traced(fn, x, y, b, c)).ptx()
        found = set(re.findall(r"\b(ld|st)\.global(?:\.nc)?\.v[24]\.", ptx))
        assert found == ({"ld", "st"} if vectors else set()), f"{fn.__name__}: vector accesses {found}"


# -- reductions and scans ----------------------------------------------------------------------------------------
def _values(shape, dtype):
    """Data whose products stay finite (floats near 1) and nonzero modulo 2^32 (odd integers)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) > 0.3
    if dtype.kind == "i":
        return RNG.choice(np.array([-3, -1, 1, 3], dtype), shape) * RNG.integers(1, 4, shape).astype(dtype) | 1
    return (1 + 0.05 * RNG.standard_normal(shape)).astype(dtype) * RNG.choice([-1, 1], shape).astype(dtype)


def _reductions(x, axis):
    """sum, max, min first (checked against NumPy too), argmax and argmin (over one axis or all), then prod for
    numbers, any and all for booleans."""
    out = [jnp.sum(x, axis=axis), jnp.max(x, axis=axis), jnp.min(x, axis=axis)]
    if not isinstance(axis, tuple):
        out += [jnp.argmax(x, axis=axis), jnp.argmin(x, axis=axis)]
    if x.dtype == np.bool_:
        return out + [jnp.any(x, axis=axis), jnp.all(x, axis=axis)]
    return out + [jnp.prod(x, axis=axis)]


# (shape, axes, the emulation's kernel kinds, dtypes): few reduced elements per result (serial kernels), >= 128 per
# result (block kernels: a warp reduction, then the warps' totals through shared memory), a full reduction in shares
# (block kernels writing partial results, then a combine kernel). A host-emulated block kernel takes a second to
# compile: they are shared out among the dtypes.
ALL_DTYPES = [np.float32, np.float64, np.int32, np.bool_]
REDUCTIONS = [
    ((5, 7), [0, 1, None], {"serial"}, ALL_DTYPES), ((2, 3, 4), [(1,), (0, 2)], {"serial"}, [np.float32]),
    ((400, 5), [1], {"serial"}, [np.int32]),  # (more results than the emulated grid's threads)
    ((7, 300), [1], {"block"}, [np.bool_]), ((200, 7), [0], {"block"}, [np.float64]),  # (more results than blocks)
    ((2, 3, 140), [(0, 2)], {"block"}, [np.int32]), ((13000,), [None], {"block", "combine"}, [np.float32, np.bool_]),
    # (several results, each in shares: partial results by (share, result), combined per result)
    ((2, 5000), [1], {"block", "combine"}, [np.float32, np.int32]),
    ((1500, 3), [0], {"block", "combine"}, [np.float64]),
]
REDUCTION_CASES = [(shape, axes, expected, dtype) for shape, axes, expected, dtypes in REDUCTIONS for dtype in dtypes]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("shape, axes, expected, dtype", REDUCTION_CASES,
                         ids=[f"{s}-{a}-{np.dtype(d).name}" for s, a, _, d in REDUCTION_CASES])
def test_reductions(shape, axes, expected, dtype):
    """sum, max, min, argmax, argmin, prod (any, all) over each of ``axes``: against the interpreter, sums and
    extrema against NumPy in float64 too; the kernel kinds the shape stands for occur. (Integers and booleans
    have ties.)"""
    x = _values(shape, dtype)

    def reductions(x):
        return [r for axis in axes for r in _reductions(x, axis)]

    got, emulation = emulated(reductions, x, ulps=64)
    assert kinds(emulation) == expected, emulation.program.describe()
    if np.dtype(dtype).kind == "f":
        wide_x, at = x.astype(np.float64), 0
        for axis in axes:
            for g, want in zip(got[at:], [np.sum(wide_x, axis=axis), np.max(wide_x, axis=axis),
                                          np.min(wide_x, axis=axis)]):
                np.testing.assert_allclose(g, want, rtol=1e-5 * np.sqrt(x.size), atol=1e-6 * x.size)
            at += 4 + (0 if isinstance(axis, tuple) else 2)


def test_large_full_reduction_has_partials_on_the_device():
    """>= 3 * 4096 elements into one result: the device program too reduces in shares, then combines them."""
    described = build(traced(jnp.sum, np.zeros(13000, np.float32))).describe()
    assert "block kernel" in described and "combine kernel" in described, described


EXTREMA = [((5, 7), 1, {"serial"}, np.float64), ((3, 300), 1, {"block"}, np.float32),
           ((13000,), None, {"block", "combine"}, np.float64)]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("shape, axis, expected, dtype", EXTREMA,
                         ids=[f"{s}-{a}-{np.dtype(d).name}" for s, a, _, d in EXTREMA])
def test_extrema_with_nans_and_ties(shape, axis, expected, dtype):
    """A NaN wins max and min (and argmax, argmin: its first position); equal values: the first index."""
    x = RNG.standard_normal(shape).astype(dtype)
    x.reshape(-1)[RNG.integers(0, x.size, 3)] = np.nan
    ties = np.round(RNG.standard_normal(shape)).astype(dtype)

    def extrema(x, ties):
        return [jnp.max(x, axis=axis), jnp.min(x, axis=axis), jnp.argmax(x, axis=axis), jnp.argmin(x, axis=axis),
                jnp.argmax(ties, axis=axis), jnp.argmin(ties, axis=axis)]

    got, emulation = emulated(extrema, x, ties)
    assert kinds(emulation) == expected, emulation.program.describe()
    assert np.isnan(got[0]).any() and np.isnan(got[1]).any()
    if axis is None:  # (NumPy's own argmax: the first NaN, the first of equal values)
        assert [int(g) for g in got[2:6]] == [np.argmax(x), np.argmin(x), np.argmax(ties), np.argmin(ties)]


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("axis", [0, 1])
def test_scans_both_ways(axis, dtype):
    x = _values((6, 150), dtype)

    def scans(x):
        return [jnp.cumsum(x, axis=axis), jnp.cumprod(x, axis=axis), lax.cummax(x, axis=axis),
                lax.cummin(x, axis=axis), lax.cumsum(x, axis=axis, reverse=True),
                lax.cumprod(x, axis=axis, reverse=True), lax.cummax(x, axis=axis, reverse=True)]

    got, emulation = emulated(scans, x, ulps=64)
    assert kinds(emulation) == {"serial"}
    np.testing.assert_allclose(got[4], np.flip(np.cumsum(np.flip(x, axis), axis, dtype=np.float64), axis),
                               rtol=1e-4, atol=1e-4 * np.abs(x).sum())


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_empty_reductions_give_the_identity(dtype):
    x = np.zeros((0, 3), dtype)

    def empty(x):
        return [jnp.sum(x, axis=0), jnp.prod(x, axis=0), jnp.any(x, axis=0), jnp.all(x, axis=0), jnp.sum(x)]

    got, emulation = emulated(empty, x)
    assert kinds(emulation) == {"fill"}
    for g, identity in zip(got, [0, 1, False, True, 0]):
        assert (g == identity).all()


# -- indexing, layout, products ----------------------------------------------------------------------------------
SCATTERS = {
    "add": lambda b, i, v: b.at[i].add(v), "mul": lambda b, i, v: b.at[i].multiply(v),
    "min": lambda b, i, v: b.at[i].min(v), "max": lambda b, i, v: b.at[i].max(v),
}


SCATTER_CASES = [(c, d) for c in sorted(SCATTERS) for d in (np.float32, np.int32, np.bool_)
                 if d is not np.bool_ or c in ("add", "max")]


@pytest.mark.parametrize("combine, dtype", SCATTER_CASES, ids=[f"{c}-{np.dtype(d).name}" for c, d in SCATTER_CASES])
def test_combining_scatter_with_repeated_indices(combine, dtype):
    """300 updates into 10 places (atomics; out-of-range indices dropped, negative ones from the end), rows of
    a matrix, and one column."""
    op = SCATTERS[combine]
    i = RNG.integers(-12, 12, 300).astype(np.int32)
    v = _values(300, dtype)
    rows = RNG.integers(0, 10, 10).astype(np.int32)

    def scatter(b, i, v, b2, rows, v2):
        return [op(b, i, v), op(b2, rows, v2), op(b2[:, 1], rows, v2[:, 0])]

    _, emulation = emulated(scatter, _values(10, dtype), i, v, _values((10, 4), dtype), rows,
                            _values((10, 4), dtype), ulps=64)
    assert kinds(emulation) == {"map"}


def test_scatter_set_where_indices_do_not_repeat():
    """With repeated indices any one write wins (as on JAX's GPUs): only the places written once (or never)
    are compared."""
    i = np.array([3, -1, 5, 3, 12, -11, 0, 7, 5, 9, 2, 3], np.int32)  # (12 and -11 out of range: dropped)
    v = RNG.standard_normal(12).astype(np.float32)
    b = RNG.standard_normal(10).astype(np.float32)

    def scatter_set(b, i, v):
        return [b.at[i].set(v)]

    ir = traced(scatter_set, b, i, v)
    (got,), (want,) = Emulation(ir)(b, i, v), eval_function(ir, b, i, v)
    places = np.where(i < 0, i + 10, i)
    once = np.bincount(places[(places >= 0) & (places < 10)], minlength=10) <= 1
    assert 0 < once.sum() < 10
    np.testing.assert_array_equal(got[once], np.asarray(want)[once])
    assert set(got[~once]) <= set(v)
    assembles(ir)


def test_gathers():
    x = RNG.standard_normal((7, 9)).astype(np.float32)
    i = RNG.integers(-12, 12, 20).astype(np.int32)

    def gathers(x, i):
        return [x[i % 7], x[:, i % 9], x[i], jnp.take(x, i % 9, axis=1), jnp.take(x, i % 7, axis=0),
                x[i % 7, i % 9], jnp.take_along_axis(x, (jnp.abs(i[:9]) % 7).reshape(1, 9), axis=0)]

    emulated(gathers, x, i)


def test_concatenate_pad_where():
    x = RNG.standard_normal((7, 9)).astype(np.float32)
    c = RNG.random((7, 9)) > 0.5

    def layout(x, y, c):
        return [jnp.concatenate([x, y, x], axis=0), jnp.concatenate([x.T, y.T], axis=1), jnp.pad(x, ((1, 2), (3, 0))),
                jnp.pad(x, ((2, 2), (1, 1)), constant_values=5.0), lax.pad(x, np.float32(-1), [(1, 0, 2), (0, 2, 1)]),
                jnp.where(c, x, y), jnp.where(c[:, :1], x, 0.5), jnp.where(x > 0, x, y[0])]

    emulated(layout, x, 2 * x, c)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=lambda d: np.dtype(d).name)
def test_matrix_products(dtype):
    """Float products through the gemm step (NumPy's product in the emulation), integer ones as reductions."""
    a, b = (RNG.integers(-9, 10, shape).astype(dtype) for shape in [(17, 33), (33, 20)])
    a3, b3 = (RNG.standard_normal(shape).astype(dtype) for shape in [(4, 5, 130), (4, 130, 6)])

    def products(a, b, a3, b3):
        return [a @ b, jnp.dot(a[0], b), a @ b[:, 3], jnp.matmul(a3, b3), jnp.einsum("bij,bjk->bik", a3, b3)]

    _, emulation = emulated(products, a, b, a3, b3, ulps=64)
    assert ("cublas" in kinds(emulation)) == (np.dtype(dtype).kind == "f"), emulation.program.describe()
    if dtype is np.int32:
        assert {"serial", "block"} <= kinds(emulation)


def test_convolution():
    x = RNG.standard_normal((2, 3, 9, 9)).astype(np.float32)
    k = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)

    def conv(x, k):
        return [lax.conv_general_dilated(x, k, (1, 1), "SAME"), lax.conv_general_dilated(x, k, (2, 2), "VALID")]

    _, emulation = emulated(conv, x, k, ulps=64)
    assert "cublas" in kinds(emulation)


def test_windowed_reductions():
    x = RNG.standard_normal((2, 3, 9, 9)).astype(np.float32)

    def windows(x):
        return [lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
                lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 1, 1), "VALID"),
                lax.reduce_window(x, np.inf, lax.min, (1, 1, 3, 2), (1, 1, 2, 1), "VALID"),
                x[:, :, :8, :8].reshape(2, 3, 4, 2, 4, 2).max(axis=(3, 5))]  # max pooling in jnp

    emulated(windows, x, ulps=16)


# -- the corpus --------------------------------------------------------------------------------------------------
@functools.cache
def _corpus_ir(name):
    entry = programs.CASES[name]
    ir, _ = trace_function(entry["fn"], [abstract(s) for s in entry["args"]])
    return ir


def _on_gpu(name):
    try:
        plan_for_gpu(_corpus_ir(name))
    except Unsupported:
        return False
    return True


GPU_CORPUS = [name for name in sorted(programs.CASES) if _on_gpu(name)]


def test_corpus_share_on_the_gpu():
    """Programs without control flow build (the rest, with loops and branches, run on the CPU)."""
    share = len(GPU_CORPUS) / len(programs.CASES)
    print(f"{len(GPU_CORPUS)} of {len(programs.CASES)} corpus programs build for the GPU")
    assert share >= 0.4, f"only {len(GPU_CORPUS)} of {len(programs.CASES)} corpus programs build for the GPU"


@pytest.mark.parametrize("name", GPU_CORPUS)
def test_corpus_program_emulated(name):
    entry, ir = programs.CASES[name], _corpus_ir(name)
    emulation = Emulation(ir)
    for seed in range(2):
        rng = np.random.default_rng(seed)
        args = [sample(s, rng, entry["positive"]) for s in entry["args"]]
        leaves = [np.asarray(leaf) for leaf in dynamic_leaves(args, entry["args"])]
        want = [np.asarray(v) for v in eval_function(ir, *leaves)]
        got = emulation(*leaves)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_agrees(g, w, name, ulps=64)
    assembles(ir)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_reductions_that_collapse_to_no_axes(shape):
    """A reduction whose every axis has one element (or a scalar's) collapses to a nest of no axes: one thread
    computes the one result (found running the runtime tests on the emulated GPU)."""
    x = np.full(shape, 2.5, np.float32)

    def one_element(x):
        return [jnp.sum(x), jnp.max(x), jnp.argmax(x.reshape(-1))]

    _, emulation = emulated(one_element, x)
    assert kinds(emulation) <= {"serial", "map"}, emulation.program.describe()
