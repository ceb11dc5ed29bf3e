"""lax functions of the 'convolution' family (being written)."""

__all__: list[str] = []
