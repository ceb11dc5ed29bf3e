"""The mesh in context (``set_mesh``, ``get_mesh``, ``get_abstract_mesh``) and moving arrays between layouts
(``reshard``, ``auto_axes``, ``explicit_axes``), as ``jax.sharding`` has them.

The virtual CPU devices share the host's memory, so a layout changes no value: ``reshard`` returns an Array laid
out as asked (its ``sharding``; ``typeof(x).sharding`` names its ``Explicit`` axes) with the same data. Layouts are
recorded on Arrays, not propagated through computations (README, "differences"): inside ``jit`` a value has no
layout of its own, and a result that is a ``reshard``'s is laid out as the ``reshard`` says.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import numpy as np

from srcjax.runtime import tree_util
from srcjax.runtime.sharding import AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec
from srcjax.transpiler.types import TensorType

EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


class _Context(threading.local):
    """This thread's mesh: the concrete one ``set_mesh`` gave, and the abstract one (its axis types may differ
    inside ``auto_axes``/``explicit_axes``)."""

    def __init__(self) -> None:
        self.mesh: Mesh | None = None
        self.abstract: AbstractMesh = EMPTY_ABSTRACT_MESH


_CONTEXT = _Context()


class set_mesh:  # noqa: N801 - JAX's name
    """Make ``mesh`` the mesh in context, at once (``jax.set_mesh(mesh)``) or for a ``with`` block, after which
    the previous one is back. Under it a bare ``PartitionSpec`` stands for ``NamedSharding(mesh, spec)``."""

    __slots__ = ("_previous",)

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        _outside_jit("set_mesh")
        if mesh is not None and AxisType.Manual in mesh.axis_types:
            raise ValueError(f"mesh {mesh} contains manual axes which is not allowed when using `jax.set_mesh`. "
                             "Please use `jax.shard_map` to enter into `Manual` mode instead.")
        self._previous = (_CONTEXT.mesh, _CONTEXT.abstract)
        _CONTEXT.mesh = mesh
        _CONTEXT.abstract = EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        _CONTEXT.mesh, _CONTEXT.abstract = self._previous
        return False


class use_abstract_mesh:  # noqa: N801 - JAX's name
    """``with use_abstract_mesh(mesh):`` makes ``get_abstract_mesh()`` give ``mesh`` inside the block."""

    def __init__(self, mesh: AbstractMesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got {type(mesh)}")
        self.mesh = mesh

    def __enter__(self) -> None:
        self._previous = _CONTEXT.abstract
        _CONTEXT.abstract = self.mesh

    def __exit__(self, *exc: Any) -> bool:
        _CONTEXT.abstract = self._previous
        return False


def get_abstract_mesh() -> AbstractMesh:
    """The mesh in context, without devices (an empty ``AbstractMesh`` when there is none)."""
    return _CONTEXT.abstract


def get_mesh() -> Mesh:
    """The concrete mesh ``set_mesh`` put in context (an empty ``Mesh`` when there is none); not inside ``jit``."""
    if _tracing():
        raise ValueError("`get_mesh` can only be used outside of `jax.jit`. Maybe you want "
                         "`jax.sharding.get_abstract_mesh()`?")
    return _CONTEXT.mesh if _CONTEXT.mesh is not None else Mesh(np.empty((0,), dtype=object), ())


def _tracing() -> bool:
    from srcjax.transpiler.primitives import core

    return core.current_interpreter() is not core.base_interpreter()


def _outside_jit(name: str) -> None:
    if _tracing():
        raise ValueError(f"`{name}` can only be used outside of `jax.jit`.")


def struct_sharding(sharding: Any) -> Any:
    """``ShapeDtypeStruct``'s ``sharding``: a Sharding, or a PartitionSpec over the mesh in context, or None."""
    from srcjax.runtime.sharding_base import Sharding

    if sharding is None or isinstance(sharding, Sharding):
        return sharding
    if isinstance(sharding, PartitionSpec):
        if _CONTEXT.mesh is None:
            raise TypeError("When specifying PartitionSpec to `ShapeDtypeStruct`, the context mesh cannot be empty. "
                            "Please use `jax.set_mesh` to set the mesh context.")
        return NamedSharding(_CONTEXT.mesh, sharding)
    raise ValueError("sharding should be an instance of `jax.sharding.Sharding`, `jax.sharding.PartitionSpec` or "
                     f"`jax.experimental.layout.Format`. Got {sharding} of type {type(sharding)}.")


