"""The base of ``srcjax.numpy``: array creation from Python data, scalar types, and the promotion helpers.

Every ``jnp`` function takes array-likes (arrays, NumPy arrays, Python scalars), promotes their dtypes
with JAX's lattice and broadcasts their shapes NumPy-style through these helpers before binding
primitives. Nothing here touches a value's data, so the helpers work on concrete arrays and on the
symbolic values of a function being compiled alike.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.array import Array
from srcjax.runtime.config import config
from srcjax.runtime.eager import to_array
from srcjax.transpiler.primitives.elementwise import convert_element_type_p
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p, reshape_p
from srcjax.transpiler.dtypes import check_host_array
from srcjax.transpiler.types import TensorType

__all__ = [
    "asarray", "array", "ndarray", "dtype", "result_type", "promote_types", "can_cast", "issubdtype",
    "iinfo", "finfo", "ndim", "shape", "size", "isscalar", "iscomplexobj", "isrealobj", "isdtype",
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "complex64", "complex128", "bfloat16", "int_", "uint", "float_", "complex_", "double", "single",
    "number", "inexact", "floating", "complexfloating", "integer", "signedinteger", "unsignedinteger", "generic",
    "bool", "newaxis", "pi", "e", "inf", "nan", "euler_gamma", "dtypes_module", "csingle", "cdouble", "character",
    "flexible", "object_", "ComplexWarning",
]

ndarray = Array
dtype = np.dtype
newaxis = None
pi, e, inf, nan, euler_gamma = np.pi, np.e, np.inf, np.nan, np.euler_gamma
number, inexact, floating, complexfloating = np.number, np.inexact, np.floating, np.complexfloating
integer, signedinteger, unsignedinteger, generic = np.integer, np.signedinteger, np.unsignedinteger, np.generic
result_type = dtypes.jax_result_type


class iinfo(np.iinfo):  # noqa: N801 - NumPy's name
    """NumPy's ``iinfo``, printed as JAX prints it: ``iinfo(min=-128, max=127, dtype=int8)``."""

    def __str__(self) -> str:
        return repr(self)


promote_types = dtypes.promote_types
issubdtype = dtypes.issubdtype
dtypes_module = dtypes


def finfo(dtype_like: Any) -> np.finfo:
    return np.finfo(dtypes.to_dtype(dtype_like) if not hasattr(dtype_like, "aval") else dtype_like.dtype)


def can_cast(from_, to, casting: str = "safe") -> bool:
    source = from_.dtype if hasattr(from_, "dtype") and not isinstance(from_, type) else dtypes.to_dtype(from_)
    return np.can_cast(source, dtypes.to_dtype(to), casting)


def isdtype(dtype_like: Any, kind: Any) -> bool:
    return np.isdtype(dtypes.to_dtype(dtype_like), kind)


class _ScalarMeta(type):
    """``jnp.float32`` and friends: usable as dtypes, and calling one makes a 0-d array of that dtype."""

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other: Any) -> bool:
        return cls is other or (isinstance(other, (np.dtype, type, str)) and _same_dtype(cls.dtype, other))

    def __ne__(cls, other: Any) -> bool:
        return not cls == other

    def __call__(cls, x: Any) -> Array:
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"<class 'srcjax.numpy.{cls.__name__}'>"


def _same_dtype(d: np.dtype, other: Any) -> bool:
    try:
        return np.dtype(other) == d
    except TypeError:
        return False


def _scalar_type(name: str, np_type: Any) -> _ScalarMeta:
    return _ScalarMeta(name, (object,), {"dtype": np.dtype(np_type)})


