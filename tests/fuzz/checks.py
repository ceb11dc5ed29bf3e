"""The checks run on every program: each runs the program one way and compares with another way.

- ``eager``, ``eager-x64``: srcjax run eagerly (float32; and float64) vs NumPy float64.
- ``ir``: the traced IR verifies, prints and parses back to the same text; ``emitted``: the emitted Python
  module run eagerly equals the IR interpreter bit for bit, and the interpreter agrees with the eager run.
- ``jit``, ``jit-x64``: ``jit`` compiled natively vs eager (float32) and vs NumPy (float64); ``jit-interpreter``:
  ``jit`` with ``SRCJAX_NATIVE=0``.
- ``jvp``, ``grad``, ``grad-vs-jvp``, ``jit-grad``: in float64, the tangent of every output vs central finite
  differences of NumPy along a random direction; the gradient of a weighted sum of the outputs the same way,
  and ``<grad, t> == <w, jvp(t)>``; ``jit(grad)`` vs ``grad``.
- ``vmap``: in float64, ``vmap`` over several ``in_axes``/``out_axes`` vs a loop over the batch (NumPy).
- ``transformed-ir``: the IR of ``grad`` and of ``vmap`` of the program verifies, and its emitted Python
  computes what the interpreter computes, bit for bit.

A program that assigns array items (``y[i] = v``) runs only compiled: its eager baseline is the interpreter.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime import tree_util
from srcjax.runtime.api import NativeFallbackWarning
from srcjax.transpiler.emit_python import emit_module
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.parser import parse_function
from srcjax.transpiler.printer import print_function
from srcjax.transpiler.types import TensorType
from srcjax.transpiler.verifier import verify
from tests.fuzz import harness
from tests.fuzz.harness import (
    Hang, Invalid, Loaded, Mismatch, as64, as_srcjax, compare, conditioning, guarded, leaves, native, rounding_matters,
    run_reference, sample, time_limit, x64,
)

F32 = dict(rtol=1e-3, atol=1e-4)  # float32 vs float64: rounding through a few dozen ops
F64 = dict(rtol=1e-9, atol=1e-9)  # float64 vs float64: the same math in another order
SAME32 = dict(rtol=1e-4, atol=1e-5)  # two float32 runs of the same ops (fusion, FMA, our own exp)
FD = dict(rtol=1e-5, atol=1e-6)  # derivatives vs central differences with a step of 1e-6
FD_STEP, FD_COARSE = 1e-6, 1e-4
BATCH = 3


class Context:
    """One program at one input: the float32 inputs and the NumPy float64 output on them."""

    def __init__(self, loaded: Loaded, seed: int):
        self.loaded, self.seed = loaded, seed
        self.args = sample(loaded.program, seed)
        self.want = conditioning(loaded, self.args, seed)
        self._baseline: Any = None

    def call(self, fn: Callable, args: list[Any]) -> Any:
        return fn(*as_srcjax(args))

    def baseline(self) -> Any:
        """srcjax's eager result (float32); the IR interpreter's for a program that only compiles."""
        if self._baseline is None:
            if self.loaded.compiled_only:
                with native(False):
                    self._baseline = srcjax.jit(self.loaded.fn)(*self.args)
            else:
                self._baseline = self.call(self.loaded.fn, self.args)
        return self._baseline


def abstract(tree: Any) -> Any:
    return tree_util.tree_map(lambda x: TensorType(np.asarray(x).dtype, np.shape(x)), tree)


# -- plain runs ------------------------------------------------------------------------------------------------
def check_eager(ctx: Context) -> None:
    try:
        compare("eager", guarded("eager", ctx.baseline), ctx.want, **F32)
    except Mismatch as e:
        if e.kind == "mismatch" and rounding_matters(ctx.loaded, ctx.args, ctx.want, **F32):
            raise Invalid("the output depends on float32 rounding") from None
        raise


def check_eager_x64(ctx: Context) -> None:
    def run():
        with x64():
            if ctx.loaded.compiled_only:
                with native(False):
                    return srcjax.jit(ctx.loaded.fn)(*as64(ctx.args))
            return ctx.call(ctx.loaded.fn, as64(ctx.args))

    compare("eager-x64", guarded("eager-x64", run), ctx.want, **F64)


def check_ir(ctx: Context) -> None:
    """The IR: verified, printed and parsed back; its emitted Python equals the interpreter, bit for bit."""
    ir, out_tree = guarded("ir", lambda: trace_function(ctx.loaded.fn, abstract(ctx.args)))
    guarded("ir", lambda: verify(ir))
    text = print_function(ir)
    again = guarded("ir", lambda: print_function(parse_function(text)))
    if again != text:
        raise Mismatch("ir", "mismatch", "printing, parsing and printing again changes the text")
    flat = leaves(ctx.args)
    interpreted = guarded("interpreter", lambda: eval_function(ir, *flat))
    compare("interpreter", tree_util.tree_unflatten(out_tree, list(interpreted)), ctx.baseline(), **SAME32)
    _same_as_emitted("emitted", ir, flat, interpreted)


def _same_as_emitted(check: str, ir: Any, flat: list[Any], interpreted: list[Any] | None = None) -> None:
    """``ir`` verifies, and its emitted Python module, run on ``flat``, equals the interpreter bit for bit."""
    guarded(check, lambda: verify(ir))
    if interpreted is None:
        interpreted = guarded(check, lambda: eval_function(ir, *flat))

    def emitted():
        namespace: dict[str, Any] = {}
        exec(compile(emit_module(ir), f"<emitted {ir.name}>", "exec"), namespace)
        out = namespace[ir.name](*flat)
        return list(out) if len(ir.results) != 1 else [out]

    python = guarded(check, emitted)
    for i, (a, b) in enumerate(zip(interpreted, python)):
        if not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True) or np.shape(a) != np.shape(b):
            a, b = np.asarray(a), np.asarray(b)
            gap = np.max(np.abs(a.astype(np.float64) - b), initial=0) if a.shape == b.shape else "shapes differ"
            raise Mismatch(check, "mismatch", f"result {i}: emitted Python {b!r}, interpreter {a!r} (largest "
                                              f"difference {gap})")


def check_transformed_ir(ctx: Context) -> None:
    """The IR of ``grad`` and of ``vmap`` of the program (float64): verified, and emitted as Python that
    computes what the interpreter computes."""
    rng = np.random.default_rng(ctx.seed + 15485863)
    weights = [rng.standard_normal(w.shape) for w in leaves(ctx.want)]
    args = as64(ctx.args)
    batched = [tree_util.tree_map(lambda x: np.stack([x, x * 0.5 + 0.1]), a) for a in args]
    with x64():
        grad = srcjax.grad(weighted_sum(ctx.loaded.fn, weights), argnums=tuple(range(len(args))))
        for check, fn, inputs in (("emitted-grad", grad, args), ("emitted-vmap", srcjax.vmap(ctx.loaded.fn), batched)):
            closed = guarded(check, lambda: srcjax.make_jaxpr(fn)(*inputs))  # noqa: B023 - called at once
            _same_as_emitted(check, closed.ir, leaves(inputs))


def _jit(check: str, fn: Callable, args: list[Any], enabled: bool = True) -> Any:
    def run():
        with native(enabled), warnings.catch_warnings():
            warnings.simplefilter("error", NativeFallbackWarning)
            return srcjax.jit(fn)(*args)

    return guarded(check, run)


def check_jit(ctx: Context) -> None:
    compare("jit", _jit("jit", ctx.loaded.fn, ctx.args), ctx.baseline(), **F32)


def check_jit_x64(ctx: Context) -> None:
    with x64():
        got = _jit("jit-x64", ctx.loaded.fn, as64(ctx.args))
    compare("jit-x64", got, ctx.want, **F64)


def check_jit_interpreter(ctx: Context) -> None:
    compare("jit-interpreter", _jit("jit-interpreter", ctx.loaded.fn, ctx.args, False), ctx.baseline(), **SAME32)


# -- derivatives -------------------------------------------------------------------------------------------------
def weighted_sum(fn: Callable, weights: list[np.ndarray]) -> Callable:
    """A scalar of ``fn``'s outputs with nonzero gradient everywhere: sum over leaves of ``sum(out * w)``."""

    def loss(*args):
        total = 0.0
        for out, w in zip(tree_util.tree_leaves(fn(*args)), weights):
            total = total + jnp.sum(out * w)
        return total

    return loss


