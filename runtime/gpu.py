"""GPU devices, arrays whose buffers live on them, and jitted calls run there.

A GPU array is an ``Array`` whose ``_pending`` slot holds a ``Resident``: the device buffer (a
``codegen.ptx.driver.DeviceBuffer``) and, once something on the host has read it, a host copy. Reading the
Array's value (printing it, ``np.asarray``, an eager operation) copies it to the host once and keeps that
copy; the device buffer stays, and jitted calls keep reading it there.

A jitted call runs on the GPU when one of its array arguments lives there, or when the GPU is the default
backend: its inputs are uploaded where they are not on the device, its kernels and products are queued on
the device's stream (``codegen/ptx/executor.py``), and its results are GPU arrays that are ready to read
once the stream has run (``block_until_ready`` waits). A function the GPU backend does not compile (control
flow, host calls, collectives) runs on the CPU as before, on host copies of its inputs.

The GPU is the default backend when the NVIDIA driver sees one, unless ``JAX_PLATFORMS`` (or the
``jax_platforms`` / ``jax_platform_name`` flags) names ``cpu`` first; ``SRCJAX_GPU=0`` hides GPUs altogether, and
``SRCJAX_GPU=emulate`` shows one GPU emulated on the host (``codegen/ptx/emulated.py``: how CI runs this code;
``emulate:4`` shows four).
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from srcjax.runtime.config import config

_lock = threading.RLock()
_found: list[list[GpuDevice]] = []


@dataclass(frozen=True)
class GpuDevice:
    id: int
    platform: str = "gpu"
    process_index: int = 0

    @property
    def device_kind(self) -> str:
        return self.driver().name

    def driver(self):
        """The device's driver: ``codegen.ptx.driver.Device``, or the host emulation's (``SRCJAX_GPU=emulate``)."""
        if _emulated():
            from srcjax.codegen.ptx import emulated

            return emulated.device(self.id)
        from srcjax.codegen.ptx import driver

        return driver.device(self.id)

    def __repr__(self) -> str:
        return f"CudaDevice(id={self.id})"

    def __str__(self) -> str:
        return f"cuda:{self.id}"  # (JAX's)


def gpu_devices() -> list[GpuDevice]:
    """The GPUs the NVIDIA driver sees (none without a driver, or with ``SRCJAX_GPU=0``)."""
    if not _found:
        with _lock:
            if not _found:
                count = 0
                if _emulated():  # (``emulate:N``: N of them, for pmap over GPUs)
                    count = int(os.environ["SRCJAX_GPU"].partition(":")[2] or 1)
                elif os.environ.get("SRCJAX_GPU", "1") != "0":
                    from srcjax.codegen.ptx import driver

                    count = driver.device_count()
                _found.append([GpuDevice(i) for i in range(count)])
    return _found[0]


def _emulated() -> bool:
    return os.environ.get("SRCJAX_GPU", "").partition(":")[0] == "emulate"


def reset() -> None:
    """Look for GPUs again at the next use (tests that switch ``SRCJAX_GPU``)."""
    with _lock:
        _found.clear()


def _platforms() -> list[str]:
    chosen = config.jax_platforms or config.jax_platform_name or os.environ.get("JAX_PLATFORMS") or ""
    return [p.strip().lower() for p in str(chosen).split(",") if p.strip()]


def default_is_gpu() -> bool:
    """Whether jitted calls and new arrays go to the GPU by default."""
    platforms = _platforms()
    if platforms and platforms[0] == "cpu":
        return False
    if platforms and platforms[0] in ("gpu", "cuda") and not gpu_devices():
        raise RuntimeError(f"JAX_PLATFORMS/jax_platforms names '{platforms[0]}', but no GPU is available (no NVIDIA "
                           "driver, no device, or SRCJAX_GPU=0)")
    return bool(gpu_devices())


class Resident:
    """The state of a GPU array (its ``Array._pending``): the device buffer and, once read, the host copy. It
    answers as a finished job (``job.done()``, ``job.error``, ``job.wait()``, ``buffer``), so the runtime's
    paths for pending arrays read it."""

    __slots__ = ("device", "memory", "shape", "dtype", "_host", "__weakref__")

    def __init__(self, device: GpuDevice, memory: Any, shape: tuple[int, ...], dtype: np.dtype):
        self.device, self.memory, self.shape, self.dtype = device, memory, shape, np.dtype(dtype)
        self._host: np.ndarray | None = None

    @property
    def job(self) -> Resident:
        return self

    error = None

    def done(self) -> bool:
        return True

    def wait(self) -> None:
        self.host()

    @property
    def buffer(self) -> np.ndarray:
        return self.host()

    def host(self) -> np.ndarray:
        """The values on the host (copied once, after the work queued before)."""
        if self._host is None:
            value = self.device.driver().download(self.memory, self.shape, self.dtype)
            value.setflags(write=False)
            self._host = value
        return self._host

    def ready(self) -> None:
        self.device.driver().synchronize()

    def size_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def resident(x: Any) -> Resident | None:
    """The ``Resident`` of a GPU array, else None."""
    try:
        state = x._pending
    except AttributeError:
        return None
    return state if type(state) is Resident else None


def _array(device: GpuDevice, memory: Any, aval: Any) -> Any:
    from srcjax.runtime.array import Array

    out = Array.__new__(Array)
    out.aval, out._device, out._pending = aval, device, Resident(device, memory, aval.shape, aval.dtype)
    return out


def put(value: np.ndarray, weak_type: bool, device: GpuDevice) -> Any:
    """A GPU array holding a copy of ``value``."""
    from srcjax.transpiler.types import TensorType

    value = np.asarray(value, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    memory = device.driver().upload(value)
    return _array(device, memory, TensorType(value.dtype, value.shape, weak_type))


def _memory(leaf: Any, dtype: np.dtype, device: GpuDevice) -> Any:
    """A device buffer of ``leaf``'s values in ``dtype`` on ``device``: its own where it lives there."""
    state = resident(leaf)
    if state is not None and state.device == device and state.dtype == dtype:
        return state.memory
    return device.driver().upload(np.ascontiguousarray(np.asarray(leaf), dtype=dtype))


