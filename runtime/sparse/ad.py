"""``sparse.grad`` and ``sparse.value_and_grad``: derivatives with respect to sparse arguments, taken in the
subspace of their sparsity pattern (with respect to ``data``; the indices stay), returned as sparse arrays of
the same pattern."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from srcjax.runtime import tree_util
from srcjax.runtime.sparse.bcoo import BCOO
from srcjax.runtime.sparse.bcsr import BCSR

__all__ = ["grad", "value_and_grad"]


def _is_sparse(x: Any) -> bool:
    return isinstance(x, (BCOO, BCSR))


def _with_data(original: Any, data: Any) -> Any:
    """``original``'s pattern holding ``data``."""
    children, treedef = tree_util.tree_flatten(original)
    return tree_util.tree_unflatten(treedef, [data, *children[1:]])


def _sparse_ad(transform: Callable, fun: Callable, argnums: int | Sequence[int], has_aux: bool,
               kwargs: dict) -> Callable:
    """``transform(fun)`` with each sparse array among the differentiated arguments standing as its ``data``."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    @functools.wraps(fun)
    def wrapped(*args: Any, **call_kwargs: Any) -> Any:
        args = list(args)
        structures = {}
        for i in nums:
            leaves, treedef = tree_util.tree_flatten(args[i], is_leaf=_is_sparse)
            structures[i] = (leaves, treedef)
            args[i] = tree_util.tree_unflatten(treedef, [x.data if _is_sparse(x) else x for x in leaves])

        def rebuild(i: int, tree: Any) -> Any:
            leaves, treedef = structures[i]
            values = tree_util.tree_leaves(tree)
            return tree_util.tree_unflatten(treedef, [_with_data(x, v) if _is_sparse(x) else v
                                                      for x, v in zip(leaves, values)])

        def on_data(*xs: Any, **kw: Any) -> Any:
            return fun(*(rebuild(i, x) if i in structures else x for i, x in enumerate(xs)), **kw)

        out = transform(on_data, argnums=argnums, has_aux=has_aux, **kwargs)(*args, **call_kwargs)
        return out, rebuild

    return wrapped


def _gradients(grads: Any, nums: tuple[int, ...], rebuild: Callable) -> Any:
    """As JAX's: the gradients of the arguments that have leaves, one of them bare."""
    per_arg = (grads,) if len(nums) == 1 and not isinstance(grads, tuple) else tuple(grads)
    out = tuple(g for g in (rebuild(i, g) for i, g in zip(nums, per_arg)) if tree_util.tree_leaves(g))
    return out[0] if len(out) == 1 else out


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   **kwargs: Any) -> Callable:
    """``jax.value_and_grad`` whose gradient with respect to a sparse argument is sparse, of its pattern."""
    from srcjax.runtime.autodiff import value_and_grad as dense_value_and_grad

    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    inner = _sparse_ad(dense_value_and_grad, fun, argnums, has_aux, kwargs)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **call_kwargs: Any) -> Any:
        (value, grads), rebuild = inner(*args, **call_kwargs)
        return value, _gradients(grads, nums, rebuild)

    return value_and_grad_fun


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs: Any) -> Callable:
    """``jax.grad`` whose gradient with respect to a sparse argument is sparse, of its pattern."""
    from srcjax.runtime.autodiff import grad as dense_grad

    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    inner = _sparse_ad(dense_grad, fun, argnums, has_aux, kwargs)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **call_kwargs: Any) -> Any:
        out, rebuild = inner(*args, **call_kwargs)
        if has_aux:
            return _gradients(out[0], nums, rebuild), out[1]
        return _gradients(out, nums, rebuild)

    return grad_fun
