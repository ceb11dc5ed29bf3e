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
import sys
import weakref
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from srcjax.runtime import dispatch, dtypes, gpu, tree_util
from srcjax.runtime.array import DELETED, Array, _pending_of
from srcjax.runtime.config import TRACE_FLAGS, config
from srcjax.runtime.eager import to_array
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.frontend.calls import current_trace, interpret, is_user_function, trace_function
from srcjax.transpiler.frontend.errors import set_traceback_filtering
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import Function, Value, walk
from srcjax.transpiler.passes import has_effect
from srcjax.transpiler.primitives import collectives, core
from srcjax.transpiler.trees import FLOAT0
from srcjax.transpiler.types import TensorType


def _is_dynamic(leaf: Any) -> bool:
    return isinstance(leaf, (Array, Value, np.ndarray, np.generic, bool, int, float, complex, ShapeDtypeStruct))


def abstractify(leaf: Any) -> TensorType:
    """The type a dynamic argument is compiled for (Python scalars are weak, as in JAX)."""
    if isinstance(leaf, Value):
        return leaf.aval
    if isinstance(leaf, ShapeDtypeStruct):  # (eval_shape, lower: a type without a value)
        return TensorType(dtypes.canonicalize_dtype(leaf.dtype), leaf.shape, leaf.weak_type)
    if type(leaf) is np.ndarray and leaf.dtype.kind in "biufc" and leaf.dtype.isnative:  # (its type, data unread)
        dtype, weak = dtypes.dtype_and_weak(leaf)
        return TensorType(dtype, leaf.shape, weak)
    return to_array(leaf, "argument").aval


class Signature:
    """What a compiled specialisation depends on: the structure, the dynamic leaves' types, static args."""

    def __init__(self, fn: Callable, args: Sequence[Any], kwargs: dict, static_argnums: Sequence[int],
                 static_argnames: Sequence[str], require_hashable: bool = True,
                 concrete: Callable[[int, Any], bool] | None = None):
        """``concrete(i, leaf)``: whether leaf ``i`` (of the flattened dynamic arguments) stays a concrete value in
        the trace rather than becoming a parameter (what a transformation does not trace: ``grad``'s other
        arguments); such a leaf is part of the key by type and ``repr``, so 1, 1.0 and True, or 0.0 and -0.0, are
        told apart."""
        self.static_positions = {i % len(args) if args else i for i in static_argnums if -len(args) <= i < len(args)}
        dynamic_args = [a for i, a in enumerate(args) if i not in self.static_positions]
        static_args = tuple((i, args[i]) for i in sorted(self.static_positions))
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
        static_kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames))
        leaves, self.treedef = tree_util.tree_flatten((dynamic_args, dynamic_kwargs))
        self.leaves = leaves
        # (a float0 array, the tangent of an integer, has no values: it is traced as the constant it is)
        self.dynamic = [_is_dynamic(leaf) and getattr(leaf, "dtype", None) != FLOAT0 for leaf in leaves]
        kept = [d and concrete is not None and bool(concrete(i, leaf))
                for i, (leaf, d) in enumerate(zip(leaves, self.dynamic))]
        self.concrete = kept  # per leaf: a number or array kept concrete
        self.dynamic = [d and not k for d, k in zip(self.dynamic, kept)]
        types = tuple(abstractify(leaf) if d else None for leaf, d in zip(leaves, self.dynamic))
        statics = tuple((type(leaf), repr(leaf), leaf) if k and np.isscalar(leaf) else
                        ("float0", leaf.shape) if getattr(leaf, "dtype", None) == FLOAT0 else leaf
                        for leaf, d, k in zip(leaves, self.dynamic, kept) if not d)
        # (static values by type too, as JAX keys them: 1, 1.0 and True are equal and hash alike, but trace apart)
        typed_statics = (tuple((i, type(v), v) for i, v in static_args),
                         tuple((k, type(v), v) for k, v in static_kwargs))
        try:
            # (and with the named axes bound: a trace of a collective holds its axis's size)
            self.key = (self.treedef, types, statics, typed_statics, config.trace_state(), collectives.bound_axes())
            hash(self.key)
        except TypeError as e:
            if require_hashable:
                from srcjax.runtime.numpy._core import TypeOrValueError  # (JAX: ValueError; earlier srcjax: TypeError)

                raise TypeOrValueError(f"static arguments of a jit-compiled function must be hashable: {e}") from None
            self.key = None  # no cache key: the caller traces every time
        self.types, self.static_args, self.static_kwargs = types, static_args, static_kwargs

    def abstract_call_args(self, n_args: int) -> tuple[list, dict]:
        """The call's arguments with every dynamic leaf replaced by its ``TensorType`` (registered pytree nodes
        stay unbuilt: the front end builds them on its traced values, never on the types)."""
        leaves = [t if d else leaf for leaf, t, d in zip(self.leaves, self.types, self.dynamic)]
        dynamic_args, kwargs = tree_util.unflatten_containers(self.treedef, leaves)
        args, it = [], iter(dynamic_args)
        static = dict(self.static_args)
        for i in range(n_args):
            args.append(static[i] if i in static else next(it))
        kwargs = {**kwargs, **dict(self.static_kwargs)}
        return args, kwargs

    def dynamic_leaves(self) -> list[Any]:
        return [leaf for leaf, d in zip(self.leaves, self.dynamic) if d]

    def donated_leaves(self, args: Sequence[Any], donate_argnums: Sequence[int], kwargs: dict | None = None,
                       donate_argnames: Sequence[str] = ()) -> tuple[int, ...]:
        """Indices into ``dynamic_leaves()`` of the leaves of the donated arguments: the positional ones numbered in
        ``donate_argnums``, the keyword ones named in ``donate_argnames``."""
        # (a negative number donates nothing: JAX matches the arguments' indices against the numbers as given)
        donated = {i for i in donate_argnums if 0 <= i < len(args)} - self.static_positions
        marks = []  # per leaf of the flattened dynamic arguments: whether its argument is donated
        for i, arg in enumerate(args):
            if i not in self.static_positions:
                marks += [i in donated] * len(tree_util.tree_leaves(arg))
        static_names = {k for k, _ in self.static_kwargs}
        for k in sorted(kwargs or {}):  # (the keyword arguments' leaves come after, in the order of their names)
            if k not in static_names:
                marks += [k in donate_argnames] * len(tree_util.tree_leaves(kwargs[k]))
        marks += [False] * (len(self.leaves) - len(marks))
        dynamic = [m for m, d in zip(marks, self.dynamic) if d]
        return tuple(i for i, m in enumerate(dynamic) if m)


