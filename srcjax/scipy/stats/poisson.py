"""``srcjax.scipy.stats.poisson``."""

from srcjax.runtime.scipy.stats.poisson import *  # noqa: F401,F403
