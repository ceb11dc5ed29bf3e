"""``srcjax.scipy.ndimage``."""

from srcjax.runtime.scipy.ndimage import *  # noqa: F401,F403
