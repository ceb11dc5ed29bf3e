"""What runs: arrays and devices, dtypes and config, pytrees, the eager interpreter, the transformation
API and the numpy / lax / random libraries."""

from runtime import eager  # noqa: F401 - installs the eager interpreter as the base of ``bind``
