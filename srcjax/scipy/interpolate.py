"""``srcjax.scipy.interpolate``."""

from srcjax.runtime.scipy.interpolate import *  # noqa: F401,F403
