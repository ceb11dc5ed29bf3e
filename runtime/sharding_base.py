"""``Sharding``: what every layout of an Array over devices answers (JAX's ``jax.sharding.Sharding``).

A subclass says which devices it spans, in order (``_device_assignment``), which slice of an array each holds
(``devices_indices_map``), its memory kind, and whether it is replicated; the rest follows here. The virtual
CPU devices share the host's memory, so a layout describes an array; it never moves its data.
"""

from __future__ import annotations

from typing import Sequence

# JAX's CPU client offers these memories; a sharding names one of them ("device" when none is given).
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")


def memory_kind_of(kind: str | None) -> str:
    """``kind`` checked against the memories the CPU devices have (None: "device", as JAX canonicalizes it)."""
    if kind is None:
        return "device"
    if kind not in MEMORY_KINDS:
        raise ValueError(f"Could not find memory addressable by device cpu. Device cpu can address the following "
                         f"memory kinds: {', '.join(MEMORY_KINDS)}. Got memory kind: {kind}")
    return kind


class Sharding:
    """How an Array is laid out across devices: the base of ``NamedSharding`` and ``SingleDeviceSharding``."""

    # What each layout defines.
    @property
    def device_set(self) -> set:
        """The devices the sharding spans (every process's)."""
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def is_fully_replicated(self) -> bool:
        """Whether each device holds the whole array."""
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def num_devices(self) -> int:
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def memory_kind(self) -> str | None:
        raise NotImplementedError("Subclasses should implement this method.")

    def with_memory_kind(self, kind: str) -> Sharding:
        raise NotImplementedError("Subclasses should implement this method.")

    @property
    def _device_assignment(self) -> tuple:
        raise NotImplementedError("Subclasses should implement this method.")

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        """Each device's slice (a tuple of slices) of an array of ``global_shape``, every process's devices."""
        raise NotImplementedError("Subclasses should implement this method.")

    def _tiling(self, ndim: int) -> list[int]:
        """Into how many parts each of ``ndim`` array axes is cut."""
        raise NotImplementedError("Subclasses should implement this method.")

    # What follows from those.
    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every device of the sharding (JAX's "is local")."""
        return self.addressable_devices == self.device_set

    @property
    def addressable_devices(self) -> set:
        """The devices of the sharding that belong to this process."""
        from srcjax.runtime import distributed

        here = distributed.process_index()
        return {d for d in self.device_set if getattr(d, "process_index", 0) == here}

    @property
    def has_addressable_devices(self) -> bool:
        return bool(self.addressable_devices)

    def addressable_devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        """``devices_indices_map`` restricted to this process's devices."""
        mine = self.addressable_devices
        return {d: index for d, index in self.devices_indices_map(global_shape).items() if d in mine}

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of each device's part of an array of ``global_shape``."""
        shape = tuple(int(n) for n in global_shape)
        tiling = self._tiling(len(shape))
        for axis, (n, parts) in enumerate(zip(shape, tiling)):
            if n % parts:
                from srcjax.runtime.devices import IndivisibleError

                raise IndivisibleError(f"Sharding {self} implies that array axis {axis} is partitioned {parts} "
                                       f"times, but the dimension size is {n} (full shape: {shape}, per-dimension "
                                       f"tiling factors: {tiling} should evenly divide the shape)")
        return tuple(n // parts for n, parts in zip(shape, tiling))

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both put the same parts of any array of rank ``ndim`` on the same devices, in the same memory."""
        if self.memory_kind != other.memory_kind or self._device_assignment != other._device_assignment:
            return False
        # Each tiling factor divides the device count, so an array of that length per axis shows every cut.
        shape = (self.num_devices,) * ndim
        return _normalized(self.devices_indices_map(shape), shape) == _normalized(other.devices_indices_map(shape),
                                                                                  shape)


def _normalized(indices: dict, shape: tuple[int, ...]) -> dict:
    return {d: tuple(s.indices(n) for s, n in zip(index, shape)) for d, index in indices.items()}


def replicated_index(shape: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(None) for _ in shape)
