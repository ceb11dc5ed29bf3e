"""``srcjax.scipy.spatial.transform``."""

from srcjax.runtime.scipy.spatial.transform import *  # noqa: F401,F403
