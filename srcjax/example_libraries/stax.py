"""``srcjax.example_libraries.stax``."""

from srcjax.runtime.example_libraries.stax import *  # noqa: F401,F403
