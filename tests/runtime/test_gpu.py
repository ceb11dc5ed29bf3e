"""The GPU runtime: devices, GPU arrays, jitted calls on the GPU against the CPU's, the allocator and the fallbacks.

On a machine with an NVIDIA GPU these run on it; elsewhere (CI) on the host emulation of a GPU
(``SRCJAX_GPU=emulate``: the same runtime and executor, the kernels built for the CPU). Float32 products on
a real GPU use TF32 by default, as JAX's do, so they are compared more loosely there.
"""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.runtime import gpu
from srcjax.runtime.config import config
from tests.corpus import programs
from tests.transpiler.test_corpus import dynamic_leaves, sample

REAL = bool(gpu.gpu_devices()) and not gpu._emulated()


@pytest.fixture(autouse=True)
def on_gpu(monkeypatch):
    """A GPU: the real one, or the host emulation; the GPU is the default backend."""
    if not REAL:
        monkeypatch.setenv("SRCJAX_GPU", "emulate")
    gpu.reset()
    saved = config.jax_platforms, config.jax_default_matmul_precision
    config.update("jax_platforms", None)
    config.update("jax_default_matmul_precision", None)  # (the GPU's own default: TF32 on a real one)
    yield
    config.update("jax_platforms", saved[0])
    config.update("jax_default_matmul_precision", saved[1])
    gpu.reset()


def on_cpu(f, *args):
    """``jit(f)(*args)`` on the CPU: the oracle."""
    saved = config.jax_platforms
    config.update("jax_platforms", "cpu")
    try:
        host = [np.asarray(a) for a in args]
        out = srcjax.jit(f)(*host)
        return srcjax.tree_util.tree_map(np.asarray, out)
    finally:
        config.update("jax_platforms", saved)


def resident(x) -> bool:
    return gpu.resident(x) is not None


def agree(got, want, rtol=1e-5, atol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


def test_the_gpu_is_the_default_backend():
    assert srcjax.default_backend() == "gpu"
    (device,) = srcjax.devices()
    assert device.platform == "gpu" and repr(device) == "CudaDevice(id=0)"
    assert srcjax.devices("cpu")[0].platform == "cpu"
    assert isinstance(device.device_kind, str) and device.device_kind


def test_jax_platforms_cpu_keeps_the_cpu_the_default():
    config.update("jax_platforms", "cpu")
    assert srcjax.default_backend() == "cpu" and srcjax.devices()[0].platform == "cpu"
    assert srcjax.devices("gpu")[0].platform == "gpu"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(), (5,), (3, 70), (0, 4)])
def test_device_put_and_get_round_trip(dtype, shape, monkeypatch):
    monkeypatch.setitem(config._values, "jax_enable_x64", True)
    value = (np.arange(int(np.prod(shape))) % 7).reshape(shape).astype(dtype)
    x = srcjax.device_put(value)
    assert resident(x) and x.device == srcjax.devices()[0] and x.shape == shape and x.dtype == dtype
    np.testing.assert_array_equal(srcjax.device_get(x), value)
    np.testing.assert_array_equal(np.asarray(x), value)  # (again: the host copy is kept)
    assert resident(x)


def test_device_put_copies_and_moves_between_devices():
    value = np.arange(6.0, dtype=np.float32)
    x = srcjax.device_put(value)
    value[0] = 100.0  # (the GPU array holds a copy)
    assert float(x[0]) == 0.0
    back = srcjax.device_put(x, srcjax.devices("cpu")[0])
    assert not resident(back) and back.device.platform == "cpu"
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    assert srcjax.device_put(x, srcjax.devices("gpu")[0]) is x


def selu(x):
    return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)


def logsumexp_rows(x):
    m = jnp.max(x, axis=1, keepdims=True)
    return jnp.log(jnp.sum(jnp.exp(x - m), axis=1)) + m[:, 0]


def reductions(x):
    return (jnp.sum(x), jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(x), jnp.argmax(x, axis=1),
            jnp.argmin(x, axis=0), jnp.prod(1.0 + x[:3] * 1e-3, axis=1), jnp.any(x > 3.0, axis=0))


