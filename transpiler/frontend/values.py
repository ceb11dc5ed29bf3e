"""The front end's own operations on the values it builds (flags, predicates, merged branch values, trip
counts), written with primitives and the compiler's dtype rules: nothing here goes through the runtime's numpy.

Operands are IR values, NumPy values or Python scalars (weakly typed, as in JAX); results are whatever
``bind`` gives under the current interpreter (IR values while a function is being built).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from srcjax.transpiler import dtypes
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p
from srcjax.transpiler.types import TensorType

_SCALARS = (bool, int, float, complex)


def aval(x: Any) -> TensorType:
    """The type of any array-like: a value's own, else its (canonical, weak for Python scalars) dtype and shape."""
    typ = getattr(x, "aval", None)
    if isinstance(typ, TensorType):
        return typ
    dtype, weak = dtypes.dtype_and_weak(x)
    return TensorType(dtype, np.shape(x), weak)


def result_type(*values: Any) -> tuple[np.dtype, bool]:
    """The (dtype, weak bit) ``values`` promote to, by JAX's lattice."""
    return dtypes.result_type(*values, return_weak_type=True)


def convert(x: Any, dtype: np.dtype, weak: bool = False) -> Any:
    """``x`` as ``dtype`` (and weak bit): a constant for a Python or NumPy scalar, a conversion op only when
    the type changes."""
    dtype = np.dtype(dtype)
    if isinstance(x, _SCALARS) or isinstance(x, np.generic):
        value = x.real if isinstance(x, complex) and dtype.kind != "c" else x
        return ew.convert_element_type_p.bind(np.asarray(value, dtype), new_dtype=dtype, weak_type=weak)
    typ = aval(x)
    if typ.dtype == dtype and (typ.weak_type == weak or dtype == np.bool_):  # (a weak bool is just a bool)
        return x
    return ew.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak)


def _broadcast(values: Sequence[Any]) -> list[Any]:
    """``values`` broadcast to their common shape (NumPy's rule: trailing axes line up)."""
    shape = np.broadcast_shapes(*(aval(v).shape for v in values))
    out = []
    for v in values:
        rank = len(aval(v).shape)
        if aval(v).shape != shape:
            dims = tuple(range(len(shape) - rank, len(shape)))
            v = broadcast_in_dim_p.bind(v, shape=shape, broadcast_dimensions=dims)
        out.append(v)
    return out


def _promoted(*values: Any) -> list[Any]:
    """``values`` converted to their common type and broadcast to their common shape."""
    dtype, weak = result_type(*values)
    return _broadcast([convert(v, dtype, weak) for v in values])


def as_bool(x: Any) -> Any:
    """A truth value as bool: itself if bool, else ``x != 0`` (Python's truth of a number)."""
    if aval(x).dtype == np.bool_:
        return convert(x, np.dtype(bool)) if isinstance(x, (bool, np.bool_)) else x
    return ew.ne_p.bind(*_promoted(x, 0))


def logical_not(x: Any) -> Any:
    return ew.not_p.bind(as_bool(x))


def logical_and(a: Any, b: Any) -> Any:
    return ew.and_p.bind(*_promoted(as_bool(a), as_bool(b)))


def logical_or(a: Any, b: Any) -> Any:
    return ew.or_p.bind(*_promoted(as_bool(a), as_bool(b)))


def where(pred: Any, x: Any, y: Any) -> Any:
    """``x`` where ``pred`` holds, else ``y``: promoted to their common type and shape (``jnp.where``'s rules)."""
    dtype, weak = result_type(x, y)
    pred, x, y = _broadcast([as_bool(pred), convert(x, dtype, weak), convert(y, dtype, weak)])
    return ew.select_n_p.bind(pred, y, x)


def zeros(typ: TensorType) -> Any:
    """A zero of ``typ`` (a broadcast scalar)."""
    zero = convert(np.zeros((), typ.dtype), typ.dtype, typ.weak_type)
    return zero if typ.shape == () else broadcast_in_dim_p.bind(zero, shape=typ.shape, broadcast_dimensions=())


def add(a: Any, b: Any) -> Any:
    return ew.add_p.bind(*_promoted(a, b))


def sub(a: Any, b: Any) -> Any:
    return ew.sub_p.bind(*_promoted(a, b))


def mul(a: Any, b: Any) -> Any:
    return ew.mul_p.bind(*_promoted(a, b))


def less(a: Any, b: Any) -> Any:
    return ew.lt_p.bind(*_promoted(a, b))


def trip_count(start: Any, stop: Any, step: int) -> Any:
    """The number of trips of ``range(start, stop, step)`` as int32: max(ceil((stop - start) / step), 0).
    (The division truncates; where that differs from flooring, the count is negative and clamped to 0.)"""
    adjust = step - 1 if step > 0 else step + 1
    count = ew.div_p.bind(*_promoted(add(sub(stop, start), adjust), step))
    count = ew.max_p.bind(*_promoted(count, 0))
    return convert(count, np.dtype(np.int32))
