"""Natively compiled functions (codegen/llvm) agree with the eager runtime: a table of fused programs, matrix
products through BLAS, the shape of the fusion plan, packed AVX code, and the fallback to the interpreter."""

import re

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.codegen.llvm import kernels
from srcjax.codegen.llvm.kernels import num_threads
from tests.codegen.assembly import packed

RNG = np.random.default_rng(0)


def _f32(*shape, low=-3.0, high=3.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def _i32(*shape, low=-50, high=50):
    return RNG.integers(low, high, shape).astype(np.int32)


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


def integer_ops(a, b):
    return (
        lax.div(a, b),
        lax.rem(a, b),
        a * b - 7,
        jnp.maximum(a, b),
        a >> 2,
        lax.shift_left(a, b & 7),
        lax.shift_right_logical(a, b),
        -a,
        jnp.abs(a),
        jnp.sign(a),
        a == b,
        (a < b) & (a != 0),
        ~a ^ b,
    )


def conversions(x):
    big = x * 1e9
    return (
        big.astype(jnp.int32),
        x.astype(jnp.uint8),
        x.astype(jnp.int8),
        (x > 0).astype(jnp.float32),
        x.astype(bool),
        jnp.round(x),
        jnp.floor(x),
        jnp.ceil(x),
        jnp.arange(x.shape[0]) * x,
    )


def special_values(x):
    return (
        x.astype(jnp.int32),
        jnp.maximum(x, 0.0),
        jnp.minimum(x, -0.0),
        jnp.sign(x),
        jnp.isfinite(x),
        x / 0.0,
        jnp.clip(x, -1.0, 1.0),
    )


def reductions(x):
    return (
        jnp.sum(x, axis=0),
        jnp.sum(x, axis=(0, 2)),
        jnp.max(x, axis=1),
        jnp.min(x, axis=2),
        jnp.prod(x[:2] / 2, axis=(1, 2)),
        jnp.mean(x),
        jnp.sum(jnp.exp(x), axis=-1),
        x.sum() + x[0].sum(-1),
    )


def softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def views(x, y):
    return (
        x.T + 1.0,
        x.reshape(-1) * 2.0,
        jnp.exp(x).reshape(x.shape[1], x.shape[0]),
        x[1:, ::2] - y[:, None, 0],
        jnp.transpose(x)[::-1] * 1.0,
        jnp.broadcast_to(y[:, 0], (3, y.shape[0])),
    )


def transcendental(x):
    return (
        jnp.tanh(x),
        jnp.log1p(jnp.abs(x)),
        jnp.expm1(x),
        jnp.sin(x),
        jnp.cos(x),
        lax.erf(x),
        lax.logistic(x),
        jnp.log(jnp.abs(x) + 1e-3),
        jnp.sqrt(jnp.abs(x)),
        lax.rsqrt(jnp.abs(x) + 1.0),
        x**3,
        jnp.abs(x) ** x,
        jnp.arctan2(x, 1.5),
        jnp.sinh(x),
        jnp.exp2(x),
    )


# name, function, arguments, (rtol, atol) for floats (integers and bools must match exactly)
PROGRAMS = [
    ("selu_1e5", selu, [_f32(100_000)], (2e-6, 5e-7)),  # alpha * exp(x) - alpha: a few ulp of alpha
    ("square_plus_double", lambda x: x * x + x * 2.0, [_f32(50, 40)], (0, 0)),
    ("sum_logistic", sum_logistic, [_f32(1000)], (1e-6, 0)),
    ("sum_logistic_threads", sum_logistic, [_f32(30_000)], (1e-6, 0)),
    ("broadcast_outer", lambda x, y: x[:, None] + y[None, :] * 2.0, [_f32(30), _f32(40)], (0, 0)),
    ("broadcast_3d", lambda x, y: x * y, [_f32(3, 1, 5), _f32(4, 1)], (0, 0)),
    ("scalar_and_0d", lambda x, s: x * s + s, [_f32(7), np.float32(2.5)], (0, 0)),
    ("reductions", reductions, [_f32(6, 7, 8)], (2e-6, 1e-6)),
    # sums that cancel: within a few ulp of sum(|x|) (the order of the additions differs)
    ("column_sum_threads", lambda x: jnp.sum(x, axis=0), [_f32(1000, 300)], (1e-5, 2e-4)),
    ("row_max_threads", lambda x: (jnp.max(x, axis=1), jnp.min(x, axis=0)), [_f32(140, 200)], (0, 0)),
    ("selu_threads", selu, [_f32(30_000)], (2e-6, 5e-7)),
    ("integer_threads", lambda a: (jnp.sum(a, axis=0), a * 3 + 1), [_i32(300, 70)], None),
    ("softmax", softmax, [_f32(64, 33)], (2e-6, 1e-7)),
    ("integer_ops", integer_ops, [_i32(9, 11), _i32(9, 11, low=-3, high=4)], None),
    (
        "integer_sum",
        lambda a: (jnp.sum(a, axis=1), jnp.max(a), a.min(0), jnp.prod(a % 3, axis=0)),
        [_i32(20, 30)],
        None,
    ),
    ("conversions", conversions, [_f32(64, low=-4, high=300)], (0, 0)),
    (
        "special_values",
        special_values,
        [np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -3.5, 2.5], np.float32)],
        (0, 0),
    ),
    ("views", views, [_f32(4, 6), _f32(3, 5)], (1e-6, 0)),
    ("transcendental", transcendental, [_f32(333)], (3e-6, 1e-7)),
    ("empty", lambda x, y: (x * 2.0, jnp.sum(y, axis=1), jnp.max(y, axis=0)), [_f32(0), _f32(3, 0)], (0, 0)),
    (
        "bools",
        lambda p, q: (p & ~q, jnp.any(p), jnp.all(q, axis=0), jnp.where(p, 1, 2)),
        [RNG.random((5, 4)) > 0.5, RNG.random((5, 4)) > 0.3],
        None,
    ),
    ("matmul", lambda a, b: a @ b, [_f32(31, 17), _f32(17, 23)], (1e-5, 1e-5)),
    ("matmul_transposed", lambda a: (a @ a.T, a.T @ a), [_f32(20, 13)], (1e-5, 1e-5)),
    ("matvec_fused", lambda w, x: jnp.tanh(w @ x + 1.0).sum(), [_f32(40, 30), _f32(30)], (1e-5, 1e-5)),
    ("batched_matmul", lambda a, b: jnp.einsum("bij,bjk->bik", a, b), [_f32(4, 5, 6), _f32(4, 6, 3)], (1e-5, 1e-5)),
    ("batched_other_axes", lambda a, b: jnp.einsum("ibj,kjb->bik", a, b), [_f32(5, 4, 6), _f32(3, 6, 4)], (1e-5, 1e-5)),
    ("integer_matmul", lambda a, b: a @ b, [_i32(7, 9), _i32(9, 4)], None),
    ("constants", lambda x: x + jnp.array([1.0, 2.0, 3.0]) * np.float32(2.0), [_f32(2, 3)], (0, 0)),
    (
        "concatenate_and_pad",
        lambda x, y: (
            jnp.concatenate([jnp.exp(x), y * 2.0, x[:1]], axis=0),
            jnp.pad(x, ((1, 2), (0, 3)), constant_values=-1.0),
            lax.pad(x, 0.5, ((0, 1, 2), (2, 0, 1))),
            jnp.stack([x, x + 1.0]).sum(0),
        ),
        [_f32(3, 4), _f32(5, 4)],
        (1e-6, 0),
    ),
    ("identity_and_repeats", lambda x: (x, x, x + 1.0, x.reshape(2, -1)), [_f32(4, 3)], (0, 0)),
]


