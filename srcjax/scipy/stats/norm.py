"""``srcjax.scipy.stats.norm``."""

from runtime.scipy.stats.norm import *  # noqa: F401,F403
