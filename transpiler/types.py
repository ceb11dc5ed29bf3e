"""Array types of the IR: a dtype, a shape and JAX's weak-type bit.

A ``TensorType`` is what a shape rule computes and what every IR value carries. Its printed form is the
IR's (``f32[3,4]``, ``i32[]``, ``f32[]{weak}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

# Short names used by the printed IR and the ``--args`` syntax of the command line.
SHORT_NAMES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}
DTYPES_BY_SHORT_NAME: dict[str, np.dtype] = {v: k for k, v in SHORT_NAMES.items()}


def short_name(dtype: np.dtype) -> str:
    return SHORT_NAMES[np.dtype(dtype)]


@dataclass(frozen=True)
class TensorType:
    dtype: np.dtype
    shape: tuple[int, ...]
    weak_type: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "_hash", hash((self.dtype, self.shape, self.weak_type)))

    def __hash__(self) -> int:  # computed once: types key the compilation caches on every call
        return self._hash

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, *, dtype=None, shape=None, weak_type=None) -> TensorType:
        return TensorType(
            self.dtype if dtype is None else dtype,
            self.shape if shape is None else shape,
            self.weak_type if weak_type is None else weak_type,
        )

    def drop_axes(self, axes: Iterable[int]) -> TensorType:
        drop = set(axes)
        return self.update(shape=tuple(d for i, d in enumerate(self.shape) if i not in drop))

    def strong(self) -> TensorType:
        return self.update(weak_type=False)

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{short_name(self.dtype)}[{dims}]" + ("{weak}" if self.weak_type else "")

    __repr__ = __str__


def type_of_value(x) -> TensorType:
    """The type of a concrete NumPy value or Python scalar (Python scalars are weakly typed)."""
    if isinstance(x, (bool, np.bool_)):
        return TensorType(np.bool_, ())
    weak = isinstance(x, (int, float, complex))
    arr = np.asarray(x)
    return TensorType(arr.dtype, arr.shape, weak)


# dtype classes used by the shape rules
def is_float(dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def is_complex(dtype) -> bool:
    return np.issubdtype(dtype, np.complexfloating)


def is_inexact(dtype) -> bool:
    return np.issubdtype(dtype, np.inexact)


def is_integer(dtype) -> bool:
    return np.issubdtype(dtype, np.integer)


def is_unsigned(dtype) -> bool:
    return np.issubdtype(dtype, np.unsignedinteger)


def is_bool(dtype) -> bool:
    return np.dtype(dtype) == np.bool_


def real_dtype(dtype) -> np.dtype:
    """complex64 -> float32, complex128 -> float64; real dtypes map to themselves."""
    return np.finfo(dtype).dtype if is_complex(dtype) else np.dtype(dtype)


def complex_dtype(dtype) -> np.dtype:
    return np.dtype(np.complex128) if np.dtype(dtype) == np.float64 else np.dtype(np.complex64)


@dataclass(frozen=True)
class StackType:
    """A last-in-first-out stack of values of one type, for the residuals of loops whose trip count is
    only known at run time (reverse mode through ``while``). Only transforms create stacks."""

    elem: TensorType

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(object)

    weak_type = False

    def strong(self) -> StackType:
        return self

    def __str__(self) -> str:
        return f"stack<{self.elem}>"

    __repr__ = __str__
