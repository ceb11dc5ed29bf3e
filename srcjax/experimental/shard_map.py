"""``srcjax.experimental.shard_map.shard_map`` (JAX's older home of ``shard_map``)."""

from srcjax.runtime.shard_map import shard_map

__all__ = ["shard_map"]
