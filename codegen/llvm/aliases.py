"""Where a plan may write a result over an input's buffer: a donated argument's (``Executable.aliases``, the GPU
executor's), or a loop's carried value that the trip replaces (``control.ControlEmitter.in_place``)."""

from __future__ import annotations

from typing import Any

from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.nodes import GatherLoad, Load, instantiate
from srcjax.codegen.llvm.plan import Gemm, Nest, Plan
from srcjax.transpiler.ir import Function


def _loads_under(node: Any) -> list[Any]:
    """The loads a nest's value is computed from."""
    found, seen, stack = [], set(), [node]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Load):
            found.append(node)
        stack.extend(getattr(node, "operands", ()))
        stack.extend(start for start, _, _ in getattr(node, "starts", None) or ())
    return found


def find_aliases(plan: Plan, fn: Function) -> dict[int, int]:
    """Input index -> output index where ``plan`` may write that output over that input's buffer (see
    ``Executable.aliases``; the GPU's executor asks the same of its plan)."""
    if plan.control or plan.host_ops:
        return {}
    bodies: dict[int, Any] = {}

    def body(k: int):
        if k not in bodies:
            bodies[k] = instantiate(plan, plan.steps[k])
        return bodies[k]

    def reads(k: int, buffer: Buffer) -> bool:
        step = plan.steps[k]
        if isinstance(step, Gemm):
            return buffer in (plan.buffers[id(step.lhs.base)], plan.buffers[id(step.rhs.base)])
        return any(load.buffer is buffer for load in body(k).loads)

    def writes(step, buffer: Buffer) -> bool:
        if isinstance(step, Gemm):
            return step.target is buffer
        return step.target is buffer or any(b is buffer for _, b in step.stores)

    found: dict[int, int] = {}
    for j, out in enumerate(plan.outputs):
        writers = [k for k, step in enumerate(plan.steps) if writes(step, out)]
        if len(writers) != 1:
            continue
        (k,) = writers
        nest = plan.steps[k]
        if not isinstance(nest, Nest) or nest.combine or nest.product or nest.placement:
            continue
        # (a nest computes all its values before it stores any: only the store into ``out`` matters)
        (store,) = [s for s in body(k).stores if s.buffer is out]
        shape = nest.shape

        def where(coeffs: list[int], offset: int, shape=shape) -> tuple[list[int], int]:
            return [c for c, d in zip(coeffs, shape) if d != 1], offset  # (axes of size 1 do not move)

        written = where(store.coeffs, store.offset)
        feeding = _loads_under(store.node)
        result = fn.results[j].aval
        for i, inp in enumerate(plan.inputs):
            param = fn.params[i].aval
            if i in found or (param.shape, param.dtype) != (result.shape, result.dtype):
                continue
            loads = [load for load in body(k).loads if load.buffer is inp]
            # (a gather's load moves with its indices: never in place)
            if any(where(load.coeffs, load.offset) != written or isinstance(load, GatherLoad) for load in loads):
                continue
            # Every read of the input must feed the value stored over it. The nest's buffers are ``noalias``, so
            # LLVM may move a store whose value does not depend on a load ahead of it: a nest storing (a, a.T + b)
            # with b donated to the first result wrote the copy of a as a memcpy before the loop read b.
            if any(load not in feeding for load in loads):
                continue
            if any(reads(later, inp) for later in range(k + 1, len(plan.steps))):
                continue
            found[i] = j
            break
    return found
