"""srcjax.numpy: 'sorting' (being written)."""

__all__: list[str] = []
