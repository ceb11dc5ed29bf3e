"""``srcjax.numpy``: NumPy's API on immutable arrays, written over the primitives.

Each submodule lists its public names in ``__all__``; this module re-exports them all.
"""

import importlib

from srcjax.runtime.numpy import (  # noqa: F401 - ``jnp.fft``, ``jnp.linalg``
    _core,
    creation,
    fft,
    indexing,
    linalg,
    manipulation,
    misc,
    products,
    reductions,
    sorting,
    ufunc_objects,
    ufuncs,
)
from srcjax.runtime.numpy._core import *  # noqa: F401,F403
from srcjax.runtime.numpy.creation import *  # noqa: F401,F403
from srcjax.runtime.numpy.indexing import *  # noqa: F401,F403
from srcjax.runtime.numpy.manipulation import *  # noqa: F401,F403
from srcjax.runtime.numpy.misc import *  # noqa: F401,F403
from srcjax.runtime.numpy.products import *  # noqa: F401,F403
from srcjax.runtime.numpy.reductions import *  # noqa: F401,F403
from srcjax.runtime.numpy.sorting import *  # noqa: F401,F403
from srcjax.runtime.numpy.ufunc_objects import *  # noqa: F401,F403
from srcjax.runtime.numpy.ufuncs import *  # noqa: F401,F403

_MODULES = (_core, creation, indexing, manipulation, misc, products, reductions, sorting, ufunc_objects, ufuncs)
__all__ = sorted({name for m in _MODULES for name in m.__all__} | {"fft", "linalg"})

from srcjax.transpiler.array_methods import install_numpy_api  # noqa: E402

install_numpy_api(importlib.import_module(__name__))
