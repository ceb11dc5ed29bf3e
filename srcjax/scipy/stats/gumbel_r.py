"""``srcjax.scipy.stats.gumbel_r``."""

from srcjax.runtime.scipy.stats.gumbel_r import *  # noqa: F401,F403
