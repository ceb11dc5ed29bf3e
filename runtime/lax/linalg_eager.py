"""How the loop-based linear-algebra functions run when called eagerly. A ``lax`` loop called outside any
transformation runs its body's Python once per step: past ``EAGER_STEPS`` steps such a function is compiled
instead (once per shape, dtype and static option, by ``jit``'s cache), as JAX's eager call runs compiled code;
below, it is compiled once called again with the same shapes (``api.compiled_when_hot``). Under a transformation
the function is traced as it is, so jit, grad and vmap see its operations."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

EAGER_STEPS = 32


def run(fn: Callable[..., Any], steps: int, *args: Any, **static: Any) -> Any:
    """``fn(*args, **static)``, compiled when called eagerly for more than ``EAGER_STEPS`` loop steps."""
    from srcjax.runtime.config import config
    from srcjax.transpiler.primitives import core

    static_items = tuple(sorted(static.items()))
    if steps > EAGER_STEPS and core.current_interpreter() is core.base_interpreter() and not config.jax_disable_jit:
        return _compiled(fn, static_items)(*args)
    return _when_hot(fn, static_items)(*args)


@functools.cache
def _compiled(fn: Callable[..., Any], static: tuple[tuple[str, Any], ...]) -> Any:
    from srcjax.runtime.api import jit

    return jit(functools.partial(fn, **dict(static)))


@functools.cache
def _when_hot(fn: Callable[..., Any], static: tuple[tuple[str, Any], ...]) -> Any:
    from srcjax.runtime.api import compiled_when_hot

    return compiled_when_hot()(functools.wraps(fn)(functools.partial(fn, **dict(static))))
