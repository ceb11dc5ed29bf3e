"""Collectives across processes: the step a pmap's collective takes when its devices span several processes.

Within one process, the devices of a pmap are the batch axis of one program (or replicas on threads); a
collective over that axis is an array operation along it (``collectives.py``). When ``distributed.initialize``
has joined several processes, the pmap's axis runs over every process's devices, process by process, and each
collective adds one of these primitives to the local operation: ``process_allreduce`` after the local reduction,
``process_allgather`` after the local batch, and so on. Their implementations call the engine the runtime
installs (``use_engine``: MPI's collectives on the NumPy buffers); compiled code reaches them as host calls.

Each is linear or a selection, with rules as their in-process counterparts: the transpose of an all-reduce sum
is itself, of an all-gather a reduce-scatter and back, of an all-to-all itself, of a permutation its inverse.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import srcjax.transpiler.primitives.elementwise as ew
from srcjax.transpiler.primitives.ad import aval_of, defjvp2
from srcjax.transpiler.primitives.batching import moveaxis
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType

# the engine of the processes this one belongs to: (engine, this process's index, process count)
_world: tuple[Any, int, int] = (None, 0, 1)


def use_engine(engine: Any, index: int, count: int) -> None:
    """Installed by ``distributed.initialize``: the engine whose ``allreduce``/``allgather``/``reduce_scatter``/
    ``alltoall``/``sendrecv`` the primitives below call."""
    global _world
    _world = (engine, index, count)


def process_index() -> int:
    return _world[1]


def process_count() -> int:
    return _world[2]


def _engine(name: str) -> Any:
    engine = _world[0]
    if engine is None:
        raise RuntimeError(f"{name}: this process is not joined to others (srcjax.distributed.initialize)")
    return engine


# -- all-reduce --------------------------------------------------------------------------------------------------------
process_allreduce_p = Primitive("process_allreduce", params=("op",))


@process_allreduce_p.def_shape
def _allreduce_shape(x: TensorType, *, op: str) -> TensorType:
    check(op in ("sum", "max", "min"), "process_allreduce", f"unknown reduction {op!r}")
    return x


process_allreduce_p.def_impl(lambda x, *, op: _engine("psum").allreduce(np.asarray(x), op))
process_allreduce_p.impl_into = lambda outs, x, *, op: _engine("psum").allreduce(np.asarray(x), op, out=outs[0])
process_allreduce_p.always_record = True  # (a concrete operand too: the result depends on the other processes)


def _allreduce_jvp(g: Any, ans: Any, x: Any, *, op: str) -> Any:
    if op == "sum":
        return process_allreduce_p.bind(g, op="sum")
    # max/min: the mean of the tangents of the processes holding the extremum, as pmax's in-process rule
    mask = ew.convert_element_type_p.bind(ew.eq_p.bind(x, ans), new_dtype=aval_of(g).dtype, weak_type=False)
    return ew.div_p.bind(process_allreduce_p.bind(ew.mul_p.bind(g, mask), op="sum"),
                         process_allreduce_p.bind(mask, op="sum"))


defjvp2(process_allreduce_p, _allreduce_jvp)


def _allreduce_transpose(ct: Any, x: Any, *, op: str) -> list[Any]:
    check(op == "sum", "process_allreduce", f"an all-reduce {op} is not linear")
    return [process_allreduce_p.bind(ct, op="sum")]


process_allreduce_p.def_transpose(_allreduce_transpose)
process_allreduce_p.def_vmap(lambda args, dims, *, op: (process_allreduce_p.bind(args[0], op=op), dims[0]))

# -- all-gather and reduce-scatter: along a new (resp. the) leading axis, one block per process ------------------------
process_allgather_p = Primitive("process_allgather")
process_reduce_scatter_p = Primitive("process_reduce_scatter")


@process_allgather_p.def_shape
def _allgather_shape(x: TensorType) -> TensorType:
    return x.update(shape=(process_count(), *x.shape))


@process_reduce_scatter_p.def_shape
def _reduce_scatter_shape(x: TensorType) -> TensorType:
    check(x.ndim >= 1 and x.shape[0] == process_count(), "process_reduce_scatter",
          f"expects one block per process along axis 0, got shape {x.shape} for {process_count()} processes")
    return x.update(shape=x.shape[1:])


process_allgather_p.def_impl(lambda x: _engine("all_gather").allgather(np.asarray(x)))
process_reduce_scatter_p.def_impl(lambda x: _engine("psum_scatter").reduce_scatter(np.asarray(x)))
for _p in (process_allgather_p, process_reduce_scatter_p):
    _p.always_record = True
process_allgather_p.def_linear(lambda ct, x: [process_reduce_scatter_p.bind(ct)])
process_reduce_scatter_p.def_linear(lambda ct, x: [process_allgather_p.bind(ct)])
process_allgather_p.def_vmap(lambda args, dims: (process_allgather_p.bind(args[0]), dims[0] + 1))
process_reduce_scatter_p.def_vmap(lambda args, dims: (process_reduce_scatter_p.bind(_behind_blocks(*args, *dims)), 0))


def _behind_blocks(x: Any, dim: int) -> Any:
    """A batched operand of a block-wise primitive with its batch axis second, behind the blocks' axis."""
    return moveaxis(x, dim, 1) if dim != 1 else x


