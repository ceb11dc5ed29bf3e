"""``srcjax.scipy``: the parts of SciPy that JAX offers."""

from srcjax.scipy import linalg, special, stats  # noqa: F401
