"""``srcjax.scipy.cluster``."""

from srcjax.scipy.cluster import vq  # noqa: F401