def _native_enabled() -> bool:
    return os.environ.get("SRCJAX_NATIVE", "1") != "0"


# the flags' values, read directly per call: ``config.<name>`` goes through ``__getattr__`` and costs more than
# a native call (and a listener would miss tests that restore ``config._values`` wholesale)
_flags = config._values


_HOST_SCALARS = (np.ndarray, np.generic, bool, int, float)
_new_array, _empty, _contiguous = Array.__new__, np.empty, np.ascontiguousarray
# references to a donated buffer while ``_donatable`` looks at it: the Array's slot, the inputs list, the
# local name and ``getrefcount``'s argument. Any more means someone else holds it (a view, np.asarray's
# caller, another Array, a queued job), and the buffer is not reused.
_DONATED_REFS = 4


def _host_inputs(leaves: Sequence[Any]) -> tuple[list[Any], bool] | None:
    """What native code reads for the dynamic arguments: an Array's NumPy buffer, a NumPy array or a scalar
    (the executable converts them to the parameters' dtypes), or the ``dispatch.Pending`` of an Array whose
    computation is queued (or failed: the call then fails the same way, when its results are read); and
    whether there is such a pending one. None if some leaf is not concrete data (a value of a transformation
    in progress), which only the interpreter can handle."""
    inputs, pending = [], False
    for leaf in leaves:
        if type(leaf) is Array:
            try:
                inputs.append(leaf._buffer)  # (not ``_value``: that would wait for a pending one)
                continue
            except AttributeError:
                pass
            state = _pending_of(leaf)
            if state is None or state is DELETED or (state.job.done() and state.job.error is None):
                inputs.append(leaf._value)  # (raises for a deleted Array)
            else:
                inputs.append(state)
                pending = True
        elif isinstance(leaf, _HOST_SCALARS):
            inputs.append(leaf)
        else:
            return None
    return inputs, pending


def _owned(array: np.ndarray) -> np.ndarray:
    """A NumPy argument as a call may keep it: a copy, as JAX copies it onto the device, unless nothing but a
    read-only view could change it (a read-only array that owns its data). Else a queued call would read the
    caller's memory after returning, a result that is the argument would be a view of it, and marking that result
    read-only would leave the caller's array read-only."""
    return array if array.base is None and not array.flags.writeable else array.copy()


def _wrap_result(value: np.ndarray, aval: TensorType) -> Array:
    """An Array of a fresh result buffer; ``aval`` is the result's type, so none has to be built."""
    value.setflags(write=False)  # (a third of the cost of ``flags.writeable = False``)
    out = _new_array(Array)
    out._buffer, out.aval, out._device = value, aval, None
    return out


def _pending_result(pending: dispatch.Pending, aval: TensorType) -> Array:
    out = _new_array(Array)
    out.aval, out._device, out._pending = aval, None, pending
    return out


_in_use = core.interpreters_in_use()  # the live list: empty while nothing is being compiled
_INT32 = (-(1 << 31), 1 << 31)
_NOT_QUICK = object()


def _quick_flatten(x: Any, leaves: list[Any]) -> Any:
    """Flatten ``x`` into ``leaves`` as ``tree_util`` does (same leaf order) and return a hashable key of what the
    types of the leaves depend on: the containers (tuple, list, dict with its keys, None, registered nodes and
    namedtuples with their aux data) and per leaf its type (an Array's aval; a NumPy array's dtype and shape; a
    Python float, int or bool: its Python type, weak as in ``abstractify``). ``_NOT_QUICK`` for anything else
    (other leaves, unhashable aux data, ints beyond int32): the ``Signature`` decides those."""
    kind = type(x)
    if kind is Array:
        leaves.append(x)
        return x.aval
    if kind is tuple or kind is list:
        return _quick_node([kind], x, leaves)
    if kind is dict:
        try:
            keys = sorted(x)
        except TypeError:
            return _NOT_QUICK
        return _quick_node([kind, tuple(keys)], [x[k] for k in keys], leaves)
    if x is None:  # (a node without children)
        return None
    if kind is float or kind is bool or (kind is int and _INT32[0] <= x < _INT32[1]):
        leaves.append(x)
        return kind
    if kind is np.ndarray:
        leaves.append(x)
        return (x.dtype, x.shape)
    # a registered node (an optimizer's state) or a namedtuple: its children, keyed with its hashable aux data
    node = tree_util._registry.get(kind)
    if node is None and isinstance(x, tuple) and hasattr(kind, "_fields"):
        node = tree_util._NAMEDTUPLE
    if node is None:
        return _NOT_QUICK
    children, aux = node.flatten(x)
    try:
        hash(aux)
    except TypeError:
        return _NOT_QUICK
    return _quick_node([kind, aux], children, leaves)


def _quick_node(parts: list[Any], children: Any, leaves: list[Any]) -> Any:
    """A node's key: ``parts`` (what identifies the node) and its children's keys, or ``_NOT_QUICK``."""
    for child in children:
        part = _quick_flatten(child, leaves)
        if part is _NOT_QUICK:
            return _NOT_QUICK
        parts.append(part)
    return tuple(parts)


class NativeFallbackWarning(RuntimeWarning):
    """A jitted function runs in the IR interpreter because the native compiler does not handle something in it
    (said once per function, with the reason)."""


