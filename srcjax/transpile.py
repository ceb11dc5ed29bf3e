"""The IR ``srcjax transpile`` prints: a function's, after the transformations asked for, in their order.

``transformed(fn, args, ["grad", "vmap"])`` is the IR of ``vmap(grad(fn))``. The function is traced once;
each transformation then maps IR to IR: ``grad``, ``value_and_grad``, ``jvp`` and ``vjp`` are the transforms
themselves (a gradient keeps its forward and backward sections; tangents and cotangents are parameters
named ``x_dot`` and ``out_bar``), ``vmap``, ``jacfwd``, ``jacrev`` and ``hessian`` trace the public API over
the IR so far. Parameters are the dynamic leaves of the arguments; ``argnums`` and ``in_axes`` refer to the
function's own arguments (parameters that ``jvp`` and ``vjp`` add are differentiated and batched at axis 0).
``args`` gives the arguments' types as the final function takes them: batched, for ``vmap``.

``pmap`` comes last: what it prints is the program of one replica, traced with ``axis_name`` bound to the
number of devices (the mapped axes' size), its collectives written as ``lax.psum(x, 'i')`` and so on: the
function that ``pmap(f, axis_name='i')`` runs on each device.
"""

from __future__ import annotations

import contextlib
import inspect
import keyword
from typing import Any, Callable, Sequence

from srcjax.runtime.tree_util import tree_leaves, tree_map
from srcjax.transpiler.frontend.calls import trace_function
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import Block, Function, Literal
from srcjax.transpiler.passes import clean
from srcjax.transpiler.primitives import collectives
from srcjax.transpiler.primitives.ad import is_differentiable
from srcjax.transpiler.types import TensorType

__all__ = ["transformed", "TransformRefused", "NAMES"]

NAMES = ("grad", "value_and_grad", "vjp", "jvp", "vmap", "jacfwd", "jacrev", "hessian", "pmap")


class TransformRefused(Exception):
    """A transformation that does not apply to this function (the message says why, in one line)."""


class _Stage:
    """The IR so far, and for each of its params: the function argument it comes from (None for tangents
    and cotangents) and its batch axis."""

    def __init__(self, ir: Function, origin: list[int | None], axes: list[int | None]):
        self.ir, self.origin, self.axes = ir, origin, axes

    def positions(self, argnums: int | Sequence[int]) -> list[int]:
        nums = {argnums} if isinstance(argnums, int) else set(argnums)
        return [i for i, o in enumerate(self.origin) if o is None or o in nums]


def transformed(fn: Callable, args: Sequence[Any], transforms: Sequence[str], *, argnums: int | Sequence[int] = 0,
                in_axes: Any = 0, has_aux: bool = False, axis_name: Any = None) -> Function:
    unknown = [t for t in transforms if t not in NAMES]
    if unknown:
        raise TransformRefused(f"unknown transformation {unknown[0]} (known: {', '.join(NAMES)})")
    if "pmap" in transforms and (transforms[-1] != "pmap" or transforms.count("pmap") > 1):
        raise TransformRefused("--pmap prints the program of one replica: give it once, last")
    flags = " ".join(f"--{t.replace('_', '-')}" for t in transforms)
    axes = _per_argument(in_axes, len(args))
    sizes: list[int] = []
    base = list(args)
    replicas = None
    if "pmap" in transforms:  # (the outermost: its axis is the first one taken off)
        base, replicas = _unbatch(base, axes, "--pmap")
    for _ in range(transforms.count("vmap")):  # the function itself takes the arguments unbatched
        base, size = _unbatch(base, axes)
        sizes.insert(0, size)
    with collectives.named_axis(axis_name, replicas) if replicas is not None else contextlib.nullcontext():
        ir, _ = trace_function(fn, base)
        origin, leaf_axes = _leaf_origins(base, axes)
        stage = _Stage(ir, origin, leaf_axes)
        try:
            for t in transforms:
                stage = _STEPS[t](stage, argnums=argnums, has_aux=has_aux, size=sizes.pop(0) if t == "vmap" else None)
        except (TypeError, ValueError, NotImplementedError) as e:
            message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise TransformRefused(f"{flags} of {getattr(fn, '__name__', 'the function')}: {message}") from e
    name = "_".join([*reversed([t if t != "pmap" else "replica" for t in transforms]), getattr(fn, "__name__", "f")])
    stage.ir.name = name if name.isidentifier() else "f"
    return stage.ir


