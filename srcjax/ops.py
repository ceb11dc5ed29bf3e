"""``srcjax.ops``: the index-update functions of older JAX (``index_update`` ...) and segment sums."""

from srcjax.runtime.ops import *  # noqa: F401,F403
