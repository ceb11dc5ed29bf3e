"""How the Python emitter writes each primitive: with public names only (``srcjax.lax``, ``srcjax.numpy``,
NumPy, plain Python), each spelling binding exactly the primitive with exactly its params.

- ``OPERATORS``: a Python operator where it means the primitive (operands of one dtype: ``h + b``);
- ``LAX_CALLS``: ``lax.<function>(...)`` where lax's function binds the primitive with these operands and
  params (JAX's signatures; a param equal to its default is left out);
- ``SPELLINGS``: the rest, one function each: dynamic slices (start indices as a tuple, negative ones not
  wrapped), argmax/argmin, windowed reductions, the SVD's result order, the stacks reverse mode keeps
  the residuals of ``while`` loops on, which are Python lists (``s.append(x)``, ``s[k]``), and debug prints
  (``debug.print(...)``, as the user wrote it).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from srcjax.transpiler.ir import Literal, Op
from srcjax.transpiler.primitives import PRIMITIVES
from srcjax.transpiler.types import StackType

if TYPE_CHECKING:
    from srcjax.transpiler.emit_python import Emitter


class NotEmittable(ValueError):
    """An op that has no spelling in Python: one of ``NOT_EMITTED``, or a debug callback of the user's own."""


@dataclasses.dataclass(frozen=True)
class LaxCall:
    """``<module>.<function>(operands..., param=value...)`` binds the primitive with exactly these params.

    ``operands``: ``"args"`` passes one argument per operand, ``"list"`` passes them as one list.
    ``defaults``: JAX's default of a param; a param equal to it is left out of the call.
    ``dropped``: params the function does not take (it binds the value they describe anyway).
    ``fixed``: keyword arguments always passed (``symmetrize_input=False``: the primitive alone).
    ``scalars``: weak literals may be passed as Python scalars (lax converts them to the other operand's dtype).
    """

    function: str
    operands: str = "args"
    defaults: tuple[tuple[str, Any], ...] = ()
    dropped: tuple[str, ...] = ()
    fixed: tuple[tuple[str, str], ...] = ()
    scalars: bool = False


@dataclasses.dataclass(frozen=True)
class Spelled:
    """An expression, and the order it gives the op's results in (None: the op's own order; ``single``: it
    gives the one result itself, not a sequence of one)."""

    text: str
    order: tuple[int, ...] | None = None
    single: bool = False
    statement: bool = False  # a statement with no value (``s.append(x)``): nothing is assigned


