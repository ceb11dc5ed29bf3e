"""``srcjax.scipy.stats.multinomial``."""

from srcjax.runtime.scipy.stats.multinomial import *  # noqa: F401,F403
