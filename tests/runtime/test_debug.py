"""``srcjax.debug``: print, callback and breakpoint act when the program runs, as JAX's do. Every expected output here
is what JAX 0.10.2 prints for the same program (``import jax`` in place of ``import srcjax as jax``)."""

import gc
import io

import numpy as np
import pytest

import srcjax as jax
import srcjax.numpy as jnp
from srcjax.runtime import debugger
from srcjax.transpiler.emit_python import emit_module


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


@pytest.fixture(params=["native", "interpreted"])
def native(request, monkeypatch):
    """Compiled functions run as native code (the print a host call), or in the IR interpreter."""
    if request.param == "interpreted":
        monkeypatch.setenv("SRCJAX_NATIVE", "0")
    return request.param == "native"


# -- print -------------------------------------------------------------------------------------------------------------
def test_print_formats_the_values_as_jax_does(capsys):
    x = jnp.array([1.0, 2.0])
    jax.debug.print("x={x}", x=x)
    jax.debug.print("{} {}", x, 3)
    jax.debug.print("{x} and {y}", x=jnp.float32(1.5), y=jnp.arange(3))
    jax.debug.print("{}", {"a": jnp.ones(2)})
    jax.debug.print("{a}", a=(1, jnp.ones(2)))
    jax.debug.print("{:.3f}", jnp.float32(1.0))
    jax.debug.print("{} {}", "str", None)
    jax.debug.print("{x[0]}", x=jnp.arange(3))
    jax.debug.print("{!r}", jnp.arange(2))
    jax.debug.print("")
    jax.debug.print(ordered=True)("two-call form {}", 1)
    with np.printoptions(precision=2):
        jax.debug.print("{}", jnp.array([1.23456]))
    assert lines(capsys) == [
        "x=[1. 2.]", "[1. 2.] 3", "1.5 and [0 1 2]", "{'a': Array([1., 1.], dtype=float32)}",
        "(Array(1, dtype=int32, weak_type=True), Array([1., 1.], dtype=float32))", "1.000", "str None", "0",
        "Array([0, 1], dtype=int32)", "", "two-call form 1", "[1.23]",
    ]


def test_print_checks_its_arguments_as_jax_does():
    with pytest.raises(ValueError, match=r"Unused positional arguments to `jax.debug.print`: \[2\]"):
        jax.debug.print("{}", 1, 2)
    with pytest.raises(ValueError, match=r"Unused keyword arguments to `jax.debug.print`: \['y'\]. You may be"):
        jax.debug.print("{}", 1, y=2)
    with pytest.raises(KeyError, match="x"):
        jax.debug.print("{x}", y=2)
    with pytest.raises(TypeError, match="two-call form"):
        jax.debug.print(None, 1)


def test_print_in_jit_prints_each_call_with_its_values(capsys, native):
    def f(x):
        jax.debug.print("in f: {}", x)
        jax.debug.print("a constant: {}", 3)  # (printed when the program runs, not when it is read)
        return x * 2

    jf = jax.jit(f)
    x = jnp.array([1.0, 2.0])
    compiled = jf.lower(x).compile()
    assert (compiled.native is not None) == native
    assert lines(capsys) == []
    jf(x)
    jf(x + 1)
    assert lines(capsys) == ["in f: [1. 2.]", "a constant: 3", "in f: [2. 3.]", "a constant: 3"]


def test_print_in_a_loop_prints_on_each_trip(capsys, native):
    def doubling(x):
        while x.sum() < 20:  # (a loop on a traced value: one while op, not unrolled)
            jax.debug.print("s={}", x.sum())
            x = x * 2
        return x

    def counting(x):
        def body(i, c):
            jax.debug.print("i={i} c={c}", i=i, c=c)
            return c * 2.0

        return jax.lax.fori_loop(0, 3, body, x)

    jf = jax.jit(doubling)
    assert "while" in jf.lower(jnp.ones(2)).as_text()
    np.testing.assert_array_equal(jf(jnp.ones(2)), [16.0, 16.0])
    np.testing.assert_array_equal(jf(jnp.ones(2) * 3), [12.0, 12.0])
    assert jax.jit(counting)(1.0) == 8.0
    assert lines(capsys) == ["s=2.0", "s=4.0", "s=8.0", "s=16.0", "s=6.0", "s=12.0", "i=0 c=1.0", "i=1 c=2.0",
                             "i=2 c=4.0"]


