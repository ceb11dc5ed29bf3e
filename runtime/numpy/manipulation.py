"""srcjax.numpy: 'manipulation' (being written)."""

__all__: list[str] = []
