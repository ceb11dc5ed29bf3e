"""``srcjax.errors`` (``jax.errors``): the exception types users catch."""

from srcjax.runtime.errors import *  # noqa: F401,F403
