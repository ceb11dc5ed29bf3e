"""``srcjax.debug`` (``jax.debug``): ``print``, ``callback`` and ``breakpoint``, which act while the program runs.

Each binds one ``debug_callback`` op (transpiler/primitives/debug.py) whose operands are the array leaves of its
arguments; the other leaves (strings, None, objects) stay with the op's ``Callback``. Eager, the call happens at
once; in a compiled function, each time the program reaches the op, on that run's values; under ``grad`` once, on
the primal values; under ``vmap`` once per example. The Python function is given srcjax ``Array``s (JAX gives its
arrays), weakly typed where the argument was (a Python scalar).

``print`` formats as JAX does: ``fmt.format(*args, **kwargs)`` on the arrays (``x=[1. 2.]``), under the NumPy print
options of the moment ``print`` was called, written to ``sys.stdout`` with a newline. Arguments the format does not
use are an error, as in JAX (an f-string, formatted before srcjax sees the values, is the usual cause).
"""

from __future__ import annotations

import contextlib
import math
import string
import sys
import threading
from typing import Any, Callable, Iterator

import numpy as np

from srcjax.runtime import debugger, tree_util
from srcjax.runtime.array import Array
from srcjax.runtime.eager import to_array
from srcjax.runtime.errors import callback_failed
from srcjax.transpiler.ir import Value
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.debug import Callback, debug_callback_p

_NUMBERS = (bool, int, float, complex, np.generic, np.ndarray)


def callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> Any:
    """Call ``callback(*args, **kwargs)`` when the program runs, with the values of the arrays among the arguments.
    ``callback(ordered=True)`` gives the function taking ``callback, *args, **kwargs`` (JAX's two-call form).
    ``ordered`` calls keep program order, as every call does here; ``partitioned`` changes nothing on one device."""
    del partitioned

    def debug_callback(function: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(function):
            raise TypeError("first argument to jax.debug.callback must be callable, but got an object of type "
                            f"{type(function)}")
        name = f"callback({getattr(function, '__name__', type(function).__name__)})"
        _bind(name, function, c_args, c_kwargs, ordered)

    if callback is not None:
        debug_callback(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_callback received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return debug_callback


def print(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,  # noqa: A001
          skip_format_check: bool = False, **kwargs: Any) -> Any:
    """Print ``fmt.format(*args, **kwargs)`` when the program runs, with the arrays' values (not an f-string: it
    would be formatted at once, on traced values). ``print(ordered=True)`` gives the function taking ``fmt, *args,
    **kwargs`` (JAX's two-call form)."""
    del partitioned

    def debug_print(fmt: str, *p_args: Any, **p_kwargs: Any) -> None:
        if not skip_format_check:
            _FormatChecker().format(fmt, *p_args, **p_kwargs)
        placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
        options = np.get_printoptions()

        def show(*values: Any, **named: Any) -> None:
            if placeholders:
                with np.printoptions(**options):
                    message = fmt.format(*values, **named)
            else:  # (arguments only reach here past the format check): written after the text, as JAX does
                message = " ".join((fmt, *(str(v) for v in values)))
            sys.stdout.write(message + "\n")

        def spell(texts: list[str]) -> tuple[str, str]:
            return "print", ", ".join([repr(fmt), *texts])

        _bind(f"print({fmt!r})", show, p_args, p_kwargs, ordered, spell)

    if fmt is not None:
        debug_print(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"debug_print received unexpected arguments in the two-call form: {args=} {kwargs=}")
    return debug_print


def breakpoint(*, backend: str | None = None, filter_frames: bool = True, num_frames: int | None = None,  # noqa: A001
               ordered: bool = False, token: Any = None, **kwargs: Any) -> Any:
    """Stop in a debugger when the program reaches this point, with the frames of the functions around it and the
    values of their locals (traced ones as that run computed them). The debugger is the highest-priority one
    registered (``debugger.register_debugger``), else ``backend``'s: by default JAX's text debugger ``jdb`` on
    stdin/stdout (``p x``, ``pp x``, ``u``, ``d``, ``l``, ``ll``, ``bt``, ``c``, ``q``). With ``token`` (a pytree of
    arrays) it stops once those are computed, and returns ``token``."""
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    frames = debugger.current_frames(filter_frames)
    if num_frames is not None:
        frames = frames[:num_frames]
    # the locals holding traced values are operands, which the debugger sees computed; the rest it sees as they
    # were when the function was read
    traced = [[k for k, v in f.locals.items() if _holds_traced(v)] for f in frames]
    values = [f.locals[k] for f, keys in zip(frames, traced) for k in keys]

    def stop(_token: Any, computed: list[Any]) -> None:
        it = iter(computed)
        shown = [f.with_locals({**f.locals, **{k: next(it) for k in keys}}) for f, keys in zip(frames, traced)]
        debugger.enter(shown, backend, **kwargs)

    _bind("breakpoint", stop, (token, values), {}, ordered, operand=lambda leaf: isinstance(leaf, Value))
    return token


def _holds_traced(value: Any) -> bool:
    try:
        return any(isinstance(leaf, Value) for leaf in tree_util.tree_leaves(value))
    except Exception:  # noqa: BLE001 - a local that does not flatten is shown as it is
        return False


def _bind(name: str, function: Callable[..., None], args: tuple, kwargs: dict, ordered: bool,
          spell: Callable[[list[str]], tuple[str, str]] | None = None,
          operand: Callable[[Any], bool] | None = None) -> None:
    """Bind ``debug_callback`` on the leaves of ``(args, kwargs)`` that are arrays (or that ``operand`` accepts);
    when it runs, ``function`` gets the arguments rebuilt around their values. ``spell(texts)`` writes the call in
    emitted Python, given the source texts of its arguments."""
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    is_operand = [(operand or _is_array)(leaf) for leaf in leaves]
    operands = [leaf if isinstance(leaf, (Array, Value)) else to_array(leaf)
                for leaf, on in zip(leaves, is_operand) if on]
    # weakly typed as the arguments eager; traced, the values come from the program's buffers, which JAX never
    # gives a weak type (a Python scalar given to a jitted print is an int32 array there)
    eager = core.current_interpreter() is core.base_interpreter()
    weak = [eager and x.aval.weak_type for x in operands]

    def rebuild(values: list[Any]) -> tuple[tuple, dict]:
        it = iter(values)
        return tree_util.tree_unflatten(tree, [next(it) if on else leaf for leaf, on in zip(leaves, is_operand)])

    def call(*arrays: np.ndarray) -> None:
        if _effects.silent:
            return
        call_args, call_kwargs = rebuild([Array(a, weak_type=w) for a, w in zip(arrays, weak)])
        _deliver(lambda: _run(function, call_args, call_kwargs, eager))

    def source(texts: list[str]) -> tuple[str, str] | None:
        call_args, call_kwargs = rebuild([_Source(t) for t in texts])
        parts = [_text(a) for a in call_args] + [None if t is None else f"{k}={t}" for k, v in call_kwargs.items()
                                                 for t in [_text(v)]]
        return None if spell is None or None in parts else spell(parts)

    debug_callback_p.bind(*operands, callback=Callback(name, call, source), ordered=bool(ordered))


# -- eager control flow ------------------------------------------------------------------------------------------------
# Eager ``lax`` control flow runs Python where JAX runs a compiled program, and sometimes runs more than the program
# would: a ``cond``'s untaken branch, run for its types, and a loop's first trip again when its weak initial carry
# must take the body's type. Callbacks there happen as in the program: not at all in the branch, once for the trip.
class _Effects(threading.local):
    silent = 0  # runs only for their types: the callbacks in them do not happen
    held: Hold | None = None  # where callbacks wait (the innermost loop that may start again), None: they happen


class Hold(list):
    """The callbacks of a loop that may start again, waiting; ``release`` when it no longer may."""

    def __init__(self, outer: Hold | None):
        super().__init__()
        self.outer, self.released = outer, False

    def release(self) -> None:
        """The loop is past the point it may start again: the callbacks so far happen (or wait for a loop around
        it), and the next ones are not held here."""
        if self.released:
            return
        self.released = True
        if _effects.held is self:
            _effects.held = self.outer
        for run in self:
            _deliver(run)
        self.clear()


_effects = _Effects()


def _run(function: Callable[..., None], args: tuple, kwargs: dict, eager: bool) -> None:
    """``function(*args, **kwargs)``; in a traced program, its exception is JAX's ``JaxRuntimeError`` for a callback
    that failed while a compiled program ran, of the callback's own type too (runtime/errors.py)."""
    try:
        function(*args, **kwargs)
    except Exception as error:
        if eager:
            raise
        raise callback_failed(error) from error


def _deliver(run: Callable[[], None]) -> None:
    if _effects.held is not None:
        _effects.held.append(run)
    else:
        run()


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Code run only for the types it gives: its callbacks do not happen."""
    _effects.silent += 1
    try:
        yield
    finally:
        _effects.silent -= 1


@contextlib.contextmanager
def held() -> Iterator[Hold]:
    """A loop that may start again: its callbacks wait until it releases the ``Hold`` (or ends); if it raises (to
    start again), they never happen."""
    outer = _effects.held
    hold = _effects.held = Hold(outer)
    try:
        yield hold
    except BaseException:
        hold.released = True
        raise
    else:
        hold.release()
    finally:
        _effects.held = outer


def current_hold() -> Hold | None:
    """The hold of the innermost loop that may start again (a loop takes it as it begins)."""
    return _effects.held


def _is_array(leaf: Any) -> bool:
    """A leaf that becomes an operand (one JAX's ``shaped_abstractify`` accepts): arrays and numbers."""
    if isinstance(leaf, (Array, Value)):
        return True
    return isinstance(leaf, _NUMBERS) and np.asarray(leaf).dtype.kind in "biufc"


class _FormatChecker(string.Formatter):
    """JAX's check of ``print``'s arguments: fields that name no argument raise (``KeyError``, ``IndexError``), and
    so do arguments no field uses."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return ""

    def check_unused_args(self, used_args: Any, args: Any, kwargs: Any) -> None:
        unused_args = [arg for i, arg in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be passing an "
                             "f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead should pass in a regular "
                             "string.")


class _Source(str):
    """An operand's text in emitted Python, in the place of its value while the call is written."""


def _text(value: Any) -> str | None:
    """``value`` as Python source: an operand's text, a container of such, a literal; None where there is none."""
    if isinstance(value, _Source):
        return str(value)
    if value is None or isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value)):
        return repr(value)
    if type(value) in (tuple, list):
        items = [_text(v) for v in value]
        if None in items:
            return None
        if type(value) is list:
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if type(value) is dict and all(isinstance(k, (str, int)) for k in value):
        items = [_text(v) for v in value.values()]
        return None if None in items else "{" + ", ".join(f"{k!r}: {t}" for k, t in zip(value, items)) + "}"
    return None


__all__ = ["breakpoint", "callback", "print"]
