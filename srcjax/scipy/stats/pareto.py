"""``srcjax.scipy.stats.pareto``."""

from srcjax.runtime.scipy.stats.pareto import *  # noqa: F401,F403
