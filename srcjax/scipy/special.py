"""``srcjax.scipy.special``."""

from srcjax.runtime.scipy.special import *  # noqa: F401,F403
