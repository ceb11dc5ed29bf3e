"""JAX's dtype rules: canonical (32-bit by default) dtypes, weak types and the promotion lattice.

Promotion is JAX's, not NumPy's: the result of mixing types is the least upper bound in the lattice
below, where ``i*``, ``f*`` and ``c*`` stand for weakly typed Python scalars (and values derived only
from them). ``int8 + 3`` stays int8, ``float16 * 2.0`` stays float16, ``int32 + float16`` is float16,
``uint32 + int32`` is int64 (int32 when x64 is off), and ``uint64 + int64`` is a float.

The compiler needs these rules to type what it builds, so they live here, below the runtime; the runtime's
``jax_enable_x64`` flag is read from the runtime's own table of flags (``use_flags``), so the two never disagree.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from srcjax.transpiler.types import TensorType

_flags: dict[str, Any] = {"jax_enable_x64": False, "jax_numpy_dtype_promotion": "standard"}  # until the runtime's


def use_flags(values: dict[str, Any]) -> None:
    """Read ``jax_enable_x64`` (whether 64-bit types are canonical) and ``jax_numpy_dtype_promotion`` (which
    lattice promotes) from ``values`` from now on."""
    global _flags
    _flags = values


def x64_enabled() -> bool:
    return _flags["jax_enable_x64"]


bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
try:  # bfloat16 comes with ml_dtypes when it is installed (JAX ships it); optional here
    import ml_dtypes

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    bfloat16 = None

# The weak kinds are nodes of the lattice of their own.
WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "i*", "f*", "c*"

_LATTICE: dict[Any, list[Any]] = {
    bool_: [WEAK_INT],
    WEAK_INT: [uint8, int8],
    uint8: [uint16, int16],
    uint16: [uint32, int32],
    uint32: [uint64, int64],
    uint64: [WEAK_FLOAT],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [WEAK_FLOAT],
    WEAK_FLOAT: [WEAK_COMPLEX, float16] + ([bfloat16] if bfloat16 is not None else []),
    float16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    WEAK_COMPLEX: [complex64],
    complex64: [complex128],
    complex128: [],
}
if bfloat16 is not None:
    _LATTICE[bfloat16] = [float32]


def _upper_bounds(lattice: dict[Any, list[Any]], node: Any) -> frozenset:
    seen, todo = {node}, [node]
    while todo:
        for up in lattice[todo.pop()]:
            if up not in seen:
                seen.add(up)
                todo.append(up)
    return frozenset(seen)


# Under jax_numpy_dtype_promotion="strict" only the weak kinds promote: a Python scalar (or a value derived only
# from them) joins any type of its kind or above, and two different strong types have no common type.
_STRICT_LATTICE: dict[Any, list[Any]] = {node: [] for node in _LATTICE}
_STRICT_LATTICE[WEAK_INT] = [WEAK_FLOAT] + [t for t in _LATTICE if isinstance(t, np.dtype) and t.kind in "iu"]
_STRICT_LATTICE[WEAK_FLOAT] = [WEAK_COMPLEX] + [t for t in _LATTICE if isinstance(t, np.dtype) and t.kind == "f"
                                                or t is bfloat16]
_STRICT_LATTICE[WEAK_COMPLEX] = [complex64, complex128]

_UPPER = {"standard": {node: _upper_bounds(_LATTICE, node) for node in _LATTICE},
          "strict": {node: _upper_bounds(_STRICT_LATTICE, node) for node in _STRICT_LATTICE}}


class TypePromotionError(ValueError):
    """Raised when JAX type promotion fails (``jax.dtypes.TypePromotionError``)."""


def _node_name(node: Any) -> str:
    """How JAX names a lattice node in its messages (a weak kind is its Python type)."""
    return str({WEAK_INT: int, WEAK_FLOAT: float, WEAK_COMPLEX: complex}.get(node, node))


@functools.lru_cache(maxsize=None)
def _least_upper_bound(nodes: tuple, promotion: str = "standard") -> Any:
    upper = _UPPER[promotion]
    common = frozenset.intersection(*(upper[n] for n in nodes))
    for candidate in common:
        if common <= upper[candidate]:
            return candidate
    # only the strict lattice has types with no common one (complex128 tops the standard one)
    raise TypePromotionError(
        f"Input dtypes {tuple(_node_name(n) for n in nodes)} have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output type, or set "
        "jax_numpy_dtype_promotion=standard.")


def _promotion() -> str:
    return _flags.get("jax_numpy_dtype_promotion", "standard")


# -- canonical dtypes ----------------------------------------------------------------------------------
_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """The dtype JAX would store: 64-bit types narrow to 32 bits unless ``jax_enable_x64`` is on."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc":
        raise TypeError(f"dtype {dtype} is not a valid array dtype (srcjax supports bool, ints, floats, complex)")
    if not _flags["jax_enable_x64"]:
        return _NARROW.get(dtype, dtype)
    return dtype


