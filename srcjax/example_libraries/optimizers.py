"""``srcjax.example_libraries.optimizers``."""

from srcjax.runtime.example_libraries.optimizers import *  # noqa: F401,F403
