"""``srcjax.lax`` (``jax.lax``): the primitives under lax's names, and control flow."""

from srcjax.runtime.lax import *  # noqa: F401,F403
from srcjax.lax import linalg  # noqa: F401