class InternalCompilerError(RuntimeError):
    """The native compiler failed on a function it should handle: a bug in srcjax, never hidden by a fallback."""


_warned: set[tuple] = set()  # the functions NativeFallbackWarning has named


_CACHE_FLAGS = ("jax_compilation_cache_max_size", "srcjax_code_cache_max_entries", "srcjax_code_cache_max_size",
                "jax_enable_compilation_cache", "jax_persistent_cache_min_entry_size_bytes",
                "jax_persistent_cache_min_compile_time_secs")
_cache_flags_changed = [True]
_process_set_up: list[bool] = []  # (runtime/process.py: once, before the first native compilation)
config.on_update(lambda name: _cache_flags_changed.__setitem__(0, True) if name in _CACHE_FLAGS else None)


def _trace_flag_updated(name: str) -> None:
    """An option traces read changed: the jitted functions' quick maps (keyed by the arguments alone) start again;
    their compiled specialisations stay, keyed by the options' values too (``Signature.key``)."""
    if name in TRACE_FLAGS:
        for jitted in list(_jitted):
            jitted._fast.clear()
            jitted._quick.clear()


config.on_update(_trace_flag_updated)


def _traceback_filtering_updated(name: str) -> None:
    if name == "jax_traceback_filtering":
        set_traceback_filtering(config.jax_traceback_filtering != "off")


config.on_update(_traceback_filtering_updated)
_traceback_filtering_updated("jax_traceback_filtering")  # (as the environment set it)


def configure_caches() -> None:
    """Set the process up for native code and pass the caches' options on, once and after each change of them
    (before any compilation through the disk cache)."""
    from srcjax.codegen import cache

    if _cache_flags_changed[0]:
        if not _process_set_up:
            from srcjax.runtime import process

            process.set_up()
            _process_set_up.append(True)
        _cache_flags_changed[0] = False
        cache.configure(config.jax_compilation_cache_max_size, config.jax_enable_compilation_cache,
                        config.jax_persistent_cache_min_entry_size_bytes,
                        config.jax_persistent_cache_min_compile_time_secs)
        cache.set_memory_limits(config.srcjax_code_cache_max_entries, config.srcjax_code_cache_max_size)


def _compile_native(ir: Function) -> Any:
    """The native executable of ``ir`` (through the disk cache, which SRCJAX_CACHE=0 turns off), or None when the
    native compiler does not handle something in it. Any other failure is an ``InternalCompilerError``."""
    from srcjax.codegen.cache import compile_function
    from srcjax.codegen.llvm.engine import TargetError

    configure_caches()
    try:
        return compile_function(ir, config.jax_compilation_cache_dir)
    except TargetError:  # (the user's SRCJAX_CPU)
        raise
    except Exception as e:
        raise InternalCompilerError(
            f"srcjax's native compiler failed on {_described(ir)}: {type(e).__name__}: {e}\n"
            "This is a bug in srcjax; SRCJAX_NATIVE=0 runs jitted functions in the interpreter meanwhile."
        ) from e


def _described(ir: Function) -> str:
    source = ir.source
    if source is None:
        return f"'{ir.name}'"
    return f"'{source.function or ir.name}' ({source.file}:{source.line})"


def _warn_interpreted(ir: Function, reason: str) -> None:
    source = ir.source
    key = (ir.name,) if source is None else (source.file, source.line, source.function)
    if key in _warned:
        return
    _warned.add(key)
    import warnings

    message = f"jit of {_described(ir)} runs in the interpreter, {reason}"
    if source is None:
        warnings.warn(message, NativeFallbackWarning, stacklevel=4)
    else:  # (at the function's definition: what the reason is about)
        warnings.warn_explicit(message, NativeFallbackWarning, source.file, source.line)


