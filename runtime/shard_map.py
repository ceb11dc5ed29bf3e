"""``shard_map``: a function of one device's shards, mapped over a ``Mesh`` of devices, with collectives over the
mesh's axis names (JAX's recommended successor to ``pmap``).

Each argument is cut into shards as its ``PartitionSpec`` says (array axis ``a`` split over the mesh axes
``spec[a]``; replicated over the others). The function is mapped over the mesh axes as nested ``vmap``s, one per
mesh axis (outermost first), each naming its axis, so that ``psum(x, 'y')`` and ``axis_index('x')`` take their
meaning from the collectives' batching rules; a result whose out-spec does not name a mesh axis must not vary along
it (vmap's ``out_axes=None`` checks that). The results are put back together as the out-specs say, laid out over the
mesh (``NamedSharding``). Called on arrays it is compiled once per signature; inside a transformation or a compiled
function it is the nested vmaps themselves. Without ``mesh`` (or given an ``AbstractMesh``) the devices are those of
the mesh in context (``set_mesh``); without ``in_specs`` the specs are read from the arguments' layouts, as JAX reads
them from their types (runtime/mesh_context.py).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import tree_util
from srcjax.runtime.api import jit
from srcjax.runtime.array import Array
from srcjax.runtime.mesh_context import Infer
from srcjax.runtime.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec
from srcjax.runtime.vmap import vmap
from srcjax.transpiler.primitives import core


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = Infer, mesh: Any = None,
              axis_names: Any = frozenset(), check_vma: bool = True, check_rep: bool | None = None) -> Callable:
    """Map ``f`` over the devices of ``mesh``: each call of ``f`` sees one device's shards of the arguments. Without
    ``mesh``, the mesh in context (``set_mesh``) at each call; without ``in_specs``, the specs the arguments' layouts
    give over an all-``Explicit`` mesh (JAX reads them from the arguments' types)."""
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh, axis_names=axis_names,
                                 check_vma=check_vma, check_rep=check_rep)
    if mesh is not None and not isinstance(mesh, (Mesh, AbstractMesh)):
        raise TypeError("shard_map requires a `jax.sharding.Mesh` or a `jax.sharding.AbstractMesh` instance for its "
                        f"second argument, but got {mesh} of type {type(mesh)}.")
    if in_specs is None:
        raise TypeError("shard_map requires in_specs (one PartitionSpec per argument, or a pytree prefix of them)")
    if not isinstance(mesh, Mesh) or in_specs is Infer:
        return _AtCall(f, mesh, in_specs, out_specs)
    return _ShardMapped(f, mesh, in_specs, out_specs)


def experimental_shard_map(f: Callable, mesh: Any, in_specs: Any, out_specs: Any, check_rep: bool = True) -> Callable:
    """``jax.experimental.shard_map.shard_map``: ``shard_map`` with JAX's older signature (mesh, in_specs and
    out_specs may be given by position)."""
    return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=check_rep)


