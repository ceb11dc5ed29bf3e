"""``lax``'s matrix products and convolutions, with JAX's signatures.

``dot_general`` accepts operands of different dtypes and computes in the one of higher precision (JAX's, and
XLA's, rule: not the promotion lattice, so int8 with uint8 is int8) before binding the strict primitive;
``conv_general_dilated`` takes operands of one dtype, as JAX's does. Convolution helpers turn layout strings
(``'NCHW'``, ``'OIHW'``) into axis permutations and padding names (``'SAME'``, ``'VALID'``) into explicit pairs,
as JAX does.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.numpy._core import aval, convert, is_arraylike
from srcjax.runtime.lax.precision import DotAlgorithm, DotAlgorithmPreset, PrecisionLike, bind_dot_general
from srcjax.runtime.lax.precision import canonical_algorithm, canonical_precision
from srcjax.transpiler.primitives.convolution import ConvDimensionNumbers, Precision, conv_general_dilated_p
from srcjax.transpiler.primitives.shape import rev_p, transpose_p

__all__ = [
    "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "DotAlgorithm", "DotAlgorithmPreset",
    "DotDimensionNumbers", "PaddingType", "Precision", "PrecisionLike", "batch_matmul", "conv",
    "conv_dimension_numbers", "conv_general_dilated", "conv_general_dilated_local", "conv_general_dilated_patches",
    "conv_general_permutations", "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose",
    "conv_transpose_shape_tuple", "conv_with_general_padding", "dot", "dot_general", "padtype_to_pads",
]

_PY_SCALARS = (bool, int, float, complex)
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None


class PaddingType(enum.Enum):
    VALID = 1
    SAME = 2
    SAME_LOWER = 3


def _preferred(dtype: Any) -> np.dtype | None:
    return None if dtype is None else dtypes.canonicalize_dtype(dtypes.to_dtype(dtype))


def _precision_rank(dtype: np.dtype) -> tuple:
    """What JAX's dot_general compares to pick the result of two dtypes (XLA's HigherPrecisionType): complex
    or not, the exponent's range, the mantissa's bits, the width, signed or not."""
    real = np.finfo(dtype).dtype if dtype.kind == "c" else dtype
    floating = real.kind == "f"
    return (dtype.kind == "c", np.finfo(real).maxexp if floating else -1, np.finfo(real).nmant if floating else -1,
            real.itemsize * 8 if real.kind != "b" else 1, real.kind != "u")


def _promote_pair(name: str, lhs: Any, rhs: Any, *, same: bool = False) -> tuple[Any, Any]:
    """Both operands in one dtype: the one of higher precision (``_precision_rank``; two different dtypes of
    the same rank are refused), or with ``same`` the one both have. A Python scalar counts as its weak type
    (an int as int32), as in JAX."""
    for x in (lhs, rhs):
        if not is_arraylike(x):
            raise TypeError(f"lax.{name}: expected arrays or scalars, got {type(x).__name__}")
    (ldt, lweak), (rdt, rweak) = ((aval(x).dtype, aval(x).weak_type) for x in (lhs, rhs))
    if same and ldt != rdt:
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {ldt.name}, {rdt.name}")
    lrank, rrank = _precision_rank(ldt), _precision_rank(rdt)
    if lrank == rrank and ldt != rdt:
        raise TypeError(f"lax.{name} argument type error: {ldt.name}, {rdt.name}")
    dtype, weak = ldt if lrank >= rrank else rdt, lweak and rweak
    return (lhs if aval(lhs).dtype == dtype and not isinstance(lhs, _PY_SCALARS) else convert(lhs, dtype, weak),
            rhs if aval(rhs).dtype == dtype and not isinstance(rhs, _PY_SCALARS) else convert(rhs, dtype, weak))


# -- products --------------------------------------------------------------------------------------------
def dot_general(lhs: Any, rhs: Any, dimension_numbers: DotDimensionNumbers, precision: Any = None,
                preferred_element_type: Any = None, *, out_sharding: Any = None) -> Any:
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        dims = ((tuple(map(operator.index, lc)), tuple(map(operator.index, rc))),
                (tuple(map(operator.index, lb)), tuple(map(operator.index, rb))))
    except (TypeError, ValueError):
        raise TypeError("lax.dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
                        f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}") from None
    preferred = _preferred(preferred_element_type)
    promoted = _promote_pair("dot_general", lhs, rhs)
    if preferred is not None and aval(lhs).dtype != aval(rhs).dtype:
        # operands of two dtypes are converted to the result's, as JAX lowers such a product for CPUs and GPUs
        promoted = convert(lhs, preferred), convert(rhs, preferred)
    return bind_dot_general(*promoted, dims, precision, preferred)


def dot(lhs: Any, rhs: Any, *, dimension_numbers: DotDimensionNumbers | None = None, precision: Any = None,
        preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """Vector/matrix products of rank-1 and rank-2 operands: the last lhs axis meets the first rhs axis."""
    if dimension_numbers is not None:
        return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
    lrank, rrank = len(aval(lhs).shape), len(aval(rhs).shape)
    if lrank not in (1, 2) or rrank not in (1, 2):
        raise TypeError(f"lax.dot: operands must be vectors or matrices, got shapes {aval(lhs).shape} and "
                        f"{aval(rhs).shape} (use dot_general)")
    if aval(lhs).shape[-1] != aval(rhs).shape[0]:
        raise TypeError(f"lax.dot: incompatible shapes for dot: got {aval(lhs).shape} and {aval(rhs).shape}")
    return dot_general(lhs, rhs, (((lrank - 1,), (0,)), ((), ())), precision, preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Matrix products over the leading (batch) axes: ``(..., m, k) @ (..., k, n)``."""
    lshape, rshape = aval(lhs).shape, aval(rhs).shape
    if len(lshape) != len(rshape) or len(lshape) < 2 or lshape[:-2] != rshape[:-2]:
        raise ValueError(f"lax.batch_matmul: operands need one rank (>= 2) and equal batch axes, got {lshape} and "
                         f"{rshape}")
    batch = tuple(range(len(lshape) - 2))
    return dot_general(lhs, rhs, (((len(lshape) - 1,), (len(lshape) - 2,)), (batch, batch)), precision)


