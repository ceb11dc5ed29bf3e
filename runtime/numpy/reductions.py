"""srcjax.numpy: 'reductions' (being written)."""

__all__: list[str] = []
