"""``srcjax.scipy.stats.gumbel_l``."""

from srcjax.runtime.scipy.stats.gumbel_l import *  # noqa: F401,F403
