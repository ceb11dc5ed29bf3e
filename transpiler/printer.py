"""The textual form of the IR: MLIR-like framing, jaxpr-like binders, structured control flow.

```
func @f(%x: f32[3], %p: bool[], %n: i32[]) -> f32[3] {
  const %0: f32[3]
  %h: f32[3] = add %x, %0
  %y: f32[3] = cond %p {
    yield %h
  } else {
    %1: f32[3] = integer_pow[y=2] %h
    yield %1
  }
  %s: f32[3] = for %k = 0 to %n (%s.1 = %y) {
    %s.2: f32[3] = mul %s.1, %h
    yield %s.2
  }
  return %s
}
```

Values are named from their source hints (``Value.name``), in order of first appearance; a reused hint gets
a version (``%x.1``) and unnamed values are numbered (``%0``). Literals print inline (``2.0:f32``,
``2.0:f32{weak}``). Control ops have a pretty form each (``cond``/``switch``, ``while``, ``for``, ``scan``,
their region parameters bound in the header); an op whose regions do not fit its pretty form prints in the
generic form ``"name"[params] %a, %b region(%p: f32[]) { ... }``. ``parser.parse_function`` reads all of it
back: printing, parsing and printing again gives the same text.
"""

from __future__ import annotations

import dataclasses
import enum
import keyword
import re
from functools import partial
from typing import Any, Callable

import numpy as np

from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.types import TensorType, short_name

INDEX_TYPE = TensorType(np.int32, ())  # the type of a ``for`` loop's iteration number
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# -- names ------------------------------------------------------------------------------------------------
def sanitize(hint: str | None) -> str | None:
    """A name hint as an identifier (``x.y`` -> ``x_y``, ``0`` -> ``_0``); None when nothing is left."""
    if not hint:
        return None
    text = re.sub(r"[^A-Za-z0-9_]", "_", hint)
    if text[0].isdigit():
        text = "_" + text
    return text


# -- scalars and params -----------------------------------------------------------------------------------
def _same_bits(a: Any, b: Any, dtype: np.dtype) -> bool:
    return np.asarray(a, dtype).tobytes() == np.asarray(b, dtype).tobytes()


def float_text(x: Any, dtype: Any = np.float64) -> str:
    """Text for a float that reads back exactly: ``float(text)`` converted to ``dtype`` is ``x`` again."""
    dtype = np.dtype(dtype)
    x = np.asarray(x, dtype)[()]
    if np.isnan(x):  # (the sign of a NaN is data: copysign, signbit and bitcasts read it)
        return "-nan" if np.signbit(x) else "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = str(x)  # NumPy's shortest text that round-trips in the dtype itself
    if not _same_bits(float(text), x, dtype):  # the float64 detour rounded twice: give the exact value
        text = repr(float(x))
    return text


def scalar_text(value: Any, dtype: Any) -> str:
    """A scalar of ``dtype`` as text that reads back exactly (``2.0``, ``-3``, ``True``, ``(1.0+2.0j)``)."""
    dtype = np.dtype(dtype)
    value = np.asarray(value, dtype)[()]
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind in "iu":
        return str(int(value))
    if dtype.kind == "f":
        return float_text(value, dtype)
    if dtype.kind == "c":
        part = np.finfo(dtype).dtype
        real, imag = float_text(value.real, part), float_text(value.imag, part)
        return f"({real}{'' if imag.startswith('-') else '+'}{imag}j)"
    raise TypeError(f"cannot print a scalar of dtype {dtype}")


def format_literal(lit: Literal) -> str:
    """``2.0:f32``, ``2.0:f32{weak}``, ``True:bool``: literals are scalars, so the type is just the dtype."""
    weak = "{weak}" if lit.aval.weak_type else ""
    return f"{scalar_text(lit.value, lit.aval.dtype)}:{short_name(lit.aval.dtype)}{weak}"


def is_dtype_like(value: Any) -> bool:
    return isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic))


