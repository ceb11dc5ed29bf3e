"""``srcjax.scipy.stats.dirichlet``."""

from srcjax.runtime.scipy.stats.dirichlet import *  # noqa: F401,F403
