"""``pmap``: a function mapped over the leading axis of its arguments, one replica per device, with collectives
(``psum``, ``all_gather``, ...) over the named axis.

Called on arrays, a ``pmap`` is compiled once per signature. The function is read for one replica with the axis
named (``collectives.named_axis``). When that program has collectives and compiles natively, it can run as one
replica per device, each on a thread of its own, the collectives meeting in shared memory
(codegen/llvm/replicas.py), unless a branch or loop holding a collective may go differently on different replicas
(``_same_collectives``). Otherwise it runs as the ``vmap`` of the function over the named axis, one compiled
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
from srcjax.runtime.api import _is_dynamic, _native_enabled, abstractify, configure_caches, jit
from srcjax.runtime.array import Array
from srcjax.runtime.config import config
from srcjax.runtime.sharding import PMAP_AXIS, NamedSharding, PartitionSpec, pmap_sharding
from srcjax.runtime.vmap import _broadcast_prefix, _leaf_names, _type_text, vmap
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, walk
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
    for what, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        if not all(type(a) is int for a in tree_util.tree_leaves(axes)):
            raise TypeError(f"pmap {what} must be an int, None, or (nested) container with those types as leaves, "
                            f"but got {axes}.")
    both = sorted(set(_ints(static_broadcasted_argnums)) & set(_ints(donate_argnums)))
    if both:
        raise ValueError(f"pmap: arguments {both} are both static (static_broadcasted_argnums) and donated "
                         "(donate_argnums): static arguments cannot be donated")
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
                    axis_size=size, _processes=device_api.process_count(), _devices=True, _unmapped_first=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if core.current_interpreter() is not core.base_interpreter():
            # inside a transformation or a compiled function: the mapped function itself
            return self._mapped(len(args), self.axis_size)(*args, **kwargs)
        size = self._size(args, kwargs)
        placed = self._placed(size)
        if kwargs:  # (keyword arguments are mapped over their axis 0, as JAX maps them; the batched call takes them)
            out = _BATCHED
        elif not _on_gpus(placed):
            out = self._replicas(args, size)
        else:
            mode = os.environ.get("SRCJAX_PMAP", "auto")
            replicas = (size > 1 or mode == "replicas") and mode != "batched" and _native_enabled() \
                and device_api.process_count() == 1 and not _checked()
            # (otherwise, one GPU among them runs the batched call)
            out = self._gpu_replicas(args, placed) if replicas else _BATCHED
        if out is _BATCHED:
            out = self._batched(len(args), size)(*args, **kwargs)
        return self._place(out, placed, {id(leaf) for leaf in tree_util.tree_leaves((args, kwargs))})

    def lower(self, *args: Any, **kwargs: Any) -> _Lowered:
        """``pmap(f).lower(*args)`` (JAX's ``Lowered``): the batched program's; its ``compile()`` is called with the
        non-static arguments and lays its results out over the devices, as the pmap's."""
        size = self._size(args, kwargs)
        placed = self._placed(size)

        def place(out: Any, inputs: Any) -> Any:
            return self._place(out, placed, {id(leaf) for leaf in tree_util.tree_leaves(inputs)})

        return _Lowered(self._batched(len(args), size).lower(*args, **kwargs), place)

    def _placed(self, size: int) -> list[Any]:
        """The devices ``size`` replicas run on."""
        available = list(self.devices) if self.devices is not None else device_api.local_devices(backend=self.backend)
        if size > len(available):
            raise ValueError(f"compiling computation that requires {size} logical devices, but only "
                             f"{len(available)} XLA devices are available (num_replicas={size})")
        return available[:size]

    def _batched(self, n_args: int, size: int) -> Callable:
        """The jitted ``vmap`` of the function over the devices."""
        call = self._compiled.get((n_args, size))
        if call is None:
            static = tuple(i % n_args for i in self.static)
            call = self._compiled[(n_args, size)] = jit(self._mapped(n_args, size), static_argnums=static,
                                                        donate_argnums=self.donate)
        return call

    # -- replicas on threads ------------------------------------------------------------------------------------------
    def _replicas(self, args: Sequence[Any], size: int) -> Any:
        """The results of running one native replica per device, or ``_BATCHED`` when this call runs batched."""
        mode = os.environ.get("SRCJAX_PMAP", "auto")
        if mode == "batched" or not _native_enabled() or self.donate or device_api.process_count() > 1 \
                or _checked():
            return _BATCHED
        if mode == "auto":  # threads of their own pay off only with a core each and enough work to share
            work = sum(int(np.size(leaf)) for leaf in tree_util.tree_leaves(args))
            if size > _usable_cores() or work < REPLICA_MIN_WORK:
                return _BATCHED
        leaves, treedef, leaf_axes, dynamic, example, key = self._signature(args, size)
        spmd = self._spmd.get(key)
        if spmd is None:
            spmd = self._spmd[key] = _Replicated.build(self, treedef, example, dynamic, size,
                                                       [a is not None for a, d in zip(leaf_axes, dynamic) if d])
        if spmd is None:
            return _BATCHED
        return spmd.run([leaf for leaf, d in zip(leaves, dynamic) if d],
                        [a for a, d in zip(leaf_axes, dynamic) if d])

    def _signature(self, args: Sequence[Any], size: int) -> tuple:
        """The arguments' leaves, their tree, mapped axes and dynamism, one replica's example of them, and the
        key its program is kept under."""
        axes = self._axes(len(args))
        static = {i % len(args) for i in self.static}  # (a static argument is one leaf, a Python value to the trace)
        args = [_Static(a) if i in static else a for i, a in enumerate(args)]
        leaves, treedef = tree_util.tree_flatten((args, {}))
        leaf_axes = _broadcast_prefix(axes, tuple(args), "in_axes")
        dynamic = [not isinstance(leaf, _Static) and _is_dynamic(leaf) for leaf in leaves]
        leaves = [leaf.value if isinstance(leaf, _Static) else leaf for leaf in leaves]
        example = [_drop_axis(abstractify(leaf), a) if d and a is not None else abstractify(leaf) if d else leaf
                   for leaf, a, d in zip(leaves, leaf_axes, dynamic)]
        # (static values keyed by type too, as jit keys them: 1, 1.0 and True are equal but trace apart)
        key = (treedef, tuple(t if d else ("static", type(t), _hashable(t)) for t, d in zip(example, dynamic)),
               tuple(leaf_axes), size, config.trace_state())  # (the flags a trace reads, as jit's key has them)
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
        sizes: dict[int, list[int]] = {}  # size -> the leaves mapped along an axis of that size
        for i, (leaf, axis) in enumerate(zip(leaves, leaf_axes + [0] * (len(leaves) - len(leaf_axes)))):
            if axis is None:
                continue
            shape = getattr(leaf, "shape", () if isinstance(leaf, (bool, int, float, complex)) else None)
            if shape is None:
                raise ValueError(f"pmap can map only arrays, but {_leaf_names(self.fun, args, kwargs)[i]} is a "
                                 f"{type(leaf).__name__} (give it in_axes None, or make it static)")
            if not -len(shape) <= axis < len(shape):
                raise ValueError(f"pmap was requested to map its argument along axis {axis}, which implies that its "
                                 f"rank should be at least {axis + 1 if axis >= 0 else -axis}, but "
                                 f"{_leaf_names(self.fun, args, kwargs)[i]} has rank {len(shape)} (its shape is "
                                 f"{tuple(shape)})")
            sizes.setdefault(shape[axis], []).append(i)
        if len(sizes) > 1:
            names = _leaf_names(self.fun, args, kwargs)
            detail = ";\n".join(f"  * one axis had size {size}: axis {leaf_axes[i] if i < len(leaf_axes) else 0} "
                                 f"of {names[i]} of type {_type_text(leaves[i])}"
                                 for size, found in sizes.items() for i in found)
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped:\n{detail}")
        if not sizes:
            if self.axis_size is None:
                raise ValueError("pmap requires at least one argument with a mapped axis, or axis_size")
            return int(self.axis_size)
        size = next(iter(sizes))
        if self.axis_size is not None and size != self.axis_size:
            raise ValueError(f"Specified axis_size {self.axis_size} doesn't match received axis_size {size}.")
        return size

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


def _checked() -> bool:
    """Whether calls run through jit's checked paths (NaN and inf checks, jit disabled): the batched call takes them."""
    return config.jax_debug_nans or config.jax_debug_infs or config.jax_disable_jit


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


class _Lowered:
    """``pmap(f).lower(...)``: the batched call's ``Lowered``, whose ``compile()`` places its results."""

    def __init__(self, lowered: Any, place: Callable[[Any, Any], Any]):
        self._lowered, self._place = lowered, place

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lowered, name)

    def compile(self) -> _Compiled:
        return _Compiled(self._lowered.compile(), self._place)