def _normalized(spec: PartitionSpec, ndim: int, sharding: Any) -> PartitionSpec:
    """``spec`` with one entry per array axis (JAX pads with None; entries past the rank must be None)."""
    if len(spec) > ndim and any(entry is not None for entry in spec[ndim:]):
        raise ValueError(f"Sharding {sharding} is only valid for values of rank at least {len(spec)}, but was "
                         f"applied to a value of rank {ndim}.")
    return PartitionSpec(*spec[:ndim], *(None,) * (ndim - len(spec)))


def _target(sharding: Any, api: str) -> NamedSharding:
    """Where ``reshard`` lays a value out: a NamedSharding over a concrete mesh, its named axes ``Explicit``."""
    if sharding is None or (isinstance(sharding, NamedSharding) and sharding.mesh.empty):
        raise ValueError("Reshard should only be used with out_shardings which are non-None and have a non-empty "
                         f"mesh. Got sharding {sharding}.")
    if not isinstance(sharding, (NamedSharding, PartitionSpec)):
        raise TypeError(f"`out_sharding` argument of {api} only supports instances of `NamedSharding` or "
                        f"`PartitionSpec`. Got {sharding} of type: {type(sharding)}")
    abstract = _CONTEXT.abstract
    if isinstance(sharding, PartitionSpec):
        if abstract.empty:
            raise ValueError("Using PartitionSpec when you are not under a mesh context is not allowed. Please pass "
                             "a NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got "
                             f"{sharding!r}")
        sharding = NamedSharding(_concrete_mesh(abstract), sharding)
    elif isinstance(sharding.mesh, AbstractMesh):
        sharding = NamedSharding(_concrete_mesh(sharding.mesh), sharding.spec, memory_kind=sharding.memory_kind)
    types = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_types))
    for name in (n for entry in sharding.spec for n in sharding._axes_of(entry)):
        if types[name] != AxisType.Explicit:
            raise ValueError(f"PartitionSpec passed to {api} cannot contain axis names that are of type Auto or "
                             f"Manual. Got PartitionSpec: {sharding.spec!r} with axis name: {name} of type: "
                             f"AxisType.{types[name].name}.")
    return sharding


