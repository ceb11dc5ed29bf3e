"""``srcjax.scipy.linalg``."""

from runtime.scipy.linalg import *  # noqa: F401,F403
