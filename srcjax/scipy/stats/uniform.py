"""``srcjax.scipy.stats.uniform``."""

from srcjax.runtime.scipy.stats.uniform import *  # noqa: F401,F403
