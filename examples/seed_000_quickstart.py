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

    # Taking derivatives with grad()
    x_small = jnp.arange(3.0)
    derivative_fn = jax.grad(sum_logistic)
    print(derivative_fn(x_small))  # [0.25       0.19661194 0.10499357]
    print(jax.grad(jax.jit(jax.grad(jax.jit(jax.grad(sum_logistic)))))(1.0))  # -0.0353256

    def hessian(fun):
        return jax.jit(jax.jacfwd(jax.jacrev(fun)))

    def f(x):
        return jnp.asarray([x[0], 5 * x[2], 4 * x[1] ** 2 - 2 * x[2], x[2] * jnp.sin(x[0])])

    print(hessian(f)(jnp.array([1.0, 2.0, 3.0]))[3])  # [[-2.524413 0. 0.5403023] [0 0 0] [0.5403023 0 0]]

    def g(x, y):
        return jnp.sin(x), jnp.cos(y)

    primals, g_vjp = jax.vjp(g, 0.5, 1.0)
    print(g_vjp((0.5, 1.0)))  # (0.43879128, -0.84147096)

    # Auto-vectorization with vmap()
    mat = random.normal(key, (150, 100))
    batched_x = random.normal(key, (10, 100))

    def apply_matrix(v):
        return jnp.dot(mat, v)

    vmapped = jax.jit(jax.vmap(apply_matrix))
    timeit("jit(vmap(apply_matrix))", lambda: vmapped(batched_x).block_until_ready())
    print(float(np.asarray(vmapped(batched_x), np.float64).sum()))  # 767.02179
    print(jax.devices())


if __name__ == "__main__":
    main()
