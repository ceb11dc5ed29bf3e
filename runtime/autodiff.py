"""The differentiation API: ``grad``, ``value_and_grad``, ``jvp``, ``vjp``, ``linearize``, ``jacfwd``,
``jacrev``, ``hessian``, ``custom_jvp``, ``custom_vjp``, ``checkpoint``, ``stop_gradient``.

Every transformation reads the function through the front end (so Python control flow on data is
differentiated too), transforms the IR, and evaluates the result with the current interpreter: eagerly
when called from ordinary code, recorded (inlined) when called from code that is itself being compiled
or transformed. That is how ``grad(grad(f))``, ``jit(grad(f))`` and ``grad(jit(f))`` compose. Pytrees
are flattened here; the IR transforms see flat parameter lists.

Like ``jit``'s, a function's trace (and its transformed IR) is cached per call signature, so calling
``grad(f)`` again on arguments of the same types does not read ``f`` again. Unlike ``jit``'s, the cache
also checks the globals and closure variables ``f`` reads (through the user functions it reaches) and a
callable object's attributes, and what is inside them (a dict's items, a NumPy array's values, the attributes of
an object of the user's classes, those of the user's modules and classes the function names): rebinding one of
them or changing it in place traces again, as JAX's ``grad`` (which never caches) would see the new value. What
the function itself changes while it is read (a list it appends to) is its side effect, run once.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import operator
import sys
import types
import weakref
import zlib
from typing import Any, Callable, Sequence

import numpy as np

from srcjax.runtime import dtypes, tree_util
from srcjax.runtime.api import Signature, _is_dynamic, abstractify
from srcjax.runtime.array import Array
from srcjax.transpiler.builder import Builder, differentiation_depths
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.frontend.calls import (
    InterpretedFunction, Trace, active, enclosing_trace, interpret, is_user_file, is_user_function,
)
from srcjax.transpiler.frontend.concrete import TraceContext
from srcjax.transpiler.frontend.errors import TranspileError
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import Function, Op, Value, walk
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.ad import Zero, aval_of, tangent_aval
from srcjax.transpiler.transforms.jvp import jvp_function
from srcjax.transpiler.transforms.vjp import forward_function, vjp_function
from srcjax.transpiler.transforms.vmap import vmap_function
from srcjax.transpiler.trees import FLOAT0  # (jax.dtypes.float0: a dtype with no values)
from srcjax.transpiler.types import TensorType


def _float0(shape: Sequence[int]) -> np.ndarray:
    return np.zeros(tuple(shape), dtype=FLOAT0)


# -- traces, cached per function and signature ---------------------------------------------------------------------
class _Traced:
    """``fun`` read for one call signature: its IR, its result structure, which positional argument each
    parameter comes from, and the transformed versions of the IR made so far."""

    def __init__(self, fun: Callable, args: Sequence[Any], kwargs: dict, signature: Signature,
                 depths: Sequence[int], context: TraceContext | None = None):
        abstract_args, abstract_kwargs = signature.abstract_call_args(len(args))
        self.ir, self.out_tree = trace_function(fun, abstract_args, abstract_kwargs, differentiated=depths,
                                                context=context)
        owners: list[int] = []
        for i, arg in enumerate(args):
            owners += [i] * len(tree_util.tree_leaves(arg))
        owners += [-1] * (len(signature.leaves) - len(owners))  # keyword arguments are never differentiated
        self.owner = [o for o, d in zip(owners, signature.dynamic) if d]
        # (a number kept concrete, not traced, is a valid argument: only the other static leaves are refused)
        self.static_owner = [o for o, d, c in zip(owners, signature.dynamic, signature.concrete) if not d and not c]
        self.static_leaves = [leaf for leaf, d, c in zip(signature.leaves, signature.dynamic, signature.concrete)
                              if not d and not c]
        self.leaf_owner, self.leaf_param = owners, list(signature.dynamic)  # per leaf of (args, kwargs)
        self.depends: list[Any] | None = []
        self.written: set[int] = set()  # (``_dependencies``)
        self._transformed: dict[Any, Function] = {}

    @property
    def params(self) -> list[Value]:
        """The params of the call's dynamic leaves (the captured values of an enclosing trace follow them)."""
        return self.ir.params[: len(self.owner)]

    def transformed(self, key: Any, make: Callable[[], Function]) -> Function:
        hit = self._transformed.get(key)
        if hit is None:
            hit = self._transformed[key] = make()
        return hit

    def wrt(self, argnums: Sequence[int]) -> list[bool]:
        """Per param: whether it belongs to one of ``argnums`` (captured values never do)."""
        for owner, leaf in zip(self.static_owner, self.static_leaves):
            if owner in argnums:
                raise TypeError(f"Argument {leaf!r} of type {type(leaf)} is not a valid JAX type: differentiated "
                                "arguments must be arrays, numbers, or pytrees of them")
        return [o in argnums for o in self.owner] + [False] * len(self.ir.captured)

    def main_outputs(self, has_aux: bool) -> tuple[int, Any]:
        """How many leading results are differentiated, and the structure of that output."""
        if not has_aux:
            return len(self.ir.results), self.out_tree
        root = self.out_tree.node_data()  # (read from the structure: no registered node is built on placeholders)
        if root is None or not issubclass(root[0], (tuple, list)) or len(self.out_tree.children()) != 2:
            raise TypeError("expected function with aux output to return a two-element tuple, but got "
                            f"{_describe_tree(self.out_tree)}")
        main_tree = self.out_tree.children()[0]
        return main_tree.num_leaves, main_tree

    def outputs(self, results: Sequence[Any], has_aux: bool) -> tuple[Any, Any]:
        """The function's value and its auxiliary data (``None`` without ``has_aux``)."""
        out = tree_util.tree_unflatten(self.out_tree, list(results[: len(self.ir.results)]))
        return (out[0], out[1]) if has_aux else (out, None)


def _describe_tree(tree: Any) -> str:
    """What a function returned, from the structure of its output."""
    root = tree.node_data()
    if root is None:
        return "a single array"
    if issubclass(root[0], (tuple, list)):
        return f"a {root[0].__name__} of {len(tree.children())} elements"
    return f"a {root[0].__name__} of structure {tree}"


_traces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> {signature: _Traced}
_TRACES_PER_FUNCTION = 1024


def clear_traces() -> None:
    _traces.clear()


def _trace(fun: Callable, args: Sequence[Any], kwargs: dict, argnums: Sequence[int], kind: str = "grad",
           ints: bool = False) -> tuple[_Traced, list[Any]]:
    """``_trace_once``; where reading ``fun`` needed a concrete value and some argument that is not differentiated
    is a concrete array, again with those arrays concrete too (JAX never traces them; srcjax traces them first,
    so that the trace is cached for other values of theirs)."""
    try:
        return _trace_once(fun, args, kwargs, argnums, kind, ints, arrays=False)
    except TranspileError as e:
        keep = _concrete_leaves(args, argnums, ints, arrays=True)
        if not getattr(e, "concretization", False) or not any(
                keep(i, leaf) for i, leaf in enumerate(tree_util.tree_leaves((list(args), kwargs)))):
            raise
    return _trace_once(fun, args, kwargs, argnums, kind, ints, arrays=True)


def _concrete_leaves(args: Sequence[Any], argnums: Sequence[int], ints: bool,
                     arrays: bool) -> Callable[[int, Any], bool]:
    """Which leaves of the arguments stay concrete values in the trace (as JAX leaves them): those not
    differentiated (the arguments outside ``argnums``, the keyword arguments; with ``ints``, integer and boolean
    ones, whose tangents are float0) that are numbers, or with ``arrays`` concrete arrays. ``range(n)``, ``xs[i]``
    and ``if`` then see their values. Traced values of an enclosing trace stay traced."""
    owners = [i for i, arg in enumerate(args) for _ in tree_util.tree_leaves(arg)]
    kinds = (bool, int, float, complex, np.generic) + ((np.ndarray, Array) if arrays else ())

    def keep(i: int, leaf: Any) -> bool:
        if not isinstance(leaf, kinds):
            return False
        return not (i < len(owners) and owners[i] in argnums) or (ints and _dtype_of(leaf).kind not in "fc")

    return keep


def _trace_once(fun: Callable, args: Sequence[Any], kwargs: dict, argnums: Sequence[int], kind: str, ints: bool,
                arrays: bool) -> tuple[_Traced, list[Any]]:
    """The trace of ``fun`` for this call (cached) and the call's arguments for it, captured values last. The
    arguments ``argnums`` are differentiated (and those an enclosing trace differentiates, once more): custom
    derivatives on values that depend on them trace their rules in place of the function."""
    signature = Signature(fun, args, kwargs, (), (), require_hashable=False,
                          concrete=_concrete_leaves(args, argnums, ints, arrays))
    leaves = signature.dynamic_leaves()
    owners = [i for i, arg in enumerate(args) for _ in tree_util.tree_leaves(arg)]
    owners = [o for o, d in zip(owners + [-1] * (len(signature.leaves) - len(owners)), signature.dynamic) if d]
    depths = tuple(int(o in argnums) + d for o, d in zip(owners, differentiation_depths(leaves)))
    key = signature.key  # (with the options traces read: library code reads the default dtypes while tracing)
    try:
        # a function defined inside traced code reads its enclosing frame, which can change unseen: not cached
        cacheable = signature.key is not None and not isinstance(fun, InterpretedFunction)
        per_signature = _traces.setdefault(fun, {}) if cacheable else None
    except TypeError:  # not weakly referable or not hashable: not cached
        per_signature = None
    if per_signature is not None:
        # a trace with custom derivatives depends on what is differentiated (their rules run in place of them)
        hit = per_signature.get(key) or per_signature.get((key, depths))
        if hit is not None and _same(hit.depends, _dependencies(fun, hit.written)):
            return hit, leaves
    # the front end may compute values on the arguments while it reads ``fun`` (an assert, a print: JAX's primal)
    tracked = [o in argnums and _dtype_of(leaf).kind in "fc" for o, leaf in zip(owners, leaves)]
    context = TraceContext(kind, inputs=leaves, tracked=[True if t else None for t in tracked], outer=enclosing_trace())
    traced = _Traced(fun, args, kwargs, signature, depths, context)
    # (captured values belong to one enclosing trace; a trace that used the arguments' values holds for them only)
    if per_signature is not None and not traced.ir.captured and context.reusable:
        traced.depends = _dependencies(fun, context.written)
        traced.written = {id(v) for v in traced.depends or () if id(v) in context.written}  # (kept alive there)
        if len(per_signature) >= _TRACES_PER_FUNCTION:  # (bounded: the oldest goes)
            del per_signature[next(iter(per_signature))]
        custom = any(isinstance(op.params.get("rule"), (_CustomCall, _Batched)) for op in walk(traced.ir.body))
        per_signature[(key, depths) if custom else key] = traced
    return traced, leaves + list(traced.ir.captured)


