"""``srcjax.scipy.optimize``."""

from srcjax.runtime.scipy.optimize import OptimizeResults, minimize  # noqa: F401
