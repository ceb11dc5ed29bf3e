"""The fuzzer's program model: typed expression trees and statements that render to Python source.

A program is kept as a tree (not as text) so that the shrinker can delete statements, replace an expression by
a sub-expression of the same type, and make the named dimensions smaller, then render the result again. The
rendered module runs under srcjax (``jnp`` is ``srcjax.numpy``) and, loaded with ``__fuzz_numpy__`` set, under
NumPy in float64: the oracle.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, NamedTuple


class Ty(NamedTuple):
    """A value's type: ``kind`` is "f" (float array), "b" (bool array) or "i" (an int loop index below the
    dimension ``shape[0]``); ``shape`` holds dimension tokens: names of the module's dimension constants
    ("A"), small literals ("2") or sums and differences of them ("A+B", "A-1")."""

    kind: str
    shape: tuple[str, ...]


def dim_value(token: str, dims: dict[str, int]) -> int:
    return int(eval(token, {"__builtins__": {}}, dict(dims)))  # tokens are our own arithmetic on names


def shape_value(shape: tuple[str, ...], dims: dict[str, int]) -> tuple[int, ...]:
    return tuple(dim_value(t, dims) for t in shape)


def shape_text(shape: tuple[str, ...]) -> str:
    """The shape as a Python tuple literal in the program's source."""
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(shape) + ")"


@dataclasses.dataclass(frozen=True)
class Expr:
    """``fmt.format(*args)``: each argument a sub-expression (its type is known, so the shrinker can put one of
    the same type in the whole expression's place). A leaf is a format with no placeholders."""

    fmt: str
    args: tuple[Expr, ...]
    ty: Ty

    def render(self) -> str:
        return self.fmt.format(*(a.render() for a in self.args))

    def nodes(self) -> list[Expr]:
        out = [self]
        for a in self.args:
            out += a.nodes()
        return out

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)


def leaf(text: str, ty: Ty) -> Expr:
    return Expr(text.replace("{", "{{").replace("}", "}}"), (), ty)


def replace_node(expr: Expr, target: Expr, new: Expr) -> Expr:
    """``expr`` with the node ``target`` (by identity) replaced by ``new``."""
    if expr is target:
        return new
    args = tuple(replace_node(a, target, new) for a in expr.args)
    return expr if all(a is b for a, b in zip(args, expr.args)) else dataclasses.replace(expr, args=args)


@dataclasses.dataclass
class Stmt:
    """A statement: ``head`` (one or more lines, the last one opening the first block when there are blocks)
    formatted with the rendered ``exprs``; each further block is ``(header line, body)``, e.g. ``("else:",
    [...])``. A ``protected`` statement is never deleted by the shrinker (a loop counter's increment: without
    it the loop would not end)."""

    head: str
    exprs: list[Expr] = dataclasses.field(default_factory=list)
    blocks: list[tuple[str, list[Stmt]]] = dataclasses.field(default_factory=list)
    protected: bool = False

    def render(self, indent: str) -> list[str]:
        text = self.head.format(*(e.render() for e in self.exprs))
        lines = [indent + line for line in text.split("\n")]
        for i, (header, body) in enumerate(self.blocks):
            if i > 0:
                lines.append(indent + header)
            lines += render_block(body, indent + "    ")
        return lines


def render_block(body: list[Stmt], indent: str) -> list[str]:
    if not body:
        return [indent + "pass"]
    return [line for stmt in body for line in stmt.render(indent)]


@dataclasses.dataclass
class Function:
    name: str
    params: list[str]
    body: list[Stmt]

    def render(self) -> str:
        return "\n".join([f"def {self.name}({', '.join(self.params)}):", *render_block(self.body, "    ")])


_ITEM_ASSIGNMENT = re.compile(r"\s*\w+\[")  # a statement that starts with a subscript assigns to it

PRELUDE = '''\
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False
'''

AT_UPDATE = '''\
def at_update(y, i, v, how):
    if REFERENCE:  # NumPy: update a copy in place
        y = y.copy()
        if how == "set":
            y[i] = v
        elif how == "add":
            y[i] += v
        else:
            y[i] *= v
        return y
    if how == "set":
        return y.at[i].set(v)
    if how == "add":
        return y.at[i].add(v)
    return y.at[i].multiply(v, unique_indices=True)  # (as in JAX, the only scatter_mul with a derivative)
'''


LAX_LOOP = '''\
def fori(n, body, init):
    if REFERENCE:  # NumPy: the loop lax.fori_loop stands for
        for i in range(n):
            init = body(i, init)
        return init
    from srcjax import lax

    return lax.fori_loop(0, n, body, init)
'''

LAX_COND = '''\
def cond(pred, true_fn, false_fn, operand):
    if REFERENCE:
        return true_fn(operand) if pred else false_fn(operand)
    from srcjax import lax

    return lax.cond(pred, true_fn, false_fn, operand)
'''
# module helpers, each written out where a function calls it: (call prefix, source)
HELPERS = [("at_update(", AT_UPDATE), ("fori(", LAX_LOOP), ("cond(", LAX_COND)]


@dataclasses.dataclass
class Program:
    """A module: dimension constants, helper functions, and ``main`` (the last function), called with arguments
    of ``arg_specs`` (per parameter a pytree, tuple or dict, whose leaves are float shapes in dimension tokens).
    ``compiled_only()``: the program assigns array items (``y[i] = v``), which srcjax only compiles (an eager
    srcjax array is immutable), so its eager srcjax run is the IR interpreter's."""

    dims: dict[str, int]
    functions: list[Function]
    arg_specs: list[Any]
    entry: str = "main"

    def compiled_only(self) -> bool:
        return any(_ITEM_ASSIGNMENT.match(line) for f in self.functions for line in f.render().split("\n"))

    def render(self, header: str = "") -> str:
        dims = "".join(f"{k} = {v}\n" for k, v in self.dims.items())
        functions = [f.render() for f in self.functions]
        parts = [header + PRELUDE.rstrip("\n"), dims.rstrip("\n")]
        parts += [source.rstrip("\n") for call, source in HELPERS if any(call in f for f in functions)]
        parts += functions
        return "\n\n\n".join(parts) + "\n"

    def main(self) -> Function:
        return self.functions[-1]


def map_spec(fn, spec: Any) -> Any:
    """Apply ``fn`` to each leaf of an argument spec. A spec is a leaf (a tuple of dimension tokens: one array),
    a list of leaves (a tuple argument) or a dict of leaves (a dict argument); the result has the argument's
    structure (a list becomes a tuple)."""
    if isinstance(spec, dict):
        return {k: fn(v) for k, v in spec.items()}
    if isinstance(spec, list):
        return tuple(fn(v) for v in spec)
    return fn(spec)
