"""What a product's ``precision=`` may be (``PrecisionLike``): a ``Precision``, its names, a pair of them, a
``DotAlgorithmPreset`` (or its name) or a ``DotAlgorithm``; and how an algorithm changes a product.

A precision level is only a parameter of ``dot_general`` (on the CPU it changes nothing). An algorithm names the
types the operands are rounded to and the type the sum accumulates in, so it changes the numbers: XLA's CPU backend
converts the operands to the algorithm's input types, computes the product in its accumulation type, and converts
the result to the product's own dtype; it accepts only a few presets (``_CPU_PRESETS``) and no ``DotAlgorithm``,
and JAX checks that when the product is compiled, that is at the call. A convolution ignores an algorithm.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple, Union

import numpy as np

from srcjax.runtime import dtypes
from srcjax.transpiler.primitives.convolution import Precision, dot_general_p

__all__ = ["DotAlgorithm", "DotAlgorithmPreset", "PrecisionLike"]

# bfloat16 as a dtype where ml_dtypes provides it, else a stand-in that no array's dtype equals
_BFLOAT16: Any = np.dtype(dtypes.bfloat16) if dtypes.bfloat16 is not None else object()

# JAX's spellings of the three levels (case matters: 'HIGHEST' is no name of a level nor of a preset)
_PRECISION_NAMES = {"highest": Precision.HIGHEST, "float32": Precision.HIGHEST, "high": Precision.HIGH,
                    "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH, "default": Precision.DEFAULT,
                    "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT}


class DotAlgorithm(NamedTuple):
    """A product's algorithm: the types lhs and rhs are rounded to, the type it accumulates in, and how many
    components and primitive products emulate a wider type (1 where there is no such split)."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """Named algorithms, ``LHS_RHS_ACCUMULATION`` (``_X3`` and so on: emulated by that many products)."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self) -> tuple[Any, ...] | None:
        """The input types the algorithm takes as they are (None: any); another input becomes the first."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8"):
            return None
        if name.startswith("F16_"):
            return (np.dtype(np.float16),)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (_BFLOAT16, np.dtype(np.float32))
        if name == "F64_F64_F64":
            return (np.dtype(np.float64),)
        return (np.dtype(np.float32),)

    @property
    def supported_rhs_types(self) -> tuple[Any, ...] | None:
        return self.supported_lhs_types

    @property
    def accumulation_type(self) -> Any:
        name = self.name
        if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {"F16_F16_F16": np.dtype(np.float16), "BF16_BF16_BF16": _BFLOAT16,
                "F64_F64_F64": np.dtype(np.float64)}.get(name, np.dtype(np.float32))

    def supported_output_types(self, lhs_dtype: Any, rhs_dtype: Any) -> tuple[Any, ...] | None:
        """The result types the algorithm can give directly (None: any); F16/BF16 inputs may stay half."""
        half = {"F16_F16_F32": np.dtype(np.float16), "BF16_BF16_F32": _BFLOAT16}.get(self.name)
        if self.name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
            return (np.dtype(np.float32), np.dtype(np.float16), _BFLOAT16)
        if half is not None:
            both_half = lhs_dtype == half and rhs_dtype == half
            return (np.dtype(np.float32), half) if both_half else (np.dtype(np.float32),)
        return None if self.accumulation_type is None else (self.accumulation_type,)


PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision], DotAlgorithm,
                      DotAlgorithmPreset]

# the algorithms XLA's CPU backend computes (JAX refuses the others there when the product is compiled)
_CPU_PRESETS = frozenset(DotAlgorithmPreset[name] for name in (
    "DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"))

# the level an algorithm's product asks of a backend that has levels (cuBLAS: TF32 or not)
_ALGORITHM_LEVEL = {"DEFAULT": None, "F32_F32_F32": Precision.HIGHEST, "F64_F64_F64": Precision.HIGHEST,
                    "BF16_BF16_F32_X6": Precision.HIGHEST, "BF16_BF16_F32_X9": Precision.HIGHEST,
                    "BF16_BF16_F32_X3": Precision.HIGH, "TF32_TF32_F32_X3": Precision.HIGH}


def _bad_precision(precision: Any) -> ValueError:
    return ValueError(f"Precision argument must be one of: None, a string in {list(_PRECISION_NAMES)}, a "
                      "lax.Precision value, a tuple of two lax.Precision values or strings, a lax.DotAlgorithmPreset "
                      f"or the name of one of these presets, or a lax.DotAlgorithm value; but got {precision}.")


def canonical_algorithm(precision: Any) -> DotAlgorithm | DotAlgorithmPreset | None:
    """The algorithm ``precision`` names, or None when it names levels (or nothing)."""
    if isinstance(precision, str) and precision not in _PRECISION_NAMES:
        try:
            return DotAlgorithmPreset[precision]
        except KeyError:
            raise _bad_precision(precision) from None
    return precision if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)) else None


def canonical_precision(precision: Any) -> Any:
    """None, a ``Precision`` or a pair of them: the level(s) ``precision`` asks for (an algorithm's level is the
    one its accuracy needs of a backend with levels; a convolution's algorithm is only that)."""
    if precision is None or isinstance(precision, Precision):
        return precision
    if isinstance(precision, str) and precision in _PRECISION_NAMES:
        return _PRECISION_NAMES[precision]
    algorithm = canonical_algorithm(precision)
    if algorithm is not None:
        return _ALGORITHM_LEVEL.get(algorithm.name, Precision.DEFAULT) if isinstance(algorithm, enum.Enum) else None
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)
        if all(isinstance(p, str) and p in _PRECISION_NAMES for p in precision):
            return tuple(_PRECISION_NAMES[p] for p in precision)
    raise _bad_precision(precision)