def test_a_print_is_not_dead_code(capsys, native):
    """Nothing reads what a print gives, yet jit keeps it: of a value nothing else reads, in a loop whose results
    nothing reads, and twice where it is written twice (not merged as equal ops). (JAX prints the same lines, the
    ``again`` ones first: XLA schedules unordered callbacks as it likes; srcjax runs every op in program order.)"""
    def f(x):
        jax.debug.print("dead {}", x * 3)
        jax.lax.while_loop(lambda y: y < 3, lambda y: (jax.debug.print("loop {}", y), y + 1)[1], x)
        jax.debug.print("again {}", x)
        jax.debug.print("again {}", x)
        return x

    inner = jax.jit(lambda x: (jax.debug.print("inner {}", x), x)[1])

    def g(x):
        return inner(x) + inner(x)

    assert jax.jit(f)(1.0) == 1.0
    assert jax.jit(g)(1.0) == 2.0
    assert lines(capsys) == ["dead 3.0", "loop 1.0", "loop 2.0", "again 1.0", "again 1.0", "inner 1.0", "inner 1.0"]
    assert jax.jit(f).lower(1.0).as_text().count("debug_callback") == 4


def test_ordered_prints_keep_program_order(capsys, native):
    def f(x):
        jax.debug.print("first {}", x * 3, ordered=True)
        jax.lax.while_loop(lambda y: y < 3, lambda y: (jax.debug.print("loop {}", y, ordered=True), y + 1)[1], x)
        jax.debug.print("last {}", x, ordered=True)
        return x

    jax.jit(f)(1.0)
    assert lines(capsys) == ["first 3.0", "loop 1.0", "loop 2.0", "last 1.0"]


def test_a_call_that_prints_runs_before_it_returns(capsys, monkeypatch):
    """A compiled call large enough to be queued on the dispatch thread runs on the caller's instead when it prints
    (once its queued inputs are computed): its lines come out between the caller's own."""
    from srcjax.runtime import dispatch

    monkeypatch.setattr(dispatch, "ASYNC_MIN_WORK", 1)
    double = jax.jit(lambda x: x * 2)
    show = jax.jit(lambda x: (jax.debug.print("sum {}", x.sum()), x + 1)[1])
    y = double(jnp.ones(3))  # (queued)
    out = show(y)
    print("after")
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])
    jax.effects_barrier()
    assert lines(capsys) == ["sum 6.0", "after"]


# -- transformations ---------------------------------------------------------------------------------------------------
def test_vmap_prints_each_example_in_jax_order(capsys):
    jax.vmap(lambda x: (jax.debug.print("{}", x), x)[1])(jnp.arange(3.0))
    jax.vmap(lambda x, y: (jax.debug.print("x={} y={}", x, y), x)[1], in_axes=(0, None))(jnp.arange(2.0), 5.0)
    jax.vmap(lambda x: (jax.debug.print("{}", x), x)[1], in_axes=1)(jnp.arange(4.0).reshape(2, 2))
    jax.jit(jax.vmap(lambda x: (jax.debug.print("jit {}", x), x)[1]))(jnp.arange(2.0))
    # nested: the inner vmap's loop is the outer one (JAX unrolls the inner batch into binds of the outer vmap)
    jax.vmap(jax.vmap(lambda x: (jax.debug.print("{}", x), x)[1]))(jnp.arange(4.0).reshape(2, 2))
    assert lines(capsys) == ["0.0", "1.0", "2.0", "x=0.0 y=5.0", "x=1.0 y=5.0", "[0. 2.]", "[1. 3.]", "jit 0.0",
                             "jit 1.0", "0.0", "2.0", "1.0", "3.0"]


def test_a_batched_loop_prints_every_example_on_every_trip(capsys):
    def f(x):
        return jax.lax.while_loop(lambda c: c < 3, lambda c: (jax.debug.print("body {}", c), c + 1)[1], x)

    np.testing.assert_array_equal(jax.vmap(f)(jnp.array([0.0, 2.0])), [3.0, 3.0])
    assert lines(capsys) == ["body 0.0", "body 2.0", "body 1.0", "body 3.0", "body 2.0", "body 3.0"]


