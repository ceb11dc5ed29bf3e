"""Natively compiled control flow (codegen/llvm/control.py): ``for``, ``while`` and ``cond`` ops agree with the
IR interpreter, stay loops (compile time does not grow with the trip count), and unsupported regions fall back."""

import time

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.transpiler.interpret import eval_function

RNG = np.random.default_rng(1)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _compiled(fn, *args):
    compiled = srcjax.jit(fn).lower(*args).compile()
    assert compiled.native is not None, compiled.native_error
    return compiled


def _check(fn, *args):
    compiled = _compiled(fn, *args)
    got = compiled.native(*args)
    want = eval_function(compiled.ir, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)
    return got


def fori_dynamic(x, n):  # trip count from an argument
    return lax.fori_loop(0, n, lambda i, c: c * 0.5 + jnp.sin(x) * i, x)


def while_until(x):  # trip count from the data
    i = 0
    while jnp.sum(x) < 100.0:
        x = x * 2.0 + 1.0
        i = i + 1
    return x, i


def nested(x, n):  # the inner trip count depends on the outer iteration
    def outer(i, c):
        return lax.fori_loop(0, i + 1, lambda j, d: d + jnp.cos(d) * j, c) * 0.9

    return lax.fori_loop(0, n, outer, x)


def matvec_power(a, v, n):  # carried arrays, a matrix product in the body
    def body(i, carry):
        w, norms = carry
        w = a @ w
        norm = jnp.sqrt(jnp.sum(w * w))
        return w / norm, norms + jnp.where(jnp.arange(8) == i, norm, 0.0)

    return lax.fori_loop(0, n, body, (v, jnp.zeros(8, jnp.float32)))


def fibonacci_swap(n):  # yields swap carried values: (a, b) -> (b, a + b)
    return lax.fori_loop(0, n, lambda i, c: (c[1], c[0] + c[1]), (jnp.int32(0), jnp.int32(1)))


def cond_in_loop(x, n):
    def body(i, c):
        return lax.cond(jnp.sum(c) > 0, lambda: c - 1.0 * i, lambda: c * -2.0 + 0.5)

    return lax.fori_loop(0, n, body, x)


def python_if_in_loop(x):
    for i in range(6):
        if jnp.max(x) > 3.0:
            x = x - jnp.mean(x)
        else:
            x = x * 1.5 + i
    return x


def switch_index(k, x):  # an integer index is clamped to the branches
    return lax.switch(k, [lambda y: y + 1.0, lambda y: y * y, lambda y: -y], x)


def while_loop_closure(x, limit):  # the condition reads a value of the enclosing block
    return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] + 1, c[1] * 1.1 + x), (0, x))


def grad_of_fori(x):  # the backward loop reads residuals stored by the forward one
    return srcjax.grad(lambda y: jnp.sum(lax.fori_loop(0, 5, lambda i, c: jnp.sin(c) * 1.1, y)))(x)


def grad_of_python_loop(x):
    def f(y):
        for _ in range(4):
            y = jnp.tanh(y) * y
        return jnp.sum(y)

    return srcjax.grad(f)(x)


def long_grad(x):  # residuals of 200 iterations, stored in place
    def f(y):
        for _ in range(200):
            y = jnp.sin(y) * 1.01
        return jnp.sum(y)

    return srcjax.grad(f)(x)


def slices_at(x, i, j):  # run-time start indices, clamped into range
    window = lax.dynamic_slice(x, (i, j), (2, 3))
    return window, lax.dynamic_update_slice(x, window * -1.0, (j, i))


def branch_passthrough(flag, x, y):  # branches yield an enclosing value, a literal, a fresh value
    a, b = lax.cond(flag, lambda: (x, jnp.float32(2.5)), lambda: (y * 2.0, jnp.sum(x)))
    return a, b


def python_if(x):
    if jnp.sum(x) > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def while_in_for(x, n):  # an inner while whose trip count changes with the outer iteration
    def outer(i, c):
        _, c = lax.while_loop(lambda s: s[0] < i, lambda s: (s[0] + 1, s[1] + 0.5 * s[1]), (0, c))
        return c * 0.5

    return lax.fori_loop(0, n, outer, x)


