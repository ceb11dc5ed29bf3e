"""srcjax: JAX's programming model as a source-to-source compiler.

``import srcjax as jax`` gives JAX's public API: ``numpy``, ``lax``, ``random``, ``tree_util``, devices and
config here; the transformations arrive with the compiler. This package only re-exports; the work is
done in ``runtime`` (libraries and execution), ``codegen`` (native code) and ``transpiler`` (the IR).
"""

from runtime import eager as _eager  # noqa: F401 - installs the eager interpreter
from runtime.array import Array
from runtime.config import config
from runtime.devices import (
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    local_device_count,
    local_devices,
    process_count,
    process_index,
)

from srcjax import (  # noqa: F401 - submodules, as jax has them
    dtypes,
    example_libraries,
    lax,
    nn,
    numpy,
    ops,
    random,
    scipy,
    tree,
    tree_util,
)

__version__ = "0.1.0"
__all__ = [
    "Array", "config", "devices", "local_devices", "device_count", "local_device_count", "device_put",
    "device_get", "block_until_ready", "default_backend", "process_index", "process_count",
]
