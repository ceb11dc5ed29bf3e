"""``srcjax.numpy.fft``."""

from runtime.numpy.fft import *  # noqa: F401,F403
