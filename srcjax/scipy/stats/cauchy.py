"""``srcjax.scipy.stats.cauchy``."""

from srcjax.runtime.scipy.stats.cauchy import *  # noqa: F401,F403
