"""``srcjax.numpy`` (``jax.numpy``): NumPy's API on immutable arrays."""

from srcjax.runtime.numpy import *  # noqa: F401,F403
from srcjax.runtime.numpy import __all__  # noqa: F401
from srcjax.numpy import fft, linalg  # noqa: F401
