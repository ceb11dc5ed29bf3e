"""Emits a function of the IR as a Python module that computes it with srcjax, readable as hand-written code.

The function is first simplified (``simplify``: constants folded, loop invariants hoisted, residuals that
need no saving not saved), then each op becomes one statement, spelled with public names only
(``emit_spelling``): a Python operator where it means exactly the primitive (``h + b``, ``x / 2.0``: a
broadcast NumPy's rules make implicit is left to them), a ``lax.<name>(...)`` call, ``jnp.full`` for a
constant fill, a list for reverse mode's stacks. Control flow becomes Python ``if``/``else``, ``while``,
``for k in range(n)`` and a ``for`` loop that stacks a scan's outputs. Names come from the source
(versioned ``x_1``); a loop's carried value keeps one variable through the loop, and values are assigned
straight into the variable that carries them where that is safe, so there are no ``a = b`` chains. A
comment names the source line of each op that has one. Constants are embedded as base64 and decoded once at
import. The module, run eagerly, computes what ``interpret.eval_function`` computes, bit for bit.
"""

from __future__ import annotations

import base64
import io
import keyword
import os
import tokenize
from typing import Any

import numpy as np

from srcjax.transpiler.emit_spelling import (
    LAX_CALLS, LAX_CLASSES, NOT_EMITTED, OPERATORS, PRECEDENCE, SPELLINGS, LaxCall, NotEmittable, Spelled,
)
from srcjax.transpiler.emit_variables import Planner
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, walk
from srcjax.transpiler.parser import param_classes
from srcjax.transpiler.passes import eliminate_dead_code
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p
from srcjax.transpiler.printer import control_form, float_text, format_param, ordered_params, sanitize
from srcjax.transpiler.simplify import literal_broadcast, simplify

# Names the generated code itself uses (modules, and the builtins it calls): values named so get a version.
_RESERVED = {"np", "jnp", "lax", "debug", "base64", "stacks", "range", "reversed", "map", "complex", "_constant", "len",
             "max", "enumerate", "_lane", "_entry"}


# -- the emitter -----------------------------------------------------------------------------------------------
def _identifier(name: str | None) -> str | None:
    text = sanitize(name)
    if text is not None and (keyword.iskeyword(text) or text in ("True", "False", "None")):
        text += "_"
    return text