def _as_tuple(out):
    return out if isinstance(out, (tuple, list)) else (out,)


@pytest.fixture
def small_parallel_threshold(monkeypatch):
    """Split nests across threads from a small size, so that small tests take the threaded paths."""
    monkeypatch.setattr(kernels, "PARALLEL_MIN_WORK", 1 << 12)


@pytest.mark.parametrize("name,fn,args,tol", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_compiled_agrees_with_eager(name, fn, args, tol, request):
    if name.endswith("_threads"):
        request.getfixturevalue("small_parallel_threshold")
    jitted = srcjax.jit(fn)
    compiled = jitted.lower(*args).compile()
    assert compiled.native is not None, compiled.native_error
    got = _as_tuple(jitted(*args))
    want = _as_tuple(fn(*[jnp.asarray(a) for a in args]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and g.weak_type == w.weak_type, (g, w)
        g, w = np.asarray(g), np.asarray(w)
        if tol is None or w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize(
    "fn,shape",
    [
        (sum_logistic, (1 << 20,)),
        (lambda x: jnp.sum(x, axis=0), (4000, 1100)),
        (lambda x: jnp.max(x, axis=1), (2200, 2000)),
        (selu, (1 << 20,)),
    ],
)
def test_large_nests_run_on_threads(fn, shape):
    executable = srcjax.jit(fn).lower(np.zeros(shape, np.float32)).compile().native
    assert ("srcjax_parallel" in executable.llvm_ir) == (num_threads() > 1)
    small = srcjax.jit(fn).lower(np.zeros(1000, np.float32) if len(shape) == 1 else np.zeros((10, 10), np.float32))
    assert "srcjax_parallel" not in small.compile().native.llvm_ir


def test_weak_types_survive():
    f = srcjax.jit(lambda x: x * 2)
    out = f(3.0)
    assert out.weak_type and out.dtype == np.float32 and float(out) == 6.0
    assert f.lower(3.0).compile().native is not None


def test_float64_programs():
    srcjax.config.update("jax_enable_x64", True)
    try:
        x = RNG.normal(size=(50, 20))
        fn = lambda x: (jnp.tanh(x) @ x.T, jnp.sum(jnp.exp(x), axis=0), x.astype(jnp.int64))  # noqa: E731
        got = srcjax.jit(fn)(x)
        for g, w in zip(got, fn(jnp.asarray(x))):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-13)
    finally:
        srcjax.config.update("jax_enable_x64", False)


def _plan(fn, *args) -> str:
    return srcjax.jit(fn).lower(*args).compile().native.steps


def test_fusion_plans():
    # one pass over memory: an elementwise chain is one nest writing the output directly
    assert _plan(selu, _f32(10)) == "map (10,) -> output"
    assert _plan(sum_logistic, _f32(10)) == "reduce[add] (10,) axes=(0,) -> output"
    # a broadcast operand that is expensive is computed once (not once per row)
    assert _plan(lambda x, y: jnp.exp(y)[None, :] * x, _f32(8, 5), _f32(5)).splitlines() == [
        "map (5,) -> temp",
        "map (8, 5) -> output",
    ]
    # maps over one shape that read a buffer in common are one pass, cheap or not (an optimizer's new moments
    # and parameters: Adam's divisions and root do not make it bound by arithmetic)
    assert _plan(lambda x, y: (x + y, x * y), _f32(8, 5), _f32(8, 5)) == "map (8, 5) -> output, output"
    assert _plan(lambda x, y: (x + 1.0, y * 2.0), _f32(8, 5), _f32(8, 5)).count("map") == 2
    assert _plan(lambda x: (jnp.exp(x), jnp.tanh(x)), _f32(8, 5)) == "map (8, 5) -> output, output"

    def adam(p, g, m, v):
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        return p - 0.001 * (m / 0.1) / (jnp.sqrt(v / 0.001) + 1e-8), m, v

    assert _plan(adam, *[_f32(8, 5)] * 4) == "map (8, 5) -> output, output, output"
    # an outer product (nothing contracted) is an elementwise product, fused into what reads it
    assert _plan(lambda w, a, b: w + jnp.outer(a, b), _f32(5, 7), _f32(5), _f32(7)) == "map (5, 7) -> output"
    batched_outer = lambda x, y: lax.dot_general(x, y, (((), ()), ((0,), (0,))))  # noqa: E731
    assert _plan(batched_outer, _f32(3, 4), _f32(3, 2)) == "map (3, 4, 2) -> output"
    x, y = _f32(3, 4), _f32(3, 2)
    np.testing.assert_array_equal(np.asarray(srcjax.jit(batched_outer)(x, y)), np.einsum("ij,ik->ijk", x, y))
    # so is a product whose contraction has one term (k = 1): each element one product, -0.0 kept as XLA keeps
    # it (jax 0.10: [[-0, -0], [0, 0]] for this one), where BLAS adds the product to 0
    assert _plan(lambda a, b: a @ b, _f32(5, 1), _f32(1, 7)) == "map (5, 7) -> output"
    a, b = np.array([[-1.0], [1.0]], np.float32), np.zeros((1, 2), np.float32)
    for f in (lambda a, b: a @ b, lambda a, b: lax.dot_general(a[None], b[None], (((2,), (1,)), ((0,), (0,))))[0]):
        got = np.asarray(srcjax.jit(f)(a, b))
        np.testing.assert_array_equal(np.signbit(got), [[True, True], [False, False]])
    # a transposed operand is read by BLAS in place; an expression operand is computed first
    assert _plan(lambda a: a @ a.T, _f32(6, 4)) == "syrk 1x[6,4]@[4,6] -> output"  # half the work of gemm
    assert _plan(lambda a, b: jnp.exp(a) @ b, _f32(6, 4), _f32(4, 2)).splitlines() == [
        "map (6, 4) -> temp",
        "gemm 1x[6,4]@[4,2] -> output",
    ]


def test_a_product_read_only_transposed_is_computed_transposed():
    # reverse mode's weight gradient: dot_general(g, x) contracting the batch, then transposed
    def weight_step(w, x, g):
        return w - 0.1 * lax.transpose(lax.dot_general(g, x, (((0,), (0,)), ((), ()))), (1, 0))

    w, x, g = _f32(5, 3), _f32(7, 5), _f32(7, 3)
    assert _plan(weight_step, w, x, g).splitlines() == ["gemm 1x[5,7]@[7,3] -> temp", "map (5, 3) -> output"]
    want = w.astype(np.float64) - 0.1 * (g.astype(np.float64).T @ x).T
    np.testing.assert_allclose(np.asarray(srcjax.jit(weight_step)(w, x, g)), want, rtol=1e-5, atol=1e-5)

    def batched(a, b):  # (batch, lhs free, rhs free) read as (batch, rhs free, lhs free)
        return jnp.exp(lax.transpose(lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (0, 2, 1)))

    a, b = _f32(3, 4, 6, low=-1, high=1), _f32(3, 6, 2, low=-1, high=1)
    assert _plan(batched, a, b).splitlines()[0] == "gemm 3x[2,6]@[6,4] -> temp"
    want = np.exp(np.einsum("bik,bkj->bji", a.astype(np.float64), b))
    np.testing.assert_allclose(np.asarray(srcjax.jit(batched)(a, b)), want, rtol=1e-5)
    # a product that is also read as it is keeps its layout
    both = lambda a, b: (a @ b, (a @ b).T)  # noqa: E731
    assert _plan(both, _f32(4, 6), _f32(6, 2)).splitlines()[0] == "gemm 1x[4,6]@[6,2] -> output"


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_small_window_reductions_are_fused_views(dtype):
    """Windows of up to 16 elements without padding (max pooling) are one nest over strided views of the
    operand, with the eager results; larger or padded ones stay host calls."""
    x = _f32(3, 9, 8, 2) if dtype == np.float32 else _i32(3, 9, 8, 2)
    low, high = (-np.inf, np.inf) if dtype == np.float32 else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    cases = [  # (function, natively fused)
        (lambda x: lax.reduce_window(x, low, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID"), True),
        (lambda x: lax.reduce_window(x, high, lax.min, (1, 3, 2, 1), (1, 2, 3, 1), "VALID"), True),
        (lambda x: lax.reduce_window(x, dtype(0), lax.add, (1, 2, 2, 1), (2, 2, 2, 1), "VALID",
                                     window_dilation=(1, 2, 1, 1)), True),
        (lambda x: lax.reduce_window(x, low, lax.max, (1, 1, 1, 1), (1, 3, 1, 1), "VALID"), True),  # one element
        (lambda x: lax.reduce_window(x, low, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "SAME"), False),  # padded
        (lambda x: lax.reduce_window(x, low, lax.max, (1, 5, 4, 1), (1, 1, 1, 1), "VALID"), False),  # 20 elements
    ]
    for fn, fused in cases:
        compiled = srcjax.jit(fn).lower(x).compile().native
        assert [op.name for op in compiled.plan.host_ops] == ([] if fused else ["reduce_window_max"])
        if fused:
            assert compiled.steps.count("map") == 1 and "reduce" not in compiled.steps
        want = np.asarray(fn(jnp.asarray(x)))
        got = np.asarray(srcjax.jit(fn)(x))
        if dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)


def test_max_pool_gradient_compiles_without_host_calls():
    from srcjax.example_libraries import stax

    _, apply = stax.MaxPool((2, 2), (1, 1))
    loss = lambda x: jnp.sum(apply((), x) ** 2)  # noqa: E731
    x = _f32(2, 6, 5, 3)
    compiled = srcjax.jit(srcjax.grad(loss)).lower(x).compile().native
    assert compiled.plan.host_ops == []
    np.testing.assert_allclose(np.asarray(srcjax.jit(srcjax.grad(loss))(x)), np.asarray(srcjax.grad(loss)(x)),
                               rtol=1e-6)


def test_only_reduction_loops_are_unrolled():
    """LLVM unrolls the loops of reductions (partial sums in flight), not those of maps (bound by memory; unrolled
    they multiply the compile time of large functions)."""
    x = _f32(4096)
    map_ir = srcjax.jit(selu).lower(x).compile().native.llvm_ir
    reduction_ir = srcjax.jit(sum_logistic).lower(x).compile().native.llvm_ir
    assert "llvm.loop.unroll.disable" in map_ir
    assert "llvm.loop.unroll.disable" not in reduction_ir


def test_packed_arithmetic_in_fused_loop():
    executable = srcjax.jit(lambda x: x * x + x * 2.0).lower(_f32(4096)).compile().native
    assembly = executable.assembly()
    assert packed(assembly, "v?mulps") and packed(assembly, r"v?addps|vfmadd\d+ps")
    assert not re.search(r"\bv?(mul|add)ss\b", assembly)  # no scalar loop left beside the packed one
    assert "define" in executable.llvm_ir


def test_blas_results_against_numpy():
    for m, k, n in [(1, 1, 1), (64, 128, 32), (3, 200, 1), (200, 3, 5)]:
        a, b = _f32(m, k), _f32(k, n)
        np.testing.assert_allclose(
            np.asarray(srcjax.jit(jnp.matmul)(a, b)), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4
        )


def test_ops_without_a_lowering_run_as_host_calls():
    f = srcjax.jit(lambda x: jnp.sort(x) * 2.0)
    x = _f32(9)
    compiled = f.lower(x).compile()
    assert compiled.native is not None and [op.name for op in compiled.native.plan.host_ops] == ["sort"]
    np.testing.assert_array_equal(np.asarray(f(x)), np.sort(x) * 2.0)
    loop = srcjax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x))
    assert loop.lower(x).compile().native is not None  # loops compile natively (codegen/llvm/control.py)
    np.testing.assert_array_equal(np.asarray(loop(x)), x * 8.0)


def test_an_internal_compiler_failure_is_an_error_not_a_fallback(monkeypatch):
    from srcjax.codegen import cache
    from srcjax.runtime.api import InternalCompilerError

    def fail(*args, **kwargs):
        raise RuntimeError("no code today")

    monkeypatch.setattr(cache, "compile_function", fail)
    f, x = srcjax.jit(lambda x: jnp.exp(x) * 2.0), _f32(9)
    failure = r"'<lambda>' \(.*test_native.py:\d+\): RuntimeError: no code today"
    with pytest.raises(InternalCompilerError, match=failure):
        f(x)
    monkeypatch.setenv("SRCJAX_NATIVE", "0")  # the way round it that the message names
    np.testing.assert_allclose(np.asarray(f(x)), np.exp(x) * 2.0, rtol=1e-6)


def test_a_function_the_native_compiler_does_not_handle_warns_once_with_the_reason(monkeypatch):
    from srcjax.codegen import cache
    from srcjax.codegen.llvm import compile as native_compile
    from srcjax.runtime.api import NativeFallbackWarning

    monkeypatch.setattr(cache, "compile_function", lambda *args, **kwargs: None)
    monkeypatch.setattr(native_compile, "unsupported_reason", lambda fn: "'frobnicate' has no native CPU lowering yet")

    def scaled(x):
        return jnp.exp(x) * 2.0

    f = srcjax.jit(scaled)
    with pytest.warns(NativeFallbackWarning, match=r"jit of 'scaled' \(.*test_native.py:\d+\) runs in the "
                      r"interpreter, not compiled natively: 'frobnicate' has no native CPU lowering yet") as record:
        x = _f32(9)
        np.testing.assert_allclose(np.asarray(f(x)), np.exp(x) * 2.0, rtol=1e-6)
        f(_f32(5))  # another specialisation of the same function: no second warning
        f(_f32(5).astype(np.float64))
    assert len(record) == 1
    assert record[0].filename.endswith("test_native.py")  # the warning points at the function


def test_native_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("SRCJAX_NATIVE", "0")
    f = srcjax.jit(lambda x: x + 1.0)
    compiled = f.lower(_f32(3)).compile()
    assert compiled.native is None and compiled.native_error is None
    np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), 2.0)