def default_int_dtype() -> np.dtype:
    return int64 if _flags["jax_enable_x64"] else int32


def default_float_dtype() -> np.dtype:
    return float64 if _flags["jax_enable_x64"] else float32


def default_complex_dtype() -> np.dtype:
    return complex128 if _flags["jax_enable_x64"] else complex64


def to_inexact_dtype(dtype: Any) -> np.dtype:
    """The float an integer or bool dtype computes in where a function needs one (``mean``, ``sin``, ``/``):
    float64 for 64-bit integers, float32 for narrower ones and bools, also with x64 on (JAX's table)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return dtype
    return canonicalize_dtype(float64 if dtype.itemsize == 8 else float32)


def to_complex_dtype(dtype: Any) -> np.dtype:
    """The complex dtype of ``to_inexact_dtype(dtype)``'s width: complex128 from float64, else complex64."""
    dtype = to_inexact_dtype(dtype)
    return dtype if dtype.kind == "c" else canonicalize_dtype(complex128 if dtype == float64 else complex64)


def default_uint_dtype() -> np.dtype:
    return uint64 if _flags["jax_enable_x64"] else uint32


def _weak_node_dtype(node: Any) -> np.dtype:
    return {WEAK_INT: default_int_dtype, WEAK_FLOAT: default_float_dtype, WEAK_COMPLEX: default_complex_dtype}[node]()


def dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    """The (canonical dtype, weak bit) a value takes part in promotion with."""
    if isinstance(x, (bool, np.bool_)):
        return bool_, False
    if isinstance(x, np.generic):
        return canonicalize_dtype(x.dtype), False
    if isinstance(x, int):
        return default_int_dtype(), True
    if isinstance(x, float):
        return default_float_dtype(), True
    if isinstance(x, complex):
        return default_complex_dtype(), True
    typ = getattr(x, "aval", None)
    if isinstance(typ, TensorType):
        return typ.dtype, typ.weak_type
    if isinstance(x, np.ndarray):
        check_host_array(x)
    if hasattr(x, "dtype") and not isinstance(x, type):
        return canonicalize_dtype(x.dtype), bool(getattr(x, "weak_type", False))
    return canonicalize_dtype(to_dtype(x)), False


def check_host_array(x: np.ndarray) -> None:
    """Refuse the NumPy arrays JAX refuses: masked ones (their mask would be dropped) and ones whose bytes are not in
    this machine's order."""
    if isinstance(x, np.ma.MaskedArray):
        raise ValueError("numpy masked arrays are not supported as direct inputs to JAX functions. Use arr.filled() "
                         "to convert the value to a standard numpy array.")
    if not x.dtype.isnative:
        raise TypeError(f"Dtype {x.dtype.str} is not a valid JAX array type: its bytes are not in this machine's "
                        f"order (convert it with arr.astype(arr.dtype.newbyteorder('=')))")


def _node(dtype: np.dtype, weak: bool) -> Any:
    if not weak or dtype == bool_:
        return dtype
    return {"i": WEAK_INT, "u": WEAK_INT, "f": WEAK_FLOAT, "c": WEAK_COMPLEX}[dtype.kind]


