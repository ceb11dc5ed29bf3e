"""``srcjax.scipy.fft``."""

from srcjax.runtime.scipy.fft import *  # noqa: F401,F403
