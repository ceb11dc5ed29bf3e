"""NCCL, the engine for collectives across GPUs: ctypes on ``libnccl.so.2`` from the ``nvidia-nccl-cu13`` wheel.

This is the communicator set-up and the collectives on device buffers (addresses of GPU memory, as the GPU
backend's arrays hold them): one process per GPU, or several GPUs driven from one process inside
``group()``. The processes agree on a communicator by one of them drawing a unique id and the others
receiving it, over MPI (``over_mpi``), as NCCL's own examples do.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import sys
from typing import Any, Iterator

import numpy as np

# ncclDataType_t and ncclRedOp_t (nccl.h)
_DTYPES = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "float16": 6, "float32": 7,
           "float64": 8, "bfloat16": 9, "bool": 1}
_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
UNIQUE_ID_BYTES = 128  # sizeof(ncclUniqueId)


class NcclError(RuntimeError):
    """An NCCL call failed: the call, NCCL's name for the error and its last message."""


def library_path() -> str | None:
    """``libnccl.so.2`` of the ``nvidia-nccl-cu13`` wheel on ``sys.path``, else the one ``SRCJAX_NCCL`` names, else
    None."""
    if os.environ.get("SRCJAX_NCCL"):
        return os.environ["SRCJAX_NCCL"]
    for entry in sys.path:
        found = glob.glob(os.path.join(entry or ".", "nvidia", "nccl", "lib", "libnccl.so.2"))
        if found:
            return found[0]
    return None


class Nccl:
    """The loaded library, its calls checked: a failed call raises ``NcclError``."""

    def __init__(self, path: str | None = None):
        path = path or library_path()
        if path is None:
            raise NcclError("NCCL is not installed: pip install nvidia-nccl-cu13 (or set SRCJAX_NCCL to the path of "
                            "libnccl.so.2)")
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as error:
            raise NcclError(f"cannot load NCCL from {path}: {error}") from error
        self.lib.ncclGetErrorString.restype = ctypes.c_char_p
        self.lib.ncclGetLastError.restype = ctypes.c_char_p
        self.path = path

    def call(self, name: str, *args: Any) -> None:
        result = getattr(self.lib, name)(*args)
        if result != 0:
            detail = self.lib.ncclGetLastError(None).decode(errors="replace")
            raise NcclError(f"{name} failed: {self.lib.ncclGetErrorString(result).decode()}"
                            + (f" ({detail})" if detail else ""))

    def version(self) -> tuple[int, int, int]:
        """(major, minor, patch): NCCL encodes 2.23.4 as 22304."""
        code = ctypes.c_int()
        self.call("ncclGetVersion", ctypes.byref(code))
        return code.value // 10000, code.value // 100 % 100, code.value % 100

    def unique_id(self) -> bytes:
        """A new communicator's id, drawn by one process and given to the others."""
        uid = (ctypes.c_char * UNIQUE_ID_BYTES)()
        self.call("ncclGetUniqueId", uid)
        return bytes(uid)

    @contextlib.contextmanager
    def group(self) -> Iterator[None]:
        """Calls made inside run as one (several GPUs from one thread, or sends paired with receives)."""
        self.call("ncclGroupStart")
        try:
            yield
        finally:
            self.call("ncclGroupEnd")


