"""``srcjax.scipy.stats.chi2``."""

from srcjax.runtime.scipy.stats.chi2 import *  # noqa: F401,F403
