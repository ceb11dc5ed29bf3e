"""Seed 000 (JAX quickstart): random numbers, matrix products, device_put, selu.

Run: python examples/seed_000_quickstart.py [--small]
Transpile: srcjax transpile examples/seed_000_quickstart.py:selu --args 'f32[1000]'
"""

import numpy as np
from _common import size, timeit

import srcjax as jax
import srcjax.numpy as jnp
from srcjax import device_put, random


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


def main():
    # Multiplying matrices
    key = random.PRNGKey(0)
    x = random.normal(key, (10,))
    print(x)  # [-0.3721109   0.26423115 -0.18252768 -0.7368197  -0.44030377 -0.1521442 ...]

    n = size(3000, 200)
    x = random.normal(key, (n, n), dtype=jnp.float32)
    timeit("jnp.dot(x, x.T)", lambda: jnp.dot(x, x.T).block_until_ready())

    # jnp functions accept NumPy arrays (converted on every call) ...
    x = np.random.normal(size=(n, n)).astype(np.float32)
    timeit("jnp.dot on a NumPy array", lambda: jnp.dot(x, x.T).block_until_ready())

    # ... or put them on the device once
    x = device_put(x)
    timeit("jnp.dot after device_put", lambda: jnp.dot(x, x.T).block_until_ready())

    # Using jit() to speed up functions
    x = random.normal(key, (size(1000000, 10000),))
    timeit("selu(x)", lambda: selu(x).block_until_ready())
    selu_jit = jax.jit(selu)
    timeit("selu_jit(x)", lambda: selu_jit(x).block_until_ready())
    print(jax.devices())


if __name__ == "__main__":
    main()
