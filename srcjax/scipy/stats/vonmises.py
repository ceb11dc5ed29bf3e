"""``srcjax.scipy.stats.vonmises``."""

from srcjax.runtime.scipy.stats.vonmises import *  # noqa: F401,F403