class Compiled:
    """One specialisation: the IR and how to call it (natively when the CPU backend compiles it, else by
    interpreting the IR; ``native_error`` says why not, and ``SRCJAX_NATIVE=0`` turns native code off).
    ``donated`` are the indices of the dynamic leaves whose Arrays the call consumes (``donate_argnums``).

    A native call runs on the caller's thread when it is small, and is queued on the dispatch thread
    (``runtime/dispatch.py``) when its work is large or an input is still pending: then it returns Arrays
    whose buffers are pending. A call with effects (``srcjax.debug``'s callbacks) always runs on the caller's
    thread, once its inputs are computed: its prints come out between the caller's, and a breakpoint stops the
    caller. ``call_arrays(args)`` is the call with a tuple of Arrays, as a closure built for
    this specialisation (``_arrays_entry``): the path of ``jit(f)(x)`` once ``f`` is compiled for ``x``."""

    def __init__(self, ir: Function, out_tree: Any, signature: Signature, donated: Sequence[int] = (),
                 native: bool = True):
        self.ir, self.out_tree, self.signature = ir, out_tree, signature
        self.donated = tuple(donated)
        self.effects = any(has_effect(op) for op in ir.body.ops)
        self.native, self.native_error = None, None
        if native and _native_enabled():
            self.native = _compile_native(ir)
            if self.native is None:
                from srcjax.codegen.llvm.compile import unsupported_reason

                self.native_error = f"not compiled natively: {unsupported_reason(ir)}"
                _warn_interpreted(ir, self.native_error)
        self._result_avals = [r.aval for r in ir.results]
        self._result_types = tuple((aval.shape, aval.dtype) for aval in self._result_avals)
        self._single_result = tree_util.treedef_is_leaf(out_tree) and len(ir.results) == 1
        placed = [ir.result_shardings.get(id(r), (None, None)) for r in ir.results]
        # per result, the sharding it is laid out with (a shard_map's out_specs), when any has one
        self._shardings = [s if v is r else None for (v, s), r in zip(placed, ir.results)] \
            if any(v is r for (v, _), r in zip(placed, ir.results)) else None
        self.gpu_error: str | None = None  # why the GPU backend does not compile it (runtime/gpu.py)
        self._gpus = native and _native_enabled() and bool(gpu.gpu_devices())
        self._gpu_default = self._gpus and gpu.default_is_gpu()
        self.call_arrays = self._arrays_entry()

    def __call__(self, *leaves: Any) -> Any:
        return self._call_leaves(leaves)

    def _call_leaves(self, leaves: Sequence[Any]) -> Any:
        if any(type(leaf) is np.ndarray for leaf in leaves):
            leaves = [_owned(leaf) if type(leaf) is np.ndarray else leaf for leaf in leaves]
        checked = _flags["jax_debug_nans"] or _flags["jax_debug_infs"]  # (the interpreter checks every op)
        if checked and not self.donated:
            return self._checked_call(leaves)
        if self._gpus and not checked and (self._gpu_default or any(type(_pending_of(leaf)) is gpu.Resident
                                                                    for leaf in leaves if type(leaf) is Array)):
            results = gpu.call(self, leaves)
            if results is not None:
                return self._build(results)
        native = self.native
        if native is not None and not checked:
            found = _host_inputs(leaves)
            if found is not None and found[1] and self.effects:
                for leaf in leaves:  # (waits for the pending ones)
                    getattr(leaf, "_value", None)
                found = _host_inputs(leaves)
            if found is not None:
                return self._build(self._run_native(native, leaves, *found))
        outs = list(eval_function(self.ir, *leaves))
        if self.donated:
            outs = self._delete_donated(leaves, outs)
        return self._build(outs)

    def _checked_call(self, leaves: Sequence[Any]) -> Any:
        """``jax_debug_nans`` / ``jax_debug_infs`` as JAX has them for a compiled function: its results are checked,
        and only when one holds a NaN (an infinity) does it run again op by op (JAX's "de-optimized version"), to
        raise at the op that made it. So a NaN that only a masked branch computes (``jnp.where(x > 0,
        jnp.log(x), 0.)``) is no error under ``jit``, as in JAX."""
        nans, infs = _flags["jax_debug_nans"], _flags["jax_debug_infs"]
        _flags["jax_debug_nans"] = _flags["jax_debug_infs"] = False
        try:
            results = self._call_leaves(leaves)
        finally:
            _flags["jax_debug_nans"], _flags["jax_debug_infs"] = nans, infs
        values = [np.asarray(leaf) for leaf in tree_util.tree_leaves(results)]
        if not any(v.dtype.kind in "fc" and ((nans and np.isnan(v).any()) or (infs and np.isinf(v).any()))
                   for v in values):
            return results
        print("Invalid nan value encountered in the output of a jax.jit function. Calling the de-optimized version.")
        eval_function(self.ir, *leaves)  # (raises at the op that makes the value; JAX's message, word for word)
        raise FloatingPointError(
            f"invalid value ({'nan' if nans and any(np.isnan(v).any() for v in values) else 'inf'}) in the results "
            f"of {_described(self.ir)}, which no operation of it made when run op by op: it came from an input "
            "or a constant, or from how the compiled code computes it")

    def _build(self, results: list[Array]) -> Any:
        if self._shardings is not None:
            results = [Array(r._value, r.weak_type, s) if s is not None and type(r) is Array else r
                       for r, s in zip(results, self._shardings)]
        return results[0] if self._single_result else tree_util.tree_unflatten(self.out_tree, results)

    def _run_native(self, native: Any, leaves: Sequence[Any], inputs: list[Any], pending: bool) -> list[Array]:
        """Run the native code on ``inputs``: here and now, or queued (``runtime/dispatch.py``)."""
        outs = self._donatable(native, leaves, inputs) if self.donated else [None] * len(self._result_avals)
        if pending or (native.work >= dispatch.ASYNC_MIN_WORK and not self.effects):
            job = dispatch.Job(native.run, inputs, outs, self._result_types)
            results = list(map(_pending_result, job.results(), self._result_avals))
            dispatch.submit(job)
        else:
            outs = tuple(_empty(*t) if o is None else o for o, t in zip(outs, self._result_types))
            native.run(inputs, outs)
            results = list(map(_wrap_result, outs, self._result_avals))
        for i in self.donated:
            if type(leaves[i]) is Array:
                leaves[i].delete()
        return results

    def _donatable(self, native: Any, leaves: Sequence[Any], inputs: list[Any]) -> list[Any]:
        """Per result, the donated input buffer the native code may write it over, or None (a fresh buffer):
        where the plan allows it (``Executable.aliases``) and nothing but the donated Array holds the buffer."""
        outs: list[Any] = [None] * len(self._result_avals)
        aliases = native.aliases()
        for i in self.donated:
            j = aliases.get(i)
            if j is None or outs[j] is not None or type(leaves[i]) is not Array:
                continue
            value = inputs[i]
            if type(value) is not np.ndarray or sum(v is value for v in inputs) != 1:
                continue  # (pending, or also passed as another argument)
            if sys.getrefcount(value) == _DONATED_REFS and value.flags.owndata and value.flags.c_contiguous:
                outs[j] = value
        return outs

    def _delete_donated(self, leaves: Sequence[Any], outs: list[Any]) -> list[Any]:
        """Delete the donated Arrays after an interpreted call; a result that is one of them becomes a new
        Array over the same buffer (the donated one is gone, the result lives on)."""
        donated = [leaves[i] for i in self.donated if type(leaves[i]) is Array]
        outs = [Array(o._value, o.weak_type, o._device) if any(o is d for d in donated) else o for o in outs]
        for leaf in donated:
            leaf.delete()
        return outs

    def _arrays_entry(self) -> Callable[[tuple], Any]:
        """``call_arrays``: for a small native call without donation, the whole call inlined in one closure
        over this specialisation's constants (this is the dispatch cost of ``jit(f)(x)``); else the general
        path. An Array's ``_buffer`` has the parameter's dtype (the signature is the Arrays' types); contiguity
        is checked by ``ascontiguousarray`` (a no-op for contiguous buffers). An Array without a buffer (pending
        or deleted) sends the call down the general path."""
        native = self.native
        if native is None or self.donated or native.work >= dispatch.ASYNC_MIN_WORK or self._gpu_default or \
                self._shardings is not None:
            return self._call_leaves
        run, consts, general = native._call, native.consts, self._call_leaves
        if self._single_result:
            (aval,) = self._result_avals
            shape, dtype = aval.shape, aval.dtype

            def call_one(args: tuple) -> Array:
                try:
                    inputs = [_contiguous(a._buffer) for a in args]
                except AttributeError:
                    return general(args)
                out = _empty(shape, dtype)
                run((*inputs, *consts, out))
                out.setflags(write=False)
                result = _new_array(Array)
                result._buffer, result.aval, result._device = out, aval, None
                return result

            return call_one
        avals, build = self._result_avals, self._build

        def call_many(args: tuple) -> Any:
            try:
                inputs = [_contiguous(a._buffer) for a in args]
            except AttributeError:
                return general(args)
            outs = tuple([_empty(aval.shape, aval.dtype) for aval in avals])
            run((*inputs, *consts, *outs))
            return build(list(map(_wrap_result, outs, avals)))

        return call_many

    def as_text(self) -> str:
        from srcjax.transpiler.printer import print_function

        return print_function(self.ir)


