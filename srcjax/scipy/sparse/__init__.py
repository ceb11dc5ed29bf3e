"""``srcjax.scipy.sparse``."""

from srcjax.scipy.sparse import linalg  # noqa: F401
