"""lax's control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``,
``associative_scan`` and ``stop_gradient``, with JAX's signatures and type checks.

Run eagerly, the predicate or index is read from the concrete value, and the loop runs as a Python loop.
JAX traces each function once, so it type-checks every branch and requires a loop's carry to keep its
type; to give the same errors, ``cond`` and ``switch`` run every branch (the untaken ones with NaN checking
off) and loops check the carry after every step. Inside a function being compiled (the end of this file)
they build the IR's structured control-flow ops instead: ``cond``/``switch`` on symbolic values, and
``while_loop``, ``fori_loop``, ``scan`` and ``map`` as one loop op however many trips they make.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from srcjax.runtime import debug, dtypes
from srcjax.runtime.config import config
from srcjax.runtime.numpy import _core
from srcjax.runtime.tree_util import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_map, tree_unflatten
from srcjax.transpiler.types import TensorType

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map", "associative_scan", "stop_gradient",
           "optimization_barrier", "custom_root", "platform_dependent", "composite", "stage", "dce_sink",
           "shape_as_value", "with_sharding_constraint"]


# -- helpers -------------------------------------------------------------------------------------------------
def _fun_name(f: Callable) -> str:
    name = getattr(f, "__name__", type(f).__name__)
    try:
        return f"{name} at {inspect.getsourcefile(f)}:{inspect.getsourcelines(f)[1]}"
    except (TypeError, OSError):
        return name


def _type_text(t: TensorType) -> str:
    return f"{t.dtype.name}[{','.join(str(d) for d in t.shape)}]"


def _as_arrays(tree: Any, what: str) -> tuple[list[Any], PyTreeDef]:
    """The leaves of ``tree`` as arrays (Python scalars become weakly typed arrays)."""
    leaves, treedef = tree_flatten(tree)
    out = []
    for leaf in leaves:
        if not _core.is_arraylike(leaf):
            raise TypeError(f"{what}: a value of type {type(leaf).__name__} is not a valid JAX type "
                            f"(got {leaf!r}); leaves must be arrays or numbers")
        out.append(leaf if not _core.is_concrete(leaf) else _core.asarray(leaf))
    return out, treedef


class _BecameSymbolic(NotImplementedError):
    """A loop run eagerly while a function is compiled met a symbolic value deciding its control flow (its body
    read a traced value): ``while_loop`` then builds the loop op instead."""


def _concrete(x: Any, what: str) -> Any:
    if not _core.is_concrete(x):
        raise _BecameSymbolic(f"{what}: the value deciding the control flow is symbolic (known only when the "
                              "compiled function runs); lax control flow on such values is not compiled yet")
    return x


@contextlib.contextmanager
def _untaken() -> Iterator[None]:
    """Run a branch only for its types: NaNs it computes are not the program's, nor are its debug prints."""
    saved = config.jax_debug_nans
    if saved:
        config.update("jax_debug_nans", False)
    try:
        with debug.silenced():
            yield
    finally:
        if saved:
            config.update("jax_debug_nans", True)


def _leaf_path(treedef: PyTreeDef, index: int) -> tuple:
    """The key path of leaf ``index`` of ``treedef`` (for error messages)."""
    return tree_flatten_with_path(treedef.unflatten(range(treedef.num_leaves)))[0][index][0]


def _type_difference(a: TensorType, b: TensorType) -> str | None:
    if a.shape != b.shape:
        return "the shapes do not match"
    if a.dtype != b.dtype:
        return "the dtypes do not match"
    return None


# -- cond and switch -----------------------------------------------------------------------------------------
def _check_pred(pred: Any, name: str) -> bool:
    if not _core.is_arraylike(pred):
        raise TypeError(f"{name}: Pred must be a scalar, got {pred!r} of type {type(pred)}")
    typ = _core.aval(pred)
    if typ.shape != ():
        raise TypeError(f"{name}: Pred must be a scalar, got {np.asarray(pred) if _core.is_concrete(pred) else typ} "
                        f"of shape {typ.shape}.")
    if typ.dtype.kind not in "biuf":
        raise TypeError(f"{name}: Pred type must be either boolean or number, got {typ.dtype.name}.")
    return bool(_concrete(pred, name))


def _check_branches(name: str, labels: list[str], funs: Sequence[Callable],
                    flat: list[tuple[list[Any], PyTreeDef]]) -> None:
    """Every branch returned the same structure, shapes and dtypes (as JAX's ``typematch``: weak types aside)."""
    leaves0, treedef0 = flat[0]
    for i, (leaves, treedef) in enumerate(flat[1:], 1):
        # (looking up the source lines is slow, so only when reporting an error)
        where = lambda i=i: f"({labels[0]} is {_fun_name(funs[0])}, {labels[i]} is {_fun_name(funs[i])})"  # noqa: E731
        if treedef != treedef0:
            raise TypeError(
                f"{name} branch outputs must have the same pytree structure, but they differ: the output of "
                f"{labels[0]} is {treedef0} but the output of {labels[i]} is {treedef} {where()}. Revise "
                f"{labels[0]} and/or {labels[i]} so that they have the same pytree structure.")
        for j, (a, b) in enumerate(zip(leaves0, leaves, strict=True)):
            why = _type_difference(_core.aval(a), _core.aval(b))
            if why:
                path = _leaf_path(treedef0, j)
                at = f" at {keystr(path)}" if path else ""
                raise TypeError(
                    f"{name} branches must have equal output types but they differ: the output of {labels[0]}{at} "
                    f"has type {_type_text(_core.aval(a))} but the corresponding output of {labels[i]} has type "
                    f"{_type_text(_core.aval(b))}, so {why} {where()}. Revise {labels[0]} and/or {labels[i]} so that "
                    "all output types match.")


