"""``srcjax.experimental.mesh_utils`` (``jax.experimental.mesh_utils``)."""

from srcjax.runtime.mesh_utils import create_device_mesh, create_hybrid_device_mesh, device_kind_handler_dict

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]
