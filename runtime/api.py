"""The transformation API users call: ``jit``, ``make_jaxpr``, ``disable_jit``.

``jit(f)`` compiles ``f`` per argument signature (dtypes, shapes, weak bits, static arguments and the
pytree structure): the front end turns it into IR once, and later calls with the same signature reuse
it. Until the native backend runs it, the IR is executed by the IR interpreter over the eager runtime.
Pytrees are flattened here, at the public edge; the compiler sees flat lists.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from runtime import tree_util
from runtime.array import Array
from runtime.config import config
from runtime.eager import to_array
from transpiler.builder import Builder
from transpiler.frontend.calls import current_trace, interpret, is_user_function, trace_function
from transpiler.interpret import eval_function
from transpiler.ir import Function, Value
from transpiler.primitives import core
from transpiler.types import TensorType


def _is_dynamic(leaf: Any) -> bool:
    return isinstance(leaf, (Array, Value, np.ndarray, np.generic, bool, int, float, complex))


def abstractify(leaf: Any) -> TensorType:
    """The type a dynamic argument is compiled for (Python scalars are weak, as in JAX)."""
    if isinstance(leaf, Value):
        return leaf.aval
    return to_array(leaf, "argument").aval


class Signature:
    """What a compiled specialisation depends on: the structure, the dynamic leaves' types, static args."""

    def __init__(self, fn: Callable, args: Sequence[Any], kwargs: dict, static_argnums: Sequence[int],
                 static_argnames: Sequence[str], require_hashable: bool = True):
        self.static_positions = {i % len(args) if args else i for i in static_argnums if -len(args) <= i < len(args)}
        dynamic_args = [a for i, a in enumerate(args) if i not in self.static_positions]
        static_args = tuple((i, args[i]) for i in sorted(self.static_positions))
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
        static_kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames))
        leaves, self.treedef = tree_util.tree_flatten((dynamic_args, dynamic_kwargs))
        self.leaves = leaves
        self.dynamic = [_is_dynamic(leaf) for leaf in leaves]
        types = tuple(abstractify(leaf) if d else None for leaf, d in zip(leaves, self.dynamic))
        statics = tuple(leaf for leaf, d in zip(leaves, self.dynamic) if not d)
        try:
            self.key = (self.treedef, types, statics, static_args, static_kwargs)
            hash(self.key)
        except TypeError as e:
            if require_hashable:
                raise TypeError(f"static arguments of a jit-compiled function must be hashable: {e}") from None
            self.key = None  # no cache key: the caller traces every time
        self.types, self.static_args, self.static_kwargs = types, static_args, static_kwargs

    def abstract_call_args(self, n_args: int) -> tuple[list, dict]:
        """The call's arguments with every dynamic leaf replaced by its ``TensorType``."""
        leaves = [t if d else leaf for leaf, t, d in zip(self.leaves, self.types, self.dynamic)]
        dynamic_args, kwargs = tree_util.tree_unflatten(self.treedef, leaves)
        args, it = [], iter(dynamic_args)
        static = dict(self.static_args)
        for i in range(n_args):
            args.append(static[i] if i in static else next(it))
        kwargs = {**kwargs, **dict(self.static_kwargs)}
        return args, kwargs

    def dynamic_leaves(self) -> list[Any]:
        return [leaf for leaf, d in zip(self.leaves, self.dynamic) if d]


def _native_enabled() -> bool:
    return os.environ.get("SRCJAX_NATIVE", "1") != "0"


# jax_debug_nans, kept current by a listener: reading ``config`` per call costs more than a native call
_debug_nans = [config.jax_debug_nans]


def _on_config_update(name: str) -> None:
    if name == "jax_debug_nans":
        _debug_nans[0] = config.jax_debug_nans


config.on_update(_on_config_update)


_HOST_SCALARS = (np.ndarray, np.generic, bool, int, float)


