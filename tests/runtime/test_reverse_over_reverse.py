"""Reverse mode over reverse mode through loops whose trip count is only known at run time (issue 17).

The first derivative of a data-dependent ``while`` saves its residuals on stacks; differentiating it again in
reverse mode needs the cotangents of those stacks (``stack_add``, ``stack_get[fill]`` in
``transpiler/primitives/control.py``). Each case is checked against finite differences of the first
derivative and against forward over reverse, eagerly, under ``jit``, batched with per-example trip counts
and at third order.
"""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.runtime.api import NativeFallbackWarning


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


def _sum_loop(x):
    y = x
    while jnp.sum(y) < 10.0:
        y = y * 1.5 + jnp.sin(y)
    return jnp.sum(y**3) + jnp.prod(x)


def _lax_loop(x):
    def body(c):
        y, s = c
        return y * 1.5 + jnp.sin(y), s + jnp.sum(y * y)

    y, s = lax.while_loop(lambda c: jnp.sum(c[0]) < 10.0, body, (x, 0.0))
    return jnp.sum(y**3) + s


def _loop_in_branch(x):
    if x[0] > 0.4:
        y = x
        while jnp.sum(y) < 10.0:
            y = y * 1.5 + jnp.sin(y)
    else:
        y = x * x
    return jnp.sum(y**3)


def _branch_in_loop(x):
    y = x
    while jnp.sum(y) < 10.0:
        if y[0] > 1.0:
            y = y * 1.2 + 0.1 * jnp.cos(y)
        else:
            y = y * 2.0
    return jnp.sum(jnp.tanh(y)) * jnp.sum(y)


def _break_loop(x):
    y = x
    while True:
        y = y * 1.3 + x * jnp.sin(y)
        if jnp.max(y) > 5.0:
            break
    return jnp.sum(y**2 * x)


def _loop_in_loop(x):
    z = x
    while jnp.sum(z) < 8.0:
        y = z
        while jnp.sum(y) < 5.0:
            y = y * 1.5 + 0.1
        z = z + 0.1 * jnp.sin(y) + 0.3
    return jnp.sum(z**2)


def _loop_in_fori(x, n):
    def body(i, c):
        y = c
        while jnp.sum(y) < 5.0:
            y = y * 1.5 + 0.1
        return 0.1 * jnp.sin(y) + c

    return jnp.sum(lax.fori_loop(0, n, body, x) ** 2)


X = np.array([0.41, 0.33, 0.77])  # (away from the points where a trip count or a branch changes)


def _fd_hessian(f, x, h=1e-5):
    g = srcjax.grad(f)
    columns = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        columns.append((np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * h))
    return np.stack(columns, 1)