# -- convolution helpers ---------------------------------------------------------------------------------
def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
                    padding: str | PaddingType) -> list[tuple[int, int]]:
    """Explicit (low, high) pads for 'VALID' (none) or 'SAME' / 'SAME_LOWER' (output = ceil(input / stride))."""
    if isinstance(padding, str):
        try:
            padding = PaddingType[padding.upper()]
        except KeyError:
            raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got "
                               f"{padding}.") from None
    if padding == PaddingType.VALID:
        return [(0, 0)] * len(in_shape)
    if not isinstance(padding, PaddingType):
        raise TypeError(f"Unknown padding type: {padding}.")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if padding == PaddingType.SAME else (big, small))
    return pads


def conv_general_permutations(dimension_numbers: tuple[str, str, str]) -> tuple[tuple[int, ...], ...]:
    """Axis permutations (batch/out-feature, feature/in-feature, spatial...) from layout strings.

    Spatial axes are ordered as they appear in the kernel's layout string.
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (spec, (a, b)) in enumerate(zip(dimension_numbers, pairs)):
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters '{a}' and '{b}' "
                            f"exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, got {spec}.")
    if not set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}:
        raise TypeError(f"convolution dimension_numbers elements must each have the same set of spatial "
                        f"characters, got {dimension_numbers}.")
    spatial = [c for c in rhs_spec if c not in "OI"]
    return tuple((spec.index(a), spec.index(b)) + tuple(spec.index(c) for c in spatial)
                 for spec, (a, b) in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: ConvGeneralDilatedDimensionNumbers) -> ConvDimensionNumbers:
    """``ConvDimensionNumbers`` from None (``NC...``/``OI...``/``NC...``), layout strings, or itself."""
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and "
                        f"{len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers must be a ConvDimensionNumbers or three layout strings, "
                        f"got {dimension_numbers!r}")
    if all(isinstance(s, str) for s in dimension_numbers):
        for spec, what in zip(dimension_numbers, ("lhs", "rhs", "out")):
            if len(spec) != len(lhs_shape):
                raise TypeError(f"convolution {what} layout {spec!r} needs {len(lhs_shape)} characters")
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    return ConvDimensionNumbers(*(tuple(map(operator.index, s)) for s in dimension_numbers))


def _dilate_dim(size: int, dilation: int) -> int:
    return 0 if size == 0 else 1 + dilation * (size - 1)


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]],
                         lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: ConvGeneralDilatedDimensionNumbers = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None, preferred_element_type: Any = None,
                         out_sharding: Any = None) -> Any:
    lhs, rhs = _promote_pair("conv_general_dilated", lhs, rhs, same=True)
    lshape, rshape = aval(lhs).shape, aval(rhs).shape
    dn = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    spatial = len(lshape) - 2
    lhs_dilation = (1,) * spatial if lhs_dilation is None else tuple(map(operator.index, lhs_dilation))
    rhs_dilation = (1,) * spatial if rhs_dilation is None else tuple(map(operator.index, rhs_dilation))
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution using this op. Please "
                             "either exactly specify the required padding or use conv_transpose.")
        kernel = [_dilate_dim(rshape[a], d) for a, d in zip(dn.rhs_spec[2:], rhs_dilation)]
        padding = padtype_to_pads([lshape[a] for a in dn.lhs_spec[2:]], kernel, window_strides, padding)
    try:
        padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"padding argument to conv_general_dilated should be a string or a sequence of (low, high) "
                         f"pairs, got {padding}") from None
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=tuple(map(operator.index, window_strides)), padding=padding,
        lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dn,
        feature_group_count=operator.index(feature_group_count), batch_group_count=operator.index(batch_group_count),
        precision=canonical_precision(precision), preferred_element_type=_preferred(preferred_element_type))


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str, precision: Any = None,
         preferred_element_type: Any = None) -> Any:
    """``conv_general_dilated`` in the NC... / OI... layout without dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: str | Sequence[tuple[int, int]], lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(low, high) pads of the dilated-input convolution that transposes a forward one with this padding."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        low, total = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return low, total - low


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                      5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: str | Sequence[tuple[int, int]],
                   rhs_dilation: Sequence[int] | None = None,
                   dimension_numbers: ConvGeneralDilatedDimensionNumbers = None, transpose_kernel: bool = False,
                   precision: Any = None, preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """A transposed convolution: the input dilated by ``strides``, with Keras's Conv2DTranspose padding."""
    lshape, rshape = aval(lhs).shape, aval(rhs).shape
    if len(lshape) != len(rshape) or len(lshape) < 2:
        raise ValueError(f"lax.conv_transpose: lhs {lshape} and rhs {rshape} need one rank, at least 2")
    if dimension_numbers is None:
        if len(lshape) not in _TRANSPOSE_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[len(lshape)]
    dn = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    spatial = len(lshape) - 2
    rhs_dilation = (1,) * spatial if rhs_dilation is None else tuple(rhs_dilation)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        kernel = [_dilate_dim(rshape[a], d) for a, d in zip(dn.rhs_spec[2:], rhs_dilation)]
        per_axis = [padding] * spatial if isinstance(padding, str) else [tuple(p) for p in padding]
        pads: Any = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(kernel, strides, per_axis))
    else:
        pads = padding
    if transpose_kernel:  # flip the spatial axes and swap the kernel's input and output features
        rhs = rev_p.bind(rhs, dimensions=tuple(dn.rhs_spec[2:]))
        perm = list(range(len(rshape)))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose_p.bind(rhs, permutation=tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * spatial, pads, tuple(strides), rhs_dilation, dn,
                                precision=precision, preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int], window_strides: Sequence[int],
                                 padding: str | Sequence[tuple[int, int]], lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: ConvGeneralDilatedDimensionNumbers = None, precision: Any = None,
                                 preferred_element_type: Any = None) -> Any:
    """The patches a convolution with a ``filter_shape`` kernel would see, as output features ordered
    (input feature, *filter position): a grouped convolution with one-hot kernels."""
    filter_shape = tuple(map(operator.index, filter_shape))
    lshape = aval(lhs).shape
    dn = conv_dimension_numbers(lshape, (1, 1) + filter_shape, dimension_numbers)
    features = lshape[dn.lhs_spec[1]]
    taps = int(np.prod(filter_shape, dtype=np.int64))
    one_hot = np.eye(taps, dtype=aval(lhs).dtype).reshape((taps, 1) + filter_shape)
    kernel = np.tile(one_hot, (features,) + (1,) * (len(filter_shape) + 1))  # canonical (O, I, *filter)
    kernel = np.transpose(kernel, np.argsort(dn.rhs_spec))  # into the layout rhs_spec names
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation, dn,
                                feature_group_count=features, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int],
                               padding: str | Sequence[tuple[int, int]], filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                               precision: Any = None) -> Any:
    """An unshared convolution (a locally connected layer): each output position has its own kernel. rhs's
    spatial axes are the output's positions, and its ``I`` axis holds (input feature, *window position), as
    ``conv_general_dilated_patches`` lays the patches out; each output is a patch contracted with its kernel."""
    from srcjax.runtime.numpy import asarray, moveaxis

    if canonical_algorithm(precision) is not None:
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    level = canonical_precision(precision)
    lhs = asarray(lhs)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
                                           dimension_numbers, precision=level[0] if isinstance(level, tuple) else level)
    _, rhs_spec, out_spec = conv_dimension_numbers(aval(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    # pair each output position of the patches with rhs's axis for it (rhs_spec orders them as the kernel's layout)
    out_positions, rhs_positions = out_spec[2:], rhs_spec[2:]
    order = sorted(range(len(out_positions)), key=lambda i: out_positions[i])
    dims = (([out_spec[1]], [rhs_spec[1]]), ([out_positions[i] for i in order], [rhs_positions[i] for i in order]))
    out = dot_general(patches, rhs, dims, precision)  # (*positions, N, O)
    return moveaxis(out, (-2, -1), (out_spec[0], out_spec[1]))


# -- shape helpers ---------------------------------------------------------------------------------------
def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], strides: Sequence[int],
                     pads: Sequence[tuple[int, int]], batch_group_count: int = 1) -> tuple[int, ...]:
    """Output shape of an NC.../OI... convolution with explicit pads."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    spatial = []
    for n, k, s, (lo, hi) in zip(lhs_shape[2:], rhs_shape[2:], strides, pads):
        span = n + lo + hi - k
        spatial.append(max(span // s + 1, 0) if span >= 0 else 0)
    return (lhs_shape[0] // batch_group_count, rhs_shape[0], *spatial)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], window_strides: Sequence[int],
                             padding: Any, dimension_numbers: Any) -> tuple[int, ...]:
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    canonical = conv_shape_tuple([lhs_shape[a] for a in dn.lhs_spec], [rhs_shape[a] for a in dn.rhs_spec],
                                 window_strides, padding)
    return tuple(canonical[list(dn.out_spec).index(i)] for i in range(len(canonical)))


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], window_strides: Sequence[int],
                               padding: Any, dimension_numbers: Any) -> tuple[int, ...]:
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    lhs = [lhs_shape[a] for a in dn.lhs_spec]
    rhs = [rhs_shape[a] for a in dn.rhs_spec]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rhs[2:], window_strides)]
    # the forward convolution of the input dilated by the strides: (n - 1) * s + 1 + pads - k + 1
    spatial = [(n - 1) * s - k + 2 + lo + hi for n, k, s, (lo, hi) in zip(lhs[2:], rhs[2:], window_strides, padding)]
    canonical = (lhs[0], rhs[0], *spatial)
    return tuple(canonical[list(dn.out_spec).index(i)] for i in range(len(canonical)))