def test_differentiation_prints_the_primal_once(capsys):
    def h(x):
        y = x * x
        jax.debug.print("y={}", y)
        return y * 2

    assert jax.grad(h)(2.0) == 8.0
    assert jax.jit(jax.grad(h))(2.0) == 8.0
    jax.jvp(h, (2.0,), (1.0,))
    _, pullback = jax.vjp(h, 2.0)
    pullback(1.0)
    _, f_jvp = jax.linearize(h, 2.0)
    f_jvp(1.0)
    jax.value_and_grad(h)(2.0)
    assert lines(capsys) == ["y=4.0"] * 6
    jax.jacrev(h)(jnp.arange(2.0))
    jax.jacfwd(h)(jnp.arange(2.0))
    jax.vmap(jax.grad(h))(jnp.arange(2.0))
    assert lines(capsys) == ["y=[0. 1.]", "y=[0. 1.]", "y=0.0", "y=1.0"]


def test_a_print_in_a_differentiated_loop_prints_each_forward_trip(capsys):
    def g(x):
        def body(i, c):
            jax.debug.print("i={} c={}", i, c)
            return c * 2.0

        return jax.lax.fori_loop(0, 3, body, x)

    assert jax.grad(g)(1.0) == 8.0
    assert jax.jit(jax.grad(g))(1.0) == 8.0
    assert lines(capsys) == ["i=0 c=1.0", "i=1 c=2.0", "i=2 c=4.0"] * 2


def test_a_custom_jvp_function_prints_once_under_grad(capsys):
    @jax.custom_jvp
    def c(x):
        jax.debug.print("c {}", x)
        return x * 3

    c.defjvp(lambda p, t: (c(p[0]), t[0] * 3))
    assert jax.grad(c)(2.0) == 3.0
    assert jax.jit(jax.grad(c))(2.0) == 3.0
    assert lines(capsys) == ["c 2.0", "c 2.0"]


def test_eager_control_flow_prints_as_the_program_would(capsys):
    """Eager ``lax`` control flow runs a cond's untaken branch for its types, and a loop's first trip again when its
    weak initial carry takes the body's type: neither prints."""
    jax.lax.cond(True, lambda: jax.debug.print("a"), lambda: jax.debug.print("b"))
    jax.lax.cond(False, lambda: jax.debug.print("a"), lambda: jax.debug.print("b"))
    out = jax.lax.while_loop(lambda c: (jax.debug.print("cond {}", c), c < 2)[1],
                             lambda c: (jax.debug.print("body {}", c), c + jnp.float32(1))[1], 0.0)
    assert out == 2.0
    jax.lax.scan(lambda c, x: (jax.debug.print("scan {} {}", c, x), (c + x, c))[1], 0.0, jnp.arange(3.0))
    assert lines(capsys) == ["a", "b", "cond 0.0", "body 0.0", "cond 1.0", "body 1.0", "cond 2.0", "scan 0.0 0.0",
                             "scan 0.0 1.0", "scan 1.0 2.0"]


def test_pmap_prints_on_each_device(capsys):
    np.testing.assert_array_equal(jax.pmap(lambda x: (jax.debug.print("p {}", x), x * 2)[1])(jnp.arange(1.0)), [0.0])
    assert lines(capsys) == ["p 0.0"]


# -- callback ----------------------------------------------------------------------------------------------------------
def test_callback_gets_arrays_of_the_values(native):
    seen = []

    def record(a, b, *, c):
        seen.append((a, b, c))

    def f(x):
        jax.debug.callback(record, x, 4, c={"s": "static", "v": x * 2}, ordered=True)
        jax.debug.callback(ordered=True)(record, x, 5.0, c=None)
        return x

    jax.jit(f)(jnp.arange(2))
    jax.debug.callback(record, jnp.arange(2), 3.0, c=None)
    (a, b, c), (a2, b2, c2), (a3, b3, c3) = seen
    assert isinstance(a, jax.Array) and a.dtype == np.int32 and a.tolist() == [0, 1]
    assert repr(b) == "Array(4, dtype=int32)"  # (a Python int: weakly typed only eager, as in JAX)
    assert c["s"] == "static" and c["v"].tolist() == [0, 2]
    assert repr(b2) == "Array(5., dtype=float32)" and c2 is None
    assert a3.tolist() == [0, 1] and repr(b3) == "Array(3., dtype=float32, weak_type=True)" and c3 is None
    with pytest.raises(TypeError, match="first argument to jax.debug.callback must be callable"):
        jax.debug.callback(3, 1)
    assert jax.debug.callback(lambda x: 5, 1.0) is None


def test_a_callback_may_keep_the_arrays_it_gets(native):
    """The arrays are copies: native code reuses its buffers once the call returns."""
    kept = []

    def f(x):
        jax.debug.callback(kept.append, x + 1)
        return x * 3

    jf = jax.jit(f)
    for k in range(3):
        jf(jnp.full(4, float(k)))
    assert [a.tolist() for a in kept] == [[1.0] * 4, [2.0] * 4, [3.0] * 4]


