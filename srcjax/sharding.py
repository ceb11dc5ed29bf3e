"""``srcjax.sharding``: meshes of devices and how arrays are laid out over them (as ``jax.sharding``)."""

from srcjax.runtime.devices import SingleDeviceSharding
from srcjax.runtime.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, Shard

__all__ = ["AxisType", "Mesh", "NamedSharding", "PartitionSpec", "SingleDeviceSharding", "Shard"]
