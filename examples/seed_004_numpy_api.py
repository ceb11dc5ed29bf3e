"""Seed 004 (JAX vs NumPy): the NumPy-compatible API, dot products, purity and index updates.

Run: python examples/seed_004_numpy_api.py [--small]
"""

import numpy as np
from _common import size, timeit

import srcjax as jax
import srcjax.numpy as jnp

x = jnp.arange(10)
print(x)  # [0 1 2 3 4 5 6 7 8 9]

long_vector = jnp.arange(size(int(1e7), int(1e5)))
timeit("jnp.dot(long_vector, long_vector)", lambda: jnp.dot(long_vector, long_vector).block_until_ready())


def sum_of_squares(x):
    return jnp.sum(x**2)


x = jnp.asarray([1.0, 2.0, 3.0, 4.0])
print(sum_of_squares(x))  # 30.0


def sum_squared_error(x, y):
    return jnp.sum((x - y) ** 2)


y = jnp.asarray([1.1, 2.1, 3.1, 4.1])
print(sum_squared_error(x, y))  # 0.03999995
print(jax.grad(sum_of_squares)(x))  # [2. 4. 6. 8.]
print(jax.grad(sum_squared_error)(x, y))  # [-0.20000005 -0.19999981 -0.19999981 -0.19999981]
print(jax.grad(sum_squared_error, argnums=(0, 1))(x, y))
print(jax.value_and_grad(sum_squared_error)(x, y))


def squared_error_with_aux(x, y):
    return sum_squared_error(x, y), x - y


print(jax.grad(squared_error_with_aux, has_aux=True)(x, y))

# Purity: NumPy arrays change in place, srcjax arrays do not
x = np.array([1, 2, 3])


def in_place_modify(x):
    x[0] = 123
    return None


in_place_modify(x)
print(repr(x))  # array([123,   2,   3])
try:
    in_place_modify(jnp.array(x))
except TypeError as e:
    print("TypeError:", str(e).split(".")[0])


def jax_in_place_modify(x):
    return jax.ops.index_update(x, 0, 123)


y = jnp.array([1, 2, 3])
print(repr(jax_in_place_modify(y)))  # Array([123,   2,   3], dtype=int32)
print(repr(y))  # Array([1, 2, 3], dtype=int32)
