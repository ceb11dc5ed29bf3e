"""``srcjax.example_libraries.optimizers``."""

from runtime.example_libraries.optimizers import *  # noqa: F401,F403