def _host_buffers(leaves: Sequence[Any]) -> list[Any] | None:
    """What native code reads for the dynamic arguments: an Array's NumPy buffer, a NumPy array or a scalar
    (the executable converts them to the parameters' dtypes); None if some leaf is not concrete data (a
    value of a transformation in progress), which only the interpreter can handle."""
    buffers = []
    for leaf in leaves:
        if type(leaf) is Array:
            buffers.append(leaf._value)
        elif isinstance(leaf, _HOST_SCALARS):
            buffers.append(leaf)
        else:
            return None
    return buffers


def _wrap_result(value: np.ndarray, aval: TensorType) -> Array:
    """An Array of a fresh result buffer; ``aval`` is the result's type, so none has to be built."""
    value.setflags(write=False)  # (a third of the cost of ``flags.writeable = False``)
    out = Array.__new__(Array)
    out._value, out.aval, out._device = value, aval, None
    return out


_in_use = core.interpreters_in_use()  # the live list: empty while nothing is being compiled


class Compiled:
    """One specialisation: the IR and how to call it (natively when the CPU backend compiles it, else by
    interpreting the IR; ``native_error`` says why not, and ``SRCJAX_NATIVE=0`` turns native code off)."""

    def __init__(self, ir: Function, out_tree: Any, signature: Signature):
        self.ir, self.out_tree, self.signature = ir, out_tree, signature
        self.native, self.native_error = None, None
        if _native_enabled():
            try:
                from codegen.cache import compile_function
                from codegen.llvm.compile import unsupported_reason

                # (through the disk cache, which SRCJAX_CACHE=0 turns off)
                self.native = compile_function(ir, config.jax_compilation_cache_dir)
                if self.native is None:
                    self.native_error = f"not compiled natively: {unsupported_reason(ir)}"
            except Exception as e:  # noqa: BLE001 - a native compilation failure must never break a call
                self.native, self.native_error = None, f"native compilation failed: {type(e).__name__}: {e}"
        self._result_avals = [r.aval for r in ir.results]
        self._single_result = tree_util.treedef_is_leaf(out_tree) and len(ir.results) == 1

    def __call__(self, *leaves: Any) -> Any:
        native = self.native
        if native is not None and not _debug_nans[0]:  # (NaN checks are the interpreter's)
            buffers = _host_buffers(leaves)
            if buffers is not None:
                results = list(map(_wrap_result, native(*buffers), self._result_avals))
                return tree_util.tree_unflatten(self.out_tree, results)
        outs = eval_function(self.ir, *leaves)
        return tree_util.tree_unflatten(self.out_tree, list(outs))

    def call_arrays(self, args: Sequence[Array]) -> Any:
        """``self(*args)`` when every argument is an ``Array``: the shortest way to the native code."""
        native = self.native
        if native is None or _debug_nans[0]:
            return self(*args)
        outs = native(*[a._value for a in args])
        if self._single_result:
            return _wrap_result(outs[0], self._result_avals[0])
        return tree_util.tree_unflatten(self.out_tree, list(map(_wrap_result, outs, self._result_avals)))

    def as_text(self) -> str:
        from transpiler.printer import print_function

        return print_function(self.ir)


class Lowered:
    def __init__(self, compiled: Compiled):
        self._compiled = compiled

    def as_text(self) -> str:
        return self._compiled.as_text()

    def compile(self) -> Compiled:
        return self._compiled


