"""Contractions: ``dot_general`` (every matrix product) and ``conv_general_dilated`` (every convolution).

Both are XLA's operations. Operands have one dtype; the result has ``preferred_element_type`` when it is
given, else the operands' dtype. Integer products wrap around in the result dtype, as XLA's do. The NumPy
implementations reduce both to one (batched) matrix multiplication, so BLAS does the work: the hot path of
eager ``jnp.dot``.
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from transpiler.primitives.core import Primitive, check, register_module
from transpiler.types import TensorType, short_name


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


@dot_general_p.def_impl
def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
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
    if batch:
        size = int(np.prod(batch, dtype=np.int64))
        out = np.matmul(a.reshape(size, m, k), b.reshape(size, k, n))
    else:
        out = np.matmul(a.reshape(m, k), b.reshape(k, n))
    return out.reshape(out_shape).astype(out_dtype, copy=False)


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
    """Insert holes between input elements, then pad (a negative pad crops) the spatial axes."""
    if any(d > 1 for d in lhs_dilation):
        big = np.zeros(x.shape[:2] + tuple(_dilated(n, d) for n, d in zip(x.shape[2:], lhs_dilation)), x.dtype)
        big[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dilation)] = x
        x = big
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape[2:], padding))
    x = x[(slice(None), slice(None)) + crop]
    grow = [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    return np.pad(x, grow) if any(p != (0, 0) for p in grow) else x


@conv_general_dilated_p.def_impl
def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_group_count=1, batch_group_count=1, precision=None, preferred_element_type=None):
    lspec, rspec, ospec = dimension_numbers
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    compute = _compute_dtype(out_dtype)
    x = np.transpose(lhs, lspec).astype(compute, copy=False)  # (N, C, *spatial)
    w = np.transpose(rhs, rspec).astype(compute, copy=False)  # (O, C / groups, *kernel)
    kernel = w.shape[2:]
    out_sizes = conv_output_spatial(x.shape[2:], kernel, window_strides, padding, lhs_dilation, rhs_dilation)
    groups = feature_group_count * batch_group_count  # at most one of them exceeds 1
    nb, out_features = x.shape[0] // batch_group_count, w.shape[0]
    canonical = (nb, out_features, *out_sizes)
    if 0 in canonical or 0 in w.shape[1:]:
        out = np.zeros(canonical, out_dtype)
    else:
        # im2col: every (dilated) kernel window of the padded input, sampled at the strides
        x = _dilate_and_pad(x, padding, lhs_dilation)
        spatial = tuple(range(2, x.ndim))
        patches = sliding_window_view(x, [_dilated(k, d) for k, d in zip(kernel, rhs_dilation)], axis=spatial)
        patches = patches[(slice(None), slice(None)) + tuple(slice(None, n * s, s) for n, s in
                                                           zip(out_sizes, window_strides))
                          + tuple(slice(None, None, d) for d in rhs_dilation)]
        positions, taps = int(np.prod(out_sizes)), int(np.prod(kernel))
        cin = w.shape[1]
        # groups are major on the split axis: lhs batch (batch groups) or lhs features (feature groups)
        # (B, Nb, G, C/G, P, K) -> (B*G, Nb*P, C/G*K)
        p = patches.reshape(batch_group_count, nb, feature_group_count, cin, positions, taps)
        p = p.transpose(0, 2, 1, 4, 3, 5).reshape(groups, nb * positions, cin * taps)
        k = w.reshape(groups, out_features // groups, cin * taps).transpose(0, 2, 1)
        out = np.matmul(p, k)  # (groups, Nb*P, O/groups)
        out = out.reshape(groups, nb, positions, out_features // groups).transpose(1, 0, 3, 2)
        out = out.reshape(canonical).astype(out_dtype, copy=False)
    return np.transpose(out, np.argsort(ospec))


register_module(globals())
