"""lax functions of the 'linalg' family (being written)."""

__all__: list[str] = []
