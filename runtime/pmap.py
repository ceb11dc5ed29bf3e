"""``pmap``: a function mapped over the leading axis of its arguments, one replica per device, with collectives
(``psum``, ``all_gather``, ...) over the named axis.

Called on arrays, a ``pmap`` is compiled once per signature: the function is read for one replica with the
axis named (``collectives.named_axis``) and mapped as ``vmap`` maps it (the collectives' batching rules give them
their meaning along the mapped axis); the result is laid out over the devices as JAX lays out pmap's results
(``sharding.pmap_sharding``). Called inside a transformation or a compiled function (``grad`` of a pmap, a pmap
inside ``jit``, nested pmaps), it is that ``vmap``: the transformations compose through it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from srcjax.runtime import devices as device_api
from srcjax.runtime import tree_util
from srcjax.runtime.api import jit
from srcjax.runtime.array import Array
from srcjax.runtime.sharding import PMAP_AXIS, NamedSharding, PartitionSpec, pmap_sharding
from srcjax.runtime.vmap import _broadcast_prefix, vmap
from srcjax.transpiler.primitives import core


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Sequence[Any] | None = None,
         backend: str | None = None, axis_size: int | None = None, donate_argnums: int | Sequence[int] = (),
         global_arg_shapes: Any = None) -> Callable:
    """Map ``fun`` over axis ``in_axes`` of its arguments, one replica per device."""
    if not callable(fun):
        raise TypeError(f"pmap expects a callable, got {type(fun).__name__}")
    if backend not in (None, "cpu"):
        raise ValueError(f"pmap: backend '{backend}' is not available (this build of srcjax has: cpu)")
    if global_arg_shapes is not None:
        raise ValueError("pmap: global_arg_shapes is not supported (JAX removed it too)")
    return Pmapped(fun, axis_name, in_axes, out_axes, _ints(static_broadcasted_argnums), devices, axis_size,
                   _ints(donate_argnums))


def _ints(x: int | Sequence[int]) -> tuple[int, ...]:
    return (x,) if isinstance(x, int) else tuple(x)


class Pmapped:
    """``pmap(fun, ...)``: callable like ``fun``, over arrays with a leading (``in_axes``) device axis."""

    def __init__(self, fun: Callable, axis_name: Any, in_axes: Any, out_axes: Any, static: tuple[int, ...],
                 devices: Sequence[Any] | None, axis_size: int | None, donate: tuple[int, ...]):
        self.fun, self.axis_name, self.in_axes, self.out_axes = fun, axis_name, in_axes, out_axes
        self.static, self.devices, self.axis_size, self.donate = static, devices, axis_size, donate
        self._compiled: dict[int, Callable] = {}  # by the number of replicas
        functools.update_wrapper(self, fun, updated=())

    def _axes(self, n_args: int) -> Any:
        """``in_axes`` over the positional arguments, None (broadcast) for the static ones."""
        if self.in_axes is None or isinstance(self.in_axes, int):
            axes = [self.in_axes] * n_args
        else:
            axes = list(self.in_axes)
            if len(axes) != n_args:
                raise ValueError(f"pmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                                 f"positional arguments passed to the function, but got len(in_axes)={len(axes)}, "
                                 f"len(args)={n_args}")
        for i in self.static:
            if not -n_args <= i < n_args:
                raise ValueError(f"pmap: static_broadcasted_argnums {i} is out of range for {n_args} arguments")
            axes[i % n_args] = None
        return tuple(axes)

    def _mapped(self, n_args: int, size: int | None) -> Callable:
        return vmap(self.fun, in_axes=self._axes(n_args), out_axes=self.out_axes, axis_name=self.axis_name,
                    axis_size=size)

    def __call__(self, *args: Any) -> Any:
        if core.current_interpreter() is not core.base_interpreter():
            # inside a transformation or a compiled function: the mapped function itself
            return self._mapped(len(args), self.axis_size)(*args)
        size = self._size(args)
        available = list(self.devices) if self.devices is not None else device_api.local_devices()
        if size > len(available):
            raise ValueError(f"compiling computation that requires {size} logical devices, but only "
                             f"{len(available)} XLA devices are available (num_replicas={size})")
        call = self._compiled.get((len(args), size))
        if call is None:
            static = tuple(i % len(args) for i in self.static)
            call = self._compiled[(len(args), size)] = jit(self._mapped(len(args), size), static_argnums=static,
                                                           donate_argnums=self.donate)
        out = call(*args)
        return self._place(out, available[:size], {id(leaf) for leaf in tree_util.tree_leaves(args)})

    def _size(self, args: Sequence[Any]) -> int:
        """The number of replicas: the mapped axes' common size (or ``axis_size``)."""
        axes = self._axes(len(args))
        sizes = set()
        for arg, axis in zip(args, axes):
            if axis is None:
                continue
            for leaf in tree_util.tree_leaves(arg):
                shape = getattr(leaf, "shape", None)
                if shape is None or not len(shape):
                    raise ValueError(f"pmap got a value of shape {shape} to map over axis {axis}: mapped arguments "
                                     "need that axis")
                sizes.add(shape[axis])
        if len(sizes) > 1:
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: {sorted(sizes)}")
        if not sizes:
            if self.axis_size is None:
                raise ValueError("pmap requires at least one argument with a mapped axis, or axis_size")
            return int(self.axis_size)
        return sizes.pop()

    def _place(self, out: Any, placed: list[Any], inputs: set[int]) -> Any:
        """The results laid out over the devices: the mapped axis (``out_axes``) split over them, the others
        replicated. (A result that is an argument itself is a new Array over its buffer.)"""
        leaves, tree = tree_util.tree_flatten(out)
        axes = _broadcast_prefix(self.out_axes, out, "out_axes")
        mesh = pmap_sharding(placed).mesh
        placed_leaves = []
        for leaf, axis in zip(leaves, axes):
            if isinstance(leaf, Array):
                if id(leaf) in inputs:
                    leaf = Array(leaf._value, leaf.weak_type)
                spec = PartitionSpec() if axis is None else PartitionSpec(*([None] * (axis % leaf.ndim)), PMAP_AXIS)
                leaf._device = NamedSharding(mesh, spec)
            placed_leaves.append(leaf)
        return tree_util.tree_unflatten(tree, placed_leaves)