bool_ = _scalar_type("bool_", np.bool_)
bool = bool_  # noqa: A001 - numpy 2 spells it both ways
int8, int16, int32, int64 = (_scalar_type(f"int{b}", f"int{b}") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (_scalar_type(f"uint{b}", f"uint{b}") for b in (8, 16, 32, 64))
float16, float32, float64 = (_scalar_type(f"float{b}", f"float{b}") for b in (16, 32, 64))
complex64, complex128 = _scalar_type("complex64", np.complex64), _scalar_type("complex128", np.complex128)
bfloat16 = _scalar_type("bfloat16", dtypes.bfloat16) if dtypes.bfloat16 is not None else None
int_, uint, float_, complex_ = int64, uint64, float64, complex128
double, single = float64, float32
csingle, cdouble = complex64, complex128
character, flexible, object_ = np.character, np.flexible, np.object_  # (abstract or unsupported: for issubdtype)
ComplexWarning = np.exceptions.ComplexWarning


# -- what a value is ---------------------------------------------------------------------------------------
_SCALARS = (int, float, complex, np.generic, type(True))


def is_arraylike(x: Any) -> bool:
    return isinstance(x, (Array, np.ndarray, *_SCALARS)) or isinstance(getattr(x, "aval", None), TensorType)


def is_concrete(x: Any) -> bool:
    """True unless ``x`` is a symbolic value of a function being compiled."""
    return not (isinstance(getattr(x, "aval", None), TensorType) and not isinstance(x, Array))


def check_arraylike(name: str, *args: Any) -> None:
    for i, arg in enumerate(args):
        if not is_arraylike(arg):
            raise TypeError(
                f"{name} requires ndarray or scalar arguments, got {type(arg).__name__} at position {i}"
                + (" (convert lists and tuples with jnp.asarray first)" if isinstance(arg, (list, tuple)) else "")
            )


def aval(x: Any) -> TensorType:
    """The type of any array-like: an array's own, or a scalar's (weak) type under canonical dtypes."""
    typ = getattr(x, "aval", None)
    if isinstance(typ, TensorType):
        return typ
    dtype, weak = dtypes.dtype_and_weak(x)
    return TensorType(dtype, np.shape(x), weak)


def ndim(x: Any) -> int:
    return len(aval(x).shape) if is_arraylike(x) else np.ndim(x)


def shape(x: Any) -> tuple[int, ...]:
    return aval(x).shape if is_arraylike(x) else np.shape(x)


def size(x: Any, axis: int | None = None) -> int:
    s = shape(x)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


def isscalar(x: Any) -> bool:
    return isinstance(x, _SCALARS) or (is_arraylike(x) and not isinstance(x, np.ndarray) and ndim(x) == 0)


def iscomplexobj(x: Any) -> bool:
    return aval(asarray(x) if not is_arraylike(x) else x).dtype.kind == "c"


def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)


# -- conversion --------------------------------------------------------------------------------------------
def convert(x: Any, dtype: np.dtype, weak_type: bool = False) -> Any:
    """``x`` as ``dtype`` (and weak bit), binding a conversion only when something changes."""
    dtype = np.dtype(dtype)
    if isinstance(x, int) and not isinstance(x, (bool, np.generic)):
        # as in JAX: the int must fit the default int dtype (OverflowError otherwise); narrower ints wrap
        x = to_array(x)._value.astype(dtype)
    elif isinstance(x, _SCALARS) and not isinstance(x, np.generic):
        if isinstance(x, complex) and dtype.kind != "c":
            x = x.real
        # a float becomes an integer as JAX converts arrays, saturating (NaN: 0), not as NumPy does (it raises)
        x = to_array(x) if isinstance(x, float) and dtype.kind in "iub" else np.asarray(x, dtype)
    typ = aval(x)
    if typ.dtype == dtype and typ.weak_type == weak_type and not isinstance(x, (np.ndarray, np.generic)):
        return x
    return convert_element_type_p.bind(x, new_dtype=dtype, weak_type=weak_type)


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None,
            device: Any = None) -> Any:
    if device is not None:  # (the array API's placement, as ``device_put``: a traced value stays where it is)
        from srcjax.runtime.devices import device_put

        return device_put(asarray(a, dtype, order, copy=copy), device)
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"asarray: order={order!r} is not supported (srcjax arrays are C-ordered)")
    want = None if dtype is None else dtypes.check_user_dtype(dtype, "asarray")
    if not is_concrete(a):
        return a if want is None else convert(a, want)
    if isinstance(a, Array):  # (a dtype asked for makes a weakly typed array strong, as JAX's does)
        return a if want is None or (want == a.dtype and not a.weak_type) else convert(a, want)
    if isinstance(a, (list, tuple)) and any(not is_concrete(leaf) for leaf in _check_leaves(a)):
        return _stack_symbolic(a, want)
    if hasattr(a, "__jax_array__"):
        return asarray(a.__jax_array__(), dtype)
    return _from_python(a, want)


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K", ndmin: int = 0, *,
          device: Any = None) -> Any:
    out = asarray(object, dtype, None if order == "K" else order)
    if ndmin > ndim(out):
        out = reshape_p.bind(out, new_sizes=(1,) * (ndmin - ndim(out)) + shape(out), dimensions=None)
    return out if device is None else asarray(out, device=device)


