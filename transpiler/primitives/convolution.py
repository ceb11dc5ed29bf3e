"""Contractions: ``dot_general`` (every matrix product) and ``conv_general_dilated`` (every convolution).

Both are XLA's operations. Operands have one dtype; the result has ``preferred_element_type`` when it is
given, else the operands' dtype. Integer products wrap around in the result dtype, as XLA's do. The NumPy
implementations reduce both to one (batched) matrix multiplication, so BLAS does the work: the hot path of
eager ``jnp.dot``.

Both are bilinear: the JVP applies the product to each tangent, and the transpose in one operand is another
product of the cotangent with the other operand (for a convolution, with the kernel flipped or with the
roles of batch and features exchanged), as JAX computes them.
"""

from __future__ import annotations

import enum
import itertools
from typing import Any, NamedTuple, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import srcjax.transpiler.primitives.elementwise as ew
import srcjax.transpiler.primitives.shape as sh
from srcjax.transpiler.primitives.ad import aval_of, defjvp, is_undefined, zeros
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType, short_name


def _ints(xs) -> tuple[int, ...]:
    return tuple(int(x) for x in xs)


def _result_dtype(name: str, lhs: TensorType, rhs: TensorType, preferred_element_type) -> np.dtype:
    # messages are built only on failure: this rule runs on every eager matrix product
    if lhs.dtype != rhs.dtype:
        check(False, name,
              f"operands must have the same dtype, got {short_name(lhs.dtype)} and {short_name(rhs.dtype)}")
    if lhs.dtype.kind not in "biufc":
        check(False, name, f"does not accept {lhs.dtype.name} operands")
    return lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)


def _compute_dtype(out_dtype: np.dtype) -> np.dtype:
    """Half-precision products accumulate in float32 (as XLA's CPU backend does); others in their own dtype."""
    return np.dtype(np.float32) if out_dtype.kind == "f" and out_dtype.itemsize < 4 else out_dtype


def _convert(x: Any, dtype: np.dtype) -> Any:
    return x if aval_of(x).dtype == dtype else ew.convert_element_type_p.bind(x, new_dtype=dtype, weak_type=False)


def _transpose_product(prim: Primitive, lhs: Any, rhs: Any, dtype: np.dtype, operand_aval: TensorType,
                       **params: Any) -> Any:
    """``prim(lhs, rhs)`` computed in the cotangent's ``dtype`` (the ``preferred_element_type`` when that was
    given: both operands of a product share one dtype), returned in the transposed operand's dtype."""
    out = prim.bind(_convert(lhs, dtype), _convert(rhs, dtype), **params, preferred_element_type=None)
    return _convert(out, operand_aval.dtype)


