"""``srcjax.nn.initializers``."""

from srcjax.runtime.nn_initializers import *  # noqa: F401,F403