def _same(a: list[Any] | None, b: list[Any] | None) -> bool:
    """Whether two lists of ``_dependencies`` match: the same objects, and equal lengths, keys and digests."""
    return a is not None and b is not None and len(a) == len(b) and all(
        x is y or (type(x) is type(y) and type(x) in _BY_VALUE and x == y) for x, y in zip(a, b))


_BY_VALUE = (int, str, bytes)  # (a container's length, an attribute's name, an array's digest)
_ATOMS = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype, Array, types.FunctionType,
          types.BuiltinFunctionType, types.MethodType, np.ufunc, range, slice)
_SNAPSHOT_ITEMS = 1 << 14  # beyond this many values read, a trace is not reused


@dataclasses.dataclass(frozen=True)
class _Attribute:
    """An object's attribute: what is inside it is compared only if some function reached reads that name (a list
    of losses the program appends to at each step, beside the weights read, does not make each step trace again)."""

    name: str
    value: Any


def _follows(v: Any) -> bool:
    return isinstance(v, (types.FunctionType, types.MethodType, functools.partial)) or hasattr(v, "__wrapped__")


def _dependencies(fun: Callable, written: set[int] = frozenset(), limit: int = 1024) -> list[Any] | None:
    """The values of the globals and closure cells ``fun`` reads, through the user functions it reaches and
    the functions transformations wrap, followed by what is inside them (``_contents``) but for the objects
    ``written`` by its trace (ids); a cached trace is reused only while these are the same objects with the same
    contents (JAX traces again at every call of a transformation: a dict, list, array or object changed in place
    must be read again too). Functions met inside them (a module's, a method of an object's class) are followed
    too. None: too much to compare (past ``limit`` functions and objects followed), the trace is not reused."""
    found: list[Any] = []
    names: set[str] = set()
    seen: set[int] = set()
    todo = [fun]
    while todo:
        while todo and len(seen) < limit:
            f = todo.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            _follow(f, found, names, todo)
        if todo:
            return None
        snapshot = _contents(found, names, written)
        if snapshot is None:
            return None
        out, met = snapshot
        todo = [f for f in met if id(f) not in seen]
    return out


def _follow(f: Any, found: list[Any], names: set[str], todo: list[Any]) -> None:
    """Add what ``f`` reads to ``found`` (and the names its code looks up to ``names``), the functions it reaches
    to ``todo``."""
    if isinstance(f, functools.partial):
        todo.append(f.func)
        found += [*f.args, *f.keywords.values()]  # (bound values: an array or dict may change in place)
        return
    if isinstance(f, types.MethodType):
        todo += [f.__func__, f.__self__]
        return
    wrapped = getattr(f, "__wrapped__", None)
    if wrapped is not None:
        todo.append(wrapped)
    if not isinstance(f, (types.FunctionType, type, types.ModuleType)) and hasattr(f, "__dict__"):
        found += [type(f), *(_Attribute(k, v) for k, v in vars(f).items())]  # a callable object's class, attributes
        todo += [v for v in vars(f).values() if _follows(v)]  # (a custom_vjp's rules)
        todo.append(vars(type(f)).get("__call__"))  # the class's own __call__, if it defines one
        return
    if not isinstance(f, types.FunctionType) or not is_user_function(f):
        return
    namespace = f.__globals__
    names.update(_global_names(f.__code__))  # (attribute names too: those a module or class is read for)
    found += f.__defaults__ or ()
    found += (f.__kwdefaults__ or {}).values()
    for name in _global_names(f.__code__):
        if name in namespace:
            value = namespace[name]
            found.append(value)
            if _follows(value):
                todo.append(value)
    for cell in f.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
        found.append(value)
        if _follows(value):
            todo.append(value)


def _contents(values: list[Any], names: set[str], written: set[int]) -> tuple[list[Any], list[Any]] | None:
    """``values``, each followed by what a trace may read inside it: a container's length and items, an array's
    values (or digest), the attributes of an object of the user's classes (``_Attribute``), and of the user's
    modules and classes those ``names`` reads; and the functions met there. None past ``_SNAPSHOT_ITEMS``."""
    out: list[Any] = []
    met: list[Any] = []
    seen: set[int] = set()
    todo = list(reversed(values))
    while todo:
        value = todo.pop()
        if type(value) is _Attribute:
            out.append(value.name)
            if value.name not in names:  # (the object itself only)
                out.append(value.value)
                continue
            value = value.value
        out.append(value)
        if len(out) > _SNAPSHOT_ITEMS:
            return None
        if isinstance(value, _ATOMS):
            if isinstance(value, (types.FunctionType, types.MethodType)):
                met.append(value)
            continue
        if _follows(value):
            met.append(value)
        if id(value) in seen or id(value) in written:
            continue
        seen.add(id(value))
        try:
            todo += reversed(_inside(value, names))
        except Exception:  # noqa: BLE001 - an object that cannot be looked into (changed meanwhile by a thread, say)
            return None
    return out, met


def _inside(value: Any, names: set[str]) -> list[Any]:
    """What ``_contents`` compares of ``value`` (its identity aside)."""
    if isinstance(value, dict):
        return [len(value), *(part for item in list(value.items()) for part in item)]
    if isinstance(value, (list, tuple, set, frozenset, collections.deque)):
        return [len(value), *list(value)]
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return [repr(value.shape), *value.ravel().tolist()]
        # small ones copied (comparing is cheaper), larger ones by CRC-32, which runs at about 4 GB/s (BLAKE2 at 1:
        # a 188 MB training set read as a global by a function differentiated without jit is checked at each call)
        data = np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        data = data.tobytes() if data.size <= 1 << 16 else zlib.crc32(data)
        return [f"{value.dtype.str} {value.shape}", data]
    if isinstance(value, functools.partial):
        return [value.func, *value.args, *(part for item in value.keywords.items() for part in item)]
    if isinstance(value, property):  # (a class's: its getter is followed)
        return [value.fget]
    if isinstance(value, types.ModuleType):
        module = vars(value) if _users(getattr(value, "__file__", None), value.__name__) else {}
        return [part for name in sorted(names) if name in module for part in (name, module[name])]
    if isinstance(value, type):
        classes = [c for c in value.__mro__ if _user_class(c)]
        return [part for c in classes for name in sorted(names) if name in vars(c) for part in (name, vars(c)[name])]
    if not _user_class(type(value)):
        return []
    attributes = [_Attribute(k, v) for k, v in vars(value).items()] if hasattr(value, "__dict__") else []
    slots = [name for c in type(value).__mro__ for name in _slot_names(c)]
    return [type(value), *attributes, *(_Attribute(name, getattr(value, name, None)) for name in slots)]


def _slot_names(cls: type) -> list[str]:
    slots = vars(cls).get("__slots__", ())
    return [slots] if isinstance(slots, str) else [s for s in slots if s not in ("__dict__", "__weakref__")]


def _users(path: str | None, module: str) -> bool:
    """Whether a module (its file, or its name when it has none: a notebook's or ``exec``'s) is the user's."""
    return is_user_file(path) if path else module not in sys.builtin_module_names


def _user_class(cls: type) -> bool:
    module = sys.modules.get(cls.__module__)
    return cls is types.SimpleNamespace or (module is not None and _users(getattr(module, "__file__", None),
                                                                               cls.__module__))


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Every name ``code`` and the functions defined in it may look up as a global."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return tuple(dict.fromkeys(names))


# -- argument and dtype checks -------------------------------------------------------------------------------------
def _check_callable(fun: Any, what: str) -> None:
    if not callable(fun):
        raise TypeError(f"{what} expects a callable value, got {fun!r}")


def _argnums(argnums: Any, n: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, (int, np.integer)) else argnums
    try:
        nums = tuple(operator.index(i) for i in nums)
    except TypeError:
        raise TypeError(f"argnums must be an int or a sequence of ints, got {argnums!r}") from None
    for i in nums:
        if i >= n:
            raise TypeError(f"differentiating with respect to argnums={argnums} requires at least {i + 1} positional "
                            f"arguments to be passed by the caller, but got only {n} positional arguments.")
        if i < -n:
            raise ValueError(f"argnums={argnums}: positional argument indices must be greater than or equal to "
                             f"-len(args) and less than len(args), but got {i} for len(args) == {n}.")
    return tuple(i % n for i in nums)