class Precision(enum.Enum):
    """XLA's precision levels for products (a parameter only: NumPy computes at full precision)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    __str__ = __repr__


# -- dot_general -----------------------------------------------------------------------------------------
dot_general_p = Primitive("dot_general", params=("dimension_numbers", "precision", "preferred_element_type"))


def _dot_axes(dimension_numbers) -> tuple[tuple[int, ...], ...]:
    (lc, rc), (lb, rb) = dimension_numbers
    return _ints(lc), _ints(rc), _ints(lb), _ints(rb)


@dot_general_p.def_shape
def _dot_general_shape(lhs: TensorType, rhs: TensorType, *, dimension_numbers, precision=None,
                       preferred_element_type=None) -> TensorType:
    name = "dot_general"
    try:
        lc, rc, lb, rb = _dot_axes(dimension_numbers)
    except (TypeError, ValueError):
        check(False, name, f"dimension_numbers must be ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)), "
              f"got {dimension_numbers!r}", kind="value")
    dtype = _result_dtype(name, lhs, rhs, preferred_element_type)
    for side, typ, contract, batch in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
        axes = contract + batch
        if not all(0 <= a < typ.ndim for a in axes):
            check(False, name, f"{side} contracting {contract} / batch {batch} axes out of range for {typ}",
                  kind="value")
        if len(set(axes)) != len(axes):
            check(False, name, f"{side} contracting {contract} and batch {batch} axes must be distinct", kind="value")
    for what, left, right in (("contracting", lc, rc), ("batch", lb, rb)):
        if len(left) != len(right) or any(lhs.shape[a] != rhs.shape[b] for a, b in zip(left, right)):
            check(False, name, f"{what} axes differ in number or size: lhs {lhs} axes {left}, rhs {rhs} axes {right}",
                  kind="value")
    free_l = [d for a, d in enumerate(lhs.shape) if a not in lc + lb]
    free_r = [d for a, d in enumerate(rhs.shape) if a not in rc + rb]
    shape = tuple(lhs.shape[a] for a in lb) + tuple(free_l) + tuple(free_r)
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return TensorType(dtype, shape, weak)


def _blas_layout(x: np.ndarray) -> np.ndarray:
    """``x`` in C order (a copy when it is a transpose, a slice or a broadcast)."""
    return np.ascontiguousarray(x)


_MATRIX_PRODUCT = (((1,), (0,)), ((), ()))


@dot_general_p.def_impl
def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    if (preferred_element_type is None and lhs.ndim == 2 and rhs.ndim == 2 and lhs.dtype == rhs.dtype
            and (lhs.dtype.kind != "f" or lhs.dtype.itemsize >= 4) and dimension_numbers == _MATRIX_PRODUCT
            and lhs.shape[1] != 1):
        return np.matmul(_blas_layout(lhs), _blas_layout(rhs))  # (m, k) @ (k, n), the common case
    lc, rc, lb, rb = _dot_axes(dimension_numbers)
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    compute = _compute_dtype(out_dtype)
    lhs, rhs = lhs.astype(compute, copy=False), rhs.astype(compute, copy=False)
    lf = [a for a in range(lhs.ndim) if a not in lc + lb]
    rf = [a for a in range(rhs.ndim) if a not in rc + rb]
    batch = tuple(lhs.shape[a] for a in lb)
    out_shape = batch + tuple(lhs.shape[a] for a in lf) + tuple(rhs.shape[a] for a in rf)
    m, k, n = (int(np.prod([s[a] for a in axes], dtype=np.int64)) for s, axes in
               ((lhs.shape, lf), (lhs.shape, lc), (rhs.shape, rf)))
    # (batch, m, k) @ (batch, k, n): transposes are views, and without batch axes the 2-d matmul lets
    # NumPy use BLAS directly (and its symmetric rank-k update for x @ x.T, which shares one buffer).
    a = np.transpose(lhs, lb + tuple(lf) + lc)
    b = np.transpose(rhs, rb + rc + tuple(rf))
    # One product per element (k = 1: an outer product) is a multiplication, as XLA makes it (BLAS adds it to 0,
    # making -0.0 0.0). Otherwise NumPy (BLAS) sums in an order that depends on the operands' layouts (a transpose
    # takes another kernel, a broadcast none), so both are put in C order first: the result depends only on the
    # values, not on whether a simplification (emitted code) turned ``x * ones`` into a broadcast or a constant
    # into a transposed view
    if k == 1:
        size = int(np.prod(batch, dtype=np.int64))
        out = a.reshape(size, m, 1) * b.reshape(size, 1, n)
    elif batch:
        size = int(np.prod(batch, dtype=np.int64))
        out = np.matmul(_blas_layout(a.reshape(size, m, k)), _blas_layout(b.reshape(size, k, n)))
    else:
        out = np.matmul(_blas_layout(a.reshape(m, k)), _blas_layout(b.reshape(k, n)))
    return out.reshape(out_shape).astype(out_dtype, copy=False)


defjvp(dot_general_p,
       lambda g, x, y, **params: dot_general_p.bind(g, y, **params),
       lambda g, x, y, **params: dot_general_p.bind(x, g, **params))


def _dot_operand_cotangent(ct: Any, other: Any, operand_aval: TensorType, contract: tuple[int, ...],
                           other_contract: tuple[int, ...], batch: tuple[int, ...], other_batch: tuple[int, ...],
                           ct_other_axes: Sequence[int], precision: Any) -> Any:
    """The cotangent of one operand of ``dot_general``: ``ct`` contracted with the other operand over the
    other's free axes (``ct_other_axes`` are where they sit in ``ct``), batched over the batch axes.

    The product's axes are (batch, this operand's free axes, the other's contracting axes in the other's
    order); those contracting axes pair with this operand's ``contract`` axes, so a transpose puts them all
    back in this operand's order."""
    other_free = [a for a in range(aval_of(other).ndim) if a not in other_contract + other_batch]
    numbers = ((tuple(ct_other_axes), tuple(other_free)), (tuple(range(len(batch))), other_batch))
    free = [a for a in range(operand_aval.ndim) if a not in contract + batch]
    paired = [contract[i] for i in np.argsort(other_contract, kind="stable")]
    product = _transpose_product(dot_general_p, ct, other, aval_of(ct).dtype, operand_aval,
                                 dimension_numbers=numbers, precision=precision)
    permutation = tuple(int(p) for p in np.argsort(list(batch) + free + paired, kind="stable"))
    if permutation == tuple(range(len(permutation))):
        return product
    return sh.transpose_p.bind(product, permutation=permutation)


