"""lax functions of the 'indexing' family (being written)."""

__all__: list[str] = []
