"""``Array``: an immutable array in a device buffer, with JAX's methods, operators and repr.

The buffer is a read-only NumPy array on the host (CPU devices). Operators and methods come from
``ArrayMethods``, shared with the symbolic values of a function being compiled: both call
``srcjax.numpy``, which binds primitives.

The ``_buffer`` slot holds the buffer; ``_value`` reads it. A compiled call that runs asynchronously returns
Arrays whose ``_buffer`` is unset and whose ``_pending`` holds a ``dispatch.Pending`` result: reading
``_value`` waits for the job, then fills the slot. A deleted (donated) Array has no ``_buffer`` and
``_pending = DELETED``: reading ``_value`` raises. (Not ``__getattr__`` on the slot: NumPy probes every Array
for ``__array_interface__`` and friends, and each miss would then run Python code.)
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from srcjax.runtime import gpu as _gpu
from srcjax.transpiler.array_methods import ArrayMethods
from srcjax.transpiler.types import TensorType


DELETED = "deleted"  # ``Array._pending`` of an Array whose buffer was donated


class Array(ArrayMethods):
    __slots__ = ("_buffer", "aval", "_device", "_pending", "__weakref__")

    def __init__(self, value: np.ndarray, weak_type: bool = False, device: Any = None):
        value = np.asarray(value)
        value.flags.writeable = False
        self._buffer = value
        self.aval = TensorType(value.dtype, value.shape, weak_type)
        self._device = device

    @property
    def _value(self) -> np.ndarray:
        """The buffer: waits for a pending Array's computation, raises for a deleted Array."""
        try:
            return self._buffer
        except AttributeError:  # (a try costs nothing unless it raises)
            return _resolve(self)

    @_value.setter
    def _value(self, value: np.ndarray) -> None:
        self._buffer = value

    # -- attributes ------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def device(self):
        """The device holding the array; for an array laid out over several devices, its sharding (as JAX)."""
        from srcjax.runtime import devices

        if self._device is None:
            return devices.default_device()
        return self._device

    def devices(self) -> set:
        return self.sharding.device_set

    @property
    def sharding(self):
        """Where the data lives: one device (``SingleDeviceSharding``) or several (``NamedSharding``: pmap's and
        shard_map's results). The ``_device`` slot holds a ``Device``, a sharding, or None (the default device)."""
        from srcjax.runtime import devices

        if self._device is None or isinstance(self._device, devices.Device):
            return devices.SingleDeviceSharding(self.device)
        return self._device

    @property
    def addressable_shards(self) -> list:
        from srcjax.runtime.sharding import shards_of

        return shards_of(self, self.sharding)

    global_shards = addressable_shards

    def addressable_data(self, index: int) -> Array:
        """The data of the ``index``-th addressable shard."""
        return self.addressable_shards[index].data

    @property
    def is_fully_addressable(self) -> bool:
        return self.sharding.is_fully_addressable  # (whether this process holds every device of its layout)

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated

    @property
    def committed(self) -> bool:
        return self._device is not None

    # -- host interop ----------------------------------------------------------------------------------
    def block_until_ready(self) -> Array:
        state = _pending_of(self)
        if type(state) is _gpu.Resident:
            state.ready()
            return self
        _ = self._value  # (waits if pending; raises what its computation raised)
        return self

    def is_ready(self) -> bool:
        pending = _pending_of(self)
        return pending is None or pending is DELETED or pending.job.done()

    def is_deleted(self) -> bool:
        return _pending_of(self) is DELETED

    def delete(self) -> None:
        """Free the buffer; any later use of this Array raises ``RuntimeError``."""
        if _pending_of(self) is DELETED:
            return
        try:
            del self._buffer
        except AttributeError:  # pending: the job keeps its own reference to the buffer
            pass
        self._pending = DELETED

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self._value, dtype=dtype)
        return self._value if dtype is None else self._value.astype(dtype)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def tobytes(self, order="C") -> bytes:
        return self._value.tobytes(order)

    def copy(self) -> Array:
        return Array(self._value.copy(), self.weak_type, self._device)

    clone = copy

    def copy_to_host_async(self) -> None:
        """Nothing to start: the data is in host memory (waiting for a pending result is ``block_until_ready``)."""

    def on_device_size_in_bytes(self) -> int:
        return self.nbytes

    def platform(self) -> str:
        return next(iter(self.devices())).platform

    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        """The array on ``device`` (the array API's name for ``jax.device_put``)."""
        from srcjax.runtime.devices import device_put

        return device_put(self, device)

    def unsafe_buffer_pointer(self) -> int:
        """The address of the first element of the host buffer (valid while the array lives)."""
        return self._value.__array_interface__["data"][0]

    @property
    def flat(self):
        raise NotImplementedError("JAX Arrays do not implement the arr.flat property: consider arr.flatten() "
                                  "instead.")

    @property
    def device_buffer(self):
        raise AttributeError("arr.device_buffer has been deprecated. Use arr.addressable_data(0)")

    @property
    def device_buffers(self):
        raise AttributeError("arr.device_buffers has been deprecated. Use [x.data for x in arr.addressable_shards]")

    def __copy__(self) -> Array:
        return self

    def __deepcopy__(self, memo) -> Array:
        return self

    def __reduce__(self):
        return (_rebuild, (np.array(self._value), self.weak_type))

    # -- Python protocols ------------------------------------------------------------------------------
    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for row in self._value:
            yield Array(row, self.weak_type, self._device)

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"The truth value of an array with {self.size} elements is ambiguous. Use a.any() or a.all()"
            )
        return bool(self._value)

    def __int__(self) -> int:
        return int(self._scalar("int").item())  # (a complex one is Python's TypeError, as JAX's: not its real part)

    def __float__(self) -> float:
        return float(self._scalar("float").item())

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return operator.index(self._scalar("index").item())

    def _scalar(self, what: str):
        if self.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python {what}s, got shape {self.shape}")
        return self._value.reshape(())[()]

    def __hash__(self):
        raise TypeError("unhashable type: 'Array' (use a tuple of Python numbers, or x.item(), as a key)")

    def __setitem__(self, index, value):
        raise TypeError(
            "'Array' object does not support item assignment. srcjax arrays are immutable; "
            f"instead of x[idx] = y, use x = x.at[idx].set(y) (idx was {index!r})"
        )

    def __repr__(self) -> str:
        if self.is_deleted():
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype.name})"
        prefix = "Array("
        dtype_text = f"dtype={self.dtype.name}" + (", weak_type=True)" if self.weak_type else ")")
        width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ", max_line_width=width)
        last_line = len(body) - body.rfind("\n") + 1
        # (JAX 0.10's: past the line width it pads with spaces on the same line, not a new one)
        gap = " " * len(prefix) if last_line + len(dtype_text) + 1 > width else " "
        return f"{prefix}{body},{gap}{dtype_text}"

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._value[()], spec)
        return format(self._value, spec)


def _pending_of(x: Array) -> Any:
    """``x._pending``: None for a ready Array, a ``dispatch.Pending`` for a pending one, or ``DELETED``."""
    try:
        return x._pending
    except AttributeError:
        return None


def _resolve(x: Array) -> np.ndarray:
    """The buffer of a pending Array once its computation ran (stored, so later reads are plain slot reads)."""
    pending = _pending_of(x)
    if type(pending) is _gpu.Resident:  # (a GPU array: its host copy, the device buffer kept)
        return pending.host()
    if pending is None:
        try:
            return x._buffer  # (resolved meanwhile, by another thread)
        except AttributeError:
            raise AttributeError("'Array' object has no attribute '_value' (it is not initialised)") from None
    if pending is DELETED:
        raise RuntimeError(
            f"Array has been deleted with shape={x.aval}: it was donated to a jit-compiled function "
            "(donate_argnums) or deleted with .delete(), and cannot be used any more"
        )
    pending.job.wait()  # (raises what the computation raised)
    value = pending.buffer
    value.setflags(write=False)
    x._buffer = value
    x._pending = None
    return value


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
    return Array(value, weak_type)
