"""Devices: the host CPU split into ``jax_num_cpu_devices`` virtual devices, and moving data to them.

When ``distributed.initialize`` has joined several processes, ``devices()`` lists every process's devices,
process by process (global ids ``process_index * local_device_count + i``), and ``local_devices()`` this
process's own: the ones its arrays live on.

``device_put`` makes an immutable ``Array`` (copying the host data, so later changes to a NumPy source
do not show through); ``device_get`` brings a pytree of arrays back as NumPy arrays.
"""

from __future__ import annotations

import abc
import gc
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from srcjax.runtime import distributed as _distributed
from srcjax.runtime import gpu as _gpu_runtime
from srcjax.runtime import dtypes as _dtypes
from srcjax.runtime.config import config
from srcjax.runtime.sharding_base import Sharding, memory_kind_of, replicated_index


@dataclass(frozen=True)
class Device(metaclass=abc.ABCMeta):
    """A CPU device; ``isinstance(d, Device)`` holds for the GPUs too (``jax.Device`` covers every kind)."""

    id: int
    platform: str = "cpu"
    process_index: int = 0

    @property
    def device_kind(self) -> str:
        return "cpu"

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"cpu:{self.id}"  # (JAX's)


Device.register(_gpu_runtime.GpuDevice)


@dataclass(frozen=True)
class SingleDeviceSharding(Sharding):
    """The whole array on one device (JAX's layout of an array placed on a device)."""

    device: Device
    memory_kind: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_kind", memory_kind_of(self.memory_kind))

    @property
    def device_set(self) -> set:
        return {self.device}

    @property
    def num_devices(self) -> int:
        return 1

    @property
    def _device_assignment(self) -> tuple:
        return (self.device,)

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self.device, memory_kind=kind)

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        return {self.device: replicated_index(global_shape)}

    def _tiling(self, ndim: int) -> list[int]:
        return [1] * ndim

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self.device!r}, memory_kind={self.memory_kind})"

    @property
    def is_fully_replicated(self) -> bool:
        return True


def make_single_device_sharding(device: Device, *, memory_kind: str | None = None) -> SingleDeviceSharding:
    return SingleDeviceSharding(device, memory_kind=memory_kind)


_DEVICES: dict[tuple[int, int], Device] = {}


def _device(i: int, process: int = 0) -> Device:
    if (i, process) not in _DEVICES:
        _DEVICES[(i, process)] = Device(i, process_index=process)
    return _DEVICES[(i, process)]


def _gpu(backend: str | None) -> bool:
    """Whether ``backend`` (None: the default one) means the GPUs; raises for a backend that is not there."""
    if backend is None:
        return _gpu_runtime.default_is_gpu()
    if backend == "cpu":
        return False
    if backend in ("gpu", "cuda"):
        if not _gpu_runtime.gpu_devices():
            raise RuntimeError(f"backend '{backend}' is not available: no NVIDIA driver or GPU was found")
        return True
    raise RuntimeError(f"backend '{backend}' is not available (srcjax has: cpu, gpu/cuda)")


def _check(backend: str | None) -> None:
    _gpu(backend)


def devices(backend: str | None = None) -> list[Device]:
    """Every process's devices, process by process (the default backend's: the GPUs when there are any)."""
    if _gpu(backend):
        return list(_gpu_runtime.gpu_devices())
    local = _local_cpu_count()
    return [_device(p * local + i, p) for p in range(process_count()) for i in range(local)]


def local_devices(process_index: int | None = None, backend: str | None = None, host_id: int | None = None
                  ) -> list[Device]:
    """The devices of this process (or of ``process_index``)."""
    if _gpu(backend):
        return list(_gpu_runtime.gpu_devices())
    p = _distributed.process_index() if process_index is None and host_id is None else \
        (process_index if process_index is not None else host_id)
    local = _local_cpu_count()
    return [_device(p * local + i, p) for i in range(local)]


def device_count(backend: str | None = None) -> int:
    if _gpu(backend):
        return len(_gpu_runtime.gpu_devices())
    return _local_cpu_count() * process_count()


def local_device_count(backend: str | None = None) -> int:
    if _gpu(backend):
        return len(_gpu_runtime.gpu_devices())
    return _local_cpu_count()


_XLA_DEVICE_COUNT: list[int | None] = []


