"""``srcjax.scipy.stats.truncnorm``."""

from srcjax.runtime.scipy.stats.truncnorm import *  # noqa: F401,F403
