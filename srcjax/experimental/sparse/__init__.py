"""``srcjax.experimental.sparse`` (``jax.experimental.sparse``): BCOO sparse arrays."""

from srcjax.runtime.sparse import *  # noqa: F401,F403
from srcjax.runtime.sparse import __all__  # noqa: F401
