"""Pytree flattening for the compiler, which must not import the runtime.

By default this knows the built-in containers (tuple, list, dict, None, namedtuples). The runtime
installs its ``tree_util`` (``install``), so that registered node types and dataclasses flatten too.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

_installed: dict[str, Callable[..., Any]] = {}


def install(flatten: Callable[[Any], tuple[list[Any], Any]], unflatten: Callable[[Any, list[Any]], Any]) -> None:
    _installed.update(flatten=flatten, unflatten=unflatten)


FLOAT0 = np.dtype([("float0", "V")])  # JAX's dtype of an integer's derivative: a dtype with no values


class Float0Zeros:
    """A ``float0`` array among a traced function's results, as a node (the runtime registers it) whose child is
    bool zeros of its shape: the compiled function returns those, and unflattening makes ``float0`` zeros of the
    child's shape again (batched by ``vmap`` like any result)."""

    def __init__(self, zeros: Any):
        self.zeros = zeros

    @staticmethod
    def wrap(leaf: Any) -> Any:
        return Float0Zeros(np.zeros(np.shape(leaf), bool)) if getattr(leaf, "dtype", None) == FLOAT0 else leaf

    @staticmethod
    def unwrap(children: list[Any]) -> np.ndarray:
        return np.zeros(np.shape(children[0]), FLOAT0)


class _Builtin:
    """A treedef for the built-in containers: (kind, metadata, children treedefs)."""

    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind: str, meta: Any, children: tuple):
        self.kind, self.meta, self.children = kind, meta, children

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, _Builtin) and self.kind == other.kind and self.meta == other.meta
                and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.meta, self.children))


def _flatten(x: Any, leaves: list[Any]) -> _Builtin:
    if x is None:
        return _Builtin("none", None, ())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return _Builtin("namedtuple", type(x), tuple(_flatten(v, leaves) for v in x))
    if isinstance(x, (tuple, list)):
        return _Builtin(type(x).__name__, None, tuple(_flatten(v, leaves) for v in x))
    if isinstance(x, dict):
        keys = tuple(sorted(x))
        return _Builtin("dict", keys, tuple(_flatten(x[k], leaves) for k in keys))
    leaves.append(x)
    return _Builtin("leaf", None, ())


def _unflatten(treedef: _Builtin, leaves: Any) -> Any:
    kind = treedef.kind
    if kind == "leaf":
        return next(leaves)
    if kind == "none":
        return None
    children = [_unflatten(c, leaves) for c in treedef.children]
    if kind == "namedtuple":
        return treedef.meta(*children)
    if kind == "dict":
        return dict(zip(treedef.meta, children))
    return tuple(children) if kind == "tuple" else children


def tree_flatten(x: Any) -> tuple[list[Any], Any]:
    if "flatten" in _installed:
        return _installed["flatten"](x)
    leaves: list[Any] = []
    return leaves, _flatten(x, leaves)


def tree_unflatten(treedef: Any, leaves: list[Any]) -> Any:
    if "unflatten" in _installed:
        return _installed["unflatten"](treedef, leaves)
    return _unflatten(treedef, iter(leaves))
