"""srcjax.numpy: 'misc' (being written)."""

__all__: list[str] = []
