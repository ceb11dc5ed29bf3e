"""Programs with ``assert`` statements for tests/runtime/test_tracing_semantics.py. They live outside the test
module because pytest rewrites the ``assert`` statements of test modules, and srcjax reads a function's source
only where it is the code that runs."""

import srcjax.numpy as jnp


def check(x):
    assert jnp.allclose(x, x * 3 / 3)
    assert jnp.all(x >= 0), "negative input"
    return jnp.sum(x**2)


def mixed(x, y):
    if jnp.sum(x) > 0:
        assert x[0] > 0, "first"
        return jnp.sum(x * y)
    return jnp.sum(x) * 2.0


def early_return(x):
    if x < 0:
        return -x
    assert x >= 0
    return x


def scaled(x, y):
    assert y > 0  # (y is not mapped: JAX passes its value)
    return x * y


def positive(x):
    assert x > 0  # <- refused under jit
    return x
