"""``srcjax.lax.linalg``."""

from srcjax.runtime.lax.linalg import *  # noqa: F401,F403
