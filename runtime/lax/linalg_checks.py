"""JAX's operand checks for its linear-algebra primitives, with its messages: arrays (not lists), each of at least
(or, unbatched, exactly) its core rank, one batch rank for all, the primitive's own shape rule, then one dtype
among the accepted kinds; and its weak-type rule for their results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_KIND_NAMES = {"f": "floating", "c": "complexfloating"}


def linalg_operands(name: str, operands: tuple[Any, ...], ranks: tuple[int, ...], kinds: str,
                    shape_rule: Callable[..., None] | None = None, batched: bool = True) -> list[Any]:
    """The operands as arrays, after JAX's checks; ``shape_rule(*shapes)`` raises for shapes that do not fit.
    ``kinds``: the NumPy dtype kinds accepted."""
    import srcjax.runtime.numpy as jnp
    from srcjax.runtime.numpy._core import aval, is_arraylike

    for i, x in enumerate(operands):
        if not is_arraylike(x) or isinstance(x, (list, tuple)):
            raise TypeError(f"Error interpreting argument to {name} as a JAX value. The problematic value is of "
                            f"type {type(x)} and was passed to {name} at position {i}.")
    operands = [jnp.asarray(x) for x in operands]
    shapes = [aval(x).shape for x in operands]
    for i, (shape, rank) in enumerate(zip(shapes, ranks)):
        if len(shape) < rank:
            raise TypeError(f"Input {i} to {name} must have rank at least {rank}, but got shape={shape}")
        if not batched and len(shape) != rank:
            raise TypeError(f"Input {i} to {name} must have a rank of exactly {rank}, but got shape={shape}")
    batch_ranks = [len(shape) - rank for shape, rank in zip(shapes, ranks)]
    if any(r != batch_ranks[0] for r in batch_ranks):
        raise TypeError(f"All inputs to {name} must have the same number of batch dimensions, but got "
                        f"{batch_ranks} batch dimensions for the inputs.")
    if shape_rule is not None:
        shape_rule(*shapes)
    accepted = ", ".join(_KIND_NAMES[k] for k in kinds)
    found = [aval(x).dtype for x in operands]
    for i, dtype in enumerate(found):
        if dtype.kind not in kinds:
            raise TypeError(f"{name} does not accept dtype {dtype} at position {i}. Accepted dtypes at position {i} "
                            f"are subtypes of {accepted}.")
    if any(dtype != found[0] for dtype in found):
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(str(dtype) for dtype in found)}.")
    return operands


def weak_as_operands(operands: Any, results: Any) -> Any:
    """``results`` (a pytree), weakly typed when every operand is, as JAX types a primitive's results."""
    from srcjax.runtime import tree_util
    from srcjax.runtime.numpy._core import aval, convert

    if not all(aval(x).weak_type for x in operands):
        return results
    return tree_util.tree_map(lambda r: convert(r, aval(r).dtype, True), results)