def scans(x):
    return jnp.cumsum(x, axis=0), lax.cummax(x, axis=1, reverse=True), jnp.cumprod(1.0 + 1e-3 * x, axis=1)


def indexing(x, i):
    updates = jnp.cos(i.astype(x.dtype))  # (repeated indices add up)
    return x[i], jnp.zeros(x.shape[1], x.dtype).at[i % x.shape[1]].add(updates), jnp.take(x, i % x.shape[1], axis=1)


def shapes(x):
    return jnp.concatenate([x, x * 2.0], axis=1), jnp.pad(x, ((1, 2), (0, 3))), x.T @ jnp.ones((x.shape[0],), x.dtype)


CASES = [
    ("selu", selu, lambda r: [r.standard_normal(100_003).astype(np.float32)]),
    ("poly", lambda x: x * x + x * 2.0, lambda r: [r.standard_normal((300, 257)).astype(np.float32)]),
    ("logsumexp", logsumexp_rows, lambda r: [r.standard_normal((40, 3000)).astype(np.float32)]),
    ("reductions", reductions, lambda r: [r.standard_normal((700, 300)).astype(np.float32)]),
    ("full sum", lambda x: (jnp.sum(x), jnp.max(x)), lambda r: [r.standard_normal(1_000_001).astype(np.float32)]),
    ("int reductions", lambda x: (jnp.sum(x, axis=1), jnp.max(x), x.astype(jnp.int32) @ x.T.astype(jnp.int32)),
     lambda r: [r.integers(-50, 50, (64, 500)).astype(np.int32)]),
    ("scans", scans, lambda r: [r.standard_normal((33, 200)).astype(np.float32)]),
    ("indexing", indexing, lambda r: [r.standard_normal((50, 40)).astype(np.float32),
                                      r.integers(0, 50, 300).astype(np.int32)]),
    ("shapes", shapes, lambda r: [r.standard_normal((64, 48)).astype(np.float32)]),
    ("float64", lambda x: (jnp.tanh(x) @ x.T, jnp.sum(jnp.sin(x) ** 2, axis=0)),
     lambda r: [r.standard_normal((70, 90))]),
]


@pytest.mark.parametrize("name, f, make", CASES, ids=[c[0] for c in CASES])
def test_jit_on_gpu_agrees_with_the_cpu(name, f, make):
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    try:
        args = make(np.random.default_rng(0))
        want = on_cpu(f, *args)
        got = srcjax.jit(f)(*[srcjax.device_put(a) for a in args])
        for g, w in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want)):
            assert resident(g), f"{name}: a result is not on the GPU"
            agree(g, w, rtol=2e-5 if np.asarray(w).dtype == np.float32 else 1e-12,
                  atol=2e-5 if np.asarray(w).dtype == np.float32 else 1e-12)
    finally:
        config.update("jax_enable_x64", saved)


@pytest.mark.parametrize("precision, rtol", [(None, 2e-2 if REAL else 1e-5), ("highest", 1e-5)])
def test_float32_products_follow_the_default_matmul_precision(precision, rtol):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((300, 200)).astype(np.float32), rng.standard_normal((4, 200, 130)).astype(np.float32)
    saved = config.jax_default_matmul_precision
    config.update("jax_default_matmul_precision", precision)
    try:
        f = srcjax.jit(lambda a, b: (a @ a.T, jnp.einsum("ij,bjk->bik", a, b)))
        got = f(srcjax.device_put(a), srcjax.device_put(b))
    finally:
        config.update("jax_default_matmul_precision", saved)
    want = (a.astype(np.float64) @ a.T, np.einsum("ij,bjk->bik", a.astype(np.float64), b))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=rtol * np.abs(w).max())


