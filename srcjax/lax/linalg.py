"""``srcjax.lax.linalg``."""

from runtime.lax.linalg import *  # noqa: F401,F403
