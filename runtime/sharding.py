"""Shardings: how an Array's data is laid out over devices, as JAX describes it.

Virtual CPU devices share the host's memory, so a sharded Array keeps one buffer; its shards are views of it,
one per device. A ``NamedSharding`` lays an array out over a ``Mesh`` of devices as a ``PartitionSpec`` says:
what ``shard_map`` returns, and ``pmap`` too (over a one-axis mesh of its devices, as JAX's pmap does). It and
``SingleDeviceSharding`` are ``Sharding``s (runtime/sharding_base.py); an ``AbstractMesh`` is a mesh without its
devices, what a type's sharding refers to (runtime/mesh_context.py).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from srcjax.runtime.devices import Device, SingleDeviceSharding
from srcjax.runtime.sharding_base import Sharding, memory_kind_of


@dataclass(frozen=True)
class Shard:
    """One device's part of an Array: its ``index`` (a tuple of slices of the global array) and ``data``."""

    device: Device
    index: tuple
    data: Any
    replica_id: int = 0


class AxisType(enum.Enum):
    """How a mesh axis is sharded: by the compiler (Auto), by the array's type (Explicit: ``typeof(x).sharding``
    names these axes, and only these may be given to ``reshard``), or by hand (Manual, inside ``shard_map``)."""

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
        if not self.axis_names and self.devices.size == 0:  # (the empty mesh: what get_mesh() gives outside set_mesh)
            self.devices = np.empty((), dtype=object)
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
        return int(self.devices.size) if self.axis_names else 0

    @property
    def device_ids(self) -> np.ndarray:
        if self.empty:
            return np.zeros((0,), dtype=int)
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(self.shape.items())

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """The mesh without its devices (JAX's ``mesh.abstract_mesh``)."""
        kinds = {AbstractDevice(d.device_kind, None, d.platform) for d in self.devices.ravel()}
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=kinds.pop() if len(kinds) == 1 else None)

    def __enter__(self) -> Mesh:
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names and self.axis_types == other.axis_types
                and self.devices.shape == other.devices.shape
                and tuple(self.device_ids.ravel()) == tuple(other.device_ids.ravel()))

    def __hash__(self) -> int:
        return hash((self.axis_names, self.axis_types, self.devices.shape, tuple(self.device_ids.ravel())))

    def __repr__(self) -> str:
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return f"Mesh(axis_sizes={self.devices.shape}, axis_names={self.axis_names}, axis_types={self.axis_types!r})"

    def __str__(self) -> str:  # (JAX's short form, as in a NamedSharding's repr)
        if self.empty:
            return "Mesh()"
        sizes = ", ".join(f"{name!r}: {n}" for name, n in self.shape.items())
        return f"Mesh({sizes}, axis_types={self.axis_types!r})"


@dataclass(frozen=True)
class AbstractDevice:
    """The kind of device a mesh is made of, without the devices (what an ``AbstractMesh`` keeps of them)."""

    device_kind: str
    num_cores: int | None
    platform: str

    def __repr__(self) -> str:
        return f"AbstractDevice({self._repr()})"

    def _repr(self) -> str:
        return f"device_kind={self.device_kind}, num_cores={self.num_cores}, platform={self.platform}"


class AbstractMesh:
    """A mesh's axis names, sizes and types without its devices: what a type's sharding refers to, and what
    ``get_abstract_mesh()`` gives (empty outside ``set_mesh``)."""

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str], axis_types: Any = None, *,
                 abstract_device: AbstractDevice | None = None):
        self.axis_sizes, self.axis_names = tuple(int(n) for n in axis_sizes), tuple(axis_names)
        self.axis_types = _axis_types(self.axis_names, axis_types, "AbstractMesh")
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes but {len(self.axis_names)} axis names")
        self.abstract_device = abstract_device  # (the kind of a concrete mesh's devices, when it was made of one)

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return int(np.prod(self.axis_sizes, dtype=np.int64)) if self.axis_sizes else 0

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def update(self, axis_sizes: Any = None, axis_names: Any = None, axis_types: Any = None) -> AbstractMesh:
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types,
                            abstract_device=self.abstract_device)

    def update_axis_types(self, name_to_type: dict[str, AxisType]) -> AbstractMesh:
        return self.update(axis_types=tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types)))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device

    def __repr__(self) -> str:
        sizes = ", ".join(f"'{name}': {n}" for name, n in self.shape_tuple) or "()"
        device = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({sizes}, axis_types={self.axis_types!r}{device})"

    def __getattr__(self, name: str) -> Any:
        if name in ("devices", "device_ids", "local_devices", "local_mesh", "is_multi_process"):
            raise ValueError(f"AbstractMesh does not implement {name}")
        raise AttributeError(f"'AbstractMesh' object has no attribute '{name}'")


def _axis_types(names: tuple[str, ...], axis_types: Any, what: str) -> tuple[AxisType, ...]:
    """One AxisType per axis name (one type given alone applies to every axis; None: Auto)."""
    if axis_types is None:
        return (AxisType.Auto,) * len(names)
    types = tuple(axis_types) if isinstance(axis_types, (tuple, list)) else (axis_types,) * len(names)
    if len(types) != len(names) or any(not isinstance(t, AxisType) for t in types):
        raise ValueError(f"{what}: axis_types must be one AxisType per axis name, got {axis_types!r}")
    return types


