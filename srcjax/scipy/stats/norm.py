"""``srcjax.scipy.stats.norm``."""

from srcjax.runtime.scipy.stats.norm import *  # noqa: F401,F403
