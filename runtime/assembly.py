"""Arrays put together from per-device parts, as JAX's ``make_array_from_single_device_arrays`` and
``make_array_from_process_local_data`` do, and ``copy_to_host_async``.

The virtual devices share the host's memory: the parts are copied into one buffer, laid out as the sharding says.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from srcjax.runtime import dtypes as _dtypes
from srcjax.runtime import tree_util


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Any, arrays: Sequence[Any], *,
                                         dtype: Any = None) -> Any:
    """The Array of ``shape`` laid out as ``sharding`` says whose part on each device is the one of ``arrays``
    that lives there (one array per device of the sharding, each of the sharding's shard shape)."""
    from srcjax.runtime.array import Array
    from srcjax.runtime.sharding_base import Sharding

    shape = tuple(int(n) for n in shape)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"make_array_from_single_device_arrays: expected a Sharding, got {type(sharding).__name__}")
    if not sharding.is_fully_addressable:  # (an Array here holds every part; the other processes' are not given)
        raise NotImplementedError("make_array_from_single_device_arrays: srcjax builds it from every device's part, "
                                  "in one process; with several, use make_array_from_callback")
    arrays = list(arrays)
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"Unsupported type for elements in `arrays`: {type(a)}")
    wanted = sharding.addressable_devices
    if len(arrays) != len(wanted):
        raise ValueError(f"Expected {len(wanted)} per-device arrays (this is how many devices are addressable by the "
                         f"sharding), but got {len(arrays)}")
    owners = [_device_of(a) for a in arrays]
    if len(set(owners)) != len(owners):
        raise ValueError("When making an array from single-device arrays, the input arrays must be from distinct "
                         f"devices, but got device IDs {[d.id for d in owners]}")
    if set(owners) != wanted:
        missing, extra = wanted - set(owners), set(owners) - wanted
        raise ValueError("Addressable devices and per-device arrays devices do not match. Sharding contains devices "
                         f"{ {d.id for d in missing} } that are not present in per-device arrays. Per-device arrays "
                         f"contain devices { {d.id for d in extra} } that are not present in the sharding.")
    first = arrays[0].dtype
    if dtype is not None and np.dtype(dtype) != first:
        raise ValueError("If `dtype` is provided to `jax.make_array_from_single_device_arrays`, it must match the "
                         f"dtype of the addressable shards. Got dtype={np.dtype(dtype)} and shard dtype={first}`.")
    part_shape = sharding.shard_shape(shape)
    indices = sharding.devices_indices_map(shape)
    value = np.empty(shape, first)
    for a, device in zip(arrays, owners):
        if a.dtype != first:
            raise ValueError(f"Input buffers to `Array` must have matching dtypes. Got {a.dtype}, expected {first} "
                             f"for buffer: {np.asarray(a)}")
        if a.shape != part_shape:
            raise ValueError(f"Expected shard shape {part_shape} doesn't match the single device array shape "
                             f"{a.shape}. Shape of Array is {shape} with sharding {sharding}")
        value[indices[device]] = np.asarray(a)
    return Array(value, False, _layout(sharding))


def _device_of(a: Any) -> Any:
    devices = a.devices()
    if len(devices) != 1:
        raise ValueError(f"make_array_from_single_device_arrays: each array must be on one device, got one on "
                         f"{len(devices)} devices")
    return next(iter(devices))


def _layout(sharding: Any) -> Any:
    """What an Array's ``_device`` slot holds for ``sharding`` (a device for a one-device sharding)."""
    from srcjax.runtime.devices import SingleDeviceSharding

    return sharding.device if isinstance(sharding, SingleDeviceSharding) else sharding


def make_array_from_process_local_data(sharding: Any, local_data: Any, global_shape: Any = None) -> Any:
    """The global Array laid out as ``sharding`` says from this process's data (a pytree of arrays). In one process
    the local data is the whole array, so ``global_shape`` is None or its shape."""
    from srcjax.runtime.devices import device_put
    from srcjax.runtime.distributed import process_count
    from srcjax.runtime.eager import to_array

    if process_count() != 1:
        raise NotImplementedError("make_array_from_process_local_data: srcjax builds it in one process only; with "
                                  "several, use make_array_from_callback")

    def build(leaf: Any) -> Any:
        arr = to_array(np.asarray(leaf) if isinstance(leaf, (list, tuple)) else leaf,
                       "make_array_from_process_local_data")
        if global_shape is not None and tuple(global_shape) != arr.shape:
            raise ValueError("When calling `make_array_from_process_local_data` on a single process, global_shape "
                             "should be None or equal to local_data.shape.Got global_shape="
                             f"{tuple(global_shape)} and local_data.shape={arr.shape}.")
        arr = arr.astype(_dtypes.canonicalize_dtype(arr.dtype)) if arr.weak_type else arr
        return device_put(arr, sharding)

    return tree_util.tree_map(build, local_data)


def copy_to_host_async(x: Any) -> Any:
    """Start copying each array leaf of ``x`` to the host (already there: the devices share its memory); ``x``."""
    for leaf in tree_util.tree_leaves(x):
        copy = getattr(leaf, "copy_to_host_async", None)
        if callable(copy):
            copy()
    return x
