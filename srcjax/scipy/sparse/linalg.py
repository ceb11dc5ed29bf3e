"""``srcjax.scipy.sparse.linalg``."""

from srcjax.runtime.scipy.sparse.linalg import bicgstab, cg, gmres  # noqa: F401