# -- the steps -----------------------------------------------------------------------------------------------------
def _grad(stage: _Stage, *, argnums: Any, has_aux: bool, size: Any, value: bool = False) -> _Stage:
    from srcjax.transpiler.transforms.vjp import vjp_function

    ir = stage.ir
    if has_aux:
        return _through_api(stage, "value_and_grad" if value else "grad", argnums=argnums, has_aux=True)
    if len(ir.results) != 1 or ir.results[0].aval.shape != () or ir.results[0].aval.dtype.kind != "f":
        outputs = ", ".join(str(r.aval) for r in ir.results)
        raise TypeError(f"the gradient needs one real scalar output; the function returns {outputs}")
    positions = stage.positions(argnums)
    wrt = [i in positions and is_differentiable(p.aval) for i, p in enumerate(ir.params)]
    grad = vjp_function(ir, wrt, seed_ones=True)
    _name_cotangents(grad, [p for p, on in zip(ir.params, wrt) if on], len(ir.results))
    results = grad.results if value else grad.results[len(ir.results):]
    trimmed = Function(ir.name, grad.params, Block(grad.body.params, grad.body.ops, list(results)), grad.consts,
                       grad.source, sections=grad.sections)
    return _Stage(clean(trimmed), stage.origin, stage.axes)


def _value_and_grad(stage: _Stage, **options: Any) -> _Stage:
    return _grad(stage, **options, value=True)


def _jvp(stage: _Stage, **_: Any) -> _Stage:
    """``(*params, *tangents) -> (*outs, *out_tangents)``: a tangent for each float parameter."""
    from srcjax.transpiler.transforms.jvp import jvp_function

    ir = stage.ir
    wrt = [is_differentiable(p.aval) for p in ir.params]
    out = jvp_function(ir, wrt)
    added = sum(wrt)
    return _Stage(out, stage.origin + [None] * added, stage.axes + [0] * added)


def _vjp(stage: _Stage, **_: Any) -> _Stage:
    """``(*params, *out_cotangents) -> (*outs, *param_cotangents)``, for each float parameter."""
    from srcjax.transpiler.transforms.vjp import vjp_function

    ir = stage.ir
    wrt = [is_differentiable(p.aval) for p in ir.params]
    out = vjp_function(ir, wrt)
    _name_cotangents(out, [p for p, on in zip(ir.params, wrt) if on], len(ir.results))
    added = len(out.params) - len(ir.params)
    return _Stage(out, stage.origin + [None] * added, stage.axes + [0] * added)


def _vmap(stage: _Stage, *, size: int, **_: Any) -> _Stage:
    import srcjax

    ir = stage.ir
    batched = [p.aval.update(shape=_insert(p.aval.shape, a, size)) if a is not None else p.aval
               for p, a in zip(ir.params, stage.axes)]
    mapped = srcjax.vmap(_as_function(ir), in_axes=tuple(stage.axes))
    return _Stage(_retraced(mapped, batched, ir), stage.origin, stage.axes)


def _jacobian(kind: str) -> Callable[..., _Stage]:
    def step(stage: _Stage, *, argnums: Any, has_aux: bool, **_: Any) -> _Stage:
        return _through_api(stage, kind, argnums=argnums, has_aux=has_aux)

    return step


def _through_api(stage: _Stage, kind: str, *, argnums: Any, has_aux: bool) -> _Stage:
    """A transformation of the public API over the IR so far, with argnums over its parameters. ``jacfwd``'s
    Jacobian of an integer output is ``float0`` (no data), which a compiled function does not return: it is
    left out (``jacrev`` and ``hessian`` refuse integer outputs, as JAX's do)."""
    import srcjax

    ir = stage.ir
    positions = tuple(stage.positions(argnums))
    if not positions:
        raise TypeError("no argument to differentiate with respect to (see --argnums)")
    if kind == "jacfwd" and not has_aux:
        ir = _float_outputs(ir)
    made = getattr(srcjax, kind)(_as_function(ir, aux=has_aux), argnums=positions, has_aux=has_aux)
    return _Stage(_retraced(made, [p.aval for p in ir.params], ir), stage.origin, stage.axes)


