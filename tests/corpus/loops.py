"""Programs for the loop-size and API tests."""

import srcjax.numpy as jnp


def run_10(x):
    for i in range(10):
        x = jnp.sin(x) + i
    return x


def run_10000(x):
    for i in range(10000):
        x = jnp.sin(x) + i
    return x


def annotated(x: "f32[3]", y: "f32[]"):
    return jnp.sum(x * y)


def clipped_sum(x, limit):
    total = 0.0
    for v in x:
        if v > limit:
            total = total + limit
        else:
            total = total + v
    return total