def _leaves(a: Any) -> list:
    if isinstance(a, (list, tuple)):
        return [leaf for item in a for leaf in _leaves(item)]
    return [a]


def _check_leaves(a: Any) -> list:
    """The leaves of nested lists for ``jnp.array``, refused as JAX refuses them (None, text, objects)."""
    leaves = _leaves(a)
    for leaf in leaves:
        if leaf is None:
            raise ValueError("None is not a valid value for jnp.array")
        if not (isinstance(leaf, (*_SCALARS, Array, np.ndarray)) or is_arraylike(leaf)):
            raise TypeError(f"jnp.array: cannot convert an element of type {type(leaf).__name__} to an array")
    return leaves


def _from_python(a: Any, want: np.dtype | None) -> Array:
    """A concrete array from a scalar, a NumPy array or nested lists of them (lists are never weak)."""
    if isinstance(a, (list, tuple)):
        leaves = _check_leaves(a)
        if want is None:
            want = dtypes.result_type(*leaves) if leaves else dtypes.default_float_dtype()
        try:
            return Array(np.array(a, dtype=want))
        except ValueError as e:
            raise ValueError(f"jnp.array: the nested sequence is ragged or mixes shapes ({e})") from None
    if not isinstance(a, (np.ndarray, *_SCALARS)):
        if not hasattr(a, "__array__"):
            raise TypeOrValueError(f"jnp.asarray: cannot convert a value of type {type(a).__name__} to an array")
        a = np.asarray(a)
    if isinstance(a, np.ndarray):
        check_host_array(a)
    if want is None:
        return to_array(np.array(a) if isinstance(a, np.ndarray) else a, "jnp.asarray")
    if isinstance(a, complex) and want.kind != "c":
        a = a.real
    return Array(np.array(a, dtype=want))


def _stack_symbolic(a: Sequence[Any], want: np.dtype | None) -> Any:
    items = [asarray(item) if isinstance(item, (list, tuple)) else item for item in a]
    if len({aval(item).shape for item in items}) > 1:  # (JAX's error type for a ragged list of traced values)
        raise TypeError(f"jnp.array: the nested sequence is ragged or mixes shapes: its items have shapes "
                        f"{[aval(item).shape for item in items]}")
    dtype = want if want is not None else dtypes.result_type(*items)
    parts = []
    for item in items:
        item = convert(item, dtype)
        parts.append(reshape_p.bind(item, new_sizes=(1, *aval(item).shape), dimensions=None))
    from srcjax.transpiler.primitives.shape import concatenate_p

    return concatenate_p.bind(*parts, dimension=0)


# -- promotion ---------------------------------------------------------------------------------------------
def promote_dtypes(*args: Any) -> list[Any]:
    """Convert every argument to the dtype (and weak bit) they promote to together."""
    if len(args) < 2:
        return [x if is_arraylike(x) and not isinstance(x, _SCALARS) else asarray(x) for x in args]
    dtype, weak = dtypes.result_type(*args, return_weak_type=True)
    return [convert(x, dtype, weak) for x in args]