@pytest.fixture
def split_products(monkeypatch):
    """Every product split across the pool (its thresholds at 1), the compile cache off; skipped without
    OpenBLAS's thread controls or a second thread."""
    from srcjax.codegen.llvm import blas, gemm

    found = blas.find_gemm()
    if found is None or not found.thread_control or num_threads() < 2:
        pytest.skip("needs OpenBLAS's thread controls and two threads")
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    monkeypatch.setattr(gemm, "GEMM_SPLIT_MIN_WORK", 1)
    monkeypatch.setattr(gemm, "GEMM_CHUNK_MIN_WORK", 1)


@pytest.mark.parametrize("shape", [(40, 130, 70), (90, 130, 33)], ids=["columns", "rows"])
@pytest.mark.parametrize("transposed", ["", "lhs", "rhs", "both"])
def test_products_split_across_the_pool(split_products, shape, transposed):
    """Large products run as blocks on the thread pool, each a single-threaded BLAS call (batched products
    too): blocks of columns where the product is wider than tall, of rows otherwise, with the same results
    whichever operand is stored transposed."""
    m, k, n = shape
    a, b = _f32(m, k), _f32(k, n)
    lhs = a.T.copy() if transposed in ("lhs", "both") else a
    rhs = b.T.copy() if transposed in ("rhs", "both") else b
    ops = {"": lambda x, y: x @ y, "lhs": lambda x, y: x.T @ y, "rhs": lambda x, y: x @ y.T,
           "both": lambda x, y: x.T @ y.T}
    f = srcjax.jit(lambda x, y: jnp.tanh(ops[transposed](x, y)))
    got = np.asarray(f(lhs, rhs))
    (compiled,) = f._cache.values()
    assert ".gemm1" in compiled.native.llvm_ir, "the product was not split"
    # (sums of 130 float32 products of size up to 9: a few 1e-5 absolute before the tanh)
    np.testing.assert_allclose(got, np.tanh(a.astype(np.float64) @ b), rtol=1e-5, atol=1e-4)
    xs, ys = _f32(3, 48, 20), _f32(3, 20, 30)
    batched = srcjax.jit(lambda x, y: x @ y)
    np.testing.assert_allclose(np.asarray(batched(xs, ys)), xs.astype(np.float64) @ ys, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(70, 45, 150), (200, 40, 50)], ids=["columns", "rows"])