def finite_difference(ctx: Context, direction: list[Any], step: float) -> list[np.ndarray]:
    def at(s: float) -> list[np.ndarray]:
        moved = tree_util.tree_map(lambda x, t: np.asarray(x, np.float64) + s * t, ctx.args, direction)
        return leaves(run_reference(ctx.loaded, moved))

    return [(a - b) / (2 * step) for a, b in zip(at(step), at(-step))]


def check_derivatives(ctx: Context) -> None:
    rng = np.random.default_rng(ctx.seed + 104729)
    direction = tree_util.tree_map(lambda x: rng.standard_normal(np.shape(x)), ctx.args)
    weights = [rng.standard_normal(w.shape) for w in leaves(ctx.want)]
    fd = finite_difference(ctx, direction, FD_STEP)
    coarse = finite_difference(ctx, direction, FD_COARSE)
    for a, b in zip(fd, coarse):  # a kink or a jump between the two: the derivative is not well posed here
        if np.max(np.abs(a - b), initial=0) > 1e-4 * max(1.0, float(np.max(np.abs(a), initial=0))):
            raise Invalid("finite differences do not settle")
    args = as64(ctx.args)
    n = len(args)
    with x64():
        primal, tangent = guarded("jvp", lambda: srcjax.jvp(ctx.loaded.fn, tuple(args), tuple(direction)))
        compare("jvp", primal, ctx.want, **F64)
        compare("jvp", leaves(tangent), fd, **FD)
        loss = weighted_sum(ctx.loaded.fn, weights)
        value, grads = guarded("grad", lambda: srcjax.value_and_grad(loss, argnums=tuple(range(n)))(*args))
        want_value = sum(float(np.sum(w * o)) for w, o in zip(weights, leaves(ctx.want)))
        compare("grad", value, np.float64(want_value), **F64)
        along = sum(float(np.sum(g * t)) for g, t in zip(leaves(grads), tree_util.tree_leaves(direction)))
        fd_along = sum(float(np.sum(w * d)) for w, d in zip(weights, fd))
        compare("grad", np.float64(along), np.float64(fd_along), **FD)
        jvp_along = sum(float(np.sum(w * np.asarray(t))) for w, t in zip(weights, leaves(tangent)))
        compare("grad-vs-jvp", np.float64(along), np.float64(jvp_along), **F64)
        compiled = guarded("jit-grad", lambda: srcjax.jit(srcjax.grad(loss, argnums=tuple(range(n))))(*args))
        compare("jit-grad", compiled, grads, rtol=1e-8, atol=1e-8)


