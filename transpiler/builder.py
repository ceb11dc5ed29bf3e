"""The IR builder: the interpreter that records ``prim.bind`` calls as ops while a function is compiled.

Operations whose operands are all concrete are not recorded: they run at once on the base interpreter
(the runtime's eager one), which is partial evaluation — static work stays static. Concrete operands
mixed with symbolic ones become constants: 0-d ones inline ``Literal``s, larger ones the function's
``consts``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import numpy as np

from srcjax.transpiler.ir import Block, Function, Literal, Op, Origin, SourceLoc, Value, unexpected_tracer, walk
from srcjax.transpiler.primitives import core
from srcjax.transpiler.types import TensorType


def is_symbolic(x: Any) -> bool:
    return isinstance(x, Value)


class Builder(core.Interpreter):
    def __init__(self, name: str, source: SourceLoc | None = None, capture: bool = False):
        self.function = Function(name, [], Block(), source=source)
        # With ``capture``, symbolic values of an enclosing compilation that this function uses become
        # extra parameters (``captured``: the outer values, in order), as a closure would capture them.
        self.capture = capture
        self.captured: list[Value] = []
        self._captured_params: dict[int, Value] = {}
        self._owned: dict[int, Value] = {}  # by identity, held so that ids are not reused
        self._blocks: list[Block] = [self.function.body]
        self._consts: dict[int, Value] = {}  # id(concrete array) -> its const value
        self.loc: SourceLoc | None = source
        # params that transforms differentiate, by id: how many nested ones do (``trace_function``)
        self.differentiated: dict[int, int] = {}

    # -- values ------------------------------------------------------------------------------------------
    @property
    def block(self) -> Block:
        return self._blocks[-1]

    def param(self, aval: TensorType, name: str | None = None) -> Value:
        value = Value(aval, name)
        self.function.params.append(value)
        self.function.body.params.append(value)
        self._owned[id(value)] = value
        return value

    def own(self, *values: Value) -> None:
        self._owned.update((id(v), v) for v in values)

    def operand(self, x: Any) -> Value:
        """``x`` as an IR value: itself if symbolic, else a literal or a constant."""
        if isinstance(x, Value):
            if self.capture and id(x) not in self._owned and not isinstance(x, Literal):
                return self._capture(x)
            return x
        if not isinstance(getattr(x, "aval", None), TensorType):
            x = core.base_interpreter().canonical(x)  # Python scalars take the runtime's canonical dtypes
        aval = _concrete_aval(x)
        if aval.shape == ():
            return Literal(_host_value(x), aval)
        key = id(x)
        if key not in self._consts:
            value = Value(aval, None)
            self.function.consts.append((value, np.asarray(_host_value(x))))
            self._consts[key] = value
            self._keepalive = getattr(self, "_keepalive", []) + [x]  # ids stay unique while we hold them
        return self._consts[key]

    def constant(self, value: Value, data: Any) -> Value:
        """A transformed function's constant ``value`` (holding ``data``) in this function, of ``value``'s own type:
        not canonicalised as ``operand`` would (with x64 off that would narrow a float64 constant that the
        function's float64 arithmetic reads)."""
        aval = value.aval
        if aval.shape == ():
            return Literal(np.asarray(data, aval.dtype)[()], aval)
        const = Value(aval, None)
        self.function.consts.append((const, np.asarray(data)))
        return const

    def _capture(self, outer: Value) -> Value:
        param = self._captured_params.get(id(outer))
        if param is None:
            if getattr(outer, "origin", None) is not None:  # of a compilation that has ended: nothing binds it
                raise unexpected_tracer(outer, "a value this function uses")
            param = self.param(outer.aval, outer.name)
            self._captured_params[id(outer)] = param
            self.captured.append(outer)
        return param

    def differentiation_depth(self, values: Sequence[Any]) -> int:
        """How many nested transforms differentiate what ``values`` depend on: the deepest ``differentiated``
        param their differentiable values reach through the ops recorded so far (not through a value whose
        derivative is zero, such as ``stop_gradient``'s). What the walk cannot see through (a loop's carried
        params) counts as depending on nothing."""
        if not self.differentiated:
            return 0
        producers = {id(r): op for block in self._blocks for op in block.ops for r in op.results}
        todo, seen, depth = [v for v in values if isinstance(v, Value)], set(), 0
        while todo:
            v = todo.pop()
            if id(v) in seen or isinstance(v, Literal) or not isinstance(v.aval, TensorType) \
                    or v.aval.dtype.kind not in "fc":
                continue
            seen.add(id(v))
            depth = max(depth, self.differentiated.get(id(v), 0))
            op = producers.get(id(v))
            if op is None or op.prim.rule_state("jvp") == core.ZERO:
                continue
            todo += op.operands
            todo += [x for region in op.regions for inner in walk(region) for x in inner.operands]
        return depth

    # -- recording ---------------------------------------------------------------------------------------
    def process(self, prim: core.Primitive, operands: Sequence[Any], params: dict[str, Any]) -> Any:
        if not any(isinstance(x, Value) for x in operands) and not prim.always_record:
            if not _grows_scalars(prim, operands, params):
                return core.base_interpreter().process(prim, operands, params)
        values = [self.operand(x) for x in operands]
        out = prim.abstract_eval(*(v.aval for v in values), **params)
        results = [Value(t) for t in out] if prim.multiple_results else [Value(out)]
        self.emit(Op(prim, values, dict(params), results, loc=self.loc))
        return results if prim.multiple_results else results[0]

    def emit(self, op: Op) -> Op:
        self.block.ops.append(op)
        self._owned.update((id(r), r) for r in op.results)
        return op

    @contextlib.contextmanager
    def region(self, param_avals: Sequence[TensorType] = (), names: Sequence[str | None] = ()) -> Iterator[Block]:
        """Build a nested block; ops bound inside go to it. Its params are fresh values of the given types."""
        names = list(names) + [None] * (len(param_avals) - len(names))
        block = Block(params=[Value(t, n) for t, n in zip(param_avals, names)])
        self.own(*block.params)
        self._blocks.append(block)
        try:
            yield block
        finally:
            self._blocks.pop()

    @contextlib.contextmanager
    def reopen(self, block: Block) -> Iterator[Block]:
        """Append more ops to a block built earlier (conversions of a branch's results)."""
        self._blocks.append(block)
        try:
            yield block
        finally:
            self._blocks.pop()

    @contextlib.contextmanager
    def at(self, loc: SourceLoc | None) -> Iterator[None]:
        saved, self.loc = self.loc, loc
        try:
            yield
        finally:
            self.loc = saved

    def finish(self, results: Sequence[Any]) -> Function:
        self.function.body.results = [self.operand(r) for r in results]
        self.function.captured = list(self.captured)
        self._mark_finished()
        return self.function

    def _mark_finished(self) -> None:
        """Give every value this compilation made its ``Origin``: one that escaped it (saved by the user's
        function rather than returned) is then reported as such, with the line that made it, when used."""
        name = self.function.name
        whole = Origin(name, self.function.source)
        for value in self._owned.values():
            value.origin = whole
        todo = [self.function.body]
        while todo:
            for op in todo.pop().ops:
                if op.results:
                    made = Origin(name, self.function.source, op.loc)
                    for r in op.results:
                        r.origin = made
                todo.extend(op.regions)


def differentiation_depths(values: Sequence[Any]) -> list[int]:
    """Per value: how many transforms differentiate it in the compilation now recording (0 outside one). A
    trace started on these values passes them on as its params' ``differentiated``."""
    interpreter = core.current_interpreter()
    builder = interpreter if isinstance(interpreter, Builder) else getattr(interpreter, "builder", None)
    if not isinstance(builder, Builder):
        return [0] * len(values)
    return [builder.differentiation_depth([v]) if isinstance(v, Value) else 0 for v in values]


def _grows_scalars(prim: core.Primitive, operands: Sequence[Any], params: dict[str, Any]) -> bool:
    """True for ops that make an array from scalars (a broadcast of 0.0, an iota): folding them would put a
    big constant in the IR, so they are recorded instead."""
    if prim.multiple_results or not all(_concrete_aval(x).shape == () for x in operands):
        return False
    out = prim.abstract_eval(*(_concrete_aval(core.base_interpreter().canonical(x)) for x in operands), **params)
    return out.shape != () and out.size > 1


def _concrete_aval(x: Any) -> TensorType:
    aval = getattr(x, "aval", None)
    if isinstance(aval, TensorType):
        return aval
    from srcjax.transpiler.types import type_of_value

    return type_of_value(x)


def _host_value(x: Any) -> Any:
    value = getattr(x, "_value", None)
    return value if value is not None else x
