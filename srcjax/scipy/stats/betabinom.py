"""``srcjax.scipy.stats.betabinom``."""

from srcjax.runtime.scipy.stats.betabinom import *  # noqa: F401,F403