def call(compiled: Any, leaves: Sequence[Any]) -> list[Any] | None:
    """Run a jitted specialisation on the GPU: its results as GPU arrays, or None where the GPU backend does not
    compile it (``compiled.gpu_error`` says why) and the CPU runs it."""
    device = None
    for leaf in leaves:
        state = resident(leaf)
        if state is not None:
            device = state.device
            break
    if device is None:
        device = gpu_devices()[0]
    executable = _executable(compiled, device)
    if executable is None:
        return None
    from srcjax.runtime.gpu_eval import SegmentedProgram

    if isinstance(executable, SegmentedProgram):
        params = compiled.ir.params
        outs = executable.run([leaf if resident(leaf) is not None else _upload(leaf, p.aval, device)
                               for leaf, p in zip(leaves, params)])
        results = [out if resident(out) is not None else put(np.asarray(out, r.aval.dtype), r.aval.weak_type, device)
                   for out, r in zip(outs, compiled.ir.results)]
    else:
        inputs = [_memory(leaf, dtype, device) for leaf, dtype in zip(leaves, executable.param_dtypes)]
        into = _donatable(executable, compiled.donated, leaves, inputs) if compiled.donated else None
        outputs = executable(inputs, precision=config.jax_default_matmul_precision, into=into)
        results = [_array(device, memory, r.aval) for memory, r in zip(outputs, compiled.ir.results)]
    for i in compiled.donated:  # (their buffers go back to the allocator once the call's work has read them)
        if resident(leaves[i]) is not None:
            leaves[i].delete()
    return results


# references to a donated device buffer while ``_donatable`` looks at it: the Resident's, the inputs list's, the
# loop's name and ``getrefcount``'s argument; any more (another Array, a graph's held input) and it is not reused
_DONATED_REFS = 4


