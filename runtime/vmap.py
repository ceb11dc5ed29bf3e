"""``vmap``: a function mapped over an axis of its arguments, as one batched computation.

The function is read by the front end for one example (the mapped axes removed), and the batching
transform turns that IR into the IR of the whole batch; the result is evaluated by the current interpreter
(so ``jit(vmap(f))``, ``vmap(jit(f))`` and ``vmap(grad(f))`` compose). ``in_axes`` and ``out_axes`` are
pytree prefixes of the arguments and results: an int (negative allowed) or ``None`` (not mapped).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from srcjax.runtime.eager import to_array
from srcjax.runtime import tree_util
from srcjax.runtime.api import abstractify
from srcjax.runtime.array import Array
from srcjax.transpiler.builder import differentiation_depths
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.frontend.calls import enclosing_trace
from srcjax.transpiler.frontend.concrete import UNKNOWN, TraceContext
from srcjax.transpiler.frontend.errors import TranspileError
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import Value
from srcjax.transpiler.primitives import collectives
from srcjax.transpiler.primitives.ad import aval_of
from srcjax.transpiler.transforms.vmap import vmap_function
from srcjax.transpiler.trees import FLOAT0
from srcjax.transpiler.types import TensorType


def _broadcast_prefix(prefix: Any, tree: Any, what: str) -> list[Any]:
    """One axis per leaf of ``tree``, from a pytree prefix of it (``None`` counts as a leaf here)."""
    out: list[Any] = []

    def not_a_prefix(detail: str) -> ValueError:
        return ValueError(f"vmap {what} specification must be a tree prefix of the corresponding value, got "
                          f"specification {prefix} for value tree {tree_util.tree_structure(tree)} ({detail})")

    def visit(p: Any, t: Any, path: str) -> None:
        if p is None or isinstance(p, int):
            out.extend([p] * len(tree_util.tree_leaves(t)))
            return
        if isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)):
            if len(p) != len(t):
                raise not_a_prefix(f"length {len(p)} against {len(t)} at {path or 'the top'}")
            for i, (pp, tt) in enumerate(zip(p, t)):
                visit(pp, tt, f"{path}[{i}]")
            return
        if isinstance(p, dict) and isinstance(t, dict):
            if set(p) != set(t):
                raise ValueError(f"vmap {what} specification keys {sorted(p)} do not match the value's keys "
                                 f"{sorted(t)} at {path or 'the top'}")
            for k in sorted(t):
                visit(p[k], t[k], f"{path}[{k!r}]")
            return
        t_type, t_children, t_aux = _node_parts(t)
        if type(p) is t_type and tree_util.is_tree_node(p):  # a registered node: its children are prefixes
            p_children, p_aux = tree_util.flatten_one_level(p)
            p_children = list(p_children)
            if len(p_children) != len(t_children) or not tree_util._aux_equal(p_aux, t_aux):
                raise not_a_prefix(f"{type(t).__name__} nodes differ at {path or 'the top'}")
            for i, (pp, tt) in enumerate(zip(p_children, t_children)):
                visit(pp, tt, f"{path}[<flat index {i}>]")
            return
        raise ValueError(f"vmap {what} specification must be an int, None, or a tree prefix of the value, got "
                         f"{prefix!r}")

    try:
        visit(prefix, tree, "")
    finally:
        visit = None  # (visit's closure holds itself and ``tree``: a cycle that kept the results alive until a GC)
    return out


def _node_parts(tree: Any) -> tuple[type, list[Any], Any]:
    """The node type, children and aux data of a registered node, also of one not built yet (the results'
    structure is probed with their registered nodes left unbuilt)."""
    if isinstance(tree, tree_util._Unbuilt):
        children, start = [], 0
        for child in tree.treedef.children_defs:
            children.append(tree_util.unflatten_containers(child, tree.leaves[start:start + child.num_leaves]))
            start += child.num_leaves
        return tree.treedef.node_type, children, tree.treedef.aux
    if not tree_util.is_tree_node(tree):
        return type(tree), [], None
    children, aux = tree_util.flatten_one_level(tree)
    return type(tree), list(children), aux


def _out_axis(axis: int, ndim: int) -> int:
    """``out_axes`` entry ``axis`` of a result whose batched form has rank ``ndim``, made non-negative (JAX's
    check and message: an axis the batched result does not have is an error, not taken modulo its rank)."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _number(leaf: Any) -> bool:
    return isinstance(leaf, (np.generic, bool, int, float, complex))


