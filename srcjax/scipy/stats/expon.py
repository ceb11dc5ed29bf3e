"""``srcjax.scipy.stats.expon``."""

from srcjax.runtime.scipy.stats.expon import *  # noqa: F401,F403
