"""Calls from interpreted code, and the entry point that turns a Python function into IR.

User functions (defined outside srcjax, NumPy and the standard library, with source on disk) are
interpreted from their own source, so their control flow is compiled too; functions defined inside
interpreted code (``def`` and ``lambda``) become ``InterpretedFunction``s, which interpret themselves
even when library code (``tree_map``, ``lax.scan``) calls them. Everything else is called directly.
"""

from __future__ import annotations

import builtins
import contextlib
import threading
import functools
import inspect
import linecache
import os
import sys
import sysconfig
import types
import typing
from typing import Any, Callable, Iterator, Sequence

import libcst as cst

from srcjax.transpiler.array_methods import ArrayMethods
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.frontend import builtin_calls
from srcjax.transpiler.frontend.concrete import TraceContext, converted, evaluate, reachable, runs
from srcjax.transpiler.frontend.errors import MissingSourceWarning, Note, TranspileError, without_library_frames
from srcjax.transpiler.frontend.frame import MUTATORS, RET, RETVAL, Enclosing, Exit, Frame, is_symbolic, refuse_raise
from srcjax.transpiler.frontend.source import FunctionSource, SourceNotFound, function_source, running_function
from srcjax.transpiler.ir import ConcretizationError, Function, SourceLoc, Value
from srcjax.transpiler.passes import clean
from srcjax.transpiler.primitives import core
from srcjax.transpiler.trees import FLOAT0, Float0Zeros, tree_flatten, tree_unflatten
from srcjax.transpiler.types import TensorType

MAX_DEPTH = 1000  # nested interpreted calls, as Python's default recursion limit allows nested calls

# srcjax's own folders: in the repository transpiler/, runtime/, codegen/ and srcjax/ are siblings; installed,
# the first three sit inside srcjax/ (this file is <folder>/frontend/calls.py either way)
_here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIBRARY_ROOTS = tuple(
    {os.path.join(_here, pkg) + os.sep for pkg in ("transpiler", "runtime", "codegen", "srcjax")}
    | ({_here + os.sep} if os.path.isfile(os.path.join(_here, "__init__.py")) else set())  # installed: srcjax/
    | {os.path.realpath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
       if (p := sysconfig.get_paths().get(key))}
)


class Trace:
    """One compilation: its builder, the call depth, and what its caller says about it (``TraceContext``). A
    trace that records into the builder of the trace in progress (a custom rule's, a ``custom_jvp``'s body)
    shares that trace's context."""

    def __init__(self, builder: Builder, context: TraceContext | None = None):
        self.builder = builder
        self.depth = 0
        self.active: dict[Any, int] = {}  # the user functions being read, and how many times over (recursion)
        self.base_frames = _frames()  # (Python's stack below the trace: see ``_deepen``)
        if context is None:
            stack = getattr(_traces, "stack", None)
            context = stack[-1].context if stack and stack[-1].builder is builder else TraceContext()
        self.context = context


_traces = threading.local()  # per thread: the compilations in progress, innermost last


@contextlib.contextmanager
def active(trace: Trace) -> Iterator[Trace]:
    stack = _traces.__dict__.setdefault("stack", [])
    stack.append(trace)
    try:
        yield trace
    finally:
        stack.pop()


def _known_value(value: Value, exact: bool) -> Any:
    """``value``'s number for a Python conversion of it (see ``concrete.converted``), else None."""
    trace = enclosing_trace()
    if trace is None:
        return None
    try:
        return converted(trace, value, exact)
    except Exception:  # noqa: BLE001 - a value that cannot be computed here is not known
        return None


Value.known_value = staticmethod(_known_value)


def enclosing_trace() -> Trace | None:
    """The trace being built in this thread, if any."""
    stack = getattr(_traces, "stack", None)
    return stack[-1] if stack else None


def current_trace() -> Trace:
    stack = getattr(_traces, "stack", None)
    if stack:
        return stack[-1]
    return Trace(Builder("eager"))  # not installed as interpreter: every bind runs eagerly


def is_user_function(fn: Any) -> bool:
    if isinstance(fn, InterpretedFunction):
        return True
    if not isinstance(fn, types.FunctionType):
        return False
    return is_user_file(fn.__code__.co_filename)


