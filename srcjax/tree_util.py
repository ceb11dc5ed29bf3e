"""``srcjax.tree_util`` (``jax.tree_util``): pytrees."""

from srcjax.runtime.tree_util import *  # noqa: F401,F403
