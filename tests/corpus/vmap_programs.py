"""Programs for the vmap API tests (user code: read by the front end)."""

import srcjax.numpy as jnp
from srcjax import custom_jvp as srcjax_custom_jvp
from srcjax import custom_vjp as srcjax_custom_vjp
from srcjax import lax


def add(x, y):
    return x + y


def mul(a, b):
    return a * b


def affine(params, x):
    return jnp.dot(x, params["w"]) + params["b"]


def pair(x):
    return x * 2, jnp.float32(7.0)


def normalize(x):
    return x / lax.psum(x, "i")


def center(x):
    return x - lax.pmean(x, "i")


def scaled_by_max(x):
    return x / lax.pmax(x, "i")


def rank(x):
    return lax.axis_index("i")


def gather_all(x):
    return lax.all_gather(x, "i")


def branchy(x):
    if x < 0:
        return -x * 3.0
    elif x < 1:
        return x * x
    return jnp.sqrt(x)


def halvings(x):
    n = 0.0
    x = jnp.abs(x)
    while x > 1.0:
        x = x / 2.0
        n = n + 1.0
    return n


def smooth(x):
    y = jnp.sin(x)
    for i in range(3):
        y = y * jnp.cos(x + i)
    return y


def example_loss(w, d):
    return jnp.sum((jnp.tanh(w * d) - 0.1) ** 2)


def with_lax_while(x):
    return lax.while_loop(lambda v: v < 10.0, lambda v: v * 1.5, x)


def with_lax_cond(x):
    return lax.cond(x > 1.5, lambda v: v * 2.0, lambda v: v - 1.0, x)


def with_fori(x):
    return lax.fori_loop(0, 4, lambda i, v: v * 0.5 + i, x)


@srcjax_custom_jvp
def softplus(x):
    return jnp.log1p(jnp.exp(x))


softplus.defjvps(lambda t, ans, x: t * 2.0)  # a deliberately wrong rule: only its use is visible


@srcjax_custom_vjp
def clipped(x):
    return x * 3.0


clipped.defvjp(lambda x: (x * 3.0, x), lambda x, g: (g * 10.0,))
