"""``Array``: an immutable array in a device buffer, with JAX's methods, operators and repr.

The buffer is a read-only NumPy array on the host (CPU devices). Operators and methods come from
``ArrayMethods``, shared with the symbolic values of a function being compiled: both call
``srcjax.numpy``, which binds primitives.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from transpiler.array_methods import ArrayMethods
from transpiler.types import TensorType


class Array(ArrayMethods):
    __slots__ = ("_value", "aval", "_device", "__weakref__")

    def __init__(self, value: np.ndarray, weak_type: bool = False, device: Any = None):
        value = np.asarray(value)
        value.flags.writeable = False
        self._value = value
        self.aval = TensorType(value.dtype, value.shape, weak_type)
        self._device = device

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
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    @property
    def itemsize(self) -> int:
        return self._value.itemsize

    @property
    def nbytes(self) -> int:
        return self._value.nbytes

    @property
    def device(self):
        from runtime import devices

        return self._device or devices.default_device()

    def devices(self) -> set:
        return {self.device}

    @property
    def sharding(self):
        from runtime import devices

        return devices.SingleDeviceSharding(self.device)

    @property
    def is_fully_addressable(self) -> bool:
        return True

    @property
    def committed(self) -> bool:
        return self._device is not None

    # -- host interop ----------------------------------------------------------------------------------
    def block_until_ready(self) -> Array:
        return self

    def is_ready(self) -> bool:
        return True

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
        return int(self._scalar("int"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

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
        prefix = "Array("
        dtype_text = f"dtype={self.dtype.name}" + (", weak_type=True)" if self.weak_type else ")")
        width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ", max_line_width=width)
        last_line = len(body) - body.rfind("\n") + 1
        gap = " " * len(prefix) if last_line + len(dtype_text) + 1 > width else " "
        if gap != " ":
            gap = "\n" + gap
        return f"{prefix}{body},{gap}{dtype_text}"

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._value[()], spec)
        return format(self._value, spec)


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
    return Array(value, weak_type)