_jitted: weakref.WeakSet = weakref.WeakSet()  # every live ``jit(f)``, for ``clear_caches``
# per function, per (static_argnums, static_argnames, donate_argnums): the compiled specialisations every
# ``jit(f)`` of it shares, as JAX's cache is keyed by the function (``jit(f)(x)`` in a loop traces ``f`` once)
_shared_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Jitted:
    """``jit(f)``: compiled once per signature. Calls from code being compiled inline ``f`` instead."""

    def __init__(self, fn: Callable, static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
                 donate_argnums: Sequence[int] = (), donate_argnames: Sequence[str] = ()):
        self.fn = fn
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        for i in self.donate_argnums:
            if not isinstance(i, int):
                raise TypeError(f"jit: donate_argnums must be ints, got {i!r}")
        self.donate_argnames = (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames)
        self.donate_argnums, self.donate_argnames = _donation_by_both(fn, self.donate_argnums, self.donate_argnames)
        self._plain = not self.static_argnums and not self.static_argnames
        self._native = True  # (False: the traced function is interpreted, never compiled: ``checkpoint``'s)
        self._cache: dict[Any, Compiled] = {}  # in the order compiled (bounded: srcjax_jit_cache_max_entries)
        self._fast: dict[tuple, Callable[[tuple], Any]] = {}  # by the argument types, when all are Arrays
        self._quick: dict[tuple, Compiled] = {}  # by ``_quick_flatten``: pytrees of arrays and scalars
        functools.update_wrapper(self, fn, updated=())
        _jitted.add(self)

    @property
    def __srcjax_inline__(self) -> Callable:
        """What code being compiled interprets in place of a call to this ``jit(f)``: ``f``. (A property, not an
        instance attribute: ``functools.wraps`` copies instance attributes, and ``vmap(jit(f))`` must not
        pass for ``jit(f)``.)"""
        return self.fn

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
        sig = self._signature(args, kwargs)
        compiled = self._cache.get(sig.key)
        if compiled is None:
            ir, out_tree = self._trace(sig, args, kwargs)
            compiled = self._compiled_for(sig, ir, out_tree, self._donated_leaves(sig, args, kwargs))
        return compiled, sig

    def _donated_leaves(self, sig: Signature, args: Sequence[Any], kwargs: dict) -> tuple[int, ...]:
        if not (self.donate_argnums or self.donate_argnames):
            return ()
        return sig.donated_leaves(args, self.donate_argnums, kwargs, self.donate_argnames)

    def _signature(self, args: Sequence[Any], kwargs: dict) -> Signature:
        static_argnums = self._static_argnums_with_names(args)
        try:
            return Signature(self.fn, args, kwargs, static_argnums, self.static_argnames)
        except TypeError:  # an unhashable leaf: one that is not an array (a slice) is the error to report
            _check_dynamic_arguments(self.fn, args, kwargs, static_argnums, self.static_argnames)
            raise

    def _trace(self, sig: Signature, args: Sequence[Any], kwargs: dict) -> tuple[Function, Any]:
        """The IR of ``fn`` for the signature's types, and the structure of its results."""
        if inspect.iscoroutinefunction(self.fn):  # its body would run, and its coroutine be dropped
            raise TypeError(f"function {_described_fn(self.fn)} traced for jit returned a value of type "
                            "<class 'coroutine'>, which is not a valid JAX type (an `async def` function "
                            "returns a coroutine when called; jit compiles plain functions)")
        if not all(sig.dynamic):
            _check_dynamic_arguments(self.fn, args, kwargs, self._static_argnums_with_names(args),
                                     self.static_argnames)
        abstract_args, abstract_kwargs = sig.abstract_call_args(len(args))
        ir, out_tree = trace_function(self.fn, abstract_args, abstract_kwargs)
        if any(op.name == "check" for op in walk(ir.body)):  # (checkify's, not converted)
            from srcjax.runtime.checkify import refuse_unfunctionalized  # (it imports this module)
            refuse_unfunctionalized(ir)
        return ir, out_tree

    def _compiled_for(self, sig: Signature, ir: Function, out_tree: Any, donated: Sequence[int]) -> Compiled:
        """The specialisation of ``sig`` (traced to ``ir``): the cached one, else compiled now and cached."""
        compiled = self._cache.get(sig.key)
        if compiled is not None:
            return compiled
        compiled = Compiled(ir, out_tree, sig, donated, native=self._native)
        limit = config.srcjax_jit_cache_max_entries
        if 0 <= limit <= len(self._cache):  # drop the oldest; the quick paths' maps refill from _cache
            for key in list(self._cache)[: len(self._cache) - limit + 1]:
                del self._cache[key]
            self._fast.clear()
            self._quick.clear()
        if limit != 0:
            self._cache[sig.key] = compiled
        return compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and self._plain and not _in_use and not (_flags["jax_disable_jit"] or _flags["jax_debug_nans"]
                                                               or _flags["jax_debug_infs"]):
            # the common call: Arrays only. Their types are the whole signature, no pytree to flatten
            try:
                call = self._fast[tuple([a.aval for a in args])]
            except (KeyError, AttributeError):  # a new signature, or not only Arrays
                pass
            else:
                return call(args)
            if all(type(a) is Array for a in args):
                compiled, sig = self._specialise(args, kwargs)
                self._fast[tuple([a.aval for a in args])] = compiled.call_arrays
                return compiled(*sig.dynamic_leaves())
            # pytrees of Arrays, NumPy arrays and Python scalars: keyed without building a Signature (the map
            # starts again when an option traces read changes: x64 sets the dtypes of NumPy arrays and scalars)
            leaves: list[Any] = []
            key = _quick_flatten(args, leaves)
            if key is not _NOT_QUICK:
                compiled = self._quick.get(key)
                if compiled is not None:
                    return compiled._call_leaves(leaves)
                compiled, sig = self._specialise(args, kwargs)
                if all(sig.dynamic):  # (every leaf is an argument of the compiled function, in this order)
                    self._quick[key] = compiled
                return compiled(*sig.dynamic_leaves())
        if config.jax_disable_jit:
            return self.fn(*args, **kwargs)
        if isinstance(core.current_interpreter(), Builder):  # called while another function is compiled
            return interpret(current_trace(), self.fn, args, kwargs) if is_user_function(self.fn) else \
                self.fn(*args, **kwargs)
        compiled, sig = self._specialise(args, kwargs)
        return compiled(*sig.dynamic_leaves())

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """``jit(f).trace(*args)``: ``f`` traced for these arguments (JAX's ``jax.stages.Traced``), compiled by
        ``.lower().compile()``; the IR of a specialisation already compiled is reused."""
        from srcjax.runtime.stages import Traced, leaf_names

        sig = self._signature(args, kwargs)
        compiled = self._cache.get(sig.key)
        ir, out_tree = (compiled.ir, compiled.out_tree) if compiled is not None else self._trace(sig, args, kwargs)
        names = leaf_names(self.fn, args, kwargs, sig.static_positions, self.static_argnames)
        return Traced(self, sig, ir, out_tree, names, self._donated_leaves(sig, args, kwargs))

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """``jit(f).lower(*args)``: JAX's ``jax.stages.Lowered`` (``runtime/stages.py``)."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """The results' ``ShapeDtypeStruct``s for these arguments, as ``jax.eval_shape`` of the function."""
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        self._cache.clear()
        self._fast.clear()
        self._quick.clear()

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
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, **options)
    if not callable(fun):
        raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
    if inspect.isgeneratorfunction(fun):
        raise TypeError(f"Expected a function, got a generator function: {fun}")
    _check_argnums(fun, static_argnums, static_argnames, donate_argnums, options.get("donate_argnames") or ())
    placed = options.get("out_shardings")
    jitted = (Jitted if placed is None else _Placed)(fun, static_argnums, static_argnames, donate_argnums,
                                                     options.get("donate_argnames") or ())
    if placed is not None:
        jitted.out_shardings = placed
    try:
        per_options = _shared_caches.setdefault(fun, {})
    except TypeError:  # (a callable that cannot be weakly referenced or hashed keeps its own cache)
        return jitted
    options_key = (jitted.static_argnums, jitted.static_argnames, jitted.donate_argnums, jitted.donate_argnames)
    jitted._cache = per_options.setdefault(options_key, jitted._cache)
    return jitted


