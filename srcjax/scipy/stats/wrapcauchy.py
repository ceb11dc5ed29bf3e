"""``srcjax.scipy.stats.wrapcauchy``."""

from srcjax.runtime.scipy.stats.wrapcauchy import *  # noqa: F401,F403
