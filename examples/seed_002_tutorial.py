"""Seed 002 (JAX tutorial): the NumPy API, device_put, immutability, explicit PRNG keys.

Run: python examples/seed_002_tutorial.py [--small]
"""

import numpy as np

import srcjax as jax
from srcjax import numpy as jnp
from srcjax import random

m = jnp.ones((4, 4))
n = jnp.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
print(repr(m))
print(repr(jnp.dot(n, m).block_until_ready()))

x = np.random.normal(size=(4, 4))
x = jax.device_put(x)
print(repr(x.dtype))

x = jnp.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
print(repr(np.array(x)))

# (Im)mutability
try:
    x[0, 0] = 3.0
except TypeError as e:
    print("TypeError:", str(e).split(".")[0])
updated = x.at[0, 0].set(3.0)
print("x: \n", x)
print("updated: \n", updated)

# Managing randomness
key = random.PRNGKey(0)
print(repr(key))
for _ in range(3):
    print("Printing the random number using key: ", key, " gives: ", random.normal(key, shape=(1,)))

print("old key", key, "--> normal", random.normal(key, shape=(1,)))
key, subkey = random.split(key)
print("    \\---SPLIT --> new key   ", key, "--> normal", random.normal(key, shape=(1,)))
print("             \\--> new subkey", subkey, "--> normal", random.normal(subkey, shape=(1,)))

key, *subkeys = random.split(key, 4)
print((key, subkeys))

key = random.PRNGKey(0)
v = random.normal(key, (4,))
print("Original v:")
print(v)  # [ 1.8160863  -0.75488514  0.33988908 -0.53483534]


# Gradients: f(x) = x.x / 2 has gradient x
def f(x):
    return jnp.dot(x.T, x) / 2.0


print("Gradient of f taken at point v")
print(jax.grad(f)(v))  # equal to v


# Linear regression by gradient descent
xs = random.normal(random.PRNGKey(0), (100,))
noise = 0.01 * random.normal(random.PRNGKey(1), (100,))
ys = 3.0 * xs + 2.0 + noise


def model(params, x):
    w, b = params
    return w * x + b


def loss_fn(params, x, y):
    return jnp.mean((model(params, x) - y) ** 2)


@jax.jit
def update(params, x, y, lr=0.1):
    grads = jax.grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


params = (jnp.array(0.0), jnp.array(0.0))
for _ in range(200):
    params = update(params, xs, ys)
print(f"w={float(params[0]):.3f} b={float(params[1]):.3f}")  # w=3.000 b=2.000