def _join_branches(name: str, labels: list[str], funs: Sequence[Callable], outs: list[Any], taken: int) -> Any:
    """The taken branch's output, after checking every branch returned the same structure and types."""
    flat = [_as_arrays(out, f"{name}: the output of {label}") for label, out in zip(labels, outs, strict=True)]
    _check_branches(name, labels, funs, flat)
    leaves0, treedef0 = flat[0]
    chosen = flat[taken][0]
    # the result is weakly typed only where every branch's output is
    weak = [all(_core.aval(leaves[i]).weak_type for leaves, _ in flat) for i in range(len(leaves0))]
    chosen = [x if _core.aval(x).weak_type == w else _core.convert(x, _core.aval(x).dtype, w)
              for x, w in zip(chosen, weak, strict=True)]
    return treedef0.unflatten(chosen)


def _run_branches(name: str, branches: Sequence[Callable], labels: list[str], taken: int, operands: tuple) -> Any:
    leaves, treedef = _as_arrays(operands, f"{name} operands")  # rejects non-array operands like JAX does
    operands = treedef.unflatten(leaves)
    outs: list[Any] = [None] * len(branches)
    outs[taken] = branches[taken](*operands)
    with _untaken():
        for i, branch in enumerate(branches):
            if i != taken:
                outs[i] = branch(*operands)
    return _join_branches(name, labels, branches, outs, taken)


_NO_OPERAND = object()


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any, operand: Any = _NO_OPERAND) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; both must return the same types."""
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("cond: pass operands positionally or as operand=, not both")
        operands = (operand,)
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("cond: true_fun and false_fun arguments should be callable.")
    taken = 0 if _check_pred(pred, "cond") else 1
    return _run_branches("cond", [true_fun, false_fun], ["true_fun", "false_fun"], taken, operands)


def switch(index: Any, branches: Sequence[Callable], *operands: Any, operand: Any = _NO_OPERAND) -> Any:
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)``."""
    if operand is not _NO_OPERAND:
        if operands:
            raise TypeError("switch: pass operands positionally or as operand=, not both")
        operands = (operand,)
    branches = list(branches)
    if not branches:
        raise ValueError("switch: Empty branch sequence")
    if not all(callable(b) for b in branches):
        raise TypeError("switch: every branch must be callable")
    if not _core.is_arraylike(index):
        raise TypeError(f"switch: Index must be an integer scalar, got {index!r} of type {type(index)}")
    typ = _core.aval(index)
    if typ.shape != ():
        raise TypeError(f"switch: Branch index must be scalar, got an index of shape {typ.shape}.")
    if typ.dtype.kind not in "iu":
        raise TypeError(f"switch: Index type must be an integer, got {index!r} as {typ.dtype.name}")
    taken = min(max(int(_concrete(index, "switch")), 0), len(branches) - 1)
    labels = [f"branch {i}" for i in range(len(branches))]
    return _run_branches("switch", branches, labels, taken, operands)


# -- loops ---------------------------------------------------------------------------------------------------
class _PromoteCarry(Exception):
    """A weakly typed initial carry must take the type the body gives it; the loop restarts."""

    def __init__(self, init: list[Any], dtypes: dict[int, np.dtype]):
        self.init, self.dtypes = init, dtypes

    @property
    def leaves(self) -> list[Any]:
        """The promoted initial carry. (Read it where the loop op goes, not inside the body's region being
        traced: converting a value there would put the conversion into that region.)"""
        return [_core.convert(x, self.dtypes[i], weak_type=False) if i in self.dtypes else x
                for i, x in enumerate(self.init)]


class _Carry:
    """The type of a loop's carry, fixed by its initial value; ``check`` holds each step's output to it."""

    def __init__(self, name: str, init_leaves: list[Any], treedef: PyTreeDef):
        self.name, self.init, self.treedef = name, init_leaves, treedef
        self.types = [_core.aval(x) for x in init_leaves]
        self.hold = debug.current_hold()  # (the debug prints of the trips the loop may yet start again)
        # weak leaves the body makes strong in their own dtype: JAX does not trace the body again for a weak bit
        # (its type match ignores it), so the body keeps seeing them weak (ys made from them stay weak), and the
        # loop's final carry has the body's strong type
        self.strengthened: set[int] = set()

    def check(self, out: Any) -> list[Any]:
        leaves, treedef = _as_arrays(out, f"{self.name} body output carry")
        if treedef != self.treedef:
            raise TypeError(
                f"{self.name} body function carry input and carry output must have the same pytree structure, "
                f"but they differ: the carry input is {self.treedef} but the carry output is {treedef}. Revise the "
                "function so that the carry output has the same pytree structure as the carry input.")
        promote = [i for i, (t, x) in enumerate(zip(self.types, leaves, strict=True))
                   if t.weak_type and _core.aval(x).dtype != t.dtype]
        self.strengthened.update(i for i, (t, x) in enumerate(zip(self.types, leaves, strict=True))
                                 if t.weak_type and _core.is_arraylike(x) and not _core.aval(x).weak_type)
        if promote:  # JAX re-traces with the weak initial value promoted against the body's output
            targets = {i: np.dtype(dtypes.result_type(self.init[i], leaves[i])) for i in promote}
            if any(self.types[i].dtype != dtype or self.types[i].weak_type for i, dtype in targets.items()):
                raise _PromoteCarry(self.init, targets)
        out_leaves = []
        for j, (t, x) in enumerate(zip(self.types, leaves, strict=True)):
            why = _type_difference(t, _core.aval(x))
            if why:
                path = keystr(_leaf_path(self.treedef, j))
                raise TypeError(
                    f"{self.name} body function carry input and carry output must have equal types, but they "
                    f"differ: the input carry{path} has type {_type_text(t)} but the corresponding output carry "
                    f"component has type {_type_text(_core.aval(x))}, so {why}. Revise the function so that all "
                    "output types match the corresponding input types.")
            out_leaves.append(x if _core.aval(x) == t else _core.convert(x, t.dtype, t.weak_type))
        if self.hold is not None:  # the carry kept its type: the loop will not start again
            self.hold.release()
        return out_leaves

    def final(self, val: Any) -> Any:
        """The loop's last carry, in the types the body gives it (see ``strengthened``)."""
        if not self.strengthened:
            return val
        leaves = [_core.convert(x, self.types[i].dtype, weak_type=False) if i in self.strengthened else x
                  for i, x in enumerate(self.treedef.flatten_up_to(val))]
        return self.treedef.unflatten(leaves)


