"""``srcjax.scipy.stats.beta``."""

from srcjax.runtime.scipy.stats.beta import *  # noqa: F401,F403