_STEPS: dict[str, Callable[..., _Stage]] = {
    "grad": _grad, "value_and_grad": _value_and_grad, "jvp": _jvp, "vjp": _vjp, "vmap": _vmap,
    "jacfwd": _jacobian("jacfwd"), "jacrev": _jacobian("jacrev"), "hessian": _jacobian("hessian"),
    "pmap": lambda stage, **_: stage,  # (one replica's program is what was traced, with the axis bound)
}


# -- helpers ---------------------------------------------------------------------------------------------------
def _name_cotangents(fn: Function, params: list[Any], skip: int) -> None:
    """The results after the first ``skip`` are the cotangents of ``params``: unnamed ones read ``x_bar``."""
    owned = {id(p) for p in fn.params}
    for result, param in zip(fn.results[skip:], params):
        if result.name is None and param.name and id(result) not in owned and not isinstance(result, Literal):
            result.name = f"{param.name}_bar"



def _float_outputs(ir: Function) -> Function:
    kept = [r for r in ir.results if r.aval.dtype.kind in "fc"]
    if len(kept) == len(ir.results):
        return ir
    return Function(ir.name, ir.params, Block(ir.body.params, ir.body.ops, kept), ir.consts, ir.source)



def _as_function(ir: Function, aux: bool = False) -> Callable:
    """``ir`` as a Python function of its parameters (traced, it records the IR's ops again); one result is
    returned as itself, several as a tuple (with ``aux``: the first, and a tuple of the others)."""

    def run(*params: Any) -> Any:
        outs = eval_function(ir, *params)
        if aux:
            return outs[0], tuple(outs[1:])
        return outs[0] if len(outs) == 1 else tuple(outs)

    run.__name__ = ir.name
    # the IR's parameter names, for the names a transformation derives from them (``x_bar``)
    names: list[str] = []
    for i, p in enumerate(ir.params):
        name = p.name if p.name and p.name.isidentifier() and not keyword.iskeyword(p.name) else f"arg{i}"
        names.append(name if name not in names else f"{name}_{i}")
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
    return run


def _retraced(fn: Callable, types: list[TensorType], like: Function) -> Function:
    """The IR of ``fn`` on ``types``, its parameters named as ``like``'s."""
    ir, _ = trace_function(fn, types, name=like.name)
    for new, old in zip(ir.params, like.params):
        new.name = old.name
    ir.source = like.source
    return ir


def _per_argument(in_axes: Any, n: int) -> list[Any]:
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != n:
            raise TransformRefused(f"--in-axes gives {len(in_axes)} axes for {n} arguments")
        return list(in_axes)
    return [in_axes] * n


def _is_type(x: Any) -> bool:
    return isinstance(x, TensorType)


def _unbatch(args: list[Any], axes: list[Any], flag: str = "--vmap") -> tuple[list[Any], int]:
    """The arguments with their mapped axis removed, and the batch size (all mapped axes must agree)."""
    sizes: set[int] = set()

    def drop(t: Any, axis: int) -> Any:
        if not _is_type(t):
            return t
        a = axis % t.ndim if t.ndim else None
        if a is None:
            raise TransformRefused(f"{flag} maps axis {axis} of a {t}, which has no axes")
        sizes.add(t.shape[a])
        return t.update(shape=t.shape[:a] + t.shape[a + 1:])

    out = [arg if axis is None else tree_map(lambda t, axis=axis: drop(t, axis), arg, is_leaf=_is_type)
           for arg, axis in zip(args, axes)]
    if len(sizes) != 1:
        raise TransformRefused(f"{flag} needs one mapped argument at least, and the mapped axes of one size; "
                               f"got sizes {sorted(sizes)}")
    return out, sizes.pop()


def _leaf_origins(args: list[Any], axes: list[Any]) -> tuple[list[int | None], list[int | None]]:
    """For each dynamic leaf (each parameter of the traced function): its argument, and that one's axis."""
    origin: list[int | None] = []
    leaf_axes: list[int | None] = []
    for i, (arg, axis) in enumerate(zip(args, axes)):
        for leaf in tree_leaves(arg, is_leaf=_is_type):
            if _is_type(leaf):
                origin.append(i)
                leaf_axes.append(None if axis is None else axis)
    return origin, leaf_axes


def _insert(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    a = axis % (len(shape) + 1)
    return shape[:a] + (size,) + shape[a:]
