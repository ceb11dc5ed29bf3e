"""Shardings: how an Array's data is laid out over devices, as JAX describes it.

Virtual CPU devices share the host's memory, so a sharded Array keeps one buffer; its shards are views of it,
one per device. A ``NamedSharding`` lays an array out over a ``Mesh`` of devices as a ``PartitionSpec`` says:
what ``shard_map`` returns, and ``pmap`` too (over a one-axis mesh of its devices, as JAX's pmap does).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from srcjax.runtime.devices import Device, SingleDeviceSharding


@dataclass(frozen=True)
class Shard:
    """One device's part of an Array: its ``index`` (a tuple of slices of the global array) and ``data``."""

    device: Device
    index: tuple
    data: Any
    replica_id: int = 0


class AxisType(enum.Enum):
    """How a mesh axis is sharded: by the compiler (Auto, the only kind here), by the array's type, or by hand."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


class Mesh:
    """Devices arranged in a grid with a name per axis: ``Mesh(np.array(devices).reshape(2, 4), ('x', 'y'))``."""

    def __init__(self, devices: Any, axis_names: Sequence[str], axis_types: Any = None):
        self.devices = np.asarray(devices, dtype=object)
        self.axis_names = tuple(axis_names)
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(self.axis_names)
        self.axis_types = tuple(axis_types) if isinstance(axis_types, (tuple, list)) else (axis_types,)
        if len(self.axis_types) != len(self.axis_names) or any(not isinstance(t, AxisType) for t in self.axis_types):
            raise ValueError(f"Mesh: axis_types must be one AxisType per axis name, got {axis_types!r}")
        if self.devices.ndim != len(self.axis_names):
            raise ValueError(f"Mesh: {self.devices.ndim} device axes but {len(self.axis_names)} axis names")
        if len(set(self.axis_names)) != len(self.axis_names):
            raise ValueError(f"Mesh: axis names must differ, got {self.axis_names}")

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    def __enter__(self) -> Mesh:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and self.devices.shape == other.devices.shape and (self.device_ids == other.device_ids).all())

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(self.device_ids.ravel())))

    def __repr__(self) -> str:
        return f"Mesh(axis_sizes={self.devices.shape}, axis_names={self.axis_names}, axis_types={self.axis_types!r})"

    def __str__(self) -> str:  # (JAX's short form, as in a NamedSharding's repr)
        sizes = ", ".join(f"{name!r}: {n}" for name, n in self.shape.items())
        return f"Mesh({sizes}, axis_types={self.axis_types!r})"


class PartitionSpec(tuple):
    """Per array axis: the mesh axis name (or tuple of names) it is split over, or None (replicated)."""

    def __new__(cls, *entries: Any) -> PartitionSpec:
        return super().__new__(cls, entries)

    def __repr__(self) -> str:
        return f"P{tuple(self)!r}"  # (JAX prints its short name)


@dataclass(frozen=True)
class NamedSharding:
    """An Array laid out over ``mesh`` as ``spec`` says: axis a of the array is split over the mesh axes
    ``spec[a]`` (in order), and replicated over the mesh axes the spec does not name."""

    mesh: Mesh
    spec: PartitionSpec

    @property
    def device_set(self) -> set[Device]:
        return set(self.mesh.devices.ravel())

    @property
    def is_fully_addressable(self) -> bool:
        return True

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array: the spec splits no axis over a mesh axis of more than one."""
        sizes = self.mesh.shape
        return all(sizes[name] == 1 for entry in self.spec for name in self._axes_of(entry))

    def _axes_of(self, entry: Any) -> tuple[str, ...]:
        if entry is None:
            return ()
        return tuple(entry) if isinstance(entry, tuple) else (entry,)

    def devices_indices_map(self, shape: Sequence[int]) -> dict[Device, tuple]:
        """Each device's slice of an array of ``shape``."""
        sizes = self.mesh.shape
        out = {}
        names = self.mesh.axis_names
        for position in itertools.product(*(range(n) for n in self.mesh.devices.shape)):
            coordinate = dict(zip(names, position))
            index = []
            for a, n in enumerate(shape):
                entry = self.spec[a] if a < len(self.spec) else None
                parts, which = 1, 0
                for name in self._axes_of(entry):
                    parts, which = parts * sizes[name], which * sizes[name] + coordinate[name]
                step = n // parts
                index.append(slice(which * step, (which + 1) * step) if parts > 1 else slice(None))
            out[self.mesh.devices[position]] = tuple(index)
        return out

    @property
    def memory_kind(self) -> str:
        return "device"

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind={self.memory_kind})"


def shards_of(array: Any, sharding: Any) -> list[Shard]:
    """The addressable shards of ``array`` under ``sharding`` (views of its one host buffer)."""
    from srcjax.runtime.array import Array

    value = array._value
    if isinstance(sharding, SingleDeviceSharding):
        return [Shard(sharding.device, tuple(slice(None) for _ in value.shape), array)]
    shards, replicas = [], {}
    for device, index in sharding.devices_indices_map(value.shape).items():
        key = tuple((s.start, s.stop) for s in index)
        replicas[key] = replicas.get(key, -1) + 1
        shards.append(Shard(device, index, Array(value[index], array.weak_type, device), replicas[key]))
    return shards


PMAP_AXIS = "_internal_pmap_axis_name"


def pmap_sharding(devices: Sequence[Device]) -> NamedSharding:
    """What ``pmap`` returns: the leading axis split over ``devices`` (JAX's layout of pmap's results)."""
    return NamedSharding(Mesh(np.array(list(devices), dtype=object), (PMAP_AXIS,)), PartitionSpec(PMAP_AXIS))