def is_user_file(path: str) -> bool:
    """Whether code of the file ``path`` is the user's: outside srcjax, NumPy and the standard library."""
    if path.startswith("<"):  # a notebook's or REPL's cell is read through linecache; other code has no source
        return bool(linecache.getlines(path))
    return _outside_libraries(path)


@functools.lru_cache(maxsize=4096)
def _outside_libraries(path: str) -> bool:  # (cached: the transformations ask for each function they reach, each call)
    return not os.path.realpath(path).startswith(_LIBRARY_ROOTS) and not path.startswith(_LIBRARY_ROOTS)


def call(frame: Frame, fn: Any, args: list, kwargs: dict, node: cst.CSTNode) -> Any:
    """Call ``fn`` from interpreted code at ``node``."""
    trace = frame.trace
    if fn is builtins.print and trace.context.kind != "jit":
        trace.context.reusable = False  # (JAX's transformations outside jit run the function, and print, each call)
        if runs(trace) is False:
            return None  # (in the branch of an `if` that is not taken: JAX does not run it)
    if _shows_text(fn):  # print(x), str(x), f"{x}".format: a traced value shows as JAX prints its tracer
        args, kwargs = frame.printable((args, kwargs), node)
    elif fn is builtins.bool and len(args) == 1 and not kwargs and is_symbolic(args[0]) and reachable(trace):
        known = evaluate(trace, args[0])  # (JAX's bool() of a tracer over a concrete value: the value's truth)
        if known is not None:
            try:
                return bool(known)
            except Exception as e:  # noqa: BLE001 - reported at the call site
                raise frame.wrap(node, e) from e
    if args and (fn is builtins.hash or fn in (builtins.set, builtins.frozenset, dict.fromkeys) or (
            isinstance(getattr(fn, "__self__", None), (dict, set, frozenset))
            and getattr(fn, "__name__", "") in _HASHING_METHODS)):
        for key in [*args[0]] if fn in (builtins.set, builtins.frozenset, dict.fromkeys) and \
                isinstance(args[0], (list, tuple)) else [args[0]]:
            frame.hashable(node, key)
    if fn in (builtins.locals, builtins.vars) and not args and not kwargs:
        return frame.python_locals()
    if fn in (builtins.eval, builtins.exec) and len(args) == 1 and not kwargs:  # (the function's names, not ours)
        args = [args[0], frame.globals, frame.python_locals()]
    if fn is builtins.isinstance and len(args) == 2 and not kwargs and is_symbolic(args[0]) and \
            _names_array_type(args[1]):
        return True  # (a traced value is a jax.Array, a jnp.ndarray, as JAX's tracers are)
    if builtin_calls.handles(fn):  # max, min, any, all: selects where they test a traced value
        try:
            return builtin_calls.call(frame, fn, args, kwargs, node)
        except (TranspileError, Exit):
            raise
        except Exception as e:  # noqa: BLE001 - reported at the call site
            raise frame.wrap(node, e) from e
    if fn is builtins.super and not args and not kwargs:  # (Python's zero-argument form reads the caller's frame)
        return _super(frame, node)
    if fn is builtins.range and any(is_symbolic(a) for a in args):
        try:
            return SymbolicRange(*args)
        except TypeError as e:
            raise frame.wrap(node, e) from e
    target, args = _unwrap(fn, args)
    if target is not None:
        key = getattr(target, "node", None) or getattr(target, "__code__", None) or target
        if trace.active.get(key) and trace.context.guards and runs(trace) is False:
            # a recursive call in the branch of an `if` known not to be taken (under grad, say): not read, as JAX
            # does not run it (reading it would recurse where the base case is that branch's `if`)
            raise Exit("dead")
        trace.depth += 1
        trace.active[key] = trace.active.get(key, 0) + 1
        try:
            if trace.depth > MAX_DEPTH:
                raise _too_deep(frame, node, trace)
            if trace.depth == _DEEP:
                _deepen(trace)
            return interpret(trace, target, args, kwargs, caller=frame, node=node)
        except TranspileError as e:
            raise _called_here(e, frame, node, target) from e.__cause__
        finally:
            trace.depth -= 1
            trace.active[key] -= 1
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, (list, dict, set)) and getattr(fn, "__name__", "") in MUTATORS:
        frame.check_outer_write(node, owner, f"a {type(owner).__name__} (its .{fn.__name__})")
    try:
        return fn(*args, **kwargs)
    except TranspileError as e:  # (from user code that a library function, lax.cond say, called)
        raise _called_here(e, frame, node, fn) from e.__cause__
    except Exit:
        raise
    except RecursionError:
        raise frame.error(node, "calls nest too deeply (unbounded recursion?)") from None
    except Exception as e:  # noqa: BLE001 - reported at the call site
        raise frame.wrap(node, e) from e


