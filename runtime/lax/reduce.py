"""lax functions of the 'reduce' family (being written)."""

__all__: list[str] = []
