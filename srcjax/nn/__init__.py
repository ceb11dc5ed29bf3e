"""``srcjax.nn`` (``jax.nn``): activations, softmax and friends, initializers."""

from srcjax.runtime.nn import *  # noqa: F401,F403
from srcjax.nn import initializers  # noqa: F401