def _compute_types(algorithm: Any, lhs_dtype: np.dtype, rhs_dtype: np.dtype,
                   out_dtype: np.dtype) -> tuple[np.dtype, np.dtype, np.dtype]:
    """The types the operands are rounded to and the one the product accumulates in."""
    if isinstance(algorithm, DotAlgorithm):
        return tuple(np.dtype(dtypes.to_dtype(t)) for t in algorithm[:3])

    def fit(dtype: np.dtype, supported: tuple | None) -> np.dtype:
        return dtype if supported is None or dtype in supported else supported[0]

    lhs_t, rhs_t = fit(lhs_dtype, algorithm.supported_lhs_types), fit(rhs_dtype, algorithm.supported_rhs_types)
    return lhs_t, rhs_t, fit(out_dtype, algorithm.supported_output_types(lhs_t, rhs_t))


def _check_backend(algorithm: Any) -> None:
    from srcjax.runtime.devices import default_backend

    if default_backend() == "cpu" and algorithm not in _CPU_PRESETS:
        raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")


def bind_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any, preferred: np.dtype | None) -> Any:
    """``dot_general`` of two operands of one dtype, as ``precision`` asks: with an algorithm, the operands
    rounded to its input types, summed in its accumulation type, and the result in the product's own type."""
    from srcjax.runtime.numpy._core import aval, convert

    level, algorithm = canonical_precision(precision), canonical_algorithm(precision)
    if preferred is not None:
        dtype = aval(lhs).dtype
        if algorithm is None and dtype.kind not in "fc" and _bit_width(preferred) < _bit_width(dtype):
            raise TypeError("`preferred_element_type` must not be narrower than the original type, got "
                            f"preferred_element_type of {preferred} for result type of {dtype}.")
        if dtype.kind in "fc" and preferred.kind in "biu":
            # XLA computes the product of float operands in their own type, then converts it: the operands are
            # not rounded to integers first
            return convert(bind_dot_general(lhs, rhs, dimension_numbers, precision, None), preferred)
    if algorithm is None or algorithm == DotAlgorithmPreset.DEFAULT:
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers, precision=level,
                                  preferred_element_type=preferred)
    _check_backend(algorithm)
    (dtype, lweak), rweak = (aval(lhs).dtype, aval(lhs).weak_type), aval(rhs).weak_type
    out_dtype = dtype if preferred is None else preferred
    lhs_t, rhs_t, accumulation = _compute_types(algorithm, dtype, dtype, out_dtype)
    compute = dtypes.promote_types(_held(lhs_t), _held(rhs_t))  # srcjax's product takes one dtype
    product = dot_general_p.bind(_round_to(lhs, lhs_t, compute), _round_to(rhs, rhs_t, compute),
                                 dimension_numbers=dimension_numbers, precision=level,
                                 preferred_element_type=None if _held(accumulation) == compute else _held(accumulation))
    weak = lweak and rweak and preferred is None
    return convert(_round_to(product, accumulation, _held(accumulation)), out_dtype, weak)


# srcjax has no bfloat16 arrays: a bfloat16 value is held in float32, rounded to bfloat16's 8 exponent and 7
# mantissa bits (the same nearest-even rounding as a conversion, but below bfloat16's normal range it flushes to 0)


def _bit_width(dtype: np.dtype) -> int:
    """Bits of ``dtype`` as JAX's ``preferred_element_type`` check counts them (bool: 1)."""
    return 1 if dtype.kind == "b" else dtype.itemsize * 8


def _held(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == _BFLOAT16 else dtype


def _round_to(x: Any, dtype: np.dtype, compute: np.dtype) -> Any:
    """``x`` rounded to ``dtype`` and held as ``compute``."""
    from srcjax.runtime.lax.elementwise import reduce_precision
    from srcjax.runtime.numpy._core import aval, convert

    if dtype != _BFLOAT16:
        return convert(convert(x, dtype), compute)
    wide = aval(x).dtype if aval(x).dtype.kind == "f" and aval(x).dtype.itemsize >= 4 else np.dtype(np.float32)
    return convert(reduce_precision(convert(x, wide), exponent_bits=8, mantissa_bits=7), _held(compute))