def _restarting(run: Callable[[list[Any]], Any], leaves: list[Any]) -> Any:
    """Run a loop, rerunning it from a promoted initial carry when the body asks for one (at most once
    per carry leaf, since promoted leaves are strongly typed). The debug prints of a trip run again are made
    once: they wait until the first trip's carry kept its type."""
    while True:
        try:
            with debug.held():
                return run(leaves)
        except _PromoteCarry as promotion:
            leaves = promotion.leaves


def _check_loop_pred(out: Any) -> bool:
    if not _core.is_arraylike(out) or _core.aval(out).shape != () or _core.aval(out).dtype != np.bool_:
        got = _type_text(_core.aval(out)) if _core.is_arraylike(out) else type(out).__name__
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but got output type(s) [{got}].")
    return bool(_concrete(out, "while_loop"))


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``val = body_fun(val)`` while ``cond_fun(val)``; the carry keeps the type of ``init_val``."""
    _check_loop_functions(cond_fun, body_fun)
    leaves, treedef = _as_arrays(init_val, "while_loop init_val")

    def run(leaves: list[Any]) -> Any:
        carry = _Carry("while_loop", leaves, treedef)
        val = treedef.unflatten(leaves)
        while _check_loop_pred(cond_fun(val)):
            val = treedef.unflatten(carry.check(body_fun(val)))
        return carry.final(val)

    return _restarting(run, leaves)


def _check_loop_functions(cond_fun: Any, body_fun: Any) -> None:
    if not (callable(cond_fun) and callable(body_fun)):  # (JAX's words)
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")


def _check_fori_types(lower: Any, upper: Any) -> None:
    for bound in (lower, upper):
        if not _core.is_arraylike(bound) or _core.aval(bound).shape != ():
            raise TypeError(f"fori_loop: lower and upper must be integer scalars, got {bound!r}")
    (dl, wl), (du, wu) = dtypes.dtype_and_weak(lower), dtypes.dtype_and_weak(upper)
    # a weakly typed bound (a Python int) takes the other bound's signed integer type, as in JAX
    if dl != du and not (dl.kind == "i" and du.kind == "i" and (wl or wu)):
        raise TypeError(f"lower and upper arguments to fori_loop must have equal types, got {dl.name} and {du.name}")


def _fori_bounds(lower: Any, upper: Any) -> tuple[int, int]:
    _check_fori_types(lower, upper)
    return int(_concrete(lower, "fori_loop")), int(_concrete(upper, "fori_loop"))


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: int | bool | None = None) -> Any:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``."""
    if unroll is not None and not isinstance(unroll, (bool, int, np.integer)):
        raise TypeError(f"fori_loop: unroll must be an int or a bool, got {unroll!r}")
    start, stop = _fori_bounds(lower, upper)
    leaves, treedef = _as_arrays(init_val, "fori_loop init_val")

    def run(leaves: list[Any]) -> Any:
        carry = _Carry("fori_loop", leaves, treedef)
        val = treedef.unflatten(leaves)
        for i in range(start, stop):
            # eagerly the bounds are concrete, so like JAX the index is a weakly typed default int
            val = treedef.unflatten(carry.check(body_fun(_core.asarray(i), val)))
        return carry.final(val)

    return _restarting(run, leaves)


def _scan_length(xs_leaves: list[Any], length: int | None) -> int:
    sizes = []
    for x in xs_leaves:
        shape = _core.aval(x).shape
        if not shape:
            raise ValueError(f"scan got value with no leading axis to scan over: {x!r}.")
        sizes.append(shape[0])
    if length is not None:
        length = int(length)
        if any(s != length for s in sizes):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with leading axis sizes "
                             f"{sizes}.")
        return length
    if not sizes:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(set(sizes)) > 1:
        raise ValueError(f"scan got values with different leading axis sizes: {', '.join(str(s) for s in sizes)}.")
    return sizes[0]


def _split_pair(out: Any) -> tuple[Any, Any]:
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        shown = _type_text(_core.aval(out)) if _core.is_arraylike(out) else type(out).__name__
        raise TypeError(f"scan body output must be a pair (carry, y), got {shown}.")
    return out[0], out[1]


