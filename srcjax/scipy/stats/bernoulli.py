"""``srcjax.scipy.stats.bernoulli``."""

from srcjax.runtime.scipy.stats.bernoulli import *  # noqa: F401,F403
