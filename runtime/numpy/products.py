"""srcjax.numpy: 'products' (being written)."""

__all__: list[str] = []