def _check_rev_inputs(avals: Sequence[TensorType], holomorphic: bool, allow_int: bool, what: str) -> None:
    for aval in avals:
        kind, name = aval.dtype.kind, aval.dtype.name
        if holomorphic and kind != "c":
            raise TypeError(f"{what} with holomorphic=True requires inputs with complex dtype, but got {name}.")
        if kind not in "fc" and not allow_int:
            raise TypeError(f"{what} requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
                            f"np.inexact), but got {name}. If you want to use Boolean- or integer-valued inputs, "
                            "use vjp or set allow_int to True.")


def _check_rev_outputs(avals: Sequence[TensorType], holomorphic: bool, what: str) -> None:
    for aval in avals:
        kind, name = aval.dtype.kind, aval.dtype.name
        if holomorphic:
            if kind != "c":
                raise TypeError(f"{what} with holomorphic=True requires outputs with complex dtype, but got {name}.")
        elif kind == "c":
            raise TypeError(f"{what} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {name}. For holomorphic differentiation, pass holomorphic=True. For "
                            "differentiation of non-holomorphic functions involving complex outputs, use vjp "
                            "directly.")
        elif kind != "f":
            raise TypeError(f"{what} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {name}. For differentiation of functions with integer outputs, use vjp "
                            "directly.")


def _check_fwd_inputs(avals: Sequence[TensorType], holomorphic: bool, what: str) -> None:
    for aval in avals:
        kind, name = aval.dtype.kind, aval.dtype.name
        if holomorphic and kind != "c":
            raise TypeError(f"{what} with holomorphic=True requires inputs with complex dtype, but got {name}.")
        if not holomorphic and kind != "f":
            raise TypeError(f"{what} requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
                            f"but got {name}. For holomorphic differentiation, pass holomorphic=True. For "
                            "differentiation of non-holomorphic functions involving complex inputs or integer "
                            "inputs, use jvp directly.")


def _check_fwd_outputs(avals: Sequence[TensorType], holomorphic: bool, what: str) -> None:
    for aval in avals:
        if holomorphic and aval.dtype.kind != "c":
            raise TypeError(f"{what} with holomorphic=True requires outputs with complex dtype, but got "
                            f"{aval.dtype.name}.")


def _check_scalar(aval: TensorType, n_main: int, main_tree: Any) -> None:
    if n_main != 1 or not tree_util.treedef_is_leaf(main_tree):
        raise TypeError(f"Gradient only defined for scalar-output functions. Output was a pytree {main_tree} "
                        f"of {n_main} arrays.")
    if aval.shape != ():
        raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: {aval.shape}.")


def _short_type_text(dtype: np.dtype, shape: Sequence[int]) -> str:
    """As the IR prints a type (``f32[3]``); ``float0[3]`` for JAX's integer tangents, which the IR has no name for."""
    return str(TensorType(dtype, tuple(shape))) if dtype != FLOAT0 else _type_text(dtype, shape)


def _type_text(dtype: np.dtype, shape: Sequence[int]) -> str:
    return f"{dtype.name if dtype != FLOAT0 else 'float0'}{list(shape)}".replace(" ", "")


def _dtype_of(x: Any) -> np.dtype:
    if getattr(x, "dtype", None) == FLOAT0:
        return FLOAT0
    return dtypes.dtype_and_weak(x)[0]


def _tangent_dtype(aval: TensorType) -> np.dtype:
    """The dtype a tangent or cotangent of a value of type ``aval`` has (JAX: ``float0`` for ints and bools)."""
    return aval.dtype if aval.dtype.kind in "fc" else FLOAT0


def _as_tangent(x: Any, aval: TensorType) -> Any:
    """A checked (co)tangent as an argument of the transformed IR (a ``float0`` one becomes zeros)."""
    if getattr(x, "dtype", None) == FLOAT0:
        return np.zeros(aval.shape, aval.dtype)
    if isinstance(x, Value) or hasattr(x, "aval"):
        return x
    return np.asarray(x, aval.dtype)


def _weak_like(g: Any, aval: TensorType) -> Any:
    """The derivative of a weakly typed input is weakly typed too (JAX keeps the input's type)."""
    if not aval.weak_type or isinstance(g, np.ndarray) and g.dtype == FLOAT0:
        return g
    from srcjax.transpiler.primitives.elementwise import convert_element_type_p

    return convert_element_type_p.bind(g, new_dtype=aval.dtype, weak_type=True)


def _input_cotangents(traced: _Traced, wrt: Sequence[bool], flat: Sequence[Any]) -> list[Any]:
    """Per dynamic leaf: its derivative (``float0`` zeros for integer inputs), or ``None`` outside ``wrt``."""
    it = iter(flat)
    out = []
    # (a complex input of a real function: JAX's cotangent is complex(ct, zeros) from real/imag's transposes, whose
    # zeros are strongly typed, so it is not weak even where the input was)
    real_results = all(r.aval.dtype.kind != "c" for r in traced.ir.results)
    for on, p in zip(wrt, traced.params):
        if not on:
            out.append(None)
        elif p.aval.dtype.kind == "c" and real_results:
            out.append(next(it))
        elif p.aval.dtype.kind in "fc":
            out.append(_weak_like(next(it), p.aval))
        else:
            out.append(_float0(p.aval.shape))
    return out


def _per_argument(args: Sequence[Any], argnums: Sequence[int], traced: _Traced, per_leaf: Sequence[Any],
                  fill: Callable[[Any], Any] | None = None) -> list:
    """``per_leaf`` (one entry per dynamic leaf) put back into the structures of the arguments ``argnums``; a leaf
    kept concrete (an integer primal) gets ``fill(leaf)``, by default its ``float0`` zeros."""
    fill = fill or (lambda leaf: _float0(np.shape(leaf)))
    out = []
    for i in argnums:
        leaves, treedef = tree_util.tree_flatten(args[i])
        mine = iter([x for x, o in zip(per_leaf, traced.owner) if o == i])
        params = [p for p, o in zip(traced.leaf_param, traced.leaf_owner) if o == i]
        filled = [next(mine) if p else fill(leaf) for leaf, p in zip(leaves, params)]
        out.append(tree_util.tree_unflatten(treedef, filled))
    return out


# -- grad ------------------------------------------------------------------------------------------------------------
def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes: Sequence = ()) -> Callable:
    """The gradient of a scalar-valued ``fun`` with respect to the arguments ``argnums``."""
    _check_callable(fun, "grad")
    value_and_grad_f = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        value, g = value_and_grad_f(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    grad_f.__srcjax_transform__ = ("grad", fun, argnums, has_aux)
    return grad_f


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False, reduce_axes: Sequence = ()) -> Callable:
    """``(fun(*args), grad(fun)(*args))``, computed together; with ``has_aux``, ``((value, aux), grad)``."""
    _check_callable(fun, "value_and_grad")

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        traced, call_args = _trace(fun, args, kwargs, nums, ints=allow_int)
        n_main, main_tree = traced.main_outputs(has_aux)
        wrt = traced.wrt(nums)
        _check_rev_inputs([p.aval for p, on in zip(traced.params, wrt) if on], holomorphic, allow_int, "grad")
        _check_scalar(traced.ir.results[0].aval if n_main else None, n_main, main_tree)
        _check_rev_outputs([traced.ir.results[0].aval], holomorphic, "grad")
        ir = traced.transformed(("grad", nums), lambda: vjp_function(traced.ir, wrt, seed_ones=True, seeded=1))
        results = eval_function(ir, *call_args)
        n_out = len(traced.ir.results)
        value, aux = traced.outputs(results, has_aux)
        grads = _per_argument(args, nums, traced, _input_cotangents(traced, wrt, results[n_out:]))
        g = grads[0] if isinstance(argnums, (int, np.integer)) else tuple(grads)
        return ((value, aux) if has_aux else value), g

    return value_and_grad_f


# -- vjp, jvp, linearize -----------------------------------------------------------------------------------------
def _without_effects(ir: Function) -> Function:
    """``ir`` without its debug callbacks: what ``vjp``'s pullback and ``linearize``'s ``f_jvp`` run computes the
    forward pass again, whose prints have been made once already (JAX makes them once, at ``vjp``/``linearize``)."""
    from srcjax.transpiler.passes import drop_effects
    from srcjax.transpiler.simplify import copy_function

    if not any(op.prim.effect for op in walk(ir.body)):
        return ir
    return drop_effects(copy_function(ir)[0])


def _has_custom_calls(ir: Function) -> bool:
    return any(op.name in ("custom_jvp_call", "custom_vjp_call") for op in walk(ir.body))


def vjp(fun: Callable, *primals: Any, has_aux: bool = False, reduce_axes: Sequence = ()):
    """``(out, f_vjp)``; ``f_vjp(cotangent)`` gives the cotangents of ``primals`` as a tuple (``(out, f_vjp,
    aux)`` with ``has_aux``). Integer inputs get ``float0`` cotangents."""
    _check_callable(fun, "vjp")
    return _vjp(fun, primals, has_aux)