_HASHING_METHODS = frozenset({"get", "pop", "setdefault", "add", "discard", "remove", "__getitem__",
                              "__contains__"})  # (the dict and set methods that hash their first argument)


def _names_array_type(classes: Any) -> bool:
    """Whether an ``isinstance`` class argument (a class, a tuple or a union of them) names an array class of
    srcjax's (``jax.Array``, ``jnp.ndarray``: the runtime's ``Array``, which has the IR values' methods)."""
    if isinstance(classes, tuple):
        return any(_names_array_type(c) for c in classes)
    if isinstance(classes, types.UnionType) or typing.get_origin(classes) is typing.Union:
        return any(_names_array_type(c) for c in typing.get_args(classes))
    return isinstance(classes, type) and issubclass(classes, ArrayMethods)


def _too_deep(frame: Frame, node: cst.CSTNode, trace: Trace) -> TranspileError:
    """A RecursionError (JAX's type for a function that calls itself without end) at the call too deep."""
    note = ""
    if trace.context.guards:  # (the recursion goes on under an `if` on a traced value: both sides are read)
        note = ("the call is inside an `if` (or `a if c else b`) on a traced value, whose sides are both compiled, "
                "so a recursion that stops on a traced value never stops here; make what it stops on static "
                "(static_argnums), or write the recursion as a lax.while_loop")
    error = frame.wrap(node, RecursionError(f"calls nest deeper than {MAX_DEPTH} levels (unbounded recursion?)"))
    error.note = note
    error.args = (error.render(),)
    return error


_CALL_NOTES = 8  # the calls an error inside a called function names, innermost first


def _called_here(error: TranspileError, frame: Frame, node: cst.CSTNode, fn: Any) -> TranspileError:
    """``error``, raised inside the call of ``fn`` at ``node``, with a note naming that call: an error in a helper
    says which chain of calls from the compiled function led to it, as a C++ compiler names each instantiation."""
    if error.loc is None:
        return error
    loc = frame.loc(node)
    calls = getattr(error, "call_notes", 0)
    if calls > _CALL_NOTES or loc == error.loc or any(note.loc == loc for note in error.notes):
        return error
    target = fn.partial.func if isinstance(fn, _PartialCall) else fn
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
    if calls == _CALL_NOTES:
        error.notes.append(Note("(and the calls that led there)", None))
    else:
        error.notes.append(Note(f"in {name.rsplit('<locals>.', 1)[-1]}(), called here", loc,
                                frame.source.file.span(node)))
    error.call_notes = calls + 1
    error.args = (error.render(),)
    return error


_DEEP = 50  # nested interpreted calls at which Python's recursion limit is checked (once: counting frames is slow)
_MAX_RECURSION_LIMIT = 30_000  # (what the C stack of a thread of 8 MB was seen to allow)


def _frames() -> int:
    frame, frames = sys._getframe(), 0
    while frame is not None:
        frame, frames = frame.f_back, frames + 1
    return frames


def _deepen(trace: Trace) -> None:
    """Raise Python's recursion limit (never lower it) so that MAX_DEPTH nested interpreted calls fit: each uses
    several Python frames where the program's own call uses one: what the ``_DEEP`` calls so far used each, scaled
    up to MAX_DEPTH."""
    frames = _frames()
    per_call = (frames - trace.base_frames) / _DEEP
    needed = min(int(frames + 1.25 * per_call * (MAX_DEPTH - _DEEP)) + 200, _MAX_RECURSION_LIMIT)
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def _super(frame: Frame, node: cst.CSTNode) -> Any:
    """``super()`` in an interpreted method: ``super(__class__, first argument)``, as Python's compiler makes it."""
    cell = frame.closure.get("__class__")
    code = getattr(frame.fn, "__code__", None)
    first = code.co_varnames[0] if code is not None and code.co_argcount else None
    if cell is None or first is None or first not in frame.env:
        raise frame.error(node, "super(): no arguments, outside a method of a class")
    return super(cell.cell_contents, frame.env[first])


