"""Devices: the host CPU split into ``jax_num_cpu_devices`` virtual devices, and moving data to them.

``device_put`` makes an immutable ``Array`` (copying the host data, so later changes to a NumPy source
do not show through); ``device_get`` brings a pytree of arrays back as NumPy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

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


_DEVICES: dict[int, Device] = {}


def _device(i: int) -> Device:
    if i not in _DEVICES:
        _DEVICES[i] = Device(i)
    return _DEVICES[i]


def devices(backend: str | None = None) -> list[Device]:
    if backend not in (None, "cpu"):
        raise RuntimeError(f"backend '{backend}' is not available (this build of srcjax has: cpu)")
    return [_device(i) for i in range(config.jax_num_cpu_devices)]


local_devices = devices


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


local_device_count = device_count


def default_device() -> Device:
    return _device(0)


def default_backend() -> str:
    return "cpu"


def process_index() -> int:
    return 0


def process_count() -> int:
    return 1


def _put_leaf(x: Any, device: Device | None):
    from srcjax.runtime.array import Array
    from srcjax.runtime.eager import to_array

    if device is not None and not isinstance(device, (Device, SingleDeviceSharding)):
        raise TypeError(f"device_put: expected a Device, got {type(device).__name__}")
    if isinstance(device, SingleDeviceSharding):
        device = device.device
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
