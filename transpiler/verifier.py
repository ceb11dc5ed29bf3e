"""The IR verifier: types agree with the shape rules, values are defined before use, regions are well formed.

``verify(fn)`` collects every problem and raises one ``VerificationError`` listing them, values named as
the printer names them. Run it after every transform in tests.
"""

from __future__ import annotations

from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.primitives import control
from srcjax.transpiler.primitives.core import PRIMITIVES
from srcjax.transpiler.printer import Printer


class VerificationError(Exception):
    """The function is not well formed; ``errors`` lists each problem."""

    def __init__(self, function: str, errors: list[str]):
        self.errors = errors
        problems = "problem" if len(errors) == 1 else "problems"
        super().__init__(f"@{function}: {len(errors)} {problems}\n" + "\n".join(f"  - {e}" for e in errors))


def _types(values: list[Value]) -> str:
    return "(" + ", ".join(str(v.aval) for v in values) + ")"


class _Verifier:
    def __init__(self, fn: Function):
        self.fn = fn
        self.errors: list[str] = []
        printer = Printer(fn)  # values are named as the printed function names them
        try:
            printer.function()
        except TypeError as e:  # a param the text cannot hold; the names given so far still serve
            self.errors.append(f"the function cannot be printed: {e}")
        self.names = {key: "%" + name for key, name in printer.names.items()}
        self.defining_block: dict[int, Block] = {}  # where each value is defined
        self.open_blocks: list[Block] = []  # the block being checked and those enclosing it

    def name(self, v: Value) -> str:
        return self.names.get(id(v), "%?")

    def describe(self, op: Op) -> str:
        results = ", ".join(self.name(r) for r in op.results)
        where = f" ({op.loc.file.rsplit('/', 1)[-1]}:{op.loc.line})" if op.loc else ""
        return f"{results + ' = ' if results else ''}{op.name}{where}"

    # -- definitions -------------------------------------------------------------------------------------------
    def collect(self, block: Block, extra: list[Value] = ()) -> None:
        """Record where every value is defined; report values defined twice and literals defined at all."""
        for v in [*extra, *block.params]:
            self.define(v, block)
        for op in block.ops:
            for region in op.regions:
                self.collect(region)
            for v in op.results:
                self.define(v, block)

    def define(self, v: Value, block: Block) -> None:
        if isinstance(v, Literal):
            self.errors.append(f"literal {v.value!r} is used as a definition (only values are defined)")
        elif id(v) in self.defining_block:
            self.errors.append(f"value {self.name(v)} is defined twice")
        else:
            self.defining_block[id(v)] = block

    # -- uses --------------------------------------------------------------------------------------------------
    def use(self, v: Value, visible: set[int], where: str) -> None:
        if isinstance(v, Literal):
            if v.aval.shape != ():
                self.errors.append(f"{where}: literal {v.value!r} must be a scalar, has type {v.aval}")
            return
        if id(v) in visible:
            return
        block = self.defining_block.get(id(v))
        if block is None:
            why = "is never defined"
        elif any(block is b for b in self.open_blocks):
            why = "is used before it is defined"
        else:
            why = "is defined inside another region and is not visible here"
        self.errors.append(f"{where}: {self.name(v)} {why}")

    def block(self, block: Block, visible: set[int], what: str) -> None:
        visible = visible | {id(p) for p in block.params}
        self.open_blocks.append(block)
        for op in block.ops:
            desc = self.describe(op)
            for v in op.operands:
                self.use(v, visible, desc)
            self.op(op, desc)
            for i, region in enumerate(op.regions):
                self.block(region, visible, f"region {i} of {desc}" if len(op.regions) > 1 else f"region of {desc}")
            visible |= {id(r) for r in op.results}
        for v in block.results:
            self.use(v, visible, what)
        self.open_blocks.pop()

    # -- types -------------------------------------------------------------------------------------------------
    def op(self, op: Op, desc: str) -> None:
        prim = op.prim
        if PRIMITIVES.get(prim.name) is not prim:
            self.errors.append(f"{desc}: unknown primitive '{prim.name}' (not registered)")
            return
        if isinstance(prim, control.ControlPrimitive):
            self.control(op, desc)
            return
        if op.regions:
            self.errors.append(f"{desc}: '{prim.name}' takes no regions, got {len(op.regions)}")
        unknown = sorted(set(op.params) - set(prim.params))
        if unknown:
            self.errors.append(f"{desc}: unknown parameter(s) {unknown}; '{prim.name}' takes {list(prim.params)}")
            return
        try:
            out = prim.abstract_eval(*(v.aval for v in op.operands), **op.params)
        except Exception as e:  # the shape rule rejects the operands: report its message
            self.errors.append(f"{desc}: operands {_types(op.operands)} rejected: {e}")
            return
        expected = list(out) if prim.multiple_results else [out]
        got = [r.aval for r in op.results]
        if got != expected:
            self.errors.append(
                f"{desc}: results have types ({', '.join(map(str, got))}) but '{prim.name}' of "
                f"{_types(op.operands)} gives ({', '.join(map(str, expected))})"
            )

    def control(self, op: Op, desc: str) -> None:
        prim = op.prim
        unknown = sorted(set(op.params) - set(prim.params))
        if unknown:
            self.errors.append(f"{desc}: unknown parameter(s) {unknown}; '{prim.name}' takes {list(prim.params)}")
        if prim.check_regions is None:
            self.errors.append(f"{desc}: '{prim.name}' has no region checks")
            return
        try:
            problems = prim.check_regions(op)
        except Exception as e:  # the op's structure is not what its checks can even read
            problems = [
                f"malformed '{prim.name}' op ({len(op.operands)} operands, {len(op.regions)} regions, "
                f"params {sorted(op.params)}): {type(e).__name__}: {e}"
            ]
        self.errors.extend(f"{desc}: {p}" for p in problems)


def verify(fn: Function) -> None:
    """Raise ``VerificationError`` listing every problem of ``fn``; return None when it is well formed."""
    v = _Verifier(fn)
    if fn.body.params and [id(p) for p in fn.body.params] != [id(p) for p in fn.params]:
        v.errors.append("the function body's parameters are not the function's parameters")
    v.collect(fn.body, [*fn.params, *(c for c, _ in fn.consts)] if not fn.body.params else [c for c, _ in fn.consts])
    for value, data in fn.consts:
        if tuple(data.shape) != value.aval.shape or data.dtype != value.aval.dtype:
            v.errors.append(
                f"const {v.name(value)} has type {value.aval} but its data is {data.dtype.name}{list(data.shape)}"
            )
    visible = {id(p) for p in fn.params} | {id(c) for c, _ in fn.consts}
    v.block(fn.body, visible, "return")
    if v.errors:
        raise VerificationError(fn.name, v.errors)