# (stop_gradient and optimization_barrier are not elementwise's, but lax's functions of the names bind them)
_UNARY = "stop_gradient optimization_barrier"
_DOT_DEFAULTS = (("precision", None), ("preferred_element_type", None))
_INDEXING_DEFAULTS = (("indices_are_sorted", False), ("unique_indices", False))
LAX_CALLS: dict[str, LaxCall] = {
    # an elementwise primitive is lax's function of its name unless an entry below says otherwise: adding one
    # needs nothing here (primitives/elementwise.py sets ``lax_function``)
    **{name: LaxCall(name, scalars=scalars) for name, prim in PRIMITIVES.items() if prim.lax_function
       for _, scalars in [prim.lax_function]},
    **{name: LaxCall(name) for name in _UNARY.split()},
    "and": LaxCall("bitwise_and", scalars=True),
    "or": LaxCall("bitwise_or", scalars=True),
    "xor": LaxCall("bitwise_xor", scalars=True),
    "not": LaxCall("bitwise_not"),
    "polygamma": LaxCall("polygamma"),
    "select_n": LaxCall("select_n"),
    "clamp": LaxCall("clamp"),
    "integer_pow": LaxCall("integer_pow"),
    "round": LaxCall("round", defaults=(("rounding_method", 0),)),
    # a weak result type only matters to dtype promotion, which emitted code never relies on (operators
    # are written only where both operands have one dtype): the value is the same
    "convert_element_type": LaxCall("convert_element_type", dropped=("weak_type",)),
    "bitcast_convert_type": LaxCall("bitcast_convert_type"),
    "broadcast_in_dim": LaxCall("broadcast_in_dim"),
    "reshape": LaxCall("reshape", defaults=(("dimensions", None),)),
    "transpose": LaxCall("transpose"),
    "squeeze": LaxCall("squeeze"),
    "expand_dims": LaxCall("expand_dims"),
    "rev": LaxCall("rev"),
    "pad": LaxCall("pad"),
    "slice": LaxCall("slice", defaults=(("strides", None),)),
    "concatenate": LaxCall("concatenate", operands="list"),
    "iota": LaxCall("broadcasted_iota"),
    **{f"reduce_{m}": LaxCall(f"reduce_{m}") for m in ("sum", "max", "min", "prod", "and", "or", "xor")},
    **{
        name: LaxCall(name, defaults=(("axis", 0), ("reverse", False)))
        for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
    },
    "dot_general": LaxCall("dot_general", defaults=_DOT_DEFAULTS),
    "conv_general_dilated": LaxCall(
        "conv_general_dilated", defaults=(("feature_group_count", 1), ("batch_group_count", 1), *_DOT_DEFAULTS)
    ),
    "fft": LaxCall("fft"),
    "gather": LaxCall("gather", defaults=_INDEXING_DEFAULTS),
    **{name: LaxCall(name, defaults=_INDEXING_DEFAULTS)
       for name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")},
    "sort": LaxCall("sort", operands="list"),
    "top_k": LaxCall("top_k"),
    "threefry2x32": LaxCall("threefry2x32"),
    # lax.linalg's functions symmetrize their input unless told not to: the primitive alone does not
    "cholesky": LaxCall("linalg.cholesky", fixed=(("symmetrize_input", "False"),)),
    "eigh": LaxCall("linalg.eigh", defaults=(("lower", True), ("sort_eigenvalues", True)),
                    fixed=(("symmetrize_input", "False"),)),
    "eig": LaxCall("linalg.eig", defaults=(("compute_left_eigenvectors", True), ("compute_right_eigenvectors", True))),
    "lu": LaxCall("linalg.lu"),
    "lu_pivots_to_permutation": LaxCall("linalg.lu_pivots_to_permutation"),
    "qr": LaxCall("linalg.qr", defaults=(("full_matrices", True),)),
    "triangular_solve": LaxCall("linalg.triangular_solve", defaults=(
        ("left_side", False), ("lower", False), ("transpose_a", False), ("conjugate_a", False),
        ("unit_diagonal", False))),
}

# Python operators that mean exactly the primitive on operands of one dtype (srcjax.numpy binds it), for
# the dtype kinds listed: ``/`` is true division only for inexact types, ``<`` is not defined on complex.
OPERATORS: dict[str, tuple[str, str]] = {
    "add": ("{} + {}", "iufc"),
    "sub": ("{} - {}", "iufc"),
    "mul": ("{} * {}", "iufc"),
    "div": ("{} / {}", "fc"),
    "pow": ("{} ** {}", "f"),
    "neg": ("-{}", "ifc"),
    "eq": ("{} == {}", "biufc"),
    "ne": ("{} != {}", "biufc"),
    "lt": ("{} < {}", "biuf"),
    "le": ("{} <= {}", "biuf"),
    "gt": ("{} > {}", "biuf"),
    "ge": ("{} >= {}", "biuf"),
    "and": ("{} & {}", "biu"),
    "or": ("{} | {}", "biu"),
    "xor": ("{} ^ {}", "biu"),
    "not": ("~{}", "biu"),
}

# How tightly each operator binds (Python's order): an operand written as an expression that binds no more
# tightly than its operator is parenthesised (``**`` binds its operands tighter than any: always).
PRECEDENCE: dict[str, int] = {
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge"), 1), "or": 2, "xor": 3, "and": 4, "add": 5, "sub": 5,
    "mul": 6, "div": 6, "neg": 7, "not": 7, "pow": 99,
}


# -- spellings of their own ----------------------------------------------------------------------------------
def _starts(e: Emitter, indices: list) -> tuple[str, str]:
    """Start indices as a tuple, and the keyword that keeps lax from wrapping negative ones around (the
    primitive clamps them): left out where every index is known to be non-negative."""
    texts = [e.arg(v, python=True) for v in indices]
    tuple_text = "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    wrap = "" if all(e.nonnegative(v) for v in indices) else ", allow_negative_indices=False"
    return tuple_text, wrap


def _dynamic_slice(e: Emitter, op: Op) -> Spelled:
    starts, wrap = _starts(e, op.operands[1:])
    sizes = e.param(tuple(op.params["slice_sizes"]))
    return Spelled(f"{e.lax('dynamic_slice')}({e.arg(op.operands[0])}, {starts}, {sizes}{wrap})")


def _dynamic_update_slice(e: Emitter, op: Op) -> Spelled:
    starts, wrap = _starts(e, op.operands[2:])
    operand, update = (e.arg(v) for v in op.operands[:2])
    return Spelled(f"{e.lax('dynamic_update_slice')}({operand}, {update}, {starts}{wrap})")


def _arg_reduction(name: str) -> Callable[[Emitter, Op], Spelled]:
    def spell(e: Emitter, op: Op) -> Spelled:
        (axis,) = op.params["axes"]
        dtype = e.dtype(np.dtype(op.params["index_dtype"]))
        return Spelled(f"{e.lax(name)}({e.arg(op.operands[0])}, axis={axis}, index_dtype={dtype})")

    return spell


def _reduce_window(monoid: str) -> Callable[[Emitter, Op], Spelled]:
    """``lax.reduce_window`` with ``lax.add``/``max``/``min`` from the monoid's identity is the windowed
    primitive alone."""

    def spell(e: Emitter, op: Op) -> Spelled:
        (x,) = op.operands
        dtype = x.aval.dtype
        if monoid == "add":
            identity: Any = np.zeros((), dtype)
        elif dtype.kind == "f":
            identity = np.asarray(-np.inf if monoid == "max" else np.inf, dtype)
        elif dtype.kind == "b":
            identity = np.asarray(monoid == "min", dtype)
        else:
            info = np.iinfo(dtype)
            identity = np.asarray(info.min if monoid == "max" else info.max, dtype)
        params = ", ".join(f"{k}={e.param(v)}" for k, v in sorted(op.params.items(), key=_window_order))
        init = e.scalar_source(identity, dtype)
        return Spelled(f"{e.lax('reduce_window')}({e.arg(x)}, {init}, {e.lax(monoid)}, {params})")

    return spell


_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation")


def _window_order(item: tuple[str, Any]) -> int:
    return _WINDOW_PARAMS.index(item[0]) if item[0] in _WINDOW_PARAMS else len(_WINDOW_PARAMS)


def _dot_general(e: Emitter, op: Op) -> Spelled:
    """``lax.dot(a, b)`` for the vector and matrix products it means (the last axis of a meets the first of
    b), ``jnp.outer(a, b)`` for two vectors' outer product (each element one product, as dot_general's)."""
    a, b = op.operands
    (contract, batch) = op.params["dimension_numbers"]
    plain = op.params.get("precision") is None and op.params.get("preferred_element_type") is None
    if plain and not batch[0] and not batch[1] and a.aval.ndim in (1, 2) and b.aval.ndim in (1, 2):
        if tuple(contract[0]) == (a.aval.ndim - 1,) and tuple(contract[1]) == (0,):
            return Spelled(f"{e.lax('dot')}({e.arg(a)}, {e.arg(b)})")
        if not contract[0] and not contract[1] and a.aval.ndim == b.aval.ndim == 1:
            e.use("jnp")
            return Spelled(f"jnp.outer({e.arg(a)}, {e.arg(b)})")
    return Spelled(e.call(LAX_CALLS["dot_general"], op))


def _broadcast_in_dim(e: Emitter, op: Op) -> Spelled:
    """``jnp.broadcast_to(x, shape)`` where NumPy's rules broadcast x the same way (its axes are the last)."""
    (x,) = op.operands
    shape, dims = tuple(op.params["shape"]), tuple(op.params["broadcast_dimensions"])
    if dims == tuple(range(len(shape) - x.aval.ndim, len(shape))) and not isinstance(x, Literal):
        if all(n in (1, shape[d]) for n, d in zip(x.aval.shape, dims)):
            e.use("jnp")
            return Spelled(f"jnp.broadcast_to({e.arg(x)}, {e.param(shape)})")
    return Spelled(e.call(LAX_CALLS["broadcast_in_dim"], op))


def _svd(e: Emitter, op: Op) -> Spelled:
    """``lax.linalg.svd`` gives (u, s, vh), the primitive (s, u, vh); without ``compute_uv``, s alone."""
    keywords = "".join(f", {k}={e.param(op.params[k])}" for k in ("full_matrices", "compute_uv")
                       if not op.params[k])
    text = f"{e.lax('linalg.svd')}({e.arg(op.operands[0])}{keywords})"
    if op.params["compute_uv"]:
        return Spelled(text, order=(1, 0, 2))
    return Spelled(text, single=True)


# Stacks (reverse mode's residuals of ``while`` loops) are Python lists used linearly: a push appends to the
# list in place, and its result shares the list's variable.
def _stack_new(e: Emitter, op: Op) -> Spelled:
    return Spelled("[]", single=True)


def _stack_push(e: Emitter, op: Op) -> Spelled:
    return Spelled(f"{e.arg(op.operands[0])}.append({e.arg(op.operands[1])})", statement=True)


def _stack_get(e: Emitter, op: Op) -> Spelled:
    stack, index = (e.arg(v) for v in op.operands)
    if op.params.get("fill"):  # a cotangent stack: entries it does not hold read as zeros
        e.use("stacks")
        aval = op.results[0].aval
        lanes = ", lanes=True" if op.params.get("lanes") else ""
        if isinstance(aval, StackType):  # (its entries are stacks: an empty one where it holds none)
            return Spelled(f"stacks.stack_read({stack}, {index}, None, None{lanes})", single=True)
        return Spelled(f"stacks.stack_read({stack}, {index}, {aval.shape}, '{aval.dtype}'{lanes})", single=True)
    if not op.params.get("lanes"):
        return Spelled(f"{stack}[{index}]", single=True)
    if isinstance(op.results[0].aval, StackType):  # (each example takes its own inner stack: see stack_take)
        e.use("stacks")
        return Spelled(f"stacks.stack_take({stack}, {index})", single=True)
    # batched entries: example b reads row b of its own entry index[b] (indices clipped into the stack)
    e.use("np")
    e.use("jnp")
    clipped = f"np.clip({index}, 0, max(len({stack}) - 1, 0))"
    return Spelled(f"jnp.stack([{stack}[_entry][_lane] for _lane, _entry in enumerate({clipped})])", single=True)


def _stack_add(e: Emitter, op: Op) -> Spelled:
    e.use("stacks")
    stack, index, x = (e.arg(v) for v in op.operands)
    lanes = ", lanes=True" if op.params.get("lanes") else ""
    return Spelled(f"stacks.stack_add({stack}, {index}, {x}{lanes})", statement=True)


def _name(e: Emitter, op: Op) -> Spelled:
    e.classes["checkpoint_name"] = "srcjax.ad_checkpoint"
    return Spelled(f"checkpoint_name({e.arg(op.operands[0])}, {op.params['name']!r})", single=True)


def _stack_size(e: Emitter, op: Op) -> Spelled:
    e.use("jnp")
    return Spelled(f"jnp.int32(len({e.arg(op.operands[0])}))", single=True)


def _axis(axes: tuple) -> str:
    """An ``axis_name`` argument: the name alone, or the tuple of several."""
    return repr(axes[0]) if len(axes) == 1 else repr(tuple(axes))


def _collective(name: str, *keywords: str) -> Callable[[Emitter, Op], Spelled]:
    """``lax.<name>(x, axis_name, keyword=...)``: a collective of a per-replica program (``transpile --pmap``), which
    runs where ``pmap(f, axis_name)`` (or a ``vmap``/``shard_map`` with that name) binds the axis. The axis size an
    ``all_gather`` or ``psum_scatter`` records is the bound axis's, so it is not written."""
    def spell(e: Emitter, op: Op) -> Spelled:
        params = op.params
        extra = "".join(f", {k}={e.param(params[k])}" for k in keywords
                        if not (k == "tiled" and not params[k]) and not (k == "scatter_dimension" and params[k] == 0))
        return Spelled(f"{e.lax(name)}({e.arg(op.operands[0])}, {_axis(params['axes'])}{extra})", single=True)

    return spell


def _all_to_all(e: Emitter, op: Op) -> Spelled:
    p = op.params
    tiled = ", tiled=True" if p["tiled"] else ""
    return Spelled(f"{e.lax('all_to_all')}({e.arg(op.operands[0])}, {_axis(p['axes'])}, {p['split_axis']}, "
                   f"{p['concat_axis']}{tiled})", single=True)


def _ppermute(e: Emitter, op: Op) -> Spelled:
    return Spelled(f"{e.lax('ppermute')}({e.arg(op.operands[0])}, {_axis(op.params['axes'])}, "
                   f"perm={list(op.params['perm'])})", single=True)


def _axis_index(e: Emitter, op: Op) -> Spelled:
    return Spelled(f"{e.lax('axis_index')}({op.params['axis_name']!r})", single=True)


def _debug_callback(e: Emitter, op: Op) -> Spelled:
    """``debug.print('x={x}', x=x)``: the ``srcjax.debug`` call the op's callback spells. A callback of the user's
    own (a function the module cannot name), a breakpoint and a print under vmap have no spelling."""
    texts = [e.arg(v, python=isinstance(v, Literal) and v.aval.weak_type) for v in op.operands]
    callback = op.params["callback"]
    spelled = callback.source(texts)
    if spelled is None:
        why = ("it calls back once per example of a vmap, which no srcjax.debug call spells" if callback.levels else
               f"its callback {callback.name} is a Python function the emitted module cannot name")
        raise NotEmittable(f"cannot emit a 'debug_callback' op as Python: {why}")
    function, arguments = spelled
    ordered = ", ordered=True" if op.params["ordered"] else ""
    e.use("debug")
    return Spelled(f"debug.{function}({arguments}{ordered})", statement=True)


def _pure_callback(e: Emitter, op: Op) -> Spelled:
    raise NotEmittable(f"cannot emit a '{op.name}' op as Python: its callback {op.params['callback'].name} is a "
                       "Python function the emitted module cannot name")


SPELLINGS: dict[str, Callable[[Emitter, Op], Spelled]] = {
    **{name: _collective(name) for name in ("psum", "pmean", "pmax", "pmin", "all_gather")},
    "psum_scatter": _collective("psum_scatter", "scatter_dimension", "tiled"),
    "all_to_all": _all_to_all,
    "ppermute": _ppermute,
    "axis_index": _axis_index,
    "dot_general": _dot_general,
    "broadcast_in_dim": _broadcast_in_dim,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "argmax": _arg_reduction("argmax"),
    "argmin": _arg_reduction("argmin"),
    "reduce_window_sum": _reduce_window("add"),
    "reduce_window_max": _reduce_window("max"),
    "reduce_window_min": _reduce_window("min"),
    "svd": _svd,
    "stack_new": _stack_new,
    "stack_push": _stack_push,
    "stack_get": _stack_get,
    "stack_add": _stack_add,
    "name": _name,
    "stack_size": _stack_size,
    "debug_callback": _debug_callback,
    "pure_callback": _pure_callback,
    "io_callback": _pure_callback,
}

# Param classes of the primitive families that ``srcjax.lax`` exports under the same name (JAX's names):
# emitted modules import them from there.
LAX_CLASSES = frozenset({"ConvDimensionNumbers", "FftType", "GatherDimensionNumbers", "GatherScatterMode",
                         "Precision", "ScatterDimensionNumbers"})

# Primitives that never reach the emitter, and why.
NOT_EMITTED: dict[str, str] = {
    **{name: "control flow: written as Python if/while/for" for name in ("cond", "while", "for", "scan")},
    **{name: "the simplifier runs its function in its place"
       for name in ("custom_jvp_call", "custom_vjp_call", "custom_vmap_call", "checkpoint")},
    **{name: "a collective across the processes of a pmap, which a module run on its own is not part of"
       for name in ("process_allreduce", "process_allgather", "process_reduce_scatter", "process_alltoall",
                    "process_permute")},
    "check": "checkify's check: checkify threads its error through the function before anything is emitted, and "
             "jit refuses a check it did not convert",
}

__all__ = ["LAX_CALLS", "LAX_CLASSES", "OPERATORS", "PRECEDENCE", "SPELLINGS", "NOT_EMITTED", "LaxCall", "NotEmittable",
           "Spelled"]
