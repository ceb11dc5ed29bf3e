"""``srcjax.scipy.cluster.vq``."""

from srcjax.runtime.scipy.cluster.vq import *  # noqa: F401,F403
