"""``srcjax.experimental.shard_map.shard_map`` (JAX's older home of ``shard_map``, with its older signature)."""

from srcjax.runtime.shard_map import experimental_shard_map as shard_map

__all__ = ["shard_map"]
