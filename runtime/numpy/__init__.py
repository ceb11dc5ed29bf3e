"""``srcjax.numpy``: NumPy's API on immutable arrays, written over the primitives.

Each submodule lists its public names in ``__all__``; this module re-exports them all.
"""

from runtime.numpy import _core, creation, indexing, manipulation, misc, products, reductions, sorting, ufuncs
from runtime.numpy import fft, linalg  # noqa: F401 - ``jnp.fft``, ``jnp.linalg``
from runtime.numpy._core import *  # noqa: F401,F403
from runtime.numpy.creation import *  # noqa: F401,F403
from runtime.numpy.indexing import *  # noqa: F401,F403
from runtime.numpy.manipulation import *  # noqa: F401,F403
from runtime.numpy.misc import *  # noqa: F401,F403
from runtime.numpy.products import *  # noqa: F401,F403
from runtime.numpy.reductions import *  # noqa: F401,F403
from runtime.numpy.sorting import *  # noqa: F401,F403
from runtime.numpy.ufuncs import *  # noqa: F401,F403

__all__ = sorted(
    {name for m in (_core, creation, indexing, manipulation, misc, products, reductions, sorting, ufuncs) for name in m.__all__}
    | {"fft", "linalg"}
)
