"""Structured control flow: ``cond``, ``while``, ``for`` and ``scan`` ops, which hold regions.

They are built by the front end (a Python ``if``/``while``/``for`` on symbolic values) and by the lax
control-flow functions, never through ``bind``. Each declares how its regions must be typed
(``check_regions``, run by the verifier) and how to run it given a way to run a block (``run``, used by
the IR interpreter). Regions may use values of enclosing blocks.

- ``cond %p {A} {B}``: ``p`` bool runs A when true, else B; an integer index picks branch ``clamp(p)``.
  Branches take no parameters and yield values of the op's result types.
- ``while (init...) cond {C} body {B}``: C and B take the carried values; C yields a bool scalar, B the
  next carried values; the results are the final carried values.
- ``for (n, init...) {B}``: B takes the iteration number ``k`` (i32, 0 <= k < n) and the carried values
  and yields the next ones.
- ``scan[length, reverse, num_carry] (init..., xs...) {B}``: B takes the carry and one slice of each xs
  (axis 0) and yields the carry and one slice of each output; the results are the final carry and the
  stacked outputs.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from srcjax.transpiler.primitives.core import Primitive, register_module
from srcjax.transpiler.types import StackType, TensorType

RunBlock = Callable[[Any, Sequence[Any]], list[Any]]


class ControlPrimitive(Primitive):
    """A primitive whose ops hold regions (or, for stacks, cannot be bound): ``run`` and ``check_regions`` replace
    impl and shape rule, and every rule is an op rule, ``rule(engine, op)`` (``primitives/engine.py``). The rules
    live in ``control_jvp.py``, ``control_vjp.py`` and ``control_vmap.py``."""

    def __init__(self, name: str, *, params: Sequence[str] = ()):
        super().__init__(name, params=params, multiple_results=True)
        self.run: Callable[..., list[Any]] | None = None
        self.check_regions: Callable[..., list[str]] | None = None
        self.op_rules = {"jvp", "transpose", "vmap"}

    def abstract_eval(self, *types, **params):
        raise TypeError(f"'{self.name}' ops are built with regions by the front end, not through bind")

    def bind(self, *operands, **params):
        raise TypeError(f"'{self.name}' ops are built with regions by the front end, not through bind")


def _types(values: Sequence[Any]) -> list[TensorType]:
    return [v.aval for v in values]


def _strong(types: Sequence[TensorType]) -> list[TensorType]:
    return [t.strong() for t in types]


def _expect(errors: list[str], got: Sequence[TensorType], want: Sequence[TensorType], what: str) -> None:
    if _strong(got) != _strong(want):
        errors.append(f"{what} has types ({', '.join(map(str, got))}), expected ({', '.join(map(str, want))})")


cond_p = ControlPrimitive("cond")


def _cond_check(op) -> list[str]:
    errors: list[str] = []
    (pred,) = op.operands
    if pred.aval.shape != () or pred.aval.dtype.kind not in "biu":
        errors.append(f"cond predicate must be a bool or integer scalar, got {pred.aval}")
    if pred.aval.dtype.kind == "b" and len(op.regions) != 2:
        errors.append(f"a bool cond has 2 branches, got {len(op.regions)}")
    for i, branch in enumerate(op.regions):
        if branch.params:
            errors.append(f"cond branch {i} must take no parameters")
        _expect(errors, _types(branch.results), _types(op.results), f"cond branch {i} yield")
    return errors


def _cond_run(op, operands, run_block: RunBlock) -> list[Any]:
    index = operands[0]
    if op.operands[0].aval.dtype.kind == "b":
        branch = 0 if bool(index) else 1
    else:
        branch = int(np.clip(int(index), 0, len(op.regions) - 1))
    return run_block(op.regions[branch], [])


cond_p.check_regions, cond_p.run = _cond_check, _cond_run

while_p = ControlPrimitive("while")


def _while_check(op) -> list[str]:
    errors: list[str] = []
    cond_block, body = op.regions
    carried = _types(op.operands)
    _expect(errors, _types(cond_block.params), carried, "while condition parameters")
    _expect(errors, _types(body.params), carried, "while body parameters")
    _expect(errors, _types(body.results), carried, "while body yield")
    _expect(errors, _types(op.results), carried, "while results")
    if len(cond_block.results) != 1 or cond_block.results[0].aval.strong() != TensorType(np.bool_, ()):
        errors.append("while condition must yield one bool scalar")
    return errors


def _while_run(op, operands, run_block: RunBlock) -> list[Any]:
    cond_block, body = op.regions
    carried = list(operands)
    while bool(run_block(cond_block, carried)[0]):
        carried = run_block(body, carried)
    return carried


while_p.check_regions, while_p.run = _while_check, _while_run

for_p = ControlPrimitive("for")


def _for_check(op) -> list[str]:
    errors: list[str] = []
    (body,) = op.regions
    trip, *init = op.operands
    if trip.aval.shape != () or trip.aval.dtype.kind not in "iu":
        errors.append(f"for trip count must be an integer scalar, got {trip.aval}")
    carried = _types(init)
    if not body.params or body.params[0].aval.strong() != TensorType(np.int32, ()):
        errors.append("for body's first parameter must be the i32 iteration number")
    _expect(errors, _types(body.params[1:]), carried, "for body parameters")
    _expect(errors, _types(body.results), carried, "for body yield")
    _expect(errors, _types(op.results), carried, "for results")
    return errors


def _for_run(op, operands, run_block: RunBlock) -> list[Any]:
    (body,) = op.regions
    trip, *carried = operands
    for k in range(int(trip)):
        carried = run_block(body, [np.int32(k), *carried])
    return list(carried)


for_p.check_regions, for_p.run = _for_check, _for_run

scan_p = ControlPrimitive("scan", params=("length", "reverse", "num_carry"))


def _scan_check(op) -> list[str]:
    errors: list[str] = []
    (body,) = op.regions
    n, length = op.params["num_carry"], op.params["length"]
    init, xs = op.operands[:n], op.operands[n:]
    for x in xs:
        if not x.aval.shape or x.aval.shape[0] != length:
            errors.append(f"scan input {x.aval} does not have a leading axis of length {length}")
    slices = [t.update(shape=t.shape[1:]) for t in _types(xs)]
    _expect(errors, _types(body.params), _types(init) + slices, "scan body parameters")
    _expect(errors, _types(body.results[:n]), _types(init), "scan body carry")
    ys = [t.update(shape=(length, *t.shape)) for t in _types(body.results[n:])]
    _expect(errors, _types(op.results), _types(init) + ys, "scan results")
    return errors


def _scan_run(op, operands, run_block: RunBlock, stack: Callable[[list[Any]], Any] | None = None) -> list[Any]:
    (body,) = op.regions
    n, length, reverse = op.params["num_carry"], op.params["length"], op.params["reverse"]
    carry, xs = list(operands[:n]), operands[n:]
    outputs: list[list[Any]] = [[] for _ in body.results[n:]]
    for step in range(length):
        i = length - 1 - step if reverse else step
        out = run_block(body, [*carry, *(x[i] for x in xs)])
        carry = out[:n]
        for column, y in zip(outputs, out[n:]):
            column.append(y)
    if reverse:
        outputs = [column[::-1] for column in outputs]
    stacked = [stack(column) if stack else np.stack([np.asarray(y) for y in column]) for column in outputs]
    return [*carry, *stacked]


scan_p.check_regions, scan_p.run = _scan_check, _scan_run

# -- stacks: per-iteration residuals of loops whose trip count is only known at run time ------------------------
# ``stack_new[elem]`` makes an empty stack, ``stack_push %s, %x`` returns it with x on top, ``stack_get %s,
# %k`` reads the k-th pushed value. A stack is used linearly (pushed in a forward loop, read in the backward
# loop), so pushing may extend it in place.
#
# Reverse mode over a derivative that reads a stack makes *cotangent stacks*: ``stack_add %s, %k, %x`` adds x
# to entry k, the stack first growing with zero entries to hold it, and ``stack_get[fill] %s, %k`` reads zeros
# for an entry the stack does not hold. An empty stack is then a stack of zeros of any length, so a cotangent
# stack needs no size up front. Both take ``lanes`` as ``stack_get`` does (one index per example); a negative
# index adds nothing (an example whose loop has stopped).
stack_new_p = ControlPrimitive("stack_new", params=("elem",))
stack_push_p = ControlPrimitive("stack_push")
stack_get_p = ControlPrimitive("stack_get", params=("lanes", "fill"))
stack_size_p = ControlPrimitive("stack_size")
stack_add_p = ControlPrimitive("stack_add", params=("lanes",))


def _stack_check(op) -> list[str]:
    errors: list[str] = []
    types = [v.aval for v in op.operands]
    name = op.prim.name
    if name == "stack_new":
        if op.results[0].aval != StackType(op.params["elem"]):
            errors.append(f"stack_new result must be stack<{op.params['elem']}>")
    elif not types or not isinstance(types[0], StackType):
        errors.append(f"{name} needs a stack operand, got {types[:1]}")
    elif name == "stack_push" and (types[1].strong() != types[0].elem.strong() or op.results[0].aval != types[0]):
        errors.append(f"stack_push of {types[1]} onto {types[0]}")
    elif name == "stack_get" and not op.params.get("lanes") and (
            types[1].shape != () or op.results[0].aval.strong() != types[0].elem.strong()):
        errors.append(f"stack_get of {types[0]} must take an integer index and give {types[0].elem}")
    elif name == "stack_get" and op.params.get("lanes") and (
            not types[1].shape or types[1].shape != types[0].elem.shape[:types[1].ndim]
            or op.results[0].aval.strong() != types[0].elem.strong()):
        errors.append(f"stack_get[lanes] of {types[0]} takes one index per example (the entries' leading axes)")
    elif name == "stack_size" and op.results[0].aval != TensorType(np.int32, ()):
        errors.append("stack_size gives an i32")
    elif name == "stack_add" and (
            len(types) != 3 or types[2].strong() != types[0].elem.strong() or op.results[0].aval != types[0]
            or (types[1].shape != () if not op.params.get("lanes") else
                not types[1].shape or types[1].shape != types[0].elem.shape[:types[1].ndim])):
        errors.append(f"stack_add onto {types[0]} takes an integer index (one per example with lanes) and a "
                      f"{getattr(types[0], 'elem', '?')}")
    return errors


def _stack_new_run(op, operands, run_block) -> list[Any]:
    return [[]]


def _stack_push_run(op, operands, run_block) -> list[Any]:
    stack, x = operands
    stack.append(x)
    return [stack]


def _lane_rows(k: Any, entry_shape: tuple) -> tuple[np.ndarray, tuple[int, ...]]:
    """With ``lanes``: the flat indices, one per example, and the shape of an entry as rows of examples."""
    k = np.asarray(k).reshape(-1)
    return k, (k.size, int(np.prod(entry_shape, dtype=np.int64)) // max(k.size, 1))


def stack_read(stack: list, k: Any, shape: tuple | None, dtype: Any, lanes: bool = False) -> Any:
    """``stack_get[fill]``: entry k of a cotangent stack, zeros where it holds none (the interpreter's and the
    generated Python's); ``shape`` None: the entries are stacks, an empty one where it holds none."""
    if shape is None:
        if lanes:
            raise NotImplementedError("per-example reads of a cotangent stack of stacks")
        return stack[int(k)] if 0 <= int(k) < len(stack) else []
    zeros = np.zeros(shape, dtype)
    if not lanes:
        return np.asarray(stack[int(k)]) if 0 <= int(k) < len(stack) else zeros
    flat, rows = _lane_rows(k, shape)
    out = zeros.reshape(rows)
    for b, i in enumerate(flat):
        if 0 <= i < len(stack):
            out[b] = np.asarray(stack[int(i)]).reshape(rows)[b]
    return out.reshape(shape)


def _merged(a: Any, b: Any) -> Any:
    """Two cotangent stacks as one: entries added where both hold one."""
    if not a or not b:
        return a or b
    out = list(a) + list(b[len(a):])
    for i in range(min(len(a), len(b))):
        out[i] = _merged(a[i], b[i]) if isinstance(a[i], list) else np.asarray(a[i] + b[i], np.asarray(a[i]).dtype)
    return out


def stack_add(stack: list, k: Any, x: Any, lanes: bool = False) -> None:
    """``stack_add``: entry k of a cotangent stack (with ``lanes``, row b of entry k[b]) gets x, in place; where the
    entries are stacks, entry k and x are merged."""
    if isinstance(x, list):
        if lanes:
            raise NotImplementedError("per-example adds to a cotangent stack of stacks")
        if int(k) >= 0:
            stack.extend([] for _ in range(len(stack), int(k) + 1))
            stack[int(k)] = _merged(stack[int(k)], x)
        return
    x = np.asarray(x)
    flat = np.asarray(k).reshape(-1)
    top = int(flat.max()) if flat.size else -1
    stack.extend(np.zeros(x.shape, x.dtype) for _ in range(len(stack), top + 1))
    if not lanes:
        if int(k) >= 0:
            stack[int(k)] = np.asarray(stack[int(k)] + x, x.dtype)
        return
    shape = x.shape
    flat, rows = _lane_rows(k, shape)
    x = x.reshape(rows)
    for b, i in enumerate(flat):
        if i < 0:  # (an example whose loop has stopped)
            continue
        entry = np.array(stack[int(i)], x.dtype).reshape(rows)
        entry[b] += x[b]
        stack[int(i)] = entry.reshape(shape)


def _stack_get_run(op, operands, run_block) -> list[Any]:
    stack, k = operands
    if op.params.get("fill"):  # (a cotangent stack: entries it does not hold are zeros)
        aval = op.results[0].aval
        shape = None if isinstance(aval, StackType) else aval.shape
        return [stack_read(stack, k, shape, aval.dtype, bool(op.params.get("lanes")))]
    if op.params.get("lanes"):
        return [stack_take(stack, k)]
    return [stack[int(k)]]


def stack_take(stack: list, k: Any) -> Any:
    """``stack_get[lanes]``: example b reads the rows of its own entry k[b] (batched entries are (B, ...), or
    (B2, B1, ...) with k of shape (B2, B1)); indices are clipped into the stack. Where the entries are stacks
    (an inner loop's residuals), entry j of the result holds entry j of stack[k[b]] in example b's rows, zeros
    past its end: each example's inner loop ran its own number of trips."""
    flat = np.clip(np.asarray(k).reshape(-1), 0, max(len(stack) - 1, 0))
    return _lane_merge([stack[int(i)] for i in flat])


def _lane_merge(picked: list) -> Any:
    """One value holding picked[b]'s rows as example b's (None: zeros)."""
    present = [p for p in picked if p is not None]
    if isinstance(present[0], list):
        depth = max(len(p) for p in present)
        return [_lane_merge([p[j] if p is not None and j < len(p) else None for p in picked]) for j in range(depth)]
    template = np.asarray(present[0])
    out = np.zeros(template.shape, template.dtype).reshape(len(picked), -1)
    for b, p in enumerate(picked):
        if p is not None:
            out[b] = np.asarray(p).reshape(len(picked), -1)[b]
    return out.reshape(template.shape)


def _stack_size_run(op, operands, run_block) -> list[Any]:
    return [np.int32(len(operands[0]))]


def _stack_add_run(op, operands, run_block) -> list[Any]:
    stack, k, x = operands
    if not isinstance(op.operands[2].aval, StackType):
        x = np.asarray(x, op.operands[2].aval.dtype)
    stack_add(stack, k, x, bool(op.params.get("lanes")))
    return [stack]


for _prim, _run in ((stack_new_p, _stack_new_run), (stack_push_p, _stack_push_run), (stack_get_p, _stack_get_run),
                    (stack_size_p, _stack_size_run), (stack_add_p, _stack_add_run)):
    _prim.check_regions, _prim.run = _stack_check, _run

register_module(globals())