class _Placed(Jitted):
    """``jit(f, out_shardings=...)``: the results laid out as the shardings say (one for all of them, or a pytree
    prefix of the results with None where any layout will do)."""

    out_shardings: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.place(super().__call__(*args, **kwargs))

    def place(self, result: Any) -> Any:
        """``result`` laid out as ``out_shardings`` says (its ahead-of-time ``Compiled`` places its results too)."""
        from srcjax.runtime.devices import SingleDeviceSharding, device_put
        from srcjax.runtime.sharding import NamedSharding

        layouts = (NamedSharding, SingleDeviceSharding)
        if isinstance(self.out_shardings, layouts):
            return device_put(result, self.out_shardings)
        return tree_util.tree_map(lambda layout, part: part if layout is None else device_put(part, layout),
                                  self.out_shardings, result, is_leaf=lambda x: x is None or isinstance(x, layouts))


def _check_argnums(fun: Callable, static_argnums: Any, static_argnames: Any, donate_argnums: Any,
                   donate_argnames: Any = ()) -> None:
    """JAX's checks when ``jit`` is applied: argument numbers past ``fun``'s positional parameters (unless it
    takes ``*args``), names it has no parameter for (unless it takes ``**kwargs``) and an argument both static
    and donated are errors then, not ignored at each call. Functions without an inspectable signature (some
    builtins) are checked for the last only, by number."""
    as_tuple = lambda v, one: (v,) if isinstance(v, one) else tuple(v)  # noqa: E731
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        static, donated = sorted(set(as_tuple(static_argnums, int))), sorted(set(as_tuple(donate_argnums, int)))
        if set(static) & set(donated):
            raise ValueError(f"`static_argnums` {static} and `donate_argnums` {donated} cannot intersect.") from None
        return
    kind = inspect.Parameter
    positional = [p for p in params if p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)]
    for name, nums in (("static_argnums", static_argnums), ("donate_argnums", donate_argnums)):
        nums = (nums,) if isinstance(nums, int) else tuple(nums)
        if nums and not any(p.kind == kind.VAR_POSITIONAL for p in params) and \
                (-min(nums) > len(positional) or max(nums) >= len(positional)):
            raise ValueError(f"Jitted function has {name}={nums}, but only accepts {len(positional)} positional "
                             "arguments.")
    _check_static_and_donated(params, as_tuple(static_argnums, int), as_tuple(static_argnames, str),
                              as_tuple(donate_argnums, int), as_tuple(donate_argnames, str))
    for what, names in (("static_argnames", static_argnames), ("donate_argnames", donate_argnames)):
        names = {names} if isinstance(names, str) else set(names)
        if bad := {p.name for p in params if p.kind in (kind.POSITIONAL_ONLY, kind.VAR_POSITIONAL)} & names:
            raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. These are positional-only")
        if any(p.kind == kind.VAR_KEYWORD for p in params):
            continue
        if bad := names - {p.name for p in params if p.kind in (kind.POSITIONAL_OR_KEYWORD, kind.KEYWORD_ONLY)}:
            raise ValueError(f"Jitted function has invalid argnames {bad} in {what}. Function does not take these "
                             "args.")


