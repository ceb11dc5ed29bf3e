"""``custom_batching.custom_vmap``: a function with its own batching rule, and ``sequential_vmap``.

``@custom_vmap`` then ``@f.def_vmap``: ``rule(axis_size, in_batched, *args) -> (out, out_batched)``, where
``in_batched`` holds per argument (a pytree of bools, as the argument) whether it is batched, a batched argument
has its batch axis first, and ``out_batched`` says the same of the outputs. Called outside ``vmap`` the function
runs; under ``vmap`` the rule does (op ``custom_vmap_call``). Derivatives are the function's.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Sequence

from srcjax.runtime import tree_util
from srcjax.runtime.api import _is_dynamic
from srcjax.runtime.array import Array
from srcjax.runtime.autodiff import _current_builder, _positional, _run_user
from srcjax.transpiler.frontend.calls import Trace, active, interpret, is_user_function
from srcjax.transpiler.ir import Op, Value
from srcjax.transpiler.primitives import core


class custom_vmap:  # noqa: N801 - JAX's name
    """``fun`` with a batching rule (``def_vmap``) used in its place under ``vmap``."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = _positional(self.fun, args, kwargs, self.__name__)
        builder = _current_builder()
        leaves, treedef = tree_util.tree_flatten(list(args))
        if builder is None or not any(isinstance(x, Value) for x in leaves):
            return self.fun(*args)
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {self.__name__} using "
                                 "def_vmap.")
        return _emit(self, builder, leaves, treedef)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


@dataclasses.dataclass(init=False, eq=False)
class _VmapRule:
    """The op's ``rule``: the call's arguments (array leaves as operands) and the user's batching rule. (A dataclass
    whose one field is the function's name, which the IR prints.)"""

    name: str

    def __init__(self, custom: custom_vmap, treedef: Any, leaves: Sequence[Any], is_operand: Sequence[bool]):
        self.custom, self.treedef, self.is_operand = custom, treedef, list(is_operand)
        self.static = [None if op else leaf for leaf, op in zip(leaves, is_operand)]
        self.name = getattr(custom, "__name__", "custom_vmap")
        self.out_tree: Any = None

    def __repr__(self) -> str:
        return self.name

    def arguments(self, operands: Sequence[Any], static: Callable[[Any], Any] = lambda s: s) -> list[Any]:
        it = iter(operands)
        return tree_util.tree_unflatten(self.treedef, [next(it) if op else static(s)
                                                       for op, s in zip(self.is_operand, self.static)])

    def batch(self, size: int, operands: Sequence[Any], batched: Sequence[bool]) -> tuple[list[Any], list[bool]]:
        """The user's rule on the operands (batched ones with their batch axis first)."""
        args = self.arguments(operands)
        in_batched = self.arguments(batched, static=lambda s: False)
        pair = _run_user(self.custom.vmap_rule, size, in_batched, *args)
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"the custom_vmap rule of {self.name} must return a pair (outputs, out_batched), got "
                            f"{type(pair).__name__}")
        out, out_batched = pair
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != self.out_tree:
            raise TypeError(f"the custom_vmap rule of {self.name} returned outputs of structure {out_tree}, where "
                            f"{self.name} returns {self.out_tree}")
        try:  # (a prefix of the outputs' structure is accepted: ``True`` for every output)
            flags = tree_util.tree_leaves(tree_util.tree_map(lambda b, o: [bool(b)] * len(tree_util.tree_leaves(o)),
                                                             out_batched, out, is_leaf=lambda x: x is None))
        except (ValueError, TypeError) as e:
            raise TypeError(f"the custom_vmap rule of {self.name}: out_batched must have the structure of the "
                            f"outputs ({self.out_tree}), got {tree_util.tree_structure(out_batched)}") from e
        return out_leaves, flags


def _emit(custom: custom_vmap, builder: Any, leaves: list[Any], treedef: Any) -> Any:
    """The call as a ``custom_vmap_call`` op: its region the function, interpreted from its source."""
    from srcjax.transpiler.primitives.custom import custom_vmap_call_p

    is_operand = [isinstance(x, (Value, Array)) or _is_dynamic(x) for x in leaves]
    rule = _VmapRule(custom, treedef, leaves, is_operand)
    with core.interpreting(builder):
        values = [builder.operand(x) for x, op in zip(leaves, is_operand) if op]
        trace = Trace(builder)
        with builder.region([v.aval for v in values]) as block, active(trace):
            inner = rule.arguments(list(block.params))
            out = interpret(trace, custom.fun, inner, {}) if is_user_function(custom.fun) else custom.fun(*inner)
            out_leaves, rule.out_tree = tree_util.tree_flatten(out)
            block.results = [builder.operand(o) for o in out_leaves]
        results = [Value(r.aval) for r in block.results]
        builder.emit(Op(custom_vmap_call_p, values, {"rule": rule}, results, regions=[block], loc=builder.loc))
    return tree_util.tree_unflatten(rule.out_tree, results)


def sequential_vmap(f: Callable) -> custom_vmap:
    """``f`` batched by a loop over the batch (``lax.map``) rather than by vectorizing it (JAX's
    ``custom_batching.sequential_vmap``)."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size: int, in_batched: list, *args: Any) -> tuple[Any, Any]:
        from srcjax.runtime.lax.control import map as lax_map

        flags = tree_util.tree_leaves(in_batched)
        leaves, tree = tree_util.tree_flatten(list(args))
        mapped = [x for x, b in zip(leaves, flags) if b]

        def one(example: list) -> Any:
            it = iter(example)
            merged = [next(it) if b else x for x, b in zip(leaves, flags)]
            return _run_user(f.fun, *tree_util.tree_unflatten(tree, merged))

        out = lax_map(one, mapped)
        return out, tree_util.tree_map(lambda _: True, out)

    return f
