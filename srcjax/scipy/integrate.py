"""``srcjax.scipy.integrate``."""

from srcjax.runtime.scipy.integrate import *  # noqa: F401,F403