class _AtCall:
    """A ``shard_map`` whose mesh (the one in context) or in_specs (the arguments' layouts') are known at each call;
    one ``_ShardMapped`` per mesh and specs, so that each compiles once."""

    def __init__(self, f: Callable, mesh: Mesh | AbstractMesh | None, in_specs: Any, out_specs: Any):
        self.f, self.mesh, self.in_specs, self.out_specs = f, mesh, in_specs, out_specs
        self._mapped: dict[Any, _ShardMapped] = {}
        functools.update_wrapper(self, f, updated=())

    def __call__(self, *args: Any) -> Any:
        from srcjax.runtime.mesh_context import _CONTEXT, inferred_specs

        mesh = self.mesh if isinstance(self.mesh, Mesh) else _CONTEXT.mesh
        if mesh is None:
            raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter into a mesh context")
        if isinstance(self.mesh, AbstractMesh):  # (its devices are the mesh in context's)
            if (mesh.axis_names, mesh.axis_sizes) != (self.mesh.axis_names, self.mesh.axis_sizes):
                raise ValueError(f"The context mesh {mesh.abstract_mesh} should match the mesh passed to shard_map "
                                 f"{self.mesh}")
            mesh = Mesh(mesh.devices, mesh.axis_names, self.mesh.axis_types)
        in_specs = self.in_specs
        if in_specs is Infer:
            if any(t != AxisType.Explicit for t in mesh.axis_types):
                raise TypeError("shard_map in_specs argument must be a pytree of `jax.sharding.PartitionSpec` "
                                f"instances, but it was `None` when axis_names={frozenset(mesh.axis_names)} are of "
                                f"type {', '.join(str(t) for t in mesh.axis_types)}")
            in_specs = inferred_specs(args, set(mesh.axis_names), "shard_map: in_specs")
        leaves, tree = tree_util.tree_flatten(in_specs, is_leaf=_is_spec)
        key = (mesh, tuple(leaves), tree)
        if key not in self._mapped:
            self._mapped[key] = _ShardMapped(self.f, mesh, in_specs, self.out_specs)
        return self._mapped[key](*args)


def _is_spec(x: Any) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _names(entry: Any) -> tuple[str, ...]:
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


class _ShardMapped:
    def __init__(self, f: Callable, mesh: Mesh, in_specs: Any, out_specs: Any):
        self.f, self.mesh, self.in_specs, self.out_specs = f, mesh, in_specs, out_specs
        self._jitted: Callable | None = None
        functools.update_wrapper(self, f, updated=())

    def __call__(self, *args: Any) -> Any:
        if all(t == AxisType.Explicit for t in self.mesh.axis_types):  # (JAX's check: the arguments laid out so)
            from srcjax.runtime.mesh_context import check_laid_out

            check_laid_out(tree_util.tree_leaves(args), self._in_specs_per_leaf(args))
        if core.current_interpreter() is not core.base_interpreter():
            out = self._run(*args)
            builder = core.current_interpreter()
            function = getattr(builder, "function", None)
            if function is not None:  # (a result of the compiled function that is one of these is laid out so)
                for leaf, spec in zip(tree_util.tree_leaves(out), _specs_per_leaf(self.out_specs, out, "out_specs")):
                    function.result_shardings[id(leaf)] = (leaf, NamedSharding(self.mesh, spec or PartitionSpec()))
            return out
        if self._jitted is None:
            self._jitted = jit(self._run)
        out = self._jitted(*args)
        specs = _specs_per_leaf(self.out_specs, out, "out_specs")
        leaves, tree = tree_util.tree_flatten(out)
        placed = []
        for leaf, spec in zip(leaves, specs):
            if isinstance(leaf, Array):
                leaf = Array(leaf._value, leaf.weak_type, NamedSharding(self.mesh, spec or PartitionSpec()))
            placed.append(leaf)
        return tree_util.tree_unflatten(tree, placed)

    def _in_specs_per_leaf(self, args: tuple) -> list[Any]:
        return _specs_per_leaf(self.in_specs if isinstance(self.in_specs, tuple) else (self.in_specs,) * len(args)
                               if _is_spec(self.in_specs) else self.in_specs, args, "in_specs")

    def _run(self, *args: Any) -> Any:
        mesh = self.mesh
        sizes = mesh.shape
        in_specs = self._in_specs_per_leaf(args)
        leaves, tree = tree_util.tree_flatten(args)
        if len(in_specs) != len(leaves):
            raise ValueError(f"shard_map in_specs give {len(in_specs)} specs for {len(leaves)} argument leaves")
        split = [_to_shards(jnp.asarray(leaf), spec or PartitionSpec(), mesh) for leaf, spec in zip(leaves, in_specs)]
        present = [{n for entry in (spec or ()) for n in _names(entry)} for spec in in_specs]

        def body(*shard_leaves: Any) -> Any:
            return self.f(*tree_util.tree_unflatten(tree, list(shard_leaves)))

        mapped = body
        for name in reversed(mesh.axis_names):  # (the innermost vmap maps the last mesh axis)
            in_axes = tuple(0 if name in names else None for names in present)
            mapped = _mapped_over(mapped, name, sizes[name], in_axes, self.out_specs)
        out = mapped(*split)
        specs = _specs_per_leaf(self.out_specs, out, "out_specs")
        out_leaves, out_tree = tree_util.tree_flatten(out)
        return tree_util.tree_unflatten(out_tree, [_from_shards(leaf, spec or PartitionSpec(), mesh)
                                                   for leaf, spec in zip(out_leaves, specs)])