class _Stacker:
    """Collects the ``y`` of each scan step and stacks them; every step's ``y`` must have one type."""

    def __init__(self):
        self.rows: list[list[Any]] = []
        self.treedef: PyTreeDef | None = None
        self.types: list[TensorType] = []

    def add(self, y: Any) -> None:
        leaves, treedef = _as_arrays(y, "scan body output y")
        types = [_core.aval(x) for x in leaves]
        if self.treedef is None:
            self.treedef, self.types = treedef, types
        elif treedef != self.treedef or any(_type_difference(a, b) for a, b in zip(types, self.types, strict=True)):
            raise TypeError(f"scan body output y must keep one type across steps: it was {self.treedef} with types "
                            f"{self.types}, then {treedef} with types {types}")
        self.rows.append(leaves)

    def stacked(self, reverse: bool) -> Any:
        from srcjax.runtime import numpy as jnp

        rows = self.rows[::-1] if reverse else self.rows
        columns = [[row[i] for row in rows] for i in range(len(self.types))]
        return tree_unflatten(self.treedef, [jnp.stack(c) for c in columns])

    def empty(self) -> Any:
        """Zero-length stacks of the types one (discarded) step produced."""
        from srcjax.runtime import lax

        leaves = [lax.slice_in_dim(lax.expand_dims(x, (0,)), 0, 0, axis=0) for x in self.rows[0]]
        return tree_unflatten(self.treedef, leaves)