# -- all-to-all: block j (leading axis) goes to process j --------------------------------------------------------------
process_alltoall_p = Primitive("process_alltoall")


@process_alltoall_p.def_shape
def _alltoall_shape(x: TensorType) -> TensorType:
    check(x.ndim >= 1 and x.shape[0] == process_count(), "process_alltoall",
          f"expects one block per process along axis 0, got shape {x.shape} for {process_count()} processes")
    return x


process_alltoall_p.def_impl(lambda x: _engine("all_to_all").alltoall(np.asarray(x)))
process_alltoall_p.always_record = True
process_alltoall_p.def_linear(lambda ct, x: [process_alltoall_p.bind(ct)])  # (applied twice, the identity)
process_alltoall_p.def_vmap(lambda args, dims: (process_alltoall_p.bind(_behind_blocks(*args, *dims)), 1))

# -- permutation of devices: rows of the local batch sent to other processes' rows -------------------------------------
process_permute_p = Primitive("process_permute", params=("perm", "local"))


@process_permute_p.def_shape
def _permute_shape(x: TensorType, *, perm: tuple[tuple[int, int], ...], local: int) -> TensorType:
    check(x.ndim >= 1 and x.shape[0] == local, "process_permute",
          f"expects this process's {local} devices along axis 0, got shape {x.shape}")
    return x


def _permute_impl(x: Any, *, perm: tuple[tuple[int, int], ...], local: int) -> np.ndarray:
    """Row ``s % local`` of process ``s // local`` becomes row ``d % local`` of process ``d // local``, for each
    ``(s, d)`` of ``perm`` (global device indices); rows nothing is sent to are zeros."""
    x = np.ascontiguousarray(x)
    out = np.zeros_like(x)
    me = _world[1]
    sends = [(s % local, d // local, d % local) for s, d in perm if s // local == me]
    receives = [(s // local, s % local, d % local) for s, d in perm if d // local == me]
    for row, process, to in sends:
        if process == me:
            out[to] = x[row]
    remote_sends = [(row, process, to) for row, process, to in sends if process != me]
    remote_receives = [(process, row, to) for process, row, to in receives if process != me]
    if remote_sends or remote_receives:
        _engine("ppermute").exchange(x, out, remote_sends, remote_receives)
    return out


process_permute_p.def_impl(_permute_impl)
process_permute_p.always_record = True


def _inverse(perm: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    return tuple((d, s) for s, d in perm)


process_permute_p.def_linear(lambda ct, x, *, perm, local: [process_permute_p.bind(ct, perm=_inverse(perm),
                                                                                      local=local)])
process_permute_p.def_vmap(lambda args, dims, *, perm, local: _permute_batched(args[0], dims[0], perm, local))


def _permute_batched(x: Any, dim: int, perm: Any, local: int) -> tuple[Any, int]:
    """A vmap inside the pmap: the devices' axis stays first, the new batch axis rides along behind it."""
    x = moveaxis(x, dim, 1) if dim != 1 else x
    return process_permute_p.bind(x, perm=perm, local=local), 1


register_module(globals())
