"""``ad_checkpoint.saved_residuals`` and ``print_saved_residuals``: what reverse mode keeps from the forward pass.

The residuals are read off the reverse-mode program (``vjp_function``): the values of its forward section, the
arguments included, that its backward section uses. Each is described as JAX describes it: ``from the argument
x``, ``output of sin from file.py:6:9 (g)``, or ``named 'a' from ...`` for a ``checkpoint_name``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from srcjax.runtime import autodiff, tree_util
from srcjax.transpiler.ir import Block, Literal, Value
from srcjax.transpiler.transforms.vjp import vjp_function
from srcjax.transpiler.types import TensorType


def _argument_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """Per leaf of ``(args, kwargs)``: its name in JAX's words (``x``, ``params[0]``, ``d['w']``)."""
    try:
        positional = [p.name for p in inspect.signature(fun).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        positional = []
    names = []
    for i, arg in enumerate(args):
        base = positional[i] if i < len(positional) else f"args[{i}]"
        names += [base + tree_util.keystr(path) for path, _ in tree_util.tree_flatten_with_path(arg)[0]]
    for key, value in kwargs.items():
        names += [key + tree_util.keystr(path) for path, _ in tree_util.tree_flatten_with_path(value)[0]]
    return names


def _uses(block: Block, into: dict[int, Value]) -> None:
    for op in block.ops:
        for v in op.operands:
            if not isinstance(v, Literal):
                into.setdefault(id(v), v)
        for region in op.regions:
            _uses(region, into)


def saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> list[tuple[TensorType, str]]:
    """``[(type, description)]`` of the values ``grad``/``vjp`` of ``fun`` at ``args`` keeps for its backward pass."""
    traced, _ = autodiff._trace(fun, args, kwargs, range(len(args)), ints=True)
    wrt = traced.wrt(range(len(args)))
    ir = vjp_function(autodiff._without_effects(traced.ir), wrt)
    ops = ir.body.ops
    start = next((i for i, op in enumerate(ops) if ir.sections.get(id(op)) == "backward"), len(ops))
    used: dict[int, Value] = {}
    _uses(Block(ops=ops[start:], results=[r for r in ir.results[len(traced.ir.results):]]), used)
    names = [n for n, is_param in zip(_argument_names(fun, args, kwargs), traced.leaf_param) if is_param]
    out = []
    for param, name in zip(ir.params, names):
        if id(param) in used:
            out.append((param.aval.strong(), f"from the argument {name}"))
    producer = {id(r): op for op in ops[:start] for r in op.results}
    for op in ops[:start]:
        for r in op.results:
            if id(r) not in used or not isinstance(r.aval, TensorType):
                continue
            if not op.regions and all(isinstance(v, Literal) for v in op.operands):
                continue  # (a constant: the same at every call, nothing kept per call)
            source = op
            while source.prim.name == "convert_element_type" and id(source.operands[0]) in producer and \
                    source.operands[0].aval.dtype == r.aval.dtype:  # (only the weak type changed: say whose)
                source = producer[id(source.operands[0])]
            name = source.prim.name
            what = f"named {source.params['name']!r}" if name == "name" else f"output of {name}"
            loc = source.loc
            where = f" from {loc.file}:{loc.line}:{loc.column - 1} ({loc.function})" if loc is not None else ""
            out.append((r.aval.strong(), what + where))
    return out


def print_saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> None:
    for aval, what in saved_residuals(fun, *args, **kwargs):
        print(f"{aval} {what}")