def _check_scan_args(f: Callable, unroll: Any) -> None:
    if not callable(f):
        raise TypeError(f"scan: f must be callable, got {type(f).__name__}")
    if not isinstance(unroll, (bool, int, np.integer)) or (not isinstance(unroll, bool) and unroll < 1):
        raise ValueError(f"scan: unroll must be a positive int or a bool, got {unroll!r}")


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the last carry and stacked ys."""
    _check_scan_args(f, unroll)
    from srcjax.runtime import lax

    xs_leaves, xs_def = _as_arrays(xs, "scan xs")
    n = _scan_length(xs_leaves, length)
    init_leaves, treedef = _as_arrays(init, "scan init")

    def run(leaves: list[Any]) -> tuple[Any, Any]:
        carry = _Carry("scan", leaves, treedef)
        val, ys = treedef.unflatten(leaves), _Stacker()
        for i in (range(n - 1, -1, -1) if reverse else range(n)):
            x = xs_def.unflatten([lax.index_in_dim(leaf, i, 0, keepdims=False) for leaf in xs_leaves])
            new, y = _split_pair(f(val, x))
            val = treedef.unflatten(carry.check(new))
            ys.add(y)
        if n == 0:  # run one step on zeros only to learn the types of y
            from srcjax.runtime import numpy as jnp

            x = xs_def.unflatten([jnp.zeros(_core.aval(leaf).shape[1:], _core.aval(leaf).dtype) for leaf in xs_leaves])
            with _untaken():
                new, y = _split_pair(f(val, x))
                carry.check(new)
                ys.add(y)
            return carry.final(val), ys.empty()
        return carry.final(val), ys.stacked(reverse)

    return _restarting(run, init_leaves)


def _check_batch_size(batch_size: Any) -> None:
    # (0 is JAX's full batch: one vmap)
    if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or batch_size < 0):
        raise ValueError(f"map: batch_size must be a non-negative int, got {batch_size!r}")


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001 - lax's name; shadows the builtin below
    """``f`` applied to each slice of ``xs`` along the leading axis, the results stacked."""
    _check_batch_size(batch_size)
    # batching only changes how the work is grouped, not the result: eagerly it is one slice at a time
    _, ys = scan(lambda carry, x: ((), f(x)), (), xs)
    return ys


# -- associative scan ----------------------------------------------------------------------------------------
def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """Inclusive prefix combination of ``elems`` along ``axis`` by an associative ``fn``, in O(log n) rounds.

    Pairs of neighbours are combined, the half-length result is scanned recursively (giving the prefixes
    at odd positions), and each even position combines the prefix before it with its own element.
    """
    from srcjax.runtime import lax
    from srcjax.runtime import numpy as jnp

    leaves, treedef = _as_arrays(elems, "associative_scan elems")
    if not leaves:
        return elems
    ndim = _core.aval(leaves[0]).ndim
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for arrays of rank {ndim}")
    axis = axis % ndim
    sizes = [_core.aval(x).shape[axis] for x in leaves]
    if len(set(sizes)) > 1:
        raise ValueError(f"Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[_core.aval(x).shape for x in leaves]})")

    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        out, out_def = tree_flatten(fn(treedef.unflatten(a), treedef.unflatten(b)))
        if out_def != treedef:
            raise ValueError(f"associative_scan: fn must return the structure of its inputs {treedef}, got {out_def}")
        return out

    def part(xs: list[Any], start: int, stop: int | None, stride: int = 1) -> list[Any]:
        return [lax.slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def interleave(even: list[Any], odd: list[Any]) -> list[Any]:
        out = []
        for a, b in zip(even, odd, strict=True):
            n_even, n_odd = _core.aval(a).shape[axis], _core.aval(b).shape[axis]
            if n_odd < n_even:  # pad the odd positions with a dummy element, sliced off below
                b = jnp.concatenate([b, lax.slice_in_dim(a, 0, 1, axis=axis)], axis=axis)
            pairs = jnp.stack([a, b], axis=axis + 1)
            shape = list(_core.aval(a).shape)
            shape[axis] = 2 * n_even
            out.append(lax.slice_in_dim(jnp.reshape(pairs, shape), 0, n_even + n_odd, axis=axis))
        return out

    def prefix(xs: list[Any]) -> list[Any]:
        n = _core.aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        odd = prefix(combine(part(xs, 0, n - 1, 2), part(xs, 1, None, 2)))
        rest = part(xs, 2, None, 2)
        even = combine(part(odd, 0, _core.aval(odd[0]).shape[axis] - 1) if n % 2 == 0 else odd, rest)
        firsts = part(xs, 0, 1)  # position 0 is its own prefix
        even = [jnp.concatenate([x, e], axis=axis) for x, e in zip(firsts, even, strict=True)]
        return interleave(even, odd)

    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]
    out = prefix(leaves)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return treedef.unflatten(out)


def optimization_barrier(operand: Any) -> Any:
    """The operand (a pytree of arrays) unchanged, computed before anything that uses the result: no
    simplification merges or moves computations across it."""
    from srcjax.transpiler.primitives.custom import optimization_barrier_p

    return tree_map(lambda leaf: optimization_barrier_p.bind(_core.asarray(leaf) if _core.is_concrete(leaf) else leaf),
                    operand)


def stop_gradient(x: Any) -> Any:
    """``x`` itself, as a constant for differentiation (the ``stop_gradient`` primitive has a zero JVP)."""
    from srcjax.runtime.autodiff import stop_gradient as stop

    return stop(tree_map(lambda leaf: _core.asarray(leaf) if _core.is_concrete(leaf) else leaf, x))

# -- inside a function being compiled: control flow on symbolic values becomes IR ops ------------------------------
# The eager definitions above decide with concrete values. When the predicate, the bounds or the carry are
# symbolic, the same functions build ``cond``/``while``/``for`` ops whose regions are the traced branch and
# body functions, so that jit keeps them as control flow and grad differentiates through them.
def _builder():
    from srcjax.transpiler.builder import Builder
    from srcjax.transpiler.primitives import core

    interpreter = core.current_interpreter()
    return interpreter if isinstance(interpreter, Builder) else None


def _any_symbolic(*trees: Any) -> bool:
    return any(not _core.is_concrete(leaf) for tree in trees for leaf in tree_flatten(tree)[0])


def _call(fn: Callable, *args: Any) -> Any:
    """Call a branch or body function, reading it with the front end when it is user code."""
    from srcjax.transpiler.frontend.calls import current_trace, interpret, is_user_function

    return interpret(current_trace(), fn, list(args), {}) if is_user_function(fn) else fn(*args)


def _region_out(builder: Any, block: Any, out: Any, what: str) -> tuple[list[Any], PyTreeDef]:
    leaves, treedef = _as_arrays(out, what)
    return leaves, treedef


def _join(builder: Any, name: str, labels: list[str], funs: Sequence[Callable], blocks: list[Any],
          outs: list[tuple[list[Any], PyTreeDef]]):
    _check_branches(name, labels, funs, outs)
    treedef = outs[0][1]
    types = []
    for j in range(len(outs[0][0])):  # (the same dtype in every branch: weakly typed where every branch's is)
        avals = [_core.aval(leaves[j]) for leaves, _ in outs]
        types.append(TensorType(avals[0].dtype, avals[0].shape, all(a.weak_type for a in avals)))
    for block, (leaves, _) in zip(blocks, outs):
        with builder.reopen(block):
            block.results = [builder.operand(_core.convert(x, t.dtype, t.weak_type)) for x, t in zip(leaves, types)]
    return types, treedef


def _symbolic_branches(name: str, index: Any, branches: Sequence[Callable], labels: list[str], operands: tuple):
    from srcjax.transpiler.ir import Op, Value
    from srcjax.transpiler.primitives.control import cond_p

    builder = _builder()
    blocks, outs = [], []
    for fn, label in zip(branches, labels):
        with builder.region() as block:
            outs.append(_as_arrays(_call(fn, *operands), f"{name} {label} output"))
        blocks.append(block)
    types, treedef = _join(builder, name, labels, branches, blocks, outs)
    results = [Value(t) for t in types]
    builder.emit(Op(cond_p, [builder.operand(index)], {}, results, regions=blocks, loc=builder.loc))
    return tree_unflatten(treedef, results)


def _symbolic_loop(name: str, init_leaves: list[Any], treedef: PyTreeDef, trip: Any, cond_fun: Callable | None,
                   body: Callable[[Any, Any], Any]) -> Any:
    """A ``while`` op (``cond_fun``) or a ``for`` op (``trip`` iterations); ``body(k, val)`` is the new carry."""
    from srcjax.transpiler.ir import Op, Value
    from srcjax.transpiler.primitives.control import for_p, while_p

    builder = _builder()
    leaves = [x if not _core.is_concrete(x) else _core.asarray(x) for x in init_leaves]
    for _ in range(len(leaves) + 1):  # weakly typed carries are promoted to what the body makes of them
        types = [_core.aval(x) for x in leaves]
        lead = [TensorType(np.int32, ())] if cond_fun is None else []
        with builder.region(lead + types) as body_block:
            k = body_block.params[0] if lead else None
            val = tree_unflatten(treedef, list(body_block.params[len(lead):]))
            carry = _Carry(name, leaves, treedef)
            try:
                out = carry.check(body(k, val))
            except _PromoteCarry as promotion:
                promoted = promotion
            else:
                body_block.results = [builder.operand(x) for x in out]
                break
        leaves = promoted.leaves  # (outside the region: the conversions belong before the loop)
    regions = [body_block]
    if cond_fun is not None:
        with builder.region(types) as cond_block:
            pred = _call(cond_fun, tree_unflatten(treedef, list(cond_block.params)))
            if not _core.is_arraylike(pred) or _core.aval(pred).shape != () or _core.aval(pred).dtype != np.bool_:
                raise TypeError(f"{name}: cond_fun must return a boolean scalar, but got "
                                f"{_type_text(_core.aval(pred)) if _core.is_arraylike(pred) else type(pred).__name__}.")
            cond_block.results = [builder.operand(pred)]
        regions = [cond_block, body_block]
    results = [Value(t) for t in types]
    operands = ([builder.operand(trip)] if cond_fun is None else []) + [builder.operand(x) for x in leaves]
    builder.emit(Op(while_p if cond_fun is not None else for_p, operands, {}, results, regions=regions,
                    loc=builder.loc))
    return carry.final(tree_unflatten(treedef, results))


_eager_cond, _eager_switch, _eager_while_loop, _eager_fori_loop = cond, switch, while_loop, fori_loop


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any, operand: Any = _NO_OPERAND) -> Any:  # noqa: F811
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; both must return the same types."""
    if _builder() is not None and not _core.is_concrete(pred):
        if operand is not _NO_OPERAND:
            operands = (operand,)
        typ = _core.aval(pred)
        if typ.shape != () or typ.dtype.kind not in "biuf":  # (a number is true where it is not 0, as in JAX)
            raise TypeError(f"cond: Pred must be a scalar boolean or number, got {_type_text(typ)}")
        pred = pred if _core.aval(pred).dtype == np.bool_ else pred != 0
        return _symbolic_branches("cond", pred, [true_fun, false_fun], ["true_fun", "false_fun"], operands)
    return _eager_cond(pred, true_fun, false_fun, *operands, operand=operand)


