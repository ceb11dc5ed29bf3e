"""``srcjax.scipy.spatial``."""

from srcjax.scipy.spatial import transform  # noqa: F401
