"""``srcjax.scipy.stats.gennorm``."""

from srcjax.runtime.scipy.stats.gennorm import *  # noqa: F401,F403
