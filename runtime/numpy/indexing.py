"""srcjax.numpy: 'indexing' (being written)."""

__all__: list[str] = []
