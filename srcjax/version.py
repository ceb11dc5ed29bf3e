"""``srcjax.version`` (``jax.version``): this package's version."""

__version__ = "0.1.0"
_version = __version__
__version_info__ = tuple(int(part) for part in __version__.split("."))
