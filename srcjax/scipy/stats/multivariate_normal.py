"""``srcjax.scipy.stats.multivariate_normal``."""

from srcjax.runtime.scipy.stats.multivariate_normal import *  # noqa: F401,F403
