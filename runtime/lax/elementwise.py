"""lax functions of the 'elementwise' family (being written)."""

__all__: list[str] = []