class Communicator:
    """Rank ``rank`` of ``size`` in the communicator ``unique_id`` names, on the current CUDA device (the caller
    selects it first). Buffers are device addresses; ``stream`` a CUDA stream (0: the default stream)."""

    def __init__(self, nccl: Nccl, unique_id: bytes | None, size: int, rank: int,
                 handle: ctypes.c_void_p | None = None):
        if not 0 <= rank < size:
            raise ValueError(f"rank {rank} is outside a communicator of {size}")
        self.nccl, self.size, self.rank = nccl, size, rank
        if handle is not None:  # (one of ``within_process``'s)
            self.handle = handle
            return
        if unique_id is None or len(unique_id) != UNIQUE_ID_BYTES:
            raise ValueError(f"an NCCL unique id has {UNIQUE_ID_BYTES} bytes, got {unique_id!r:.40}")
        self.handle = ctypes.c_void_p()
        uid = (ctypes.c_char * UNIQUE_ID_BYTES).from_buffer_copy(unique_id)
        nccl.call("ncclCommInitRank", ctypes.byref(self.handle), ctypes.c_int(size), uid, ctypes.c_int(rank))

    def all_reduce(self, send: int, recv: int, count: int, dtype: Any, op: str = "sum", stream: int = 0) -> None:
        self.nccl.call("ncclAllReduce", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                       _dtype(dtype), ctypes.c_int(_OPS[op]), self.handle, ctypes.c_void_p(stream))

    def all_gather(self, send: int, recv: int, count: int, dtype: Any, stream: int = 0) -> None:
        """``count`` elements from each rank, gathered in rank order into ``recv`` (``size * count`` elements)."""
        self.nccl.call("ncclAllGather", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                       _dtype(dtype), self.handle, ctypes.c_void_p(stream))

    def reduce_scatter(self, send: int, recv: int, count: int, dtype: Any, op: str = "sum", stream: int = 0) -> None:
        """``send`` (``size * count`` elements) reduced over the ranks; this rank's block of ``count`` into ``recv``."""
        self.nccl.call("ncclReduceScatter", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                       _dtype(dtype), ctypes.c_int(_OPS[op]), self.handle, ctypes.c_void_p(stream))

    def broadcast(self, send: int, recv: int, count: int, dtype: Any, root: int = 0, stream: int = 0) -> None:
        self.nccl.call("ncclBroadcast", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                       _dtype(dtype), ctypes.c_int(root), self.handle, ctypes.c_void_p(stream))

    def sendrecv(self, send: int, recv: int, count: int, dtype: Any, dest: int | None, source: int | None,
                 stream: int = 0) -> None:
        """Send to ``dest`` while receiving from ``source`` (a ``ppermute`` step), as one group."""
        with self.nccl.group():
            if dest is not None:
                self.nccl.call("ncclSend", ctypes.c_void_p(send), ctypes.c_size_t(count), _dtype(dtype),
                               ctypes.c_int(dest), self.handle, ctypes.c_void_p(stream))
            if source is not None:
                self.nccl.call("ncclRecv", ctypes.c_void_p(recv), ctypes.c_size_t(count), _dtype(dtype),
                               ctypes.c_int(source), self.handle, ctypes.c_void_p(stream))

    def close(self) -> None:
        if self.handle:
            self.nccl.call("ncclCommDestroy", self.handle)
            self.handle = ctypes.c_void_p()

    def abort(self) -> None:
        """Give up the communicator (a replica failed: the others' collectives would wait for it forever)."""
        if self.handle:
            self.nccl.lib.ncclCommAbort(self.handle)
            self.handle = ctypes.c_void_p()


def within_process(ordinals: list[int], nccl: Nccl | None = None) -> list[Communicator]:
    """One communicator per GPU of this process (CUDA ordinals ``ordinals``), rank ``i`` on ``ordinals[i]``: the
    replicas of a pmap over GPUs, one thread each."""
    nccl = nccl or Nccl()
    handles = (ctypes.c_void_p * len(ordinals))()
    devices = (ctypes.c_int * len(ordinals))(*ordinals)
    nccl.call("ncclCommInitAll", handles, ctypes.c_int(len(ordinals)), devices)
    return [Communicator(nccl, None, len(ordinals), rank, ctypes.c_void_p(handles[rank]))
            for rank in range(len(ordinals))]


def shared_unique_id(engine: Any, nccl: Nccl) -> bytes:
    """The id rank 0 of an MPI engine (``distributed.MpiEngine``) draws, broadcast to every process."""
    uid = np.frombuffer(nccl.unique_id(), np.uint8).copy() if engine.rank == 0 else np.empty(UNIQUE_ID_BYTES, np.uint8)
    engine.comm.Bcast(uid, root=0)
    return uid.tobytes()


def over_mpi(engine: Any, nccl: Nccl | None = None) -> Communicator:
    """One communicator over every process of an MPI engine, each on its current CUDA device."""
    nccl = nccl or Nccl()
    return Communicator(nccl, shared_unique_id(engine, nccl), engine.size, engine.rank)


def _dtype(dtype: Any) -> ctypes.c_int:
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name not in _DTYPES:
        raise TypeError(f"NCCL has no collectives on {name} buffers")
    return ctypes.c_int(_DTYPES[name])