def switch(index: Any, branches: Sequence[Callable], *operands: Any, operand: Any = _NO_OPERAND) -> Any:  # noqa: F811
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)``."""
    if _builder() is not None and _core.is_arraylike(index) and not _core.is_concrete(index):
        if operand is not _NO_OPERAND:
            operands = (operand,)
        branches = list(branches)
        if not branches:
            raise ValueError("switch: Empty branch sequence")
        if _core.aval(index).shape != () or _core.aval(index).dtype.kind not in "iu":
            raise TypeError(f"switch: Index must be an integer scalar, got {_type_text(_core.aval(index))}")
        index = _core.convert(index, np.dtype(np.int32))
        return _symbolic_branches("switch", index, branches, [f"branch {i}" for i in range(len(branches))], operands)
    return _eager_switch(index, branches, *operands, operand=operand)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:  # noqa: F811
    """``val = body_fun(val)`` while ``cond_fun(val)``; the carry keeps the type of ``init_val``."""
    if _builder() is not None:
        _check_loop_functions(cond_fun, body_fun)
        leaves, treedef = _as_arrays(init_val, "while_loop init_val")
        compiled = lambda: _symbolic_loop("while_loop", leaves, treedef, None, cond_fun,  # noqa: E731
                                          lambda k, val: _call(body_fun, val))
        if _any_symbolic(leaves) or not _core.is_concrete(_call(cond_fun, init_val)):
            return compiled()
        try:  # (known from the start: run now, unless a trip makes the carry symbolic, as c * w for a traced w)
            return _eager_while_loop(cond_fun, body_fun, init_val)
        except _BecameSymbolic:
            return compiled()
    return _eager_while_loop(cond_fun, body_fun, init_val)


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,  # noqa: F811
              unroll: int | bool | None = None) -> Any:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``, as one loop op when compiled."""
    if _builder() is not None:
        leaves, treedef = _as_arrays(init_val, "fori_loop init_val")
        from srcjax.runtime import numpy as jnp

        _check_fori_types(lower, upper)
        lo = lower if not _core.is_concrete(lower) else int(lower)
        hi = upper if not _core.is_concrete(upper) else int(upper)
        if isinstance(lo, int) and isinstance(hi, int) and hi - lo >= _SEGMENTED and _checkpointed(body_fun):
            from srcjax.runtime.autodiff import checkpoint  # (a checkpointed body: segments, as scan has them)

            step = checkpoint(lambda val, i: (_call(body_fun.fun, i, val), None), policy=body_fun.policy,
                              prevent_cse=body_fun.prevent_cse)
            return scan(step, init_val, jnp.arange(lo, hi, dtype=np.int32))[0]
        trip = jnp.maximum(jnp.asarray(hi, np.int32) - jnp.asarray(lo, np.int32), 0) if not (
            isinstance(lo, int) and isinstance(hi, int)) else np.int32(max(hi - lo, 0))
        index = (lambda k: k + lo) if not (isinstance(lo, int) and lo == 0) else (lambda k: k)
        return _symbolic_loop("fori_loop", leaves, treedef, trip, None, lambda k, val: _call(body_fun, index(k), val))
    return _eager_fori_loop(lower, upper, body_fun, init_val, unroll=unroll)


