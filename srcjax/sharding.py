"""``srcjax.sharding``: meshes of devices and how arrays are laid out over them (as ``jax.sharding``)."""

from srcjax.runtime.devices import SingleDeviceSharding, make_single_device_sharding
from srcjax.runtime.mesh_context import (
    auto_axes, explicit_axes, get_abstract_mesh, get_mesh, reshard, set_mesh, use_abstract_mesh,
)
from srcjax.runtime.sharding import (
    AbstractDevice, AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec, Shard,
)
from srcjax.runtime.sharding_base import Sharding

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding", "PartitionSpec", "Shard", "Sharding",
           "SingleDeviceSharding", "auto_axes", "explicit_axes", "get_abstract_mesh", "get_mesh",
           "make_single_device_sharding", "reshard", "set_mesh", "use_abstract_mesh"]
