"""Devices: the host CPU split into ``jax_num_cpu_devices`` virtual devices, and moving data to them.

When ``distributed.initialize`` has joined several processes, ``devices()`` lists every process's devices,
process by process (global ids ``process_index * local_device_count + i``), and ``local_devices()`` this
process's own: the ones its arrays live on.

``device_put`` makes an immutable ``Array`` (copying the host data, so later changes to a NumPy source
do not show through); ``device_get`` brings a pytree of arrays back as NumPy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from srcjax.runtime import distributed as _distributed
from srcjax.runtime import gpu as _gpu_runtime
from srcjax.runtime import dtypes as _dtypes
from srcjax.runtime.config import config


@dataclass(frozen=True)
class Device:
    id: int
    platform: str = "cpu"
    process_index: int = 0

    @property
    def device_kind(self) -> str:
        return "cpu"

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"


@dataclass(frozen=True)
class SingleDeviceSharding:
    device: Device

    @property
    def device_set(self) -> set:
        return {self.device}


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
    local = config.jax_num_cpu_devices
    return [_device(p * local + i, p) for p in range(process_count()) for i in range(local)]


def local_devices(process_index: int | None = None, backend: str | None = None, host_id: int | None = None
                  ) -> list[Device]:
    """The devices of this process (or of ``process_index``)."""
    if _gpu(backend):
        return list(_gpu_runtime.gpu_devices())
    p = _distributed.process_index() if process_index is None and host_id is None else \
        (process_index if process_index is not None else host_id)
    local = config.jax_num_cpu_devices
    return [_device(p * local + i, p) for i in range(local)]


def device_count(backend: str | None = None) -> int:
    if _gpu(backend):
        return len(_gpu_runtime.gpu_devices())
    return config.jax_num_cpu_devices * process_count()


def local_device_count(backend: str | None = None) -> int:
    if _gpu(backend):
        return len(_gpu_runtime.gpu_devices())
    return config.jax_num_cpu_devices


def default_device() -> Device:
    return local_devices()[0]


def default_backend() -> str:
    return "gpu" if _gpu_runtime.default_is_gpu() else "cpu"


def process_index(backend: str | None = None) -> int:
    return _distributed.process_index()


def process_count(backend: str | None = None) -> int:
    return _distributed.process_count()


def _put_leaf(x: Any, device: Device | None):
    from srcjax.runtime.array import Array
    from srcjax.runtime.eager import to_array

    if device is not None and not isinstance(device, (Device, _gpu_runtime.GpuDevice, SingleDeviceSharding)):
        raise TypeError(f"device_put: expected a Device, got {type(device).__name__}")
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
