"""lax functions of the 'shape' family (being written)."""

__all__: list[str] = []
