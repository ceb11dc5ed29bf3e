"""``srcjax.debug`` (``jax.debug``): ``print``, ``callback`` and ``breakpoint``, run while the program runs."""

from srcjax.runtime.debug import breakpoint, callback, print  # noqa: F401, A004

__all__ = ["breakpoint", "callback", "print"]