def test_blocks_of_split_products_use_openblas_small_kernels(split_products, x64, shape, dtype):
    """Where OpenBLAS exports its AVX-512 small-product kernels (``blas._bind_small_kernels``), the blocks of a
    split product of their sizes are those calls (the product's transpose in their column-major terms): the
    float64 product's values whichever operands are stored transposed, read through a slice (a leading
    dimension wider than the block), or batched."""
    from srcjax.codegen.llvm import blas

    if not blas.find_gemm().small:
        pytest.skip("OpenBLAS's small-product kernels are not bound here (no AVX-512 core)")
    m, k, n = shape
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(m, k + 7)).astype(dtype), rng.normal(size=(k, n)).astype(dtype)
    want = a[:, 3:3 + k].astype(np.float64) @ b
    cases = {
        "nn": (lambda x, y: x[:, 3:3 + k] @ y, a, b),
        "lhs transposed": (lambda x, y: x.T[:, 3:3 + k] @ y, a.T.copy(), b),
        "rhs transposed": (lambda x, y: x[:, 3:3 + k] @ y.T, a, b.T.copy()),
        "both": (lambda x, y: x.T[:, 3:3 + k] @ y.T, a.T.copy(), b.T.copy()),
    }
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for name, (fn, x, y) in cases.items():
        f = srcjax.jit(fn)
        assert ("dgemm_small" if dtype == np.float64 else "sgemm_small") in f.lower(x, y).compile().native.llvm_ir, name
        np.testing.assert_allclose(np.asarray(f(x, y)), want, rtol=rtol, atol=rtol * 10, err_msg=name)
    xs, ys = rng.normal(size=(6, 40, 36)).astype(dtype), rng.normal(size=(6, 36, 48)).astype(dtype)
    batched = srcjax.jit(lambda x, y: x @ y)
    np.testing.assert_allclose(np.asarray(batched(xs, ys)), xs.astype(np.float64) @ ys, rtol=rtol, atol=rtol * 10)