def _mapped_over(fn: Callable, name: str, size: int, in_axes: tuple, out_specs: Any) -> Callable:
    """``fn`` vmapped over mesh axis ``name``; the results the out-specs do not split over it stay unbatched."""
    out_axes = tree_util.tree_map(lambda spec: 0 if any(name in _names(e) for e in (spec or ())) else None,
                                  out_specs, is_leaf=_is_spec)
    return vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_name=name, axis_size=size, _devices=True)


def _specs_per_leaf(specs: Any, tree: Any, what: str) -> list[Any]:
    """One PartitionSpec (or None) per leaf of ``tree``, from a pytree prefix of specs."""
    if _is_spec(specs):
        return [specs] * len(tree_util.tree_leaves(tree))
    out: list[Any] = []

    def visit(s: Any, t: Any) -> None:
        if _is_spec(s):
            out.extend([s] * len(tree_util.tree_leaves(t)))
        elif isinstance(s, (tuple, list)) and isinstance(t, (tuple, list)) and len(s) == len(t):
            for si, ti in zip(s, t):
                visit(si, ti)
        elif isinstance(s, dict) and isinstance(t, dict) and set(s) == set(t):
            for k in sorted(t):
                visit(s[k], t[k])
        else:
            raise ValueError(f"shard_map {what} must be a PartitionSpec or a pytree prefix of the values, got {specs}")

    try:
        visit(specs, tree)
    finally:
        visit = None  # (a closure that holds itself and the values: a cycle only the garbage collector would free)
    return out


def _to_shards(x: Any, spec: PartitionSpec, mesh: Mesh) -> Any:
    """``x`` with its split axes cut: (*the mesh axes it is split over, in mesh order, *the shard's shape)."""
    sizes = mesh.shape
    shape = list(x.shape)
    if len(spec) > len(shape):
        raise ValueError(f"shard_map: PartitionSpec {spec} has more entries than the array has axes ({len(shape)})")
    cut, owner = [], []  # the shape after cutting, and per cut axis the mesh axis it follows (or None)
    for a, n in enumerate(shape):
        names = _names(spec[a]) if a < len(spec) else ()
        parts = int(np.prod([sizes[m] for m in names], dtype=np.int64)) if names else 1
        if n % parts:
            raise ValueError(f"shard_map: axis {a} of size {n} does not divide into {parts} parts ({spec})")
        cut += [sizes[m] for m in names] + [n // parts]
        owner += list(names) + [None]
    x = jnp.reshape(x, tuple(cut))
    order = [owner.index(m) for m in mesh.axis_names if m in owner] + [i for i, o in enumerate(owner) if o is None]
    return jnp.transpose(x, tuple(order))


def _from_shards(x: Any, spec: PartitionSpec, mesh: Mesh) -> Any:
    """The inverse of ``_to_shards`` for a result: its leading axes are the mesh axes the spec names (mesh order)."""
    sizes = mesh.shape
    named = [m for m in mesh.axis_names if any(m in _names(entry) for entry in spec)]
    lead, local = len(named), x.ndim - len(named)
    order, shape = [], []
    for a in range(local):
        names = _names(spec[a]) if a < len(spec) else ()
        order += [named.index(m) for m in names] + [lead + a]
        shape.append(int(np.prod([sizes[m] for m in names], dtype=np.int64)) * x.shape[lead + a])
    return jnp.reshape(jnp.transpose(x, tuple(order)), tuple(shape))
