"""``srcjax.scipy.stats.geom``."""

from srcjax.runtime.scipy.stats.geom import *  # noqa: F401,F403