def promote_types_and_weak(*pairs: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promote (dtype, weak) pairs the way JAX does; returns the result's (dtype, weak)."""
    dtypes = {d for d, _ in pairs}
    if len(dtypes) == 1 and not all(w for _, w in pairs):
        return next(iter(dtypes)), False
    # nodes in first-seen order, so that an error names the operands as they came
    node = _least_upper_bound(tuple(dict.fromkeys(_node(d, w) for d, w in pairs)), _promotion())
    if isinstance(node, str):
        return _weak_node_dtype(node), True
    return canonicalize_dtype(node), all(w for _, w in pairs) and node != bool_


def result_type(*args: Any, return_weak_type: bool = False) -> Any:
    """``jnp.result_type``: the dtype values, dtypes and Python scalars promote to."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    dtype, weak = promote_types_and_weak(*(dtype_and_weak(a) for a in args))
    return (dtype, weak) if return_weak_type else dtype


_PY_TYPE_NODES = {int: WEAK_INT, float: WEAK_FLOAT, complex: WEAK_COMPLEX}


def promote_types(a: Any, b: Any) -> np.dtype:
    """``jnp.promote_types``: promotion of two dtypes, as JAX answers it: never weak and not narrowed to 32
    bits; the Python types int, float, complex are the weak kinds; a weak result is the kind's 64-bit
    dtype; and with x64 off, uint32 meets a signed type of at most 32 bits in int32."""
    # look up by identity: np.dtype('float64') == float holds, but the dtype is not the Python type
    nodes = [_PY_TYPE_NODES[x] if any(x is t for t in _PY_TYPE_NODES) else np.dtype(to_dtype(x)) for x in (a, b)]
    node = _least_upper_bound(tuple(dict.fromkeys(nodes)), _promotion())
    if isinstance(node, str):
        return {WEAK_INT: int64, WEAK_FLOAT: float64, WEAK_COMPLEX: complex128}[node]
    if node == int64 and _promotion() == "standard" and not _flags["jax_enable_x64"] and uint32 in nodes and all(
            isinstance(n, np.dtype) and n.itemsize <= 4 for n in nodes):
        return int32
    return np.dtype(node)


def to_dtype(x: Any) -> np.dtype:
    """A dtype from a dtype-like (``jnp.float32``, ``'float32'``, ``float``, ``np.int8``)."""
    if x is None:
        raise TypeError("dtype None is not a dtype")
    if x is float:
        return default_float_dtype()
    if x is int:
        return default_int_dtype()
    if x is complex:
        return default_complex_dtype()
    if x is bool:
        return bool_
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, np.dtype):
        return dtype
    try:
        return np.dtype(x)
    except TypeError as e:
        raise TypeError(f"{x!r} is not a valid dtype") from e


def is_weakly_typed(x: Any) -> bool:
    return dtype_and_weak(x)[1]


class extended(np.generic):
    """The scalar class of dtypes NumPy does not have (``jax.dtypes.extended``)."""


class prng_key(extended):
    """The scalar class of typed keys' dtype, ``key<fry>`` (``jax.dtypes.prng_key``)."""


def _extended_type(x: Any) -> type | None:
    """The scalar class of an extended dtype instance (a typed key's ``key<fry>``), else None."""
    t = getattr(x, "type", None)
    return t if not isinstance(x, (np.dtype, type)) and isinstance(t, type) and issubclass(t, extended) else None


def issubdtype(a: Any, b: Any) -> bool:
    """``np.issubdtype``, with JAX's extended dtypes: a typed key's dtype is a subdtype of itself,
    ``prng_key``, ``extended`` and ``np.generic`` only, and no NumPy dtype is a subdtype of those."""
    if _extended_type(b) is not None:
        return _extended_type(a) is not None and a == b
    a_type = _extended_type(a)
    if a_type is not None:
        return isinstance(b, type) and issubclass(a_type, b)
    if isinstance(b, type) and issubclass(b, extended):
        return isinstance(a, type) and issubclass(a, b)
    return np.issubdtype(to_dtype(a) if not _is_abstract(a) else a, to_dtype(b) if not _is_abstract(b) else b)


def _is_abstract(x: Any) -> bool:
    return isinstance(x, type) and issubclass(x, np.generic) and x in (
        np.number, np.inexact, np.floating, np.complexfloating, np.integer, np.signedinteger,
        np.unsignedinteger, np.generic, np.bool_, np.flexible, np.character,
    )