def promote_dtypes_inexact(*args: Any) -> list[Any]:
    """As ``promote_dtypes``, then integers and bools become floats (keeping the weak bit): float64 for
    64-bit integers, float32 for narrower ones (JAX's rule; with x64 off both are float32)."""
    dtype, weak = dtypes.result_type(*args, return_weak_type=True)
    return [convert(x, dtypes.to_inexact_dtype(dtype), weak) for x in args]


def promote_dtypes_complex(*args: Any) -> list[Any]:
    dtype, weak = dtypes.result_type(*args, return_weak_type=True)
    return [convert(x, dtypes.to_complex_dtype(dtype), weak) for x in args]


class TypeOrValueError(TypeError, ValueError):
    """Bad input for which JAX raises one type and NumPy the other (incompatible shapes: JAX a TypeError, NumPy a
    ValueError): both, so that an ``except`` written for either catches it."""


class ZeroDivisionOrValueError(ZeroDivisionError, ValueError):
    """``arange`` with a zero step: JAX's ZeroDivisionError, NumPy's ValueError."""


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise TypeOrValueError(f"incompatible shapes for broadcasting: {', '.join(str(tuple(s)) for s in shapes)}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to(x: Any, shape_: Sequence[int]) -> Any:
    shape_ = (shape_,) if isinstance(shape_, (int, np.integer)) else tuple(int(d) for d in shape_)
    x = asarray(x) if not is_arraylike(x) or isinstance(x, _SCALARS) else x
    old = aval(x).shape
    if old == shape_:
        return x
    lead = len(shape_) - len(old)
    if lead < 0 or any(o not in (1, n) for o, n in zip(old, shape_[lead:])):
        raise ValueError(f"cannot broadcast an array of shape {old} to shape {shape_}")
    return broadcast_in_dim_p.bind(x, shape=shape_, broadcast_dimensions=tuple(range(lead, len(shape_))))


_RANK_PROMOTION_DOC = "https://docs.jax.dev/en/latest/rank_promotion_warning.html"
_flags = config._values


def promote_shapes(*args: Any, name: str | None = None) -> list[Any]:
    """The operands broadcast to one shape. Given the ``name`` of the operation, operands of different ranks
    (scalars aside) are an error under ``jax_numpy_rank_promotion='raise'`` and a warning under 'warn', as JAX's
    ufuncs do (``jnp.where`` and indexing broadcast without the check)."""
    if len(args) < 2:
        return list(args)
    shapes = [aval(x).shape for x in args]
    target = broadcast_shapes(*shapes)
    if name is not None:
        check_rank_promotion(name, shapes)
    return [broadcast_to(x, target) if shape != target else x for x, shape in zip(args, shapes)]


def check_rank_promotion(name: str, shapes: list[tuple[int, ...]]) -> None:
    """Under ``jax_numpy_rank_promotion`` 'raise' or 'warn', operands of ``name`` of different ranks (scalars
    aside) are an error or a warning."""
    mode = _flags["jax_numpy_rank_promotion"]  # (every ufunc reads it: the table, not config's attribute lookup)
    if mode == "allow" or len({len(s) for s in shapes if s}) <= 1:
        return
    listed = " ".join(map(str, shapes))
    if mode == "raise":
        raise ValueError(f"Operands could not be broadcast together for {name} on shapes {listed} and with the config "
                         f"option jax_numpy_rank_promotion='raise'. For more information, see {_RANK_PROMOTION_DOC}.")
    import warnings

    warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes {listed}. Set the "
                  "jax_numpy_rank_promotion config option to 'allow' to disable this warning; for more information, "
                  f"see {_RANK_PROMOTION_DOC}.", stacklevel=4)


def promote_args(name: str, *args: Any) -> list[Any]:
    """Check, then promote dtypes and broadcast shapes: what a NumPy ufunc does with its operands."""
    check_arraylike(name, *args)
    return promote_shapes(*promote_dtypes(*args), name=name)


def promote_args_inexact(name: str, *args: Any) -> list[Any]:
    check_arraylike(name, *args)
    return promote_shapes(*promote_dtypes_inexact(*args), name=name)
