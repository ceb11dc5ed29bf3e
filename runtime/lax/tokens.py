"""``lax.create_token`` and ``lax.after_all``: JAX's ordering tokens.

A token carries no data; it orders side effects in XLA. srcjax runs a program's effects in program order, so a
token is an object with nothing in it, registered as a pytree node with no children: it passes into and out of
``jit``, ``vmap``, ``grad`` and the control-flow functions as part of a pytree's structure, with no array leaves.
"""

from __future__ import annotations

from typing import Any

from srcjax.runtime import tree_util

__all__ = ["after_all", "create_token"]


class Token:
    """An ordering token (JAX's ``jax._src.core.Token``). All tokens are alike: none holds a value."""

    __slots__ = ()

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Token)

    def __hash__(self) -> int:
        return hash(Token)

    def block_until_ready(self) -> None:
        """Nothing to wait for: returns None, as JAX's token does."""
        return None


tree_util.register_pytree_node(Token, lambda token: ((), None), lambda aux, children: Token())


def create_token(_: Any = None) -> Token:
    """A new token with no preconditions; the argument is ignored (JAX keeps it for old callers)."""
    return Token()


def after_all(*operands: Any) -> Token:
    """A token that comes after all of ``operands``, which must be tokens."""
    if not all(isinstance(operand, Token) for operand in operands):
        raise TypeError("Arguments to after_all must be tokens")
    return Token()