def test_split_products_give_the_same_bits_for_any_thread_count(split_products, monkeypatch):
    """Whether a split product's blocks run OpenBLAS's small-product kernel depends on the product's shape, not on
    the blocks the thread count cuts (with 4 threads, 16-row blocks once fell back to ?gemm, which sums in
    another order): the same bits with 2, 3, 4 and 8 threads."""
    from srcjax.codegen.llvm import blas, gemm

    if not blas.find_gemm().small:
        pytest.skip("OpenBLAS's small-product kernels are not bound here (no AVX-512 core)")
    monkeypatch.setattr(gemm, "GEMM_CHUNK_MIN_WORK", 1 << 17)
    a, b = _f32(512, 784), _f32(784, 128)
    results, splits = [], set()
    for threads in ("2", "3", "4", "8"):
        monkeypatch.setenv("SRCJAX_NUM_THREADS", threads)
        srcjax.clear_caches()
        f = srcjax.jit(lambda x, y: x @ y)
        llvm_ir = f.lower(a, b).compile().native.llvm_ir
        assert "sgemm_small" in llvm_ir, threads
        splits.add(re.search(r"@srcjax_parallel\(ptr [^,]*gemm1, ptr [^,]*, i64 \d+, i64 (\d+)\)", llvm_ir)[1])
        results.append(np.asarray(f(a, b)))
    assert len(splits) > 1  # (the blocks differ)
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_vector_products_are_gemv(dtype):
    """A product with one row or one column is a ?gemv call, whichever operand is stored transposed or
    strided, with the values of the float64 product; with nothing to contract the result is zeros."""
    from srcjax.codegen.llvm import blas

    if blas.find_gemm() is None:
        pytest.skip("needs BLAS")
    rng = np.random.default_rng(5)
    a, v, w = (rng.normal(size=s).astype(dtype) for s in [(24, 40), (40,), (24,)])
    cases = [
        (lambda a, v, w: a @ v, True), (lambda a, v, w: w @ a, True), (lambda a, v, w: a.T @ w, True),
        (lambda a, v, w: v @ a.T, True), (lambda a, v, w: a[::2, ::3] @ v[::3], True),
        (lambda a, v, w: w[::2] @ a[::2, 1::2], True), (lambda a, v, w: a[:, :, None][..., 0] @ v[:, None], True),
        (lambda a, v, w: v[None, :] @ a.T, True), (lambda a, v, w: jnp.dot(v, v), True),
        (lambda a, v, w: jnp.einsum("ij,i->j", a, w), True), (lambda a, v, w: a @ a.T, False),
    ]
    for f, is_gemv in cases:
        jitted = srcjax.jit(f)
        got = np.asarray(jitted(a, v, w))
        np.testing.assert_allclose(got, f(*(x.astype(np.float64) for x in (a, v, w))), rtol=1e-5, atol=1e-5)
        llvm_ir = jitted.lower(a, v, w).compile().native.llvm_ir
        assert ("gemv" in llvm_ir) == is_gemv
    empty = srcjax.jit(lambda x, y: x @ y)
    np.testing.assert_array_equal(np.asarray(empty(np.ones((5, 0), dtype), np.ones(0, dtype))), np.zeros(5, dtype))


