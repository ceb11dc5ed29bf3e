"""``srcjax.numpy.linalg``."""

from runtime.numpy.linalg import *  # noqa: F401,F403
