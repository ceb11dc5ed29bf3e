"""``srcjax.scipy.stats``."""

from srcjax.scipy.stats import norm  # noqa: F401
