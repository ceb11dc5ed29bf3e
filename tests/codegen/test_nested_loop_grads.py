"""Reverse mode of traced ``while`` loops nested in other loops, compiled natively (codegen/llvm/control.py).

Each trip of the outer loop runs the inner ``while`` afresh, and reverse mode saves the inner loop's stack of
residuals on a stack per outer trip (a stack of stacks). The inner ``stack_new`` runs once per outer trip and
its header is reused, so pushing it onto the outer stack must move it (the outer stack once held the same
header every trip: every outer trip's backward pass read the last trip's residuals, a silently wrong gradient;
tests/fuzz/regressions/jit_grad_while_in_for*.py). Native ``jit(grad(f))`` must agree with the IR interpreter and
with central differences in float64, under ``vmap`` and ``jacfwd`` too, and in a loop of gradient steps that
makes the stacks again every step.
"""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.codegen.llvm.compile import unsupported_reason
from srcjax.runtime.api import NativeFallbackWarning
from srcjax.runtime.config import config
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import Block, Function, Op, Value
from srcjax.transpiler.primitives.control import for_p, stack_new_p, stack_push_p, stack_size_p
from srcjax.transpiler.types import StackType, TensorType


# -- the programs -------------------------------------------------------------------------------------------------
def while_in_for(x):  # tests/fuzz/regressions/jit_grad_while_in_for.py
    for _ in range(2):
        k = 0
        while k < 2 and jnp.sum(x) < 1.0:
            k = k + 1
            x = jnp.sum(x) * x
    return jnp.mean(x)


def while_in_for_reads_input(x):  # tests/fuzz/regressions/jit_grad_while_in_for_2.py, with a use of x in the body
    v = x
    for _ in range(3):
        k = 0
        while k < 3 and jnp.min(x) < -0.2:
            k = k + 1
            v = jnp.sin(v) * x
    return jnp.sum(v)


def while_in_while(x):  # the inner trip count grows with the outer one
    j = 0
    while j < 3 and jnp.sum(x * x) < 40.0:
        j = j + 1
        k = 0
        while k < j + 1 and jnp.max(x) < 5.0:
            k = k + 1
            x = x * 1.3 + jnp.sin(x)
    return jnp.sum(x)


def while_in_for_in_for(x):  # a stack of stacks of stacks
    for i in range(2):
        for j in range(2):
            k = 0
            while k < i + j + 1 and jnp.sum(x) < 3.0:
                k = k + 1
                x = x + 0.3 * jnp.tanh(x)
    return jnp.sum(x * x)


def for_in_while(x):
    while jnp.sum(x * x) < 30.0:
        for _ in range(2):
            x = x * 1.2 + jnp.cos(x) * 0.1
    return jnp.sum(x * x)


def while_in_cond_in_for(x):  # one branch runs a while, the other saves an empty stack
    for _ in range(3):
        if jnp.sum(x) > 0.0:
            k = 0
            while k < 2 and jnp.max(x) < 4.0:
                k = k + 1
                x = x * 1.5
        else:
            x = jnp.sin(x) - 0.1
    return jnp.sum(x * x)


def while_in_fori(x, n):  # the outer trip count from an argument
    def body(i, c):
        k = 0
        while k < 2 and jnp.sum(c) < 2.0:
            k = k + 1
            c = c * 1.1 + 0.05 * jnp.sin(c)
        return c

    return jnp.sum(lax.fori_loop(0, n, body, x) ** 2)


def descend(x):  # gradient steps in a loop: the nested stacks are made again (and freed) every step
    def step(i, x):
        return x - 0.05 * srcjax.grad(while_in_for_in_for)(x)

    return lax.fori_loop(0, 6, step, x)


PROGRAMS = [while_in_for, while_in_for_reads_input, while_in_while, while_in_for_in_for, for_in_while,
            while_in_cond_in_for]
