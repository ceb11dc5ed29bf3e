"""Seed 003 (slides "JAX: Autograd and XLA"): a tanh written with exp, fusion-friendly elementwise code.

Run: python examples/seed_003_slides.py [--small]
"""

from _common import size, timeit

import srcjax.numpy as np


def tanh(x):  # Define a function
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


print(tanh(1.0))  # 0.7615942


def slow_f(x):
    # Element-wise ops see a large benefit from fusion
    return x * x + x * 2.0


n = size(5000, 300)
x = np.ones((n, n))
timeit("slow_f(x)", lambda: slow_f(x).block_until_ready(), repeat=3)
print(slow_f(x)[:2, :2])
