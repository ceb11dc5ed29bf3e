"""The CUDA driver API through ctypes (``libcuda.so.1``, which the NVIDIA driver installs): the device, its
primary context, one stream, PTX modules and kernel launches, memory and copies.

Device memory comes from a caching allocator (``Allocator``): a freed block goes back to a free list of its
size class and serves the next request of that class, so a step that makes the same temporaries every call
allocates from the driver only the first time. Every copy and launch goes on the one stream, in order, so a
block freed after a launch that reads it can serve a later launch at once (stream order keeps them apart).
Copies of more than a few kilobytes, both ways, go through two pinned chunks in turn (the host fills or empties
one while the device copies the other); an upload returns once the host has read its source, the device's
copies still queued. ``synchronize`` waits for the stream.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import types
from typing import Any, Iterator

import numpy as np

_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CU_STREAM_NON_BLOCKING = 1
_CU_EVENT_DISABLE_TIMING = 2
_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1
_STAGING_MIN = 1 << 16  # copies from this many bytes go through pinned staging memory
_DOWNLOAD_CHUNK = 1 << 22  # copies both ways go through two pinned chunks of this size, in turn
_LATER_SLOTS, _LATER_BYTES = 8, 64  # ``read_later``'s small pinned slots: allocated this many at a time
PINNED_DOWNLOADS = os.environ.get("SRCJAX_PINNED_DOWNLOADS", "1") != "0"


class CudaError(RuntimeError):
    """A driver call failed: the call and the driver's name and text for the error."""


class CaptureError(CudaError):
    """Work could not be captured as a graph (it then runs step by step)."""


class _GraphExec:
    def __init__(self, handle: ctypes.c_void_p):
        self.handle = handle

    def __del__(self) -> None:
        try:
            library().cuGraphExecDestroy(self.handle)
        except Exception:  # (the interpreter is shutting down)
            pass


_lib: list[Any] = []
_lock = threading.RLock()


def library() -> Any | None:
    """``libcuda.so.1``, or None where no NVIDIA driver is installed."""
    if not _lib:
        with _lock:
            if not _lib:
                try:
                    _lib.append(ctypes.CDLL("libcuda.so.1"))
                except OSError:
                    _lib.append(None)
    return _lib[0]


def _check(name: str, result: int) -> None:
    if result != 0:
        lib = library()
        text, label = ctypes.c_char_p(), ctypes.c_char_p()
        lib.cuGetErrorName(result, ctypes.byref(label))
        lib.cuGetErrorString(result, ctypes.byref(text))
        raise CudaError(f"{name} failed: {(label.value or b'?').decode()} ({(text.value or b'').decode()})")


def call(name: str, *args: Any) -> None:
    _check(name, getattr(library(), name)(*args))


def device_count() -> int:
    """GPUs the driver sees (0 without a driver or when it fails to start)."""
    lib = library()
    if lib is None or lib.cuInit(0) != 0:
        return 0
    count = ctypes.c_int()
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