@pytest.mark.parametrize("f", [_sum_loop, _lax_loop, _loop_in_branch, _branch_in_loop, _break_loop])
def test_hessian_through_a_data_dependent_while(f):
    want = _fd_hessian(f, X)
    np.testing.assert_allclose(srcjax.jacrev(srcjax.grad(f))(X), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(srcjax.jacrev(srcjax.jacrev(f))(X), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(srcjax.hessian(f)(X), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [_sum_loop, _branch_in_loop])
def test_compiled_hessian_through_a_while(f):
    np.testing.assert_allclose(srcjax.jit(srcjax.jacrev(srcjax.grad(f)))(X), _fd_hessian(f, X), rtol=1e-5, atol=1e-6)


def test_nested_loops_whose_inner_loop_keeps_only_its_trip_count():
    x = np.array([0.3, 0.4])
    want = srcjax.jacfwd(srcjax.grad(_loop_in_loop))(x)
    np.testing.assert_allclose(srcjax.jacrev(srcjax.grad(_loop_in_loop))(x), want, rtol=1e-10)
    np.testing.assert_allclose(srcjax.jit(srcjax.jacrev(srcjax.grad(_loop_in_loop)))(x), want, rtol=1e-10)
    want = srcjax.jacfwd(srcjax.grad(_loop_in_fori))(x, 7)
    np.testing.assert_allclose(srcjax.jit(srcjax.jacrev(srcjax.grad(_loop_in_fori)))(x, 7), want, rtol=1e-10)


def _power_loop(x):  # scalar; the trip count depends on x
    y = x
    while y < 10.0:
        y = y * (1.0 + x) + jnp.sin(y)
    return y * y


XS = np.array([0.3, 0.5, 0.9, 1.7])  # trip counts 5, 4, 3, 2


def _fd(f, x, h=1e-5):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


def test_per_example_trip_counts_batched_second_and_third_order():
    d1 = srcjax.grad(_power_loop)
    d2, d3 = srcjax.grad(d1), srcjax.grad(srcjax.grad(d1))
    want2 = np.array([_fd(d1, x) for x in XS])
    want3 = np.array([_fd(d2, x) for x in XS])
    np.testing.assert_allclose([d2(x) for x in XS], want2, rtol=1e-5)
    np.testing.assert_allclose(srcjax.vmap(d2)(XS), want2, rtol=1e-5)
    np.testing.assert_allclose(srcjax.jit(srcjax.vmap(d2))(XS), want2, rtol=1e-5)
    np.testing.assert_allclose([d3(x) for x in XS], want3, rtol=1e-4)
    np.testing.assert_allclose(srcjax.jit(srcjax.vmap(d3))(XS), want3, rtol=1e-4)
    np.testing.assert_allclose([srcjax.jvp(d2, (x,), (1.0,))[1] for x in XS], want3, rtol=1e-4)


def test_batched_hessian_by_reverse_over_reverse():
    xs = np.array([[0.5, 0.3, 0.7], [0.1, 0.2, 0.3], [1.0, 2.0, 0.5]])  # different trip counts
    want = np.stack([srcjax.jacfwd(srcjax.grad(_sum_loop))(x) for x in xs])
    np.testing.assert_allclose(srcjax.vmap(srcjax.jacrev(srcjax.grad(_sum_loop)))(xs), want, rtol=1e-10)
    np.testing.assert_allclose(srcjax.jit(srcjax.vmap(srcjax.jacrev(srcjax.grad(_sum_loop))))(xs), want, rtol=1e-10)


def test_emitted_python_of_reverse_over_reverse_matches_the_interpreter():
    from srcjax.transpiler.emit_python import emit_module
    from srcjax.transpiler.frontend.calls import trace_function
    from srcjax.transpiler.interpret import eval_function
    from srcjax.transpiler.transforms.vjp import vjp_function
    from srcjax.transpiler.types import TensorType

    def first(x):
        return srcjax.grad(_sum_loop)(x)[0]

    traced, _ = trace_function(first, [TensorType(np.dtype(np.float64), (3,))])
    second = vjp_function(traced, seed_ones=True)
    source = emit_module(second)
    assert "stacks.stack_add(" in source and "stacks.stack_read(" in source
    namespace: dict = {}
    exec(compile(source, "<emitted>", "exec"), namespace)
    emitted = namespace[second.name](X)
    interpreted = eval_function(second, X)
    for a, b in zip(emitted, interpreted):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_allclose(emitted[1], _fd_hessian(_sum_loop, X)[0], rtol=1e-5)


def _residuals_in_nested_loop(x):
    def body(c, t):
        while c < 2.0 * t:
            c = c * 1.3 + jnp.sin(c) * 0.1  # (sin: the inner loop keeps residuals, a stack per outer step)
        return c * 0.5, c * t

    c, ys = lax.scan(body, x, jnp.array([1.0, 2.0, 3.0]))
    return c + (ys**2).sum()


def test_reverse_over_reverse_through_a_stack_of_stacks():
    """A while that keeps residuals, inside another loop: its stacks go on a stack of stacks, and their
    cotangents on a cotangent stack of cotangent stacks (run by the interpreter when compiled: native code has
    no stacks of cotangent stacks yet)."""
    h = 1e-5
    d1 = srcjax.grad(_residuals_in_nested_loop)
    want = (float(d1(0.9 + h)) - float(d1(0.9 - h))) / (2 * h)
    assert float(srcjax.jacfwd(d1)(0.9)) == pytest.approx(want, rel=1e-5)
    assert float(srcjax.jacrev(d1)(0.9)) == pytest.approx(want, rel=1e-5)
    with pytest.warns(NativeFallbackWarning):
        assert float(srcjax.jit(srcjax.jacrev(d1))(0.9)) == pytest.approx(want, rel=1e-5)
    xs = np.array([0.9, 0.5])
    np.testing.assert_allclose(srcjax.vmap(srcjax.jacrev(d1))(xs), [srcjax.jacfwd(d1)(x) for x in xs], rtol=1e-10)
    third = srcjax.grad(srcjax.grad(d1))(0.9)
    assert float(third) == pytest.approx(float(srcjax.jacfwd(srcjax.jacfwd(d1))(0.9)), rel=1e-8)


@pytest.mark.parametrize("policy", ["everything_saveable", "nothing_saveable"])
def test_checkpointed_derivative_of_a_while_keeps_no_stack(policy):
    """Reverse mode of a checkpointed first derivative of a ``while``: the backward pass's second forward sweep
    fills stacks of its own. A policy that saved every op's result had saved the stacks themselves, which the
    second sweep pushed onto again, and the derivative came out 0."""
    keep = getattr(srcjax.checkpoint_policies, policy)
    d1 = srcjax.checkpoint(srcjax.grad(_sum_loop), policy=keep)
    want = _fd_hessian(_sum_loop, X)
    np.testing.assert_allclose(srcjax.jacrev(d1)(X), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(srcjax.jit(srcjax.jacrev(d1))(X), want, rtol=1e-5, atol=1e-6)
    scalar = srcjax.checkpoint(srcjax.grad(_power_loop), policy=keep)
    assert float(srcjax.grad(scalar)(0.5)) == pytest.approx(_fd(srcjax.grad(_power_loop), 0.5), rel=1e-5)
