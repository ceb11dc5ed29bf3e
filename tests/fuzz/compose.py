"""Nested transformations: every stack of up to three of ``jit``, ``grad``, ``vmap``, ``jvp``, ``jacfwd``, ``jacrev``,
``checkpoint`` and a ``custom_jvp`` wrapper, applied to a function of one array, vs an unnested reference.

A stack is written outermost first: ``("jit", "vmap", "grad")`` is ``jit(vmap(grad(f)))``. Each transformation
is applied to a ``Level``: the srcjax function, its reference (NumPy float64, no srcjax transformation) and
its input and output shapes. The references: ``jit``, ``checkpoint`` and ``custom_jvp`` (whose rule is
``jvp`` of the function itself) are the identity; ``vmap`` is a loop and a stack; the derivatives are central
differences (a five-point stencil per level) of the level below; ``grad`` of a function whose output is not
a scalar differentiates ``sum(out * w)`` for fixed random weights ``w``. Everything runs in float64.
"""

from __future__ import annotations

import itertools
import runpy
from typing import Any, Callable, NamedTuple

import numpy as np

import srcjax
import srcjax.numpy as jnp
from tests.fuzz import bases
from tests.fuzz.harness import Invalid, Mismatch, compare, guarded, x64

TRANSFORMS = ("jit", "grad", "vmap", "jvp", "jacfwd", "jacrev", "checkpoint", "custom_jvp")
DERIVATIVES = {"grad", "jvp", "jacfwd", "jacrev"}
BATCH = 2
STEP = 1e-3
# tolerance by the number of finite-difference levels in the reference (each level loses about 3 digits)
TOLERANCE = {0: 1e-9, 1: 1e-7, 2: 1e-6, 3: 1e-4}


class Level(NamedTuple):
    fn: Callable[[Any], Any]
    reference: Callable[[np.ndarray], np.ndarray]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]


def stacks(depth: int = 3) -> list[tuple[str, ...]]:
    """Every stack of 1 to ``depth`` transformations, in every order (repeats included)."""
    return [s for n in range(1, depth + 1) for s in itertools.product(TRANSFORMS, repeat=n)]


def _central(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, direction: np.ndarray, step: float) -> np.ndarray:
    """d/ds fn(x + s * direction) at 0, by the five-point stencil (error of order step**4)."""
    at = lambda s: np.asarray(fn(x + s * direction), np.float64)  # noqa: E731
    return (8 * (at(step) - at(-step)) - (at(2 * step) - at(-2 * step))) / (12 * step)


def _jacobian(fn: Callable, x: np.ndarray, out_shape: tuple[int, ...], step: float) -> np.ndarray:
    columns = [_central(fn, x, np.eye(x.size)[i].reshape(x.shape), step) for i in range(x.size)]
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape) if columns else np.zeros(out_shape + x.shape)


# -- one transformation ------------------------------------------------------------------------------------------
def apply(name: str, level: Level, rng: np.random.Generator, step: float) -> Level:
    f, ref, s, t = level
    if name in ("jit", "checkpoint"):
        return Level(getattr(srcjax, name)(f), ref, s, t)
    if name == "custom_jvp":
        return Level(custom_jvp_of(f), ref, s, t)
    if name == "vmap":
        return Level(srcjax.vmap(f), lambda xs: np.stack([ref(x) for x in xs]), (BATCH,) + s, (BATCH,) + t)
    if name == "grad":
        weights = rng.standard_normal(t)
        scalar, scalar_ref = weighted(f, weights), (lambda x: np.sum(ref(x) * weights))
        return Level(srcjax.grad(scalar), lambda x: _jacobian(scalar_ref, x, (), step), s, s)
    if name == "jvp":
        direction = rng.standard_normal(s)
        return Level(tangent_of(f, direction), lambda x: _central(ref, x, direction, step), s, t)
    if name in ("jacfwd", "jacrev"):
        return Level(getattr(srcjax, name)(f), lambda x: _jacobian(ref, x, t, step), s, t + s)
    raise ValueError(name)


def weighted(f: Callable, weights: np.ndarray) -> Callable:
    def scalar(x):
        return jnp.sum(f(x) * weights)

    return scalar


def tangent_of(f: Callable, direction: np.ndarray) -> Callable:
    def tangent(x):
        return srcjax.jvp(f, (x,), (direction,))[1]

    return tangent


def custom_jvp_of(f: Callable) -> Callable:
    """``f`` as a ``custom_jvp`` function whose rule is ``f``'s own derivative."""

    def same(x):
        return f(x)

    wrapped = srcjax.custom_jvp(same)

    @wrapped.defjvp
    def rule(primals, tangents):
        return srcjax.jvp(f, primals, tangents)

    return wrapped


def build(stack: tuple[str, ...], base: Level, seed: int, step: float = STEP) -> Level:
    rng = np.random.default_rng(seed)
    level = base
    for name in reversed(stack):
        level = apply(name, level, rng, step)
    return level


def check_stack(stack: tuple[str, ...], fn: Callable, reference: Callable, in_shape: tuple[int, ...],
                out_shape: tuple[int, ...], seed: int) -> None:
    """``stack`` applied to ``fn`` at a random point agrees with the unnested reference; ``Mismatch`` if not,
    ``Invalid`` if the reference itself does not settle (a kink or jump within the differences' reach)."""
    base = Level(fn, reference, in_shape, out_shape)
    level = build(stack, base, seed)
    x = np.random.default_rng(seed + 1).standard_normal(level.in_shape)
    levels = sum(name in DERIVATIVES for name in stack)
    tol = TOLERANCE[min(levels, 3)]
    with x64():
        # (a custom_jvp function called directly runs its Python on the arguments as given, in JAX too, where
        # x.at[...] of a NumPy array and item assignment fail: that stack is called from inside a jit, where the
        # function is read from its source as in every other stack)
        call = srcjax.jit(level.fn) if stack and stack[0] == "custom_jvp" else level.fn
        try:
            got = guarded("compose", lambda: call(x))
        except Mismatch as e:
            # a custom_jvp rule that is jvp of a function branching on its input is not linear in the tangents
            # where reverse mode has to transpose it (the branch's stop_gradient): JAX refuses it too
            if "custom_jvp" in stack and "cannot transpose" in e.detail:
                raise Invalid(f"JAX refuses this too: {e.detail}") from None
            raise
    want = _reference(level, x)
    try:
        compare("compose", got, want, rtol=tol, atol=tol)
    except Mismatch as e:
        if levels:  # is the reference well posed? it must not move with the step
            other = _reference(build(stack, base, seed, 2 * STEP), x)
            if not np.allclose(want, other, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(want), initial=0)))):
                raise Invalid("finite differences do not settle") from None
        raise Mismatch("compose", e.kind, f"{'(' .join(stack)}(f{')' * len(stack)}: {e.detail}") from None


def base_functions() -> dict[str, tuple[Callable, Callable, tuple[int, ...], tuple[int, ...]]]:
    """The hand-written bases: name -> (srcjax function, NumPy reference, input shape, output shape)."""
    reference = runpy.run_path(bases.__file__, init_globals={"__fuzz_numpy__": np})
    return {name: (getattr(bases, name), reference[name], *shapes) for name, shapes in bases.BASES.items()}


def _reference(level: Level, x: np.ndarray) -> np.ndarray:
    try:
        with np.errstate(all="raise", under="ignore"):
            return np.asarray(level.reference(x), np.float64)
    except Invalid:
        raise
    except Exception as e:  # noqa: BLE001 - NumPy cannot run it: no test
        raise Invalid(f"reference: {type(e).__name__}: {e}") from None
