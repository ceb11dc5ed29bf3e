"""``closure_convert`` and ``custom_gradient``: a function's closed-over traced values made explicit arguments, and
the custom derivative built on that.

A function traced inside another one's trace may read that trace's values (a closure over the outer function's
arguments): its IR takes them as extra parameters (``Builder.captured``). ``closure_convert`` hands those back
as the ``consts`` JAX hoists (values that may carry a derivative); concrete arrays it reads stay constants of the
converted function, as in JAX.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from srcjax.runtime import tree_util
from srcjax.runtime.api import abstractify
from srcjax.runtime.autodiff import _run_user, custom_vjp
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.primitives.ad import aval_of, tangent_aval
from srcjax.transpiler.types import TensorType


def _converted(fun: Callable, tree: Any, avals: Sequence[TensorType]) -> tuple[Callable, list[Any]]:
    """``fun`` traced on arguments of structure ``tree`` and types ``avals``: the function of (args, *consts) that
    evaluates the trace, and the consts (the enclosing trace's values it reads)."""
    ir, out_tree = trace_function(fun, tree_util.tree_unflatten(tree, list(avals)))
    consts = list(ir.captured)
    name = getattr(fun, "__name__", "fun")

    def converted_fun(*args_and_consts: Any) -> Any:
        n_args = len(args_and_consts) - len(consts)
        if n_args < 0:
            raise TypeError(f"closure_convert({name}): the converted function takes the arguments, then the "
                            f"{len(consts)} consts; got {len(args_and_consts)} values")
        args, hoisted = args_and_consts[:n_args], args_and_consts[n_args:]
        leaves, args_tree = tree_util.tree_flatten(tuple(args))
        if args_tree != tree:
            raise TypeError(f"closure_convert({name}): the converted function was traced for arguments of structure "
                            f"{tree}, got {args_tree}")
        return tree_util.tree_unflatten(out_tree, eval_function(ir, *leaves, *hoisted))

    converted_fun.__name__ = f"converted_{name}"
    return converted_fun, consts


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list[Any]]:
    """``(converted_fun, consts)``: ``converted_fun(*args, *consts)`` computes ``fun(*args)`` for arguments of the
    example arguments' types, with the traced values ``fun`` closes over (``consts``) passed explicitly, so that a
    ``custom_vjp`` rule can differentiate with respect to them (JAX's ``jax.closure_convert``)."""
    if not callable(fun):
        raise TypeError(f"closure_convert expects a callable, got {type(fun).__name__}")
    leaves, tree = tree_util.tree_flatten(example_args)
    return _converted(fun, tree, [abstractify(x) for x in leaves])


def custom_gradient(fun: Callable) -> Callable:
    """``fun`` returns ``(value, vjp)``, ``vjp(cotangent)`` giving the cotangents of its arguments (a tuple; one
    argument's alone is accepted); the decorated function returns ``value``, differentiated by ``vjp``
    (JAX's ``jax.custom_gradient``)."""

    @functools.wraps(fun)
    def primal(*args: Any) -> Any:
        return _run_user(fun, *args)[0]

    def fwd(*args: Any) -> tuple[Any, Any]:
        value, rule = _run_user(fun, *args)
        leaves, out_tree = tree_util.tree_flatten((value,))
        converted, consts = _converted(rule, out_tree, [tangent_aval(aval_of(x)) for x in leaves])
        return value, (converted, len(args), consts)

    def bwd(residuals: Any, cotangent: Any) -> tuple:
        converted, n_args, consts = residuals
        cts = converted(cotangent, *consts)
        if n_args == 1 and not isinstance(cts, (tuple, list)):
            cts = (cts,)
        return tuple(cts)

    wrapped = custom_vjp(primal)
    wrapped.defvjp(fwd, bwd)
    return wrapped
