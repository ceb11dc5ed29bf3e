"""``srcjax.scipy``: the parts of SciPy that JAX offers."""

from srcjax.scipy import linalg, signal, special, stats  # noqa: F401
from srcjax.scipy import integrate, optimize, sparse  # noqa: F401
from srcjax.scipy import cluster, fft, interpolate, ndimage, spatial  # noqa: F401
