"""``srcjax.nn.initializers``."""

from runtime.nn_initializers import *  # noqa: F401,F403
