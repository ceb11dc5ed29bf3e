"""``srcjax.tree`` (``jax.tree``): the short names for pytree functions."""

from srcjax.runtime.tree import *  # noqa: F401,F403