def test_equal_functions_keep_their_own_callbacks():
    """Two jitted functions of equal IR share their machine code; each still calls its own callback, and freeing one
    leaves the other working (the host callback was once the last compiled one's, and freed with it)."""
    def make(log):
        def cb(v):
            log.append(float(v))

        return jax.jit(lambda x: (jax.debug.callback(cb, x), x * 2)[1])

    a_log, b_log = [], []
    a, b = make(a_log), make(b_log)
    a(1.0)
    b(2.0)
    del b
    gc.collect()
    a(3.0)
    assert a_log == [1.0, 3.0] and b_log == [2.0]


# -- emitted Python ----------------------------------------------------------------------------------------------------
def test_emitted_python_prints_as_the_function_does(capsys):
    def f(x):
        jax.debug.print("x={} s={s}", x, s=x.sum())
        y = x
        while y.sum() < 10:
            jax.debug.print("y={}", y, ordered=True)
            y = y * 2
        return y

    source = emit_module(jax.jit(f).lower(jnp.ones(2)).compile().ir)
    assert "from srcjax import debug" in source
    assert "debug.print('x={} s={s}', x, s=" in source and "debug.print('y={}', y, ordered=True)" in source
    namespace = {}
    exec(compile(source, "<emitted>", "exec"), namespace)
    np.testing.assert_array_equal(namespace["f"](jnp.ones(2)), [8.0, 8.0])
    assert lines(capsys) == ["x=[1. 1.] s=2.0", "y=[1. 1.]", "y=[2. 2.]", "y=[4. 4.]"]


def test_a_callback_of_the_users_own_is_not_emitted():
    fn = jax.jit(lambda x: (jax.debug.callback(print, x), x)[1]).lower(1.0).compile().ir
    with pytest.raises(ValueError, match="cannot emit a 'debug_callback' op as Python"):
        emit_module(fn)


# -- breakpoint --------------------------------------------------------------------------------------------------------
def _inner(z):
    w = z + 1
    jax.debug.breakpoint()
    return w


def _outer(x):
    y = x * 2
    return _inner(y)


@pytest.mark.parametrize("jit", [False, True])
def test_breakpoint_enters_jdb_with_the_frames_around_it(capsys, monkeypatch, jit):
    """The text debugger reads its commands from stdin (JAX's ``jdb``); under jit the traced locals hold the values
    of the run."""
    monkeypatch.setattr("sys.stdin", io.StringIO("p w\np z\nbt\nu\np y\nd\nq_not_a_name\nc\n"))
    out = (jax.jit(_outer) if jit else _outer)(jnp.arange(3.0))
    np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])
    text = capsys.readouterr().out
    assert text.startswith("Entering jdb:\n(jdb) Array([1., 3., 5.], dtype=float32)\n"
                           "(jdb) Array([0., 2., 4.], dtype=float32)\n(jdb) Traceback:\n")
    assert "    return _inner(y)\n" in text and "    jax.debug.breakpoint()\n" in text
    assert "(jdb) > " + __file__ + "(" in text and "->      return _inner(y)\n" in text
    assert "*** NameError: name 'q_not_a_name' is not defined\n" in text


def test_breakpoint_calls_the_chosen_debugger(monkeypatch):
    stops = []
    monkeypatch.setitem(debugger._debuggers, "fake", (10, lambda frames, thread_id, **kw: stops.append((frames, kw))))

    def f(x):
        y = jnp.sin(x) * 0 + x
        n = 3
        jax.debug.breakpoint(num_frames=1, extra="kw")
        return y * n

    assert jax.jit(f)(2.0) == 6.0
    assert f(1.0) == 3.0
    (frames, kw), (eager_frames, _) = stops
    assert kw == {"extra": "kw"} and len(frames) == 1
    assert frames[0].locals["n"] == 3 and float(frames[0].locals["y"]) == 2.0 and float(frames[0].locals["x"]) == 2.0
    assert frames[0].filename == __file__ and frames[0].source[frames[0].offset].strip() == \
        'jax.debug.breakpoint(num_frames=1, extra="kw")'
    assert float(eager_frames[0].locals["y"]) == 1.0
    with pytest.raises(ValueError, match="mutually exclusive"):
        jax.debug.breakpoint(ordered=True, token=1)