@dot_general_p.def_transpose
def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    lc, rc, lb, rb = _dot_axes(dimension_numbers)
    nb = len(lb)
    n_lhs_free = aval_of(lhs).ndim - len(lc) - nb
    ct_axes = list(range(aval_of(ct).ndim))  # (batch, lhs free, rhs free)
    ct_lhs, ct_rhs = None, None
    if is_undefined(lhs):
        ct_lhs = _dot_operand_cotangent(ct, rhs, lhs.aval, lc, rc, lb, rb, ct_axes[nb + n_lhs_free:], precision)
    if is_undefined(rhs):
        ct_rhs = _dot_operand_cotangent(ct, lhs, rhs.aval, rc, lc, rb, lb, ct_axes[nb:nb + n_lhs_free], precision)
    return [ct_lhs, ct_rhs]


def _bump(axes: tuple[int, ...], new: int | None) -> tuple[int, ...]:
    """Axis numbers after a new axis is inserted at ``new`` (unchanged when there is none)."""
    return axes if new is None else tuple(a + (a >= new) for a in axes)


@dot_general_p.def_vmap
def _dot_general_vmap(args, dims, *, dimension_numbers, precision=None, preferred_element_type=None):
    # One product, no transposes (JAX's rule): batch axes of both operands pair up as one more batch axis
    # (the result's first); a batch axis of one operand only is one more free axis of it, so vmap of a
    # matrix-vector product over the vector is a matrix-matrix product.
    (lhs, rhs), (dl, dr) = args, dims
    lc, rc, lb, rb = _dot_axes(dimension_numbers)
    lc, lb, rc, rb = _bump(lc, dl), _bump(lb, dl), _bump(rc, dr), _bump(rb, dr)
    if dl is not None and dr is not None:
        lb, rb, out_dim = (dl, *lb), (dr, *rb), 0
    elif dl is not None:  # free axes come out in order, after the batch axes
        out_dim = len(lb) + sum(1 for a in range(dl) if a not in lc + lb)
    else:
        lhs_free = aval_of(lhs).ndim - len(lc) - len(lb)
        out_dim = len(lb) + lhs_free + sum(1 for a in range(dr) if a not in rc + rb)
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), precision=precision,
                             preferred_element_type=preferred_element_type)
    return out, out_dim


# -- conv_general_dilated --------------------------------------------------------------------------------
class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial axes are: ``lhs_spec = (batch, feature, *spatial)``, ``rhs_spec =
    (out feature, in feature, *spatial)``, ``out_spec = (batch, feature, *spatial)``, as axis indices."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


