"""srcjax.numpy: matrix and tensor products (dot, matmul, einsum, ...), convolve/correlate, and trace.

Every product is one or more ``dot_general`` contractions (so eager ``jnp.dot`` is one BLAS call and a
compiled one is one op). Operands are promoted with JAX's rules; integer products wrap around in their dtype
and bool products are bool (or of ands); ``preferred_element_type`` sets the accumulation and result dtype.
"""

from __future__ import annotations

import operator
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.eager import fast_path
from srcjax.runtime.numpy._core import (
    TypeOrValueError, aval, check_arraylike, convert, promote_dtypes, promote_dtypes_inexact,
)
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives import reduce as rp
from srcjax.transpiler.primitives.convolution import ConvDimensionNumbers, conv_general_dilated_p
from srcjax.transpiler.primitives.indexing import slice_p
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p, concatenate_p, reshape_p, rev_p, transpose_p

__all__ = [
    "convolve", "correlate", "cross", "dot", "einsum", "einsum_path", "inner", "kron", "matmul", "matvec", "outer",
    "tensordot", "trace", "vdot", "vecdot", "vecmat",
]


# -- small helpers over the primitives -------------------------------------------------------------------
def _shape(x: Any) -> tuple[int, ...]:
    return aval(x).shape


def _reshape(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(shape)
    return x if _shape(x) == shape else reshape_p.bind(x, new_sizes=shape, dimensions=None)


def _transpose(x: Any, perm: Sequence[int]) -> Any:
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else transpose_p.bind(x, permutation=perm)


def _slice(x: Any, axis: int, start: int, stop: int, stride: int = 1) -> Any:
    shape = _shape(x)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, stop, stride
    return slice_p.bind(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                        strides=None if stride == 1 else tuple(strides))


def _axis(axis: int, ndim: int, name: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def _conj(x: Any) -> Any:
    return ew.conj_p.bind(x) if aval(x).dtype.kind == "c" else x


def _operands(name: str, *args: Any, preferred_element_type: Any = None) -> tuple[list[Any], Any]:
    """Checked operands promoted to one dtype, and the preferred dtype for ``dot_general`` (or None)."""
    check_arraylike(name, *args)
    if preferred_element_type is None:
        return promote_dtypes(*args), None
    preferred = dtypes.canonicalize_dtype(dtypes.to_dtype(preferred_element_type))
    if len({aval(x).dtype for x in args}) > 1:
        # operands of two dtypes are converted to the preferred one, as JAX lowers such a product for CPUs and
        # GPUs (operands of one dtype are multiplied in it: ``bind_dot_general``)
        return [convert(x, preferred) for x in args], preferred
    return promote_dtypes(*args), preferred


def _dot_general(a: Any, b: Any, contract: tuple[Sequence[int], Sequence[int]],
                 batch: tuple[Sequence[int], Sequence[int]] = ((), ()), precision: Any = None,
                 preferred: Any = None) -> Any:
    from srcjax.runtime.lax.precision import bind_dot_general

    dims = ((tuple(contract[0]), tuple(contract[1])), (tuple(batch[0]), tuple(batch[1])))
    return bind_dot_general(a, b, dims, precision, preferred)


def _sum_axes(x: Any, axes: Sequence[int]) -> Any:
    """Sum over ``axes`` in the operand's own dtype (bool: any), as einsum's reductions do."""
    axes = tuple(sorted(axes))
    if not axes:
        return x
    prim = rp.reduce_or_p if aval(x).dtype == np.bool_ else rp.reduce_sum_p
    return prim.bind(x, axes=axes)


def _diagonal(x: Any, offset: int, axis1: int, axis2: int) -> Any:
    """The diagonal of axes ``axis1`` and ``axis2`` as the last axis, from slices and a reshape.

    Element (i, i + offset) of an n x m matrix sits at flat position i * (m + 1) (+ offset), so the
    diagonal is a strided slice of the flattened matrix.
    """
    ndim = len(_shape(x))
    rest = [a for a in range(ndim) if a not in (axis1, axis2)]
    x = _transpose(x, rest + [axis1, axis2])
    n, m = _shape(x)[-2:]
    if offset >= 0:
        x = _slice(x, ndim - 1, min(offset, m), m)
    else:
        x = _slice(x, ndim - 2, min(-offset, n), n)
    n, m = _shape(x)[-2:]
    d = min(n, m)
    lead = _shape(x)[:-2]
    x = _reshape(_slice(x, ndim - 2, 0, d), lead + (d * m,))
    return _slice(x, ndim - 2, 0, max((d - 1) * (m + 1) + 1, 0), m + 1)


# -- dot, matmul and friends -----------------------------------------------------------------------------
@fast_path
def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """NumPy's ``dot``: scalars multiply, vectors contract, and otherwise the last axis of ``a`` meets the
    second-to-last of ``b`` (the last when ``b`` is a vector)."""
    (a, b), preferred = _operands("dot", a, b, preferred_element_type=preferred_element_type)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return _dot_general(a, b, ((), ()), precision=precision, preferred=preferred)
    contract_b = 0 if nb == 1 else nb - 2
    if _shape(a)[-1] != _shape(b)[contract_b]:
        raise TypeError(f"dot: shapes {_shape(a)} and {_shape(b)} are not aligned: {_shape(a)[-1]} (axis {na - 1}) "
                        f"!= {_shape(b)[contract_b]} (axis {contract_b})")
    return _dot_general(a, b, ((na - 1,), (contract_b,)), precision=precision, preferred=preferred)


@fast_path
def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``a @ b``: matrix products over broadcast leading axes; a 1-d operand is a vector (its axis dropped).

    A batch axis of size 1 on one side is not materialised: it is squeezed away and the other side's axis
    becomes a free axis of the contraction, then the result is transposed into broadcast order.
    """
    (a, b), preferred = _operands("matmul", a, b, preferred_element_type=preferred_element_type)
    sa, sb = _shape(a), _shape(b)
    for i, s in enumerate((sa, sb)):
        if not s:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has ndim 0")
    k_a, k_b = sa[-1], sb[0] if len(sb) == 1 else sb[-2]
    if k_a != k_b:
        raise TypeOrValueError(f"matmul: input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {k_b} is different from {k_a}); shapes {sa} and {sb}")
    ba, bb = sa[:-2], sb[:-2]
    try:
        out_batch = np.broadcast_shapes(ba, bb)
    except ValueError:
        raise ValueError(f"matmul: batch shapes {ba} and {bb} of operands {sa} and {sb} cannot be broadcast") from None
    nbatch = len(out_batch)
    pa, pb = nbatch - len(ba), nbatch - len(bb)  # missing leading batch axes
    batch_a, batch_b, free_a, free_b, squeeze_a, squeeze_b, source = [], [], [], [], [], [], []
    for i in range(nbatch):
        da = ba[i - pa] if i >= pa else None
        db = bb[i - pb] if i >= pb else None
        if da is not None and db is not None and da == db:
            batch_a.append(i - pa), batch_b.append(i - pb), source.append(("batch", len(batch_a) - 1))
        elif da is not None and (db is None or da != 1):
            free_a.append(i - pa), source.append(("a", len(free_a) - 1))
            if db is not None:
                squeeze_b.append(i - pb)
        else:
            free_b.append(i - pb), source.append(("b", len(free_b) - 1))
            if da is not None:
                squeeze_a.append(i - pa)

    a, (batch_a, free_a) = _squeeze_keep(a, squeeze_a, batch_a, free_a)
    b, (batch_b, free_b) = _squeeze_keep(b, squeeze_b, batch_b, free_b)
    na, nb = len(_shape(a)), len(_shape(b))
    contract_a, contract_b = na - 1, 0 if len(sb) == 1 else nb - 2
    out = _dot_general(a, b, ((contract_a,), (contract_b,)), (batch_a, batch_b), precision, preferred)
    # dot_general lays out: batch, then a's free axes (its batch-free axes, then m), then b's (then n)
    has_m, has_n = len(sa) > 1, len(sb) > 1
    m_axis = len(batch_a) + len(free_a)
    start = {"batch": 0, "a": len(batch_a), "b": m_axis + has_m}
    perm = [start[kind] + j for kind, j in source] + ([m_axis] if has_m else [])
    return _transpose(out, perm + ([len(perm)] if has_n else []))  # n, when present, is already last


def _squeeze_keep(x: Any, drop: list[int], *groups: list[int]) -> tuple[Any, tuple[list[int], ...]]:
    """Drop the size-1 axes ``drop`` of ``x`` and renumber the axes listed in ``groups``."""
    shape = _shape(x)
    renumber = {a: j for j, a in enumerate(a for a in range(len(shape)) if a not in drop)}
    x = _reshape(x, [d for i, d in enumerate(shape) if i not in drop])
    return x, tuple([renumber[a] for a in group] for group in groups)


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """The dot product of the flattened operands, conjugating the first."""
    (a, b), preferred = _operands("vdot", a, b, preferred_element_type=preferred_element_type)
    a, b = _reshape(a, (int(np.prod(_shape(a))),)), _reshape(b, (int(np.prod(_shape(b))),))
    if _shape(a) != _shape(b):
        raise ValueError(f"vdot: operands have {_shape(a)[0]} and {_shape(b)[0]} elements")
    return _dot_general(_conj(a), b, ((0,), (0,)), precision=precision, preferred=preferred)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """``sum(conj(x1) * x2, axis)`` over broadcast leading axes."""
    check_arraylike("vecdot", x1, x2)
    s1, s2 = _shape(x1), _shape(x2)
    if not s1 or not s2:
        raise ValueError(f"vecdot: operands must have at least one axis, got shapes {s1} and {s2}")
    a1, a2 = _axis(axis, len(s1), "vecdot"), _axis(axis, len(s2), "vecdot")
    if s1[a1] != s2[a2]:
        raise ValueError(f"vecdot: axes must match; got shapes {s1} and {s2} with axis={axis}")
    x1 = _transpose(x1, [a for a in range(len(s1)) if a != a1] + [a1])
    x2 = _transpose(x2, [a for a in range(len(s2)) if a != a2] + [a2])
    x1 = _conj(promote_dtypes(x1, x2)[0])
    row = _reshape(x1, _shape(x1)[:-1] + (1, s1[a1]))
    col = _reshape(x2, _shape(x2) + (1,))
    out = matmul(row, col, precision=precision, preferred_element_type=preferred_element_type)
    return _reshape(out, _shape(out)[:-2])


def matvec(x1: Any, x2: Any, /, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Matrix-vector products over broadcast leading axes: ``(..., m, n), (..., n) -> (..., m)``."""
    check_arraylike("matvec", x1, x2)
    if len(_shape(x1)) < 2 or len(_shape(x2)) < 1:
        raise ValueError(f"matvec: needs a matrix and a vector, got shapes {_shape(x1)} and {_shape(x2)}")
    out = matmul(x1, _reshape(x2, _shape(x2) + (1,)), precision=precision,
                 preferred_element_type=preferred_element_type)
    return _reshape(out, _shape(out)[:-1])


def vecmat(x1: Any, x2: Any, /, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Vector-matrix products, conjugating the vector: ``(..., n), (..., n, m) -> (..., m)``."""
    check_arraylike("vecmat", x1, x2)
    if len(_shape(x1)) < 1 or len(_shape(x2)) < 2:
        raise ValueError(f"vecmat: needs a vector and a matrix, got shapes {_shape(x1)} and {_shape(x2)}")
    x1 = _conj(promote_dtypes(x1, x2)[0])
    out = matmul(_reshape(x1, _shape(x1)[:-1] + (1, _shape(x1)[-1])), x2, precision=precision,
                 preferred_element_type=preferred_element_type)
    return _reshape(out, _shape(out)[:-2] + _shape(out)[-1:])


def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Contracts the last axes of ``a`` and ``b`` (scalars multiply)."""
    (a, b), preferred = _operands("inner", a, b, preferred_element_type=preferred_element_type)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return _dot_general(a, b, ((), ()), precision=precision, preferred=preferred)
    if _shape(a)[-1] != _shape(b)[-1]:
        raise TypeError(f"inner: last axes differ in size, got shapes {_shape(a)} and {_shape(b)}")
    return _dot_general(a, b, ((na - 1,), (nb - 1,)), precision=precision, preferred=preferred)


def outer(a: Any, b: Any, out: None = None) -> Any:
    """``a.ravel()[:, None] * b.ravel()[None, :]``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported (arrays are immutable).")
    (a, b), _ = _operands("outer", a, b)
    a, b = _reshape(a, (int(np.prod(_shape(a))),)), _reshape(b, (int(np.prod(_shape(b))),))
    return _dot_general(a, b, ((), ()))


def tensordot(a: Any, b: Any, axes: int | Sequence[Any] = 2, *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Contracts ``axes`` of ``a`` with those of ``b``: an int N pairs the last N of ``a`` with the first N
    of ``b``; a pair of ints or of sequences names them."""
    (a, b), preferred = _operands("tensordot", a, b, preferred_element_type=preferred_element_type)
    na, nb = len(_shape(a)), len(_shape(b))
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if not 0 <= n <= min(na, nb):
            raise TypeError(f"tensordot: axes={n} must be between 0 and the operands' ranks ({na}, {nb})")
        ca, cb = tuple(range(na - n, na)), tuple(range(n))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        ca, cb = ((x,) if isinstance(x, (int, np.integer)) else tuple(x) for x in axes)
        if len(ca) != len(cb):
            raise TypeError(f"tensordot requires axes lists to have equal length, got {ca} and {cb}.")
        ca = tuple(_axis(x, na, "tensordot") for x in ca)
        cb = tuple(_axis(x, nb, "tensordot") for x in cb)
    else:
        raise TypeError(f"tensordot axes argument must be an int, a pair of ints, or a pair of lists/tuples of "
                        f"ints, got {axes!r}")
    for x, y in zip(ca, cb):
        if _shape(a)[x] != _shape(b)[y]:
            raise TypeError(f"tensordot: axis {x} of {_shape(a)} and axis {y} of {_shape(b)} differ in size")
    return _dot_general(a, b, (ca, cb), precision=precision, preferred=preferred)


def kron(a: Any, b: Any) -> Any:
    """The Kronecker product: block (i, j, ...) of the result is ``a[i, j, ...] * b``."""
    (a, b), _ = _operands("kron", a, b)
    n = max(len(_shape(a)), len(_shape(b)))
    a = _reshape(a, (1,) * (n - len(_shape(a))) + _shape(a))
    b = _reshape(b, (1,) * (n - len(_shape(b))) + _shape(b))
    product = _dot_general(a, b, ((), ()))  # shape a.shape + b.shape
    interleave = [i for pair in zip(range(n), range(n, 2 * n)) for i in pair]
    return _reshape(_transpose(product, interleave), tuple(x * y for x, y in zip(_shape(a), _shape(b))))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> Any:
    """Cross products of 2- or 3-vectors along ``axisa``/``axisb`` (a 2-vector has a zero third component;
    two 2-vectors give the scalar z component)."""
    check_arraylike("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes(a, b)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        raise ValueError(f"cross: operands must have at least one axis, got shapes {sa} and {sb}")
    ia, ib = _axis(axisa, len(sa), "cross"), _axis(axisb, len(sb), "cross")
    if sa[ia] not in (2, 3) or sb[ib] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    a = _transpose(a, [x for x in range(len(sa)) if x != ia] + [ia])
    b = _transpose(b, [x for x in range(len(sb)) if x != ib] + [ib])
    from srcjax.runtime.numpy._core import promote_shapes

    def component(x, i):
        n = _shape(x)[-1]
        if i >= n:
            return None
        part = _slice(x, len(_shape(x)) - 1, i, i + 1)
        return _reshape(part, _shape(part)[:-1])

    def mul_sub(p, q, r, s):  # p*q - r*s, where a missing (None) component is zero
        terms = [promote_shapes(u, v) for u, v in ((p, q), (r, s)) if u is not None and v is not None]
        prods = [ew.mul_p.bind(*t) for t in terms]
        if len(prods) == 2:
            return ew.sub_p.bind(*promote_shapes(*prods))
        if len(prods) == 1:
            return prods[0] if terms[0][0] is p else ew.neg_p.bind(prods[0])
        return None

    a0, a1, a2 = (component(a, i) for i in range(3))
    b0, b1, b2 = (component(b, i) for i in range(3))
    z = mul_sub(a0, b1, a1, b0)
    if sa[ia] == 2 and sb[ib] == 2:
        return z
    parts = [mul_sub(a1, b2, a2, b1), mul_sub(a2, b0, a0, b2), z]
    batch = np.broadcast_shapes(*(_shape(p) for p in parts if p is not None))
    zero = convert(np.zeros(batch), aval(a).dtype)
    parts = [zero if p is None else p for p in parts]
    parts = [_reshape(broadcast_in_dim_p.bind(p, shape=batch, broadcast_dimensions=tuple(
        range(len(batch) - len(_shape(p)), len(batch)))) if _shape(p) != batch else p, batch + (1,)) for p in parts]
    # strongly typed, as JAX's (it stacks the three components with jnp.array); two 2-vectors' z keeps the weak type
    out = convert(concatenate_p.bind(*parts, dimension=len(batch)), aval(a).dtype)
    ic = _axis(axisc, len(batch) + 1, "cross")
    perm = list(range(len(batch)))
    perm.insert(ic, len(batch))
    return _transpose(out, perm)


# -- einsum ----------------------------------------------------------------------------------------------
def _parse_sublist(sublist: Sequence[Any]) -> str:
    letters = string.ascii_letters
    out = []
    for item in sublist:
        if item is Ellipsis:
            out.append("...")
        elif isinstance(item, (int, np.integer)) and 0 <= item < len(letters):
            out.append(letters[item])
        else:
            raise ValueError(f"einsum: subscripts in a sublist must be ints in [0, 52) or Ellipsis, got {item!r}")
    return "".join(out)


def _einsum_specs(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[list[str]], list[str]]:
    """Per-operand label lists and the output's, with '...' expanded to shared broadcast labels."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    specs = inputs.split(",")
    if len(specs) != len(shapes):
        raise ValueError(f"einsum: {len(specs)} operand subscripts for {len(shapes)} operands")
    for spec in specs + [output]:
        for ch in spec.replace("...", ""):
            if ch not in string.ascii_letters:
                raise ValueError(f"einsum: invalid subscript character {ch!r} in {subscripts!r}")
    ellipsis_rank = 0
    for spec, shape in zip(specs, shapes):
        named = len(spec.replace("...", ""))
        if "..." in spec:
            ellipsis_rank = max(ellipsis_rank, len(shape) - named)
            if len(shape) < named:
                raise ValueError(f"einsum: operand of shape {shape} has fewer axes than subscripts {spec!r}")
        elif named != len(shape):
            raise ValueError(f"einsum: subscripts {spec!r} name {named} axes but the operand has shape {shape}")
    broadcast = [chr(0x100 + i) for i in range(ellipsis_rank)]  # labels no user can write

    def expand(spec: str, rank: int) -> list[str]:
        head, _, tail = spec.partition("...")
        if "..." not in spec:
            return list(spec)
        k = rank - len(head) - len(tail)
        return list(head) + broadcast[ellipsis_rank - k:] + list(tail)

    labels = [expand(s, len(sh)) for s, sh in zip(specs, shapes)]
    if arrow:
        if output.count("...") > 1 or len(set(output.replace("...", ""))) != len(output.replace("...", "")):
            raise ValueError(f"einsum: output subscripts {output!r} repeat a label")
        out = expand(output, len(output.replace("...", "")) + ellipsis_rank) if "..." in output else list(output)
        for ch in out:
            if not any(ch in spec for spec in labels):
                raise ValueError(f"einsum: output subscript {ch!r} does not appear in the inputs")
    else:
        counts: dict[str, int] = {}
        for spec in labels:
            for ch in spec:
                counts[ch] = counts.get(ch, 0) + 1
        out = broadcast + sorted(ch for ch, c in counts.items() if c == 1 and ch not in broadcast)
    return labels, out


def einsum(subscripts: Any, /, *operands: Any, out: None = None, optimize: Any = "auto", precision: Any = None,
           preferred_element_type: Any = None, _dot_general: Any = None, out_sharding: Any = None) -> Any:
    """Einstein summation, contracted pairwise with ``dot_general`` (greedily, smallest result first,
    unless ``optimize`` is False). Repeated labels in one operand take its diagonal; labels used by one
    operand only are summed first."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported (arrays are immutable).")
    if not isinstance(subscripts, str):  # interleaved form: op, sublist, op, sublist, ..., [output sublist]
        items = (subscripts,) + operands
        output = _parse_sublist(items[-1]) if len(items) % 2 else None
        pairs = items[:-1] if len(items) % 2 else items
        subscripts = ",".join(_parse_sublist(s) for s in pairs[1::2]) + ("" if output is None else "->" + output)
        operands = tuple(pairs[0::2])
    check_arraylike("einsum", *operands)
    ops = promote_dtypes(*operands)
    preferred = None
    if preferred_element_type is not None:
        # operands widen to the preferred dtype (JAX's products and sums accumulate in it), as do operands of
        # several dtypes (``_operands``); float operands with an integer one are summed as floats and only the
        # result converted, as JAX's dot_general does
        preferred = dtypes.canonicalize_dtype(dtypes.to_dtype(preferred_element_type))
        mixed = len({aval(x).dtype for x in operands}) > 1
        ops = [convert(x, preferred) if mixed or dtypes.promote_types(aval(x).dtype, preferred) == preferred else x
               for x in ops]
    labels, output = _einsum_specs(subscripts, [_shape(x) for x in ops])
    sizes: dict[str, int] = {}  # a label's size; size-1 axes broadcast against larger ones
    for i, (x, spec) in enumerate(zip(ops, labels)):
        for ch, n in zip(spec, _shape(x)):
            if sizes.get(ch, 1) == 1:
                sizes[ch] = n
            elif n not in (1, sizes[ch]):
                name = ch if ch in string.ascii_letters else "..."
                raise ValueError(f"Size of label '{name}' for operand {i} ({n}) does not match previous terms "
                                 f"({sizes[ch]}).")
    terms = [_einsum_prepare(x, spec, sizes) for x, spec in zip(ops, labels)]
    terms = _einsum_sum_private(terms, output)
    greedy = optimize not in (False, None, "none")
    while len(terms) > 1:
        i, j = _einsum_pick(terms, output, sizes) if greedy else (0, 1)
        (x, lx), (y, ly) = terms[i], terms[j]
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        keep = set(output).union(*(set(spec) for _, spec in rest))
        terms = rest + [_einsum_pair(x, lx, y, ly, keep, precision)]
    x, spec = terms[0]
    x = _sum_axes(x, [k for k, ch in enumerate(spec) if ch not in output])
    spec = [ch for ch in spec if ch in output]
    x = _transpose(x, [spec.index(ch) for ch in output if ch in spec])
    present = [ch for ch in output if ch in spec]
    if len(present) != len(output):  # labels broadcast from size 1 everywhere they appeared
        shape = tuple(sizes[ch] for ch in output)
        dims = tuple(output.index(ch) for ch in present)
        x = broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)
    return x if preferred is None else convert(x, preferred)


def _einsum_prepare(x: Any, spec: list[str], sizes: dict[str, int]) -> tuple[Any, list[str]]:
    """Drop size-1 axes that broadcast against larger ones, and take diagonals of repeated labels."""
    drop = [k for k, ch in enumerate(spec) if _shape(x)[k] == 1 and sizes[ch] != 1]
    if drop:
        x = _reshape(x, [n for k, n in enumerate(_shape(x)) if k not in drop])
        spec = [ch for k, ch in enumerate(spec) if k not in drop]
    while len(set(spec)) != len(spec):
        ch = next(c for c in spec if spec.count(c) > 1)
        first = spec.index(ch)
        second = spec.index(ch, first + 1)
        x = _diagonal(x, 0, first, second)
        spec = [c for k, c in enumerate(spec) if k not in (first, second)] + [ch]
    return x, spec


def _einsum_sum_private(terms: list[tuple[Any, list[str]]], output: list[str]) -> list[tuple[Any, list[str]]]:
    """Sum each operand over the labels no other operand and not the output uses."""
    out = []
    for i, (x, spec) in enumerate(terms):
        shared = set(output).union(*(set(s) for k, (_, s) in enumerate(terms) if k != i))
        private = [k for k, ch in enumerate(spec) if ch not in shared]
        out.append((_sum_axes(x, private), [ch for ch in spec if ch in shared]) if private else (x, spec))
    return out


def _einsum_pick(terms: list[tuple[Any, list[str]]], output: list[str], sizes: dict[str, int]) -> tuple[int, int]:
    """The pair whose contraction gives the smallest result (first such pair on ties)."""
    best, pick = None, (0, 1)
    for i in range(len(terms)):
        for j in range(i + 1, len(terms)):
            rest = [t for k, t in enumerate(terms) if k not in (i, j)]
            keep = set(output).union(*(set(spec) for _, spec in rest))
            labels = (set(terms[i][1]) | set(terms[j][1])) & keep
            cost = int(np.prod([sizes[ch] for ch in labels], dtype=np.float64))
            if best is None or cost < best:
                best, pick = cost, (i, j)
    return pick


def _einsum_pair(x: Any, lx: list[str], y: Any, ly: list[str], keep: set[str], precision: Any,
                 ) -> tuple[Any, list[str]]:
    """One ``dot_general``: shared labels still needed are batch axes, other shared ones contract."""
    x = _sum_axes(x, [k for k, ch in enumerate(lx) if ch not in keep and ch not in ly])
    lx = [ch for ch in lx if ch in keep or ch in ly]
    y = _sum_axes(y, [k for k, ch in enumerate(ly) if ch not in keep and ch not in lx])
    ly = [ch for ch in ly if ch in keep or ch in lx]
    shared = [ch for ch in lx if ch in ly]
    batch = [ch for ch in shared if ch in keep]
    contract = [ch for ch in shared if ch not in keep]
    out = _dot_general(x, y, ([lx.index(c) for c in contract], [ly.index(c) for c in contract]),
                       ([lx.index(c) for c in batch], [ly.index(c) for c in batch]), precision)
    labels = batch + [ch for ch in lx if ch not in shared] + [ch for ch in ly if ch not in shared]
    return out, labels


def einsum_path(subscripts: Any, /, *operands: Any, optimize: Any = "auto") -> tuple[list[Any], str]:
    """The pairwise contraction order ``einsum`` uses (greedy), in JAX's format (opt_einsum's: a list of index
    tuples, without NumPy's leading 'einsum_path'), with a short report."""
    if not isinstance(subscripts, str):
        raise NotImplementedError("einsum_path: only the subscripts-string form is supported")
    shapes = [_shape(x) if hasattr(x, "shape") or not isinstance(x, tuple) else x for x in operands]
    labels, output = _einsum_specs(subscripts, [tuple(s) for s in shapes])
    sizes = {ch: n for spec, shape in zip(labels, shapes) for ch, n in zip(spec, shape) if n != 1}
    for spec in labels:
        for ch in spec:
            sizes.setdefault(ch, 1)
    terms = [(None, spec) for spec in labels]
    report = f"  Complete contraction:  {subscripts}\n  Pairwise contractions: {max(len(terms) - 1, 0)}"
    if len(terms) == 1:
        return [(0,)], report
    if optimize is False:  # left to right, as JAX reports it
        return [(0, 1)] * (len(terms) - 1), report
    if isinstance(optimize, (list, tuple)):  # a path given is the path taken
        return [tuple(step) for step in optimize if step != "einsum_path"], report
    path: list[Any] = []
    while len(terms) > 1:
        i, j = _einsum_pick(terms, output, sizes)
        rest = [t for k, t in enumerate(terms) if k not in (i, j)]
        keep = set(output).union(*(set(spec) for _, spec in rest))
        merged = [ch for ch in dict.fromkeys(terms[i][1] + terms[j][1]) if ch in keep]
        path.append((i, j))
        terms = rest + [(None, merged)]
    return path, report


# -- convolve and correlate ------------------------------------------------------------------------------
def _conv1d(name: str, a: Any, v: Any, mode: str, flip: bool, precision: Any, preferred_element_type: Any) -> Any:
    """1-d convolution (``flip``) or correlation through ``conv_general_dilated``.

    The full result (every overlap) comes from padding by ``len(v) - 1`` on both sides; 'same' and 'valid'
    are its centred parts of lengths max(n, m) and max(n, m) - min(n, m) + 1, as NumPy defines them.
    """
    check_arraylike(name, a, v)
    a, v = promote_dtypes_inexact(a, v)
    if len(_shape(a)) != 1 or len(_shape(v)) != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    n, m = _shape(a)[0], _shape(v)[0]
    if n == 0 or m == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {_shape(a)} and {_shape(v)}.")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{name}: mode must be one of ['full', 'same', 'valid'], got {mode!r}")
    if flip:
        v = rev_p.bind(v, dimensions=(0,))
    else:
        v = _conj(v)
    preferred = None
    if preferred_element_type is not None:
        preferred = dtypes.canonicalize_dtype(dtypes.to_dtype(preferred_element_type))
    from srcjax.runtime.lax.convolution import canonical_precision

    full = conv_general_dilated_p.bind(
        _reshape(a, (1, 1, n)), _reshape(v, (1, 1, m)), window_strides=(1,), padding=((m - 1, m - 1),),
        lhs_dilation=(1,), rhs_dilation=(1,), dimension_numbers=ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2)),
        feature_group_count=1, batch_group_count=1, precision=canonical_precision(precision),
        preferred_element_type=preferred)
    full = _reshape(full, (n + m - 1,))
    if mode == "full":
        return full
    small, big = min(n, m), max(n, m)
    if mode == "same":
        # convolution is symmetric; a correlation with a longer v is the reversed one, centred the other way
        start = (small - 1) // 2 if flip or n >= m else small // 2
        return _slice(full, 0, start, start + big)
    return _slice(full, 0, small - 1, big)


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Discrete linear convolution of two 1-d arrays (results are inexact, as in JAX)."""
    return _conv1d("convolve", a, v, mode, True, precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Cross-correlation ``c[k] = sum_n a[n + k] * conj(v[n])`` of two 1-d arrays."""
    return _conv1d("correlate", a, v, mode, False, precision, preferred_element_type)


# -- trace -----------------------------------------------------------------------------------------------
def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: None = None) -> Any:
    """The sum along a diagonal (``offset`` above the main one) of the ``axis1``/``axis2`` matrices."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported (arrays are immutable).")
    check_arraylike("trace", a)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError(f"trace: the array must have at least 2 axes, got shape {shape}")
    i, j = _axis(axis1, len(shape), "trace"), _axis(axis2, len(shape), "trace")
    if i == j:
        raise ValueError(f"trace: axis1 and axis2 cannot be the same ({axis1}, {axis2})")
    from srcjax.runtime.numpy.reductions import sum as jnp_sum

    return jnp_sum(_diagonal(a, operator.index(offset), i, j), axis=-1, dtype=dtype)