def _concrete_mesh(abstract: AbstractMesh) -> Mesh:
    """The devices of the mesh in context, under ``abstract``'s axis types."""
    mesh = _CONTEXT.mesh
    if mesh is None or mesh.axis_names != abstract.axis_names or mesh.axis_sizes != abstract.axis_sizes:
        raise ValueError(f"reshard: the mesh {abstract} has no devices in context; pass a NamedSharding over a "
                         "`jax.sharding.Mesh`, or enter its mesh with `jax.set_mesh`")
    return mesh if mesh.axis_types == abstract.axis_types else Mesh(mesh.devices, mesh.axis_names, abstract.axis_types)


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``xs`` (a pytree) laid out as ``out_shardings`` says (a NamedSharding or PartitionSpec, or a pytree prefix of
    them); the values are unchanged."""
    leaves, tree = tree_util.tree_flatten(xs)
    return tree_util.tree_unflatten(tree, [_reshard_leaf(x, s) for x, s in zip(leaves, _per_leaf(out_shardings, xs))])


def _per_leaf(shardings: Any, xs: Any) -> list:
    """The sharding of each leaf of ``xs``, from a pytree prefix of them."""
    is_target = lambda s: s is None or isinstance(s, (NamedSharding, PartitionSpec))  # noqa: E731
    if is_target(shardings):
        return [shardings] * len(tree_util.tree_leaves(xs))
    targets: list = []
    try:
        tree_util.tree_map(lambda s, part: targets.extend([s] * len(tree_util.tree_leaves(part))), shardings, xs,
                           is_leaf=is_target)
    except ValueError as error:
        raise ValueError(f"reshard out_shardings specification must be a tree prefix of the values: {error}") from None
    return targets


def _reshard_leaf(x: Any, sharding: Any) -> Any:
    from srcjax.runtime.array import Array
    from srcjax.runtime.devices import _check_layout
    from srcjax.runtime.eager import to_array
    from srcjax.transpiler.ir import Value
    from srcjax.transpiler.primitives import core

    target = _target(sharding, "reshard")
    shape = x.aval.shape if isinstance(x, Value) else np.shape(x)
    spec = _normalized(target.spec, len(shape), target)
    if all(t == AxisType.Auto for t in target.mesh.axis_types):  # (the compiler's layout, replicated: JAX spells it
        spec = PartitionSpec()                                    # P(), as no Auto axis may be named here)
    target = target.update(spec=spec)
    _check_layout(target, shape)
    if isinstance(x, Value):  # (the value is the same; a compiled function's result made here is laid out so)
        function = getattr(core.current_interpreter(), "function", None)
        if function is not None:
            function.result_shardings[id(x)] = (x, target)
        return x
    arr = to_array(np.array(x) if isinstance(x, np.ndarray) else x, "reshard")
    return Array(arr._value, arr.weak_type, target)


def _mesh_for(axes: Any, axis_type: AxisType, api: str, shardings: Any = None) -> AbstractMesh | None:
    """The mesh in context (or the shardings' own) with ``axes`` (None: all of them) made ``axis_type``."""
    current = _CONTEXT.abstract
    theirs = EMPTY_ABSTRACT_MESH
    for s in tree_util.tree_leaves(shardings, is_leaf=lambda s: isinstance(s, (NamedSharding, PartitionSpec))):
        if isinstance(s, NamedSharding):
            if not theirs.empty and theirs != s.mesh.abstract_mesh:
                raise ValueError(f"Shardings passed to {api} should have the same mesh. Got one mesh {theirs} and "
                                 f"another {s.mesh}")
            theirs = s.mesh.abstract_mesh
    if theirs.empty and current.empty:
        return None
    if not theirs.empty and not current.empty and theirs != current:
        raise ValueError(f"Context mesh {current} must match the mesh passed to shardings {theirs}. Recommended "
                         "approach is to use `jax.set_mesh` context manager.")
    mesh = current if not current.empty else theirs
    axes = mesh.axis_names if axes is None else axes if isinstance(axes, tuple) else (axes,)
    for name in axes:
        if name not in mesh.axis_names:
            raise ValueError(f"{api}: axis {name!r} is not an axis of the mesh {mesh}")
        if dict(zip(mesh.axis_names, mesh.axis_types))[name] == AxisType.Manual:
            raise NotImplementedError("Going from `Manual` AxisType to `Auto` or `Explicit` AxisType is not allowed.")
    return mesh.update_axis_types({name: axis_type for name in axes})


def auto_axes(f: Callable | None = None, /, *, axes: Any = None, out_sharding: Any = None) -> Callable:
    """``f`` run with the mesh axes ``axes`` (None: every axis) made ``Auto`` (the compiler's to lay out), its
    results laid out as ``out_sharding`` says (given here, or as the call's keyword ``out_sharding``)."""
    if f is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        target = out_sharding
        if target is None:
            if "out_sharding" not in kwargs:
                raise TypeError("Missing required keyword argument: 'out_sharding'")
            target = kwargs.pop("out_sharding")
        mesh = _mesh_for(axes, AxisType.Auto, "auto_axes", target)
        current = _CONTEXT.abstract
        already = {n for n, t in zip(current.axis_names, current.axis_types) if t == AxisType.Auto}
        wanted = set(mesh.axis_names if axes is None else axes if isinstance(axes, tuple) else (axes,)) \
            if mesh is not None else set()
        if mesh is None or already == wanted:  # (JAX's test: the axes asked for are the Auto ones already)
            return f(*args, **kwargs)
        with use_abstract_mesh(mesh):
            out = f(*args, **kwargs)
        return reshard(out, target)

    return run


def explicit_axes(f: Callable | None = None, /, *, axes: Any = None, in_sharding: Any = None) -> Callable:
    """``f`` run with the mesh axes ``axes`` (None: every axis) made ``Explicit``, its arguments first laid out as
    ``in_sharding`` says (given here, or as the call's keyword ``in_sharding``); needs a mesh in context."""
    if f is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        target = in_sharding
        if target is None:
            if "in_sharding" not in kwargs:
                raise TypeError("Missing required keyword argument: 'in_sharding'")
            target = kwargs.pop("in_sharding")
        mesh = _mesh_for(axes, AxisType.Explicit, "explicit_axes")
        if mesh is None:
            raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to enter into a mesh "
                             "context when using `explicit_axes` API.")
        with use_abstract_mesh(mesh):
            args = reshard(args, target)
            return f(*args, **kwargs)

    return run


class _Infer:
    def __repr__(self) -> str:
        return "jax.sharding.Infer"


Infer = _Infer()  # (``shard_map``'s and ``smap``'s default: the specs are read from the arguments' layouts)


