"""``srcjax.experimental``: what JAX keeps there (``shard_map``, ``checkify``)."""
