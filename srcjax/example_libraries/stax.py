"""``srcjax.example_libraries.stax``."""

from runtime.example_libraries.stax import *  # noqa: F401,F403
