"""Several processes as one program: ``srcjax.distributed.initialize`` and the MPI engine under their collectives.

Each process owns its ``jax_num_cpu_devices`` local devices; ``devices()`` lists every process's, process by
process (device ``id`` = ``process_index * local_device_count + local id``). A ``pmap`` maps over the local
devices, and its collectives span the devices of every process: within a process they are the batched or
replicated forms they always are, and across processes each is one call of MPI's own collective on the
NumPy buffers (``Allreduce``, ``Allgather``, ``Reduce_scatter_block``, ``Alltoall``, ``Sendrecv``), never a
pickled Python object.

The processes are MPI's: started by ``mpiexec -n N python prog.py`` (MPICH or Open MPI, from the ``mpi``
extra), every process calls ``initialize()`` and finds its rank and the number of processes in MPI's world.
Explicit ``coordinator_address``/``num_processes``/``process_id`` arguments are checked against that world;
processes started without ``mpiexec`` cannot meet (a difference from JAX, whose coordinator service starts
them: see the README).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from srcjax.transpiler.primitives import processes


@dataclass(frozen=True)
class _World:
    index: int  # this process's rank
    count: int  # the number of processes
    engine: Any  # the engine collectives across processes run on


_state: _World | None = None

# variables an MPI launcher sets in each process it starts (MPICH/Hydra and PMIx, Open MPI, Slurm's srun)
_LAUNCHER_VARIABLES = ("PMI_SIZE", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: Any = None, cluster_detection_method: str | None = None,
               initialization_timeout: int = 300, coordinator_bind_address: str | None = None, **_ignored: Any) -> None:
    """Join this process to the others of the program (JAX's ``jax.distributed.initialize``).

    With no arguments, the processes are those an MPI launcher started (``mpiexec -n N``). With
    ``num_processes=1`` (and no launcher) the program is this process alone."""
    global _state
    if _state is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    if cluster_detection_method not in (None, "mpi4py", "deactivate"):
        raise ValueError(f"distributed.initialize: cluster_detection_method={cluster_detection_method!r} is not "
                         "supported (srcjax's processes are MPI's: None or 'mpi4py')")
    if local_device_ids is not None:
        raise ValueError("distributed.initialize: local_device_ids selects GPUs, and this build has CPU devices only "
                         "(set jax_num_cpu_devices for the number of local CPU devices)")
    launched = cluster_detection_method == "mpi4py" or any(v in os.environ for v in _LAUNCHER_VARIABLES)
    if not launched:
        if num_processes == 1 and process_id in (None, 0):
            _state = _World(0, 1, None)
            return
        if coordinator_address is None:
            raise ValueError("coordinator_address should be defined.")
        raise RuntimeError(
            f"distributed.initialize: this process was not started by an MPI launcher, so it cannot meet the other "
            f"{'' if num_processes is None else num_processes - 1} processes at {coordinator_address}: start all of "
            f"them with `mpiexec -n {num_processes or 'N'} python ...` (srcjax's processes meet through MPI; "
            "pip install 'srcjax[mpi]' gives mpiexec)")
    engine = MpiEngine()
    rank, size = engine.rank, engine.size
    if num_processes is not None and num_processes != size:
        raise ValueError(f"distributed.initialize: num_processes={num_processes}, but MPI started {size} processes")
    if process_id is not None and process_id != rank:
        raise ValueError(f"distributed.initialize: process_id={process_id}, but MPI gave this process rank {rank} "
                         "(the process ids are MPI's ranks)")
    _state = _World(rank, size, engine)
    processes.use_engine(engine if size > 1 else None, rank, size)


def shutdown() -> None:
    """Leave the program: collectives across processes are no longer possible (MPI itself ends at exit)."""
    global _state
    if _state is not None and _state.engine is not None:
        _state.engine.barrier()
    _state = None
    processes.use_engine(None, 0, 1)


def is_initialized() -> bool:
    return _state is not None


def process_index() -> int:
    return 0 if _state is None else _state.index


def process_count() -> int:
    return 1 if _state is None else _state.count


class MpiEngine:
    """Collectives across processes as MPI calls on NumPy buffers (mpi4py's buffer interface: no pickling).

    Every process must make the same calls in the same order, as with MPI itself: a pmap's program is the same
    in every process and runs its collectives in program order."""

    def __init__(self):
        try:
            from mpi4py import MPI
        except ImportError as error:
            raise RuntimeError("distributed.initialize needs mpi4py and an MPI library: "
                               "pip install 'srcjax[mpi]' (mpi4py with MPICH's wheel)") from error
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()  # (a communicator of our own: the program's MPI traffic stays its own)
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self._ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}

    def barrier(self) -> None:
        self.comm.Barrier()

    def allreduce(self, x: np.ndarray, op: str, out: np.ndarray | None = None) -> np.ndarray:
        """The elementwise ``op`` (sum, max, min) of every process's ``x`` (into ``out``, a C-contiguous array of
        ``x``'s shape and dtype, when given)."""
        if x.dtype.itemsize == 2 and x.dtype.kind == "f" or x.dtype.name == "bfloat16":
            wide = self.allreduce(x.astype(np.float32), op).astype(x.dtype)  # (MPI has no half-precision sums)
            return wide if out is None else np.copyto(out, wide) or out
        x = np.ascontiguousarray(x)
        if out is None or not out.flags.c_contiguous:
            result = np.empty_like(x)
            self.comm.Allreduce(_buffer(x), _buffer(result), op=self._ops[op])
            return result if out is None else np.copyto(out, result) or out
        if np.shares_memory(x, out):  # (MPI forbids aliased buffers: the result replaces x where it lies)
            np.copyto(out, x)
            self.comm.Allreduce(self.MPI.IN_PLACE, _buffer(out), op=self._ops[op])
        else:
            self.comm.Allreduce(_buffer(x), _buffer(out), op=self._ops[op])
        return out

    def allgather(self, x: np.ndarray) -> np.ndarray:
        """Every process's ``x`` stacked along a new leading axis, in process order."""
        x = np.ascontiguousarray(x)
        out = np.empty((self.size, *x.shape), x.dtype)
        self.comm.Allgather(_buffer(x), _buffer(out))
        return out

    def reduce_scatter(self, x: np.ndarray) -> np.ndarray:
        """``x`` (leading axis: one block per process) summed over the processes; this process's block."""
        if x.dtype.itemsize == 2 and x.dtype.kind == "f" or x.dtype.name == "bfloat16":
            return self.reduce_scatter(x.astype(np.float32)).astype(x.dtype)
        x = np.ascontiguousarray(x)
        out = np.empty(x.shape[1:], x.dtype)
        self.comm.Reduce_scatter_block(_buffer(x), _buffer(out), op=self.MPI.SUM)
        return out

    def alltoall(self, x: np.ndarray) -> np.ndarray:
        """Block ``j`` of ``x`` (leading axis: one per process) sent to process ``j``; received blocks stacked in
        process order."""
        x = np.ascontiguousarray(x)
        out = np.empty_like(x)
        self.comm.Alltoall(_buffer(x), _buffer(out))
        return out

    def exchange(self, x: np.ndarray, out: np.ndarray, sends: list[tuple[int, int, int]],
                 receives: list[tuple[int, int, int]]) -> None:
        """Point to point, all at once: ``x[row]`` to row ``to`` of ``process`` for each ``(row, process, to)`` of
        ``sends``; row ``to`` of ``out`` from row ``row`` of ``process`` for each ``(process, row, to)`` of
        ``receives`` (``x`` and ``out`` C-contiguous, rows of the same shape)."""
        rows = x.shape[0]
        requests = [self.comm.Irecv(_buffer(out[to]), source=process, tag=row * rows + to)
                    for process, row, to in receives]
        requests += [self.comm.Isend(_buffer(x[row]), dest=process, tag=row * rows + to) for row, process, to in sends]
        self.MPI.Request.Waitall(requests)


def _buffer(x: np.ndarray) -> Any:
    """``x`` as a buffer MPI can type: booleans travel as bytes, complex numbers as pairs of reals."""
    if x.dtype == np.bool_:
        return x.view(np.uint8)
    if x.dtype.kind == "c":
        return x.view(np.float32 if x.dtype == np.complex64 else np.float64)
    if x.dtype.name == "bfloat16" or x.dtype == np.float16:
        return x.view(np.uint16)  # (only for moving: reductions widen them first)
    return x