def _donation_by_both(fun: Callable, donate_argnums: tuple, donate_argnames: tuple) -> tuple[tuple, tuple]:
    """JAX's completion of the donated arguments: given by number only, their names are donated too (when passed
    by keyword), and given by name only, their numbers (when passed by position), for the parameters that may be
    passed either way."""
    if bool(donate_argnums) == bool(donate_argnames):
        return donate_argnums, donate_argnames
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return donate_argnums, donate_argnames
    either = [(i, p.name) for i, p in enumerate(params) if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
    if donate_argnums:
        return donate_argnums, tuple(name for i, name in either if i in donate_argnums)
    return tuple(i for i, name in either if name in donate_argnames), donate_argnames


def _check_static_and_donated(params: list, static_argnums: tuple, static_argnames: tuple, donate_argnums: tuple,
                              donate_argnames: tuple) -> None:
    """An argument cannot be both static and donated (JAX compares them by name, numbers named by the signature)."""
    kind = inspect.Parameter
    positional = [p.name for p in params if p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)]
    named = lambda nums: {positional[i] for i in nums if -len(positional) <= i < len(positional)}  # noqa: E731
    if both := (set(static_argnames) | named(static_argnums)) & (set(donate_argnames) | named(donate_argnums)):
        raise ValueError(f"static_argnames and donate_argnames cannot intersect. Argument names {both} appear in "
                         "both static_argnames and donate_argnames")


def _described_fn(fn: Callable) -> str:
    """``f at file.py:12``, as JAX names a traced function in its errors."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code is not None else name


def _argument_paths(fn: Callable, args: Sequence[Any], kwargs: dict) -> tuple[list[str], dict[str, str]]:
    """The name JAX's errors give each positional and keyword argument: the parameter's (``x``), an item of
    ``*args`` (``a[1]``) or of ``**kwargs`` (``kw['z']``); ``args[i]`` without an inspectable signature."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"args[{i}]" for i in range(len(args))], {k: f"kwargs[{k!r}]" for k in kwargs}
    kind = inspect.Parameter
    positional = [p.name for p in params if p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)]
    var_args = next((p.name for p in params if p.kind == kind.VAR_POSITIONAL), "args")
    var_kwargs = next((p.name for p in params if p.kind == kind.VAR_KEYWORD), "kwargs")
    named = {p.name for p in params if p.kind in (kind.POSITIONAL_OR_KEYWORD, kind.KEYWORD_ONLY)}
    arg_paths = [positional[i] if i < len(positional) else f"{var_args}[{i - len(positional)}]"
                 for i in range(len(args))]
    return arg_paths, {k: k if k in named else f"{var_kwargs}[{k!r}]" for k in kwargs}


def _check_dynamic_arguments(fn: Callable, args: Sequence[Any], kwargs: dict, static_argnums: Sequence[int],
                             static_argnames: Sequence[str]) -> None:
    """JAX's error for an argument leaf that is not an array, a scalar or ``None`` (a string, an object) and
    was not marked static: named by its path, as JAX names it (``x``, ``y['a'][1]``)."""
    arg_paths, kwarg_paths = _argument_paths(fn, args, kwargs)
    static = {i % len(args) for i in static_argnums if -len(args) <= i < len(args)}
    named = [(arg_paths[i], a) for i, a in enumerate(args) if i not in static]
    named += [(kwarg_paths[k], v) for k, v in kwargs.items() if k not in static_argnames]
    for name, value in named:
        for path, leaf in tree_util.tree_flatten_with_path(value)[0]:
            if not _is_dynamic(leaf) and not isinstance(leaf, ShapeDtypeStruct):
                raise TypeError(
                    f"Error interpreting argument to {fn} as an abstract array. The problematic value is of type "
                    f"{type(leaf)} and was passed to the function at path {name}{tree_util.keystr(path)}.\n"
                    "This typically means that a jit-wrapped function was called with a non-array argument, and "
                    "this argument was not marked as static using the static_argnums or static_argnames "
                    "parameters of jax.jit.")


HOT_CALLS = 3  # eager calls of one specialisation after which a ``compiled_when_hot`` function compiles it
_HOT_KEYS = 4096  # signatures a ``compiled_when_hot`` function counts or keeps compiled
_hot_caches: list[tuple[dict, dict, dict]] = []  # each such function's (counts, compiled, jitted), to clear


def effects_barrier() -> None:
    """Wait until the compiled calls made so far have run (JAX's ``jax.effects_barrier``). A call with debug
    callbacks has made them before it returns; this waits for the queued calls of the others."""
    dispatch.wait_all()


def clear_caches() -> None:
    """Drop every compiled specialisation and trace the process holds (JAX's ``jax.clear_caches``): each jitted
    function compiles again on its next call; code still running or referenced stays until it is done."""
    from srcjax.codegen import cache
    from srcjax.runtime import autodiff
    from srcjax.transpiler.frontend import source

    for jitted in list(_jitted):
        jitted.clear_cache()
    for per_options in list(_shared_caches.values()):  # (emptied, not dropped: ``jit(f)`` made later shares them)
        for specialisations in per_options.values():
            specialisations.clear()
    for caches in _hot_caches:
        for c in caches:
            c.clear()
    autodiff.clear_traces()
    source.clear_caches()
    cache.clear_memory()


