"""Seed 003 (slides "JAX: Autograd and XLA"): a tanh written with exp, fusion-friendly elementwise code.

Run: python examples/seed_003_slides.py [--small]
Transpile: srcjax transpile examples/seed_003_slides.py:slow_f --args 'f32[5000,5000]'
"""

from _common import size, timeit

import srcjax.numpy as np
from functools import partial

from srcjax import grad, jit, vmap


def tanh(x):  # Define a function
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def slow_f(x):
    # Element-wise ops see a large benefit from fusion
    return x * x + x * 2.0


def predict(params, x):
    return np.tanh(np.dot(params, x))


def main():
    print(tanh(1.0))  # 0.7615942
    print(grad(tanh)(1.0))  # 0.4199743

    params = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    input_batch = np.array([[0.1, 0.2], [0.3, -0.4], [0.0, 1.0], [1.0, 0.0]])
    print(vmap(partial(predict, params))(input_batch))
    print(vmap(predict, in_axes=(None, 0))(params, input_batch))

    n = size(5000, 300)
    x = np.ones((n, n))
    fast_f = jit(slow_f)
    timeit("fast_f(x)", lambda: fast_f(x).block_until_ready(), repeat=3)
    timeit("slow_f(x)", lambda: slow_f(x).block_until_ready(), repeat=3)
    print(fast_f(x)[:2, :2])


if __name__ == "__main__":
    main()
