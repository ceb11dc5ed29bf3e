"""What a fusion plan is made of: the sources values have (views of buffers, unmaterialised expressions), the
steps that compute buffers (loop nests and BLAS products) and the plan of a whole function.

Every value gets a *source*: a ``View`` (a materialised buffer seen through strides: parameters, constants,
results of reductions and products, and whatever reshapes, transposes, broadcasts or slices them), an
``Expr`` (an elementwise op or an index remapping, computed where it is used, never stored) or a literal.
Nests index values through *index maps*: for each axis of the value, the iteration axis it follows (or
None: index 0). Broadcasts and transposes of expressions compose maps, so they cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np

from srcjax.codegen.llvm.layout import Buffer, View
from srcjax.transpiler.ir import Function, Literal, Op, Value

IndexMap = tuple  # per value axis: an iteration axis (int) or None


class Unsupported(Exception):
    """The function uses something the native backend does not compile (the interpreter runs it)."""


# dtypes the backend handles (no float16, no complex numbers yet)
SUPPORTED_DTYPES = {
    np.dtype(t) for t in "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64".split()
}


@dataclass(frozen=True)
class ResultOf:
    """Stands for an op in an ``Expr``: result ``j`` of a multi-result elementwise op, named "<op>.<j>", or an
    elementwise op the planner makes itself (the combination of a window's views)."""

    name: str
    operands: list
    params: dict


@dataclass(frozen=True)
class Expr:
    """An unmaterialised value: ``op`` applied elementwise, or (``operand``, ``index_map``) remapping axes."""

    op: "Op | ResultOf | None" = None
    operand: Value | None = None
    index_map: IndexMap = ()


@dataclass(frozen=True)
class Gathered:
    """Stands for a gather in an ``Expr``: each element reads ``view`` at an address that is affine in the
    element's index (``strides``, per result axis) plus, per component of the index vector, the component
    (clamped to [0, largest start]) times an operand stride. ``operands`` are the components: values over
    the indices' batch axes, which follow the result axes ``batch_axes``. With ``fill`` (FILL_OR_DROP), an
    element whose window does not fit is ``fill``."""

    operands: list
    view: View
    strides: tuple[int, ...]
    starts: tuple[tuple[int, int], ...]  # per component: (operand stride, largest start)
    batch_axes: tuple[int, ...]
    fill: object = None
    name: str = "gather"  # (what cost estimates read of an op)


@dataclass(frozen=True)
class Windowed:
    """Stands for a convolution's patches (im2col) in an ``Expr``: each element reads ``view`` at an address
    affine in the element's index (``strides``, per value axis) plus, per spatial axis, the input position
    u // dilation times the input's stride, where u is affine in the index: (coefficient per value axis,
    offset, largest u, dilation, input stride). Where u falls in the padding or in a hole of the dilation the
    element is 0."""

    view: View
    strides: tuple[int, ...]
    spatial: tuple[tuple[tuple[int, ...], int, int, int, int], ...]
    name: str = "patches"
    operands: tuple = ()  # (it reads no value through the expression walk)


@dataclass
class Scattered:
    """What makes a map nest over the updates a scatter: each update element lands at an address affine in
    its index (``strides``) plus, per index component (``components``, over the updates' ``batch_axes``),
    the component times an operand stride. Windows that do not fit are clamped into place (``clip``) or
    dropped; ``combine`` says how an update meets the element it lands on (None: replaces it). The nest
    runs serially, in order, so repeated indices combine (or the last one wins) as in NumPy."""

    combine: str | None
    components: list
    strides: tuple[int, ...]
    starts: tuple[tuple[int, int], ...]
    batch_axes: tuple[int, ...]
    clip: bool


Source = Union[View, Expr, Literal]


@dataclass
class Nest:
    """One loop nest over ``shape``. Map nests store values (at the identity index map) into buffers;
    reduce nests combine ``operand`` over ``axes`` into ``target`` (``combine`` names the operation)."""

    shape: tuple[int, ...]
    stores: list[tuple[Value, Buffer]] = field(default_factory=list)
    combine: str | None = None
    operand: Value | None = None
    axes: tuple[int, ...] = ()
    target: Buffer | None = None
    # a product (``dot`` nest): lhs and rhs values with their index maps into the iteration axes
    product: tuple[Value, IndexMap, Value, IndexMap, np.dtype] | None = None
    order: float = 0  # program position of the root: nests run in this order
    # where map nests store, as (strides, offset) in the buffer; None: contiguous over ``shape``
    placement: tuple[tuple[int, ...], int] | None = None
    scatter: Scattered | None = None  # a map nest over a scatter's updates, storing them at their indices
    reverse: bool = False  # a scan (``combine`` over the one axis in ``axes``, every prefix stored) from the end
    scan: bool = False


@dataclass
class Gemm:
    """A (batched) matrix product through BLAS: out[b] = op(lhs[b]) @ op(rhs[b]), all float32 or float64."""

    lhs: View
    rhs: View
    target: Buffer
    batch: int
    m: int
    n: int
    k: int
    lhs_layout: tuple[int, bool, int]  # (batch stride, transposed, leading dimension) of the (m, k) operand
    rhs_layout: tuple[int, bool, int]  # of the (k, n) operand
    order: float = 0
    symmetric: bool = False  # rhs is lhs transposed (x @ x.T): a rank-k update computes half the product
    precision: object = None  # the op's ``precision`` (the GPU's float32 products: TF32 unless it is HIGHEST)


Step = Union[Nest, Gemm]


@dataclass
class Plan:
    fn: Function
    sources: dict[int, Source]
    buffers: dict[int, Buffer]  # root value id -> buffer
    steps: list[Step]
    inputs: list[Buffer]
    consts: list[tuple[Buffer, np.ndarray]]
    outputs: list[Buffer]
    temps: list[Buffer]
    control: bool = False  # the function has control flow: ``control.ControlEmitter`` emits it
    # ops run by the host (NumPy) from inside the native code, in the order of their index in the call
    host_ops: list[Op] = field(default_factory=list)
    # the function has collectives: it runs as replicas (codegen/llvm/replicas.py) and takes their context
    replicated: bool = False

    def source(self, v: Value) -> Source:
        return v if isinstance(v, Literal) else self.sources[id(v)]


def describe(plan: Plan) -> str:
    """A short text of the plan's steps (for tests and ``--emit`` debugging)."""
    lines = []
    for step in plan.steps:
        if isinstance(step, Gemm):
            routine = "syrk" if step.symmetric else "gemm"
            lines.append(f"{routine} {step.batch}x[{step.m},{step.k}]@[{step.k},{step.n}] -> {step.target.kind}")
        elif step.scan:
            lines.append(f"scan[{step.combine}] {step.shape} axis={step.axes[0]} -> {step.target.kind}")
        elif step.combine is not None:
            lines.append(f"reduce[{step.combine}] {step.shape} axes={step.axes} -> {step.target.kind}")
        elif step.scatter is not None:
            how = step.scatter.combine or "set"
            lines.append(f"scatter[{how}] {step.shape} -> {', '.join(b.kind for _, b in step.stores)}")
        else:
            lines.append(f"map {step.shape} -> {', '.join(b.kind for _, b in step.stores)}")
    return "\n".join(lines)
