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
for i in range(3):
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