# inputs that make the inner loops run different numbers of trips in different outer trips (and stay clear of
# the conditions' thresholds, for the finite differences)
INPUTS = [
    np.array([0.4969818, -1.144367]),
    np.array([-0.5, 0.3, 0.1]),
    np.array([0.1, 0.25, -0.3]),
    np.array([-1.6727238, 0.10020524]),
]


# -- checks ------------------------------------------------------------------------------------------------------
@pytest.fixture
def x64():
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", saved)


def _native_and_interpreted(fn, *args):
    """(native results, the interpreter's) of ``fn`` (a function or a ``jit`` of one) at ``args``."""
    jitted = fn if hasattr(fn, "lower") else srcjax.jit(fn)
    compiled = jitted.lower(*args).compile()
    assert compiled.native is not None, compiled.native_error
    got = [np.asarray(g) for g in compiled.native(*args)]
    want = [np.asarray(w) for w in eval_function(compiled.ir, *args)]
    return got, want


def _assert_close(got, want, rtol, atol):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _differences(f, x, eps=1e-6):
    """Central differences of the scalar ``f`` at ``x`` (float64, run by the interpreter)."""
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        out.flat[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return out


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_matches_interpreter_and_differences(fn, x64):
    jitted = srcjax.jit(srcjax.grad(fn))  # (compiled once per input shape)
    for x in INPUTS:
        got, want = _native_and_interpreted(jitted, x)
        _assert_close(got, want, 1e-12, 1e-12)
        np.testing.assert_allclose(got[0], _differences(fn, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_float32_matches_interpreter(fn):
    jitted = srcjax.jit(srcjax.grad(fn))
    for x in INPUTS:
        got, want = _native_and_interpreted(jitted, x.astype(np.float32))
        _assert_close(got, want, 1e-5, 1e-6)


def test_regression_values():
    # the fuzzer's failure: native code gave [0.00015, 0.00015] (every outer trip read the last trip's stack)
    x = np.float32([0.4969818, -1.144367])
    (got,) = _native_and_interpreted(srcjax.grad(while_in_for), x)[0]
    np.testing.assert_allclose(got, np.asarray(srcjax.grad(while_in_for)(x)), rtol=1e-5)
    np.testing.assert_allclose(got, [-0.01176335, -0.01176335], rtol=1e-4)


def test_dynamic_outer_trip_count(x64):
    x = np.array([-0.5, 0.3, 0.1])
    jitted = srcjax.jit(srcjax.grad(while_in_fori))
    for n in (0, 1, 4):
        got, want = _native_and_interpreted(jitted, x, np.int32(n))
        _assert_close(got, want, 1e-12, 1e-12)
        np.testing.assert_allclose(got[0], _differences(lambda y, n=n: while_in_fori(y, n), x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [while_in_for, while_in_for_reads_input, while_in_for_in_for, for_in_while],
                         ids=lambda f: f.__name__)
def test_vmap_of_grad(fn, x64):
    xs = np.stack([INPUTS[1], INPUTS[2], -INPUTS[1]])
    got, want = _native_and_interpreted(srcjax.vmap(srcjax.grad(fn)), xs)
    _assert_close(got, want, 1e-12, 1e-12)
    np.testing.assert_allclose(got[0], np.stack([_differences(fn, x) for x in xs]), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [while_in_for_reads_input, while_in_while, while_in_for_in_for],
                         ids=lambda f: f.__name__)
def test_jacfwd_of_grad(fn, x64):
    x = INPUTS[1]
    got, want = _native_and_interpreted(srcjax.jacfwd(srcjax.grad(fn)), x)
    _assert_close(got, want, 1e-10, 1e-10)
    grad = srcjax.grad(fn)
    rows = [_differences(lambda y, i=i: np.asarray(grad(y))[i], x) for i in range(x.size)]
    np.testing.assert_allclose(got[0], np.stack(rows), rtol=1e-5, atol=1e-6)


def test_gradient_steps_in_a_loop(x64):
    x = np.array([-0.5, 0.3, 0.1])
    compiled = srcjax.jit(descend).lower(x).compile()
    assert compiled.native is not None, compiled.native_error
    want = np.asarray(eval_function(compiled.ir, x)[0])
    for _ in range(3):  # (the stacks are freed at exit: calls again give the same)
        np.testing.assert_allclose(compiled.native(x)[0], want, rtol=1e-12, atol=1e-12)
    for _ in range(6):
        x = x - 0.05 * _differences(while_in_for_in_for, x)
    np.testing.assert_allclose(want, x, rtol=1e-6, atol=1e-7)


def test_stack_carried_to_the_next_trip_is_not_compiled():
    # a stack made in a loop body and carried: the next trip's stack_new would empty the header the carried
    # value still reads, so it is left to the interpreter (the transforms do not make such loops)
    elem = TensorType(np.float32, (2,))
    x, n, k = Value(elem, "x"), Value(TensorType(np.int32, ())), Value(TensorType(np.int32, ()))
    start, carried, fresh, pushed = (Value(StackType(elem)) for _ in range(4))
    out, count, final = Value(StackType(elem)), Value(TensorType(np.int32, ())), Value(TensorType(np.int32, ()))
    body = Block([k, carried], [
        Op(stack_new_p, [], {"elem": elem}, [fresh]),
        Op(stack_size_p, [carried], {}, [count]),  # (read after this trip's stack_new)
        Op(stack_push_p, [fresh, x], {}, [pushed]),
    ], [pushed])
    fn = Function("carried", [x, n], Block([], [
        Op(stack_new_p, [], {"elem": elem}, [start]),
        Op(for_p, [n, start], {}, [out], regions=[body]),
        Op(stack_size_p, [out], {}, [final]),
    ], [final]))
    assert "carried to its next trip" in unsupported_reason(fn)


def loops_of_argument_lengths(x, n, m):  # both trip counts are arguments: per example under vmap
    s = x[0]
    for _ in range(n):
        for j in range(m):
            s = jnp.sin(s * x[1] + x[2] * j)
    return s


def test_vmap_of_grad_with_per_example_outer_trip_counts(x64):
    # each example's backward pass reads its own outer trip's inner stack (stack_get[lanes] of a stack of
    # stacks). It read rows of a reshaped entry instead: the gradients of examples were mixed, or the reshape
    # failed where the inner stacks' lengths differed
    from srcjax.transpile import transformed
    from srcjax.transpiler.emit_python import emit_module

    xs = np.array([[0.3, 0.7, 0.2], [0.5, -0.4, 0.9], [1.1, 0.2, -0.3]])
    mapped = srcjax.vmap(srcjax.grad(loops_of_argument_lengths))
    compiled = srcjax.jit(mapped)
    for k, (n, m) in enumerate((([2, 3, 1], [2, 2, 2]), ([2, 3, 1], [2, 1, 0]), ([0, 0, 0], [1, 2, 3]))):
        n, m = np.array(n, np.int32), np.array(m, np.int32)
        want = np.stack([_differences(lambda y, b=b, n=n, m=m: loops_of_argument_lengths(y, n[b], m[b]), xs[b])
                         for b in range(3)])
        np.testing.assert_allclose(np.asarray(mapped(xs, n, m)), want, rtol=1e-6, atol=1e-7)
        if k == 0:  # (per-example reads of a stack of stacks run in the interpreter, the first call says)
            with pytest.warns(NativeFallbackWarning, match="stack of stacks"):
                got = compiled(xs, n, m)
        else:
            got = compiled(xs, n, m)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7)
        ir = transformed(loops_of_argument_lengths, [TensorType(xs.dtype, xs.shape), TensorType(np.int32, (3,)),
                                                     TensorType(np.int32, (3,))], ["grad", "vmap"])
        namespace: dict = {}
        exec(compile(emit_module(ir), "<emitted>", "exec"), namespace)
        np.testing.assert_allclose(np.asarray(namespace[ir.name](xs, n, m)), want, rtol=1e-6, atol=1e-7)