def _context(leaves: list[Any], dims: list[int | None], size: int) -> TraceContext:
    """What the trace knows of its parameters: the unmapped arguments' values (JAX's are not traced, so an
    ``assert`` or ``print`` on them sees them), and which are mapped along which axis (for how they print)."""
    inputs = [UNKNOWN if d is not None else leaf for leaf, d in zip(leaves, dims)]
    return TraceContext("vmap", inputs=inputs, tracked=list(dims), axis_size=size, outer=enclosing_trace())


def _dynamic(leaf: Any) -> bool:
    """An array or number (not a float0 array, an integer's tangent with no values: a constant of the trace)."""
    return (isinstance(leaf, (Array, Value, np.ndarray, np.generic, bool, int, float, complex))
            and getattr(leaf, "dtype", None) != FLOAT0)


def _check_axes_spec(in_axes: Any, out_axes: Any) -> None:
    """JAX's checks when ``vmap`` is applied: axes are ints (not floats, bools or NumPy integers) or None, and
    ``in_axes`` is one of them or a tuple with an entry per positional argument."""
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                        f"arguments passed to the function, but got {in_axes}.")
    for name, spec in (("in_axes", in_axes), ("out_axes", out_axes)):
        if not all(type(leaf) is int for leaf in tree_util.tree_leaves(spec)):
            raise TypeError(f"vmap {name} must be an int, None, or (nested) container with those types as leaves, "
                            f"but got {spec}.")


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None, axis_size: int | None = None,
         spmd_axis_name: Any = None, *, _processes: int = 1, _devices: bool = False,
         _unmapped_first: bool = False) -> Callable:
    """Map ``fun`` over axis ``in_axes`` of its arguments; the results are stacked along ``out_axes``.

    (``_processes > 1``: pmap's own, after ``distributed.initialize``: these examples are this process's share of
    ``_processes`` times as many, and collectives over ``axis_name`` reach the other processes' examples.
    ``_devices``: the examples are pmap's or shard_map's devices, each running the function for itself.
    ``_unmapped_first``: a result whose out_axes is None is the first example's, as pmap's is.)"""
    if not callable(fun):
        raise TypeError(f"vmap expects a callable, got {type(fun).__name__}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, out_axes)

    @functools.wraps(fun)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                             f"positional arguments passed to the function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        leaves, treedef = tree_util.tree_flatten((list(args), kwargs))
        axes = _broadcast_prefix(in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args), tuple(args),
                                 "in_axes") + [0] * len(tree_util.tree_leaves(kwargs))
        sizes, dims, sliced = {}, [], []
        for i, (leaf, axis) in enumerate(zip(leaves, axes)):
            if axis is not None and not _dynamic(leaf):  # (a string, an object to map over: JAX's error)
                raise TypeError(f"Argument '{leaf}' of type {type(leaf)} is not a valid JAX type")
            if axis is None:
                dims.append(None)
                sliced.append(leaf)
                continue
            # (a NumPy float64 array is float32 with x64 off, as it is when the batch is computed)
            aval = aval_of(leaf) if hasattr(leaf, "aval") else abstractify(leaf)
            ndim = aval.ndim
            if not -ndim <= axis < ndim:
                raise ValueError(f"vmap was requested to map its argument along axis {axis}, which implies that its "
                                 f"rank should be at least {axis + 1 if axis >= 0 else -axis}, but is only {ndim} "
                                 f"(its shape is {aval.shape})")
            axis %= ndim
            sizes.setdefault(aval.shape[axis], []).append(i)
            dims.append(axis)
            sliced.append(_Example(aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])))
        if len(sizes) > 1:
            names = _leaf_names(fun, args, kwargs)
            detail = ";\n".join(f"  * one axis had size {size}: axis {dims[i]} of {names[i]} of type "
                                 f"{_type_text(leaves[i])}" for size, idx in sizes.items() for i in idx)
            raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped:\n{detail}")
        if not sizes and axis_size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes (or give axis_size)")
        size = next(iter(sizes)) if sizes else int(axis_size)
        if axis_size is not None and size != axis_size:
            raise ValueError(f"vmap got axis_size={axis_size} but the mapped axes have size {size}")
        # what one example sees: mapped leaves lose their axis; other arrays are shared; the rest is static
        # (an unmapped number stays a Python value, as JAX passes it: ``range(n)`` sees it)
        def read(keep_arrays: bool) -> tuple[Any, Any, list[bool], list[Any]]:
            """The trace of one example; with ``keep_arrays``, unmapped concrete arrays stay values in it."""
            abstract = [s.aval if isinstance(s, _Example) else s if keep_arrays and isinstance(s, (np.ndarray, Array))
                        else abstractify(s) if _dynamic(s) and not _number(s) else s for s in sliced]
            dynamic = [isinstance(a, TensorType) for a in abstract]
            abstract_args, abstract_kwargs = tree_util.unflatten_containers(treedef, abstract)
            dyn_leaves = [leaf for leaf, dyn in zip(leaves, dynamic) if dyn]
            # (what an enclosing trace differentiates stays differentiated: custom rules apply inside)
            ir, out_tree = trace_function(fun, abstract_args, abstract_kwargs,
                                          differentiated=differentiation_depths(dyn_leaves),
                                          context=_context(dyn_leaves, [d for d, dyn in zip(dims, dynamic) if dyn],
                                                           size))
            return ir, out_tree, dynamic, dyn_leaves

        named = collectives.named_axis(axis_name, size * _processes, _processes) if axis_name is not None else None
        with named or _nothing():
            try:
                ir, out_tree, dynamic, dyn_leaves = read(False)
            except TranspileError as e:
                # a value the function needed concrete (``jnp.arange(n)``): JAX never traces unmapped arrays, so
                # read again with them as values, as grad does for the arguments it does not differentiate
                if not getattr(e, "concretization", False) or not any(
                        isinstance(s, (np.ndarray, Array)) for s in sliced):
                    raise
                ir, out_tree, dynamic, dyn_leaves = read(True)
            leaf_dims = [d for d, dyn in zip(dims, dynamic) if dyn]
            probe = tree_util.unflatten_containers(out_tree, list(range(len(ir.results))))
            outs = _broadcast_prefix(out_axes, probe, "out_axes")
            out_dims = [None if a is None else _out_axis(a, r.aval.ndim + 1) for a, r in zip(outs, ir.results)]
            batched = vmap_function(ir, leaf_dims + [None] * len(ir.captured), size, axis_name, out_dims, _devices,
                                     _unmapped_first)
            results = eval_function(batched, *dyn_leaves, *ir.captured)
        # (an argument returned as it is comes back as an Array, as from JAX, not as the caller's NumPy array)
        results = [to_array(r) if isinstance(r, (np.ndarray, np.generic)) else r for r in results]
        return tree_util.tree_unflatten(out_tree, results)

    return vmapped


def _leaf_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """How JAX's messages name each leaf of ``(args, kwargs)``: ``argument x``, ``argument t[0]``, ``kwargs['y']``."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = []
    for path, _ in tree_util.tree_flatten_with_path((list(args), kwargs))[0]:
        rest = tree_util.keystr(path[2:])
        if path[0].idx == 1:
            names.append(f"kwargs{tree_util.keystr(path[1:2])}{rest}")
        else:
            i = path[1].idx
            names.append(f"argument {positional[i] if i < len(positional) else f'args[{i}]'}{rest}")
    return names


def _type_text(leaf: Any) -> str:
    aval = aval_of(leaf) if hasattr(leaf, "aval") else abstractify(leaf)
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


class _Example:
    """An argument leaf as one example sees it: the type with the mapped axis removed."""

    def __init__(self, aval: TensorType):
        self.aval = aval


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


__all__ = ["vmap"]