class _Compiled:
    """``pmap(f).lower(...).compile()``: called with the non-static arguments; the results laid out over the
    devices."""

    def __init__(self, compiled: Any, place: Callable[[Any, Any], Any]):
        self._compiled, self._place = compiled, place

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._place(self._compiled(*args, **kwargs), (args, kwargs))


class _Static:
    """A static argument of a pmap: a leaf whatever its tree (its value goes to the trace as it is)."""

    def __init__(self, value: Any):
        self.value = value


class _Replicated:
    """A pmap's program for one replica, compiled natively with its collectives, and threads to run the replicas
    on (the caller runs replica 0)."""

    def __init__(self, native: Any, out_tree: Any, out_axes: list[Any], size: int):
        self.native, self.out_tree, self.out_axes, self.size = native, out_tree, out_axes, size
        self.threads = ThreadPoolExecutor(max_workers=max(size - 1, 1), thread_name_prefix="srcjax-replica")
        self.lock = threading.Lock()  # (one call at a time: the threads are the replicas of one call)

    @staticmethod
    def build(pmapped: Pmapped, treedef: Any, example: list[Any], dynamic: list[bool], size: int,
              mapped: list[bool]) -> _Replicated | None:
        """The replicas, or None where the pmap runs batched: without collectives, or where a branch or loop
        holding one may go differently on different replicas (``_same_collectives``)."""
        from srcjax.codegen.cache import compile_function

        args, kwargs = tree_util.unflatten_containers(treedef, example)
        with collectives.named_axis(pmapped.axis_name, size) if pmapped.axis_name is not None else _nothing():
            ir, out_tree = trace_function(pmapped.fun, args, kwargs)
        if ir.captured or not any(op.prim.name in _COLLECTIVE_NAMES for op in walk(ir.body)):
            return None  # (no collectives: nothing to share, the batched call is one fused program)
        if not _same_collectives(ir, mapped):
            return None
        configure_caches()
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