def _vjp(fun: Callable, primals: Sequence[Any], has_aux: bool, linear: bool = False):
    """``vjp``; with ``linear``, ``fun`` must be linear in ``primals`` (``linear_transpose``): ``f_vjp`` raises
    where it is not, as JAX's transposition does."""
    traced, call_args = _trace(fun, primals, {}, range(len(primals)), ints=True)
    n_main, main_tree = traced.main_outputs(has_aux)
    wrt = traced.wrt(range(len(primals)))
    forward_ir = traced.ir
    if _has_custom_calls(traced.ir):  # (JAX's vjp gives the outputs of their rules: see forward_function)
        forward_ir = traced.transformed(("vjp forward",), lambda: forward_function(traced.ir, wrt))
    forward = eval_function(forward_ir, *call_args)
    out, aux = traced.outputs(forward, has_aux)
    results = traced.ir.results
    name = getattr(fun, "__name__", "the function")

    # (a float0 output, as an inner vjp of integers gives, is traced as bool zeros: see trees.Float0Zeros)
    out_tree = tree_util.tree_structure(tree_util.tree_unflatten(main_tree, [0] * main_tree.num_leaves))

    def f_vjp(cotangent):
        leaves, tree = tree_util.tree_flatten(cotangent)
        if tree != out_tree:
            raise ValueError(f"unexpected tree structure of the cotangent passed to the VJP function of {name}: it "
                             f"must match the structure of the differentiated function's output, {out_tree}, but "
                             f"got {tree}.")
        cts = []
        for c, r in zip(leaves, results):
            expected = _tangent_dtype(r.aval)
            got = _dtype_of(c)
            if tuple(np.shape(c)) != r.aval.shape or (got != expected and not (got == r.aval.dtype)):
                raise ValueError(f"unexpected type (shape/dtype) for the cotangent passed to a VJP function: got "
                                 f"{_type_text(got, np.shape(c))}, but expected {_type_text(expected, r.aval.shape)} "
                                 f"because the corresponding output of the differentiated function had type "
                                 f"{_type_text(r.aval.dtype, r.aval.shape)}")
            cts.append(_as_tangent(c, tangent_aval(r.aval)))
        # the backward pass is made when it is first needed, as JAX runs a custom_vjp's bwd only here
        ir = traced.transformed(("vjp", n_main, linear), lambda: vjp_function(_without_effects(traced.ir), wrt,
                                                                              seeded=n_main, linear=linear))
        flat = eval_function(ir, *call_args, *cts)[len(results):]
        return tuple(_per_argument(primals, range(len(primals)), traced, _input_cotangents(traced, wrt, flat)))

    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


def _check_tangents(primals: Sequence[Any], tangents: Sequence[Any], what: str = "jvp") -> list[Any]:
    """The tangents of the primals' dynamic leaves, after JAX's structure, shape and dtype checks."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(f"primal and tangent arguments to {what} must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to {what} must have the same tree structure; primals have "
                        f"tree structure {p_tree} whereas tangents have tree structure {t_tree}.")
    out = []
    for p, t in zip(p_leaves, t_leaves):
        if not _is_dynamic(p):
            raise TypeError(f"Argument {p!r} of type {type(p)} is not a valid JAX type")
        if tuple(np.shape(p)) != tuple(np.shape(t)):
            raise ValueError(f"{what} called with different primal and tangent shapes; got primal shape "
                             f"{tuple(np.shape(p))} and tangent shape {tuple(np.shape(t))}")
        p_dtype, t_dtype = _dtype_of(p), _dtype_of(t)
        expected = p_dtype if p_dtype.kind in "fc" else FLOAT0
        if t_dtype != expected:
            raise TypeError(f"primal and tangent arguments to {what} do not match; dtypes must be equal, or in case "
                            "of int/bool primal dtype the tangent dtype must be float0. Got primal dtype "
                            f"{p_dtype.name} and so expected tangent dtype {_type_text(expected, ())[:-2]}, but got "
                            f"tangent dtype {_type_text(t_dtype, ())[:-2]} instead.")
        out.append(t)
    return out


def _output_tangents(traced: _Traced, flat: Sequence[Any]) -> list[Any]:
    """Tangents of the results (weakly typed for weak results), ``float0`` zeros for integer and bool ones."""
    return [_weak_like(t, r.aval) if r.aval.dtype.kind in "fc" else _float0(r.aval.shape)
            for t, r in zip(flat, traced.ir.results)]


def _jvp_ir(traced: _Traced) -> tuple[Function, list[bool]]:
    wrt = [p.aval.dtype.kind in "fc" for p in traced.params] + [False] * len(traced.ir.captured)
    return traced.transformed("jvp", lambda: jvp_function(traced.ir, wrt)), wrt


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """``(fun(*primals), d fun(primals) . tangents)`` (and ``fun``'s auxiliary data with ``has_aux``)."""
    _check_callable(fun, "jvp")
    tangent_leaves = _check_tangents(primals, tangents)
    traced, call_args = _trace(fun, list(primals), {}, range(len(primals)), "jvp", ints=True)
    traced.main_outputs(has_aux)
    ir, wrt = _jvp_ir(traced)
    tangent_leaves = [t for t, param in zip(tangent_leaves, traced.leaf_param) if param]  # (not the concrete ones)
    tangent_args = [_as_tangent(t, tangent_aval(p.aval)) for t, p, on in zip(tangent_leaves, traced.params, wrt) if on]
    results = eval_function(ir, *call_args, *tangent_args)
    n = len(traced.ir.results)
    out, aux = traced.outputs(results[:n], has_aux)
    tangent_out, _ = traced.outputs(_output_tangents(traced, results[n:]), has_aux)
    return (out, tangent_out, aux) if has_aux else (out, tangent_out)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence = ()) -> Callable:
    """The transpose of the linear function ``fun``: ``f_t(out_cotangent)`` gives the cotangents of its inputs as
    a tuple. ``primals`` (arrays or ``ShapeDtypeStruct``s) give only the inputs' shapes and dtypes. The transpose
    is ``fun``'s pullback at zero, which for a linear ``fun`` is the same at every point (a ``fun`` that is not
    linear raises, as in JAX)."""
    from srcjax.runtime import numpy as jnp

    _check_callable(fun, "linear_transpose")
    def zeros_like(p):  # (a weakly typed primal's zeros are weakly typed: its cotangent then is too, as in JAX)
        zeros = jnp.zeros(np.shape(p), getattr(p, "dtype", None) or np.result_type(p))
        return _weak_like(zeros, abstractify(p)) if dtypes.is_weakly_typed(p) else zeros

    zeros = tree_util.tree_map(zeros_like, primals)
    out, pullback = _vjp(fun, zeros, has_aux=False, linear=True)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    expected = [(np.shape(o), _dtype_of(o)) for o in out_leaves]

    def transposed(cotangent):
        leaves, tree = tree_util.tree_flatten(cotangent)
        if tree != out_tree or [(np.shape(c), _dtype_of(c)) for c in leaves] != expected:
            raise TypeError("cotangent type does not match function output, expected "  # (JAX's words)
                            f"({', '.join(_type_text(d, s) for s, d in expected)}) but got "
                            f"({', '.join(_type_text(_dtype_of(c), np.shape(c)) for c in leaves)})")
        return pullback(cotangent)

    return transposed


