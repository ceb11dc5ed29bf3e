"""``srcjax.scipy.stats.nbinom``."""

from srcjax.runtime.scipy.stats.nbinom import *  # noqa: F401,F403
