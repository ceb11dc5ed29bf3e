"""``pmap`` over GPUs: one replica of the function per GPU, each run on a thread of its own by the GPU evaluator
(``gpu_eval.py``: compiled runs of kernels between interpreted ops), the collectives over the pmap's axis through
NCCL (``nccl.py``: one communicator per GPU, made together once for a set of GPUs).

On each replica:
- ``psum``, ``pmax`` and ``pmin`` are NCCL all-reduces; ``pmean`` is an all-reduce and a division by the
  number of replicas, as the batched rule divides;
- ``all_gather`` is an all-gather, ``psum_scatter`` a reduce-scatter (the scatter axis moved first), and
  ``axis_index`` the replica's index;
- ``all_to_all``, ``ppermute``, and the reductions of types NCCL does not reduce (bool, int16, complex) gather
  every replica's operand as bytes, apply the collective's own batching rule (``vmap`` over the axis) to the
  gathered values and keep this replica's part: the values the batched ``pmap`` computes.

The replicas' results are copied to the host and laid out over the devices as ``pmap``'s results are. Under
the host emulation (``SRCJAX_GPU=emulate:N``) the communicators are ``emulated.EmulatedClique``'s, so CI runs
all of this on emulated GPUs.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from srcjax.runtime import gpu, tree_util
from srcjax.runtime.array import Array
from srcjax.runtime.vmap import _broadcast_prefix
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.ir import Op, walk
from srcjax.transpiler.primitives import collectives as coll
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.simplify import without_calls

# the types NCCL reduces (``nccl._DTYPES`` less bool, which NCCL would add as bytes)
_REDUCIBLE = frozenset({"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64",
                        "bfloat16"})
_ALL_REDUCE = {"psum": "sum", "pmean": "sum", "pmax": "max", "pmin": "min"}
COLLECTIVES = frozenset({*_ALL_REDUCE, "all_gather", "psum_scatter", "axis_index", "all_to_all", "ppermute"})

_cliques: dict[tuple[int, ...], list[Any]] = {}
_cliques_lock = threading.Lock()
_clique_locks: dict[tuple[int, ...], threading.Lock] = {}


def clique_lock(devices: Sequence[Any]) -> threading.Lock:
    """Held while a pmap's replicas run on ``devices``: the communicators serve one pmap call at a time (two
    calls' collectives from two threads would meet each other's)."""
    key = tuple(d.id for d in devices)
    with _cliques_lock:
        return _clique_locks.setdefault(key, threading.Lock())


def communicators(devices: Sequence[Any]) -> list[Any]:
    """One communicator per GPU of ``devices``, rank ``i`` on ``devices[i]`` (made once per set of GPUs)."""
    key = tuple(d.id for d in devices)
    with _cliques_lock:
        if key not in _cliques:
            if gpu._emulated():
                from srcjax.codegen.ptx.emulated import EmulatedClique

                _cliques[key] = EmulatedClique(len(key)).comms
            else:
                from srcjax.runtime import nccl

                _cliques[key] = nccl.within_process(list(key))
        return _cliques[key]


def _abandon(devices: Sequence[Any]) -> None:
    """A replica failed: abort the communicators (the others may wait in a collective for it) and make new ones
    next time."""
    with _cliques_lock:
        comms = _cliques.pop(tuple(d.id for d in devices), [])
    for comm in comms:
        try:
            comm.abort()
        except Exception:  # (already broken)
            pass


class GpuReplicas:
    """A pmap's program for one replica, traced with its axis named, run on each GPU of ``devices``."""

    def __init__(self, ir: Any, out_tree: Any, out_axes: list[Any], devices: list[Any], axis_name: Any):
        from srcjax.runtime.gpu_eval import SegmentedProgram

        self.ir, self.out_tree, self.out_axes, self.devices, self.axis_name = ir, out_tree, out_axes, devices, axis_name
        self.programs = [SegmentedProgram(ir, device) for device in devices]
        self.threads = ThreadPoolExecutor(max_workers=max(len(devices) - 1, 1), thread_name_prefix="srcjax-gpu")
        self.lock_failures = threading.Lock()

    @staticmethod
    def build(pmapped: Any, treedef: Any, example: list[Any], dynamic: list[bool], devices: list[Any]
              ) -> GpuReplicas | None:
        """The replicas, or None where the pmap runs batched instead: where a collective sits inside control
        flow, whose branch or trip count may differ between replicas (one replica waiting in a collective
        the others never reach would wait forever; the batched call gives every example its value)."""
        args, kwargs = tree_util.unflatten_containers(treedef, example)
        if pmapped.axis_name is not None:
            with coll.named_axis(pmapped.axis_name, len(devices)):
                ir, out_tree = trace_function(pmapped.fun, args, kwargs)
        else:
            ir, out_tree = trace_function(pmapped.fun, args, kwargs)
        if any(o.name in COLLECTIVES for op in without_calls(ir).body.ops for region in op.regions
               for o in walk(region)):
            return None
        probe = tree_util.unflatten_containers(out_tree, list(range(len(ir.results))))
        out_axes = _broadcast_prefix(pmapped.out_axes, probe, "out_axes")
        return GpuReplicas(ir, out_tree, out_axes, devices, pmapped.axis_name)

    def run(self, leaves: list[Any], axes: list[Any]) -> Any:
        n, params = len(self.devices), self.ir.params
        values = [np.asarray(leaf) for leaf in leaves]
        comms: list[Any] = []
        outs: list[list[np.ndarray] | None] = [None] * n

        failures: list[BaseException] = []  # (the first is the cause: the others broke off waiting for it)

        def replica(r: int) -> None:
            try:
                run(r)
            except BaseException as error:
                with self.lock_failures:
                    failures.append(error)
                    if len(failures) == 1:
                        _abandon(self.devices)
                raise

        def run(r: int) -> None:
            device = self.devices[r]
            inputs = [gpu.put(np.asarray(v if a is None else v[(slice(None),) * (a % v.ndim) + (r, Ellipsis)],
                                         p.aval.dtype), p.aval.weak_type, device)
                      for v, a, p in zip(values, axes, params)]
            handler = _Collectives(comms[r], r, n, self.axis_name, device)
            results = self.programs[r].run(inputs, collectives=handler)
            outs[r] = [np.asarray(out) for out in results]  # (waits for the replica's stream)

        with clique_lock(self.devices):  # (one call at a time on these GPUs: the threads are its replicas)
            comms = communicators(self.devices)
            others = [self.threads.submit(replica, r) for r in range(1, n)]
            try:
                replica(0)
            except BaseException:
                pass
            for job in others:
                job.exception()
            if failures:
                raise failures[0]
        results = []
        for k, (axis, result) in enumerate(zip(self.out_axes, self.ir.results)):
            parts = [out[k] for out in outs if out is not None]
            if axis is None:  # (an unmapped result is the first device's, unchecked, as JAX's and the batched pmap's)
                value = parts[0]
            else:
                stacked = np.stack(parts)
                value = np.moveaxis(stacked, 0, axis % stacked.ndim) if axis % stacked.ndim else stacked
            results.append(Array(np.ascontiguousarray(value), result.aval.weak_type))
        return tree_util.tree_unflatten(self.out_tree, results)