class Emitter:
    """Writes one (simplified) function. Spellings (``emit_spelling``) call back: ``arg``, ``param``, ``dtype``,
    ``lax``, ``use``, ``nonnegative``, ``scalar_source``."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.sections = fn.sections
        self.definitions = {id(r): op for op in walk(fn.body) for r in op.results}
        # a ``for`` loop's iteration number -> the loop (it counts from 0)
        self.loop_indices = {id(op.regions[0].params[0]): op for op in walk(fn.body) if control_form(op) == "for"}
        self.vars = Planner(fn).vars
        self.names: dict[int, str] = {}  # class root -> Python name
        self.used_names = set(_RESERVED) | set(param_classes())
        self.function_name = self.fresh(fn.name) or "f"
        self.used: set[int] = set()  # values read anywhere (the rest of a multi-result op is ``_``)
        self._collect_uses(fn.body)
        self.forward = _forward_values(fn)
        self.modules: set[str] = set()  # np, jnp, lax, debug, base64
        self.classes: dict[str, str] = {}  # class name -> module
        self.lines: list[tuple[int, str, Any]] = []  # (depth, code, source location)
        # value -> the expression written in its place (in a loop's condition), and how tightly it binds
        self.inline: dict[int, tuple[str, int]] = {}
        self._last_loc: tuple[str, int] | None = None

    def _collect_uses(self, block: Block) -> None:
        self.used |= {id(v) for v in block.results}
        for op in block.ops:
            self.used |= {id(v) for v in op.operands}
            for region in op.regions:
                self._collect_uses(region)

    # -- names -------------------------------------------------------------------------------------------------
    def fresh(self, hint: str | None) -> str | None:
        base = _identifier(hint)
        if base is None:
            return None
        name, version = base, 0
        while name in self.used_names:
            version += 1
            name = f"{base}_{version}"
        self.used_names.add(name)
        return name

    def var(self, v: Value, fallback: str | None = None) -> str:
        root = self.vars.find(v)
        if root not in self.names:
            members = self.vars.members[root]
            hints = [self.hint(m) for m in members] + [fallback]  # members agree on their name
            hint = next((h for h in hints if _identifier(h)), None)
            name = self.fresh(hint)
            if name is None:
                number = 0
                while f"t{number}" in self.used_names:
                    number += 1
                name = f"t{number}"
                self.used_names.add(name)
            self.names[root] = name
        return self.names[root]

    def hint(self, v: Value) -> str | None:
        """A value's name hint; ``x_bar`` names only cotangents, which the forward pass of a gradient does not
        compute (a constant it shares with the backward pass may have been named after the latter's use)."""
        name = v.name
        if name and name.endswith("_bar") and id(v) in self.forward:
            return None
        return name

    # -- operands -----------------------------------------------------------------------------------------------
    def use(self, module: str) -> None:
        self.modules.add(module)

    def lax(self, function: str) -> str:
        self.modules.add("lax")
        return f"lax.{function}"

    def scalar(self, lit: Literal) -> tuple[str, str]:
        """A literal as (NumPy type name, argument text): ``("float32", "2.0")``."""
        dtype, value = lit.aval.dtype, lit.value[()]
        if dtype.kind == "b":
            return "bool_", "True" if value else "False"
        if dtype.kind == "c":
            part = np.finfo(dtype).dtype
            re, im = self.float_source(value.real, part), self.float_source(value.imag, part)
            return dtype.name, f"complex({re}, {im})"
        return dtype.name, str(int(value)) if dtype.kind in "iu" else self.float_source(value, dtype)

    def literal(self, lit: Literal, python: bool = False) -> str:
        """A literal as a NumPy scalar of its dtype (``np.float32(2.0)``; bools as ``True``); with ``python``,
        as a Python scalar that converts to exactly its value (``2.0``): where the other operand has its dtype
        (operators), or where it is weak (lax converts it to the other operand's dtype)."""
        type_name, text = self.scalar(lit)
        if type_name == "bool_" or python:
            return text
        return f"{self.dtype(lit.aval.dtype)}({text})"

    def scalar_source(self, value: Any, dtype: Any) -> str:
        return self.literal(Literal(value, _scalar_type(dtype)))

    def float_source(self, value: Any, dtype: Any) -> str:
        text = float_text(value, dtype)
        if text in ("nan", "-nan", "inf", "-inf"):
            self.modules.add("np")
            return text.replace("nan", "np.nan").replace("inf", "np.inf")
        return text

    def arg(self, v: Value, python: bool = False) -> str:
        if isinstance(v, Literal):
            return self.literal(v, python)
        return self.inline[id(v)][0] if id(v) in self.inline else self.var(v)

    def value(self, v: Value) -> str:
        """``v`` as a value to assign to a variable: literals become arrays (``jnp.float32(2.0)``)."""
        if not isinstance(v, Literal):
            return self.var(v)
        self.modules.add("jnp")
        type_name, text = self.scalar(v)
        return f"jnp.{type_name}({text})"

    def param(self, value: Any) -> str:
        """A param value as Python source (dtypes as ``np.float32``; param classes are imported)."""
        return format_param(value, self.dtype, lambda x: self.float_source(x, np.float64), self.import_class)

    def dtype(self, dtype: np.dtype) -> str:
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            self.modules.add("np")
            return "np.bool_"
        if isinstance(getattr(np, dtype.name, None), type):
            self.modules.add("np")
            return f"np.{dtype.name}"
        self.modules.add("jnp")  # bfloat16 and the like: NumPy has no name for them, srcjax.numpy does
        return f"jnp.{dtype.name}"

    def import_class(self, cls: type) -> None:
        if cls.__name__ not in LAX_CLASSES:
            raise ValueError(f"cannot emit a param of class {cls.__name__}: srcjax.lax does not export it")
        self.classes[cls.__name__] = "srcjax.lax"

    def nonnegative(self, v: Value) -> bool:
        """Whether an integer index is known to be >= 0: a literal, a ``for`` loop's iteration number k, or
        ``n - 1 - k`` in a loop of n iterations (how a backward loop walks its forward loop's iterations)."""
        if isinstance(v, Literal):
            return bool(v.value >= 0)
        if id(v) in self.loop_indices:
            return True
        op = self.definitions.get(id(v))
        if op is None or op.name != "sub" or id(op.operands[1]) not in self.loop_indices:
            return op is not None and op.name == "stack_size"
        trip = self.loop_indices[id(op.operands[1])].operands[0]
        last = self.definitions.get(id(op.operands[0]))
        return (last is not None and last.name == "sub" and _same_value(last.operands[0], trip)
                and isinstance(last.operands[1], Literal) and last.operands[1].value == 1)

    # -- statements ---------------------------------------------------------------------------------------------
    def line(self, depth: int, code: str, op: Op | None = None) -> None:
        loc = None
        if op is not None and op.loc is not None and (op.loc.file, op.loc.line) != self._last_loc:
            loc = op.loc
            self._last_loc = (op.loc.file, op.loc.line)
        self.lines.append((depth, code, loc))

    def assign(self, depth: int, pairs: list[tuple[Value, Value]], op: Op | None = None) -> None:
        """``target = source`` for each pair whose variables differ, as one parallel assignment."""
        pairs = [(t, s) for t, s in pairs if not self.vars.same(t, s)]
        if not pairs:
            return
        targets = ", ".join(self.var(t) for t, _ in pairs)
        sources = ", ".join(self.value(s) for _, s in pairs)
        self.line(depth, f"{targets} = {sources}", op)

    def block(self, block: Block, depth: int) -> None:
        for op in block.ops:
            self.op(op, depth)

    def op(self, op: Op, depth: int) -> None:
        label = self.sections.get(id(op))
        if label is not None:
            self.lines.append((depth, f"# {label}", None))
        form = control_form(op)
        if form is None:
            self.plain(op, depth)
        elif form == "generic":
            raise ValueError(f"cannot emit a malformed '{op.name}' op (run the verifier)")
        else:
            getattr(self, f"_{form}")(op, depth)

    def targets(self, op: Op, spelled: Spelled) -> str:
        results = op.results if spelled.order is None else [op.results[i] for i in spelled.order]
        many = op.prim.multiple_results and not spelled.single
        names = [self.var(r) if id(r) in self.used or not many else "_" for r in results]
        if many and len(names) == 1:
            return f"({names[0]},)"
        return ", ".join(names)

    def plain(self, op: Op, depth: int) -> None:
        spelled = self.expression(op)
        if spelled.statement or not op.results:
            self.line(depth, spelled.text, op)
        else:
            self.line(depth, f"{self.targets(op, spelled)} = {spelled.text}", op)

    def expression(self, op: Op) -> Spelled:
        operator = OPERATORS.get(op.name)
        if operator and self.operator_fits(op, operator[1]):
            texts = [self.arg(v, python=isinstance(v, Literal) and python_scalar(v)) for v in op.operands]
            for i, v in enumerate(op.operands):  # an operand written as an expression that binds less tightly
                if self.inline.get(id(v), ("", 100))[1] <= PRECEDENCE[op.name]:
                    texts[i] = f"({texts[i]})"
            if op.name == "pow" and texts[0].startswith("-"):
                texts[0] = f"({texts[0]})"
            return Spelled(operator[0].format(*texts))
        fill = literal_broadcast(op)
        if fill is not None:
            return Spelled(self.full(fill, op.params["shape"]))
        if op.name in SPELLINGS:
            return SPELLINGS[op.name](self, op)
        call = LAX_CALLS.get(op.name)
        if call is None:
            reason = NOT_EMITTED.get(op.name, "no spelling in transpiler/emit_spelling.py")
            raise NotEmittable(f"cannot emit a '{op.name}' op as Python: {reason}")
        return Spelled(self.call(call, op))

    def call(self, call: LaxCall, op: Op) -> str:
        args = [self.arg(v, python=call.scalars and v.aval.weak_type) for v in op.operands]
        if call.operands == "list":
            args = ["[" + ", ".join(args) + "]"]
        defaults = dict(call.defaults)
        args += [
            f"{k}={self.param(v)}"
            for k, v in ordered_params(op)
            if k not in call.dropped and not (k in defaults and _equal(v, defaults[k]))
        ]
        args += [f"{k}={text}" for k, text in call.fixed]
        return f"{self.lax(call.function)}({', '.join(args)})"

    def full(self, fill: Literal, shape: tuple[int, ...]) -> str:
        """An array of one value: ``jnp.zeros``, ``jnp.ones`` or ``jnp.full`` of the literal's dtype."""
        self.modules.add("jnp")
        dtype, shape_text = self.dtype(fill.aval.dtype), self.param(tuple(shape))
        value = fill.value[()]
        negative_zero = fill.aval.dtype.kind in "fc" and bool(np.signbit(np.real(value)))
        if value == 0 and not negative_zero:
            return f"jnp.zeros({shape_text}, {dtype})"
        if value == 1:
            return f"jnp.ones({shape_text}, {dtype})"
        return f"jnp.full({shape_text}, {self.literal(fill, python=python_scalar(fill))}, {dtype})"

    @staticmethod
    def operator_fits(op: Op, kinds: str) -> bool:
        """The op is a Python operator on its operands: one dtype (literals are written as Python scalars,
        which take the other operand's), not all literals, no params; a literal on the left is one that can
        be a Python scalar (a NumPy scalar there would compute with NumPy, not srcjax)."""
        operands = op.operands
        if op.params or not operands or any(v.aval.dtype != operands[0].aval.dtype for v in operands):
            return False
        if operands[0].aval.dtype.kind not in kinds or all(isinstance(v, Literal) for v in operands):
            return False
        return not isinstance(operands[0], Literal) or python_scalar(operands[0])

    # -- control flow ---------------------------------------------------------------------------------------------
    def _cond(self, op: Op, depth: int) -> None:
        if len(op.regions) != 2:
            raise ValueError(f"a cond on a bool has 2 branches, this one has {len(op.regions)} (run the verifier)")
        self.line(depth, f"if {self.arg(op.operands[0])}:", op)
        self.branch(op, op.regions[0], depth + 1)
        self.line(depth, "else:")
        self.branch(op, op.regions[1], depth + 1)

    def _switch(self, op: Op, depth: int) -> None:
        index, last = self.arg(op.operands[0]), len(op.regions) - 1
        if last == 0:  # the index is clamped to the one branch there is
            self.branch(op, op.regions[0], depth)
            return
        for i, branch in enumerate(op.regions):  # branch clamp(index, 0, last)
            head = f"if {index} <= 0:" if i == 0 else f"elif {index} == {i}:" if i < last else "else:"
            self.line(depth, head, op if i == 0 else None)
            self.branch(op, branch, depth + 1)

    def branch(self, op: Op, branch: Block, depth: int) -> None:
        start = len(self.lines)
        self.block(branch, depth)
        self.assign(depth, list(zip(op.results, branch.results)))
        if len(self.lines) == start:
            self.line(depth, "pass")

    def _while(self, op: Op, depth: int) -> None:
        cond, body = op.regions
        self.assign(depth, [(r, x) for r, x in zip(op.results, op.operands)])  # (the source line: on the loop's)
        (c,) = cond.results
        condition = self.condition(cond)
        if condition is not None:
            self.line(depth, f"while {condition}:", op)
        else:
            self.line(depth, "while True:", op)
            self.block(cond, depth + 1)
            self.line(depth + 1, f"if not {self.arg(c)}:")
            self.line(depth + 2, "break")
        start = len(self.lines)
        self.block(body, depth + 1)
        self.assign(depth + 1, list(zip(body.params, body.results)))
        if len(self.lines) == start:
            self.line(depth + 1, "pass")

    def condition(self, cond: Block) -> str | None:
        """A loop condition as one expression, when its ops form one (each result read once, by the next
        step) and it is short: ``while lax.reduce_sum(h, axes=(0,)) > 1.0:``."""
        (c,) = cond.results
        reads: dict[int, int] = {id(c): 1}
        for op in cond.ops:
            for v in op.operands:
                reads[id(v)] = reads.get(id(v), 0) + 1
        if any(control_form(op) is not None or op.prim.multiple_results or reads.get(id(op.results[0])) != 1
               for op in cond.ops):
            return None
        text = self.arg(c) if not cond.ops else ""
        for op in cond.ops:
            text = self.expression(op).text
            operator = OPERATORS.get(op.name)
            binds = PRECEDENCE[op.name] if operator is not None and self.operator_fits(op, operator[1]) else 100
            self.inline[id(op.results[0])] = (text, binds)
        self.inline = {}
        return text if len(text) <= 80 else None

    def _for(self, op: Op, depth: int) -> None:
        (body,) = op.regions
        trip, *init = op.operands
        self.assign(depth, [(r, x) for r, x in zip(op.results, init)])
        index = body.params[0]
        count = str(int(trip.value)) if isinstance(trip, Literal) else self.var(trip)
        if id(index) in self.used:
            self.modules.add("jnp")
            self.line(depth, f"for {self.var(index)} in map(jnp.int32, range({count})):", op)
        else:
            self.line(depth, f"for _ in range({count}):", op)
        start = len(self.lines)
        self.block(body, depth + 1)
        self.assign(depth + 1, list(zip(body.params[1:], body.results)))
        if len(self.lines) == start:
            self.line(depth + 1, "pass")

    def _scan(self, op: Op, depth: int) -> None:
        (body,) = op.regions
        n, length, reverse = op.params["num_carry"], op.params["length"], op.params.get("reverse", False)
        self.assign(depth, [(r, x) for r, x in zip(op.results[:n], op.operands[:n])], op)
        outputs = op.results[n:]
        self.modules.add("jnp")
        if length == 0:  # the body never runs: the outputs are empty
            for r in outputs:
                self.line(depth, f"{self.var(r)} = jnp.zeros({r.aval.shape}, {self.param(r.aval.dtype)})", op)
            return
        for r in outputs:
            self.line(depth, f"{self.var(r)} = []", op)
        index = self.fresh("i")
        steps = f"reversed(range({length}))" if reverse else f"range({length})"
        self.line(depth, f"for {index} in {steps}:", op)
        for p, xs in zip(body.params[n:], op.operands[n:]):
            if id(p) in self.used:
                self.line(depth + 1, f"{self.var(p)} = {self.arg(xs)}[{index}]")
        start = len(self.lines)
        self.block(body, depth + 1)
        self.assign(depth + 1, list(zip(body.params[:n], body.results[:n])))
        for r, y in zip(outputs, body.results[n:]):
            self.line(depth + 1, f"{self.var(r)}.append({self.value(y)})")
        if len(self.lines) == start:
            self.line(depth + 1, "pass")
        for r in outputs:
            self.line(depth, f"{self.var(r)} = jnp.stack({self.var(r)}{'[::-1]' if reverse else ''})")

    # -- the function and the module -----------------------------------------------------------------------------
    def function(self) -> list[str]:
        fn = self.fn
        for value, _ in fn.consts:
            self.var(value, fallback="const")
        params = [self.var(p) for p in fn.params]
        self.block(fn.body, 1)
        results = [self.value(r) for r in fn.results]
        if results:
            self.line(1, "return " + ", ".join(results))
        elif not self.lines:
            self.line(1, "pass")
        return [f"def {self.function_name}({', '.join(params)}):", *self.render()]

    def render(self) -> list[str]:
        """The body lines, source comments aligned in one column (lines too long for it are left out of it)."""
        codes = ["    " * depth + code for depth, code, _ in self.lines]
        commented = [len(c) for c, (_, _, loc) in zip(codes, self.lines) if loc is not None and len(c) <= 60]
        column = max(commented, default=0) + 2
        out = []
        for code, (_, _, loc) in zip(codes, self.lines):
            if loc is None:
                out.append(code)
                continue
            where = f"({os.path.basename(loc.file)}:{loc.line})"
            source = _without_comment(loc.text.strip())
            text = f"{source}  {where}" if source else where
            out.append(f"{code}{' ' * max(column - len(code), 2)}# {text}")
        return out

    def constants(self) -> list[str]:
        lines = []
        for value, data in self.fn.consts:
            data = np.ascontiguousarray(np.asarray(data, value.aval.dtype))
            encoded = base64.b64encode(data.tobytes()).decode("ascii")
            tail = f"{self.param(value.aval.dtype)}, {value.aval.shape}"
            if len(encoded) <= 80:
                lines.append(f'{self.var(value)} = _constant("{encoded}", {tail})')
                continue
            lines.append(f"{self.var(value)} = _constant(")
            lines += [f'    "{encoded[i : i + 88]}"' for i in range(0, len(encoded), 88)]
            lines[-1] += ","
            lines += [f"    {tail},", ")"]
        return lines

    def module(self, header_comment: str | None) -> str:
        body = self.function()
        constants = self.constants()
        if constants:
            self.modules |= {"base64", "np", "jnp"}
        out = []
        source = self.fn.source
        if source is not None:
            note = f" ({header_comment})" if header_comment else ""
            out.append(f"# generated by srcjax from {_shown_path(source.file)}:{source.function or self.fn.name}{note}")
        elif header_comment:
            out.append(f"# {header_comment}")
        if "base64" in self.modules:
            out += ["import base64", ""]
        if "np" in self.modules:
            out += ["import numpy as np", ""]
        first_party = []
        if "jnp" in self.modules:
            first_party.append("import srcjax.numpy as jnp")
        if "lax" in self.modules:
            first_party.append("from srcjax import lax")
        if "debug" in self.modules:
            first_party.append("from srcjax import debug")
        if "stacks" in self.modules:  # (cotangent stacks of reverse mode over reverse mode through a while)
            first_party.append("from srcjax.transpiler.primitives import control as stacks")
        for module in sorted(set(self.classes.values())):
            names = sorted(n for n, m in self.classes.items() if m == module)
            first_party.append(f"from {module} import {', '.join(names)}")
        out += first_party
        if constants:
            out += [
                "",
                "",
                "def _constant(data, dtype, shape):",
                '    """An array the function closes over, stored as base64 of its bytes."""',
                "    return jnp.asarray(np.frombuffer(base64.b64decode(data), dtype).reshape(shape))",
                "",
                "",
                *constants,
            ]
        while out and out[-1] == "":
            out.pop()
        if out:
            out += ["", ""]
        return "\n".join(out + body) + "\n"


def _without_comment(line: str) -> str:
    """A source line without its own trailing comment (the emitted comment quotes the code)."""
    if "#" not in line:
        return line
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
    except (tokenize.TokenError, SyntaxError):  # a line of a longer statement: quoted as it is
        return line
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    return line[: comment.start[1]].rstrip() if comment is not None else line


def _equal(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _shown_path(path: str) -> str:
    """A source path as the header shows it: relative to the working directory when inside it, so generated
    code is the same on every checkout."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return os.path.basename(path)
    return relative if not relative.startswith("..") else os.path.basename(path)


def python_scalar(lit: Literal) -> bool:
    """Whether a literal may be written as a Python scalar beside an array of its dtype: srcjax.numpy takes
    a Python scalar as a weak value of the default type (int32, float32 or float64, complex64 or 128), then
    converts it to the array's dtype, exactly when the literal's value is representable in that type."""
    dtype = lit.aval.dtype
    if dtype.kind == "b" or lit.aval.weak_type:
        return True
    if dtype.kind in "iu":
        return -(2**31) <= int(lit.value) < 2**31
    return dtype in (np.float32, np.float64, np.complex64, np.complex128)


def _same_value(a: Value, b: Value) -> bool:
    if a is b:
        return True
    return isinstance(a, Literal) and isinstance(b, Literal) and a.aval == b.aval and a.value == b.value


def _scalar_type(dtype: Any) -> Any:
    from srcjax.transpiler.types import TensorType

    return TensorType(np.dtype(dtype), ())


def _forward_values(fn: Function) -> set[int]:
    """The values a gradient's forward pass defines (none when the function has no backward section)."""
    start = next((i for i, op in enumerate(fn.body.ops) if fn.sections.get(id(op)) == "backward"), None)
    values: set[int] = set()
    for top in fn.body.ops[:start] if start is not None else []:
        for op in [top, *(op for region in top.regions for op in walk(region))]:
            values |= {id(r) for r in op.results} | {id(p) for region in op.regions for p in region.params}
    return values


def write_broadcasts_implicitly(fn: Function) -> None:
    """Operands of a Python operator that broadcast as NumPy would (``b`` to ``b``'s trailing axes, a scalar
    literal to anything) are written unbroadcast: ``h = t + b``, ``y = x / 2.0``. The op then reads the
    unbroadcast value, which the variable planner sees; broadcasts nothing else reads go."""
    definitions = {id(r): op for op in walk(fn.body) for r in op.results}
    for op in walk(fn.body):
        operator = OPERATORS.get(op.name)
        if operator is None or len(op.operands) != 2 or not Emitter.operator_fits(op, operator[1]):
            continue
        shape = op.results[0].aval.shape
        sources = [_implicit_source(v, definitions) for v in op.operands]
        order = sorted((i for i, x in enumerate(sources) if x is not None),
                       key=lambda i: not isinstance(sources[i], Literal))  # a literal first
        for i in order[:1]:
            other = op.operands[1 - i]
            if not isinstance(other, Literal) and other.aval.shape == shape:
                op.operands[i] = sources[i]
    eliminate_dead_code(fn)


def _implicit_source(v: Value, definitions: dict[int, Op]) -> Value | None:
    """What ``v`` broadcasts, when NumPy's rules would broadcast it the same way (trailing axes, size-1 axes
    stretched)."""
    op = definitions.get(id(v))
    if op is None or op.prim is not broadcast_in_dim_p:
        return None
    x = op.operands[0]
    shape, dims = tuple(op.params["shape"]), tuple(op.params["broadcast_dimensions"])
    if dims != tuple(range(len(shape) - x.aval.ndim, len(shape))):
        return None
    if any(n not in (1, shape[d]) for n, d in zip(x.aval.shape, dims)):
        return None
    return x


def emit_module(fn: Function, *, header_comment: str | None = None) -> str:
    """A self-contained module defining ``def <fn.name>(...)`` that computes ``fn`` with srcjax."""
    return Emitter(_prepared(fn)).module(header_comment)


def emit_function_source(fn: Function) -> str:
    """Just the ``def`` (it refers to ``lax``, ``jnp``, ``np`` and constants by name)."""
    return "\n".join(Emitter(_prepared(fn)).function()) + "\n"


def _prepared(fn: Function) -> Function:
    """``fn`` simplified, with its implicit broadcasts written so (a copy: ``fn`` is not changed)."""
    for op in walk(fn.body):
        if control_form(op) == "generic" and op.prim.name not in ("custom_jvp_call", "custom_vjp_call",
                                                                  "custom_vmap_call", "checkpoint"):
            raise ValueError(f"cannot emit a malformed '{op.name}' op (run the verifier)")
    return simplify(fn, before_sinking=write_broadcasts_implicitly)
