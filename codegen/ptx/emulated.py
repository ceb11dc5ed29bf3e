"""A GPU emulated on the host, behind the driver's interface (``driver.Device``): device memory is host memory
from the same caching allocator, programs are built for the host emulation (``kernels.py``) and loaded in the
JIT, a launch runs the kernel's emulated grid, and products are NumPy's. ``SRCJAX_GPU=emulate`` makes it the
one GPU the runtime sees, so that the GPU runtime (devices, GPU arrays, uploads and downloads, the executor,
the allocator, donation) runs in CI, where there is no GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import types
from typing import Any, Iterator

import numpy as np

from srcjax.codegen.llvm import engine
from srcjax.codegen.ptx.driver import Allocator, CaptureError, DeviceBuffer


class EmulatedDevice:
    emits_ptx = False
    name = "srcjax host emulation of a GPU"
    capability = (9, 0)
    multiprocessors = 3

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.allocator = _HostAllocator(self)
        self.uploads = 0  # (tests count the copies and graphs)
        self.downloads = 0
        self.graphs_captured = self.graph_launches = 0
        self._recording: list | None = None

    @property
    def arch(self) -> str:
        return "sm_90"

    def make_current(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def load(self, program: Any, arch: str) -> "_Module":
        names = [k.name for k in program.kernels]
        return _Module(engine.compile_module(program.module, names))

    def launch(self, function: Any, grid: tuple[int, int], block: int, values: Any, params: Any) -> None:
        if self._recording is not None:  # (the arguments as they are now: ``values`` is reused)
            snapshot = (ctypes.c_uint64 * len(values))(*values)
            self._recording.append(lambda: function(ctypes.addressof(snapshot)))
            return
        function(ctypes.addressof(values))

    def gemm_runner(self, step: Any, precision: Any) -> Any:
        def run(lhs, rhs, out):
            if self._recording is not None:
                self._recording.append(lambda: self.gemm(step, lhs, rhs, out))
            else:
                self.gemm(step, lhs, rhs, out)

        return run

    # -- graphs: what a capture queues is recorded, and replayed by launch_graph ----------------------------
    CaptureError = CaptureError

    @contextlib.contextmanager
    def capture(self) -> Iterator[Any]:
        captured = types.SimpleNamespace(graph=None)
        self._recording = []
        try:
            yield captured
        except Exception as error:
            raise CaptureError(f"capture failed: {error}") from error
        finally:
            recorded, self._recording = self._recording, None
        captured.graph = recorded
        self.graphs_captured += 1

    def launch_graph(self, graph: list) -> None:
        for action in graph:
            action()
        self.graph_launches += 1

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer, nbytes: int) -> None:
        if nbytes:
            ctypes.memmove(dst.pointer, src.pointer, nbytes)

    def gemm(self, step: Any, lhs: int, rhs: int, out: int) -> None:
        dtype = np.dtype(step.target.dtype)

        def operand(address, layout, rows, cols):
            batch_stride, transposed, lead = layout
            size = dtype.itemsize
            strides = (batch_stride * size, size, lead * size) if transposed else \
                (batch_stride * size, lead * size, size)
            extent = (step.batch - 1) * batch_stride + (rows - 1) * (1 if transposed else lead) \
                + (cols - 1) * (lead if transposed else 1) + 1 if rows and cols and step.batch else 0
            flat = np.ctypeslib.as_array((ctypes.c_byte * (max(extent, 1) * size)).from_address(address))
            return np.lib.stride_tricks.as_strided(flat.view(dtype), (step.batch, rows, cols), strides,
                                                   writeable=False)

        a, b = operand(lhs, step.lhs_layout, step.m, step.k), operand(rhs, step.rhs_layout, step.k, step.n)
        product = np.matmul(a, b)
        target = np.ctypeslib.as_array((ctypes.c_byte * max(product.nbytes, 1)).from_address(out))
        target[: product.nbytes] = np.ascontiguousarray(product, dtype).reshape(-1).view(np.int8)

    def upload(self, host: np.ndarray) -> DeviceBuffer:
        host = np.ascontiguousarray(host)
        out = self.allocator.allocate(host.nbytes)
        if host.nbytes:
            ctypes.memmove(out.pointer, host.ctypes.data, host.nbytes)
        self.uploads += 1
        return out

    def download(self, buffer: DeviceBuffer, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        out = np.empty(shape, dtype)
        if out.nbytes:
            ctypes.memmove(out.ctypes.data, buffer.pointer, out.nbytes)
        self.downloads += 1
        return out

    def read_later(self, buffer: DeviceBuffer, nbytes: int) -> Any:
        value = ctypes.string_at(buffer.pointer, nbytes)  # (the emulated stream has run already)
        self.downloads += 1
        return lambda: value

    def fill(self, buffer: DeviceBuffer, value: Any, count: int, dtype: np.dtype) -> None:
        pattern = np.full(count, value, dtype)
        if pattern.nbytes:
            ctypes.memmove(buffer.pointer, pattern.ctypes.data, pattern.nbytes)


class _Module:
    def __init__(self, compiled: engine.CompiledModule):
        self.compiled = compiled  # (holds the code)
        self._functions = {name: ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
                           for name, address in compiled.addresses.items()}

    def function(self, name: str) -> Any:
        return self._functions[name]


class _HostAllocator(Allocator):
    """The caching allocator over host memory: blocks filled with a pattern that reads as garbage (a kernel that
    reads what nobody wrote shows)."""

    def __init__(self, device: EmulatedDevice):
        super().__init__(device)  # type: ignore[arg-type]
        self.blocks: dict[int, np.ndarray] = {}  # address -> the memory (kept alive while allocated or cached)
        self.driver_allocations = 0

    def reused(self, pointer: int, size: int) -> int:
        ctypes.memset(pointer, 0xA5, size)
        return pointer

    def fresh(self, size: int) -> int:
        memory = np.full(size, 0xA5, np.uint8)
        with self.lock:
            self.blocks[memory.ctypes.data] = memory
            self.driver_allocations += 1
        return memory.ctypes.data

    def empty(self) -> None:
        with self.lock:
            for blocks in self.free.values():
                for pointer in blocks:
                    del self.blocks[pointer]
            self.free.clear()
            self.cached_bytes = 0


_devices: dict[int, EmulatedDevice] = {}
_lock = threading.Lock()


def device(ordinal: int = 0) -> EmulatedDevice:
    with _lock:
        if ordinal not in _devices:
            _devices[ordinal] = EmulatedDevice(ordinal)
        return _devices[ordinal]


class Emulation:
    """A function's GPU program run on a GPU emulated on the host (a device of its own): ``Emulation(fn)(*arrays)``
    gives the results as NumPy arrays; ``program`` is what ran (``program.describe()`` lists the steps)."""

    def __init__(self, fn: Any):
        from srcjax.codegen.ptx.executor import GpuExecutable

        self.fn, self.device = fn, EmulatedDevice(0)
        self.executable = GpuExecutable(fn, self.device)
        self.program = self.executable.program

    def __call__(self, *args: Any) -> list[np.ndarray]:
        inputs = [self.device.upload(np.array(a, dtype=p.aval.dtype)) for a, p in zip(args, self.fn.params)]
        outputs = self.executable(inputs)
        return [self.device.download(o, r.aval.shape, r.aval.dtype) for o, r in zip(outputs, self.fn.results)]


class EmulatedClique:
    """NCCL's collectives among emulated GPUs of one process, one thread per rank (``within_process``'s stand-in):
    each rank publishes its buffers, the ranks meet at a barrier, each computes its own result from everyone's,
    and they meet again before any buffer changes. ``abort`` breaks the barrier for ranks still waiting."""

    def __init__(self, size: int, timeout: float = 600.0):
        self.size = size
        self.barrier = threading.Barrier(size, timeout=timeout)
        self.posted: list[Any] = [None] * size
        self.comms = [_EmulatedComm(self, rank) for rank in range(size)]

    def exchange(self, rank: int, posted: Any) -> list[Any]:
        self.posted[rank] = posted
        self.barrier.wait()
        return list(self.posted)

    def done(self) -> None:
        self.barrier.wait()

    def abort(self) -> None:
        self.barrier.abort()


def _host_view(address: int, count: int, dtype: Any) -> np.ndarray:
    dtype = np.dtype(dtype)
    raw = (ctypes.c_byte * max(count * dtype.itemsize, 1)).from_address(address)
    return np.ctypeslib.as_array(raw).view(dtype)[:count]


_REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


class _EmulatedComm:
    def __init__(self, clique: EmulatedClique, rank: int):
        self.clique, self.rank, self.size = clique, rank, clique.size

    def all_reduce(self, send: int, recv: int, count: int, dtype: Any, op: str = "sum", stream: int = 0) -> None:
        sends = self.clique.exchange(self.rank, send)
        total = _host_view(sends[0], count, dtype).copy()
        for other in sends[1:]:
            total = _REDUCE[op](total, _host_view(other, count, dtype))
        self.clique.done()
        _host_view(recv, count, dtype)[:] = total

    def all_gather(self, send: int, recv: int, count: int, dtype: Any, stream: int = 0) -> None:
        sends = self.clique.exchange(self.rank, send)
        parts = [_host_view(other, count, dtype).copy() for other in sends]
        self.clique.done()
        out = _host_view(recv, count * self.size, dtype)
        for rank, part in enumerate(parts):
            out[rank * count:(rank + 1) * count] = part

    def reduce_scatter(self, send: int, recv: int, count: int, dtype: Any, op: str = "sum", stream: int = 0) -> None:
        sends = self.clique.exchange(self.rank, send)
        lo = self.rank * count
        total = _host_view(sends[0], self.size * count, dtype)[lo:lo + count].copy()
        for other in sends[1:]:
            total = _REDUCE[op](total, _host_view(other, self.size * count, dtype)[lo:lo + count])
        self.clique.done()
        _host_view(recv, count, dtype)[:] = total

    def abort(self) -> None:
        self.clique.abort()
