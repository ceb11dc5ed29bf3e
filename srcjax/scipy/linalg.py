"""``srcjax.scipy.linalg``."""

from srcjax.runtime.scipy.linalg import *  # noqa: F401,F403