# -- scan and map, compiled: one ``for`` op --------------------------------------------------------------------
# When compiling, ``scan`` is a ``for`` op of ``length`` trips whatever its length, so what it costs to compile
# does not grow with the trip count. The op carries the user's carry and, per leaf of ``y``, a preallocated
# buffer of ``length`` rows; trip ``k`` works on row ``i = k`` (``length - 1 - k`` reversed): it reads
# ``x = xs[i]`` with a dynamic slice of the ``xs`` it closes over (values from outside the loop, not carried,
# so reverse mode saves nothing of them) and writes ``y`` into row ``i`` of its buffer. The types of ``y``
# are known only once the body has been traced: the buffers join the body's params after it, and their
# rows are written at its end. ``unroll`` is accepted and checked as eagerly, but the op is the same whatever
# it is (the body is not repeated inside a trip). A zero-length scan keeps the eager definition: it runs the
# body once only for its types and returns the initial carry and empty ys.
def _symbolic_scan(f: Callable, init_leaves: list[Any], treedef: PyTreeDef, xs_leaves: list[Any], xs_def: PyTreeDef,
                   length: int, reverse: bool) -> tuple[Any, Any]:
    from srcjax.runtime import lax
    from srcjax.transpiler.ir import Op, Value
    from srcjax.transpiler.primitives.control import for_p

    builder = _builder()
    leaves = [x if not _core.is_concrete(x) else _core.asarray(x) for x in init_leaves]
    for _ in range(len(leaves) + 1):  # weakly typed carries are promoted to what the body makes of them
        types = [_core.aval(x) for x in leaves]
        with builder.region([TensorType(np.int32, ())] + types) as body_block:
            k = body_block.params[0]
            i = lax.sub(np.int32(length - 1), k) if reverse else k
            x = xs_def.unflatten([lax.dynamic_index_in_dim(v, i, 0, keepdims=False, allow_negative_indices=False)
                                  for v in xs_leaves])
            carry = _Carry("scan", leaves, treedef)
            try:
                new, y = _split_pair(_call(f, tree_unflatten(treedef, list(body_block.params[1:])), x))
                out = carry.check(new)
            except _PromoteCarry as promotion:
                promoted = promotion
            else:
                y_leaves, y_def = _as_arrays(y, "scan body output y")
                y_types = [_core.aval(v) for v in y_leaves]
                rows = [Value(t.update(shape=(length, *t.shape))) for t in y_types]
                builder.own(*rows)
                body_block.params.extend(rows)
                written = [lax.dynamic_update_index_in_dim(buf, v, i, 0, allow_negative_indices=False)
                           for buf, v in zip(rows, y_leaves, strict=True)]
                body_block.results = [builder.operand(v) for v in out + written]
                break
        leaves = promoted.leaves  # (outside the region: the conversions belong before the loop)
    buffers = [lax.broadcast_in_dim(_core.convert(np.zeros((), t.dtype), t.dtype, t.weak_type), t.shape, ())
               for t in (r.aval for r in rows)]
    results = [Value(t) for t in types] + [Value(r.aval) for r in rows]
    operands = [builder.operand(np.int32(length))] + [builder.operand(v) for v in leaves + buffers]
    builder.emit(Op(for_p, operands, {}, results, regions=[body_block], loc=builder.loc))
    return carry.final(tree_unflatten(treedef, results[:len(types)])), tree_unflatten(y_def, results[len(types):])


_eager_scan, _eager_map = scan, map


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,  # noqa: F811
         unroll: int | bool = 1, _split_transpose: bool = False) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the last carry and stacked ys. When
    compiled, one loop op however long the scan is."""
    if _builder() is not None:
        _check_scan_args(f, unroll)
        xs_leaves, xs_def = _as_arrays(xs, "scan xs")
        n = _scan_length(xs_leaves, length)
        if n >= _SEGMENTED and _checkpointed(f):
            return _segmented_scan(f, init, xs_leaves, xs_def, n, bool(reverse))
        if n > 0:
            init_leaves, treedef = _as_arrays(init, "scan init")
            return _symbolic_scan(f, init_leaves, treedef, xs_leaves, xs_def, n, bool(reverse))
    return _eager_scan(f, init, xs, length, reverse, unroll, _split_transpose)


_SEGMENTED = 16  # a checkpointed scan this long runs as segments (below: plain, a carry kept per step)


def _checkpointed(f: Callable) -> bool:
    from srcjax.runtime.autodiff import _Checkpointed

    return isinstance(f, _Checkpointed)


def _segmented_scan(f: Callable, init: Any, xs_leaves: list[Any], xs_def: PyTreeDef, n: int, reverse: bool) -> Any:
    """A scan whose body is checkpointed, as about sqrt(n) checkpointed segments of about sqrt(n) steps each
    (then the steps left over): reverse mode keeps a carry per segment, and recomputes a segment's steps in the
    backward pass, each segment's own scan being split the same way while it is long enough. So the carries
    kept for n steps are about sqrt(n) + n**(1/4) + ..., at a recompute factor of the number of levels."""
    from srcjax.runtime import lax
    from srcjax.runtime import numpy as jnp
    from srcjax.runtime.autodiff import checkpoint

    if reverse:  # (the same steps, last row first)
        xs_leaves = [lax.rev(x, (0,)) for x in xs_leaves]
    size = int(np.ceil(np.sqrt(n)))
    segments = n // size
    whole = segments * size

    def segment(carry: Any, xs_segment: Any) -> Any:
        return scan(f, carry, xs_segment, length=size)

    rows = [jnp.reshape(lax.slice_in_dim(x, 0, whole, axis=0), (segments, size, *_core.aval(x).shape[1:]))
            for x in xs_leaves]
    step = checkpoint(segment, policy=f.policy, prevent_cse=f.prevent_cse)
    carry, ys = scan(step, init, xs_def.unflatten(rows) if xs_leaves else None, length=segments)
    ys = tree_map(lambda y: jnp.reshape(y, (whole, *_core.aval(y).shape[2:])), ys)
    if whole < n:
        rest = [lax.slice_in_dim(x, whole, n, axis=0) for x in xs_leaves]
        carry, tail = scan(f, carry, xs_def.unflatten(rest) if xs_leaves else None, length=n - whole)
        ys = tree_map(lambda a, b: jnp.concatenate([a, b], axis=0), ys, tail)
    if reverse:
        ys = tree_map(lambda y: lax.rev(y, (0,)), ys)
    return carry, ys


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001,F811
    """``f`` applied to each slice of ``xs`` along the leading axis, the results stacked.

    When compiled with a ``batch_size``, as JAX does it: a scan over the ``n // batch_size`` batches applies
    ``vmap(f)`` to each, and ``vmap(f)`` takes the ``n % batch_size`` rows left over (the results are the same);
    ``batch_size=0`` is one batch of all the rows.
    """
    _check_batch_size(batch_size)
    if _builder() is None or batch_size is None:
        return _eager_map(f, xs, batch_size=batch_size)
    from srcjax.runtime import lax
    from srcjax.runtime import numpy as jnp
    from srcjax.runtime.vmap import vmap

    leaves, treedef = _as_arrays(xs, "map xs")
    n = _scan_length(leaves, None)
    batches, left = divmod(n, int(batch_size)) if batch_size else (0, n)
    if batches == 0:  # (batch_size 0, or more than n: one batch of all the rows)
        return vmap(f)(xs)
    size = batches * int(batch_size)
    batched = [jnp.reshape(lax.slice_in_dim(x, 0, size, axis=0), (batches, int(batch_size), *_core.aval(x).shape[1:]))
               for x in leaves]
    _, ys = scan(lambda carry, x: ((), vmap(f)(x)), (), treedef.unflatten(batched))
    ys = tree_map(lambda y: jnp.reshape(y, (size, *_core.aval(y).shape[2:])), ys)
    if not left:
        return ys
    rest = vmap(f)(treedef.unflatten([lax.slice_in_dim(x, size, n, axis=0) for x in leaves]))
    return tree_map(lambda a, b: jnp.concatenate([a, b], axis=0), ys, rest)


# -- implicitly differentiated solves -----------------------------------------------------------------------------
# JAX defines the derivative of a root by a rule on the values ``f`` closes over. srcjax reaches the same
# derivative without one: the solver's answer x* is held constant (``stop_gradient``), and a correction whose
# value is zero carries the derivative, -g^-1 f(x*) (g: f linearized in x at x*). f(x*) vanishes at the root, so
# the correction's derivative is the implicit function theorem's, -g^-1 df/dtheta, whatever the solver does. The
# inverse is applied to a vanishing vector, where an iterative tangent solver would divide zero by zero; so it is
# the difference of two tangent solves of nonzero vectors, whose dependence on theta through g cancels.
def _plus(x: Any, y: Any) -> Any:
    return tree_map(lambda a, b: a + b, x, y)


def _minus(x: Any, y: Any) -> Any:
    return tree_map(lambda a, b: a - b, x, y)


def _correction(delta: Any) -> Any:
    """``delta - stop_gradient(delta)``: zero, with ``delta``'s derivative."""
    return tree_map(lambda d: d - stop_gradient(d), delta)


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable, has_aux: bool = False
                ) -> Any:
    """``solve(f, initial_guess)``, a root of ``f``, differentiated by the implicit function theorem with respect
    to what ``f`` closes over (``tangent_solve(g, y)`` solves ``g(x) = y`` for ``f`` linearized at the root)
    rather than through ``solve``. With ``has_aux``, ``solve`` returns ``(root, aux)`` and so does this."""
    from srcjax.runtime import numpy as jnp
    from srcjax.runtime.autodiff import jvp

    out = solve(f, initial_guess)
    root, aux = out if has_aux else (out, None)
    root = stop_gradient(root)
    linearized = lambda v: jvp(f, (root,), (v,))[1]  # noqa: E731
    offset = tree_map(jnp.ones_like, root)
    delta = _minus(tangent_solve(linearized, _plus(f(root), offset)), tangent_solve(linearized, offset))
    root = _minus(root, _correction(delta))
    return (root, stop_gradient(aux)) if has_aux else root


