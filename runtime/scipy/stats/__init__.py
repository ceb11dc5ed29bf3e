"""``srcjax.scipy.stats``: probability distributions under SciPy's names (``stats.norm.pdf``, ...)."""

from srcjax.runtime.scipy.stats import norm

__all__ = ["norm"]
