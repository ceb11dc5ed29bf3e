"""``srcjax.numpy.linalg``."""

from srcjax.runtime.numpy.linalg import *  # noqa: F401,F403