# -- staging helpers ---------------------------------------------------------------------------------------------
# JAX's names for the platforms srcjax runs on, by ``default_backend()``
_PLATFORM_NAMES = {"cpu": ("cpu",), "gpu": ("cuda", "gpu")}


def platform_dependent(*args: Any, default: Callable | None = None, **per_platform: Callable) -> Any:
    """``per_platform[p](*args)`` for the platform ``p`` this process computes on (``cpu``, or ``cuda`` on a GPU),
    else ``default(*args)``. srcjax knows its platform when it reads the program, so only that branch runs."""
    from srcjax.runtime.devices import default_backend

    names = _PLATFORM_NAMES[default_backend()]
    branch = next((per_platform[name] for name in names if name in per_platform), default)
    if branch is None:
        raise NotImplementedError(f"lax.platform_dependent: no branch for the platform {names[0]} (given: "
                                  f"{sorted(per_platform)}) and no default")
    return branch(*args)


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """``decomposition`` under a name: a StableHLO composite in JAX. srcjax has no StableHLO; calling the result
    calls ``decomposition``, and it transforms as any function does."""
    import functools

    if not isinstance(name, str):
        raise TypeError(f"lax.composite: name must be a string, got {type(name).__name__}")

    @functools.wraps(decomposition)
    def call(*args: Any, **kwargs: Any) -> Any:
        return decomposition(*args, **kwargs)

    return call


def stage(x: Any, /) -> Any:
    """``x`` as an array of the computation (a Python scalar keeps its weak type; NumPy's 64-bit values narrow
    unless x64 is on)."""
    from srcjax.runtime import numpy as jnp

    return jnp.asarray(x)


def dce_sink(val: Any, *, prevent_mlir_dce: bool = False) -> None:
    """Keeps ``val`` alive in JAX's compiled code; srcjax computes what a program's results need, so nothing."""
    return None


def shape_as_value(shape: Sequence[int]) -> np.ndarray:
    """The shape as an int32 NumPy array (srcjax's shapes are always known numbers)."""
    return np.asarray([int(d) for d in shape], np.int32)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``x`` itself: the layout over devices is a hint for XLA's partitioner, which srcjax does not have (an
    array's sharding is where pmap or device_put put it)."""
    if shardings is None:
        raise ValueError("with_sharding_constraint: got sharding None; pass jax.sharding.Sharding instances")
    return tree_map(_core.asarray, x)  # arrays, as JAX's (never the caller's own NumPy arrays)
