"""``srcjax.random`` (``jax.random``): threefry2x32 keys and samplers, bit-identical to JAX."""

from srcjax.runtime.random import *  # noqa: F401,F403
