"""``srcjax.scipy.stats.logistic``."""

from srcjax.runtime.scipy.stats.logistic import *  # noqa: F401,F403
