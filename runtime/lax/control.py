"""lax functions of the 'control' family (being written)."""

__all__: list[str] = []
