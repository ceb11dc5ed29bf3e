"""``pmap``: a function mapped over the leading axis of its arguments, one replica per device, with collectives
(``psum``, ``all_gather``, ...) over the named axis.

Called on arrays, a ``pmap`` is compiled once per signature. The function is read for one replica with the axis
named (``collectives.named_axis``). When that program has collectives and compiles natively, it can run as one
replica per device, each on a thread of its own, the collectives meeting in shared memory
(codegen/llvm/replicas.py). Otherwise it runs as the ``vmap`` of the function over the named axis, one compiled
call (its nests shared out on the thread pool), the collectives' batching rules giving them their meaning: the
same results. Virtual devices share the host's cores, so ``SRCJAX_PMAP=auto`` (the default) takes the replicas only
when each has a core and the work is large (``REPLICA_MIN_WORK``); ``replicas`` and ``batched`` force one way.
Either way the results are laid out over the devices as JAX lays out pmap's results
(``sharding.pmap_sharding``). Called inside a transformation or a compiled function (``grad`` of a pmap, a pmap
inside ``jit``, nested pmaps), it is that ``vmap``: the transformations compose through it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from srcjax.runtime import devices as device_api
from srcjax.runtime import tree_util
from srcjax.runtime.api import _flags, _is_dynamic, _native_enabled, abstractify, jit
from srcjax.runtime.array import Array
from srcjax.runtime.config import config
from srcjax.runtime.sharding import PMAP_AXIS, NamedSharding, PartitionSpec, pmap_sharding
from srcjax.runtime.vmap import _broadcast_prefix, vmap
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.ir import walk
from srcjax.transpiler.primitives import collectives, core
from srcjax.transpiler.types import TensorType


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence[Any] | None = None,
         backend: str | None = None, axis_size: int | None = None, donate_argnums: int | Sequence[int] = (),
         global_arg_shapes: Any = None) -> Callable:
    """Map ``fun`` over axis ``in_axes`` of its arguments, one replica per device."""
    if not callable(fun):
        raise TypeError(f"pmap expects a callable, got {type(fun).__name__}")
    if backend not in (None, "cpu", "gpu", "cuda"):
        raise ValueError(f"pmap: backend '{backend}' is not available (srcjax has: cpu, gpu)")
    if global_arg_shapes is not None:
        raise ValueError("pmap: global_arg_shapes is not supported (JAX removed it too)")
    return Pmapped(fun, axis_name, in_axes, out_axes, _ints(static_broadcasted_argnums), devices, axis_size,
                   _ints(donate_argnums), backend)


def _ints(x: int | Sequence[int]) -> tuple[int, ...]:
    return (x,) if isinstance(x, int) else tuple(x)


class Pmapped:
    """``pmap(fun, ...)``: callable like ``fun``, over arrays with a leading (``in_axes``) device axis."""

    def __init__(self, fun: Callable, axis_name: Any, in_axes: Any, out_axes: Any, static: tuple[int, ...],
                 devices: Sequence[Any] | None, axis_size: int | None, donate: tuple[int, ...],
                 backend: str | None = None):
        self.fun, self.axis_name, self.in_axes, self.out_axes = fun, axis_name, in_axes, out_axes
        self.static, self.devices, self.axis_size, self.donate = static, devices, axis_size, donate
        self.backend = backend
        self._compiled: dict[tuple, Callable] = {}  # the batched form, by (argument count, number of replicas)
        self._spmd: dict[tuple, _Replicated | None] = {}  # native replicas by signature (None: runs batched)
        self._gpu_spmd: dict[tuple, Any] = {}  # replicas on GPUs by signature and devices (gpu_pmap.GpuReplicas)
        functools.update_wrapper(self, fun, updated=())

    def _axes(self, n_args: int) -> Any:
        """``in_axes`` over the positional arguments, None (broadcast) for the static ones."""
        if self.in_axes is None or isinstance(self.in_axes, int):
            axes = [self.in_axes] * n_args
        else:
            axes = list(self.in_axes)
            if len(axes) != n_args:
                raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                                 f"positional arguments passed to the function, but got len(in_axes)={len(axes)}, "
                                 f"len(args)={n_args}")
        for i in self.static:
            if not -n_args <= i < n_args:
                raise ValueError(f"pmap: static_broadcasted_argnums {i} is out of range for {n_args} arguments")
            axes[i % n_args] = None
        return tuple(axes)

    def _mapped(self, n_args: int, size: int | None) -> Callable:
        # (with several processes, this process's devices are its share of the axis: distributed.py)
        return vmap(self.fun, in_axes=self._axes(n_args), out_axes=self.out_axes, axis_name=self.axis_name,
                    axis_size=size, _processes=device_api.process_count(), _devices=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if core.current_interpreter() is not core.base_interpreter():
            # inside a transformation or a compiled function: the mapped function itself
            return self._mapped(len(args), self.axis_size)(*args, **kwargs)
        size = self._size(args, kwargs)
        available = list(self.devices) if self.devices is not None else device_api.local_devices(backend=self.backend)
        if size > len(available):
            raise ValueError(f"compiling computation that requires {size} logical devices, but only "
                             f"{len(available)} XLA devices are available (num_replicas={size})")
        placed = available[:size]
        if kwargs:  # (keyword arguments are mapped over their axis 0, as JAX maps them; the batched call takes them)
            out = _BATCHED
        elif not _on_gpus(placed):
            out = self._replicas(args, size)
        else:
            mode = os.environ.get("SRCJAX_PMAP", "auto")
            replicas = (size > 1 or mode == "replicas") and mode != "batched" and _native_enabled() \
                and device_api.process_count() == 1
            # (otherwise, one GPU among them runs the batched call)
            out = self._gpu_replicas(args, placed) if replicas else _BATCHED
        if out is _BATCHED:
            call = self._compiled.get((len(args), size))
            if call is None:
                static = tuple(i % len(args) for i in self.static)
                call = self._compiled[(len(args), size)] = jit(self._mapped(len(args), size), static_argnums=static,
                                                               donate_argnums=self.donate)
            out = call(*args, **kwargs)
        return self._place(out, placed, {id(leaf) for leaf in tree_util.tree_leaves((args, kwargs))})

    # -- replicas on threads ------------------------------------------------------------------------------------------
    def _replicas(self, args: Sequence[Any], size: int) -> Any:
        """The results of running one native replica per device, or ``_BATCHED`` when this call runs batched."""
        mode = os.environ.get("SRCJAX_PMAP", "auto")
        if mode == "batched" or not _native_enabled() or self.donate or device_api.process_count() > 1:
            return _BATCHED
        if mode == "auto":  # threads of their own pay off only with a core each and enough work to share
            work = sum(int(np.size(leaf)) for leaf in tree_util.tree_leaves(args))
            if size > _usable_cores() or work < REPLICA_MIN_WORK:
                return _BATCHED
        leaves, treedef, leaf_axes, dynamic, example, key = self._signature(args, size)
        spmd = self._spmd.get(key)
        if spmd is None:
            spmd = self._spmd[key] = _Replicated.build(self, treedef, example, dynamic, size)
        if spmd is None:
            return _BATCHED
        return spmd.run([leaf for leaf, d in zip(leaves, dynamic) if d],
                        [a for a, d in zip(leaf_axes, dynamic) if d])

    def _signature(self, args: Sequence[Any], size: int) -> tuple:
        """The arguments' leaves, their tree, mapped axes and dynamism, one replica's example of them, and the
        key its program is kept under."""
        axes = self._axes(len(args))
        leaves, treedef = tree_util.tree_flatten((list(args), {}))
        leaf_axes = _broadcast_prefix(axes, tuple(args), "in_axes")
        dynamic = [_is_dynamic(leaf) for leaf in leaves]
        example = [_drop_axis(abstractify(leaf), a) if d and a is not None else abstractify(leaf) if d else leaf
                   for leaf, a, d in zip(leaves, leaf_axes, dynamic)]
        key = (treedef, tuple(t if d else ("static", _hashable(t)) for t, d in zip(example, dynamic)),
               tuple(leaf_axes), size, _flags["jax_enable_x64"])
        return leaves, treedef, leaf_axes, dynamic, example, key

    def _gpu_replicas(self, args: Sequence[Any], devices: list[Any]) -> Any:
        """The results of one replica per GPU, its collectives over NCCL (``runtime/gpu_pmap.py``)."""
        from srcjax.runtime import gpu_pmap

        leaves, treedef, leaf_axes, dynamic, example, key = self._signature(args, len(devices))
        key = (key, tuple(d.id for d in devices))
        if key not in self._gpu_spmd:
            self._gpu_spmd[key] = gpu_pmap.GpuReplicas.build(self, treedef, example, dynamic, devices)
        replicas = self._gpu_spmd[key]
        if replicas is None:  # (collectives inside control flow: batched)
            return _BATCHED
        out = replicas.run([leaf for leaf, d in zip(leaves, dynamic) if d],
                           [a for a, d in zip(leaf_axes, dynamic) if d])
        for i in self.donate:  # (their buffers are the replicas' copies: the donated Arrays go, as JAX's do)
            for leaf in tree_util.tree_leaves(args[i % len(args)]) if -len(args) <= i < len(args) else ():
                if isinstance(leaf, Array):
                    leaf.delete()
        return out

    def _size(self, args: Sequence[Any], kwargs: dict) -> int:
        """The number of replicas: the mapped axes' common size (or ``axis_size``)."""
        leaf_axes = _broadcast_prefix(self._axes(len(args)), tuple(args), "in_axes")  # (a prefix of each argument)
        leaves = tree_util.tree_leaves(list(args)) + tree_util.tree_leaves(kwargs)
        sizes = set()
        for leaf, axis in zip(leaves, leaf_axes + [0] * (len(leaves) - len(leaf_axes))):
            if axis is None:
                continue
            shape = getattr(leaf, "shape", None)
            if shape is None or not -len(shape) <= axis < len(shape):
                raise ValueError(f"pmap got a value of shape {shape} to map over axis {axis}: mapped arguments "
                                 "need that axis")
            sizes.add(shape[axis])
        if len(sizes) > 1:
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: {sorted(sizes)}")
        if not sizes:
            if self.axis_size is None:
                raise ValueError("pmap requires at least one argument with a mapped axis, or axis_size")
            return int(self.axis_size)
        return sizes.pop()

    def _place(self, out: Any, placed: list[Any], inputs: set[int]) -> Any:
        """The results laid out over the devices: the mapped axis (``out_axes``) split over them, the others
        replicated. (A result that is an argument itself is a new Array over its buffer.)"""
        leaves, tree = tree_util.tree_flatten(out)
        axes = _broadcast_prefix(self.out_axes, out, "out_axes")
        mesh = pmap_sharding(placed).mesh
        placed_leaves = []
        for leaf, axis in zip(leaves, axes):
            if isinstance(leaf, Array):
                if id(leaf) in inputs:
                    leaf = Array(leaf._value, leaf.weak_type)
                spec = PartitionSpec() if axis is None else PartitionSpec(*([None] * (axis % leaf.ndim)), PMAP_AXIS)
                leaf._device = NamedSharding(mesh, spec)
            placed_leaves.append(leaf)
        return tree_util.tree_unflatten(tree, placed_leaves)


