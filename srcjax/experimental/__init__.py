"""``srcjax.experimental``: what JAX keeps there (``shard_map``, ``checkify``, ``io_callback``)."""

from srcjax.runtime.callbacks import io_callback  # noqa: F401

__all__ = ["io_callback"]
