"""``fwd_and_bwd``: a function's forward and backward passes as two functions, each compiled once (JAX's
``jax.fwd_and_bwd``), so that a training loop that calls them in turn does not recompile the backward pass.

JAX's ``fwd`` returns ``vjp``'s backward function as its residuals (a pytree of the values it saved). srcjax's
``vjp`` returns a plain Python function, which a compiled function cannot return, so here the residuals are the
primal arguments, and ``bwd`` runs ``vjp`` on them again: the same cotangents, with the forward pass recomputed
inside the compiled backward pass (as ``checkpoint`` would), rather than saved.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, NamedTuple, Sequence


class FwdResiduals(NamedTuple):
    """What ``fwd`` passes to ``bwd``: the arguments ``fwd`` was called with (a pytree of them)."""

    args: tuple


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """``fwd(*args)`` gives ``(fun(*args), residuals)`` (``(out, residuals, aux)`` with ``has_aux``);
    ``bwd(residuals, cotangent)`` gives the cotangents of the arguments ``argnums`` names (one, not a tuple, for an
    int ``argnums``): ``vjp``'s, split in two calls."""
    from srcjax.runtime.api import jit
    from srcjax.runtime.autodiff import _argnums, _check_callable, vjp

    _check_callable(fun, "fwd_and_bwd")
    if not isinstance(argnums, int):
        try:
            argnums = tuple(operator.index(i) for i in argnums)
        except TypeError:
            raise TypeError(f"argnums must be an int or a sequence of ints, got {argnums!r}") from None

    def pullback(args: tuple) -> tuple:
        wrt = _argnums(argnums, len(args))

        def partial(*chosen: Any) -> Any:
            full = list(args)
            for i, value in zip(wrt, chosen):
                full[i] = value
            return fun(*full)

        return vjp(partial, *(args[i] for i in wrt), has_aux=has_aux)

    def fwd(*args: Any, **kwargs: Any) -> tuple:
        del kwargs  # (JAX's fwd takes keyword arguments and does not pass them to ``fun`` either)
        out = pullback(args)
        if has_aux:
            return out[0], FwdResiduals(args), out[2]
        return out[0], FwdResiduals(args)

    def bwd(residuals: FwdResiduals, cotangent: Any) -> Any:
        cotangents = pullback(tuple(residuals.args))[1](cotangent)
        return cotangents[0] if isinstance(argnums, int) else cotangents

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd
