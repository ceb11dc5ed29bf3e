"""srcjax: JAX's programming model as a source-to-source compiler.

``import srcjax as jax`` gives JAX's public API: ``numpy``, ``lax``, ``random``, ``tree_util``, devices and
config here; the transformations arrive with the compiler. This package only re-exports; the work is
done in ``runtime`` (libraries and execution), ``codegen`` (native code) and ``transpiler`` (the IR).
"""

from srcjax.runtime import eager as _eager  # noqa: F401 - installs the eager interpreter
from srcjax.runtime.api import (
    ShapeDtypeStruct, clear_caches, disable_jit, effects_barrier, ensure_compile_time_eval, eval_shape, jit,
    make_jaxpr, typeof,
)
from srcjax.runtime.array import Array
from srcjax.runtime.callbacks import pure_callback
from srcjax.runtime.closures import closure_convert, custom_gradient
from srcjax.runtime.pmap import pmap
from srcjax.runtime.shard_map import shard_map
from srcjax.runtime.vmap import vmap
from srcjax.runtime.autodiff import FLOAT0 as float0  # the dtype of an integer input's derivative
from srcjax.runtime.autodiff import (
    checkpoint,
    checkpoint_policies,
    custom_jvp,
    custom_vjp,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linear_transpose,
    linearize,
    remat,
    value_and_grad,
    vjp,
)
from srcjax.runtime.config import (
    config,
    debug_infs,
    debug_nans,
    default_matmul_precision,
    default_device,
    default_prng_impl,
    enable_checks,
    enable_x64,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    threefry_partitionable,
    transfer_guard,
    transfer_guard_device_to_device,
    transfer_guard_device_to_host,
    transfer_guard_host_to_device,
)
from srcjax.runtime.devices import Device
from srcjax.runtime.devices import (
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    local_device_count,
    live_arrays,
    local_devices,
    make_array_from_callback,
    process_count,
    process_index,
    process_indices,
)
from srcjax.runtime.sharding import NamedSharding
from srcjax.runtime.sharding import PartitionSpec as P
from srcjax.runtime.assembly import (
    copy_to_host_async, make_array_from_process_local_data, make_array_from_single_device_arrays,
)
from srcjax.runtime.fwd_bwd import fwd_and_bwd
from srcjax.runtime.mesh_context import reshard, set_mesh
from srcjax.runtime.smap import smap

from srcjax import numpy  # noqa: F401 - the one submodule every program uses

# The other submodules load on first use (``srcjax.random.normal``), keeping ``import srcjax`` quick.
_SUBMODULES = {
    "custom_derivatives", "debug", "distributed", "dtypes", "errors", "example_libraries", "experimental",
    "flatten_util", "lax", "nn", "ops", "random", "scipy", "sharding", "test_util", "tree", "tree_util", "typing",
    "profiler", "stages", "version", "custom_batching", "image", "dlpack",
}


def make_mesh(axis_shapes, axis_names, *, devices=None, axis_types=None):
    """A ``Mesh`` of the first devices, shaped ``axis_shapes`` and named ``axis_names`` (JAX's ``make_mesh``; its
    axes are ``Explicit`` unless ``axis_types`` says otherwise, as in JAX 0.10.2)."""
    import numpy as _np

    from srcjax.runtime.sharding import AxisType, Mesh

    size = int(_np.prod(axis_shapes))
    chosen = list(devices) if devices is not None else globals()["devices"]()
    if len(chosen) < size:
        raise ValueError(f"make_mesh: the mesh {tuple(axis_shapes)} needs {size} devices, {len(chosen)} are available")
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(tuple(axis_names))
    return Mesh(_np.array(chosen[:size], dtype=object).reshape(axis_shapes), axis_names, axis_types)


def named_call(fun, *, name=None):
    """``fun`` itself (JAX's ``named_call`` names the call in staged-out programs, for profiles; here programs are
    named after the functions they are traced from already)."""
    if not callable(fun):
        raise TypeError(f"named_call expects a callable, got {type(fun).__name__}")
    return fun


class named_scope:  # noqa: N801 - JAX's name
    """``with named_scope("layer1"):`` (or as a decorator): JAX names the ops inside in profiles; the values are
    unchanged, and here nothing else is either."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError("named_scope name argument must be a string.")
        self.name = name

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False

    def __call__(self, function):
        return function  # (as a decorator: the scope would change nothing around its calls)


def print_environment_info(return_string: bool = False):
    """The versions of srcjax, its dependencies and Python, and the devices (JAX's ``print_environment_info``)."""
    import platform
    import sys

    import llvmlite
    import numpy as _np

    lines = [f"srcjax:  {__version__}", f"numpy:   {_np.__version__}", f"llvmlite: {llvmlite.__version__}",
             f"python:  {sys.version.splitlines()[0]}", f"system:  {platform.platform()}",
             f"devices: {globals()['devices']()}"]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"srcjax.{name}")
    raise AttributeError(f"module 'srcjax' has no attribute '{name}'")

from srcjax.version import __version__, __version_info__  # noqa: E402,F401 - jax.__version_info__
__all__ = [
    "vmap", "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "jacobian", "hessian",
    "custom_jvp", "custom_vjp", "checkpoint", "checkpoint_policies", "remat", "jit", "make_jaxpr", "disable_jit",
    "eval_shape",
    "ShapeDtypeStruct", "Array", "config", "devices", "local_devices", "device_count", "local_device_count",
    "device_put", "device_get", "block_until_ready", "default_backend", "process_index", "process_count",
    "process_indices",
    "clear_caches", "effects_barrier", "pmap", "shard_map", "make_mesh", "enable_x64", "debug_nans", "debug_infs",
    "enable_checks", "threefry_partitionable", "numpy_rank_promotion",
    "numpy_dtype_promotion", "default_matmul_precision", "default_prng_impl",
    "pure_callback", "named_call", "named_scope", "print_environment_info", "linear_transpose", "typeof",
    "ensure_compile_time_eval", "float0", "closure_convert", "custom_gradient", "default_device", "transfer_guard",
    "transfer_guard_host_to_device", "transfer_guard_device_to_host", "transfer_guard_device_to_device", "Device",
    "live_arrays", "make_array_from_callback", "NamedSharding", "P", "copy_to_host_async",
    "make_array_from_process_local_data", "make_array_from_single_device_arrays", "fwd_and_bwd", "reshard",
    "set_mesh", "smap",
]