def format_param(
    value: Any,
    dtype: Callable[[np.dtype], str] = short_name,
    number: Callable[[float], str] = float_text,
    on_class: Callable[[type], None] = lambda cls: None,
) -> str:
    """A parameter value as the text the parser's evaluator reads back: Python syntax, dtypes as ``f32``.

    The hooks let the Python emitter write the same values as Python source (``np.float32``, ``np.nan``,
    importing the enums and dataclasses it names through ``on_class``).
    """
    again = partial(format_param, dtype=dtype, number=number, on_class=on_class)
    if value is None or isinstance(value, (bool, np.bool_)):
        return repr(None if value is None else bool(value))
    if isinstance(value, enum.Enum):
        on_class(type(value))
        return f"{type(value).__name__}.{value.name}"
    if is_dtype_like(value):
        return dtype(np.dtype(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return number(float(value))
    if isinstance(value, (complex, np.complexfloating)):
        return f"complex({number(value.real)}, {number(value.imag)})"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (tuple, list)) and not hasattr(type(value), "_fields"):
        items = [again(v) for v in value]
        if isinstance(value, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, tuple):  # a NamedTuple
        fields = [(f, getattr(value, f)) for f in type(value)._fields]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    else:
        raise TypeError(f"cannot print a parameter value {value!r} of type {type(value).__name__}")
    on_class(type(value))
    return f"{type(value).__name__}(" + ", ".join(f"{k}={again(v)}" for k, v in fields) + ")"


def ordered_params(op: Op) -> list[tuple[str, Any]]:
    """An op's params in the primitive's declared order (unknown ones after, sorted): deterministic text."""
    declared = {name: i for i, name in enumerate(op.prim.params)}
    return sorted(op.params.items(), key=lambda item: (declared.get(item[0], len(declared)), item[0]))


def format_params(op: Op) -> str:
    if not op.params:
        return ""
    return "[" + ", ".join(f"{k}={format_param(v)}" for k, v in ordered_params(op)) + "]"


def result_types(types: list[TensorType]) -> str:
    return str(types[0]) if len(types) == 1 else "(" + ", ".join(map(str, types)) + ")"


# -- which form an op prints in ---------------------------------------------------------------------------
def slice_type(x: TensorType) -> TensorType | None:
    """The type of one slice along axis 0 (what a scan body receives), None for a 0-d value."""
    return x.update(shape=x.shape[1:]) if x.shape else None


def control_form(op: Op) -> str | None:
    """``cond``, ``switch``, ``while``, ``for``, ``scan`` (pretty forms), ``generic``, or None for a plain op."""
    name, regions, n = op.prim.name, op.regions, len(op.operands)
    if name == "cond" and n == 1 and regions and not op.params and all(not r.params for r in regions):
        return "cond" if op.operands[0].aval.dtype.kind == "b" else "switch"
    if name == "while" and len(regions) == 2 and not op.params:
        cond, body = regions
        if len(cond.params) == len(body.params) == n and [p.aval for p in cond.params] == [p.aval for p in body.params]:
            return "while"
    if name == "for" and len(regions) == 1 and not op.params and n >= 1 and len(regions[0].params) == n:
        return "for"
    if name == "scan" and len(regions) == 1 and len(regions[0].params) == n:
        num_carry = op.params.get("num_carry")
        if isinstance(num_carry, int) and not isinstance(num_carry, bool) and 0 <= num_carry <= n:
            return "scan"
    if regions or name in ("cond", "while", "for", "scan"):
        return "generic"
    return None


# -- the printer ------------------------------------------------------------------------------------------
class Printer:
    """Prints a function, naming values in order of first appearance (``names`` keeps them, without ``%``)."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.names: dict[int, str] = {}
        self._versions: dict[str, int] = {}
        self._numbered = 0
        self.lines: list[str] = []

    # -- values --------------------------------------------------------------------------------------------
    def ref(self, v: Value) -> str:
        if isinstance(v, Literal):
            return format_literal(v)
        name = self.names.get(id(v))
        if name is None:
            name = self.names[id(v)] = self._fresh(v.name)
        return "%" + name

    def _fresh(self, hint: str | None) -> str:
        hint = sanitize(hint)
        if hint is None:
            self._numbered += 1
            return str(self._numbered - 1)
        version = self._versions.get(hint, 0)
        self._versions[hint] = version + 1
        return hint if version == 0 else f"{hint}.{version}"

    def binder(self, v: Value, implied: TensorType | None = None) -> str:
        """``%x: f32[3]``; just ``%x`` where the type is implied by the header (and is that type)."""
        ref = self.ref(v)
        return ref if implied is not None and v.aval == implied else f"{ref}: {v.aval}"

    def refs(self, values: list[Value]) -> str:
        return ", ".join(self.ref(v) for v in values)

    # -- function, blocks, ops -----------------------------------------------------------------------------
    def function(self) -> str:
        fn = self.fn
        name = fn.name if _IDENTIFIER.match(fn.name) and not keyword.iskeyword(fn.name) else f'"{fn.name}"'
        params = ", ".join(self.binder(p) for p in fn.params)
        self.lines = [f"func @{name}({params}) -> {result_types([r.aval for r in fn.results])} {{"]
        for value, _ in fn.consts:
            self.lines.append(f"  const {self.binder(value)}")
        self.block_ops(fn.body, 1)
        self.lines.append(f"  return {self.refs(fn.results)}".rstrip())
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def block_ops(self, block: Block, depth: int) -> None:
        for op in block.ops:
            self.op(op, depth)

    def region(self, block: Block, depth: int) -> None:
        self.block_ops(block, depth)
        self.lines.append(f"{'  ' * depth}yield {self.refs(block.results)}".rstrip())

    def op(self, op: Op, depth: int) -> None:
        pad = "  " * depth
        lhs = ", ".join(self.binder(r) for r in op.results)
        head = pad + (f"{lhs} = " if op.results else "")
        form = control_form(op)
        if form is None:
            operands = self.refs(op.operands)
            self.lines.append(f"{head}{op.name}{format_params(op)}" + (f" {operands}" if operands else ""))
        else:
            getattr(self, f"_{form}")(op, head, pad, depth)

    def _cond(self, op: Op, head: str, pad: str, depth: int, keyword_: str = "cond", separator: str = "else") -> None:
        self.lines.append(f"{head}{keyword_} {self.ref(op.operands[0])} {{")
        for i, branch in enumerate(op.regions):
            if i:
                self.lines.append(f"{pad}}} {separator} {{")
            self.region(branch, depth + 1)
        self.lines.append(pad + "}")

    def _switch(self, op: Op, head: str, pad: str, depth: int) -> None:
        self._cond(op, head, pad, depth, "switch", "case")

    def _while(self, op: Op, head: str, pad: str, depth: int) -> None:
        cond, body = op.regions
        binders = ", ".join(f"{self.binder(p, x.aval)} = {self.ref(x)}" for p, x in zip(cond.params, op.operands))
        self.lines.append(f"{head}while ({binders}) cond {{")
        self.region(cond, depth + 1)
        for b, c in zip(body.params, cond.params):  # one header binds both regions' parameters
            self.names[id(b)] = self.names[id(c)]
        self.lines.append(f"{pad}}} body {{")
        self.region(body, depth + 1)
        self.lines.append(pad + "}")

    def _for(self, op: Op, head: str, pad: str, depth: int) -> None:
        (body,) = op.regions
        index = self.binder(body.params[0], INDEX_TYPE)
        trip, *init = op.operands
        text = f"{head}for {index} = 0 to {self.ref(trip)}"
        if init:
            text += " (" + ", ".join(f"{self.binder(p, x.aval)} = {self.ref(x)}" for p, x in zip(body.params[1:], init))
            text += ")"
        self.lines.append(text + " {")
        self.region(body, depth + 1)
        self.lines.append(pad + "}")

    def _scan(self, op: Op, head: str, pad: str, depth: int) -> None:
        (body,) = op.regions
        num_carry = op.params["num_carry"]
        binders = []
        for i, (p, x) in enumerate(zip(body.params, op.operands)):
            if i < num_carry:
                binders.append(f"{self.binder(p, x.aval)} = {self.ref(x)}")
            else:
                binders.append(f"{self.binder(p, slice_type(x.aval))} in {self.ref(x)}")
        self.lines.append(f"{head}scan{format_params(op)} ({', '.join(binders)}) {{")
        self.region(body, depth + 1)
        self.lines.append(pad + "}")

    def _generic(self, op: Op, head: str, pad: str, depth: int) -> None:
        operands = self.refs(op.operands)
        text = f'{head}"{op.name}"{format_params(op)}' + (f" {operands}" if operands else "")
        if not op.regions:
            self.lines.append(text)
            return
        for i, region in enumerate(op.regions):
            opener = text if i == 0 else pad + "}"
            params = ", ".join(self.binder(p) for p in region.params)
            self.lines.append(f"{opener} region({params}) {{")
            self.region(region, depth + 1)
        self.lines.append(pad + "}")


def print_function(fn: Function) -> str:
    """The function's text (deterministic; ``parser.parse_function`` reads it back)."""
    return Printer(fn).function()


def value_names(fn: Function) -> dict[int, str]:
    """``id(value) -> printed name`` (with ``%``) for every value the printed function mentions."""
    printer = Printer(fn)
    printer.function()
    return {key: "%" + name for key, name in printer.names.items()}