_BATCHED = object()
# elements of the arguments from which ``SRCJAX_PMAP=auto`` runs replicas on threads (below, starting the threads and
# meeting at the barriers costs more than the batched call)
REPLICA_MIN_WORK = 1 << 20


def _on_gpus(devices: Sequence[Any]) -> bool:
    return bool(devices) and all(getattr(d, "platform", None) == "gpu" for d in devices)


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _drop_axis(aval: TensorType, axis: int) -> TensorType:
    axis %= aval.ndim
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def _hashable(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        return id(x)


class _Replicated:
    """A pmap's program for one replica, compiled natively with its collectives, and threads to run the replicas
    on (the caller runs replica 0)."""

    def __init__(self, native: Any, out_tree: Any, out_axes: list[Any], size: int):
        self.native, self.out_tree, self.out_axes, self.size = native, out_tree, out_axes, size
        self.threads = ThreadPoolExecutor(max_workers=max(size - 1, 1), thread_name_prefix="srcjax-replica")
        self.lock = threading.Lock()  # (one call at a time: the threads are the replicas of one call)

    @staticmethod
    def build(pmapped: Pmapped, treedef: Any, example: list[Any], dynamic: list[bool], size: int
              ) -> _Replicated | None:
        from srcjax.codegen.cache import compile_function

        args, kwargs = tree_util.unflatten_containers(treedef, example)
        with collectives.named_axis(pmapped.axis_name, size) if pmapped.axis_name is not None else _nothing():
            ir, out_tree = trace_function(pmapped.fun, args, kwargs)
        if ir.captured or not any(op.prim.name in _COLLECTIVE_NAMES for op in walk(ir.body)):
            return None  # (no collectives: nothing to share, the batched call is one fused program)
        native = compile_function(ir, config.jax_compilation_cache_dir)
        if native is None or not native.plan.replicated:
            return None
        probe = tree_util.unflatten_containers(out_tree, list(range(len(ir.results))))
        out_axes = _broadcast_prefix(pmapped.out_axes, probe, "out_axes")
        return _Replicated(native, out_tree, out_axes, size)

    def run(self, leaves: list[Any], axes: list[Any]) -> Any:
        from srcjax.codegen.llvm import replicas  # (the code generator loads on first use)

        n, native = self.size, self.native
        values = [np.asarray(leaf) for leaf in leaves]
        shapes, dtypes = native.result_shapes, native.result_dtypes
        outs = [np.empty((n, *shape), dtype) for shape, dtype in zip(shapes, dtypes)]
        context = replicas.new_context(n)
        address = context.ctypes.data

        def replica(r: int) -> None:  # (indexing with an Ellipsis gives views, 0-d ones too, never scalars)
            inputs = [v if a is None else v[(slice(None),) * (a % v.ndim) + (r, Ellipsis)]
                      for v, a in zip(values, axes)]
            native.run_replica(inputs, tuple(o[r, ...] for o in outs), np.array([address, r], np.int64))

        with self.lock:
            others = [self.threads.submit(replica, r) for r in range(1, n)]
            try:
                replica(0)
            finally:
                for job in others:
                    job.result()
        results = []
        for out, axis, aval in zip(outs, self.out_axes, native.fn.results):
            if axis is None:
                value = out[0]
            else:
                value = np.moveaxis(out, 0, axis % out.ndim) if axis % out.ndim else out
            results.append(Array(np.ascontiguousarray(value), aval.aval.weak_type))
        del context
        return tree_util.tree_unflatten(self.out_tree, results)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


_COLLECTIVE_NAMES = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "axis_index", "psum_scatter"})