# collectives whose result is the same on every replica (the others: ppermute, psum_scatter, all_to_all, axis_index)
_UNIFORM_RESULTS = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather"})


def _same_collectives(fn: Function, mapped: list[bool]) -> bool:
    """Whether every replica of ``fn`` meets the same collectives in the same order: each branch taken and trip
    count of a control op holding one is decided by values the same on every replica (unmapped arguments,
    constants, the results of reductions over the axis). Elsewhere replicas could wait in a collective the
    others never reach, or meet another one and combine unrelated values, where the batched call gives each
    example its own (the batching rules' meaning)."""
    same: dict[int, bool] = {id(p): not m for p, m in zip(fn.params, mapped)} if len(mapped) == len(fn.params) \
        else {}
    same.update((id(v), True) for v, _ in fn.consts)
    collective = _COLLECTIVE_NAMES | {"ppermute", "all_to_all"}

    def uniform(v: Value) -> bool:
        return isinstance(v, Literal) or same.get(id(v), False)

    def holds_collective(op: Op) -> bool:
        return any(o.prim.name in collective for region in op.regions for o in walk(region))

    def block(b: Block, params: list[bool]) -> list[bool] | None:  # its results' uniformity (None: unsafe)
        same.update((id(p), f) for p, f in zip(b.params, params))
        if not all(visit(op) for op in b.ops):
            return None
        return [uniform(r) for r in b.results]

    def loop(op: Op, carried: list[Value], before: list[bool], after: list[bool], trips: Callable[[list], bool]
             ) -> bool:
        """A loop's carried values are uniform where they enter so and every trip keeps them so; its regions'
        parameters are ``before``, the carried values, ``after``; the last region yields the carried values
        first."""
        flags = [uniform(v) for v in carried]
        while True:
            outs = [block(region, (before + flags + after)[:len(region.params)]) for region in op.regions]
            if any(out is None for out in outs):
                return False
            new = [f and y for f, y in zip(flags, outs[-1])]
            if new == flags:
                break
            flags = new
        if not trips(outs) and holds_collective(op):
            return False
        same.update((id(r), f and trips(outs)) for r, f in zip(op.results, flags + outs[-1][len(flags):]))
        return True

    def visit(op: Op) -> bool:
        name = op.prim.name
        if name == "cond":
            if not uniform(op.operands[0]):
                same.update((id(r), False) for r in op.results)
                return not holds_collective(op)
            outs = [block(region, []) for region in op.regions]
            if any(out is None for out in outs):
                return False
            same.update((id(r), all(out[i] for out in outs)) for i, r in enumerate(op.results))
            return True
        if name == "while":  # (regions: the condition, then the body)
            return loop(op, op.operands, [], [], lambda outs: outs[0][0])
        if name == "for":  # (operands: the trip count, then the carried values; the body's first parameter is i)
            count = uniform(op.operands[0])
            return loop(op, op.operands[1:], [count], [], lambda outs: count)
        if name == "scan":  # (a fixed trip count; operands: the carried values, then the sliced ones)
            n = op.params["num_carry"]
            return loop(op, op.operands[:n], [], [uniform(x) for x in op.operands[n:]], lambda outs: True)
        if op.regions:  # (custom derivatives, checkpoints: run once, their parameters taken as varying)
            if any(block(region, [False] * len(region.params)) is None for region in op.regions):
                return False
            same.update((id(r), False) for r in op.results)
            return True
        value = name in _UNIFORM_RESULTS or name not in collective and all(uniform(v) for v in op.operands)
        same.update((id(r), value) for r in op.results)
        return True

    return block(fn.body, [uniform(p) for p in fn.params]) is not None


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


_COLLECTIVE_NAMES = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "axis_index", "psum_scatter"})