def linearize(fun: Callable, *primals: Any, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the derivative at ``primals`` (and the
    auxiliary data last with ``has_aux``)."""
    _check_callable(fun, "linearize")
    traced, call_args = _trace(fun, list(primals), {}, range(len(primals)), ints=True)
    traced.main_outputs(has_aux)
    jvp_ir, wrt = _jvp_ir(traced)
    if _has_custom_calls(traced.ir):  # (their outputs come from their rules, as in vjp)
        zero_tangents = [np.zeros(p.aval.shape, tangent_aval(p.aval).dtype) for p, on in zip(traced.params, wrt) if on]
        forward = eval_function(jvp_ir, *call_args, *zero_tangents)[: len(traced.ir.results)]
    else:
        forward = eval_function(traced.ir, *call_args)
    out, aux = traced.outputs(forward, has_aux)
    ir = traced.transformed("linearized", lambda: jvp_function(_without_effects(traced.ir), wrt))
    primal_tree = tree_util.tree_structure(tuple(primals))

    def f_jvp(*tangents):
        tree = tree_util.tree_structure(tuple(tangents))
        if tree != primal_tree:
            raise TypeError(f"the linearized function expects tangents of structure {primal_tree}, got {tree}")
        for p, t in zip(tree_util.tree_leaves(tuple(primals)), tree_util.tree_leaves(tuple(tangents))):
            p_dtype, t_dtype = _dtype_of(p), _dtype_of(t)
            expected = p_dtype if p_dtype.kind in "fc" else FLOAT0
            if tuple(np.shape(p)) != tuple(np.shape(t)) or t_dtype != expected:
                raise ValueError("linearized function called on tangent values inconsistent with the original "
                                 f"primal values: got tangent type {_type_text(t_dtype, np.shape(t))} for primal "
                                 f"type {_type_text(p_dtype, np.shape(p))} but expected "
                                 f"{_type_text(expected, np.shape(p))}.")
        leaves = [t for t, param in zip(tree_util.tree_leaves(tuple(tangents)), traced.leaf_param) if param]
        tangent_args = [_as_tangent(t, tangent_aval(p.aval)) for t, p, on in zip(leaves, traced.params, wrt) if on]
        results = eval_function(ir, *call_args, *tangent_args)
        return traced.outputs(_output_tangents(traced, results[len(traced.ir.results):]), has_aux)[0]

    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# -- Jacobians ------------------------------------------------------------------------------------------------
def _jacobian_tree(args: Sequence[Any], nums: Sequence[int], traced: _Traced, wrt: Sequence[bool], main_tree: Any,
                   blocks: Callable[[int, int], Any], single: bool) -> Any:
    """The Jacobian as JAX lays it out: the output's structure outside, the inputs' inside; ``blocks(k, j)``
    is the block of output leaf ``k`` and wrt input leaf ``j`` (of shape ``out.shape + in.shape``)."""
    import srcjax.runtime.numpy as jnp

    positions = [i for i, on in enumerate(wrt[: len(traced.params)]) if on]
    per_output = []
    for k in range(main_tree.num_leaves):
        per_leaf: list[Any] = [None] * len(traced.params)
        for j, position in enumerate(positions):
            per_leaf[position] = blocks(k, j)
        out_shape = traced.ir.results[k].aval.shape
        # (an integer leaf kept concrete, under ``allow_int``: zeros of its dtype, as JAX's jacrev gives)
        per_arg = _per_argument(args, nums, traced, per_leaf,
                                lambda leaf, s=out_shape: jnp.zeros_like(leaf, shape=s + np.shape(leaf)))
        per_output.append(per_arg[0] if single else tuple(per_arg))
    return tree_util.tree_unflatten(main_tree, per_output)


def _standard_basis(avals: Sequence[TensorType], dtypes: Sequence[np.dtype]) -> tuple[list[np.ndarray], Any, int]:
    """The identity over all coordinates of ``avals``, split per value: value j's part has shape
    ``(rows, *avals[j].shape)``. Returns the parts, each value's first row offset, and the row count
    (at least 1, so that a batch exists even with nothing to differentiate)."""
    sizes = [int(np.prod(a.shape, dtype=np.int64)) for a in avals]
    total = sum(sizes)
    rows = max(total, 1)
    eye = np.eye(rows, dtype=np.float64)[:, :total]
    offsets = np.cumsum([0] + sizes)
    parts = [eye[:, offsets[j]:offsets[j + 1]].reshape((rows, *a.shape)).astype(dtype)
             for j, (a, dtype) in enumerate(zip(avals, dtypes))]
    return parts, offsets, rows


def _inputs_last(rows: Any, in_shape: tuple, out_shape: tuple) -> Any:
    """Rows indexed by input coordinates, ``(size_in, *out_shape)``, as a block ``out_shape + in_shape``."""
    import srcjax.runtime.numpy as jnp

    block = jnp.reshape(rows, in_shape + out_shape)
    n_in = len(in_shape)
    return jnp.moveaxis(block, tuple(range(n_in)), tuple(range(len(out_shape), len(out_shape) + n_in)))


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian by forward mode: the JVP batched (vmap) over the standard basis of the inputs."""
    _check_callable(fun, "jacfwd")

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        traced, call_args = _trace(fun, args, kwargs, nums, "jvp")
        n_main, main_tree = traced.main_outputs(has_aux)
        wrt = traced.wrt(nums)
        in_avals = [p.aval for p, on in zip(traced.params, wrt) if on]
        out_avals = [r.aval for r in traced.ir.results[:n_main]]
        _check_fwd_inputs(in_avals, holomorphic, "jacfwd")
        _check_fwd_outputs(out_avals, holomorphic, "jacfwd")
        n = len(traced.ir.results)
        # one batched JVP over the standard basis: tangent j of basis row i is e_i restricted to input j
        basis, offsets, rows = _standard_basis(in_avals, [a.dtype for a in in_avals])
        ir = traced.transformed(("jacfwd", tuple(wrt), rows), lambda: vmap_function(
            jvp_function(traced.ir, wrt), [None] * len(call_args) + [0] * len(in_avals), rows,
            out_dims=[None] * n + [0] * n))
        results = eval_function(ir, *call_args, *basis)
        _, aux = traced.outputs(results[:n], has_aux)

        def block(k: int, j: int) -> Any:
            out = out_avals[k]
            if _tangent_dtype(out) == FLOAT0:  # (an integer or bool output: zeros of its dtype, as JAX's jacfwd)
                import srcjax.runtime.numpy as jnp

                return _weak_like(jnp.zeros(out.shape + in_avals[j].shape, out.dtype), out)
            rows = results[n + k][offsets[j]:offsets[j + 1]]  # (size_j, *out.shape)
            # (JAX's jacfwd gives a block the output's type, weak or not; jacrev the input's)
            return _weak_like(_inputs_last(rows, in_avals[j].shape, out.shape), out)

        jac = _jacobian_tree(args, nums, traced, wrt, main_tree, block, isinstance(argnums, (int, np.integer)))
        return (jac, aux) if has_aux else jac

    return jacfun


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """The Jacobian by reverse mode: the VJP batched (vmap) over the standard basis of the outputs."""
    _check_callable(fun, "jacrev")

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        traced, call_args = _trace(fun, args, kwargs, nums, ints=allow_int)
        n_main, main_tree = traced.main_outputs(has_aux)
        wrt = traced.wrt(nums)
        in_avals = [p.aval for p, on in zip(traced.params, wrt) if on]
        out_results = traced.ir.results
        _check_rev_inputs(in_avals, holomorphic, allow_int, "jacrev")
        _check_rev_outputs([r.aval for r in out_results[:n_main]], holomorphic, "jacrev")
        n = len(out_results)
        diff = [a.dtype.kind in "fc" for a in in_avals]
        # one batched VJP over the standard basis of the outputs (the auxiliary outputs get none)
        main = [r.aval for r in out_results[:n_main]]
        cotangents, offsets, rows = _standard_basis(main, [tangent_aval(a).dtype for a in main])
        ir = traced.transformed(("jacrev", tuple(wrt), n_main, rows), lambda: vmap_function(
            vjp_function(traced.ir, wrt, seeded=n_main), [None] * len(call_args) + [0] * n_main, rows,
            out_dims=[None] * n + [0] * sum(diff)))
        results = eval_function(ir, *call_args, *cotangents)
        _, aux = traced.outputs(results[:n], has_aux)
        grads = list(results[n:])
        grad_index = {j: i for i, j in enumerate(j for j, d in enumerate(diff) if d)}

        def block(k: int, j: int) -> Any:
            import srcjax.runtime.numpy as jnp

            out_shape = out_results[k].aval.shape
            if not diff[j]:  # (``allow_int``: JAX's block is zeros of the integer input's dtype, not float0)
                return jnp.zeros(out_shape + in_avals[j].shape, in_avals[j].dtype)
            rows = grads[grad_index[j]][offsets[k]:offsets[k + 1]]  # (size_k, *in.shape)

            return _weak_like(jnp.reshape(rows, out_shape + in_avals[j].shape), in_avals[j])

        # (JAX's jacrev unwraps a Python int's block only: a NumPy integer argnums gives a 1-tuple, as there)
        jac = _jacobian_tree(args, nums, traced, wrt, main_tree, block, isinstance(argnums, int))
        return (jac, aux) if has_aux else jac

    return jacfun


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """``jacfwd(jacrev(fun))``: the matrix of second derivatives, laid out as nested Jacobians."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums, has_aux=has_aux,
                  holomorphic=holomorphic)


def jacobian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
             allow_int: bool = False) -> Callable:
    """Alias of ``jacrev`` (JAX exports it as ``jax.jacobian``)."""
    return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)


# -- user-defined derivatives ---------------------------------------------------------------------------------------
def _positional(fun: Callable, args: Sequence[Any], kwargs: dict, what: str) -> tuple[Any, ...]:
    """The arguments as positions, with the defaults of a user's function (JAX's ``resolve_kwargs``: its rules get
    every argument). A library function keeps its defaults unless keywords are passed (a default such as
    ``keepdims=False`` would become a traced operand that its Python cannot branch on); keyword-only parameters
    not passed are left to their defaults, as JAX leaves them."""
    if not kwargs and not is_user_function(fun):
        return tuple(args)
    try:
        signature = inspect.signature(fun)
    except (TypeError, ValueError):  # (a callable without a signature takes its arguments as they come)
        if not kwargs:
            return tuple(args)
        raise
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    passed = sorted(k for k in bound.kwargs if k in kwargs)
    if passed:
        raise TypeError(f"{what}: keyword arguments {passed} could not be resolved to positions")
    return tuple(bound.args)


class custom_jvp:  # noqa: N801 - JAX's name
    """``@custom_jvp`` with ``f.defjvp(rule)``: ``rule(*nondiff_args, primals, tangents) -> (primal_out,
    tangent_out)``, or ``f.defjvps(*partials)`` with ``partial(tangent, primal_out, *primals)`` per argument."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        # first, as JAX does: update_wrapper copies ``fun.__dict__``, which for a transformed function (a
        # ``vmap``, another custom function) holds its own ``fun`` and rules, and must not replace ours
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """With ``symbolic_zeros``, the tangent of an input that is not differentiated may reach ``jvp`` as a
        ``SymbolicZero`` (where the transform knows it is zero when it calls the rule: a rule traced for
        reverse mode gets zeros arrays), and ``jvp`` may return ``SymbolicZero`` tangents."""
        self.jvp, self.symbolic_zeros = jvp, symbolic_zeros
        return jvp

    def defjvps(self, *partials: Callable | None) -> None:
        if self.nondiff_argnums:
            raise TypeError("Can't use defjvps with nondiff_argnums.")

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for partial, t in zip(partials, tangents):
                if partial is not None:
                    term = partial(t, out, *primals)
                    total = term if total is None else tree_util.tree_map(lambda a, b: a + b, total, term)
            if total is None:
                import srcjax.runtime.numpy as jnp

                total = tree_util.tree_map(jnp.zeros_like, out)
            return out, total

        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _custom_call(self, _positional(self.fun, args, kwargs, self.__name__), _CustomJVPCall)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


