"""Batching: ``vmap_function(fn, in_dims, size)`` is an IR function computing ``fn`` on a whole batch at once.

The engine walks the IR with a map old value -> (new value, batch axis or None) and asks each primitive's
batching rule for its batched form; values that do not depend on a batched input stay unbatched. Op rules
(control flow in ``primitives/control_vmap.py``, custom calls in ``custom.py``, collectives over the
batch's named axis in ``collectives.py``) are given the engine itself, and are called whether or not an
operand is batched (``axis_index`` has none, and still differs between examples).
"""

from __future__ import annotations

from typing import Any, Sequence

from srcjax.transpiler.builder import Builder
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.passes import clean
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.ad import aval_of
from srcjax.transpiler.primitives.batching import batched_aval, batching_devices, bdim_at_front, moveaxis
from srcjax.transpiler.primitives.core import registered


class Batcher:
    """The engine (``primitives/engine.py``'s ``BatchEngine``)."""

    def __init__(self, builder: Builder, size: int, axis_name: Any, devices: bool = False):
        self.builder, self.size, self.axis_name = builder, size, axis_name
        self.devices = devices  # the batch is pmap's devices (``batching.over_devices``)
        self.env: dict[int, tuple[Any, int | None]] = {}
        self.masks: list[Any] = []  # per example (bool, (size,)): whether the code being batched runs for it

    def read(self, v: Value) -> tuple[Any, int | None]:
        if isinstance(v, Literal):
            return v, None
        return self.env[id(v)]

    def write(self, old: Value, new: Any, dim: int | None) -> None:
        if isinstance(new, Value) and new.name is None and old.name is not None:
            new.name = old.name
        self.env[id(old)] = (new, dim)

    def at_front(self, x: Any, dim: int | None) -> Any:
        return bdim_at_front(x, dim, self.size)

    def block(self, block: Block) -> None:
        for op in block.ops:
            with self.builder.at(op.loc):
                self.op(op)

    def op(self, op: Op) -> None:
        prim = op.prim
        if "vmap" in prim.op_rules:
            if prim.vmap_rule is None:
                raise prim.rule_error("vmap")
            prim.vmap_rule(self, op)
            return
        args, dims = zip(*(self.read(v) for v in op.operands)) if op.operands else ((), ())
        if all(d is None for d in dims):
            outs = prim.bind(*args, **op.params)
            for r, o in zip(op.results, outs if prim.multiple_results else [outs]):
                self.write(r, o, None)
            return
        if prim.vmap_rule is None:
            raise prim.rule_error("vmap")
        with batching_devices(self.devices):
            out, out_dim = prim.vmap_rule(list(args), list(dims), **op.params)
        if prim.multiple_results:
            for r, o, d in zip(op.results, out, out_dim):
                self.write(r, o, d)
        else:
            self.write(op.results[0], out, out_dim)

    def region_yields(self, block: Block, params: Sequence[Value], new_params: Sequence[Any],
                      dims: Sequence[int | None]) -> tuple[list[Any], list[int | None]]:
        for p, new, d in zip(params, new_params, dims):
            self.write(p, new, d)
        self.block(block)
        read = [self.read(r) for r in block.results]
        return [v for v, _ in read], [d for _, d in read]


def vmap_function(fn: Function, in_dims: Sequence[int | None], size: int, axis_name: Any = None,
                  out_dims: Sequence[int | None] | None = None, devices: bool = False,
                  unmapped_first: bool = False) -> Function:
    """``fn`` over a batch of ``size``: param i is batched along ``in_dims[i]`` (``None``: shared). Each
    result is batched along ``out_dims[i]`` (default 0; ``None`` only for results that are not batched, or with
    ``unmapped_first``, the first example's). ``devices``: the batch is pmap's devices."""
    builder = Builder(f"vmap_{fn.name}", fn.source)
    batcher = Batcher(builder, size, axis_name, devices)
    for p, d in zip(fn.params, in_dims):
        new = builder.param(batched_aval(p.aval, d, size), p.name)
        batcher.write(p, new, d)
    with core.interpreting(builder):
        for value, data in fn.consts:
            batcher.write(value, builder.constant(value, data), None)
        batcher.block(fn.body)
        outs = []
        wanted = list(out_dims) if out_dims is not None else [0] * len(fn.results)
        for r, want in zip(fn.results, wanted):
            v, d = batcher.read(r)
            if want is None:
                if d is not None and size != 1 and not unmapped_first:
                    raise ValueError("vmap has mapped output but out_axes is None")
                if d is not None:  # (a batch of one is its example: a rule may leave it batched to spare a copy)
                    shape = aval_of(v).shape
                    if size != 1:  # (pmap's: its first device's, unchecked, as JAX's)
                        v = registered("slice").bind(v, start_indices=(0,) * len(shape), limit_indices=shape[:d] + (
                            1,) + shape[d + 1:], strides=None)
                    v = registered("reshape").bind(v, new_sizes=shape[:d] + shape[d + 1:], dimensions=None)
                outs.append(v)
                continue
            v = bdim_at_front(v, d, size)
            outs.append(moveaxis(v, 0, want) if want != 0 else v)
        return clean(builder.finish(outs))


__all__ = ["vmap_function", "Batcher"]
