"""``srcjax.test_util.check_grads``: derivatives checked against central finite differences.

As JAX checks them: forward mode compares ``jvp`` with ``(f(x + eps t) - f(x - eps t)) / 2 eps`` along a
random tangent; reverse mode compares the inner product ``<t, vjp(c)>`` with ``<jvp(t), c>`` for random
``t`` and ``c``. ``order=2`` repeats the checks on the derivative functions themselves.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from srcjax.runtime import autodiff, tree_util

EPS = 1e-4
_TOLERANCE = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5,
              np.dtype(np.complex64): 2e-2, np.dtype(np.complex128): 1e-5}


def _tolerance(tree: Any, given: float | None) -> float:
    if given is not None:
        return given
    return max((_TOLERANCE.get(np.asarray(x).dtype, 1e-5) for x in tree_util.tree_leaves(tree)), default=1e-5)


def _random_like(rng: np.random.RandomState, tree: Any) -> Any:
    def one(x):
        x = np.asarray(x)
        if x.dtype.kind == "c":
            return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
        return rng.standard_normal(x.shape).astype(x.dtype if x.dtype.kind == "f" else np.float32)

    return tree_util.tree_map(one, tree)


def _add(a: Any, b: Any, scale: float) -> Any:
    from srcjax.runtime import numpy as jnp

    return tree_util.tree_map(
        lambda x, y: jnp.asarray(np.asarray(x) + scale * np.asarray(y, np.asarray(x).dtype)), a, b)


def _inner(a: Any, b: Any) -> float:
    return sum(float(np.real(np.vdot(np.asarray(x, np.complex128), np.asarray(y, np.complex128))))
               for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)))


def numerical_jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], eps: float = EPS) -> Any:
    up = f(*_add(list(primals), list(tangents), eps))
    down = f(*_add(list(primals), list(tangents), -eps))
    def difference(u: Any, d: Any) -> np.ndarray:
        wide = np.complex128 if np.iscomplexobj(u) else np.float64  # keep the imaginary part of complex outputs
        return (np.asarray(u, wide) - np.asarray(d, wide)) / (2 * eps)

    return tree_util.tree_map(difference, up, down)


def _check_close(got: Any, want: Any, atol: float, rtol: float, what: str) -> None:
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g, np.complex128), np.asarray(w, np.complex128), atol=atol, rtol=rtol,
                                   err_msg=what)


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol=None, rtol=None, eps=EPS, err_msg="") -> None:
    rng = np.random.RandomState(0)
    tangent = _random_like(rng, list(args))
    value, t_out = f_jvp(list(args), tangent)
    tol = _tolerance(args, None)
    _check_close(value, f(*args), atol or tol, rtol or tol, f"{err_msg} primal value")
    _check_close(t_out, numerical_jvp(f, args, tangent, eps), atol or tol, rtol or tol, f"{err_msg} tangent")


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol=None, rtol=None, eps=EPS, err_msg="") -> None:
    rng = np.random.RandomState(0)
    value, vjp_fn = f_vjp(*args)
    tangent = _random_like(rng, list(args))
    tangent_out = numerical_jvp(f, args, tangent, eps)
    cotangent = _random_like(rng, value)
    # a VJP is linear, not conjugate-linear, in the cotangent (JAX's convention for complex values): conjugating
    # on both sides makes <t, conj(vjp(conj c))> the inner product that equals <jvp(t), c>
    cotangent_out = tree_util.tree_map(np.conj, vjp_fn(tree_util.tree_map(np.conj, cotangent)))
    tol = _tolerance(args, None)
    ip = _inner(tangent, list(cotangent_out))
    ip_expected = _inner(tangent_out, cotangent)
    np.testing.assert_allclose(ip, ip_expected, atol=atol or tol, rtol=rtol or tol,
                               err_msg=f"{err_msg} <t, vjp(c)> against <jvp(t), c>")


def check_grads(f: Callable, args: Sequence[Any], order: int, modes: Sequence[str] = ("fwd", "rev"),
                atol: float | None = None, rtol: float | None = None, eps: float | None = None) -> None:
    """Check ``f``'s derivatives up to ``order`` in forward and/or reverse mode; raises on a mismatch."""
    from srcjax.runtime import numpy as jnp

    eps = eps or EPS
    args = tree_util.tree_map(jnp.asarray, tuple(args))
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"unknown mode {mode!r}; expected 'fwd' or 'rev'")

    def check(f: Callable, args: Sequence[Any], order: int, msg: str) -> None:
        if "fwd" in modes:
            fwd_msg = f"{msg} JVP of order {order}"
            check_jvp(f, lambda primals, tangents: autodiff.jvp(f, primals, tangents), args, atol, rtol, eps, fwd_msg)
            if order > 1:
                check(partial(_jvp_pair, f), (list(args), list(args)), order - 1, fwd_msg)
        if "rev" in modes:
            rev_msg = f"{msg} VJP of order {order}"
            check_vjp(f, partial(autodiff.vjp, f), args, atol, rtol, eps, rev_msg)
            if order > 1:
                def f_vjp(*a):
                    out, vjp_fn = autodiff.vjp(f, *a)
                    return vjp_fn(out)

                check(f_vjp, args, order - 1, rev_msg)

    check(f, tuple(args), order, "check_grads:")


def _jvp_pair(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    return autodiff.jvp(f, list(primals), list(tangents))


__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]
