"""srcjax.numpy: 'fft' (being written)."""

__all__: list[str] = []
