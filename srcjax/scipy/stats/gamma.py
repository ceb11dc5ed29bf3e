"""``srcjax.scipy.stats.gamma``."""

from srcjax.runtime.scipy.stats.gamma import *  # noqa: F401,F403
