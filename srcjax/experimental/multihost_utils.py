"""``srcjax.experimental.multihost_utils`` (``jax.experimental.multihost_utils``)."""

from srcjax.runtime.multihost_utils import (
    assert_equal,
    broadcast_one_to_all,
    global_array_to_host_local_array,
    host_local_array_to_global_array,
    process_allgather,
    reached_preemption_sync_point,
    sync_global_devices,
)

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather", "reached_preemption_sync_point",
           "sync_global_devices"]