class PartitionSpec(tuple):
    """Per array axis: the mesh axis name (or tuple of names) it is split over, or None (replicated)."""

    def __new__(cls, *entries: Any) -> PartitionSpec:
        return super().__new__(cls, (_canonical_entry(e) for e in entries))

    def __getnewargs__(self) -> tuple:  # (pickle and copy rebuild it from its entries, not from one tuple of them)
        return tuple(self)

    def __repr__(self) -> str:
        return f"P{tuple(self)!r}"  # (JAX prints its short name)


def _canonical_entry(entry: Any) -> Any:
    """JAX's spelling of a spec entry: a list is a tuple, a tuple of one name is the name, an empty one None."""
    if isinstance(entry, list):
        entry = tuple(entry)
    if isinstance(entry, tuple) and len(entry) <= 1:
        return entry[0] if entry else None
    return entry


class DuplicateSpecError(Exception):
    """A PartitionSpec names one mesh axis for two array axes (JAX's name)."""


@dataclass(frozen=True)
class NamedSharding(Sharding):
    """An Array laid out over ``mesh`` as ``spec`` says: axis a of the array is split over the mesh axes
    ``spec[a]`` (in order), and replicated over the mesh axes the spec does not name. ``mesh`` may be an
    ``AbstractMesh`` (no devices: what ``typeof(x).sharding`` holds)."""

    mesh: Mesh | AbstractMesh
    spec: PartitionSpec
    memory_kind: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_kind", memory_kind_of(self.memory_kind))
        if not isinstance(self.spec, PartitionSpec):
            raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {self.spec!r}")
        named = [name for entry in self.spec for name in self._axes_of(entry)]
        for name in named:
            if name not in self.mesh.axis_names:
                raise ValueError(f"Resource axis: {name} of {self.spec!r} is not found in mesh: "
                                 f"{tuple(self.mesh.axis_names)}.")
        twice = sorted({name for name in named if named.count(name) > 1}, key=named.index)
        if twice:
            raise DuplicateSpecError(f"A single NamedSharding spec specification can map every mesh axis to at most "
                                     f"one positional dimension, but {self.spec!r} has duplicate entries for "
                                     f"`{', '.join(twice)}`")

    def _concrete(self, what: str) -> Mesh:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"{what} is not implemented for `jax.sharding.AbstractMesh`.")
        return self.mesh

    @property
    def device_set(self) -> set[Device]:
        return set(self._concrete("device_set").devices.ravel())

    @property
    def _device_assignment(self) -> tuple:
        return tuple(self._concrete("_device_assignment").devices.ravel())

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def is_fully_addressable(self) -> bool:
        self._concrete("is_fully_addressable")
        return super().is_fully_addressable

    @property
    def addressable_devices(self) -> set[Device]:
        self._concrete("addressable_devices")
        return super().addressable_devices

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array: the spec splits no axis over a mesh axis of more than one."""
        sizes = self.mesh.shape
        return all(sizes[name] == 1 for entry in self.spec for name in self._axes_of(entry))

    def _axes_of(self, entry: Any) -> tuple[str, ...]:
        if entry is None:
            return ()
        return tuple(entry) if isinstance(entry, tuple) else (entry,)

    def _tiling(self, ndim: int) -> list[int]:
        if len(self.spec) > ndim:
            raise ValueError(f"Sharding {self} is only valid for values of rank at least {len(self.spec)}, but was "
                             f"applied to a value of rank {ndim}.")
        sizes = self.mesh.shape
        return [int(np.prod([sizes[name] for name in self._axes_of(self.spec[a])], dtype=np.int64))
                if a < len(self.spec) else 1 for a in range(ndim)]

    def devices_indices_map(self, shape: Sequence[int]) -> dict[Device, tuple]:
        """Each device's slice of an array of ``shape``."""
        self.shard_shape(shape)  # (the rank and divisibility errors)
        mesh = self._concrete("devices_indices_map")
        sizes = mesh.shape
        out = {}
        names = mesh.axis_names
        for position in itertools.product(*(range(n) for n in mesh.devices.shape)):
            coordinate = dict(zip(names, position))
            index = []
            for a, n in enumerate(shape):
                entry = self.spec[a] if a < len(self.spec) else None
                parts, which = 1, 0
                for name in self._axes_of(entry):
                    parts, which = parts * sizes[name], which * sizes[name] + coordinate[name]
                step = n // parts
                index.append(slice(which * step, (which + 1) * step) if parts > 1 else slice(None))
            out[mesh.devices[position]] = tuple(index)
        return out

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return self.update(memory_kind=kind)

    def update(self, **changes: Any) -> NamedSharding:
        """This sharding with ``mesh``, ``spec`` or ``memory_kind`` replaced (a spec may be given as a tuple)."""
        spec = changes.pop("spec", self.spec)
        mesh, kind = changes.pop("mesh", self.mesh), changes.pop("memory_kind", self.memory_kind)
        if changes:
            raise TypeError(f"NamedSharding.update: unexpected arguments {sorted(changes)}")
        return NamedSharding(mesh, spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec),
                             memory_kind=kind)

    def __repr__(self) -> str:
        if isinstance(self.mesh, AbstractMesh):  # (JAX leaves out the memory of a type's sharding)
            return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"
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