def test_split_products_from_two_threads_give_blas_its_threads_back(split_products):
    """A split product sets BLAS to one thread and then back to the count the host wants: two threads of the
    process splitting products at once must not leave BLAS on one thread for good (as restoring the count
    each read before setting 1 would)."""
    import threading

    from srcjax.codegen.llvm import blas

    a, b = _f32(64, 64), _f32(64, 64)
    f = srcjax.jit(lambda x, y: x @ y)
    want = np.asarray(f(a, b))

    def calls():
        for _ in range(300):
            np.testing.assert_array_equal(np.asarray(f(a, b)), want)

    threads = [threading.Thread(target=calls) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert blas._load.get() == blas._threads_wanted.value >= 1


def test_batches_of_small_products_shared_across_the_pool(monkeypatch):
    """A batch of small products (each under BATCH_SPLIT_MAX_EACH, together over BATCH_SPLIT_MIN_WORK) runs as
    runs of batch elements on the pool, each product one single-threaded BLAS call, with the same results."""
    from srcjax.codegen.llvm import blas

    found = blas.find_gemm()
    if found is None or not found.thread_control or num_threads() < 2:
        pytest.skip("needs OpenBLAS's thread controls and two threads")
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    xs, ys = _f32(70, 33, 40), _f32(70, 40, 25)  # 70 x 33k multiply-adds
    from srcjax.codegen.llvm import gemm

    monkeypatch.setattr(gemm, "BATCH_SPLIT_MIN_WORK", 1 << 16)
    f = srcjax.jit(lambda x, y: jnp.tanh(x @ y))
    got = np.asarray(f(xs, ys))
    (compiled,) = f._cache.values()
    assert ".gemm1" in compiled.native.llvm_ir, "the batch was not split"
    np.testing.assert_allclose(got, np.tanh(xs.astype(np.float64) @ ys), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", [(), (2,), (1000,), (3, 5)], ids=str)
def test_random_numbers_compile_natively_bit_for_bit(shape):
    """threefry2x32 (two results: two fused rules) and the bitcasts of the samplers run natively and give the
    eager path's bits."""
    from srcjax import random

    key = random.PRNGKey(42)

    def draw(k):
        a, b = random.split(k)
        return random.normal(a, shape), random.uniform(b, shape), random.bits(k, shape), random.randint(a, shape, 0, 9)

    jitted = srcjax.jit(draw)
    got = jitted(key)
    (compiled,) = jitted._cache.values()
    assert compiled.native is not None and not compiled.native.plan.host_ops
    for g, w in zip(got, draw(key)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