class _Collectives:
    """Replica ``rank``'s collectives over ``axis_name``, on its GPU, through its communicator."""

    def __init__(self, comm: Any, rank: int, size: int, axis_name: Any, device: Any):
        self.comm, self.rank, self.size, self.axis_name, self.device = comm, rank, size, axis_name, device
        driver = device.driver()
        stream = getattr(driver, "stream", None)
        self.stream = (stream.value or 0) if stream is not None else 0

    def __call__(self, op: Op, operands: list[Any]) -> list[Any] | None:
        """The op's results, or None where it is not a collective over this pmap's axis alone (the evaluator
        then binds it as usual)."""
        axes = op.params.get("axes", (op.params.get("axis_name"),))
        if op.name not in COLLECTIVES or tuple(axes) != (self.axis_name,):
            return None
        if op.name == "axis_index":
            return [gpu.put(np.array(self.rank, np.int32), False, self.device)]
        (x,) = operands
        aval, result = op.operands[0].aval, op.results[0].aval
        dtype = np.dtype(aval.dtype)
        native = dtype.name in _REDUCIBLE and aval.size > 0
        if op.name in _ALL_REDUCE and native:
            out = self._empty(result)
            self.comm.all_reduce(self._memory(x, aval).pointer, out.pointer, aval.size, dtype, _ALL_REDUCE[op.name],
                                 self.stream)
            value = gpu._array(self.device, out, result)
            if op.name == "pmean":  # (as the batched rule: the sum, divided in its own type)
                value = ew.div_p.bind(value, coll._full_like(value, self.size))
            return [value]
        if op.name == "all_gather":
            return [self._gathered(x, aval)]
        if op.name == "psum_scatter" and native:
            return [self._reduce_scatter(x, aval, result, op.params)]
        return [self._by_batching_rule(op, self._gathered(x, aval))]

    def _empty(self, aval: Any) -> Any:
        return self.device.driver().allocator.allocate(aval.size * np.dtype(aval.dtype).itemsize)

    def _memory(self, x: Any, aval: Any) -> Any:
        return gpu._memory(x, np.dtype(aval.dtype), self.device)

    def _gathered(self, x: Any, aval: Any) -> Any:
        """Every replica's ``x``, stacked along a new axis 0 (gathered as bytes: any type)."""
        nbytes = aval.size * np.dtype(aval.dtype).itemsize
        stacked = aval.update(shape=(self.size, *aval.shape))
        out = self._empty(stacked)
        if nbytes:
            self.comm.all_gather(self._memory(x, aval).pointer, out.pointer, nbytes, np.uint8, self.stream)
        return gpu._array(self.device, out, stacked)

    def _reduce_scatter(self, x: Any, aval: Any, result: Any, params: dict) -> Any:
        """The sum over the replicas, of which this replica keeps its part along the scatter axis (moved first,
        so that the parts are NCCL's contiguous blocks)."""
        from srcjax.transpiler.primitives.batching import moveaxis

        d = params["scatter_dimension"]
        first = moveaxis(x, d, 0) if d else x
        moved = aval.update(shape=(aval.shape[d], *aval.shape[:d], *aval.shape[d + 1:]))
        count = aval.size // self.size
        out = self._empty(result)
        self.comm.reduce_scatter(self._memory(first, moved).pointer, out.pointer, count, np.dtype(aval.dtype), "sum",
                                 self.stream)
        if not params["tiled"] or not d:  # (untiled: the scatter axis is gone, the rest keep their order)
            return gpu._array(self.device, out, result)
        part = result.update(shape=(result.shape[d], *result.shape[:d], *result.shape[d + 1:]))
        return moveaxis(gpu._array(self.device, out, part), 0, d)

    def _by_batching_rule(self, op: Op, gathered: Any) -> Any:
        """The collective as the batched pmap computes it (its batching rule over the gathered operands): this
        replica's row."""
        from srcjax.runtime.vmap import vmap

        everyone = vmap(lambda v: op.prim.bind(v, **op.params), axis_name=self.axis_name)(gathered)
        return everyone[self.rank]
