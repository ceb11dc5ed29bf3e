"""``srcjax.custom_batching`` (``jax.custom_batching``): functions with their own batching rules."""

from srcjax.runtime.custom_batching import custom_vmap, sequential_vmap  # noqa: F401