def inferred_specs(args: tuple, manual_axes: Any, what: str) -> tuple:
    """Per argument (a pytree of specs like it), the spec its layout gives over the mesh axes ``manual_axes``, as
    JAX reads it from the argument's type: the type's spec (its ``Explicit`` axes) with the other axes dropped."""
    from srcjax.runtime.api import abstractify
    from srcjax.transpiler.ir import Value

    def spec(leaf: Any) -> PartitionSpec:
        if isinstance(leaf, Value):  # (JAX would read it from the type its layout propagated to)
            raise TypeError(f"{what} was left out inside a traced function, where srcjax records no layouts to read "
                            "the specs from (README, differences); give it")
        typed_spec = typed(leaf, abstractify(leaf)).sharding.spec
        entries: list[Any] = []
        for entry in typed_spec:
            if isinstance(entry, tuple):
                kept = [name if name in manual_axes else None for name in entry]
                while kept and kept[-1] is None:
                    kept.pop()
                if None in kept:
                    raise ValueError(f"Invalid spec: {typed_spec!r}")
                entries.append(tuple(kept) or None)
            else:
                entries.append(entry if entry in manual_axes else None)
        return PartitionSpec(*entries)

    return tuple(tree_util.tree_map(spec, arg) for arg in args)


def check_laid_out(leaves: list, specs: list) -> None:
    """JAX's check when a map is over every axis of an all-``Explicit`` mesh: each argument must already be laid
    out as its spec says (its type says so there). A value inside a traced function records no layout: unchecked."""
    from srcjax.runtime.api import abstractify
    from srcjax.transpiler.ir import Value

    for leaf, spec in zip(leaves, specs):
        if isinstance(leaf, Value) or spec is None:
            continue
        aval = typed(leaf, abstractify(leaf))
        wanted = _normalized(spec, aval.ndim, spec)
        if aval.sharding.spec != wanted:
            raise ValueError(f"in_specs passed to shard_map: {wanted!r} does not match the specs of the input: "
                             f"{aval.sharding.spec!r} for arg: {aval}. `in_specs` is an optional argument so you "
                             "can omit specifying it and shard_map will infer the in_specs from the arguments. If you "
                             "want to reshard your inputs, you can use `jax.reshard` on the arguments and then pass "
                             "those args to shard_map.")


class LaidOutType(TensorType):
    """``typeof(x)``: x's type with ``sharding``, the layout its type records (JAX's ``ShapedArray.sharding``):
    over the abstract mesh of x's layout, naming the ``Explicit`` mesh axes each array axis is split over. An array
    not laid out over a mesh, and a value inside a traced function other than a ``reshard``'s or ``shard_map``'s
    result there (layouts do not propagate), has the unsplit layout over the empty mesh. Equal to the plain type
    of the same shape, dtype and weak bit."""

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TensorType) and (self.dtype, self.shape, self.weak_type) == \
            (other.dtype, other.shape, other.weak_type)

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:  # (JAX's: ``float32[8@x,4]``, weak types marked ``~``)
        return ("~" if self.weak_type else "") + self._text()

    def __repr__(self) -> str:
        return f"ShapedArray({self._text()}{', weak_type=True' if self.weak_type else ''})"

    def _text(self) -> str:
        dims = [str(n) if entry is None else f"{n}@({','.join(entry)})" if isinstance(entry, tuple) else f"{n}@{entry}"
                for n, entry in zip(self.shape, self.sharding.spec)]
        return f"{self.dtype.name}[{','.join(dims)}]"


def traced_layout(value: Any) -> NamedSharding | None:
    """The layout given to ``value`` in the function being traced (by ``reshard``, ``shard_map``), if any."""
    from srcjax.transpiler.primitives import core

    function = getattr(core.current_interpreter(), "function", None)
    entry = function.result_shardings.get(id(value)) if function is not None else None
    return entry[1] if entry is not None and entry[0] is value else None


def typed(x: Any, aval: TensorType) -> LaidOutType:
    """``aval`` with the sharding x's layout gives its type (a traced value's: the one ``traced_layout`` finds)."""
    from srcjax.runtime.array import Array
    from srcjax.transpiler.ir import Value

    out = LaidOutType(aval.dtype, aval.shape, aval.weak_type)
    layout = x._device if isinstance(x, Array) else traced_layout(x) if isinstance(x, Value) else None
    if isinstance(layout, NamedSharding) and isinstance(layout.mesh, Mesh):
        types = dict(zip(layout.mesh.axis_names, layout.mesh.axis_types))
        entries = []
        for entry in _normalized(layout.spec, aval.ndim, layout):
            kept = tuple(name for name in layout._axes_of(entry) if types[name] == AxisType.Explicit)
            entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
        sharding = NamedSharding(layout.mesh.abstract_mesh, PartitionSpec(*entries))
    else:
        sharding = NamedSharding(EMPTY_ABSTRACT_MESH, PartitionSpec(*(None,) * aval.ndim))
    object.__setattr__(out, "sharding", sharding)
    return out