class Jitted:
    """``jit(f)``: compiled once per signature. Calls from code being compiled inline ``f`` instead."""

    def __init__(self, fn: Callable, static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
                 donate_argnums: Sequence[int] = ()):
        self.fn = fn
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.donate_argnums = donate_argnums
        self._cache: dict[Any, Compiled] = {}
        self._fast: dict[tuple, Compiled] = {}  # by the argument types, when every argument is an array
        self.__srcjax_inline__ = fn
        functools.update_wrapper(self, fn, updated=())

    def _static_argnums_with_names(self, args: Sequence[Any]) -> tuple[int, ...]:
        if not self.static_argnames:
            return self.static_argnums
        try:
            names = list(inspect.signature(self.fn).parameters)
        except (TypeError, ValueError):
            return self.static_argnums
        extra = tuple(names.index(n) for n in self.static_argnames if n in names and names.index(n) < len(args))
        return self.static_argnums + extra

    def _specialise(self, args: Sequence[Any], kwargs: dict) -> tuple[Compiled, Signature]:
        sig = Signature(self.fn, args, kwargs, self._static_argnums_with_names(args), self.static_argnames)
        compiled = self._cache.get(sig.key)
        if compiled is None:
            abstract_args, abstract_kwargs = sig.abstract_call_args(len(args))
            ir, out_tree = trace_function(self.fn, abstract_args, abstract_kwargs)
            compiled = self._cache[sig.key] = Compiled(ir, out_tree, sig)
        return compiled, sig

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and not self.static_argnums and not self.static_argnames and not _in_use:
            # the common call: arrays only. Their types are the whole signature, no pytree to flatten
            if all(type(a) is Array for a in args) and not config.jax_disable_jit:
                key = tuple([a.aval for a in args])
                compiled = self._fast.get(key)
                if compiled is not None:
                    return compiled.call_arrays(args)
                compiled, sig = self._specialise(args, kwargs)
                self._fast[key] = compiled
                return compiled(*sig.dynamic_leaves())
        if config.jax_disable_jit:
            return self.fn(*args, **kwargs)
        if isinstance(core.current_interpreter(), Builder):  # called while another function is compiled
            return interpret(current_trace(), self.fn, args, kwargs) if is_user_function(self.fn) else \
                self.fn(*args, **kwargs)
        compiled, sig = self._specialise(args, kwargs)
        return compiled(*sig.dynamic_leaves())

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        return Lowered(self._specialise(args, kwargs)[0])

    def clear_cache(self) -> None:
        self._cache.clear()
        self._fast.clear()

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (), **options: Any):
    """Compile ``fun`` per argument signature; usable as ``@jit`` or ``@partial(jit, static_argnums=...)``."""
    unknown = set(options) - {"device", "backend", "inline", "keep_unused", "abstracted_axes", "donate_argnames",
                              "in_shardings", "out_shardings"}
    if unknown:
        raise TypeError(f"jit() got unexpected keyword argument(s) {sorted(unknown)}")
    if fun is None:
        return lambda f: Jitted(f, static_argnums, static_argnames, donate_argnums)
    if not callable(fun):
        raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
    return Jitted(fun, static_argnums, static_argnames, donate_argnums)


class ClosedJaxpr:
    """What ``make_jaxpr`` returns: the IR of a function, printed in the IR's text form."""

    def __init__(self, ir: Function, out_tree: Any):
        self.ir, self.out_tree = ir, out_tree
        self.jaxpr = ir

    def __str__(self) -> str:
        from transpiler.printer import print_function

        return print_function(self.ir)

    __repr__ = __str__

    @property
    def consts(self) -> list[np.ndarray]:
        return [data for _, data in self.ir.consts]

    def eqns(self) -> list:
        return self.ir.body.ops


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), return_shape: bool = False):
    """``make_jaxpr(f)(*args)``: the IR ``f`` compiles to for these arguments' types."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def make(*args: Any, **kwargs: Any):
        sig = Signature(fun, args, kwargs, static, ())
        abstract_args, abstract_kwargs = sig.abstract_call_args(len(args))
        ir, out_tree = trace_function(fun, abstract_args, abstract_kwargs)
        closed = ClosedJaxpr(ir, out_tree)
        if return_shape:
            shapes = [ShapeDtypeStruct(r.aval.shape, r.aval.dtype) for r in ir.results]
            return closed, tree_util.tree_unflatten(out_tree, shapes)
        return closed

    return make


class ShapeDtypeStruct:
    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False):
        self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    saved = config.jax_disable_jit
    config.update("jax_disable_jit", disable)
    try:
        yield
    finally:
        config.update("jax_disable_jit", saved)


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    sig = Signature(fun, args, kwargs, (), ())
    abstract_args, abstract_kwargs = sig.abstract_call_args(len(args))
    ir, out_tree = trace_function(fun, abstract_args, abstract_kwargs)
    return tree_util.tree_unflatten(out_tree, [ShapeDtypeStruct(r.aval.shape, r.aval.dtype, r.aval.weak_type)
                                               for r in ir.results])