def test_a_training_step_on_the_gpu_agrees_with_the_cpu():
    rng = np.random.default_rng(2)
    sizes = [20, 32, 32, 3]
    params = [(rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x, y = rng.normal(size=(16, 20)).astype(np.float32), rng.normal(size=(16, 3)).astype(np.float32)

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    def step(params, x, y):
        value, grads = srcjax.value_and_grad(loss)(params, x, y)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)], value

    config.update("jax_platforms", "cpu")
    want = srcjax.tree_util.tree_map(np.asarray, srcjax.jit(step)(params, x, y))
    config.update("jax_platforms", None)
    got = srcjax.jit(step)(*srcjax.device_put((params, x, y)))
    tol = 2e-3 if REAL else 1e-5  # (TF32 products on a real GPU)
    for g, w in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want)):
        assert resident(g)
        np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol)


def test_results_are_gpu_arrays_that_wait_and_print():
    x = srcjax.device_put(np.arange(4, dtype=np.float32))
    y = srcjax.jit(lambda x: x * 2.0)(x)
    assert y.block_until_ready() is y and y.is_ready()
    assert repr(y) == "Array([0., 2., 4., 6.], dtype=float32)"
    assert float(jnp.sum(y)) == 12.0  # (an eager operation reads the host copy)


def test_host_arguments_are_uploaded():
    got = srcjax.jit(lambda a, b, s: a * s + b)(np.ones(3, np.float32), srcjax.device_put(np.arange(3.0)), 2.0)
    assert resident(got)
    np.testing.assert_array_equal(np.asarray(got), [2.0, 3.0, 4.0])


def test_donated_arguments_are_deleted():
    x = srcjax.device_put(np.ones(8, np.float32))
    y = srcjax.jit(lambda x: x + 1.0, donate_argnums=0)(x)
    assert x.is_deleted() and float(y[0]) == 2.0
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


def test_donated_buffer_is_written_over_where_the_program_allows():
    """A map that reads its donated argument only where it writes takes that buffer for its result, call after
    call (graphs replay from the second); a transpose, an argument still held elsewhere or passed twice, and a
    result of another type, get fresh buffers; the values are right either way."""
    step = srcjax.jit(lambda w, g: w - 0.1 * g, donate_argnums=0)
    g = srcjax.device_put(np.full(1000, 2.0, np.float32))
    w = srcjax.device_put(np.ones(1000, np.float32))
    for k in range(4):
        address = gpu.resident(w).memory.pointer
        w = step(w, g)
        assert gpu.resident(w).memory.pointer == address, k
    np.testing.assert_allclose(np.asarray(w), 1.0 - 4 * 0.2, rtol=1e-6)
    # (several kernels: replayed as a graph, whose result is copied into the donated buffer)
    scaled = srcjax.jit(lambda w, g: w - g * (jnp.sum(w) / jnp.max(g)) * 1e-4 + jnp.sum(g * g) * 1e-6,
                        donate_argnums=0)
    w, want = srcjax.device_put(np.linspace(0, 1, 1000, dtype=np.float32)), np.linspace(0, 1, 1000)
    for k in range(4):
        address = gpu.resident(w).memory.pointer
        w = scaled(w, g)
        want = want - 2.0 * (want.sum() / 2.0) * 1e-4 + 4000 * 1e-6
        assert gpu.resident(w).memory.pointer == address, k
    (compiled,) = scaled._cache.values()
    (executable,) = compiled.gpu_executables.values()
    assert executable._graphs.get(None), "the schedule was not captured"
    np.testing.assert_allclose(np.asarray(w), want, rtol=1e-5)

    def moves(f, x, reused):
        x = srcjax.device_put(x)
        address = gpu.resident(x).memory.pointer
        want = f(np.asarray(x))
        y = srcjax.jit(f, donate_argnums=0)(x)
        assert x.is_deleted() and (gpu.resident(y).memory.pointer == address) == reused
        agree(y, want)

    m = np.arange(64, dtype=np.float32).reshape(8, 8)
    moves(lambda x: x.T * 2.0, m, False)
    moves(lambda x: x * 2.0, m, True)
    moves(lambda x: (x * 2.0).astype(np.int32), m, False)
    moves(lambda x: jnp.cumsum(x, axis=1), m, False)
    held = srcjax.device_put(m)
    other = srcjax.jit(lambda x, y: x + y, donate_argnums=0)
    before = gpu.resident(held).memory.pointer
    out = other(held, held)  # (passed twice: the second use still reads it)
    assert gpu.resident(out).memory.pointer != before
    agree(out, m + m)


