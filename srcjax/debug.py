"""``srcjax.debug`` (``jax.debug``): ``print``, ``callback`` and ``breakpoint``, run while the program runs."""

from srcjax.runtime.debug import breakpoint, callback, print  # noqa: F401, A004
from srcjax.runtime.debug_sharding import inspect_array_sharding, visualize_array_sharding, visualize_sharding

__all__ = ["breakpoint", "callback", "inspect_array_sharding", "print", "visualize_array_sharding",
           "visualize_sharding"]
