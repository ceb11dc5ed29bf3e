"""``jax.experimental.mesh_utils``: device grids for ``Mesh``. srcjax's devices have no network topology to lay
out (virtual CPU devices share one host; GPUs are ordered by id), so a mesh is the devices in order, reshaped, as
JAX builds it for CPUs; a hybrid mesh tiles one such mesh per process (its "granule")."""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# JAX's per-device-kind mesh builders (its TPU layouts); a handler returning None falls back to the default.
device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def _axis_sizes(mesh_shape: Sequence[int]) -> tuple[int, ...] | None:
    try:
        return tuple(int(size) for size in mesh_shape)
    except (TypeError, ValueError):
        return None


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False, allow_split_physical_axes: bool = False) -> np.ndarray:
    """An object array of ``devices`` (default ``jax.devices()``) of shape ``mesh_shape``, whose product must be
    the number of devices."""
    from srcjax.runtime.devices import devices as all_devices

    if devices is None:
        devices = all_devices()
    shape = _axis_sizes(mesh_shape)
    if shape is None:
        raise ValueError(f"`mesh_shape` passed to `create_device_mesh` should be a sequence of ints. Got {mesh_shape}")
    if math.prod(shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape {shape}")
    handler = device_kind_handler_dict.get(devices[-1].device_kind)
    if handler is not None and (mesh := handler(shape, devices, contiguous_submeshes=contiguous_submeshes)) is not None:
        return mesh
    if devices[-1].platform == "gpu":  # (JAX's order for GPUs: by id, whatever order the list came in)
        devices = sorted(devices, key=lambda device: device.id)
    mesh = np.empty(len(devices), dtype=object)
    mesh[:] = list(devices)
    return mesh.reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *, process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """Per granule (a slice, or with ``process_is_granule`` a process) a mesh of ``mesh_shape``; the granules laid
    out in a grid of ``dcn_mesh_shape``, so the result's shape is the two multiplied axis by axis. srcjax's
    devices belong to no slice: only ``process_is_granule=True`` applies."""
    from srcjax.runtime.devices import devices as all_devices

    if devices is None:
        devices = all_devices()
    attribute = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attribute):
        raise ValueError(f"Device {devices[0]} does not have attribute {attribute}. See `process_is_granule` option.")
    by_key = collections.defaultdict(list)
    for device in devices:
        by_key[getattr(device, attribute)].append(device)
    granules = [by_key[key] for key in sorted(by_key)] if should_sort_granules_by_key else list(by_key.values())
    if np.prod(dcn_mesh_shape) != len(granules):
        raise ValueError(f"Number of slices {len(granules)} must equal the product of dcn_mesh_shape "
                         f"{dcn_mesh_shape}")
    meshes = [create_device_mesh(mesh_shape, granule, allow_split_physical_axes=allow_split_physical_axes)
              for granule in granules]
    blocks = np.empty(len(granules), dtype=object)
    blocks[:] = meshes
    return np.block(blocks.reshape(tuple(dcn_mesh_shape)).tolist())