_TEXT_BUILTINS = (builtins.print, builtins.str, builtins.repr, builtins.format, builtins.ascii)


def _shows_text(fn: Any) -> bool:
    """Whether ``fn`` turns its arguments into text: print, str, repr, format, ascii, or a string's format."""
    if any(fn is f for f in _TEXT_BUILTINS):
        return True
    return isinstance(getattr(fn, "__self__", None), str) and getattr(fn, "__name__", "") in ("format", "format_map")


def _unwrap(fn: Any, args: list) -> tuple[Any, list]:
    """The user function a call reaches (through partials, bound methods and jit wrappers), if any, with the
    arguments it gets; ``(None, args)`` when the call reaches library code, which is called as it is."""
    given = args
    while True:
        if isinstance(fn, functools.partial):
            if fn.keywords:  # (over a user function, or a method or callable object that reaches one)
                return (_PartialCall(fn), args) if _unwrap(fn.func, [])[0] is not None else (None, given)
            fn, args = fn.func, [*fn.args, *args]
        elif isinstance(fn, types.MethodType) and is_user_function(fn.__func__):
            fn, args = fn.__func__, [fn.__self__, *args]
        elif getattr(fn, "__srcjax_inline__", None) is not None:
            fn = fn.__srcjax_inline__  # jit-wrapped functions are interpreted from their own source
        elif not isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, type)) and \
                is_user_function(next((vars(k)["__call__"] for k in type(fn).__mro__ if "__call__" in vars(k)), None)):
            fn, args = type(fn).__call__, [fn, *args]  # a callable object: its ``__call__``, read from source
        else:
            return (fn, args) if is_user_function(fn) else (None, given)


class _PartialCall:
    """A ``functools.partial`` with keywords over a user function, interpreted with its bound arguments."""

    def __init__(self, partial: functools.partial):
        self.partial = partial


def interpret(trace: Trace, fn: Any, args: Sequence[Any], kwargs: dict, caller: Frame | None = None,
              node: cst.CSTNode | None = None) -> Any:
    """Run a user function by interpreting its source (or call it, when its source cannot be found)."""
    if isinstance(fn, _PartialCall):
        p = fn.partial
        target, call_args = _unwrap(p.func, [*p.args, *args])
        return interpret(trace, target, call_args, {**p.keywords, **kwargs}, caller, node)
    if isinstance(fn, InterpretedFunction):
        return fn.run(trace, args, kwargs, caller, node)
    if caller is not None and inspect.isgeneratorfunction(running_function(fn)):
        return fn(*args, **kwargs)  # (a generator a compiled function calls runs as Python, as under JAX's tracing)
    try:
        source = function_source(fn)
    except SourceNotFound as e:
        _warn_traced(fn, str(e))
        return fn(*args, **kwargs)
    try:
        bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError as e:
        if caller is not None and node is not None:
            raise caller.wrap(node, TypeError(f"{fn.__name__}(): {e}")) from None
        raise TypeError(f"{fn.__name__}(): {e}") from None  # (the transformed function itself, called so)
    bound.apply_defaults()
    frame = Frame(trace, source, fn, dict(bound.arguments))
    return run_function_body(frame, source.node)


_warned: set[Any] = set()  # the code objects MissingSourceWarning has named


def _warn_traced(fn: Any, why: str) -> None:
    code = getattr(running_function(fn), "__code__", None)
    if code is None or code in _warned:
        return
    _warned.add(code)
    import warnings

    where = f"{code.co_filename}:{code.co_firstlineno}"
    warnings.warn_explicit(
        f"srcjax traces '{code.co_name}' ({where}) as JAX does, without its source: {why}. Python control flow on "
        "traced values (an `if` or `while` on an array) is then not available in it",
        MissingSourceWarning, code.co_filename, code.co_firstlineno)


def _warn_if_sourceless(fn: Any) -> None:
    """A function of the user's defined where no source is kept (``python -c``, a script on stdin, a terminal
    REPL, ``exec``): traced, and said so."""
    target = running_function(fn) if callable(fn) else fn
    code = getattr(target, "__code__", None)
    if isinstance(target, types.FunctionType) and code is not None and code.co_filename.startswith("<"):
        _warn_traced(target, f"it was defined in {code.co_filename}, whose text Python does not keep (python -c, a "
                             "script on standard input, a terminal REPL, exec)")


