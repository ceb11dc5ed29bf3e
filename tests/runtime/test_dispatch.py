"""The call path of compiled functions: the fast path for Arrays (and the general one for every other kind of
argument), asynchronous dispatch of large calls (pending Arrays, program order, errors, exit and fork), and
``donate_argnums`` (buffer reuse where it is safe, deletion of the donated Arrays). NumPy is the oracle."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime import dispatch
from srcjax.runtime.array import Array
from srcjax.transpiler.primitives import reduce

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")

RNG = np.random.default_rng(0)
ASYNC_MIN_WORK = 1 << 16  # (lower than the default, to keep these tests small)
BIG = ASYNC_MIN_WORK  # elements: a call reading an array this large is queued


@pytest.fixture(autouse=True)
def small_async_threshold(monkeypatch):
    monkeypatch.setattr(dispatch, "ASYNC_MIN_WORK", ASYNC_MIN_WORK)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _pointer(x: Array) -> int:
    return np.asarray(x).ctypes.data


def _same_type(got, want):
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type), (got.aval, want.aval)


# -- the fast path and the general path -------------------------------------------------------------------------
def test_fast_path_result_is_fresh_read_only_and_typed_like_eager():
    f = srcjax.jit(lambda x: x + 1.0)
    x = srcjax.device_put(np.arange(4, dtype=np.float32))
    first, second = f(x), f(x)
    for r in (first, second):
        np.testing.assert_array_equal(np.asarray(r), np.arange(4) + 1.0)
        _same_type(r, x + 1.0)
        assert not np.asarray(r).flags.writeable
    assert _pointer(first) != _pointer(second)  # results are fresh buffers
    assert len(f._fast) == 1  # the second call took the fast path


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[::2],  # strided
        lambda a: a.T,  # transposed
        lambda a: jnp.broadcast_to(a[:1], a.shape),  # zero strides
        lambda a: a[::-1],  # negative strides
    ],
    ids=["strided", "transposed", "broadcast", "reversed"],
)
def test_non_contiguous_buffers_on_the_fast_path(make):
    f = srcjax.jit(lambda x: x * 2.0 + 1.0)
    base = srcjax.device_put(_f32(6, 6))
    x = make(base)
    contiguous = srcjax.device_put(np.ascontiguousarray(np.asarray(x)))
    f(contiguous)  # the same signature, compiled with a contiguous buffer
    assert not np.asarray(x).flags.c_contiguous
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(x) * 2.0 + 1.0, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "float32", "int16"])
def test_other_dtypes(dtype):
    f = srcjax.jit(lambda x, y: (x + y, x * y))
    a = np.arange(6).reshape(2, 3).astype(dtype)
    b = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    for args in [(srcjax.device_put(a), srcjax.device_put(b)), (a, b)]:  # Arrays (fast path), NumPy arrays
        got = f(*args)
        want = (jnp.asarray(a) + jnp.asarray(b), jnp.asarray(a) * jnp.asarray(b))
        for g, w in zip(got, want):
            _same_type(g, w)
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_python_scalars_and_foreign_dtypes_keep_weak_types():
    f = srcjax.jit(lambda x, y: x * y + 1)
    x = srcjax.device_put(np.arange(3, dtype=np.float32))
    for args in [(x, 2.0), (x, 3), (2.0, 3), (np.arange(3, dtype=np.float64), 2.0), (x, np.float32(2))]:
        got = f(*args)
        want = (jnp.asarray(args[0]) if not isinstance(args[0], float) else args[0]) * args[1] + 1
        want = jnp.asarray(want)
        _same_type(got, want)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_pytrees_in_and_out():
    f = srcjax.jit(lambda p, x: {"y": p["w"] * x + p["b"], "parts": (x, p["b"] * 2)})
    p = {"w": srcjax.device_put(_f32(3)), "b": srcjax.device_put(_f32(3))}
    x = srcjax.device_put(_f32(3))
    got = f(p, x)
    w, b, xv = (np.asarray(a) for a in (p["w"], p["b"], x))
    np.testing.assert_allclose(np.asarray(got["y"]), w * xv + b, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(got["parts"][0]), xv)
    np.testing.assert_allclose(np.asarray(got["parts"][1]), b * 2, rtol=1e-6)


def test_pytree_calls_are_keyed_by_structure_and_leaf_types():
    import collections

    f = srcjax.jit(lambda t: t[0] * 2 + t[1])
    x = srcjax.device_put(np.arange(3, dtype=np.float32))
    pair = collections.namedtuple("pair", "a b")
    for t in [(x, 1.0), [x, 1], (x, True), (x, np.ones(3)), (x, np.ones(3, np.int32)), pair(x, 2.0), (x, 1.0)]:
        want = jnp.asarray(t[0]) * 2 + (jnp.asarray(t[1]) if isinstance(t[1], np.ndarray) else t[1])
        got = f(t)
        _same_type(got, want)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    g = srcjax.jit(lambda d: d["a"] - d.get("b", 0.0) if d["c"] is None else d["c"])
    np.testing.assert_allclose(np.asarray(g({"a": x, "b": 1.0, "c": None})), np.arange(3) - 1.0)
    np.testing.assert_allclose(np.asarray(g({"a": x, "c": None})), np.arange(3))  # other keys: other structure
    with pytest.raises(OverflowError):
        f((x, 1 << 40))  # too large for int32: the full signature check says so


def test_scalars_follow_the_x64_flag():
    f = srcjax.jit(lambda x, s: x * s)
    assert f(np.ones(2), 2.0).dtype == np.float32
    srcjax.config.update("jax_enable_x64", True)
    try:
        assert f(np.ones(2), 2.0).dtype == np.float64
    finally:
        srcjax.config.update("jax_enable_x64", False)
    assert f(np.ones(2), 2.0).dtype == np.float32


def test_several_results_and_constants_on_the_fast_path():
    table = np.linspace(0.0, 1.0, 5).astype(np.float32)
    f = srcjax.jit(lambda x: (x + table, x.sum(), x * 2))
    x = srcjax.device_put(_f32(5))
    for _ in range(2):
        a, s, d = f(x)
        xv = np.asarray(x)
        np.testing.assert_allclose(np.asarray(a), xv + table, rtol=1e-6)
        np.testing.assert_allclose(float(s), xv.sum(), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(d), xv * 2, rtol=1e-6)


def test_disable_jit_and_debug_nans_leave_the_fast_path():
    f = srcjax.jit(lambda x: jnp.log(x))
    x = srcjax.device_put(np.array([-1.0, 1.0], np.float32))
    f(x)
    with srcjax.disable_jit():
        assert np.isnan(np.asarray(f(x))[0])
    srcjax.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            f(x)
    finally:
        srcjax.config.update("jax_debug_nans", False)
    assert np.isnan(np.asarray(f(x))[0])


def test_debug_nans_names_the_line_that_made_the_nan():
    """The Sharp Bits tutorial's example: JAX's de-optimized rerun shows the line of the division; ours says it
    in a note on the FloatingPointError."""

    @srcjax.jit
    def f(x, y):
        a = x * y
        b = (x + y) / (x - y)
        return a + b

    x = jnp.array([2.0, 0.0])
    srcjax.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="nan") as info:
            f(x, x * 0)
    finally:
        srcjax.config.update("jax_debug_nans", False)
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1 and "test_dispatch.py" in notes[0] and "b = (x + y) / (x - y)" in notes[0]


def test_debug_nans_checks_a_jitted_functions_results(capsys):
    """JAX checks a jitted function's results, and reruns it op by op only when one is NaN: a NaN that only a
    masked branch makes (the NaN-safe ``where``) is no error under jit (JAX 0.10.2 gives 0.0), while eagerly
    and under grad outside jit every op is checked; a NaN from an input is reported too."""
    def safe(x):
        return jnp.where(x > 0, jnp.log(x), 0.0)

    srcjax.config.update("jax_debug_nans", True)
    try:
        assert float(srcjax.jit(safe)(-1.0)) == 0.0
        assert np.asarray(srcjax.jit(srcjax.vmap(safe))(jnp.array([-1.0, 1.0]))).tolist() == [0.0, 0.0]
        for fn in (safe, srcjax.grad(safe)):
            with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
                fn(-1.0)
        with pytest.raises(FloatingPointError, match="no operation of it made"):
            srcjax.jit(lambda x: x)(jnp.array([np.nan]))  # (JAX: its de-optimized run made no NaN either)
    finally:
        srcjax.config.update("jax_debug_nans", False)
    assert "Calling the de-optimized version" in capsys.readouterr().out


# -- asynchronous dispatch --------------------------------------------------------------------------------------
def _big():
    return srcjax.device_put(_f32(BIG))


def test_large_calls_return_before_the_work_is_done(monkeypatch):
    f = srcjax.jit(lambda x: x * 2.0)
    x = _big()
    executable = f.lower(x).compile().native
    gate = threading.Event()
    run = executable.run

    def gated(inputs, outs):
        assert gate.wait(10)
        run(inputs, outs)

    monkeypatch.setattr(executable, "run", gated)
    y = f(x)  # returns while the worker is held at the gate
    assert not y.is_ready()
    assert y.shape == (BIG,) and y.dtype == np.float32  # the type is known before the value
    gate.set()
    np.testing.assert_allclose(np.asarray(y), np.asarray(x) * 2.0)
    assert y.is_ready()


def test_chained_large_calls_run_in_order():
    f = srcjax.jit(lambda x, y: x * 0.5 + y)
    x, y = _big(), _big()
    want = np.asarray(x).astype(np.float64)
    for _ in range(40):
        x = f(x, y)  # each call's input is the previous call's pending result
        want = want * 0.5 + np.asarray(y)
    np.testing.assert_allclose(np.asarray(x.block_until_ready()), want, rtol=1e-5, atol=1e-5)


def test_pending_results_in_eager_ops_printing_and_small_calls():
    f = srcjax.jit(lambda x: x + 1.0)
    small = srcjax.jit(lambda x: x[:3] * 2.0)
    x = _big()
    xv = np.asarray(x)
    y = f(x)
    np.testing.assert_allclose(np.asarray(small(y)), (xv[:3] + 1.0) * 2.0, rtol=1e-6)  # queued behind f
    y = f(x)
    np.testing.assert_allclose(float(jnp.sum(y[:10])), (xv[:10] + 1.0).sum(), rtol=1e-5)
    y = f(x)
    assert "Array(" in repr(y) and "dtype=float32" in repr(y)
    y = f(x)
    assert str(y).startswith("[")
    y = f(x)
    np.testing.assert_allclose(srcjax.device_get(y), xv + 1.0)
    y = f(x)
    assert srcjax.block_until_ready({"a": [y]})["a"][0] is y and y.is_ready()
    assert float(y[0]) == pytest.approx(xv[0] + 1.0)


def test_an_exception_in_a_queued_call_surfaces_at_every_access(monkeypatch):
    x = srcjax.device_put(_f32(BIG // 64, 64))
    idx = np.arange(0, BIG // 64, 2, dtype=np.int32)
    f = srcjax.jit(lambda x, i: jnp.sort(jnp.exp(x), axis=1)[i] + 1.0)
    want = np.sort(np.exp(np.asarray(x)), axis=1)[idx] + 1.0
    np.testing.assert_allclose(np.asarray(f(x, idx)), want, rtol=1e-5)
    assert f.lower(x, idx).compile().native.work >= ASYNC_MIN_WORK

    def broken(*args, **params):
        raise FloatingPointError("sort failed on purpose")

    monkeypatch.setattr(reduce.sort_p, "impl", broken)
    y = f(x, idx)  # queued: the error is raised on the worker and kept
    z = srcjax.jit(lambda y: y * 2.0)(y)  # a consumer of the failed result fails too
    for _ in range(2):
        with pytest.raises(FloatingPointError, match="on purpose"):
            np.asarray(y)
    with pytest.raises(FloatingPointError, match="on purpose"):
        y.block_until_ready()
    with pytest.raises(FloatingPointError, match="on purpose"):
        z + 1.0
    monkeypatch.undo()
    np.testing.assert_allclose(np.asarray(f(x, idx)), want, rtol=1e-5)


def test_a_host_callback_may_call_compiled_functions(monkeypatch):
    x = srcjax.device_put(_f32(BIG // 64, 64))
    idx = np.arange(0, BIG // 64, 3, dtype=np.int32)
    inner = srcjax.jit(lambda a: a * 1.0)
    big = _big()
    sort = reduce.sort_p.impl

    def sort_via_jit(*args, **params):  # a compiled call (queued size) from inside a running one
        np.testing.assert_array_equal(np.asarray(inner(big)), np.asarray(big))
        return sort(*args, **params)

    monkeypatch.setattr(reduce.sort_p, "impl", sort_via_jit)
    f = srcjax.jit(lambda x, i: jnp.sort(jnp.exp(x), axis=1)[i] + 1.0)
    want = np.sort(np.exp(np.asarray(x)), axis=1)[idx] + 1.0
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(f(x, idx)), want, rtol=1e-5)


def test_queued_calls_from_several_threads():
    f = srcjax.jit(lambda x, y: x * 0.5 + y)
    y = _big()
    errors = []

    def work(k):
        try:
            x = srcjax.device_put(np.full(BIG, float(k), np.float32))
            want = np.full(BIG, float(k))
            for _ in range(10):
                x = f(x, y)
                want = want * 0.5 + np.asarray(y)
            np.testing.assert_allclose(np.asarray(x), want, rtol=1e-5, atol=1e-5)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


def _run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root, "SRCJAX_ASYNC_MIN_WORK": str(ASYNC_MIN_WORK)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_exit_with_pending_work_does_not_hang():
    done = _run_python("""
        import numpy as np, srcjax
        f = srcjax.jit(lambda x: x * 2.0 + 1.0)
        x = srcjax.device_put(np.ones(1 << 21, np.float32))
        for _ in range(20):
            x = f(x)
        print("submitted")
    """)
    assert done.returncode == 0, done.stderr
    assert "submitted" in done.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_has_its_own_worker():
    done = _run_python("""
        import os, numpy as np, srcjax
        f = srcjax.jit(lambda x: x * 2.0 + 1.0)
        x = srcjax.device_put(np.ones(1 << 21, np.float32))
        y = f(f(x))  # pending when the process forks
        pid = os.fork()
        if pid == 0:
            ok = np.allclose(np.asarray(y), 7.0) and np.allclose(np.asarray(f(y)), 15.0)
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), "parent", float(f(y)[0]))
    """)
    assert done.returncode == 0, done.stderr
    assert "child 0 parent 15.0" in done.stdout


def test_a_queued_result_nobody_holds_is_freed_when_its_job_has_run():
    """A loop that keeps each step's small result (a loss) must not keep each step's large sibling result (the
    parameters) alive: a finished job hands its buffers to the results still held and keeps none itself."""
    import tracemalloc

    step = srcjax.jit(lambda w: (w * 0.5 + 1.0, jnp.sum(w)))
    start = _f32(BIG)
    w = srcjax.device_put(start)
    step.lower(w).compile()  # (compiled before memory is traced)
    losses = []
    tracemalloc.start()
    try:
        for _ in range(40):
            w, loss = step(w)
            losses.append(loss)
        w.block_until_ready()  # (every job has run; the losses are not read yet)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 8 * BIG * 4, f"{held} bytes still held after 40 steps of {BIG * 4}-byte parameters"
    want = start.astype(np.float64)
    for loss in losses:
        np.testing.assert_allclose(float(loss), want.sum(), rtol=1e-4)
        want = want * 0.5 + 1.0
    np.testing.assert_allclose(np.asarray(w), want, rtol=1e-5)


# -- donation -------------------------------------------------------------------------------------------------
def test_donated_buffer_is_reused_for_an_elementwise_result():
    f = srcjax.jit(lambda x: x * 2 + 1, donate_argnums=0)
    for size in (4, BIG):  # called synchronously, then queued
        xv = _f32(size)
        x = srcjax.device_put(xv)
        where = _pointer(x)
        y = f(x)
        assert x.is_deleted() and not y.is_deleted()
        np.testing.assert_allclose(np.asarray(y), xv * 2 + 1, rtol=1e-6)
        assert _pointer(y) == where
        with pytest.raises(RuntimeError, match="deleted"):
            x + 1
        with pytest.raises(RuntimeError, match="deleted"):
            np.asarray(x)
        with pytest.raises(RuntimeError, match="deleted"):
            f(x)


def test_donated_argument_that_is_also_returned():
    xv = _f32(5)
    same = srcjax.jit(lambda x: x, donate_argnums=0)
    x = srcjax.device_put(xv)
    y = same(x)
    assert x.is_deleted() and y is not x
    np.testing.assert_array_equal(np.asarray(y), xv)
    both = srcjax.jit(lambda x: (x * 3.0, x), donate_argnums=(0,))
    x = srcjax.device_put(xv)
    a, b = both(x)
    assert x.is_deleted()
    np.testing.assert_allclose(np.asarray(a), xv * 3.0, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(b), xv)


def test_donated_argument_passed_twice():
    xv = _f32(6)
    f = srcjax.jit(lambda a, b: a * 2.0 + b[::-1], donate_argnums=0)
    x = srcjax.device_put(xv)
    y = f(x, x)
    np.testing.assert_allclose(np.asarray(y), xv * 2.0 + xv[::-1], rtol=1e-6)
    assert x.is_deleted()


def test_donated_buffer_shared_with_numpy_or_another_array_is_not_reused():
    f = srcjax.jit(lambda x: x * 2 + 1, donate_argnums=0)
    xv = _f32(8)
    x = srcjax.device_put(xv)
    held = np.asarray(x)  # the caller keeps the buffer
    y = f(x)
    assert x.is_deleted() and _pointer(y) != held.ctypes.data
    np.testing.assert_array_equal(held, xv)  # untouched
    np.testing.assert_allclose(np.asarray(y), xv * 2 + 1, rtol=1e-6)

    x = srcjax.device_put(xv)
    twin = srcjax.device_put(x, srcjax.devices()[0])  # another Array over the same buffer
    y = f(x)
    np.testing.assert_array_equal(np.asarray(twin), xv)
    np.testing.assert_allclose(np.asarray(y), xv * 2 + 1, rtol=1e-6)

    base = srcjax.device_put(_f32(16))
    x = base[::2]  # a view of another Array's buffer
    want = np.asarray(x) * 2 + 1
    y = f(x)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(base)[::2] * 2 + 1, want)  # the base is intact


def test_donated_buffers_of_a_merged_nest_are_each_reused():
    # momentum: both results are stored by one nest (one pass over v, g and x), each over its own input
    step = srcjax.jit(lambda x, v, g: (x - 0.1 * (0.9 * v + g), 0.9 * v + g), donate_argnums=(0, 1))
    xv, vv, gv = _f32(6, 5), _f32(6, 5), _f32(6, 5)
    x, v = srcjax.device_put(xv), srcjax.device_put(vv)
    assert step.lower(x, v, gv).compile().native.steps == "map (6, 5) -> output, output"
    where = _pointer(x), _pointer(v)
    new_x, new_v = step(x, v, gv)
    assert (_pointer(new_x), _pointer(new_v)) == where
    np.testing.assert_allclose(np.asarray(new_v), 0.9 * vv + gv, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(new_x), xv - 0.1 * (0.9 * vv + gv), rtol=1e-6)


def test_donation_where_in_place_writing_is_unsafe_keeps_results_right():
    xv = _f32(7)
    cases = [
        (lambda x: x[::-1] * 2.0, lambda v: v[::-1] * 2.0),  # reads another element than it writes
        (lambda x: (x * 2.0, x.sum()), lambda v: (v * 2.0, v.sum())),
        (lambda x: (x + 1.0, x * 3.0), lambda v: (v + 1.0, v * 3.0)),  # two results read x
        (lambda x: x * 2.0 + x[0], lambda v: v * 2.0 + v[0]),  # every element reads x[0]
        (lambda x: jnp.cumsum(x) + x, lambda v: np.cumsum(v) + v),
    ]
    for fn, oracle in cases:
        x = srcjax.device_put(xv)
        got = srcjax.jit(fn, donate_argnums=0)(x)
        assert x.is_deleted()
        want = oracle(xv)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5)


def test_donated_buffer_not_written_by_a_result_that_does_not_read_it():
    """A merged nest whose result is a copy of one argument, beside another result reading the donated one: the
    copy must not go over the donated buffer (LLVM, told the buffers do not alias, moved it ahead of the loop
    as a memcpy, and the loop then read the copy instead of the donated values)."""
    a, b = np.arange(16, dtype=np.float32).reshape(4, 4), np.ones((4, 4), np.float32)
    cases = [
        (lambda a, b: (a, a.T + b), 1),
        (lambda a, b: (a, jnp.exp(a) + b, a.T * b), 1),
        (lambda p, v: (v, p - 0.1 * v.T), 0),
        (lambda a, b: (a, b + a[::-1]), 1),
        (lambda a, b: (a, b + a[0]), 1),
        (lambda a, b: (b, a + b.T), 0),
    ]
    for fn, donated in cases:
        want = [np.asarray(r) for r in fn(a.astype(np.float64), b.astype(np.float64))]
        got = srcjax.jit(fn, donate_argnums=donated)(srcjax.device_put(a), srcjax.device_put(b))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


def test_donation_of_pytrees_scalars_pending_and_interpreted_calls(monkeypatch):
    f = srcjax.jit(lambda p, s: {"w": p["w"] - s * p["g"], "g": p["g"]}, donate_argnums=0)
    w, g = _f32(5), _f32(5)
    p = {"w": srcjax.device_put(w), "g": srcjax.device_put(g)}
    out = f(p, 0.5)
    assert p["w"].is_deleted() and p["g"].is_deleted()
    np.testing.assert_allclose(np.asarray(out["w"]), w - 0.5 * g, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out["g"]), g)

    double = srcjax.jit(lambda x: x * 2.0)
    add = srcjax.jit(lambda x: x + 1.0, donate_argnums=0)
    x = _big()
    y = double(x)  # pending
    z = add(y)
    assert y.is_deleted()
    np.testing.assert_allclose(np.asarray(z), np.asarray(x) * 2.0 + 1.0, rtol=1e-6)

    monkeypatch.setenv("SRCJAX_NATIVE", "0")  # the interpreter deletes donated Arrays too
    same = srcjax.jit(lambda x: (x, x * 2.0), donate_argnums=0)
    x = srcjax.device_put(_f32(3))
    xv = np.asarray(x).copy()
    a, b = same(x)
    assert same.lower(srcjax.device_put(xv)).compile().native is None
    assert x.is_deleted() and not a.is_deleted()
    np.testing.assert_array_equal(np.asarray(a), xv)
    np.testing.assert_allclose(np.asarray(b), xv * 2.0)


def test_delete_and_is_deleted():
    x = srcjax.device_put(_f32(3))
    assert not x.is_deleted()
    x.delete()
    assert x.is_deleted() and "deleted" in repr(x)
    assert x.shape == (3,)  # the type outlives the buffer
    with pytest.raises(RuntimeError, match="deleted"):
        x.block_until_ready()


def test_numpy_arguments_are_copied_as_jax_copies_them():
    """A NumPy argument is the caller's to change after the call: results (an identity, a slice, a queued large
    call) keep the values it had, and it stays writable."""
    n = (1 << 22) + 3
    base = np.ones(n + 10, np.float32)
    y = srcjax.jit(lambda x: x)(base[:n])
    base[:] = 5.0
    np.testing.assert_array_equal(np.asarray(y)[:3], [1.0, 1.0, 1.0])
    base = np.arange(n + 10, dtype=np.float32)
    y = srcjax.jit(lambda x: x[:5])(base[:n])
    base[:] = 0.0
    np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0, 3.0, 4.0])
    base = np.ones(n + 10, np.float32)
    y = srcjax.jit(lambda x: x * 2.0 + 1.0)(base[:n])  # (large: queued, and read after the call returns)
    base[:] = -50.0
    np.testing.assert_array_equal(np.asarray(y)[:3], [3.0, 3.0, 3.0])
    x = np.ones(8, np.float32)
    srcjax.jit(lambda x: x + 1)(x)
    kept = jnp.asarray(x)
    x[0] = 7.0  # (still writable, and the Array made from it does not change)
    assert float(kept[0]) == 1.0