class custom_vjp:  # noqa: N801 - JAX's name
    """``@custom_vjp`` with ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``,
    ``bwd(*nondiff_args, residuals, cotangent) -> cotangents`` (a tuple, one per differentiable argument)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)  # first: see custom_jvp
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False, optimize_remat: bool = False) -> None:
        """With ``symbolic_zeros``, ``fwd`` gets each leaf of the differentiable arguments as a ``CustomVJPPrimal``
        (its ``value``, and ``perturbed``: True for every array, as whether reverse mode reaches it is not known
        when the rule is traced), and ``bwd`` may return ``None`` or ``SymbolicZero`` cotangents.
        (``optimize_remat`` lets JAX drop ``fwd``'s work when a checkpoint computes the call again: here its
        residuals are what reverse mode keeps whichever way, so the values and derivatives are the same.)"""
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _custom_call(self, _positional(self.fun, args, kwargs, self.__name__), _CustomVJPCall)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


@dataclasses.dataclass(init=False, eq=False)
class _CustomCall:
    """One call of a ``custom_jvp``/``custom_vjp`` function inside a trace: the op's ``rule`` parameter. The
    op's operands are the argument leaves that are arrays; the other leaves stay here. The transforms call
    the methods below with flat values, and they call the user's rules with the arguments' structure. (A
    dataclass whose one field is the function's name: the IR prints it as ``_CustomJVPCall(name='f')``.)"""

    name: str

    def __init__(self, custom: Any, treedef: Any, leaves: Sequence[Any], is_operand: Sequence[bool],
                 arg_of: Sequence[int]):
        self.custom, self.treedef, self.is_operand = custom, treedef, list(is_operand)
        self.static = [None if op else leaf for leaf, op in zip(leaves, is_operand)]
        nondiff = set(custom.nondiff_argnums)
        self.leaf_arg = list(arg_of)  # per leaf: its positional argument
        self.arg_of = [a for a, op in zip(arg_of, is_operand) if op]  # per operand
        self.nondiff = [a in nondiff for a in self.arg_of]  # per operand
        self.arg_trees = [tree_util.tree_structure(a) for a in tree_util.tree_unflatten(treedef, list(leaves))]
        self.avals: list[TensorType] = []  # per operand
        self.out_tree: Any = None
        self.name = getattr(custom, "__name__", "custom")
        # the user's rule traced where the call is differentiated (``trace_rule``): the transforms evaluate it
        # instead of calling the rule again, and the call's region is its primal part, as JAX runs the rule there
        self.traced: Function | None = None
        self.captured: list[Value] = []  # values of the enclosing trace the traced rule reads: extra operands
        self.reads: list[Value] = []  # the values of the enclosing trace the rule reads, kept as operands or not

    def __repr__(self) -> str:
        return self.name

    def arguments(self, operands: Sequence[Any]) -> list[Any]:
        """The call's positional arguments with ``operands`` in place of the array leaves."""
        it = iter(operands)
        return tree_util.tree_unflatten(self.treedef, [next(it) if op else s
                                                       for op, s in zip(self.is_operand, self.static)])

    def batched(self, dims: Sequence[int | None], size: int, axis_name: Any = None) -> _Batched:
        return _Batched(self, dims, size, axis_name)

    def split(self, args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        nondiff = set(self.custom.nondiff_argnums)
        return [args[i] for i in sorted(nondiff)], [a for i, a in enumerate(args) if i not in nondiff]

    def _trace_rule(self, suffix: str, avals: Sequence[TensorType], run: Callable[[list[Value]], list[Any]],
                    depth: int, closures: bool) -> None:
        """``self.traced``: ``run`` (which calls the user's rule on the params) traced on its own. Traced values of
        the enclosing function that the rule reads become its last params (``captured``) with ``closures``; else
        such a rule is not kept, and the transforms call it again. The primals stay differentiated by the
        ``depth - 1`` transforms around the one the rule is for."""
        from srcjax.transpiler.passes import clean

        builder = Builder(f"{self.name}_{suffix}", capture=True)
        params = [builder.param(a) for a in avals]
        builder.differentiated = {id(p): depth - 1 for p in params[: len(self.avals)] if depth > 1}
        with core.interpreting(builder):
            fn = builder.finish(run(params))
        self.reads = list(fn.captured)
        if closures or not fn.captured:
            self.traced, self.captured = clean(fn), list(fn.captured)


@dataclasses.dataclass(init=False, eq=False)
class _Batched:
    """A custom call's rules over a batch: each per-example rule mapped with vmap (operands batched along
    axis 0 or not at all, as ``dims`` says; every output batched along axis 0), under the batch's axis name (the
    rules' collectives refer to it). ``inner`` is the call itself or, under nested vmaps, the call batched by the
    inner ones. (A dataclass whose one field is a name: the IR prints it as ``_Batched(name='batched(f)')``.)"""

    name: str

    def __init__(self, inner: _CustomCall | _Batched, dims: Sequence[int | None], size: int, axis_name: Any = None):
        self.inner, self.dims, self.size, self.axis_name = inner, list(dims), size, axis_name
        self.name = f"batched({inner.name})"

    def __repr__(self) -> str:
        return self.name

    @property
    def avals(self) -> list[TensorType]:
        """The operands' types over the batch."""
        return [a if d is None else a.update(shape=(self.size, *a.shape)) for a, d in zip(self.inner.avals, self.dims)]

    def batched(self, dims: Sequence[int | None], size: int, axis_name: Any = None) -> _Batched:
        return _Batched(self, dims, size, axis_name)

    def _map(self, fn: Callable, in_axes: Sequence[int | None], *args: Any) -> Any:
        from srcjax.runtime.vmap import vmap

        return vmap(fn, in_axes=tuple(in_axes), axis_size=self.size, axis_name=self.axis_name)(*args)

    def jvp_rule(self, primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
        from srcjax.transpiler.primitives.ad import instantiate

        n = len(primals)
        tangents = [instantiate(t) for t in tangents]

        def per_example(*values):
            out, tan = self.inner.jvp_rule(list(values[:n]), list(values[n:]))
            return list(out), list(tan)

        out, tan = self._map(per_example, self.dims + self.dims, *primals, *tangents)
        return out, tan

    def forward(self, primals: list[Any]) -> tuple[list[Any], list[Any]]:
        def per_example(*values):
            out, res = self.inner.forward(list(values))
            return list(out), list(res)

        out, res = self._map(per_example, self.dims, *primals)
        return out, res

    def backward(self, residuals: list[Any], cotangents: list[Any]) -> list[Any]:
        import srcjax.runtime.numpy as jnp

        n = len(residuals)

        def per_example(*values):
            return [c if c is not None else jnp.zeros(a.shape, tangent_aval(a).dtype)
                    for c, a in zip(self.inner.backward(list(values[:n]), list(values[n:])), self.inner.avals)]

        cts = self._map(per_example, [0] * n + [0] * len(cotangents), *residuals, *cotangents)
        # an operand shared by the whole batch receives the sum of the examples' cotangents
        return [jnp.sum(c, axis=0) if d is None else c for c, d in zip(cts, self.dims)]


class _CustomJVPCall(_CustomCall):
    def trace_rule(self, depth: int) -> None:
        """The user's rule as a function of (primals, tangents) -> (outputs, output tangents)."""
        from srcjax.transpiler.primitives.ad import instantiate

        def run(params: list[Value]) -> list[Any]:
            outs, tangents = self.jvp_rule(params[: len(self.avals)], params[len(self.avals):])
            return [*outs, *[instantiate(t) for t in tangents]]

        self._trace_rule("jvp", [*self.avals, *[tangent_aval(a) for a in self.avals]], run, depth, closures=True)

    def primal_outputs(self, primals: list[Any]) -> list[Any]:
        """The traced rule's outputs (its tangents zero): what the call computes where it was differentiated."""
        from srcjax.transpiler.primitives.ad import zeros

        n = len(self.avals)
        tangents = [zeros(tangent_aval(a)) for a in self.avals]
        return eval_function(self.traced, *primals[:n], *tangents, *primals[n:])[: self.out_tree.num_leaves]

    def jvp_rule(self, primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
        """Per operand its primal and tangent (the values the traced rule reads last: their tangents are unused)
        -> the outputs and their tangents."""
        from srcjax.transpiler.primitives.ad import instantiate

        if self.traced is not None:
            n = len(self.avals)
            flat = eval_function(self.traced, *primals[:n], *[instantiate(t) for t in tangents[:n]], *primals[n:])
            return flat[: self.out_tree.num_leaves], flat[self.out_tree.num_leaves:]
        rule = self.custom.jvp
        if rule is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.name} using defjvp.")
        args = self.arguments(primals)
        symbolic = self.custom.symbolic_zeros
        tans = self.arguments([SymbolicZero(t.aval) if symbolic and isinstance(t, Zero) else instantiate(t)
                               for t in tangents])
        static, diff_args = self.split(args)
        _, diff_tans = self.split(tans)
        pair = _run_user(rule, *static, tuple(diff_args), tuple(diff_tans))
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(f"Custom JVP rule {getattr(rule, '__name__', rule)} for function {self.name} must "
                            "produce a pair (list or tuple of length two) representing primal and tangent outputs, "
                            f"but got {pair}.")  # (JAX's words)
        out, tan = pair
        out_leaves, out_tree = tree_util.tree_flatten(out)
        tan_leaves, tan_tree = tree_util.tree_flatten(tan)
        tan_leaves = [t.instantiate() if isinstance(t, SymbolicZero) else t for t in tan_leaves]
        if out_tree != tan_tree:
            raise TypeError(f"Custom JVP rule {getattr(rule, '__name__', rule)} for function {self.name} must produce "
                            "primal and tangent outputs with equal container (pytree) structures, but got "
                            f"{out_tree} and {tan_tree} respectively.")
        if self.out_tree is None:  # (traced in place of the function: the rule gives the output's structure)
            self.out_tree = out_tree
        if out_tree != self.out_tree:
            raise TypeError(f"Custom JVP rule must produce a pair (list or tuple of length two) whose first element "
                            f"has the structure of {self.name}'s output, {self.out_tree}, but got {out_tree}.")
        for i, (o, t) in enumerate(zip(out_leaves, tan_leaves)):
            o_aval, t_dtype = abstractify(o), _dtype_of(t)  # Python scalars take the canonical dtypes
            if t_dtype == FLOAT0 and _tangent_dtype(o_aval) == FLOAT0 and o_aval.shape == tuple(np.shape(t)):
                # JAX's tangent of an integer output (a float0 zeros array): here, zeros of its tangent type
                tan_leaves[i] = t = _as_tangent(t, tangent_aval(o_aval))
                t_dtype = tangent_aval(o_aval).dtype
            if o_aval.shape != tuple(np.shape(t)) or tangent_aval(o_aval).dtype != t_dtype:
                raise TypeError("Custom JVP rule must produce primal and tangent outputs with corresponding shapes "
                                f"and dtypes. Expected {tangent_aval(o_aval).strong()} (tangent type of "
                                f"{o_aval.strong()}) but got {_short_type_text(t_dtype, np.shape(t))}.")
        return out_leaves, tan_leaves


class _CustomVJPCall(_CustomCall):
    res_tree: Any = None
    res_static: list[Any] = []  # with ``traced``: per residual leaf, the value of a static one, else _DYNAMIC

    def trace_rule(self, depth: int) -> None:
        """The user's ``fwd`` as a function of the primals -> (outputs, residuals that are arrays)."""

        def run(params: list[Value]) -> list[Any]:
            outs, residuals = self.forward(params)
            residuals = residuals[: self.res_tree.num_leaves]
            self.res_static = [_DYNAMIC if _is_array(r) else r for r in residuals]
            return [*outs, *[r for r in residuals if _is_array(r)]]

        self._trace_rule("fwd", self.avals, run, depth, closures=False)  # (bwd, called later, could not read them)

    def primal_outputs(self, primals: list[Any]) -> list[Any]:
        return eval_function(self.traced, *primals)[: self.out_tree.num_leaves]

    def forward(self, primals: list[Any]) -> tuple[list[Any], list[Any]]:
        """The user's ``fwd``: the outputs and the residuals (the traced non-differentiable arguments too,
        which ``bwd`` is given back)."""
        kept = [p for p, nd in zip(primals, self.nondiff) if nd]
        if self.traced is not None:
            flat = eval_function(self.traced, *primals)
            dynamic = iter(flat[self.out_tree.num_leaves:])
            residuals = [next(dynamic) if r is _DYNAMIC else r for r in self.res_static]
            return flat[: self.out_tree.num_leaves], residuals + kept
        if self.custom.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.name} using defvjp.")
        args = self.arguments(primals)
        if self.custom.symbolic_zeros:
            nondiff = set(self.custom.nondiff_argnums)
            args = [a if i in nondiff else tree_util.tree_map(lambda x: CustomVJPPrimal(x, _is_array(x)), a)
                    for i, a in enumerate(args)]
        pair = _run_user(self.custom.fwd, *args)
        must = (f"Custom VJP fwd rule {getattr(self.custom.fwd, '__name__', 'fwd')} for function {self.name} must "
                "produce a pair (list or tuple of length two) where the first element represents the primal output "
                f"(equal to the output of the custom_vjp-decorated function {self.name}) and the second element "
                "represents residuals")
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            kind = "an array" if hasattr(pair, "shape") else type(pair).__name__
            raise TypeError(f"{must}, but instead the fwd rule output's type was {kind}"
                            + (f" of length {len(pair)}." if isinstance(pair, (tuple, list)) else "."))
        out, residuals = pair
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if self.out_tree is None:  # (traced in place of the function: ``fwd`` gives the output's structure)
            self.out_tree = out_tree
        if out_tree != self.out_tree:
            raise TypeError(f"{must}, but the output has structure {out_tree} where {self.out_tree} was expected.")
        res_leaves, self.res_tree = tree_util.tree_flatten(residuals)
        return out_leaves, res_leaves + kept

    def backward(self, residuals: list[Any], cotangents: list[Any]) -> list[Any]:
        """The user's ``bwd``: one cotangent (or ``None``) per operand."""
        n_res = self.res_tree.num_leaves
        res = tree_util.tree_unflatten(self.res_tree, residuals[:n_res])
        kept = iter(residuals[n_res:])
        args = self.arguments([next(kept) if nd else None for nd in self.nondiff])
        static, diff_args = self.split(args)
        nondiff = set(self.custom.nondiff_argnums)
        diff_positions = [i for i in range(len(args)) if i not in nondiff]
        cts = _run_user(self.custom.bwd, *static, res, tree_util.tree_unflatten(self.out_tree, cotangents))

        def wrong_structure() -> TypeError:
            return TypeError("Custom VJP bwd rule must produce an output with the same container (pytree) structure "
                             "as the args tuple of the primal function, and in particular must produce a tuple of "
                             f"length equal to the number of arguments to the primal function, but got bwd output "
                             f"structure {tree_util.tree_structure(cts)} for primal input structure "
                             f"{tree_util.treedef_tuple(self.arg_trees[i] for i in diff_positions)}.")

        if not isinstance(cts, (tuple, list)) or len(cts) != len(diff_args):
            raise wrong_structure()
        if self.custom.symbolic_zeros:
            cts = [tree_util.tree_map(lambda c: c.instantiate() if isinstance(c, SymbolicZero) else c, c) for c in cts]
        per_arg = dict(zip(diff_positions, cts))
        out: list[Any] = []
        for position in range(len(args)):
            n_operands = sum(1 for a in self.arg_of if a == position)
            ct = per_arg.get(position)
            if ct is None:
                out += [None] * n_operands
                continue
            try:  # (None in place of a subtree: its cotangents are zeros)
                leaves = self.arg_trees[position].flatten_up_to(ct) if n_operands else []
            except ValueError:
                raise wrong_structure() from None
            if any(isinstance(c, (tuple, list, dict)) for c in leaves):  # (a container where an array belongs)
                raise wrong_structure()
            mine = [self.is_operand[k] for k, a in enumerate(self.leaf_arg) if a == position]
            out += self._checked(position, [c for c, op in zip(leaves, mine) if op])
        return out

    def _checked(self, position: int, cts: list[Any]) -> list[Any]:
        """The cotangents of argument ``position``'s operands, after JAX's shape check."""
        operands = [i for i, a in enumerate(self.arg_of) if a == position]
        out = []
        for c, i in zip(cts, operands):
            if c is None:
                out.append(None)
                continue
            expected = self.avals[i]
            got = aval_of(c)
            if got.shape != expected.shape:
                raise ValueError("Custom VJP bwd rule must produce an output with the same type as the args tuple of "
                                 f"the primal function, but at output[{position}] the bwd rule produced an output of "
                                 f"type {got.strong()} corresponding to an input of type {expected.strong()}, so "
                                 "the shapes do not match")
            out.append(c)
        return out


_DYNAMIC = object()  # a residual leaf that is an array (the traced ``fwd`` computes it)


class SymbolicZero:
    """``jax.custom_derivatives.SymbolicZero``: a tangent or cotangent known to be zero, of type ``aval``, that
    rules defined with ``symbolic_zeros=True`` may be given and may return."""

    def __init__(self, aval: Any):
        self.aval = aval

    shape = property(lambda self: tuple(self.aval.shape))
    dtype = property(lambda self: np.dtype(self.aval.dtype))
    ndim = property(lambda self: len(self.aval.shape))

    def instantiate(self) -> Any:
        from srcjax.transpiler.primitives.ad import zeros

        return zeros(self.aval)

    def __repr__(self) -> str:
        return f"SymbolicZero({self.aval})"


@dataclasses.dataclass
class CustomVJPPrimal:
    """``jax.custom_derivatives.CustomVJPPrimal``: an argument leaf of a ``custom_vjp`` ``fwd`` defined with
    ``symbolic_zeros=True``: its ``value`` and whether it is ``perturbed`` (differentiated)."""

    value: Any
    perturbed: bool


def _is_array(x: Any) -> bool:
    return isinstance(x, (Value, np.ndarray)) or hasattr(x, "aval")


def _current_builder() -> Builder | None:
    interpreter = core.current_interpreter()
    builder = interpreter if isinstance(interpreter, Builder) else getattr(interpreter, "builder", None)
    return builder if isinstance(builder, Builder) else None


def _run_user(fn: Callable, *args: Any) -> Any:
    """Call a user's rule (a custom derivative's ``jvp``, ``fwd`` or ``bwd``): while a transform builds IR it is
    interpreted from its source, so its Python control flow on traced values works as in any other user
    function; otherwise it is called."""
    builder = _current_builder()
    if builder is None or not is_user_function(fn):
        return fn(*args)
    trace = Trace(builder)
    with active(trace):
        return interpret(trace, fn, list(args), {})


def _custom_call(custom: Any, args: Sequence[Any], kind: type) -> Any:
    """Run ``custom.fun``: directly when nothing is traced, else as a custom call op holding the function (as a
    region, interpreted from its source) and the rules (as a ``_CustomCall``). Where the call's operands depend on
    what the trace differentiates, the rule (``jvp`` or ``fwd``) is traced instead and the function is not run,
    as in JAX: the region is then the rule's primal part."""
    from srcjax.transpiler.primitives.custom import custom_jvp_call_p, custom_vjp_call_p

    interpreter = core.current_interpreter()
    builder = _current_builder()
    leaves, treedef = tree_util.tree_flatten(list(args))
    linear = getattr(interpreter, "linear", {})  # a linearizer's tangent values: the custom rule does not apply
    if (builder is None or not any(isinstance(x, Value) for x in leaves)
            or any(isinstance(x, Value) and id(x) in linear for x in leaves)):
        return custom.fun(*args)
    arg_of = [i for i, a in enumerate(args) for _ in tree_util.tree_leaves(a)]
    # (a nondiff argument's Python and NumPy values reach the rules as they are, as JAX passes them: a rule may
    # branch on an int; its traced values and Arrays are operands)
    nondiff = set(custom.nondiff_argnums)
    is_operand = [isinstance(x, (Value, Array)) or (_is_dynamic(x) and a not in nondiff)
                  for x, a in zip(leaves, arg_of)]
    call = kind(custom, treedef, leaves, is_operand, arg_of)
    with core.interpreting(builder):
        values = [builder.operand(x) for x, op in zip(leaves, is_operand) if op]
        call.avals = [v.aval for v in values]
        depth = builder.differentiation_depth(values)
        if depth:
            call.trace_rule(depth)
            if builder.differentiation_depth(call.reads):
                rule = "custom_jvp rule" if kind is _CustomJVPCall else "custom_vjp fwd rule (or the function)"
                raise TypeError(f"the {rule} of {call.name} reads a traced value it is not given as an "
                                "argument, and that value is differentiated here: its derivative would be lost "
                                "(JAX raises UnexpectedTracerError). Pass it to the function as an argument, with "
                                "nondiff_argnums if it is not to be differentiated.")
            values += [builder.operand(c) for c in call.captured]
        trace = Trace(builder)
        with builder.region([v.aval for v in values]) as block, active(trace):
            if call.traced is not None:
                out_leaves = call.primal_outputs(list(block.params))
            else:
                inner = call.arguments(list(block.params))
                out = interpret(trace, custom.fun, inner, {}) if is_user_function(custom.fun) else custom.fun(*inner)
                out_leaves, call.out_tree = tree_util.tree_flatten(out)
            block.results = [builder.operand(o) for o in out_leaves]
        results = [Value(r.aval) for r in block.results]
        prim = custom_jvp_call_p if kind is _CustomJVPCall else custom_vjp_call_p
        builder.emit(Op(prim, values, {"rule": call, "in_tree": None, "out_tree": None,
                                       "nondiff": tuple(custom.nondiff_argnums)}, results, regions=[block],
                        loc=builder.loc))
    return tree_util.tree_unflatten(call.out_tree, results)


# -- checkpoint, stop_gradient -----------------------------------------------------------------------------------
@dataclasses.dataclass(init=False, eq=False)
class _Policy:
    """A ``checkpoint`` op's ``policy`` parameter: the user's callable, which the IR prints by its name (the
    policy only tells reverse mode what to keep; the op's values do not depend on it)."""

    name: str

    def __init__(self, policy: Callable):
        self.name = getattr(policy, "__name__", type(policy).__name__)
        self.policy = policy

    def __call__(self, *args: Any, **params: Any) -> bool:
        return self.policy(*args, **params)


class _Checkpointed:
    """``checkpoint(fun)``: called, it is ``fun``; in code being traced, a ``checkpoint`` op holding ``fun`` (its
    source interpreted), which reverse mode computes again in the backward pass instead of storing its values."""

    def __init__(self, fun: Callable, static_argnums: Sequence[int] = (), policy: Any = None,
                 prevent_cse: bool = True):
        self.fun = fun
        self.static_argnums = tuple(static_argnums)
        self.policy, self.prevent_cse = policy, prevent_cse
        self._traced: Any = None  # the trace-and-evaluate form of ``fun``, made at the first direct call
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if core.current_interpreter() is not core.base_interpreter():  # (inside a transformation: the op)
            return self._region(args, kwargs)
        # Called directly, ``fun`` is traced and the trace evaluated, as JAX's checkpoint does: its arguments are
        # arrays (``x.at[i].set(v)`` works on a NumPy argument) and its source is read (item assignment, Python
        # control flow on arrays), but nothing is compiled
        if self._traced is None:
            from srcjax.runtime.api import Jitted

            self._traced = Jitted(self.fun, self.static_argnums)
            self._traced._native = False
        return self._traced(*args, **kwargs)

    def _region(self, args: tuple, kwargs: dict) -> Any:
        """``fun`` as a ``checkpoint`` op: its array arguments are the operands, the rest is static."""
        from srcjax.transpiler.primitives.custom import checkpoint_p

        builder = _current_builder()
        if builder is None:
            return self.fun(*args, **kwargs)
        static = {i % len(args) for i in self.static_argnums} if args else set()
        leaves, treedef = tree_util.tree_flatten(([a for i, a in enumerate(args) if i not in static], kwargs))
        dynamic = [isinstance(x, Value) or _is_dynamic(x) for x in leaves]
        with core.interpreting(builder):
            values = [builder.operand(x) for x, d in zip(leaves, dynamic) if d]
            depths = [builder.differentiation_depth([v]) for v in values]
            trace = Trace(builder)
            with builder.region([v.aval for v in values]) as block, active(trace):
                for p, depth in zip(block.params, depths):  # (what the region's operands are differentiated by)
                    if depth:
                        builder.differentiated[id(p)] = depth
                params = iter(block.params)
                dynamic_args, inner_kwargs = tree_util.tree_unflatten(
                    treedef, [next(params) if d else x for x, d in zip(leaves, dynamic)])
                given = iter(dynamic_args)
                inner_args = [a if i in static else next(given) for i, a in enumerate(args)]
                if is_user_function(self.fun):
                    out = interpret(trace, self.fun, inner_args, inner_kwargs)
                else:
                    out = self.fun(*inner_args, **inner_kwargs)
                out_leaves, out_tree = tree_util.tree_flatten(out)
                block.results = [builder.operand(o) for o in out_leaves]
            results = [Value(r.aval) for r in block.results]
            policy = None if self.policy is None else _Policy(self.policy)
            builder.emit(Op(checkpoint_p, values, {"policy": policy, "prevent_cse": self.prevent_cse}, results,
                            regions=[block], loc=builder.loc))
        return tree_util.tree_unflatten(out_tree, results)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Any = None, static_argnums: Sequence[int] = ()):
    """``checkpoint`` (``remat``): the same values and derivatives as ``fun``, but reverse mode keeps only its
    inputs and computes its values again in the backward pass (with ``policy``, one of ``checkpoint_policies``,
    the results of the ops it names are kept instead). A ``lax.scan`` or ``fori_loop`` whose body is checkpointed
    keeps a carry per segment of about sqrt(n) steps rather than per step."""
    _check_callable(fun, "checkpoint")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be one of checkpoint_policies (a callable), got {policy!r}")
    return _Checkpointed(fun, (static_argnums,) if isinstance(static_argnums, int) else static_argnums, policy,
                         prevent_cse)


class checkpoint_policies:  # noqa: N801 - JAX's name
    """What a checkpointed function keeps for the backward pass: ``policy(prim, *avals, **params)`` is whether the
    result of an op may be saved rather than computed again."""

    @staticmethod
    def everything_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        return True

    @staticmethod
    def nothing_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        return False

    @staticmethod
    def dots_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        return prim.name == "dot_general"

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
        if prim.name != "dot_general":
            return False
        (_, (lhs_batch, _)) = params["dimension_numbers"]
        return not lhs_batch

    checkpoint_dots = dots_saveable
    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    # by the names ``ad_checkpoint.checkpoint_name`` gives values
    @staticmethod
    def save_only_these_names(*names: str) -> Callable[..., bool]:
        return lambda prim, *avals, **params: prim.name == "name" and params["name"] in names

    @staticmethod
    def save_any_names_but_these(*names: str) -> Callable[..., bool]:
        return lambda prim, *avals, **params: prim.name == "name" and params["name"] not in names

    @staticmethod
    def save_anything_except_these_names(*names: str) -> Callable[..., bool]:
        return lambda prim, *avals, **params: not (prim.name == "name" and params["name"] in names)

    @staticmethod
    def save_from_both_policies(first: Callable[..., bool], second: Callable[..., bool]) -> Callable[..., bool]:
        return lambda prim, *avals, **params: first(prim, *avals, **params) or second(prim, *avals, **params)

    # offloading to host memory: the CPU's device memory is the host's, so what may be offloaded is kept
    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved: Any, names_which_can_be_offloaded: Any,
                                          offload_src: Any, offload_dst: Any) -> Callable[..., bool]:
        kept = set(names_which_can_be_saved) | set(names_which_can_be_offloaded)
        return lambda prim, *avals, **params: prim.name == "name" and params["name"] in kept

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src: Any, offload_dst: Any) -> Callable[..., bool]:
        return checkpoint_policies.dots_with_no_batch_dims_saveable


def checkpoint_name(x: Any, name: str) -> Any:
    """``x`` (a pytree of arrays), named ``name`` for the policies of ``checkpoint`` that save values by name."""
    from srcjax.transpiler.primitives.custom import name_p

    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    return tree_util.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


remat = checkpoint


def stop_gradient(x: Any) -> Any:
    """``x`` as a constant of differentiation: its derivative is zero (integer leaves pass unchanged)."""
    from srcjax.transpiler.primitives.custom import stop_gradient_p

    def stop(leaf):
        if isinstance(leaf, Value) or hasattr(leaf, "aval"):
            return stop_gradient_p.bind(leaf) if aval_of(leaf).dtype.kind in "fc" else leaf
        return leaf

    return tree_util.tree_map(stop, x)


__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "linear_transpose", "jacfwd", "jacrev", "jacobian",
           "hessian", "custom_jvp", "custom_vjp", "checkpoint", "remat", "checkpoint_policies", "stop_gradient", "Zero",
           "FLOAT0"]