@pytest.mark.parametrize("limit", [0.5, 1.5, 40.0])
def test_while_loops_run_a_trip_ahead_of_their_predicate(limit):
    """A small loop queues trip k+1 before it reads predicate k (0, 1 and several trips: the trip run ahead
    at the end is dropped); a loop that prints does not run ahead, and prints once per trip."""
    def f(x):
        return lax.while_loop(lambda c: jnp.sum(c[0]) < limit, lambda c: (c[0] * 2.0 + 0.1, c[1] + 1), (x, 0))

    x = np.full(3, 0.2, np.float32)
    got = srcjax.jit(f)(x)
    want = on_cpu(f, x)
    agree(got[0], want[0])
    assert int(got[1]) == int(want[1])
    from srcjax.runtime.gpu_eval import SegmentedProgram
    from srcjax.transpiler.frontend import trace_function
    from srcjax.transpiler.types import TensorType

    ir, _ = trace_function(f, [TensorType(np.dtype(np.float32), (3,))])
    (loop,) = [op for op in ir.body.ops if op.name == "while"]
    program = SegmentedProgram(ir, srcjax.devices()[0])
    assert program.ahead(loop) and program.trip(loop) is not None  # (body and predicate: one compiled call)


@pytest.mark.parametrize("trips", [0, 1, 7])
def test_a_loops_trip_is_one_call_that_reads_outside_values(trips):
    """The body and the next predicate compiled together read values from outside the loop (put on the
    device once), carry a value through unchanged, and give what the CPU gives, for 0, 1 and 7 trips."""
    def f(x, w, n):
        def body(c):
            i, y, fixed = c
            return i + 1, jnp.tanh(y * w) + fixed, fixed

        return lax.while_loop(lambda c: (c[0] < n) & (jnp.sum(c[1]) > -1e9), body, (0, x, x * 0.5))

    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    got = srcjax.jit(f)(x, w, np.int32(trips))
    want = on_cpu(f, x, w, np.int32(trips))
    for g, v in zip(got, want):
        agree(g, v)
    assert int(got[0]) == trips


def test_pending_predicate_reads_each_keep_their_slot():
    """``read_later``'s pinned slots: a slot is taken until its value is read, however many reads are pending
    (an inner loop's predicates while the outer loop's waits), and more are allocated when none is free."""
    from srcjax.codegen.ptx.driver import PinnedSlots

    blocks = []

    def allocate():
        blocks.append(len(blocks))
        return [(len(blocks), i) for i in range(8)]

    slots = PinnedSlots(allocate)
    pending = [slots.take() for _ in range(20)]
    assert len(set(pending)) == 20 and slots.allocated == 24
    for slot in pending[:10]:
        slots.give(slot)
    again = [slots.take() for _ in range(14)]
    assert slots.allocated == 24 and not set(again) & set(pending[10:])


def test_nested_while_loops_each_run_ahead():
    """An inner loop of many trips inside an outer loop that runs ahead: every predicate read is its own."""
    def f(x):
        def outer(c):
            y, k = c
            y = lax.while_loop(lambda v: jnp.sum(v) < 1000.0 * (k + 1), lambda v: v * 1.5 + 1.0, y)
            return y * 0.01, k + 1

        return lax.while_loop(lambda c: c[1] < 4, outer, (x, 0))

    x = np.ones(3, np.float32)
    got, want = srcjax.jit(f)(x), on_cpu(f, x)
    agree(got[0], want[0])
    assert int(got[1]) == int(want[1]) == 4


