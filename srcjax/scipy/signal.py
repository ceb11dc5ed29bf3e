"""``srcjax.scipy.signal``."""

from srcjax.runtime.scipy.signal import *  # noqa: F401,F403
