"""Hand-written functions of one array for the composition tests: smooth math, data-dependent ``if`` and
``while``, a matrix product, a scalar, and a lambda. ``jnp`` is NumPy itself when the reference run loads this
file (as in tests/corpus/programs.py); ``BASES`` maps each name to (input shape, output shape)."""

try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
except NameError:
    import srcjax.numpy as jnp


def polynomial(x):
    return x * x * x - 0.5 * x + jnp.sum(x) * x


def control(x):
    if jnp.sum(x) > 0.0:
        y = jnp.sin(x) + 0.5
    else:
        y = jnp.cos(x) * 2.0
    while jnp.max(jnp.abs(y)) > 0.5:  # halves until small: ends, and is smooth between the jumps
        y = y * 0.5
    return y * jnp.tanh(x)


def matrix(x):
    h = jnp.tanh(x @ x.T + 0.5)
    return jnp.sum(h, axis=0) * x[:, 0]


def scalar(x):
    return jnp.sin(x) * jnp.exp(-x * x) + jnp.log(x * x + 1.0)


total = lambda b: jnp.sum(b * b)  # noqa: E731 - a lambda on purpose: the front end finds its source

BASES = {
    "polynomial": ((3,), (3,)),
    "control": ((2,), (2,)),
    "matrix": ((2, 2), (2,)),
    "scalar": ((), ()),
    "total": ((3,), ()),
}
