"""``srcjax.scipy.signal``."""

from srcjax.runtime.scipy.signal import *  # noqa: F401,F403
from srcjax.runtime.scipy.spectral import *  # noqa: F401,F403