conv_general_dilated_p = Primitive("conv_general_dilated", params=(
    "window_strides", "padding", "lhs_dilation", "rhs_dilation", "dimension_numbers", "feature_group_count",
    "batch_group_count", "precision", "preferred_element_type"))


def _dilated(size: int, dilation: int) -> int:
    """Size after inserting ``dilation - 1`` holes between elements."""
    return 0 if size == 0 else (size - 1) * dilation + 1


def conv_output_spatial(in_sizes: Sequence[int], kernel_sizes: Sequence[int], window_strides, padding,
                        lhs_dilation, rhs_dilation) -> tuple[int, ...]:
    """Output spatial sizes: floor((dilated input + padding - dilated kernel) / stride) + 1, or 0."""
    out = []
    for n, k, s, (lo, hi), ld, rd in zip(in_sizes, kernel_sizes, window_strides, padding, lhs_dilation,
                                         rhs_dilation):
        span = _dilated(n, ld) + lo + hi - _dilated(k, rd)
        out.append(span // s + 1 if span >= 0 else 0)
    return tuple(out)


@conv_general_dilated_p.def_shape
def _conv_shape(lhs: TensorType, rhs: TensorType, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count=1, batch_group_count=1, precision=None,
                preferred_element_type=None) -> TensorType:
    name = "conv_general_dilated"
    dtype = _result_dtype(name, lhs, rhs, preferred_element_type)
    check(lhs.dtype.kind in "iufc", name, f"does not accept {lhs.dtype.name} operands")
    check(lhs.ndim == rhs.ndim and lhs.ndim >= 2, name,
          f"lhs {lhs} and rhs {rhs} must have one rank, at least 2 (batch and feature axes)", kind="value")
    spatial = lhs.ndim - 2
    check(isinstance(dimension_numbers, ConvDimensionNumbers), name,
          f"dimension_numbers must be a ConvDimensionNumbers, got {dimension_numbers!r}")
    for what, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dimension_numbers):
        check(sorted(spec) == list(range(lhs.ndim)), name,
              f"{what} {spec} must be a permutation of the {lhs.ndim} axes", kind="value")
    for what, seq in (("window_strides", window_strides), ("padding", padding), ("lhs_dilation", lhs_dilation),
                      ("rhs_dilation", rhs_dilation)):
        check(len(seq) == spatial, name, f"{what} {seq} must have one entry per spatial axis ({spatial})",
              kind="value")
    check(all(s >= 1 for s in window_strides), name, f"window_strides {window_strides} must be positive", kind="value")
    check(all(d >= 1 for d in tuple(lhs_dilation) + tuple(rhs_dilation)), name,
          f"dilations {lhs_dilation}, {rhs_dilation} must be positive", kind="value")
    check(all(len(p) == 2 for p in padding), name, f"padding {padding} must be (low, high) pairs", kind="value")
    check(all(rhs.shape[a] >= 1 for a in dimension_numbers.rhs_spec[2:]), name,
          f"the kernel {rhs} must have a positive size on every spatial axis", kind="value")
    groups, batch_groups = int(feature_group_count), int(batch_group_count)
    check(groups >= 1 and batch_groups >= 1 and min(groups, batch_groups) == 1, name,
          f"feature_group_count ({groups}) and batch_group_count ({batch_groups}) must be positive, and not both > 1",
          kind="value")
    lspec, rspec, ospec = dimension_numbers
    batch, features = lhs.shape[lspec[0]], lhs.shape[lspec[1]]
    out_features, in_features = rhs.shape[rspec[0]], rhs.shape[rspec[1]]
    check(features % groups == 0 and features // groups == in_features, name,
          f"lhs has {features} features in {groups} group(s), so rhs {rhs} needs {features // groups} input features "
          f"on axis {rspec[1]}, has {in_features}", kind="value")
    check(out_features % (groups * batch_groups) == 0, name,
          f"rhs output features ({out_features}) must divide into {groups * batch_groups} groups", kind="value")
    check(batch % batch_groups == 0, name, f"lhs batch ({batch}) must divide into {batch_groups} batch groups",
          kind="value")
    sizes = conv_output_spatial([lhs.shape[a] for a in lspec[2:]], [rhs.shape[a] for a in rspec[2:]],
                                window_strides, padding, lhs_dilation, rhs_dilation)
    canonical = (batch // batch_groups, out_features, *sizes)
    shape = [0] * lhs.ndim
    for i, axis in enumerate(ospec):
        shape[axis] = canonical[i]
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return TensorType(dtype, tuple(shape), weak)


def _dilate_and_pad(x: np.ndarray, padding, lhs_dilation) -> np.ndarray:
    """Insert holes between input elements, then pad (a negative pad crops) the spatial axes of a
    channels-last ``x`` (N, *spatial, C)."""
    spatial = x.shape[1:-1]
    if any(d > 1 for d in lhs_dilation):
        big = np.zeros((x.shape[0], *(_dilated(n, d) for n, d in zip(spatial, lhs_dilation)), x.shape[-1]), x.dtype)
        big[(slice(None),) + tuple(slice(None, None, d) for d in lhs_dilation)] = x
        x = big
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape[1:-1], padding))
    x = x[(slice(None),) + crop]
    grow = [(0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding] + [(0, 0)]
    return np.pad(x, grow) if any(p != (0, 0) for p in grow) else x


@conv_general_dilated_p.def_impl
def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_group_count=1, batch_group_count=1, precision=None, preferred_element_type=None):
    lspec, rspec, ospec = dimension_numbers
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    compute = _compute_dtype(out_dtype)
    # channels last (N, *spatial, C): each kernel tap then copies runs of contiguous features (NHWC input)
    x = np.transpose(lhs, (lspec[0], *lspec[2:], lspec[1])).astype(compute, copy=False)
    w = np.transpose(rhs, rspec).astype(compute, copy=False)  # (O, C / groups, *kernel)
    window = (tuple(window_strides), tuple(padding), tuple(lhs_dilation), tuple(rhs_dilation))
    out = _conv_channels_last(x, w, window, feature_group_count, batch_group_count)
    return np.transpose(out.astype(out_dtype, copy=False), np.argsort(ospec))