def uint_switch(k, x):
    return lax.switch(k, [lambda y: y - 1, lambda y: y * 3, lambda y: y // 2], x)


def scan_cumsum(xs):
    return lax.scan(lambda c, x: (c + x, c * x), jnp.float32(0.0), xs)


def scan_rows(h, xs):  # carried vector, 2-d slices, reversed
    def step(c, x):
        c = jnp.tanh(x @ c + c)
        return c, (c * 2.0, jnp.sum(x))

    return lax.scan(step, h, xs, reverse=True)


def grad_of_dynamic_fori(x, n):  # the forward loop pushes residuals on a stack, the backward loop reads them
    return srcjax.grad(lambda y: jnp.sum(lax.fori_loop(0, n, lambda i, c: jnp.sin(c), y)))(x)


def grad_of_while(x):  # trip count from the data; residuals on a stack
    def f(y):
        while jnp.sum(y * y) < 50.0:
            y = y * 1.5 + jnp.sin(y)
        return jnp.sum(y)

    return srcjax.grad(f)(x)


def batched_grad_of_while(xs):  # vmap: each example runs its own trip count, read back per lane
    def f(y):
        while jnp.sum(y * y) < 50.0:
            y = y * 1.5 + jnp.sin(y)
        return jnp.sum(y)

    return srcjax.vmap(srcjax.grad(f))(xs)


def carried_in_place(w, u, x):  # carries updated by maps reading their old value where they write: in place
    def body(i, c):
        a, b, k = c
        return a + jnp.outer(x[i], u), b * 0.5 + a.sum(), k + 1
    return lax.fori_loop(0, x.shape[0], body, (w, jnp.float32(0), 0))


def carried_read_after(w, x):  # the old carry is read after the update, transposed, or yielded elsewhere
    def body(i, c):
        a, b = c
        new = a * 0.5 + x[i]
        return new + a.T, a

    def scanned(c, xi):
        return c + jnp.outer(xi, xi) + c[::-1], c.sum()

    return lax.fori_loop(0, x.shape[0], body, (w, w)), lax.scan(scanned, w, x)


def carried_in_while(w, x):
    def cond(c):
        return c[1] < x.shape[0]

    def body(c):
        a, i = c
        return a * 0.9 + jnp.outer(x[i], x[i]), i + 1

    return lax.while_loop(cond, body, (w, 0))


CASES = [
    (fori_dynamic, lambda: (RNG.standard_normal(5).astype(np.float32), np.int32(7))),
    (fori_dynamic, lambda: (RNG.standard_normal(5).astype(np.float32), np.int32(0))),
    (fori_dynamic, lambda: (RNG.standard_normal(5).astype(np.float32), np.int32(-3))),
    (while_until, lambda: (np.arange(3, dtype=np.float32),)),
    (while_until, lambda: (np.full(3, 50.0, np.float32),)),
    (nested, lambda: (RNG.standard_normal((2, 3)).astype(np.float32), np.int32(4))),
    (matvec_power, lambda: (RNG.standard_normal((8, 8)).astype(np.float32), np.ones(8, np.float32), np.int32(8))),
    (fibonacci_swap, lambda: (np.int32(20),)),
    (cond_in_loop, lambda: (RNG.standard_normal(4).astype(np.float32), np.int32(9))),
    (python_if_in_loop, lambda: (RNG.standard_normal(4).astype(np.float32),)),
    (switch_index, lambda: (np.int32(1), RNG.standard_normal(3).astype(np.float32))),
    (switch_index, lambda: (np.int32(-4), RNG.standard_normal(3).astype(np.float32))),
    (switch_index, lambda: (np.int32(9), RNG.standard_normal(3).astype(np.float32))),
    (grad_of_fori, lambda: (RNG.standard_normal(3).astype(np.float32),)),
    (long_grad, lambda: (RNG.standard_normal(16).astype(np.float32),)),
    (grad_of_python_loop, lambda: (RNG.standard_normal((2, 2)).astype(np.float32),)),
    (slices_at, lambda: (RNG.standard_normal((4, 5)).astype(np.float32), np.int32(1), np.int32(2))),
    (slices_at, lambda: (RNG.standard_normal((4, 5)).astype(np.float32), np.int32(-2), np.int32(7))),
    (branch_passthrough, lambda: (np.bool_(True), _f32(3), _f32(3))),
    (branch_passthrough, lambda: (np.bool_(False), _f32(3), _f32(3))),
    (python_if, lambda: (_f32(2, 2),)),
    (python_if, lambda: (-np.abs(_f32(2, 2)),)),
    (while_in_for, lambda: (_f32(3), np.int32(5))),
    (uint_switch, lambda: (np.uint8(1), np.arange(6, dtype=np.int32))),
    (uint_switch, lambda: (np.uint8(200), np.arange(6, dtype=np.int32))),
    (scan_cumsum, lambda: (_f32(6),)),
    (scan_cumsum, lambda: (np.zeros(0, np.float32),)),
    (scan_rows, lambda: (_f32(3), _f32(4, 3, 3))),
    (grad_of_dynamic_fori, lambda: (_f32(4), np.int32(20))),
    (grad_of_while, lambda: (np.float32([0.3, -0.2, 0.1]),)),
    (batched_grad_of_while, lambda: (np.float32([[0.3, -0.2, 0.1], [2.0, 1.0, 3.0], [0.01, 0.02, 0.0]]),)),
    (while_loop_closure, lambda: (RNG.standard_normal(()).astype(np.float32), np.int32(5))),
    (carried_in_place, lambda: (_f32(3, 4), _f32(4), _f32(6, 3))),
    (carried_read_after, lambda: (_f32(3, 3), _f32(5, 3))),
    (carried_in_while, lambda: (_f32(3, 3), _f32(4, 3))),
]


@pytest.mark.parametrize("fn,make", CASES, ids=[f"{fn.__name__}{i}" for i, (fn, _) in enumerate(CASES)])
def test_matches_interpreter(fn, make):
    _check(fn, *make())


def test_known_values():
    assert int(_check(fibonacci_swap, np.int32(20))[0]) == 6765
    x, i = _check(while_until, np.arange(3, dtype=np.float32))
    assert int(i) == 5 and x.tolist() == [31.0, 63.0, 95.0]
    assert _check(switch_index, np.int32(2), np.float32([1.0, -2.0, 3.0]))[0].tolist() == [-1.0, 2.0, -3.0]


def test_a_carry_updated_where_it_is_read_is_written_in_place():
    """The trip's end copies nothing for a carry a map rewrites element by element (reverse mode's weight
    gradient, accumulated over a loop), and the outer product in it is computed where the map needs it."""
    w, u, x = _f32(64, 48), _f32(48), _f32(6, 64)  # (large enough that a copy stays a call of memmove)
    f = srcjax.jit(carried_in_place)
    llvm_ir = f.lower(w, u, x).compile().native.llvm_ir
    assert "gemm" not in llvm_ir
    body = llvm_ir[llvm_ir.index("\nfor.body:"):]
    body = body[:body.index("\nfor.exit")]
    assert "memmove" in body and f"i64 {w.nbytes}, i1" not in body  # (x[i] is copied out; w is not copied back)
    a, b, k = f(w, u, x)
    np.testing.assert_allclose(a, w + sum(np.outer(r, u) for r in x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    assert int(k) == 6


def test_slices_known_values():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    # -1 counts from the end (4 along axis 1, 3 along axis 0), then starts clamp: (2, 2), then (2, 2)
    window, updated = _check(slices_at, x, np.int32(9), np.int32(-1))
    np.testing.assert_array_equal(window, x[2:4, 2:5])
    want = x.copy()
    want[2:4, 2:5] = -x[2:4, 2:5]
    np.testing.assert_array_equal(updated, want)


def test_jit_call_runs_natively():
    out = srcjax.jit(fori_dynamic)(np.zeros(3, np.float32), 4)
    np.testing.assert_allclose(np.asarray(out), np.zeros(3))


def _python_loop(trips):
    def f(x):
        for _ in range(trips):
            x = x * 0.5 + 1.0
        return x

    return f


def test_long_python_loop_compiles_as_a_loop(monkeypatch):
    monkeypatch.setenv("SRCJAX_CACHE", "0")  # time the compiler, not the disk cache
    x = np.zeros(4, np.float32)
    times = {}
    for trips in (10, 10_000):
        start = time.perf_counter()
        compiled = _compiled(_python_loop(trips), x)
        times[trips] = time.perf_counter() - start
        np.testing.assert_allclose(compiled.native(x)[0], np.full(4, 2.0 - 2.0 ** (1 - trips)), rtol=1e-6)
        assert compiled.as_text().count("\n") < 30  # a loop, not 10,000 unrolled copies
    assert times[10_000] < 3 * times[10] + 0.5, times


def test_scan_known_values():
    carry, ys = _check(scan_cumsum, np.float32([1.0, 2.0, 3.0]))
    assert float(carry) == 6.0 and ys.tolist() == [0.0, 2.0, 9.0]  # ys[i] = (sum of xs before i) * xs[i]


def test_stack_gradient_known_values():
    # d/dx of sin applied n times: the product of cos at each step (the stack holds n residuals)
    x = np.float32([0.5, 1.0, -2.0])
    for n in (0, 1, 40):
        (got,) = _check(grad_of_dynamic_fori, x, np.int32(n))
        want, y = np.ones(3), x.astype(np.float64)
        for _ in range(n):
            want, y = want * np.cos(y), np.sin(y)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
