"""``srcjax.scipy.special``."""

from runtime.scipy.special import *  # noqa: F401,F403
