"""What an op rule may ask of the transform engine that calls it.

Most rules map values: a JVP rule takes primals and tangents, a batching rule values and batch axes. Ops that
hold regions (``cond``, loops, ``scan``, custom-derivative calls) and the stacks loops keep their residuals
on cannot be bound, and their rules must transform nested blocks; collectives must know the axis being
batched. Their rules are *op rules* (``prim.def_jvp(rule, op_rule=True)``, the default for every rule of a
``ControlPrimitive``): ``rule(engine, op)`` reads the op's operands from the engine, emits the transformed op
through ``engine.builder``, and writes its results back. The protocols below are everything such a rule may
use; the engines in ``transpiler/transforms/`` implement them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

if TYPE_CHECKING:
    from srcjax.transpiler.ir import Block, Function, Op, Value


class JVPEngine(Protocol):
    """Forward mode: old values -> their new primal values and tangents (``Zero`` when known zero)."""

    builder: Any  # the ``Builder`` the transformed function is recorded in

    def read(self, v: Value) -> Any: ...

    def tangent(self, v: Value) -> Any: ...

    def write(self, v: Value, primal: Any, tangent: Any = None) -> None: ...

    def block(self, block: Block) -> None:
        """Transform ``block``'s ops into the builder's current block (its params written beforehand)."""

    def rebuild(self, op: Op, operands: Sequence[Any]) -> list[Value]:
        """Emit ``op`` again, unchanged but for its operands (its regions copied): a call no tangent reaches."""


class Record(Protocol):
    """What the forward sweep of reverse mode keeps of one op, for the backward sweep."""

    op: Op

    def refs(self) -> list[Value]:
        """The forward values the backward sweep reads (a region exports them; a loop saves them per iteration)."""

    def targets(self, engine: VJPEngine) -> list[Value]:
        """The old values this record may send cotangents to (a loop accumulates those defined outside it)."""

    def backward(self, engine: VJPEngine, ct: dict[int, Any], resolve: Callable[[Value], Any]) -> None:
        """Emit the transposed op: read the cotangents of ``op``'s results from ``ct`` (by id of the old value),
        add those of its operands; ``resolve`` maps a forward value to where the backward code reads it."""


class VJPEngine(Protocol):
    """Reverse mode (forward sweep + backward sweep). An op rule registered as a primitive's transpose rule is
    its reverse-mode hook: ``hook(engine, op)`` re-emits the op in the forward sweep and returns a ``Record``
    (or ``None`` when no cotangent can flow through it)."""

    builder: Any
    linearizer: Any  # the interpreter of the forward sweep: binds touching a tangent go to a linear snippet
    active: set[int]  # ids of the old values that depend on a differentiated input
    source: Any  # the source location of the function being differentiated

    def read(self, v: Value) -> Any: ...

    def write(self, old: Value, new: Any, keep_name: bool = True) -> None:
        """``old`` is now ``new``; a new value without a name takes ``old``'s (with ``keep_name``)."""

    def is_active(self, v: Value) -> bool: ...

    def activate(self, v: Value) -> None:
        """``v`` depends on a differentiated input (cotangents will flow to it)."""

    def forward_block(self, block: Block) -> list[Record]: ...

    def backward_block(self, records: list[Record], ct: dict[int, Any], resolve: Callable[[Value], Any]) -> None:
        ...

    def local_refs(self, records: list[Record], block: Block) -> tuple[list[Value], list[Value]]:
        """What ``records`` reference, split into values defined in ``block`` and values from outside it."""

    def old_value(self, key: int) -> Value:
        """The value of the function being differentiated with this id."""

    def rebuild(self, op: Op, operands: Sequence[Any]) -> list[Value]: ...

    def trace(self, name: str, avals: Sequence[Any], body: Callable[[list[Value]], list[Any]]) -> Function:
        """A function of parameters of types ``avals``, recorded from ``body(params) -> results``."""

    def vjp(self, fn: Function, wrt: Sequence[bool], linear: bool = False) -> Function:
        """The reverse-mode derivative of a whole function (``vjp_function``; ``linear``: its transpose, ``fn``
        being required to be linear in ``wrt``)."""

    def evaluate(self, fn: Function, *args: Any) -> list[Any]:
        """``fn`` applied to ``args`` through the current interpreter (recorded, or computed)."""


class BatchEngine(Protocol):
    """Batching: old values -> (new value, batch axis or ``None``)."""

    builder: Any
    size: int  # the batch size
    axis_name: Any  # the batch's named axis, or None
    masks: list[Any]  # per example (bool, (size,)): whether the code being batched runs for it (nested: all hold)

    def read(self, v: Value) -> tuple[Any, int | None]: ...

    def write(self, old: Value, new: Any, dim: int | None) -> None: ...

    def at_front(self, x: Any, dim: int | None) -> Any:
        """An array with its batch axis first; an unbatched one broadcast along a new first axis."""

    def region_yields(self, block: Block, params: Sequence[Value], new_params: Sequence[Any],
                      dims: Sequence[int | None]) -> tuple[list[Any], list[int | None]]:
        """Batch ``block`` into the builder's current block with its params bound to ``new_params`` (batched along
        ``dims``): its yields and their batch axes."""