def compiled_when_hot(*static_argnums: int, flags: Callable[[], Any] = lambda: None):
    """For library functions made of many primitives (the random samplers): called eagerly with the same
    shapes, dtypes and static arguments ``HOT_CALLS`` times, they run as one compiled call from then on.
    Each primitive run eagerly costs microseconds of Python, a compiled call a few in all; compiling only
    what is called again keeps one-off calls (and the test suite) free of compile time. ``flags`` reads
    the configuration the function's trace depends on; each value gets its own compiled versions."""

    def spec(x: Any) -> Any:
        if isinstance(x, Array):
            return x.shape, x.dtype, x.weak_type
        if isinstance(x, (np.ndarray, np.generic)):
            return x.shape, x.dtype
        if isinstance(x, (bool, int, float, complex)):
            return type(x)
        raise TypeError  # (a traced value, or something the compiler would not take as an argument)

    def wrap(fn: Callable) -> Callable:
        calls: dict[Any, int] = {}
        specialised: dict[Any, Compiled] = {}  # by (flags, x64, the arguments' specs and static values)
        jitted: dict[Any, Jitted] = {}  # by the flags' value
        _hot_caches.append((calls, specialised, jitted))

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            if core.current_interpreter() is not core.base_interpreter() or config.jax_disable_jit:
                return fn(*args)
            try:
                flag = flags()
                key = (flag, config.trace_state(),
                       tuple((type(a), a) if i in static_argnums else spec(a) for i, a in enumerate(args)))
                compiled = specialised.get(key)
            except TypeError:  # an unhashable static argument or an argument of no known type
                return fn(*args)
            if compiled is None:
                if len(calls) > _HOT_KEYS:  # (bounded like jit's caches: the counts start again)
                    calls.clear()
                calls[key] = count = calls.get(key, 0) + 1
                if count < HOT_CALLS:
                    return fn(*args)
                if flag not in jitted:
                    jitted[flag] = Jitted(fn, static_argnums, (), ())
                if len(specialised) > _HOT_KEYS:
                    specialised.clear()
                compiled = specialised[key] = jitted[flag]._specialise(args, {})[0]
            return compiled(*[a for i, a in enumerate(args) if i not in static_argnums])

        call.specialised = specialised  # (what has been compiled: for tests)
        return call

    return wrap


class ClosedJaxpr:
    """What ``make_jaxpr`` returns: the IR of a function, printed in the IR's text form."""

    def __init__(self, ir: Function, out_tree: Any):
        self.ir, self.out_tree = ir, out_tree
        self.jaxpr = ir

    def __str__(self) -> str:
        from srcjax.transpiler.printer import print_function

        return print_function(self.ir)

    __repr__ = __str__

    @property
    def consts(self) -> list[np.ndarray]:
        return [data for _, data in self.ir.consts]

    @property
    def in_avals(self) -> list[TensorType]:
        """The arguments' types (shape, dtype, weak bit), as JAX's ``ShapedArray``s."""
        return [p.aval for p in self.ir.params]

    @property
    def out_avals(self) -> list[TensorType]:
        return [r.aval for r in self.ir.results]

    @property
    def eqns(self) -> list:
        """The top-level ops (a property, as JAX's ``ClosedJaxpr.eqns``)."""
        return self.ir.body.ops


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), return_shape: bool = False):
    """``make_jaxpr(f)(*args)``: the IR ``f`` compiles to for these arguments' types."""
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def make(*args: Any, **kwargs: Any):
        sig = Signature(fun, args, kwargs, static, ())
        if not all(sig.dynamic):  # (a string, an object: JAX's error, as jit gives it)
            _check_dynamic_arguments(fun, args, kwargs, static, ())
        abstract_args, abstract_kwargs = sig.abstract_call_args(len(args))
        ir, out_tree = trace_function(fun, abstract_args, abstract_kwargs)
        closed = ClosedJaxpr(ir, out_tree)
        if return_shape:
            shapes = [ShapeDtypeStruct(r.aval.shape, r.aval.dtype) for r in ir.results]
            return closed, tree_util.tree_unflatten(out_tree, shapes)
        return closed

    return make


class ShapeDtypeStruct:
    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False, *, sharding: Any = None):
        from srcjax.runtime.mesh_context import struct_sharding

        self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type
        self.sharding = struct_sharding(sharding)  # (a description: a value of this type may be laid out so)

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        layout = "" if self.sharding is None else f", sharding={self.sharding!r}"
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak}{layout})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:  # (JAX's also compares weak_type: tests/runtime/test_aot_stages.py relies on it not)
        return self.shape, self.dtype, self.sharding


def typeof(x: Any) -> TensorType:
    """The abstract type of ``x`` (shape, dtype, weak bit, and the ``sharding`` its layout gives it), as JAX's
    ``typeof`` gives its ``ShapedArray``."""
    from srcjax.runtime.mesh_context import typed

    return typed(x, abstractify(x))


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Inside it JAX computes operations on concrete values at once, even under ``jit``. srcjax always does:
    an operation whose inputs are known while a function is read is computed then (a Python ``if`` on it works),
    so this context changes nothing."""
    yield


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
    if not all(sig.dynamic):  # (a string, an object: JAX's error, as jit gives it)
        _check_dynamic_arguments(fun, args, kwargs, (), ())
    abstract_args, abstract_kwargs = sig.abstract_call_args(len(args))
    ir, out_tree = trace_function(fun, abstract_args, abstract_kwargs)
    return tree_util.tree_unflatten(out_tree, [ShapeDtypeStruct(r.aval.shape, r.aval.dtype, r.aval.weak_type)
                                               for r in ir.results])
