"""Collectives over named axes: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``axis_index``.

A named axis exists while a ``vmap``/``pmap`` with that ``axis_name`` is being traced; the axis
environment records each name's size (``all_gather`` and ``axis_index`` need it for their shapes). The
batching engine gives them meaning along its own axis; bound to no axis, they are an error.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType

_axis_env: list[tuple[Any, int]] = []


@contextlib.contextmanager
def named_axis(name: Any, size: int) -> Iterator[None]:
    _axis_env.append((name, size))
    try:
        yield
    finally:
        _axis_env.pop()


def axis_size(name: Any) -> int:
    for bound, size in reversed(_axis_env):
        if bound == name:
            return size
    available = [n for n, _ in _axis_env]
    raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by vmap or pmap) are "
                    f"available to collective operations: {available}")


def _unbound(name: str):
    def impl(*args, **params):
        axes = params.get("axes", params.get("axis_name"))
        raise NameError(f"unbound axis name: {axes}: {name} needs an enclosing vmap or pmap with that axis_name")

    return impl


def _reduction(name: str) -> Primitive:
    prim = Primitive(name, params=("axes",))

    def shape_rule(x: TensorType, *, axes) -> TensorType:
        check(x.dtype.kind in "biufc", name, f"does not accept {x.dtype.name} operands")
        return x

    prim.def_shape(shape_rule)
    prim.def_impl(_unbound(name))
    prim.mark_no_rule("vmap", "batched by the vmap engine along its named axis")
    return prim


psum_p = _reduction("psum")
pmean_p = _reduction("pmean")
pmax_p = _reduction("pmax")
pmin_p = _reduction("pmin")
psum_p.def_linear(lambda ct, x, *, axes: [psum_p.bind(ct, axes=axes)])
pmean_p.def_linear(lambda ct, x, *, axes: [pmean_p.bind(ct, axes=axes)])
for _p in (pmax_p, pmin_p):
    _p.mark_no_rule("jvp", "the derivative of a max over devices is not defined here")
    _p.mark_no_rule("transpose", "not linear")

all_gather_p = Primitive("all_gather", params=("axes", "axis_size"))


@all_gather_p.def_shape
def _all_gather_shape(x: TensorType, *, axes, axis_size: int) -> TensorType:
    return x.update(shape=(axis_size, *x.shape))


all_gather_p.def_impl(_unbound("all_gather"))
all_gather_p.mark_no_rule("vmap", "batched by the vmap engine along its named axis")
all_gather_p.mark_no_rule("jvp", "not differentiated in this version")
all_gather_p.mark_no_rule("transpose", "not differentiated in this version")

axis_index_p = Primitive("axis_index", params=("axis_name",))
axis_index_p.def_shape(lambda *, axis_name: TensorType(np.int32, ()))
axis_index_p.def_impl(_unbound("axis_index"))
axis_index_p.always_record = True
axis_index_p.mark_no_rule("vmap", "batched by the vmap engine along its named axis")
axis_index_p.mark_no_rule("jvp", "an integer-valued index has no derivative")
axis_index_p.mark_no_rule("transpose", "not linear")

register_module(globals())
