"""srcjax.numpy: 'ufuncs' (being written)."""

__all__: list[str] = []
