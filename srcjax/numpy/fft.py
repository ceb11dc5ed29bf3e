"""``srcjax.numpy.fft``."""

from srcjax.runtime.numpy.fft import *  # noqa: F401,F403