def run_function_body(frame: Frame, node: cst.FunctionDef | cst.Lambda) -> Any:
    frame.env[RET] = False
    try:
        if isinstance(node, cst.Lambda):
            return frame.eval(node.body)
        frame.run_body(node.body)
    except Exit as e:
        if e.kind == "return":
            return e.value
        if e.kind == "dead":
            raise
        raise frame.error(node, f"'{e.kind}' outside a loop") from None
    if frame.env.get(RET) is not False:
        return frame.env.get(RETVAL)
    return None


class InterpretedFunction:
    """A ``def`` or ``lambda`` evaluated inside interpreted code; calling it interprets its body."""

    # (slots and a property, not ``__dict__``: ``functools.wraps`` copies the wrapped function's ``__dict__``
    # onto its wrapper, whose own signature and body must stay its own)
    __slots__ = ("frame", "node", "signature", "source", "enclosing", "__dict__", "__weakref__")

    def __init__(self, frame: Frame, node: cst.FunctionDef | cst.Lambda):
        self.frame, self.node = frame, node
        self.__name__ = node.name.value if isinstance(node, cst.FunctionDef) else "<lambda>"
        self.__qualname__ = self.__name__
        self.__doc__ = None
        self.signature = _signature(frame, node.params)
        self.source = FunctionSource(frame.source.file, node, self.__name__)
        self.enclosing = Enclosing(frame, frame.scopes)  # (looked up at each call: Python's late binding)

    @property
    def __signature__(self) -> inspect.Signature:  # (what ``inspect.signature`` gives: keywords bind as for a ``def``)
        return self.signature

    def __repr__(self) -> str:
        loc = self.frame.loc(self.node)
        return f"<function {self.__name__} at {os.path.basename(loc.file)}:{loc.line}>"

    def __call__(self, *args, **kwargs):
        return self.run(current_trace(), args, kwargs)

    def run(self, trace: Trace, args: Sequence[Any], kwargs: dict, caller: Frame | None = None,
            node: cst.CSTNode | None = None) -> Any:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            error = TypeError(f"{self.__name__}(): {e}")
            if caller is not None and node is not None:
                raise caller.wrap(node, error) from None
            raise error from None
        bound.apply_defaults()
        frame = Frame(trace, self.source, self.frame.fn, dict(bound.arguments), outer=self.enclosing)
        frame.globals, frame.closure = self.frame.globals, self.frame.closure
        return run_function_body(frame, self.node)


def _signature(frame: Frame, params: cst.Parameters) -> inspect.Signature:
    P = inspect.Parameter
    out: list[inspect.Parameter] = []

    def add(param: cst.Param, kind: Any) -> None:
        default = P.empty if param.default is None else frame.eval(param.default)
        out.append(P(param.name.value, kind, default=default))

    for p in params.posonly_params:
        add(p, P.POSITIONAL_ONLY)
    for p in params.params:
        add(p, P.POSITIONAL_OR_KEYWORD)
    if isinstance(params.star_arg, cst.Param):
        out.append(P(params.star_arg.name.value, P.VAR_POSITIONAL))
    for p in params.kwonly_params:
        add(p, P.KEYWORD_ONLY)
    if params.star_kwarg is not None:
        out.append(P(params.star_kwarg.name.value, P.VAR_KEYWORD))
    return inspect.Signature(out)


class SymbolicRange:
    """``range`` with bounds known only at run time (``for i in range(n)`` with a symbolic ``n``)."""

    def __init__(self, *args: Any):
        if len(args) == 1:
            args = (0, args[0], 1)
        elif len(args) == 2:
            args = (*args, 1)
        self.start, self.stop, self.step = args
        if is_symbolic(self.step):
            raise TypeError("range(): the step must be a static number inside a compiled function")

    def __iter__(self) -> Iterator[Any]:  # (only a ``for`` statement over it compiles: to a loop)
        raise ConcretizationError("range() with a bound that is a traced value can only be the iterable of a `for` "
                                  "statement (compiled as a loop): iterating it otherwise (a comprehension, list(), "
                                  "unpacking) needs its number of items, which is only known when the compiled "
                                  "function runs")

    def __len__(self) -> int:
        raise ConcretizationError("len() of a range() whose bound is a traced value is only known when the compiled "
                                  "function runs")


