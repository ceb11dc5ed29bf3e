"""``srcjax.distributed``: several processes as one program (``jax.distributed``), over MPI."""

from srcjax.runtime.distributed import initialize, is_initialized, shutdown  # noqa: F401

__all__ = ["initialize", "shutdown", "is_initialized"]