class Device:
    """One GPU: its primary context (made current on each thread that uses it), a stream, an allocator."""

    def __init__(self, ordinal: int):
        call("cuInit", 0)
        handle = ctypes.c_int()
        call("cuDeviceGet", ctypes.byref(handle), ordinal)
        self.ordinal, self.handle = ordinal, handle.value
        name = ctypes.create_string_buffer(256)
        call("cuDeviceGetName", name, 256, self.handle)
        self.name = name.value.decode()
        self.capability = (self.attribute(_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                           self.attribute(_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self.multiprocessors = self.attribute(_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        context = ctypes.c_void_p()
        call("cuDevicePrimaryCtxRetain", ctypes.byref(context), self.handle)
        self.context = context
        self._current = threading.local()
        self.make_current()
        stream = ctypes.c_void_p()
        call("cuStreamCreate", ctypes.byref(stream), _CU_STREAM_NON_BLOCKING)
        self.stream = stream
        self.allocator = Allocator(self)
        self._cublas: Any = None
        self._upload_chunks: list[tuple[ctypes.c_void_p, ctypes.c_void_p]] | None = None
        self._upload_lock = threading.Lock()
        self._download_chunks: list[tuple[ctypes.c_void_p, ctypes.c_void_p]] | None = None
        self._download_lock = threading.Lock()
        self._later: PinnedSlots | None = None  # ``read_later``'s slots

    def attribute(self, which: int) -> int:
        value = ctypes.c_int()
        call("cuDeviceGetAttribute", ctypes.byref(value), which, self.handle)
        return value.value

    @property
    def arch(self) -> str:
        return f"sm_{self.capability[0]}{self.capability[1]}"

    def make_current(self) -> None:
        if not getattr(self._current, "set", False):
            call("cuCtxSetCurrent", self.context)
            self._current.set = True

    def synchronize(self) -> None:
        self.make_current()
        call("cuStreamSynchronize", self.stream)

    # -- programs, launches, products -----------------------------------------------------------------------
    emits_ptx = True  # (programs for this device are built as PTX; the host emulation's are not)

    def load(self, program: Any, arch: str) -> "Module":
        """A program's kernels, loaded from its PTX for ``arch``."""
        self.make_current()
        module = ctypes.c_void_p()
        image = ctypes.create_string_buffer(program.ptx(arch).encode())
        call("cuModuleLoadData", ctypes.byref(module), image)
        return Module(self, module)

    def launch(self, function: ctypes.c_void_p, grid: tuple[int, int], block: int, values: Any, params: Any) -> None:
        """Launch ``function`` on the stream: ``values`` are its (pointer) arguments, ``params`` the ``void**``
        array of their addresses."""
        _check("cuLaunchKernel", library().cuLaunchKernel(function, grid[0], grid[1], 1, block, 1, 1, 0,
                                                          self.stream, params, None))

    def gemm_runner(self, step: Any, precision: Any) -> Any:
        """``run(lhs, rhs, out)``: a plan's ``Gemm`` through cuBLAS on the stream, operands at device addresses."""
        if self._cublas is None:
            from srcjax.codegen.ptx.cublas import Cublas

            self._cublas = Cublas(self)
        return self._cublas.runner(step, precision)

    # -- graphs ---------------------------------------------------------------------------------------------
    CaptureError = CaptureError

    @contextlib.contextmanager
    def capture(self) -> Iterator[Any]:
        """Record what is queued on the stream inside the block as a graph (``captured.graph``, for
        ``launch_graph``) instead of running it. Any failure inside, or of the capture, is ``CaptureError``."""
        self.make_current()
        lib = library()
        captured = types.SimpleNamespace(graph=None)
        if lib.cuStreamBeginCapture_v2(self.stream, _CU_STREAM_CAPTURE_MODE_THREAD_LOCAL):
            raise CaptureError("cuStreamBeginCapture failed")
        graph = ctypes.c_void_p()
        try:
            yield captured
        except Exception as error:
            lib.cuStreamEndCapture(self.stream, ctypes.byref(graph))
            if graph.value:
                lib.cuGraphDestroy(graph)
            raise CaptureError(f"capture failed: {error}") from error
        result = lib.cuStreamEndCapture(self.stream, ctypes.byref(graph))
        if result:
            raise CaptureError(f"cuStreamEndCapture failed ({result})")
        executable = ctypes.c_void_p()
        result = lib.cuGraphInstantiateWithFlags(ctypes.byref(executable), graph, ctypes.c_ulonglong(0))
        lib.cuGraphDestroy(graph)
        if result:
            raise CaptureError(f"cuGraphInstantiate failed ({result})")
        captured.graph = _GraphExec(executable)

    def launch_graph(self, graph: "_GraphExec") -> None:
        call("cuGraphLaunch", graph.handle, self.stream)

    def copy(self, dst: "DeviceBuffer", src: "DeviceBuffer", nbytes: int) -> None:
        """Device-to-device, queued."""
        if nbytes:
            call("cuMemcpyDtoDAsync_v2", ctypes.c_uint64(dst.pointer), ctypes.c_uint64(src.pointer),
                 ctypes.c_size_t(nbytes), self.stream)

    # -- copies ---------------------------------------------------------------------------------------------
    def upload(self, host: np.ndarray) -> "DeviceBuffer":
        """A new device buffer holding ``host``'s bytes (the copy is queued; ``host`` may change afterwards)."""
        self.make_current()
        host = np.ascontiguousarray(host)
        out = self.allocator.allocate(host.nbytes)
        self._copy_in(out.pointer, host)
        return out

    def _copy_in(self, pointer: int, host: np.ndarray) -> None:
        """Queue a copy of ``host`` to ``pointer``; ``host`` may change once this returns. A large one goes
        through two pinned chunks in turn: the host fills one while the device copies the other in."""
        nbytes = host.nbytes
        if nbytes == 0:
            return
        if nbytes < _STAGING_MIN:  # (the driver stages small pageable copies itself, in stream order)
            call("cuMemcpyHtoDAsync_v2", ctypes.c_uint64(pointer), host.ctypes.data_as(ctypes.c_void_p),
                 ctypes.c_size_t(nbytes), self.stream)
            return
        with self._upload_lock:
            if self._upload_chunks is None:
                self._upload_chunks = [self._pinned_chunk() for _ in range(2)]
            source = host.ctypes.data
            for k, offset in enumerate(range(0, nbytes, _DOWNLOAD_CHUNK)):
                size = min(_DOWNLOAD_CHUNK, nbytes - offset)
                pinned, event = self._upload_chunks[k % 2]
                call("cuEventSynchronize", event)  # (the device has copied what this chunk held before)
                ctypes.memmove(pinned, source + offset, size)
                call("cuMemcpyHtoDAsync_v2", ctypes.c_uint64(pointer + offset), pinned, ctypes.c_size_t(size),
                     self.stream)
                call("cuEventRecord", event, self.stream)

    def download(self, buffer: "DeviceBuffer", shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """The buffer's contents as a new host array (waits for the stream's work before it). A large one
        comes through two pinned chunks in turn: the device copies one while the host copies the other out."""
        self.make_current()
        out = np.empty(shape, dtype)
        nbytes = out.nbytes
        if nbytes < _STAGING_MIN or not PINNED_DOWNLOADS:
            if nbytes:
                call("cuMemcpyDtoHAsync_v2", out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(buffer.pointer),
                     ctypes.c_size_t(nbytes), self.stream)
                call("cuStreamSynchronize", self.stream)
            return out
        with self._download_lock:
            if self._download_chunks is None:
                self._download_chunks = [self._pinned_chunk() for _ in range(2)]
            chunks, target = self._download_chunks, out.ctypes.data
            waiting: tuple[int, int, int] | None = None  # (chunk, offset, size) copied by the device, not yet out
            for k, offset in enumerate(range(0, nbytes, _DOWNLOAD_CHUNK)):
                size = min(_DOWNLOAD_CHUNK, nbytes - offset)
                pinned, event = chunks[k % 2]
                call("cuMemcpyDtoHAsync_v2", pinned, ctypes.c_uint64(buffer.pointer + offset), ctypes.c_size_t(size),
                     self.stream)
                call("cuEventRecord", event, self.stream)
                if waiting is not None:
                    self._copy_out(chunks, waiting, target)
                waiting = (k % 2, offset, size)
            assert waiting is not None
            self._copy_out(chunks, waiting, target)
        return out

    def read_later(self, buffer: "DeviceBuffer", nbytes: int) -> "_Later":
        """Queue a copy of ``buffer``'s first ``nbytes`` (at most ``_LATER_BYTES``: a loop's predicate) to a
        small pinned slot; calling the result waits for that copy alone, not for what is queued after it, and
        gives the bytes. A slot is taken until its value is read (or the result dropped), however many reads
        are pending meanwhile (nested loops)."""
        assert nbytes <= _LATER_BYTES
        self.make_current()
        if self._later is None:
            self._later = PinnedSlots(self._pinned_slots)
        slot = self._later.take()
        call("cuMemcpyDtoHAsync_v2", ctypes.c_void_p(slot[0]), ctypes.c_uint64(buffer.pointer),
             ctypes.c_size_t(nbytes), self.stream)
        call("cuEventRecord", slot[1], self.stream)
        return _Later(self._later, slot, nbytes)

    @staticmethod
    def _pinned_slots() -> list[tuple[int, ctypes.c_void_p]]:
        block = ctypes.c_void_p()
        call("cuMemHostAlloc", ctypes.byref(block), ctypes.c_size_t(_LATER_SLOTS * _LATER_BYTES), 0)
        slots = []
        for i in range(_LATER_SLOTS):
            event = ctypes.c_void_p()
            call("cuEventCreate", ctypes.byref(event), _CU_EVENT_DISABLE_TIMING)
            slots.append((block.value + i * _LATER_BYTES, event))
        return slots

    @staticmethod
    def _copy_out(chunks: list, waiting: tuple[int, int, int], target: int) -> None:
        chunk, offset, size = waiting
        pinned, event = chunks[chunk]
        call("cuEventSynchronize", event)
        ctypes.memmove(target + offset, pinned, size)

    @staticmethod
    def _pinned_chunk() -> tuple[ctypes.c_void_p, ctypes.c_void_p]:
        pinned, event = ctypes.c_void_p(), ctypes.c_void_p()
        call("cuMemHostAlloc", ctypes.byref(pinned), ctypes.c_size_t(_DOWNLOAD_CHUNK), 0)
        call("cuEventCreate", ctypes.byref(event), _CU_EVENT_DISABLE_TIMING)
        return pinned, event

    def fill(self, buffer: "DeviceBuffer", value: Any, count: int, dtype: np.dtype) -> None:
        """Set ``count`` elements of ``buffer`` to ``value`` (queued)."""
        self.make_current()
        self._copy_in(buffer.pointer, np.full(count, value, dtype))


class PinnedSlots:
    """Small pinned host slots, each with an event (``read_later``'s): taken from a free list, which
    ``allocate()`` extends when it is empty, and given back once their value is read."""

    def __init__(self, allocate: Any):
        self.allocate, self.free, self.lock = allocate, [], threading.Lock()
        self.allocated = 0

    def take(self) -> Any:
        with self.lock:
            if not self.free:
                more = self.allocate()
                self.allocated += len(more)
                self.free.extend(more)
            return self.free.pop()

    def give(self, slot: Any) -> None:
        with self.lock:
            self.free.append(slot)


class _Later:
    """The bytes a ``read_later`` copy brings, once it has come: called, it waits for that copy alone."""

    __slots__ = ("slots", "slot", "nbytes", "value")

    def __init__(self, slots: PinnedSlots, slot: tuple[int, ctypes.c_void_p], nbytes: int):
        self.slots, self.slot, self.nbytes, self.value = slots, slot, nbytes, None

    def __call__(self) -> bytes:
        if self.value is None:
            address, event = self.slot
            call("cuEventSynchronize", event)
            self.value = ctypes.string_at(address, self.nbytes)
            self.slots.give(self.slot)
            self.slot = None
        return self.value

    def __del__(self) -> None:
        if self.slot is not None:  # (never read: its copy is queued before any later use of the slot)
            self.slots.give(self.slot)
            self.slot = None


class Module:
    def __init__(self, device: Device, handle: ctypes.c_void_p):
        self.device, self.handle = device, handle
        self._functions: dict[str, ctypes.c_void_p] = {}

    def function(self, name: str) -> ctypes.c_void_p:
        if name not in self._functions:
            fn = ctypes.c_void_p()
            call("cuModuleGetFunction", ctypes.byref(fn), self.handle, name.encode())
            self._functions[name] = fn
        return self._functions[name]


class DeviceBuffer:
    """A block of device memory; it goes back to its allocator's free list when nothing refers to it."""

    __slots__ = ("pointer", "nbytes", "size_class", "_allocator", "__weakref__")

    def __init__(self, pointer: int, nbytes: int, size_class: int, allocator: "Allocator"):
        self.pointer, self.nbytes, self.size_class, self._allocator = pointer, nbytes, size_class, allocator

    def __del__(self) -> None:
        try:
            self._allocator.release(self.size_class, self.pointer)
        except Exception:  # (the interpreter is shutting down)
            pass


class Allocator:
    """Device memory in size classes (multiples of 512 bytes below 1 MiB, then of 1/8 of the size's power of
    two), with free lists per class; when the driver runs out, the cached blocks are freed and the request
    retried."""

    def __init__(self, device: Device):
        self.device = device
        self.free: dict[int, list[int]] = {}
        self.cached_bytes = 0
        self.lock = threading.Lock()

    @staticmethod
    def size_class(nbytes: int) -> int:
        nbytes = max(int(nbytes), 1)
        if nbytes <= 1 << 20:
            return -(-nbytes // 512) * 512
        step = 1 << (nbytes.bit_length() - 4)
        return -(-nbytes // step) * step

    def allocate(self, nbytes: int) -> DeviceBuffer:
        size = self.size_class(nbytes)
        with self.lock:
            blocks = self.free.get(size)
            if blocks:
                self.cached_bytes -= size
                return DeviceBuffer(self.reused(blocks.pop(), size), nbytes, size, self)
        return DeviceBuffer(self.fresh(size), nbytes, size, self)

    def reused(self, pointer: int, size: int) -> int:
        """A cached block, as it is handed out again."""
        return pointer

    def fresh(self, size: int) -> int:
        """A new block of ``size`` bytes from the driver."""
        pointer = ctypes.c_uint64()
        result = library().cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size))
        if result == 2:  # CUDA_ERROR_OUT_OF_MEMORY: give the cached blocks back and try once more
            self.empty()
            result = library().cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size))
        _check("cuMemAlloc_v2", result)
        return pointer.value

    def release(self, size: int, pointer: int) -> None:
        with self.lock:
            self.free.setdefault(size, []).append(pointer)
            self.cached_bytes += size

    def empty(self) -> None:
        """Free every cached block (after the stream's work, which may still use them)."""
        self.device.synchronize()
        with self.lock:
            for blocks in self.free.values():
                for pointer in blocks:
                    library().cuMemFree_v2(ctypes.c_uint64(pointer))
            self.free.clear()
            self.cached_bytes = 0


_devices: dict[int, Device] = {}


def device(ordinal: int = 0) -> Device:
    """The ``Device`` of GPU ``ordinal`` (made once per process)."""
    with _lock:
        if ordinal not in _devices:
            _devices[ordinal] = Device(ordinal)
        return _devices[ordinal]

