"""Reads the printed IR back into a ``Function`` (the inverse of ``printer.print_function``).

Primitives are looked up by name in the registry. Params are read by a small evaluator over Python's
``ast``: literals, tuples and lists, ``nan``/``inf``, dtype short names (``f32``), ``complex(re, im)``, and
the enums, dataclasses and NamedTuples that the primitive family modules define (``FftType.RFFT``,
``GatherDimensionNumbers(offset_dims=(0,), ...)``); nothing else is evaluated. The text carries no
constant data, so each ``const`` comes back as zeros of its type. Errors name the line and column.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import re
import sys
from typing import Any, Callable

import numpy as np

from srcjax.transpiler import primitives as _primitives  # noqa: F401 - registers the primitives
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.primitives.core import PRIMITIVES
from srcjax.transpiler.printer import INDEX_TYPE, slice_type
from srcjax.transpiler.types import DTYPES_BY_SHORT_NAME, TensorType


class _Name(str):
    """A value's name as written (``%x.1``), remembering where: a definition is checked after its line."""

    pos: int = 0


class ParseError(ValueError):
    """Bad IR text; the message starts with ``line L, column C:`` and shows the line with a caret."""


_NAME = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?:\.[0-9]+)?")
_TYPE = re.compile(r"([a-z]+[0-9]*)\[([0-9, ]*)\](\{weak\})?")
_NUMBER = r"[-+]?(?:nan|inf|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)"
_LITERAL = re.compile(rf"(True|False|{_NUMBER}|\([^()]*\)):")
_LITERAL_TYPE = re.compile(r"([a-z]+[0-9]*)(\{weak\})?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTED = re.compile(r'"([^"]*)"')
_FUNC_NAME = re.compile(r'@(?:([A-Za-z_][A-Za-z0-9_]*)|"([^"]*)")')


def param_classes() -> dict[str, type]:
    """The enums, dataclasses and NamedTuples defined in the primitive family modules, by name."""
    found: dict[str, type] = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("srcjax.transpiler.primitives.") or module is None:
            continue
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and obj.__module__ == module_name
                and (
                    issubclass(obj, enum.Enum)
                    or dataclasses.is_dataclass(obj)
                    or (issubclass(obj, tuple) and hasattr(obj, "_fields"))
                )
            ):
                found[obj.__name__] = obj
    return found


# -- params: a safe evaluator ------------------------------------------------------------------------------
_CONSTANTS = {"nan": float("nan"), "inf": float("inf")}


class _ParamError(Exception):
    def __init__(self, message: str, node: ast.AST):
        super().__init__(message)
        self.node = node


def evaluate_param(node: ast.AST, classes: dict[str, type]) -> Any:
    """The value of a param expression; raises ``_ParamError`` for anything outside the small language."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex, str, bool, type(None))):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(evaluate_param(e, classes) for e in node.elts)
    if isinstance(node, ast.List):
        return [evaluate_param(e, classes) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = evaluate_param(node.operand, classes)
        if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
            raise _ParamError("a sign applies to numbers only", node)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if node.id in DTYPES_BY_SHORT_NAME:
            return DTYPES_BY_SHORT_NAME[node.id]
        raise _ParamError(f"unknown name '{node.id}'", node)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        cls = classes.get(node.value.id)
        if cls is None or not issubclass(cls, enum.Enum):
            raise _ParamError(f"'{node.value.id}' is not an enum of the primitive modules", node)
        if node.attr not in cls.__members__:
            raise _ParamError(f"{cls.__name__} has no member '{node.attr}'", node)
        return cls[node.attr]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args = [evaluate_param(a, classes) for a in node.args]
        kwargs = {k.arg: evaluate_param(k.value, classes) for k in node.keywords if k.arg is not None}
        if len(kwargs) != len(node.keywords):
            raise _ParamError("** arguments are not allowed", node)
        cls = complex if node.func.id == "complex" else classes.get(node.func.id)
        if cls is None or issubclass(cls, enum.Enum):
            raise _ParamError(f"'{node.func.id}' is not a parameter class of the primitive modules", node)
        try:
            return cls(*args, **kwargs)
        except (TypeError, ValueError) as e:
            raise _ParamError(f"bad {cls.__name__}: {e}", node) from None
    raise _ParamError(f"unsupported parameter expression '{ast.unparse(node)}'", node)


# -- a cursor over one line ----------------------------------------------------------------------------------
class _Line:
    def __init__(self, text: str, number: int):
        self.text, self.number = text.rstrip(), number
        self.pos = len(self.text) - len(self.text.lstrip())  # columns count in the text as given

    def error(self, message: str, pos: int | None = None) -> ParseError:
        pos = self.pos if pos is None else pos
        return ParseError(f"line {self.number}, column {pos + 1}: {message}\n  {self.text}\n  {' ' * pos}^")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def accept(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.accept(token):
            found = self.text[self.pos : self.pos + 12] or "the end of the line"
            raise self.error(f"expected '{token}', found '{found}'")

    def match(self, pattern: re.Pattern, what: str) -> re.Match:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if m is None:
            raise self.error(f"expected {what}")
        self.pos = m.end()
        return m

    def word(self) -> str:
        return self.match(_WORD, "a name").group(0)

    def at_end(self) -> bool:
        self.skip()
        return self.pos == len(self.text)

    def end(self) -> None:
        if not self.at_end():
            raise self.error(f"unexpected '{self.text[self.pos :]}'")

    def type(self) -> TensorType:
        self.skip()
        start = self.pos
        m = self.match(_TYPE, "a type such as f32[3,4]")
        dtype = DTYPES_BY_SHORT_NAME.get(m.group(1))
        if dtype is None:
            raise self.error(f"unknown dtype '{m.group(1)}'", start)
        dims = [d.strip() for d in m.group(2).split(",") if d.strip()]
        return TensorType(dtype, tuple(int(d) for d in dims), m.group(3) is not None)

    def bracketed(self) -> tuple[str, int]:
        """The text inside the ``[...]`` here (nested brackets and quoted strings respected), and its offset."""
        self.expect("[")
        start, stack, quote = self.pos, ["["], None
        partner = {")": "(", "]": "[", "}": "{"}
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if quote:
                if c == "\\":
                    self.pos += 1  # an escaped character
                elif c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c in "([{":
                stack.append(c)
            elif c in partner:
                if stack.pop() != partner[c]:
                    raise self.error(f"'{c}' does not close the bracket before it")
                if not stack:
                    self.pos += 1
                    return self.text[start : self.pos - 1], start
            self.pos += 1
        raise self.error("no ']' closes this '['", start - 1)


# -- the parser -----------------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str):
        self.lines = [_Line(t, i + 1) for i, t in enumerate(text.splitlines())]
        self.lines = [ln for ln in self.lines if ln.at_end() is False and not ln.peek("//")]
        self.index = 0
        self.scopes: list[dict[str, Value]] = [{}]
        self.classes = param_classes()

    # -- lines and names -----------------------------------------------------------------------------------
    def next_line(self) -> _Line:
        if self.index == len(self.lines):
            last = self.lines[-1] if self.lines else _Line("", 1)
            raise ParseError(f"line {last.number}: the text ends inside a block (missing '}}')")
        self.index += 1
        return self.lines[self.index - 1]

    def new_value(self, line: _Line, aval_of: Callable[[], TensorType | None] | None = None) -> tuple[Value, str]:
        """Read ``%name`` (and ``: type`` unless ``aval_of`` implies it); the value is defined by ``define``."""
        line.skip()
        start = line.pos
        m = line.match(_NAME, "a value name such as %x")
        name = _Name(m.group(0))
        name.pos = start
        if line.accept(":"):
            aval = line.type()
        else:
            aval = aval_of() if aval_of else None
            if aval is None:
                raise line.error(f"{m.group(0)} needs a type (': f32[3]')", start)
        return Value(aval, _hint(m)), name

    def define(self, line: _Line, value: Value, name: str) -> None:
        if any(name in scope for scope in self.scopes):
            raise line.error(f"value {name} is defined twice", getattr(name, "pos", None))
        self.scopes[-1][name] = value

    def operand(self, line: _Line) -> Value:
        line.skip()
        start = line.pos
        if line.peek("%"):
            name = line.match(_NAME, "a value name").group(0)
            for scope in reversed(self.scopes):
                if name in scope:
                    return scope[name]
            raise line.error(f"undefined value {name}", start)
        m = _LITERAL.match(line.text, line.pos)
        if m is None:
            raise line.error("expected a value (%x) or a literal (2.0:f32)")
        line.pos = m.end()
        m_type = line.match(_LITERAL_TYPE, "a literal's dtype such as f32 or f32{weak}")
        dtype = DTYPES_BY_SHORT_NAME.get(m_type.group(1))
        if dtype is None:
            raise line.error(f"unknown dtype '{m_type.group(1)}'", m_type.start())
        aval = TensorType(dtype, (), m_type.group(2) is not None)
        return Literal(_scalar(m.group(1), aval, line, start), aval)

    def operands(self, line: _Line, stop: tuple[str, ...] = ()) -> list[Value]:
        values: list[Value] = []
        if line.at_end() or any(line.peek(s) for s in stop):
            return values
        values.append(self.operand(line))
        while line.accept(","):
            values.append(self.operand(line))
        return values

    def params(self, line: _Line) -> dict[str, Any]:
        if not line.peek("["):
            return {}
        inner, offset = line.bracketed()
        try:
            call = ast.parse(f"_({inner})", mode="eval").body
        except SyntaxError as e:
            raise line.error(f"bad parameters: {e.msg}", offset + max((e.offset or 3) - 3, 0)) from None
        if not isinstance(call, ast.Call) or call.args or any(kw.arg is None for kw in call.keywords):
            raise line.error("parameters are written [name=value, ...]", offset)
        params = {}
        for kw in call.keywords:
            try:
                params[kw.arg] = evaluate_param(kw.value, self.classes)
            except _ParamError as e:
                raise line.error(f"parameter '{kw.arg}': {e}", offset + e.node.col_offset - 2) from None
        return params

    def primitive(self, line: _Line, name: str, start: int):
        prim = PRIMITIVES.get(name)
        if prim is None:
            raise line.error(f"unknown primitive '{name}'", start)
        return prim

    # -- function ------------------------------------------------------------------------------------------
    def function(self) -> Function:
        line = self.next_line()
        line.expect("func")
        m = line.match(_FUNC_NAME, "a function name such as @f")
        name = m.group(1) or m.group(2)
        params = []
        line.expect("(")
        if not line.accept(")"):
            while True:
                value, text = self.new_value(line)
                self.define(line, value, text)
                params.append(value)
                if line.accept(")"):
                    break
                line.expect(",")
        line.expect("->")
        line.skip()
        header_pos = line.pos
        declared = self.type_list(line)
        line.expect("{")
        line.end()
        fn = Function(name, params, Block(params=list(params)))
        while self.peek_word() == "const":
            const_line = self.next_line()
            const_line.expect("const")
            value, text = self.new_value(const_line)
            const_line.end()
            self.define(const_line, value, text)
            fn.consts.append((value, np.zeros(value.aval.shape, value.aval.dtype)))
        fn.body.ops, closing = self.block_ops("return")
        fn.body.results = self.operands(closing)
        closing.end()
        if [r.aval for r in fn.body.results] != declared:
            raise line.error(
                f"the header declares results ({', '.join(map(str, declared))}) but the function "
                f"returns ({', '.join(str(r.aval) for r in fn.body.results)})",
                header_pos,
            )
        self.close(self.next_line(), "}")
        if self.index != len(self.lines):
            raise self.lines[self.index].error("text after the end of the function")
        return fn

    def type_list(self, line: _Line) -> list[TensorType]:
        if not line.accept("("):
            return [line.type()]
        types: list[TensorType] = []
        if line.accept(")"):
            return types
        types.append(line.type())
        while line.accept(","):
            types.append(line.type())
        line.expect(")")
        return types

    def peek_word(self) -> str | None:
        if self.index == len(self.lines):
            return None
        line = self.lines[self.index]
        m = _WORD.match(line.text, line.pos)
        return m.group(0) if m else None

    def close(self, line: _Line, token: str) -> None:
        line.expect(token)
        line.end()

    # -- blocks and ops --------------------------------------------------------------------------------------
    def block_ops(self, terminator: str) -> tuple[list[Op], _Line]:
        """Ops up to the ``yield``/``return`` line, returned with the cursor after that keyword."""
        ops: list[Op] = []
        while True:
            line = self.next_line()
            m = _WORD.match(line.text, line.pos)
            if m and m.group(0) in ("yield", "return"):
                if m.group(0) != terminator:
                    raise line.error(f"expected '{terminator}' to end this block, found '{m.group(0)}'")
                line.pos = m.end()
                return ops, line
            if line.peek("}"):
                raise line.error(f"the block ends without '{terminator}'")
            ops.append(self.op(line))

    def region(self, params: list[tuple[Value, str]], line: _Line) -> Block:
        """A region's body (after its opening line), its params bound in a new scope."""
        self.scopes.append({})
        for value, name in params:
            self.define(line, value, name)
        ops, closing = self.block_ops("yield")
        block = Block(params=[v for v, _ in params], ops=ops, results=self.operands(closing))
        closing.end()
        self.scopes.pop()
        return block

    def op(self, line: _Line) -> Op:
        results: list[tuple[Value, str]] = []
        if line.peek("%"):
            results.append(self.new_value(line))
            while line.accept(","):
                results.append(self.new_value(line))
            line.expect("=")
        line.skip()
        start = line.pos
        if line.peek('"'):
            op = self.generic_op(line)
        else:
            word = line.word()
            reader = {
                "cond": self.cond_op,
                "switch": self.cond_op,
                "while": self.while_op,
                "for": self.for_op,
                "scan": self.scan_op,
            }.get(word)
            if reader is not None:
                op = reader(line)
            else:
                prim = self.primitive(line, word, start)
                params = self.params(line)
                op = Op(prim, self.operands(line), params, [])
                line.end()
        op.results = [v for v, _ in results]
        for value, name in results:  # defined after the regions: a region cannot see its op's results
            self.define(line, value, name)
        return op

    def binders(
        self, line: _Line, operators: tuple[str, ...], implied: Callable[[str, Value], TensorType | None]
    ) -> list[tuple[tuple[Value, str], str, Value]]:
        """``(%p = %x, %q: f32[] in %ys)``: each binder's new value, its operator and its operand."""
        out: list[tuple[tuple[Value, str], str, Value]] = []
        line.expect("(")
        if line.accept(")"):
            return out
        while True:
            line.skip()
            start = line.pos
            m = line.match(_NAME, "a region parameter such as %x")
            aval = line.type() if line.accept(":") else None
            operator = next((op for op in operators if line.accept(op)), None)
            if operator is None:
                raise line.error(f"expected {' or '.join(repr(o) for o in operators)}")
            x = self.operand(line)
            aval = aval or implied(operator, x)
            if aval is None:
                raise line.error(f"{m.group(0)} needs a type (': f32[3]')", start)
            name = _Name(m.group(0))
            name.pos = start
            out.append(((Value(aval, _hint(m)), name), operator, x))
            if line.accept(")"):
                return out
            line.expect(",")

    def open_region(self, line: _Line) -> None:
        line.expect("{")
        line.end()

    def separator(self, keywords: tuple[str, ...]) -> str | None:
        """Read ``}`` (returns None) or ``} <keyword> {`` (returns the keyword)."""
        line = self.next_line()
        line.expect("}")
        if line.at_end():
            return None
        word = line.word()
        if word not in keywords:
            raise line.error(f"expected {' or '.join(repr(k) for k in keywords)} after '}}'")
        self.open_region(line)
        return word

    def cond_op(self, line: _Line) -> Op:
        pred = self.operand(line)
        self.open_region(line)
        branches = [self.region([], line)]
        while self.separator(("else", "case")):
            branches.append(self.region([], line))
        return Op(PRIMITIVES["cond"], [pred], {}, [], branches)

    def while_op(self, line: _Line) -> Op:
        binders = self.binders(line, ("=",), lambda _, x: x.aval)
        line.expect("cond")
        self.open_region(line)
        cond = self.region([param for param, _, _ in binders], line)
        if self.separator(("body",)) is None:
            raise self.lines[self.index - 1].error("a while op has a 'body' region after its 'cond' region")
        body_line = self.lines[self.index - 1]
        body = self.region([(Value(v.aval, v.name), name) for (v, name), _, _ in binders], body_line)
        self.close(self.next_line(), "}")
        return Op(PRIMITIVES["while"], [x for _, _, x in binders], {}, [], [cond, body])

    def for_op(self, line: _Line) -> Op:
        index = self.new_value(line, lambda: INDEX_TYPE)
        line.expect("=")
        line.expect("0")
        line.expect("to")
        trip = self.operand(line)
        binders = self.binders(line, ("=",), lambda _, x: x.aval) if line.peek("(") else []
        self.open_region(line)
        body = self.region([index, *(param for param, _, _ in binders)], line)
        self.close(self.next_line(), "}")
        return Op(PRIMITIVES["for"], [trip, *(x for _, _, x in binders)], {}, [], [body])

    def scan_op(self, line: _Line) -> Op:
        params = self.params(line)
        start = line.pos
        binders = self.binders(line, ("=", "in"), lambda op, x: x.aval if op == "=" else slice_type(x.aval))
        operators = [operator for _, operator, _ in binders]
        num_carry = params.get("num_carry")
        if operators != sorted(operators, key=lambda o: o == "in") or operators.count("=") != num_carry:
            raise line.error(
                f"a scan binds its {num_carry} carried value(s) with '=' first, then its slices with 'in'", start
            )
        self.open_region(line)
        body = self.region([param for param, _, _ in binders], line)
        self.close(self.next_line(), "}")
        return Op(PRIMITIVES["scan"], [x for _, _, x in binders], params, [], [body])

    def generic_op(self, line: _Line) -> Op:
        start = line.pos
        name = line.match(_QUOTED, "a quoted primitive name").group(1)
        prim = self.primitive(line, name, start)
        params = self.params(line)
        operands = self.operands(line, stop=("region",))
        regions: list[Block] = []
        opener = line
        while not opener.at_end():  # ``region(%p: f32[]) {`` on the op's line, then ``} region(...) {``
            opener.expect("region")
            opener.expect("(")
            region_params: list[tuple[Value, str]] = []
            if not opener.accept(")"):
                while True:
                    region_params.append(self.new_value(opener))
                    if opener.accept(")"):
                        break
                    opener.expect(",")
            self.open_region(opener)
            regions.append(self.region(region_params, opener))
            opener = self.next_line()
            opener.expect("}")
        return Op(prim, operands, params, [], regions)


def _hint(m: re.Match) -> str | None:
    return None if m.group(1).isdigit() else m.group(1)


def _scalar(text: str, aval: TensorType, line: _Line, pos: int) -> Any:
    """A literal's value: ``float(text)`` converted once to the dtype (the printer picks text for which
    that is exact)."""
    kind = aval.dtype.kind
    read = {"b": lambda t: {"True": True, "False": False}[t], "i": int, "u": int, "f": float}.get(kind, complex)
    try:
        value = read(text)
    except (KeyError, ValueError):
        raise line.error(f"'{text}' is not a {aval.dtype.name} literal", pos) from None
    if kind in "iu" and not np.iinfo(aval.dtype).min <= value <= np.iinfo(aval.dtype).max:
        raise line.error(f"{value} does not fit in {aval.dtype.name}", pos)
    return value


def parse_function(text: str) -> Function:
    """The function printed in ``text``. Constants come back as zeros of their types (the text has no data)."""
    return _Parser(text).function()
