"""``srcjax.scipy.stats.t``."""

from srcjax.runtime.scipy.stats.t import *  # noqa: F401,F403
