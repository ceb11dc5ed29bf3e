"""Python's ``max``, ``min``, ``any`` and ``all`` on traced values: what Python computes item by item, with a
select where Python tests a traced value (as an ``if`` on one becomes a ``cond``), so they compile, differentiate
and batch. (``sum``, ``abs``, ``round``, ``divmod`` and ``pow`` need no help: they call the arrays' operators.)
"""

from __future__ import annotations

import builtins
from typing import Any

import libcst as cst

from srcjax.transpiler.frontend import values
from srcjax.transpiler.frontend.frame import Frame, is_symbolic
from srcjax.transpiler.trees import tree_flatten, tree_unflatten

_MISSING = object()


def handles(fn: Any) -> bool:
    return fn is builtins.max or fn is builtins.min or fn is builtins.any or fn is builtins.all


def call(frame: Frame, fn: Any, args: list, kwargs: dict, node: cst.CSTNode) -> Any:
    """``fn(*args, **kwargs)`` for one of the built-ins ``handles`` names; the built-in itself where no item (nor
    key) is traced."""
    if fn is builtins.any or fn is builtins.all:
        if len(args) != 1 or kwargs:
            return fn(*args, **kwargs)  # (Python's own TypeError, located by the caller)
        items = list(args[0])
        if not any(is_symbolic(item) for item in items):
            return fn(items)
        return _any_all(frame, fn is builtins.any, items, node)
    return _extreme(frame, fn, args, kwargs, node)


def _any_all(frame: Frame, is_any: bool, items: list, node: cst.CSTNode) -> Any:
    """``any``/``all``: a static item that decides it decides it (Python's answer whatever the traced items hold);
    else the traced items' truths combined."""
    from srcjax.transpiler.frontend.control import to_predicate

    traced = []
    for item in items:
        if is_symbolic(item):
            traced.append(to_predicate(frame, item, node))
        elif bool(item) is is_any:
            return is_any
    out = traced[0]
    for truth in traced[1:]:
        out = values.logical_or(out, truth) if is_any else values.logical_and(out, truth)
    return out


def _extreme(frame: Frame, fn: Any, args: list, kwargs: dict, node: cst.CSTNode) -> Any:
    """``max``/``min`` as Python runs them: the first item, replaced by each later one whose key is greater (less)
    than the kept one's; ties and NaNs keep the earlier item, as Python's strict comparison does."""
    from srcjax.transpiler.frontend.calls import call as call_function
    from srcjax.transpiler.frontend.control import to_predicate

    name = fn.__name__
    key, default = kwargs.get("key"), kwargs.get("default", _MISSING)
    if set(kwargs) - {"key", "default"} or not args or (len(args) > 1 and default is not _MISSING):
        return fn(*args, **kwargs)  # (Python's own TypeError, located by the caller)
    items = list(args[0]) if len(args) == 1 else list(args)
    if not items:
        return fn(items, **kwargs)  # (its default, or Python's own ValueError)
    if key is None and not any(is_symbolic(leaf) for item in items for leaf in tree_flatten(item)[0]):
        return fn(items)
    keys = [item if key is None else call_function(frame, key, [item], {}, node) for item in items]
    best, best_key = items[0], keys[0]
    for item, item_key in zip(items[1:], keys[1:]):
        better = item_key > best_key if fn is builtins.max else item_key < best_key
        if not is_symbolic(better):
            if better:
                best, best_key = item, item_key
            continue
        better = to_predicate(frame, better, node)
        best = _select(frame, better, item, best, name, node)
        best_key = best if key is None else _select(frame, better, item_key, best_key, name, node)
    return best


def _select(frame: Frame, test: Any, a: Any, b: Any, name: str, node: cst.CSTNode) -> Any:
    """``a`` where ``test`` holds, else ``b``, leaf by leaf (items may be pytrees: ``max(pairs, key=...)``)."""
    from srcjax.transpiler.frontend.control import _is_array_like as is_array_like

    (la, ta), (lb, tb) = tree_flatten(a), tree_flatten(b)
    if ta != tb:
        raise frame.error(node, f"{name}() on a traced value picks between items of different structures",
                          note="the item it returns is only known when the compiled function runs, so its items "
                               "must be alike")
    out = []
    for x, y in zip(la, lb):
        if x is y:
            out.append(x)
        elif not (is_array_like(x) and is_array_like(y)):
            raise frame.error(node, f"{name}() on a traced value picks between items that are not numbers or "
                                    f"arrays ({type(x).__name__} and {type(y).__name__})")
        else:
            out.append(values.where(test, x, y))
    return tree_unflatten(ta, out)