def _donatable(executable: Any, donated: Sequence[int], leaves: Sequence[Any], inputs: list[Any]) -> list[Any] | None:
    """Per result, the donated input buffer the call may write it over, or None: where the program allows it
    (``GpuExecutable.aliases``) and the buffer is the donated Array's alone."""
    aliases = executable.aliases()
    into: list[Any] = [None] * len(executable.result_types)
    found = False
    for i in donated:
        j = aliases.get(i)
        state = resident(leaves[i])
        if j is None or into[j] is not None or state is None or state.memory is not inputs[i]:
            continue
        memory = inputs[i]
        if sum(m is memory for m in inputs) == 1 and sys.getrefcount(memory) == _DONATED_REFS:
            into[j], found = memory, True
    return into if found else None


def _executable(compiled: Any, device: GpuDevice) -> Any:
    cache = compiled.__dict__.setdefault("gpu_executables", {})
    if device.id not in cache:
        from srcjax.codegen.llvm.plan import Unsupported
        from srcjax.codegen.ptx.executor import GpuExecutable

        try:
            cache[device.id] = GpuExecutable(compiled.ir, device.driver())
        except Unsupported as why:
            from srcjax.codegen.llvm.control import is_replicated
            from srcjax.runtime.gpu_eval import SegmentedProgram

            if is_replicated(compiled.ir):  # (collectives: replicas on the CPU)
                compiled.gpu_error = f"not compiled for the GPU: {why}"
                cache[device.id] = None
            else:  # control flow, or ops no kernel computes: compiled runs between them (runtime/gpu_eval.py)
                compiled.gpu_error = f"runs on the GPU as compiled runs between interpreted ops: {why}"
                cache[device.id] = SegmentedProgram(compiled.ir, device)
    return cache[device.id]


def _upload(leaf: Any, aval: Any, device: GpuDevice) -> Any:
    return put(np.asarray(leaf, aval.dtype), aval.weak_type, device)


# -- eager operations on GPU arrays ------------------------------------------------------------------------
_eager_cache: dict[Any, Any] = {}  # (device, primitive, params, operand types) -> its executable, or None
_EAGER_CACHE_MAX = 4096


def eager(prim: Any, arrays: Sequence[Any], params: dict, out_types: Any) -> list[Any] | None:
    """A primitive applied to arrays one of which lives on a GPU, run there by the same kernels as a jitted
    call's (one executable per primitive, parameters and operand types, kept); None where the GPU backend does
    not compile it, or its parameters cannot key a cache (the eager interpreter then runs it on the host)."""
    device = next((state.device for state in map(resident, arrays) if state is not None), None)
    if device is None:
        return None
    try:
        key = (device.id, prim.name, tuple(sorted(params.items())), tuple(a.aval for a in arrays))
        hash(key)
    except TypeError:
        return None
    if key not in _eager_cache:
        if len(_eager_cache) >= _EAGER_CACHE_MAX:
            _eager_cache.clear()
        _eager_cache[key] = _eager_executable(prim, params, [a.aval for a in arrays], device)
    executable = _eager_cache[key]
    if executable is None:
        return None
    inputs = [_memory(a, a.aval.dtype, device) for a in arrays]
    outputs = executable(inputs, precision=config.jax_default_matmul_precision)
    types = out_types if prim.multiple_results else [out_types]
    return [_array(device, memory, typ) for memory, typ in zip(outputs, types)]


def _eager_executable(prim: Any, params: dict, avals: list[Any], device: GpuDevice) -> Any:
    from srcjax.codegen.llvm.plan import Unsupported
    from srcjax.codegen.ptx.executor import GpuExecutable
    from srcjax.transpiler.builder import Builder
    from srcjax.transpiler.passes import clean
    from srcjax.transpiler.primitives import core

    builder = Builder(prim.name, None, capture=True)
    operands = [builder.param(aval) for aval in avals]
    with core.interpreting(builder):
        out = prim.bind(*operands, **params)
        fn = builder.finish(list(out) if prim.multiple_results else [out])
    try:
        return GpuExecutable(clean(fn), device.driver())
    except Unsupported:
        return None