def test_a_loop_with_a_loop_inside_does_not_run_ahead():
    """The trip after the last may start an inner loop that never ends (here: j counts up to k from 1, and the
    outer loop stops at k == 0): a loop with a loop inside waits for its predicate before each trip."""
    def f(k0):
        def body(c):
            k, total = c
            j = lax.while_loop(lambda j: j != k, lambda j: j + 1, 1)
            return k - 1, total + j

        return lax.while_loop(lambda c: c[0] > 0, body, (k0, 0))

    from srcjax.runtime.gpu_eval import SegmentedProgram
    from srcjax.transpiler.frontend import trace_function
    from srcjax.transpiler.types import TensorType

    ir, _ = trace_function(f, [TensorType(np.dtype(np.int32), ())])
    (loop,) = [op for op in ir.body.ops if op.name == "while"]
    assert not SegmentedProgram(ir, srcjax.devices()[0]).ahead(loop)
    k, total = srcjax.jit(f)(np.int32(3))
    assert (int(k), int(total)) == (0, 6)


def test_calls_from_two_threads_each_get_their_own_results():
    """One jitted function (replayed as a graph) and one while loop, called from two threads at once."""
    import threading

    def f(x):
        a = jnp.sin(x) @ x
        return x * jnp.cumsum(jnp.tanh(a).sum(0))[None, :] + a

    def w(x):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, jnp.sin(c[1]) * 1.1 + c[1].sum() * 0.01),
                              (0, x))[1]

    rng = np.random.default_rng(9)
    inputs = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2)]
    for fn in (f, w):
        jitted = srcjax.jit(fn)
        wants = [np.asarray(on_cpu(fn, x)) for x in inputs]
        on_device = [srcjax.device_put(x) for x in inputs]
        jitted(on_device[0]), jitted(on_device[1])
        wrong = []

        def run(t, jitted=jitted, wants=wants, on_device=on_device, wrong=wrong):
            for _ in range(30):
                out = np.asarray(jitted(on_device[t]))
                if not np.allclose(out, wants[t], rtol=2e-2 if REAL else 1e-4, atol=2e-2 if REAL else 1e-4):
                    wrong.append(t)

        threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert not wrong, (fn.__name__, len(wrong))


def test_nan_and_inf_checks_apply_to_gpu_calls():
    for flag, x, what in [("jax_debug_nans", -1.0, "nan"), ("jax_debug_infs", 0.0, "inf")]:
        config.update(flag, True)
        try:
            with pytest.raises(FloatingPointError, match=f"invalid value \\({what}\\) encountered in log"):
                srcjax.jit(jnp.log)(srcjax.device_put(np.float32(x)))
        finally:
            config.update(flag, False)


def test_a_loop_that_prints_does_not_run_ahead(capsys):
    def f(x):
        def body(c):
            srcjax.debug.print("trip {}", c[1])
            return c[0] * 2.0, c[1] + 1
        return lax.while_loop(lambda c: jnp.sum(c[0]) < 10.0, body, (x, 0))

    x = np.ones(2, np.float32)
    out = srcjax.jit(f)(x)
    srcjax.effects_barrier()
    assert int(out[1]) == 3
    assert capsys.readouterr().out.splitlines() == ["trip 0", "trip 1", "trip 2"]


def test_control_flow_runs_on_the_gpu_between_compiled_runs():
    def f(x):
        return lax.fori_loop(0, 5, lambda i, c: c * 0.5 + x, x)

    def g(x):
        while jnp.sum(x) < 100.0:  # (a traced while: its predicate is read back every trip)
            x = x * 2.0 + 1.0
        return x

    def h(xs):
        def cell(c, x):
            c = jnp.tanh(c + x)
            return c, c * 2.0
        return lax.scan(cell, jnp.zeros(3, xs.dtype), xs)

    x = np.arange(5, dtype=np.float32)
    xs = np.random.default_rng(4).standard_normal((6, 3)).astype(np.float32)
    scan_grad = srcjax.grad(lambda xs: jnp.sum(h(xs)[1] ** 2))
    for fn, arg in [(f, x), (g, x), (h, xs), (scan_grad, xs)]:
        jitted = srcjax.jit(fn)
        got = jitted(srcjax.device_put(arg))
        for g_, w in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(on_cpu(fn, arg))):
            assert resident(g_)
            np.testing.assert_allclose(np.asarray(g_), w, rtol=1e-5, atol=1e-6)
        (compiled,) = jitted._cache.values()
        assert "compiled runs" in compiled.gpu_error


