"""``srcjax.scipy.stats.laplace``."""

from srcjax.runtime.scipy.stats.laplace import *  # noqa: F401,F403