# -- the entry point -----------------------------------------------------------------------------------------
def trace_function(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict | None = None,
                   name: str | None = None, differentiated: Sequence[int] = (),
                   context: TraceContext | None = None) -> tuple[Function, Any]:
    """Interpret ``fn`` on ``args``: leaves that are ``TensorType``s become parameters, the rest stay static.
    ``differentiated`` says, per parameter, how many nested transforms differentiate it: a custom derivative
    applied to a value that depends on one runs its rule in place of the function, as under JAX's JVP tracers.
    ``context`` says what the caller knows of the parameters' values (see ``frontend.concrete``).

    Returns the IR function and the pytree structure of its results.
    """
    kwargs = kwargs or {}
    target, call_args = _unwrap(fn, list(args))
    source_loc = _source_loc(target)
    name = name or getattr(fn, "__name__", None) or "f"
    name = name if name.isidentifier() else "f"
    builder = Builder(name, source_loc, capture=True)
    leaves, tree = tree_flatten((list(args), kwargs))
    names = _param_names(fn, args, kwargs)
    params = [builder.param(leaf, names[i] if i < len(names) else None) if isinstance(leaf, TensorType) else leaf
              for i, leaf in enumerate(leaves)]
    builder.differentiated = {id(p): int(n) for p, n in zip(builder.function.params, differentiated) if n}
    trace = Trace(builder, context or TraceContext())
    with core.interpreting(builder), active(trace):
        args, kwargs = tree_unflatten(tree, params)  # (a registered pytree's own code sees the traced values)
        target, call_args = _unwrap(fn, list(args))
        try:
            if target is not None:
                out = interpret(trace, target, call_args, kwargs)
            else:
                _warn_if_sourceless(fn)
                out = fn(*args, **kwargs)
        except TranspileError as e:
            if getattr(e, "conditional_raise", False):
                raise refuse_raise(e) from None
            if e.loc is not None and _traces.stack == [trace] and \
                    (shown := without_library_frames(e, is_user_file)) is not None:
                raise shown from None  # (its message names the user's lines; nothing interpreted handles it now)
            raise
    out_leaves, out_tree = tree_flatten(out)
    if any(getattr(leaf, "dtype", None) == FLOAT0 for leaf in out_leaves):  # (returned as bool zeros)
        out_leaves, out_tree = tree_flatten(tree_unflatten(out_tree, [Float0Zeros.wrap(x) for x in out_leaves]))
    for leaf in out_leaves:
        if not (isinstance(leaf, Value) or hasattr(leaf, "aval") or isinstance(leaf, (int, float, complex, bool))
                or hasattr(leaf, "dtype")):
            raise TranspileError(f"{name} returned a value of type {type(leaf).__name__}; compiled functions "
                                 "return arrays, numbers and pytrees of them", source_loc)
    with core.interpreting(builder):
        ir = builder.finish(out_leaves)
    return clean(ir), out_tree


def _source_loc(fn: Any) -> SourceLoc | None:
    try:
        if isinstance(fn, InterpretedFunction):
            return fn.source.loc(fn.node)
        if isinstance(fn, _PartialCall):
            fn = fn.partial.func
        if fn is None:
            return None
        source = function_source(fn)
        return source.loc(source.node)
    except (SourceNotFound, TypeError, OSError):
        return None


def _param_names(fn: Any, args: Sequence[Any], kwargs: dict) -> list[str]:
    """A name per leaf of (args, kwargs), from the signature: ``x``, or ``params_W`` for pytree leaves."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    out: list[str] = []
    for i, arg in enumerate(args):
        base = names[i] if i < len(names) and names[i].isidentifier() else f"arg{i}"
        out.extend(_leaf_names(base, arg))
    for key in sorted(kwargs):
        out.extend(_leaf_names(key, kwargs[key]))
    return out


def _leaf_names(base: str, tree: Any) -> list[str]:
    if isinstance(tree, dict):
        return [n for k in sorted(tree) for n in _leaf_names(f"{base}_{k}", tree[k])]
    if isinstance(tree, (tuple, list)):
        return [n for i, v in enumerate(tree) for n in _leaf_names(f"{base}_{i}", v)]
    leaves, _ = tree_flatten(tree)
    return [base] if len(leaves) == 1 else [f"{base}_{i}" for i in range(len(leaves))]
