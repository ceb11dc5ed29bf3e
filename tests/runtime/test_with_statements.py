"""``with`` inside compiled functions runs as Python runs it while the function is read, as under JAX's tracing:
``__enter__`` before the body, ``__exit__`` after it also on return, break and exceptions (an option's context
manager, a named scope, a lock); a manager may swallow the program's exception where catching it is allowed."""

import contextlib
import threading

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.transpiler.frontend import TranspileError

LOG = []


@contextlib.contextmanager
def logged(name):
    LOG.append(f"enter {name}")
    try:
        yield name.upper()
    finally:
        LOG.append(f"exit {name}")


def scoped(x):
    with srcjax.named_scope("layer1"), logged("a") as tag:
        y = jnp.tanh(x) * 2
        LOG.append(tag)
    return y + 1


def early_return(x, n):
    for i in range(n):
        with logged(f"trip{i}"):
            if i == 1:
                return x * i
            x = x + 1
    return x


def swallowed(x):
    table = {"a": 1.0}
    with contextlib.suppress(KeyError):
        x = x * table["missing"]
    return x * table["a"]


def precise(x):
    with srcjax.default_matmul_precision("highest"), threading.Lock():
        return x @ x


def not_a_manager(x):
    with x:
        return x


def test_managers_enter_and_exit_around_their_body():
    LOG.clear()
    x = np.ones(3, np.float32)
    np.testing.assert_allclose(np.asarray(srcjax.jit(scoped)(x)), np.tanh(x) * 2 + 1, rtol=1e-6)
    assert LOG == ["enter a", "A", "exit a"]
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda v: scoped(v).sum())(x)), 2 * (1 - np.tanh(x) ** 2),
                               rtol=1e-5)
    LOG.clear()
    assert float(srcjax.jit(early_return, static_argnums=1)(np.float32(2.0), 3)) == 3.0
    assert LOG == ["enter trip0", "exit trip0", "enter trip1", "exit trip1"]
    np.testing.assert_array_equal(np.asarray(srcjax.jit(swallowed)(np.float32(3.0))), 3.0)
    m = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(srcjax.jit(precise)(m)), m)
    assert srcjax.config.jax_default_matmul_precision is None


def test_an_error_in_the_body_still_exits_and_a_traced_value_is_no_manager():
    LOG.clear()

    def failing(x):
        with logged("f"):
            return x + jnp.ones(4)

    with pytest.raises(Exception, match="shapes"):
        srcjax.jit(failing)(np.ones(3, np.float32))
    assert LOG == ["enter f", "exit f"]
    with pytest.raises(TranspileError, match="a traced value is not a context manager"):
        srcjax.jit(not_a_manager)(np.ones(2, np.float32))


def test_named_call_named_scope_and_environment_info():
    double = srcjax.named_call(lambda v: v * 2, name="double")
    assert float(srcjax.jit(double)(np.float32(3.0))) == 6.0
    with pytest.raises(TypeError, match="named_scope name argument must be a string"):
        srcjax.named_scope(3)
    assert float(srcjax.named_scope("outer")(lambda v: v + 1)(1.0)) == 2.0
    info = srcjax.print_environment_info(return_string=True)
    assert "srcjax:" in info and "numpy:" in info and "devices:" in info


class Counting:
    def __init__(self):
        self.entered = self.exited = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        self.exited += 1
        return False


def test_the_programs_own_manager_in_a_loop_enters_on_every_trip():
    """JAX runs a Python loop's body once per trip, and with it a ``with`` statement's ``__enter__``/``__exit__``: a
    loop over a static range whose body enters the program's own manager runs unrolled (JAX 0.10.2: 40 entries of
    each, 80 log lines); srcjax's own managers, and side-effect-free ones, leave it compiled as a loop."""
    counter = Counting()

    def counted(x):
        for _ in range(40):
            with counter:
                x = x * 1.01
        return x

    def generated(x):
        for i in range(40):
            with logged(f"t{i % 2}"):
                x = jnp.sin(x)
        return x

    def quiet(x):
        for _ in range(40):
            with srcjax.named_scope("step"), contextlib.suppress(KeyError):
                x = x * 1.01
        return x

    np.testing.assert_allclose(srcjax.jit(counted)(np.float32(0.5)), 0.5 * 1.01 ** 40, rtol=1e-5)
    assert (counter.entered, counter.exited) == (40, 40)
    LOG.clear()
    want = np.float32(0.5)
    for _ in range(40):
        want = np.sin(want)
    np.testing.assert_allclose(srcjax.jit(generated)(np.float32(0.5)), want, rtol=1e-5)
    assert len(LOG) == 80 and LOG[:2] == ["enter t0", "exit t0"] and LOG[-1] == "exit t1"
    assert str(srcjax.make_jaxpr(quiet)(np.float32(0.5))).count("mul") == 1  # (one loop body, not 40 trips)
    assert str(srcjax.make_jaxpr(counted)(np.float32(0.5))).count("mul") == 40
    np.testing.assert_allclose(srcjax.jit(quiet)(np.float32(0.5)), 0.5 * 1.01 ** 40, rtol=1e-5)
