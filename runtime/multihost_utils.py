"""``jax.experimental.multihost_utils``: gathering, broadcasting and checking host values across the processes
``distributed.initialize`` joined (over its MPI engine); with one process each is what JAX does with one.

``host_local_array_to_global_array`` and its inverse lay a process's data out over a ``Mesh``; with one process
the process holds the whole global array, so the local and global arrays have one shape (srcjax lays out no
array across processes: with several, these two refuse)."""

from __future__ import annotations

import signal
import zlib
from typing import Any

import numpy as np

from srcjax.runtime import distributed, tree_util

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather", "reached_preemption_sync_point",
           "sync_global_devices"]


def _gathered(x: np.ndarray) -> np.ndarray:
    """Every process's x stacked on a new leading axis, in process order."""
    if distributed.process_count() == 1:
        return x[None]
    return distributed._state.engine.allgather(x[None]).reshape(-1, *x.shape)  # (MPI's buffers: at least 1-d)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """``in_tree`` (NumPy arrays of one shape on every process) as the source process has it (process 0 unless
    ``is_source`` says which), on every process."""
    if distributed.process_count() == 1:
        return tree_util.tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = distributed.process_index() == 0

    def broadcast(x: Any) -> np.ndarray:
        x = np.asarray(x)
        return np.asarray(_gathered(x if is_source else np.zeros_like(x)).sum(axis=0, dtype=x.dtype))  # (others: 0)

    return tree_util.tree_map(broadcast, in_tree)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Each leaf as NumPy, gathered from every process: stacked on a new leading axis, or with ``tiled``
    concatenated along the first (a scalar is stacked either way once there are several processes)."""

    def gather(x: Any) -> np.ndarray:
        x = np.asarray(x)
        if distributed.process_count() == 1:
            return x if tiled else x[None]
        if x.ndim == 0 or not tiled:
            x = x[None]
        gathered = _gathered(x)
        return gathered.reshape(-1, *x.shape[1:])

    return tree_util.tree_map(gather, in_tree)


def sync_global_devices(name: str) -> None:
    """A barrier across processes; they must all name it alike."""
    assert_equal(np.uint32(zlib.crc32(name.encode())), f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raise ``AssertionError`` unless every process holds the same values in ``in_tree``."""

    def repeated(x: Any) -> np.ndarray:
        x = np.asarray(x)
        return np.concatenate([x[None] if x.ndim == 0 else x] * distributed.process_count())

    gathered = process_allgather(in_tree, tiled=True)
    expected = tree_util.tree_map(repeated, in_tree)
    if not all(tree_util.tree_leaves(tree_util.tree_map(lambda a, b: bool(np.all(np.equal(a, b))), expected,
                                                        gathered))):
        raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


# the preemption notice (SIGTERM, as JAX's preemption service takes it) and the step agreed on after it
_preemption: dict[str, Any] = {"listening": False, "noticed": False, "sync_step": None}


def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether every process has reached the step at which to checkpoint after a preemption notice (SIGTERM to
    any process): the step after the largest ``step_id`` the processes report at the first call after the
    notice. Every process must call this at every step, as JAX asks; without ``distributed.initialize``, False.
    srcjax listens for the notice from the first call on (JAX: from ``distributed.initialize``)."""
    if not distributed.is_initialized():
        return False
    if not _preemption["listening"]:
        _preemption["listening"] = True
        try:
            signal.signal(signal.SIGTERM, lambda signum, frame: _preemption.update(noticed=True))
        except ValueError:  # (not the main thread: no notice can be taken)
            pass
    reports = _gathered(np.array([_preemption["noticed"], step_id], np.int64))  # (a barrier too)
    if _preemption["sync_step"] is None and reports[:, 0].any():
        _preemption["sync_step"] = int(reports[:, 1].max()) + 1
    return _preemption["sync_step"] == step_id


def _with_specs(name: str, inputs: Any, global_mesh: Any, pspecs: Any, keep_arrays: bool = False) -> Any:
    """Each leaf of ``inputs`` laid out over ``global_mesh`` by its PartitionSpec (``pspecs``: a prefix tree);
    with ``keep_arrays``, an Array (all of it addressable, as every srcjax Array is) stays as it is."""
    from srcjax.runtime.sharding import PartitionSpec

    if distributed.process_count() > 1:
        raise NotImplementedError(f"{name}: srcjax lays out no array across processes")
    spec_leaves, spec_tree = tree_util.tree_flatten(pspecs, is_leaf=lambda x: x is None or isinstance(x, PartitionSpec))
    subtrees = spec_tree.flatten_up_to(inputs)
    return tree_util.tree_unflatten(spec_tree, [
        tree_util.tree_map(lambda leaf, spec=spec: _laid_out(leaf, global_mesh, spec, keep_arrays), subtree)
        for spec, subtree in zip(spec_leaves, subtrees)])


def _laid_out(leaf: Any, mesh: Any, spec: Any, keep_arrays: bool) -> Any:
    from srcjax.runtime.array import Array
    from srcjax.runtime.devices import make_array_from_callback
    from srcjax.runtime.sharding import NamedSharding, PartitionSpec

    if spec is None:
        raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                         "jax.sharding.PartitionSpec() if you wanted to replicate your input.")
    sharding = NamedSharding(mesh, spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec))
    if isinstance(leaf, Array) and (keep_arrays or leaf.sharding == sharding):
        return leaf
    value = np.asarray(leaf)
    entries = (tuple(sharding.spec) + (None,) * value.ndim)[:value.ndim]
    partitions = [int(np.prod([mesh.shape[axis] for axis in sharding._axes_of(entry)])) for entry in entries]
    for axis, (size, parts) in enumerate(zip(value.shape, partitions)):
        if size % parts:
            raise ValueError(f"Sharding {sharding} implies that array axis {axis} is partitioned {parts} times, but "
                             f"the dimension size is {size} (full shape: {value.shape}, per-dimension tiling "
                             f"factors: {partitions} should evenly divide the shape)")
    return make_array_from_callback(value.shape, sharding, lambda index: value[index])


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Any, pspecs: Any) -> Any:
    """Host-local values as global arrays sharded over ``global_mesh`` by ``pspecs`` (a pytree prefix of
    ``local_inputs`` of PartitionSpecs)."""
    return _with_specs("host_local_array_to_global_array", local_inputs, global_mesh, pspecs)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Any, pspecs: Any) -> Any:
    """Global arrays as this process's local arrays: with one process, the arrays themselves (host values come
    back laid out by ``pspecs``)."""
    return _with_specs("global_array_to_host_local_array", global_inputs, global_mesh, pspecs, keep_arrays=True)
