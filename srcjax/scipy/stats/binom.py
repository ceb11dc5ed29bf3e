"""``srcjax.scipy.stats.binom``."""

from srcjax.runtime.scipy.stats.binom import *  # noqa: F401,F403