def test_repeated_calls_reuse_device_memory():
    f = srcjax.jit(lambda x: jnp.sum(jnp.exp(x)) + jnp.cumsum(x)[-1])
    x = srcjax.device_put(np.linspace(0, 1, 200_000, dtype=np.float32))
    allocator = srcjax.devices()[0].driver().allocator
    f(x).block_until_ready()
    f(x).block_until_ready()
    before = getattr(allocator, "driver_allocations", None)
    for _ in range(5):
        f(x).block_until_ready()
    if before is not None:  # (the emulation counts the blocks it takes from the "driver")
        assert allocator.driver_allocations == before


def test_constants_are_uploaded_once():
    table = np.arange(1000, dtype=np.float32)
    f = srcjax.jit(lambda x: x + jnp.asarray(table))
    x = srcjax.device_put(np.ones(1000, np.float32))
    f(x)
    (compiled,) = f._cache.values()
    (executable,) = compiled.gpu_executables.values()
    assert len(executable.consts) >= 1
    np.testing.assert_array_equal(np.asarray(f(x)), table + 1)


@pytest.mark.parametrize("name", sorted(programs.CASES))
def test_corpus_program_on_the_gpu(name):
    """Every corpus program, jitted with its arguments on the GPU, agrees with the CPU (programs the GPU backend
    does not compile run there, and must still give the same values)."""
    entry = programs.CASES[name]
    specs = entry["args"]
    rng = np.random.default_rng(0)
    args = [sample(s, rng, entry["positive"]) for s in specs]
    leaves = dynamic_leaves(args, specs)
    from srcjax.transpiler.frontend import trace_function
    from srcjax.transpiler.interpret import eval_function
    from tests.transpiler.test_corpus import abstract

    ir, _ = trace_function(entry["fn"], [abstract(s) for s in specs])
    want = [np.asarray(v) for v in eval_function(ir, *leaves)]
    from srcjax.codegen.llvm.plan import Unsupported
    from srcjax.codegen.ptx.executor import GpuExecutable
    from srcjax.runtime.gpu_eval import SegmentedProgram

    device = srcjax.devices()[0]
    try:
        executable = GpuExecutable(ir, device.driver())
    except Unsupported:  # (control flow, or ops no kernel computes: compiled runs between interpreted ops)
        outs = SegmentedProgram(ir, device).run([srcjax.device_put(np.asarray(leaf, p.aval.dtype))
                                                 for leaf, p in zip(leaves, ir.params)])
        got = [np.asarray(o) for o in outs]
    else:
        driver = device.driver()
        inputs = [driver.upload(np.ascontiguousarray(leaf, dtype=p.aval.dtype)) for leaf, p in zip(leaves, ir.params)]
        outputs = executable(inputs)
        got = [driver.download(o, r.aval.shape, r.aval.dtype) for o, r in zip(outputs, ir.results)]
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, name
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
            eps = float(np.finfo(w.dtype).eps)
            tol = 2e-3 if REAL else 64 * eps  # (TF32 products on a real GPU)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, err_msg=name)


def test_eager_operations_on_gpu_arrays_run_there():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal(7).astype(np.float32)
    x, y = srcjax.device_put(a), srcjax.device_put(b)
    cases = [
        (jnp.sin(x), np.sin(a)), (x + y, a + b), (x * 2.0, a * 2.0), (jnp.sum(x, axis=0), a.sum(axis=0)),
        (x.T, a.T), (x.reshape(7, 5), a.reshape(7, 5)), (x[1:3], a[1:3]), (x @ y, a @ b),
        (jnp.where(x > 0, x, y), np.where(a > 0, a, b)), (jnp.argmax(x, axis=1), a.argmax(axis=1)),
    ]
    for got, want in cases:
        assert resident(got), got
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3 if REAL else 1e-6, atol=1e-6)
    # what the GPU backend does not compile (a sort) runs on the host, with the same values
    np.testing.assert_array_equal(np.asarray(jnp.sort(x, axis=1)), np.sort(a, axis=1))