def _local_cpu_count() -> int:
    """This process's CPU devices: ``jax_num_cpu_devices`` where it was set, else what XLA's flag
    ``--xla_force_host_platform_device_count=N`` in the XLA_FLAGS variable says (JAX's tutorials set it before
    their first computation; read once, when devices are first asked for, as JAX's backend reads it), else 1."""
    if config.chosen("jax_num_cpu_devices"):
        return config.jax_num_cpu_devices
    if not _XLA_DEVICE_COUNT:
        found = re.findall(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
        _XLA_DEVICE_COUNT.append(max(1, int(found[-1])) if found else None)
    return _XLA_DEVICE_COUNT[0] or config.jax_num_cpu_devices


def default_device() -> Device:
    """Where arrays not placed explicitly live: ``jax_default_device`` (a device, or a platform's first), else the
    first local device."""
    chosen = config.jax_default_device
    if chosen is None:
        return local_devices()[0]
    if isinstance(chosen, str):
        return local_devices(backend=chosen)[0]
    return chosen


def default_backend() -> str:
    return "gpu" if _gpu_runtime.default_is_gpu() else "cpu"


def process_index(backend: str | None = None) -> int:
    return _distributed.process_index()


def process_count(backend: str | None = None) -> int:
    return _distributed.process_count()


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of every process (JAX's ``jax.process_indices``)."""
    return list(range(process_count(backend)))


def _put_leaf(x: Any, device: Device | None):
    from srcjax.runtime.array import Array
    from srcjax.runtime.eager import to_array

    from srcjax.runtime.sharding import NamedSharding, PartitionSpec
    from srcjax.transpiler.ir import Value  # (not at the top: ir imports the primitives first)

    if isinstance(device, PartitionSpec):  # (under ``set_mesh``: the spec over the mesh in context, as in JAX)
        from srcjax.runtime.mesh_context import _CONTEXT

        if _CONTEXT.mesh is None:
            raise ValueError("Using PartitionSpec when you are not under a mesh context is not allowed. Please pass "
                             "a NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got "
                             f"{device!r}")
        device = NamedSharding(_CONTEXT.mesh, device)
    if device is not None and not isinstance(device, (Device, _gpu_runtime.GpuDevice, SingleDeviceSharding,
                                                      NamedSharding)):
        from srcjax.runtime.numpy._core import TypeOrValueError  # (JAX's ValueError; srcjax's was a TypeError)

        raise TypeOrValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device` or a "
                               f"pytree of these values. Received invalid value: {device!r}")
    if isinstance(x, Value):  # (inside a transformed function: the value stays where the computation runs, as in JAX)
        return x
    if isinstance(device, NamedSharding):  # (the devices share the host's memory: the layout is a description)
        arr = to_array(np.array(x) if isinstance(x, np.ndarray) else x, "device_put")
        _check_layout(device, arr.shape)
        return Array(arr._value, arr.weak_type, device)
    if isinstance(device, SingleDeviceSharding):
        device = device.device
    if device is None and _gpu_runtime.default_is_gpu():
        device = _gpu_runtime.gpu_devices()[0]
    if isinstance(device, _gpu_runtime.GpuDevice):
        if isinstance(x, Array) and x._device == device and _gpu_runtime.resident(x) is not None:
            return x
        if isinstance(x, np.ndarray) and x.dtype.kind in "biufc":
            # (no copy first, nor an Array that would make it read-only: the upload has read it when ``put``
            # returns, and the caller's buffer stays theirs)
            dtype, weak = _dtypes.dtype_and_weak(x)
            return _gpu_runtime.put(x.astype(dtype, copy=False), weak, device)
        arr = x if isinstance(x, Array) else to_array(x, "device_put")
        return _gpu_runtime.put(np.asarray(arr), arr.weak_type, device)
    if isinstance(x, Array):
        return x if device is None or x._device == device else Array(x._value, x.weak_type, device)
    if isinstance(x, np.ndarray):
        x = np.array(x)  # a copy: the caller's buffer stays theirs
    arr = to_array(x, "device_put")
    return Array(arr._value, arr.weak_type, device)


class IndivisibleError(ValueError):
    """A sharding splits an axis into parts that do not divide its length (JAX's name)."""


def _check_layout(sharding: Any, shape: tuple[int, ...]) -> None:
    """JAX's checks of a NamedSharding against an array's shape: its mesh axes exist, the spec is no longer than
    the rank, and each split axis divides evenly."""
    names, sizes = sharding.mesh.axis_names, sharding.mesh.shape
    for entry in sharding.spec:
        for name in sharding._axes_of(entry):
            if name not in names:
                raise ValueError(f"Resource axis: {name} of {sharding.spec!r} is not found in mesh: {tuple(names)}.")
    if len(sharding.spec) > len(shape):
        raise ValueError(f"One of device_put args is incompatible with its sharding annotation {sharding}: Sharding "
                         f"{sharding} is only valid for values of rank at least {len(sharding.spec)}, but was "
                         f"applied to a value of rank {len(shape)}.")
    for axis, entry in enumerate(sharding.spec):
        parts = int(np.prod([sizes[name] for name in sharding._axes_of(entry)], dtype=np.int64))
        if shape[axis] % parts:
            tiling = [int(np.prod([sizes[n] for n in sharding._axes_of(e)], dtype=np.int64)) for e in sharding.spec]
            raise IndivisibleError(f"Sharding {sharding} implies that array axis {axis} is partitioned {parts} "
                                   f"times, but the dimension size is {shape[axis]} (full shape: {tuple(shape)}, "
                                   f"per-dimension tiling factors: {tiling} should evenly divide the shape)")


def device_put(x: Any, device: Any = None, *, donate: bool = False, may_alias: bool | None = None):
    from srcjax.runtime import tree_util

    return tree_util.tree_map(lambda leaf: _put_leaf(leaf, device), x)


def device_get(x: Any):
    from srcjax.runtime import tree_util
    from srcjax.runtime.array import Array

    return tree_util.tree_map(lambda leaf: np.asarray(leaf) if isinstance(leaf, Array) else leaf, x)


def block_until_ready(x: Any):
    from srcjax.runtime import tree_util

    tree_util.tree_map(lambda leaf: leaf.block_until_ready() if hasattr(leaf, "block_until_ready") else leaf, x)
    return x


def live_arrays(platform: str | None = None) -> list:
    """Every Array alive in this process (not deleted by donation), on ``platform``'s devices when given (JAX's
    ``jax.live_arrays``; a debugging aid, so the heap is searched rather than every Array registered)."""
    from srcjax.runtime.array import DELETED, Array

    if platform is not None:
        _check(platform)
    found = []
    for obj in gc.get_objects():
        if type(obj) is Array and getattr(obj, "_pending", None) is not DELETED:
            if platform is None or (obj.device.platform == "cpu") == (platform == "cpu"):
                found.append(obj)
    return found


def make_array_from_callback(shape: Any, sharding: Any, data_callback: Callable[[Any], Any], dtype: Any = None):
    """The Array of ``shape`` laid out as ``sharding`` says, each device's part being ``data_callback(index)`` (its
    index: a tuple of slices of the global array), as JAX's ``make_array_from_callback``."""
    from srcjax.runtime.array import Array
    from srcjax.runtime.eager import to_array

    shape = tuple(int(n) for n in shape)
    if isinstance(sharding, SingleDeviceSharding):
        indices = {sharding.device: tuple(slice(None) for _ in shape)}
    elif hasattr(sharding, "devices_indices_map"):
        indices = sharding.devices_indices_map(shape)
    else:
        raise TypeError(f"make_array_from_callback: expected a Sharding, got {type(sharding).__name__}")
    parts: dict[tuple, Any] = {}
    for index in indices.values():
        key = tuple(s.indices(n) for s, n in zip(index, shape))
        if key not in parts:
            part = to_array(data_callback(index), "make_array_from_callback")
            expected = tuple(len(range(*k)) for k in key)
            if part.shape != expected:
                raise ValueError(f"make_array_from_callback: data_callback returned an array of shape {part.shape} "
                                 f"for the index {index}, whose shape is {expected}")
            if dtype is not None and part.dtype != _dtypes.canonicalize_dtype(np.dtype(dtype)):
                raise ValueError("If `dtype` is provided to `jax.make_array_from_callback`, it must match the dtype "
                                 f"of the addressable shards. Got dtype={np.dtype(dtype)} and shard "
                                 f"dtype={part.dtype}`.")
            parts[key] = (index, part)
    first = next(iter(parts.values()))[1]
    value = np.empty(shape, first.dtype)
    for index, part in parts.values():
        value[index] = np.asarray(part)
    weak = all(part.weak_type for _, part in parts.values())
    where = sharding.device if isinstance(sharding, SingleDeviceSharding) else sharding
    return Array(value, weak, where)
