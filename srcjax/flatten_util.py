"""``srcjax.flatten_util`` (``jax.flatten_util``): ``ravel_pytree``."""

from srcjax.runtime.flatten_util import ravel_pytree  # noqa: F401