def test_repeated_calls_replay_a_captured_graph():
    """From its second call, a schedule of several steps runs as one captured graph: inputs copied in (skipped
    when the very same buffer comes again), results copied out, so earlier results stay as they were."""
    def step(w, x):
        h = jnp.tanh(x @ w)
        return w - 0.1 * (x.T @ (1.0 - h * h)), jnp.sum(h), jnp.max(h, axis=0)

    rng = np.random.default_rng(6)
    w0, x = rng.standard_normal((20, 8)).astype(np.float32), rng.standard_normal((16, 20)).astype(np.float32)
    jitted = srcjax.jit(step)
    xd = srcjax.device_put(x)
    w, results = srcjax.device_put(w0), []
    for _ in range(4):
        out = jitted(w, xd)
        results.append(out)
        w = out[0]
    ws = [w0]
    for _ in range(4):
        ws.append(on_cpu(step, ws[-1], x)[0])
    for k, out in enumerate(results):
        want = on_cpu(step, ws[k], x)
        for g, wv in zip(out, want):
            assert resident(g)
            tol = 1e-2 if REAL else 1e-5  # (TF32 products on a real GPU, four steps of them)
            np.testing.assert_allclose(np.asarray(g), wv, rtol=tol, atol=tol * np.abs(wv).max())
    (compiled,) = jitted._cache.values()
    (executable,) = compiled.gpu_executables.values()
    assert executable._graphs.get(None), "the schedule was not captured"
    driver = srcjax.devices()[0].driver()
    if hasattr(driver, "graph_launches"):
        assert driver.graph_launches >= 3


def test_schedules_that_fill_from_the_host_are_not_captured():
    f = srcjax.jit(lambda x: (jnp.sum(x, axis=0) + 1.0, jnp.exp(x).T @ x, jnp.cumsum(x, axis=0), jnp.prod(x, axis=0)))
    x = srcjax.device_put(np.zeros((0, 3), np.float32))
    for _ in range(3):
        out = f(x)
    np.testing.assert_array_equal(np.asarray(out[0]), np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(out[1]), np.zeros((3, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(out[3]), np.ones(3, np.float32))
    (compiled,) = f._cache.values()
    (executable,) = compiled.gpu_executables.values()
    assert executable._graphs.get(None) is False


def test_random_numbers_on_the_gpu_are_the_cpus_bits():
    """threefry2x32 in a kernel: the same integer operations, so the same bits as the CPU (and JAX)."""
    def sample(key):
        k1, k2 = srcjax.random.split(key)
        return srcjax.random.bits(k1, (1000,)), srcjax.random.normal(k2, (3, 333)), srcjax.random.uniform(k1, (77,))

    key = srcjax.random.PRNGKey(42)
    got = srcjax.jit(sample)(srcjax.device_put(key))
    for g, w in zip(got, on_cpu(sample, key)):
        assert resident(g)
        if w.dtype.kind == "u":
            np.testing.assert_array_equal(np.asarray(g), w)
        else:  # (normal's erf_inv: a few ulp between the GPU's fused multiply-adds and the CPU's)
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


def test_without_cublas_products_fall_back_rather_than_fail(monkeypatch):
    """On a GPU machine without the nvidia-cublas wheel, a function with a product is not compiled for the GPU
    (Unsupported: it then runs on the CPU) instead of failing at its first call."""
    import types

    from srcjax.codegen.llvm.plan import Unsupported
    from srcjax.codegen.ptx import cublas
    from srcjax.codegen.ptx.executor import GpuExecutable
    from srcjax.transpiler.frontend import trace_function
    from srcjax.transpiler.types import TensorType

    monkeypatch.setattr(cublas, "library_path", lambda: None)
    ir, _ = trace_function(lambda a: a @ a.T, [TensorType(np.dtype(np.float32), (8, 8))])
    with pytest.raises(Unsupported, match="cuBLAS"):
        GpuExecutable(ir, types.SimpleNamespace(emits_ptx=True, capability=(8, 0)))
