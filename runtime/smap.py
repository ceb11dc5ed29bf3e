"""``smap``: ``shard_map`` over one axis of the mesh in context, with ``vmap``-style ``in_axes``/``out_axes``.

``smap(f, in_axes=0, out_axes=0, axis_name='x')`` under ``set_mesh(mesh)`` gives each instance of ``f`` one slice of
the mapped axes, split over mesh axis ``x``; the other mesh axes stay whole from ``f``'s point of view (JAX leaves
them to the compiler), so the values are those of a ``shard_map`` over a one-axis mesh of ``x``'s devices. The
results are laid out over the whole mesh as ``out_axes`` says. With ``in_axes`` left out, each argument's axis is
read from its layout (an Array laid out over an ``Explicit`` mesh axis ``x``), as JAX reads it from its type.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from srcjax.runtime import tree_util
from srcjax.runtime.mesh_context import Infer
from srcjax.runtime.sharding import AxisType, Mesh, NamedSharding, PartitionSpec


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any, axis_name: Any) -> Any:
    """``f`` mapped over mesh axis ``axis_name`` of the mesh in context, one axis of each argument at a time."""
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got {in_axes}.")
    if in_axes is not Infer and not all(isinstance(a, int) for a in tree_util.tree_leaves(in_axes)):
        raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) container with those "
                        f"types as leaves, but got {in_axes}.")
    if not all(isinstance(a, int) for a in tree_util.tree_leaves(out_axes)):
        raise TypeError("smap out_axes must be an int, None, or (nested) container with those types as leaves, but "
                        f"got {out_axes}.")
    out_specs = _specs(axis_name, out_axes)
    mapped_for: dict[Any, Callable] = {}  # (per one-axis mesh and in_specs: each shard_map compiles once)

    @functools.wraps(f)
    def mapped(*args: Any) -> Any:
        from srcjax.runtime.mesh_context import _CONTEXT, check_laid_out, get_abstract_mesh
        from srcjax.runtime.shard_map import _specs_per_leaf, shard_map

        abstract = get_abstract_mesh()
        if abstract.empty:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter into a mesh context")
        if axis_name not in abstract.axis_names:
            raise ValueError(f"jax.shard_map requires axis_names={frozenset({axis_name})} to be a subset of "
                             f"mesh.axis_names={frozenset(abstract.axis_names)}")
        in_specs = _inferred(args, axis_name, abstract) if in_axes is Infer else \
            _specs(axis_name, in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args))
        if abstract.axis_names == (axis_name,) and abstract.axis_types == (AxisType.Explicit,):
            check_laid_out(tree_util.tree_leaves(args), _specs_per_leaf(in_specs, args, "in_axes"))
        mesh = _CONTEXT.mesh  # (the devices of the mesh in context; inside jit too)
        if mesh is None:
            raise ValueError("smap: the mesh in context has no devices; enter one with `jax.set_mesh(mesh)`")
        position = mesh.axis_names.index(axis_name)
        line = mesh.devices[tuple(slice(None) if a == position else 0 for a in range(mesh.devices.ndim))]
        one_axis = Mesh(line, (axis_name,), (AxisType.Manual,))
        leaves, tree = tree_util.tree_flatten(in_specs, is_leaf=lambda s: isinstance(s, PartitionSpec))
        key = (one_axis, tuple(leaves), tree)
        if key not in mapped_for:
            mapped_for[key] = shard_map(f, mesh=one_axis, in_specs=in_specs, out_specs=out_specs)
        out = mapped_for[key](*args)
        return _laid_out(out, out_specs, mesh)

    return mapped


def _specs(axis_name: Any, axes: Any) -> Any:
    """Per argument (or result), the PartitionSpec naming ``axis_name`` at its mapped axis (None: P())."""
    def spec(axis: Any) -> PartitionSpec:
        if axis is None:
            return PartitionSpec()
        if axis < 0:
            raise ValueError(f"smap: in_axes/out_axes must be non-negative here, got {axis}")
        return PartitionSpec(*(None,) * axis, axis_name)

    return tree_util.tree_map(spec, axes, is_leaf=lambda a: a is None)


def _inferred(args: Any, axis_name: Any, abstract: Any) -> tuple:
    """Each argument's spec for ``axis_name``, read from its layout (JAX reads it from the argument's type)."""
    from srcjax.runtime.mesh_context import inferred_specs

    kind = dict(zip(abstract.axis_names, abstract.axis_types))[axis_name]
    if kind != AxisType.Explicit:
        raise TypeError(f"in_axes was not specified when axis_name={frozenset({axis_name})} was of type {kind}")
    return inferred_specs(args, {axis_name}, "smap: in_axes")


def _laid_out(out: Any, out_specs: Any, mesh: Mesh) -> Any:
    """The results laid out over the whole mesh as their specs say (shard_map laid them out over one axis); in a
    compiled function, its results that these are."""
    from srcjax.runtime.array import Array
    from srcjax.runtime.mesh_context import _normalized
    from srcjax.runtime.shard_map import _specs_per_leaf
    from srcjax.transpiler.ir import Value
    from srcjax.transpiler.primitives import core

    leaves, tree = tree_util.tree_flatten(out)
    specs = _specs_per_leaf(out_specs, out, "out_axes")
    function = getattr(core.current_interpreter(), "function", None)
    placed = []
    for leaf, spec in zip(leaves, specs):
        sharding = NamedSharding(mesh, _normalized(spec, len(leaf.shape), spec))
        if isinstance(leaf, Array):
            leaf = Array(leaf._value, leaf.weak_type, sharding)
        elif isinstance(leaf, Value) and function is not None:
            function.result_shardings[id(leaf)] = (leaf, sharding)
        placed.append(leaf)
    return tree_util.tree_unflatten(tree, placed)
