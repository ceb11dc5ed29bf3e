"""What a traced value is worth while its function is read, where the trace can know, and how it prints.

JAX's transformations outside ``jit`` run the function on tracers over concrete values: under ``grad`` an
``assert``, ``bool()`` or ``print`` sees the primal's numbers, under ``vmap`` an unbatched value is an ordinary
array, and only under ``jit`` is everything abstract. srcjax reads the function into IR instead. A
transformation that evaluates the IR at once, on arguments it holds, says so in the trace's ``TraceContext``;
the front end can then compute a value from the ops recorded so far (what JAX's primal would be), and prints a
traced value the way JAX prints its tracer: ``JitTracer(float32[3])``, ``GradTracer(primal=[1. 2.],
typeof(tangent)=f32[2])``, ``VmapTracer(aval=float32[], batched=float32[3])``.

A statement inside a region of an ``if`` on a traced value runs where its condition holds: where the
conditions are known, it runs or not as in JAX (an assertion in the branch not taken is not checked, a print
there prints nothing); where they are not (under jit), it is read once for both, as JAX traces ``lax.cond``'s
branches (printing ``JitTracer``). Inside a loop on a traced value nothing is evaluated. A trace that computed a
value from its inputs, or printed, holds only for those inputs: its ``reusable`` flag is cleared (JAX's eager
``grad`` traces and prints on every call).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from srcjax.transpiler.interpret import Evaluator, concrete
from srcjax.transpiler.ir import Literal, Value, free_values
from srcjax.transpiler.primitives import core
from srcjax.transpiler.types import TensorType

UNKNOWN = object()  # an input whose value the trace does not know (an argument batched by vmap)

_NAMES = {"jit": "JitTracer", "grad": "GradTracer", "jvp": "JVPTracer", "vmap": "VmapTracer"}


@dataclasses.dataclass(eq=False)
class TraceContext:
    """What the caller of a trace tells the front end about it (and what the front end tells back).

    ``kind``: the transformation, for how its traced values print (``jit``, ``grad``, ``jvp``, ``vmap``).
    ``inputs``: per parameter of the function (its dynamic argument leaves, in order), the value it will be
    called with: a concrete array, ``UNKNOWN``, or a value of the ``outer`` trace; None where nothing is known.
    ``tracked``: per parameter, None where the transformation leaves it alone, else True (differentiated) or
    its batch axis (vmap). ``outer``: the trace that was being built when this one began."""

    kind: str = "jit"
    inputs: Sequence[Any] | None = None
    tracked: Sequence[Any] | None = None
    axis_size: int | None = None
    outer: Any = None
    reusable: bool = True  # cleared when the trace depends on its inputs' values or prints
    unrollable: int = 0  # static-range loops being built as loop ops, which may be unrolled instead
    # the regions of the ``if``s on traced values being read: (the block it is in, the region, its condition,
    # whether the region runs where the condition holds or where it does not), outermost first
    guards: list = dataclasses.field(default_factory=list)
    # per region of control flow on traced values being read (an if's branches, a compiled loop's body): the ids
    # of the mutable Python objects that existed when it began (``frontend.control.outer_objects``)
    outer_objects: list = dataclasses.field(default_factory=list)
    # the ids of the Python objects the function changed while it was read (an item set, a list appended to): its
    # side effects, which a reused trace does not repeat, so not what decides whether it may be reused
    written: set = dataclasses.field(default_factory=set)
    _env: dict = dataclasses.field(default_factory=dict)  # what evaluation computed so far, by id of value


def at_top_level(trace: Any) -> bool:
    """Whether the statement being read runs on every call (not inside a region of control flow)."""
    builder = trace.builder
    return builder.block is builder.function.body


def _chain(trace: Any) -> list[Any]:
    """The blocks whose ops evaluation may run: the function's body, then the regions of the ``if``s being read
    (outermost first) as long as each is opened in the one before (not inside a loop's region)."""
    blocks = [trace.builder.function.body]
    for parent, region, _, _ in trace.context.guards:
        if parent is not blocks[-1]:
            break
        blocks.append(region)
    return blocks


def reachable(trace: Any) -> bool | None:
    """Whether the statement being read runs on the trace's inputs: True at the top level, or inside ``if``s
    on traced values whose conditions select it; False where one selects the other branch; None where that is
    not known (a condition not computable, a loop's region)."""
    guards = trace.context.guards
    chain = _chain(trace)
    if len(chain) != len(guards) + 1 or chain[-1] is not trace.builder.block or any(g[3] is None for g in guards):
        return None  # (checked before any condition is computed: computing one ties the trace to its inputs)
    for _, _, pred, when in guards:
        value = evaluate(trace, pred)
        if value is None:
            return None
        if bool(value) != when:
            return False
    return True


def runs(trace: Any) -> bool | None:
    """``reachable``, also for the statements of the enclosing traces that began this one (a ``grad`` called in
    the branch not taken of an ``if`` does not run either)."""
    reached = reachable(trace)
    outer = trace.context.outer
    if reached is False or outer is None or getattr(outer, "context", None) is None:
        return reached
    return False if runs(outer) is False else reached


def reached_blocks(trace: Any) -> list[Any] | None:
    """The blocks the statement being read is in, outermost first, where it is known to run (``reachable``)."""
    return _chain(trace) if reachable(trace) is True else None


def _slice(trace: Any, value: Value) -> tuple[list[tuple[int, int]], set[int]] | None:
    """The ops ``value`` needs (by block of ``_chain`` and position, in order) and the parameters it reads (by
    position); None when it needs a value defined inside a region outside the chain."""
    function = trace.builder.function
    chain = _chain(trace)
    defined = {id(r): (b, i) for b, block in enumerate(chain) for i, op in enumerate(block.ops) for r in op.results}
    params = {id(p): i for i, p in enumerate(function.params)}
    consts = {id(v) for v, _ in function.consts}
    needed: set[tuple[int, int]] = set()
    reads: set[int] = set()
    todo, seen = [value], set()
    while todo:
        v = todo.pop()
        if id(v) in seen or isinstance(v, Literal) or id(v) in consts:
            continue
        seen.add(id(v))
        if id(v) in params:
            reads.add(params[id(v)])
            continue
        where = defined.get(id(v))
        if where is None:
            return None
        needed.add(where)
        op = chain[where[0]].ops[where[1]]
        todo.extend(op.operands)
        for region in op.regions:
            todo.extend(free_values(region))
    return sorted(needed), reads


def _given(trace: Any, i: int) -> Any:
    """What parameter ``i`` is called with: a concrete value, ``UNKNOWN``, or a value of the enclosing trace."""
    inputs, captured = trace.context.inputs, trace.builder.captured
    if inputs is None:
        return UNKNOWN
    if i < len(inputs):
        return inputs[i]
    k = i - len(inputs)  # a value of the enclosing trace that this function uses (``Builder.captured``, in order)
    return captured[k] if k < len(captured) else UNKNOWN


def _input(trace: Any, i: int) -> Any:
    """The value parameter ``i`` will have, or ``UNKNOWN``."""
    x = _given(trace, i)
    if isinstance(x, Value):  # the enclosing trace's: known if it can compute it on every path
        outer = trace.context.outer
        if outer is None or reachable(outer) is not True:
            return UNKNOWN
        x = evaluate(outer, x)
        return UNKNOWN if x is None else x
    return x


def evaluate(trace: Any, value: Any) -> Any:
    """``value`` computed on the trace's inputs from the ops recorded so far, or None where it cannot be."""
    if not isinstance(value, Value):
        return value
    context = getattr(trace, "context", None)
    if context is None:
        return None
    found = _slice(trace, value)
    if found is None:
        return None
    ops, reads = found
    params = trace.builder.function.params
    known = {}
    for i in reads:
        x = _input(trace, i)
        if x is UNKNOWN:
            return None
        known[id(params[i])] = x
    if reads:
        context.reusable = False
    function = trace.builder.function
    chain = _chain(trace)
    evaluator = Evaluator()
    evaluator.env = context._env
    with core.interpreting(core.base_interpreter()):
        for v, data in function.consts:
            if id(v) not in evaluator.env:
                evaluator.env[id(v)] = concrete(np.asarray(data), v.aval)
        evaluator.env.update(known)
        for b, i in ops:
            op = chain[b].ops[i]
            if not all(id(r) in evaluator.env for r in op.results):
                evaluator.eval_op(op)
        return evaluator.read(value)


def converted(trace: Any, value: Value, exact: bool) -> Any:
    """``value``'s number for a Python conversion of it (``bool(x)``; with ``exact``, ``float(x)``, ``int(x)``,
    ``x.item()``), or None where JAX's tracer would refuse it: not computable on the trace's inputs, or, with
    ``exact``, a value that is differentiated (JAX refuses a number that would drop the derivative)."""
    if reachable(trace) is not True:
        return None
    found = _slice(trace, value)
    if found is None:
        return None
    if exact and _differentiated(trace, found[1]):
        return None
    return evaluate(trace, value)


def _differentiated(trace: Any, reads: set[int]) -> bool:
    """Whether the parameters ``reads`` carry a derivative: of this trace's transformation, or of an enclosing
    one (through what the enclosing trace passed in)."""
    params = trace.builder.function.params
    depths = getattr(trace.builder, "differentiated", None) or {}
    if any(depths.get(id(params[i])) for i in reads):
        return True
    if trace.context.kind in ("grad", "jvp") and _tracked(trace, reads):
        return True
    outer = trace.context.outer
    if outer is None or getattr(outer, "context", None) is None:
        return False
    for i in reads:
        x = _given(trace, i)
        if isinstance(x, Value):
            found = _slice(outer, x)
            if found is None or _differentiated(outer, found[1]):
                return True
    return False


# -- printing ----------------------------------------------------------------------------------------------------
class TracerText:
    """A traced value as ``print``, ``str``, ``repr`` and f-strings show it: JAX's text for its tracer. A format
    spec is refused, as JAX's tracers refuse one."""

    def __init__(self, text: str, name: str):
        self.text, self.name = text, name

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if spec:
            raise TypeError(f"unsupported format string passed to {self.name}.__format__")
        return self.text


def _long(aval: TensorType, weak: bool = True) -> str:
    """``float32[2,3]``, ``~float32[]`` for a weak type (JAX's ``str`` of a ShapedArray)."""
    return ("~" if weak and aval.weak_type else "") + f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def _tangent(aval: TensorType) -> str:
    if aval.dtype.kind in "fc":
        return str(aval.strong())
    return f"float0[{','.join(map(str, aval.shape))}]"


def _unknown_text(trace: Any, aval: TensorType) -> str:
    """A value of ``aval`` not known here: as the enclosing transformation's tracer (JAX nests them)."""
    outer = trace.context.outer
    context = getattr(outer, "context", None)
    if context is not None and context.kind == "vmap" and context.axis_size is not None:
        batched = aval.update(shape=(context.axis_size, *aval.shape))
        return f"VmapTracer(aval={_long(aval, weak=False)}, batched={_long(batched, weak=False)})"
    return f"JitTracer({_long(aval)})"


def _tracked(trace: Any, reads: set[int]) -> list[Any]:
    """What the trace's transformation records of the parameters ``reads`` (see ``TraceContext.tracked``)."""
    tracked = trace.context.tracked or ()
    return [tracked[i] for i in sorted(reads) if i < len(tracked) and tracked[i] is not None]


def _primal_text(trace: Any, reads: set[int], aval: TensorType, primal: Any) -> str:
    """How a value computed from the parameters ``reads`` prints once this trace's transformation is set aside:
    as the enclosing transformation's tracer where it depends on what that one transforms (JAX nests its
    tracers), else as its value, or as an abstract tracer where that is not known."""
    outer = trace.context.outer
    if outer is not None and getattr(outer, "context", None) is not None and reachable(outer) is True:
        outer_reads: set[int] = set()
        for i in reads:
            x = _given(trace, i)
            found = _slice(outer, x) if isinstance(x, Value) else None
            outer_reads |= found[1] if found is not None else set()
        kind = outer.context.kind
        if _tracked(outer, outer_reads) and kind in ("grad", "jvp"):
            inner = _primal_text(outer, outer_reads, aval, primal)
            return f"{_NAMES[kind]}(primal={inner}, typeof(tangent)={_tangent(aval)})"
        if _tracked(outer, outer_reads) and kind == "vmap":
            return _unknown_text(trace, aval)
    return str(primal) if primal is not None else _unknown_text(trace, aval)


def tracer_name(trace: Any) -> str:
    """The class name JAX's tracer of this transformation has (``JitTracer``, ``GradTracer``, ...)."""
    return _NAMES.get(trace.context.kind, "JitTracer")


def printable(trace: Any, value: Value) -> Any:
    """What ``print(value)`` shows for a traced ``value``: the concrete array where JAX's value would be one,
    else a ``TracerText``."""
    context = trace.context
    if context.kind != "jit":
        context.reusable = False  # (JAX's transformations outside jit print on every call)
    aval = value.aval
    found = _slice(trace, value) if reachable(trace) is True else None
    if found is None:
        return TracerText(f"JitTracer({_long(aval)})", "JitTracer")
    _, reads = found
    params = trace.builder.function.params
    tracked = context.tracked or ()
    axes = _tracked(trace, reads)
    name = _NAMES.get(context.kind, "JitTracer")
    if axes and context.kind in ("grad", "jvp"):
        primal_text = _primal_text(trace, reads, aval, evaluate(trace, value))
        return TracerText(f"{name}(primal={primal_text}, typeof(tangent)={_tangent(aval)})", name)
    if axes and context.kind == "vmap":
        direct = [i for i, p in enumerate(params) if p is value]
        axis = tracked[direct[0]] if direct and direct[0] < len(tracked) else 0
        axis = axis if isinstance(axis, int) and not isinstance(axis, bool) else 0
        shape = aval.shape[:axis] + (context.axis_size or 0,) + aval.shape[axis:]
        return TracerText(f"VmapTracer(aval={_long(aval, weak=False)}, batched="
                          f"{_long(aval.update(shape=shape), weak=False)})", name)
    primal = evaluate(trace, value)
    text = _primal_text(trace, reads, aval, primal)
    if primal is not None and text == str(primal):
        return primal  # (a concrete array, as JAX's value is one: a format spec applies to it)
    return TracerText(text, text[: text.index("(")] if "(" in text else name)
