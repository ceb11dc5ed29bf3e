"""``Array``: an immutable array in a device buffer, with JAX's methods, operators and repr.

The buffer is a read-only NumPy array on the host (CPU devices). Methods and operators are thin: they
call ``srcjax.numpy`` (``runtime.numpy``), which binds primitives, so an ``Array`` and a symbolic value
inside a compiled function answer the same calls the same way.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from transpiler.types import TensorType

_jnp_module = None


def _jnp():
    global _jnp_module
    if _jnp_module is None:
        import runtime.numpy as jnp

        _jnp_module = jnp
    return _jnp_module


_OPERAND_TYPES = (bool, int, float, complex, np.generic, np.ndarray)


def _binary(name: str, reflected: bool = False):
    def method(self, other):
        if not isinstance(other, (Array, *_OPERAND_TYPES)) and getattr(other, "aval", None) is None:
            return NotImplemented
        fn = getattr(_jnp(), name)
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _unary(name: str):
    def method(self):
        return getattr(_jnp(), name)(self)

    return method


def _forward(name: str):
    """A method that calls ``jnp.<name>(self, ...)``."""

    def method(self, *args, **kwargs):
        return getattr(_jnp(), name)(self, *args, **kwargs)

    method.__name__ = name
    return method


class Array:
    __slots__ = ("_value", "aval", "_device", "__weakref__")
    __array_priority__ = 100  # NumPy defers to our reflected operators

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
    def T(self) -> Array:
        return _jnp().transpose(self)

    @property
    def mT(self) -> Array:
        return _jnp().matrix_transpose(self)

    @property
    def real(self) -> Array:
        return _jnp().real(self)

    @property
    def imag(self) -> Array:
        return _jnp().imag(self)

    @property
    def at(self):
        return _jnp().IndexUpdateHelper(self)

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

    def __getitem__(self, index):
        return _jnp().getitem(self, index)

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

    # -- operators -------------------------------------------------------------------------------------
    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __divmod__, __rdivmod__ = _binary("divmod"), _binary("divmod", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rlshift__ = _binary("left_shift"), _binary("left_shift", True)
    __rshift__, __rrshift__ = _binary("right_shift"), _binary("right_shift", True)
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __neg__, __pos__, __abs__ = _unary("negative"), _unary("positive"), _unary("abs")
    __invert__ = _unary("invert")

    def __round__(self, ndigits=None):
        if ndigits is None:
            return round(self._scalar("int"))
        return _jnp().round(self, ndigits)

    # -- methods (jnp functions with the array first) ---------------------------------------------------
    all = _forward("all")
    any = _forward("any")
    argmax = _forward("argmax")
    argmin = _forward("argmin")
    argpartition = _forward("argpartition")
    argsort = _forward("argsort")
    astype = _forward("astype")
    choose = _forward("choose")
    clip = _forward("clip")
    compress = _forward("compress")
    conj = _forward("conj")
    conjugate = _forward("conjugate")
    cumprod = _forward("cumprod")
    cumsum = _forward("cumsum")
    diagonal = _forward("diagonal")
    dot = _forward("dot")
    flatten = _forward("ravel")
    max = _forward("max")
    mean = _forward("mean")
    min = _forward("min")
    nonzero = _forward("nonzero")
    prod = _forward("prod")
    ptp = _forward("ptp")
    ravel = _forward("ravel")
    repeat = _forward("repeat")
    round = _forward("round")
    searchsorted = _forward("searchsorted")
    sort = _forward("sort")
    std = _forward("std")
    sum = _forward("sum")
    swapaxes = _forward("swapaxes")
    take = _forward("take")
    trace = _forward("trace")
    var = _forward("var")

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int) and shape[0] is not None:
            shape = shape[0]
        return _jnp().reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return _jnp().transpose(self, axes or None)

    def squeeze(self, axis=None):
        return _jnp().squeeze(self, axis)

    def view(self, dtype=None):
        if dtype is None:
            return self
        return _jnp().view(self, dtype)


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
    return Array(value, weak_type)