def _conv_channels_last(x: np.ndarray, w: np.ndarray, window: tuple, feature_group_count: int,
                        batch_group_count: int) -> np.ndarray:
    """The convolution of x (N, *spatial, C) with w (O, C / groups, *kernel): (N / batch groups, O, *out)."""
    window_strides, padding, lhs_dilation, rhs_dilation = window
    kernel = w.shape[2:]
    out_sizes = conv_output_spatial(x.shape[1:-1], kernel, window_strides, padding, lhs_dilation, rhs_dilation)
    groups = feature_group_count * batch_group_count  # at most one of them exceeds 1
    nb, out_features = x.shape[0] // batch_group_count, w.shape[0]
    canonical = (nb, out_features, *out_sizes)
    if 0 in canonical or 0 in w.shape[1:]:
        return np.zeros(canonical, x.dtype)
    if any(d > 1 for d in lhs_dilation) and all(s == 1 for s in window_strides) and all(d == 1 for d in rhs_dilation):
        return _conv_by_phases(x, w, padding, lhs_dilation, out_sizes, feature_group_count, batch_group_count)
    # im2col: every (dilated) kernel window of the padded input, sampled at the strides
    x = _dilate_and_pad(x, padding, lhs_dilation)
    spatial = tuple(range(1, x.ndim - 1))
    patches = sliding_window_view(x, [_dilated(k, d) for k, d in zip(kernel, rhs_dilation)], axis=spatial)
    patches = patches[(slice(None),) + tuple(slice(None, n * s, s) for n, s in zip(out_sizes, window_strides))
                      + (slice(None),) + tuple(slice(None, None, d) for d in rhs_dilation)]
    positions, taps, rank = int(np.prod(out_sizes)), int(np.prod(kernel)), len(kernel)
    cin = w.shape[1]
    # (N, *out, C, *kernel) -> (N, *out, *kernel, C), a view; splitting N = (B, Nb) and C = (G, C/G) keeps
    # it one, and the reshape to (B*G, Nb*P, K*C/G) is then the only copy. Groups are major on the split
    # axis: lhs batch (batch groups) or lhs features (feature groups)
    p = patches.transpose(0, *range(1, rank + 1), *range(rank + 2, 2 * rank + 2), rank + 1)
    p = p.reshape(batch_group_count, nb, positions, taps, feature_group_count, cin)
    p = p.transpose(0, 4, 1, 2, 3, 5).reshape(groups, nb * positions, taps * cin)
    k = w.reshape(groups, out_features // groups, cin, taps).transpose(0, 3, 2, 1)
    k = k.reshape(groups, taps * cin, out_features // groups)
    if groups == 1:  # (1, N*P, O): (N, O, *out) is a view of it, and so is channels-last (N, *out, O)
        out = np.matmul(p, k).reshape(groups, nb, positions, out_features // groups).transpose(1, 0, 3, 2)
    else:  # (G, O/G, Nb*P): with the groups major, (Nb, G, O/G, P) -> (Nb, O, *out) is a view, not a copy
        out = np.matmul(k.transpose(0, 2, 1), p.transpose(0, 2, 1))
        out = out.reshape(groups, out_features // groups, nb, positions).transpose(2, 0, 1, 3)
    return out.reshape(canonical)


def _conv_by_phases(x: np.ndarray, w: np.ndarray, padding, lhs_dilation, out_sizes, feature_group_count: int,
                    batch_group_count: int) -> np.ndarray:
    """A unit-stride convolution of an input dilated by d (a transposed convolution: the input gradient of a
    strided one) without the holes: on each axis, the outputs o = p + d*q of one phase p read only the taps
    k = k0 + d*t with k0 = (lo - p) mod d, at input q + t + c, c = (p + k0 - lo) / d. So each phase is a
    plain convolution of x with every d-th tap, padded by -c, and d^rank of them do 1/d^rank of the work each
    instead of multiplying the holes."""
    out = np.zeros((x.shape[0] // batch_group_count, w.shape[0], *out_sizes), x.dtype)
    kernel = w.shape[2:]
    for phase in itertools.product(*(range(min(d, n)) for d, n in zip(lhs_dilation, out_sizes))):
        taps, pads = [], []
        for p, d, (lo, _), n, size, count in zip(phase, lhs_dilation, padding, x.shape[1:-1], kernel, out_sizes):
            k0 = (lo - p) % d
            t = len(range(k0, size, d))
            c = (p + k0 - lo) // d
            q = len(range(p, count, d))
            taps.append(slice(k0, None, d))
            pads.append((-c, q + t - 1 - n + c) if t else None)
        if None in pads:  # no tap of the kernel meets an input on this phase: its outputs stay 0
            continue
        rank = len(kernel)
        window = ((1,) * rank, tuple(pads), (1,) * rank, (1,) * rank)
        part = _conv_channels_last(x, w[(slice(None), slice(None), *taps)], window, feature_group_count,
                                   batch_group_count)
        out[(slice(None), slice(None), *(slice(p, None, d) for p, d in zip(phase, lhs_dilation)))] = part
    return out


defjvp(conv_general_dilated_p,
       lambda g, lhs, rhs, **params: conv_general_dilated_p.bind(g, rhs, **params),
       lambda g, lhs, rhs, **params: conv_general_dilated_p.bind(lhs, g, **params))


def _swap_roles(spec) -> tuple[int, ...]:
    """A spec with its first two roles exchanged (batch <-> feature, out feature <-> in feature)."""
    return (spec[1], spec[0], *spec[2:])


def _split_axis(x: Any, axis: int, groups: int) -> Any:
    """Axis ``axis`` of size n becomes two axes (groups, n / groups), groups major."""
    shape = list(aval_of(x).shape)
    shape[axis:axis + 1] = [groups, shape[axis] // groups]
    return sh.reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None)


def _merge_axis(x: Any, src: int, dst: int) -> Any:
    """Fold axis ``src`` into axis ``dst`` (numbered without ``src``) as its major part."""
    shape = aval_of(x).shape
    order = [a for a in range(len(shape)) if a != src]
    order.insert(dst, src)
    sizes = [n for a, n in enumerate(shape) if a != src]
    sizes[dst] *= shape[src]
    return sh.reshape_p.bind(x, new_sizes=tuple(sizes), dimensions=tuple(order))


def _regroup(x: Any, axis: int, groups: int, into: int) -> Any:
    """Move the ``groups``-way split of ``axis`` (groups major) into axis ``into``, again as its major part."""
    return _merge_axis(_split_axis(x, axis, groups), axis, into)


def _conv_lhs_cotangent(ct: Any, rhs: Any, lhs_aval: TensorType, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision):
    """The input's cotangent: ``ct`` convolved with the spatially flipped kernel, its roles of input and output
    features exchanged. The forward strides become input dilation and the input dilation strides; the padding
    puts each output's contribution back on the inputs its window covered."""
    lspec, rspec, ospec = dimension_numbers
    rhs_aval = aval_of(rhs)
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:
        # the transposed kernel's output features are (group, input feature); its inputs, one group's outputs
        rhs = _regroup(rhs, rspec[0], groups, rspec[1])
    kernel = [_dilated(rhs_aval.shape[a], d) for a, d in zip(rspec[2:], rhs_dilation)]
    inputs = [_dilated(lhs_aval.shape[a], d) for a, d in zip(lspec[2:], lhs_dilation)]
    outputs = [_dilated(aval_of(ct).shape[a], s) for a, s in zip(ospec[2:], window_strides)]
    pads = []
    for k, n, m, (lo, _) in zip(kernel, inputs, outputs, padding):
        before = k - lo - 1
        pads.append((before, n + k - 1 - m - before))
    flipped = sh.rev_p.bind(rhs, dimensions=tuple(rspec[2:]))
    out = _transpose_product(
        conv_general_dilated_p, ct, flipped, aval_of(ct).dtype, lhs_aval, window_strides=tuple(lhs_dilation),
        padding=tuple(pads), lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(ospec, _swap_roles(rspec), lspec), feature_group_count=groups,
        batch_group_count=1, precision=precision)
    if batch_group_count > 1:  # the groups came out in the features: they belong to the batch
        out = _regroup(out, lspec[1], batch_group_count, lspec[0])
    return out


def _conv_rhs_cotangent(ct: Any, lhs: Any, rhs_aval: TensorType, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision):
    """The kernel's cotangent: the input convolved with ``ct``, batch and feature roles exchanged (the sum over
    the batch becomes the contraction). ``ct`` is the kernel, dilated by the forward strides; feature groups
    become batch groups and the other way round."""
    lspec, rspec, ospec = dimension_numbers
    lhs_aval, ct_aval = aval_of(lhs), aval_of(ct)
    kernel = [_dilated(rhs_aval.shape[a], d) for a, d in zip(rspec[2:], rhs_dilation)]
    inputs = [_dilated(lhs_aval.shape[a], d) for a, d in zip(lspec[2:], lhs_dilation)]
    outputs = [_dilated(ct_aval.shape[a], s) for a, s in zip(ospec[2:], window_strides)]
    pads = tuple((lo, m - n + k - lo - 1) for k, n, m, (lo, _) in zip(kernel, inputs, outputs, padding))
    return _transpose_product(
        conv_general_dilated_p, lhs, ct, ct_aval.dtype, rhs_aval, window_strides=tuple(rhs_dilation), padding=pads,
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(_swap_roles(lspec), _swap_roles(ospec), _swap_roles(rspec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count, precision=precision)


@conv_general_dilated_p.def_transpose
def _conv_general_dilated_transpose(ct, lhs, rhs, *, preferred_element_type=None, **params):
    if aval_of(ct).size == 0:  # no output, no cotangent (and no degenerate convolution to build)
        return [None, None]
    ct_lhs = _conv_lhs_cotangent(ct, rhs, lhs.aval, **params) if is_undefined(lhs) else None
    ct_rhs = _conv_rhs_cotangent(ct, lhs, rhs.aval, **params) if is_undefined(rhs) else None
    return [ct_lhs, ct_rhs]


@conv_general_dilated_p.def_vmap
def _conv_general_dilated_vmap(args, dims, *, dimension_numbers, feature_group_count=1, batch_group_count=1,
                               **params):
    # JAX's rule: one convolution. The batch axis is folded (as the major part) into an axis whose elements
    # the convolution keeps apart, and split back out of the result: a batched input into its batch axis, a
    # batched kernel into its output features, both into features as more feature groups (each element's
    # input features meet only its own kernel). Existing groups stay the major part of a folded axis.
    (lhs, rhs), (dl, dr) = args, dims
    lspec, rspec, ospec = dimension_numbers
    size = aval_of(lhs).shape[dl] if dl is not None else aval_of(rhs).shape[dr]
    params = dict(params, dimension_numbers=dimension_numbers)
    if size == 0 or 0 in aval_of(lhs).shape or 0 in aval_of(rhs).shape:
        # nothing to fold groups into: a result with no elements, or all zeros (an empty sum)
        lhs_type = aval_of(lhs) if dl is None else aval_of(lhs).drop_axes((dl,))
        rhs_type = aval_of(rhs) if dr is None else aval_of(rhs).drop_axes((dr,))
        out = conv_general_dilated_p.abstract_eval(lhs_type, rhs_type, feature_group_count=feature_group_count,
                                                   batch_group_count=batch_group_count, **params)
        return zeros(out.update(shape=(size, *out.shape))), 0

    def conv(lhs, rhs, features=feature_group_count, batches=batch_group_count):
        return conv_general_dilated_p.bind(lhs, rhs, feature_group_count=features, batch_group_count=batches,
                                           **params)

    if dl is not None and dr is not None:
        rhs = _merge_axis(rhs, dr, rspec[0])
        if batch_group_count > 1:  # batch groups: the elements become more batch groups
            out = conv(_merge_axis(lhs, dl, lspec[0]), rhs, batches=batch_group_count * size)
        else:
            out = conv(_merge_axis(lhs, dl, lspec[1]), rhs, features=feature_group_count * size)
        return _split_axis(out, ospec[1], size), ospec[1]
    if dl is not None:
        if batch_group_count > 1:  # (groups, size * batch) with the groups outermost
            lhs = _split_axis(lhs, lspec[0] + (dl <= lspec[0]), batch_group_count)
            lhs = _merge_axis(lhs, dl + (lspec[0] < dl), lspec[0] + 1)
            lhs = _merge_axis(lhs, lspec[0], lspec[0])
        else:
            lhs = _merge_axis(lhs, dl, lspec[0])
        return _split_axis(conv(lhs, rhs), ospec[0], size), ospec[0]
    groups = max(feature_group_count, batch_group_count)
    if groups == 1:
        return _split_axis(conv(lhs, _merge_axis(rhs, dr, rspec[0])), ospec[1], size), ospec[1]
    # output features (groups, size * features per group), the groups outermost; split back the same way
    rhs = _split_axis(rhs, rspec[0] + (dr <= rspec[0]), groups)
    rhs = _merge_axis(rhs, dr + (rspec[0] < dr), rspec[0] + 1)
    out = conv(lhs, _merge_axis(rhs, rspec[0], rspec[0]))
    out = _split_axis(_split_axis(out, ospec[1], groups), ospec[1] + 1, size)
    return _merge_axis(out, ospec[1], ospec[1] + 1), ospec[1]


register_module(globals())