# -- batching ------------------------------------------------------------------------------------------------------
def _stack(trees: list[Any], axis: int) -> Any:
    return tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs], axis=axis), *trees)


def check_vmap(ctx: Context) -> None:
    program = ctx.loaded.program
    examples = [ctx.args]
    for b in range(1, BATCH):
        args = sample(program, ctx.seed * 7 + 1000 * b)
        conditioning(ctx.loaded, args, ctx.seed)
        examples.append(args)
    wants = [ctx.want] + [run_reference(ctx.loaded, ex) for ex in examples[1:]]
    n = len(ctx.args)
    variants = [((0,) * n, 0), ((-1,) * n, -1)]
    if n > 1:
        variants.append(((0,) + (None,) * (n - 1), 0))
        variants.append(((None,) * (n - 1) + (1 if _rank_at_least(examples[0][-1], 1) else 0,), 0))
    for in_axes, out_axes in variants:
        per_example = [list(ex) for ex in examples]
        for i, axis in enumerate(in_axes):
            if axis is None:  # shared by the batch: every example sees the first one's value
                for ex in per_example:
                    ex[i] = examples[0][i]
        want_each = wants if all(a is not None for a in in_axes) else \
            [run_reference(ctx.loaded, ex) for ex in per_example]
        batched = [per_example[0][i] if axis is None else _stack([ex[i] for ex in per_example], axis)
                   for i, axis in enumerate(in_axes)]
        with x64():
            mapped = srcjax.vmap(ctx.loaded.fn, in_axes=in_axes, out_axes=out_axes)
            got = guarded("vmap", lambda: mapped(*as64(batched)))  # noqa: B023 - called at once
        try:
            compare("vmap", got, _stack(want_each, out_axes), **F64)
        except Mismatch as e:
            raise Mismatch("vmap", e.kind, f"in_axes={in_axes}, out_axes={out_axes}: {e.detail}") from None


def _rank_at_least(tree: Any, rank: int) -> bool:
    return all(np.ndim(x) >= rank for x in tree_util.tree_leaves(tree))


CHECKS: dict[str, Callable[[Context], None]] = {
    "eager": check_eager, "eager-x64": check_eager_x64, "ir": check_ir, "jit": check_jit,
    "jit-x64": check_jit_x64, "jit-interpreter": check_jit_interpreter, "derivatives": check_derivatives,
    "vmap": check_vmap, "transformed-ir": check_transformed_ir,
}


def run_checks(loaded: Loaded, seed: int, only: str | None = None) -> list[Mismatch]:
    """Every check (or the one named ``only``) on ``loaded`` at input ``seed``; the failures. ``Invalid`` when the
    program is ill-posed at that input."""
    try:
        with time_limit():
            ctx = Context(loaded, seed)
    except Hang:
        raise Invalid("the NumPy reference does not finish") from None
    failures = []
    for name, check in CHECKS.items():
        if only is not None and name != only:
            continue
        try:
            with time_limit():
                check(ctx)
        except Hang:
            e = Mismatch(name, "Hang", f"still running after {harness.TIME_LIMIT:.0f} s")
            e.group = name
            failures.append(e)
        except Mismatch as e:
            e.group = name
            failures.append(e)
        except Invalid:
            if only is not None:
                raise
    return failures
