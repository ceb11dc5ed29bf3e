"""The partial evaluator: runs a function's libcst tree statement by statement.

Every name is bound to a static Python value or to a symbolic IR ``Value``. Work on static values runs
as ordinary Python; operations on symbolic values bind primitives into the current ``Builder``. Control
flow on symbolic values is handed to ``frontend.control``, which builds ``cond``/``while``/``for`` ops.

Exits (``return``, ``break``, ``continue``) reached on a static path raise ``Exit`` signals; inside a
region built for a symbolic branch they become flags (``$ret``, ``$brk``, ``$cont``) that the region
yields, and the statements after such a branch run under a guard.
"""

from __future__ import annotations

import builtins
import contextlib
import linecache
import operator
import threading
from collections.abc import ItemsView, KeysView, Mapping, Sequence as AbcSequence, Set as AbcSet
from typing import Any, Callable, Iterator, Sequence

import libcst as cst

from srcjax.transpiler.frontend import concrete, values
from srcjax.transpiler.frontend.errors import Note, TranspileError, user_frames
from srcjax.transpiler.frontend.source import FunctionSource, local_names
from srcjax.transpiler.ir import ConcretizationError, SourceLoc, Value
from srcjax.transpiler.trees import tree_flatten, tree_unflatten

RET, RETVAL, BRK, CONT = "$ret", "$retval", "$brk", "$cont"
FLAGS = (RET, BRK, CONT)


class Exit(Exception):
    """A static ``return``/``break``/``continue``, unwinding to the construct that handles it; or ``dead``: a
    ``raise`` in a region of an ``if`` on a traced value whose branch is known not to be taken, which ends the
    region (``control.branch``)."""

    def __init__(self, kind: str, value: Any = None, site: Any = None):
        self.kind, self.value, self.site = kind, value, site  # (site: the ``return``'s ``Assignment``)


class Undefined:
    """A name bound on only some paths through symbolic control flow; using it is an error."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul, cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv, cst.Modulo: operator.mod, cst.Power: operator.pow,
    cst.MatrixMultiply: operator.matmul, cst.BitAnd: operator.and_, cst.BitOr: operator.or_,
    cst.BitXor: operator.xor, cst.LeftShift: operator.lshift, cst.RightShift: operator.rshift,
}
_AUGMENTED: dict[type, type] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply, cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr, cst.BitXorAssign: cst.BitXor, cst.LeftShiftAssign: cst.LeftShift,
    cst.RightShiftAssign: cst.RightShift,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    cst.LessThan: operator.lt, cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
    cst.Is: operator.is_, cst.IsNot: operator.is_not, cst.In: lambda a, b: a in b,
    cst.NotIn: lambda a, b: a not in b,
}
_HASHED = (Mapping, AbcSet, KeysView, ItemsView)  # containers whose ``in`` hashes the item


def _traced_in_key(key: Any) -> Any:
    """The traced value hashing ``key`` would hash (it, or one in a tuple or frozenset of it), else None."""
    if is_symbolic(key):
        return key
    if isinstance(key, (tuple, frozenset)):
        return next((t for t in map(_traced_in_key, key) if t is not None), None)
    return None


_UNARY: dict[type, Callable[[Any], Any]] = {
    cst.Minus: operator.neg, cst.Plus: operator.pos, cst.BitInvert: operator.invert,
}

# the methods that change a list, dict or set in place (a loop's body calling one is scanned for; a call of one on
# an object made before a region of control flow on traced values is refused: ``Frame.check_outer_write``)
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
                      "popitem", "sort", "reverse", "__setitem__", "__delitem__", "difference_update",
                      "intersection_update", "symmetric_difference_update"})

_ERROR_TYPES = (TypeError, ValueError, IndexError, KeyError, AttributeError, NameError, ZeroDivisionError,
                NotImplementedError, OverflowError, RuntimeError, AssertionError)
_error_classes: dict[type, type] = {}


def _raised_in_user_code(error: BaseException) -> Note | None:
    """Where ``error`` was raised in user code that ran as Python, not read (a generator, a function with no
    source, one a library called): the innermost frame of the user's files in its traceback."""
    from srcjax.transpiler.frontend.calls import is_user_file

    frames = user_frames(error, is_user_file)
    if not frames:
        return None
    found = frames[-1]
    code = found.tb_frame.f_code
    line, end_line, column, end_column = next(
        (p for i, p in enumerate(code.co_positions()) if i == found.tb_lasti // 2), (found.tb_lineno, None, None, None))
    line = line or found.tb_lineno
    text = linecache.getline(code.co_filename, line)
    length = end_column - column if end_line == line and column is not None and end_column is not None else 1
    loc = SourceLoc(code.co_filename, line, (column or 0) + 1, text, code.co_name)
    return Note(f"raised here, in {code.co_name}() (run as Python)", loc, length)


def located_error(error: BaseException, loc: SourceLoc | None, length: int, note: str = "") -> TranspileError:
    """A ``TranspileError`` at the user's line that is still an instance of the original error's type (the
    program's own exception class too, as JAX's tracing lets it through) and keeps its attributes."""
    if isinstance(error, TranspileError):
        return error
    standard = any(t in _ERROR_TYPES for t in type(error).__mro__)
    message = str(error) if not isinstance(error, KeyError) else repr(error.args[0]) if error.args else "KeyError"
    if not standard:
        message = f"{type(error).__name__}: {message}"
    cls = _located_class(type(error))
    err = cls.__new__(cls)
    err.__dict__.update(getattr(error, "__dict__", {}))  # (the program's own fields: a handler may read them)
    TranspileError.__init__(err, message, loc, note=note, length=length)
    return err


def _located_class(error_type: type) -> type:
    """``TranspileError`` and ``error_type`` in one class; where Python cannot combine them (a base with its own
    layout or metaclass), the standard types ``error_type`` is."""
    cls = _error_classes.get(error_type)
    if cls is None:
        try:
            cls = type(f"TranspileError[{error_type.__name__}]", (TranspileError, error_type), {})
            cls.__new__(cls)
        except Exception:  # noqa: BLE001 - a class Python cannot make or instantiate without arguments
            bases: list[type] = []  # (every standard type, most derived first: a TypeError that is also a
            for t in error_type.__mro__:  # ValueError stays both)
                if t in _ERROR_TYPES and not any(issubclass(b, t) for b in bases):
                    bases.append(t)
            name = f"TranspileError[{', '.join(b.__name__ for b in bases)}]"
            cls = type(name, (TranspileError, *bases), {}) if bases else TranspileError
        _error_classes[error_type] = cls
    return cls


def refuse_raise(error: TranspileError) -> TranspileError:
    """What a program's exception raised inside an `if` or loop on a traced value becomes when it leaves the
    function being compiled: whether it would be raised is only known when the compiled function runs."""
    caught = error.__cause__
    what = type(caught).__name__ if caught is not None else "an exception"
    refused = located_error(ConcretizationError(
        f"cannot raise {what} inside an `if` or loop on a traced value: whether it is raised is only known when the "
        "compiled function runs"), error.loc, error.length,
        note=f"it says: {error.message}\nJAX cannot trace this either (its `if` needs a concrete value); check the "
             "condition outside the compiled function, or mark the argument it depends on static")
    refused.concretization = True
    return refused


def is_symbolic(x: Any) -> bool:
    return isinstance(x, Value)


class Assignment:
    """Where a local was last assigned (the frame's ``@name`` entries): errors about the value point there. It
    prints as its line number, as the messages that cite a line print it."""

    __slots__ = ("loc", "length")

    def __init__(self, loc: SourceLoc, length: int):
        self.loc, self.length = loc, length

    def __str__(self) -> str:
        return str(self.loc.line)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def note(self, message: str) -> Note:
        return Note(message, self.loc, self.length)


class Frame:
    """One activation of an interpreted function: its locals and where its free names resolve."""

    def __init__(self, trace: Any, source: FunctionSource, fn: Callable[..., Any] | None,
                 env: dict[str, Any], outer: dict[str, Any] | None = None):
        self.trace, self.source, self.fn = trace, source, fn
        self.env = env
        self.outer = outer  # what a function defined inside interpreted code sees of its definition (Enclosing)
        self.globals = getattr(fn, "__globals__", {}) if fn is not None else {}
        self.global_names: dict[str, cst.Global] = {}  # names a ``global`` statement declared, and where
        self.nonlocal_names: dict[str, cst.Nonlocal] = {}  # names a ``nonlocal`` statement declared, and where
        self.scopes: list[tuple[dict[str, Any], frozenset[str]]] = []  # the comprehensions being run
        self.outside: list[dict[str, Any]] = []  # the variables around each of them (the function's first)
        self.handling: list[TranspileError] = []  # the exceptions the ``except`` clauses being run caught
        self._made_outside: set[int] | None = None  # (``made_outside``, found at the first write it is asked about)
        code = getattr(fn, "__code__", None)
        cells = getattr(fn, "__closure__", None) or ()
        self.closure = dict(zip(code.co_freevars, cells)) if code is not None else {}

    # -- errors -------------------------------------------------------------------------------------------
    def loc(self, node: cst.CSTNode) -> SourceLoc:
        return self.source.loc(node)

    def error(self, node: cst.CSTNode, message: str, note: str = "", notes: Sequence[Note] = ()) -> TranspileError:
        return TranspileError(message, self.loc(node), note=note, length=self.source.file.span(node), notes=notes)

    def note(self, node: cst.CSTNode, message: str) -> Note:
        """A ``note:`` of an error, at ``node``."""
        return Note(message, self.loc(node), self.source.file.span(node))

    def wrap(self, node: cst.CSTNode, error: BaseException) -> TranspileError:
        note = ""
        if isinstance(error, ConcretizationError):
            note = ("the value is symbolic inside a compiled function; use jnp.where or lax.cond for a value "
                    "that depends on data, or mark the argument static (static_argnums)")
        located = located_error(error, self.loc(node), self.source.file.span(node), note)
        located.concretization = isinstance(error, ConcretizationError) or getattr(error, "concretization", False)
        if located is not error and (origin := _raised_in_user_code(error)) is not None and origin.loc != located.loc:
            located.notes.append(origin)
            located.args = (located.render(),)
        return _tag(located)

    # -- names --------------------------------------------------------------------------------------------
    def lookup(self, name: str, node: cst.CSTNode) -> Any:
        if name in self.global_names:
            if name in self.globals:
                return self.globals[name]
            if hasattr(builtins, name):
                return getattr(builtins, name)
            raise _tag(located_error(NameError(f"name '{name}' is not defined"), self.loc(node), len(name)))
        if name in self.env:
            value = self.env[name]
        elif name in local_names(self.source.node) and not any(name in env for env, _ in self.scopes):
            raise _tag(located_error(UnboundLocalError(f"cannot access local variable '{name}' where it is not "
                                                       "associated with a value"), self.loc(node), len(name)))
        elif self.outer is not None and name in self.outer:
            value = self.outer[name]
        elif name in self.closure:
            try:
                value = self.closure[name].cell_contents
            except ValueError:
                raise self.error(node, f"free variable '{name}' is referenced before assignment") from None
        elif name in self.globals:
            value = self.globals[name]
        elif hasattr(builtins, name):
            value = getattr(builtins, name)
        else:
            raise _tag(located_error(NameError(f"name '{name}' is not defined"), self.loc(node), len(name)))
        if isinstance(value, Undefined):
            raise self.error(node, f"'{name}' may be undefined here", note=value.why)
        return value

    def peek(self, name: str) -> Any:
        """What ``name`` refers to here, or None (no error when it is unbound)."""
        if name in self.global_names:
            return self.globals.get(name, getattr(builtins, name, None))
        for scope in (self.env, self.outer if self.outer is not None else {}):
            if name in scope:
                return scope[name]
        if name in self.closure:
            try:
                return self.closure[name].cell_contents
            except ValueError:
                return None
        return self.globals.get(name, getattr(builtins, name, None))

    def assign_name(self, name: str, value: Any, node: cst.CSTNode) -> None:
        if name in self.global_names:
            self.assign_global(name, value, node)
            return
        if name in self.nonlocal_names:
            self.assign_nonlocal(name, value, node)
            return
        if isinstance(value, Value) and value.name is None:
            value.name = name
        self.env[name] = value
        self.env["@" + name] = Assignment(self.loc(node), self.source.file.span(node))

    def assign_nonlocal(self, name: str, value: Any, node: cst.CSTNode) -> None:
        """``nonlocal v; v = value``: the defining function's variable is assigned, as Python assigns it (in the
        interpreted frame that defined this function, or in the closure cell of one that is not read). Inside an
        `if` or loop on a traced value that would happen on some run-time paths only: refused (a loop over a static
        range is unrolled instead)."""
        if not concrete.at_top_level(self.trace):
            error = self.error(node, f"cannot assign the nonlocal variable '{name}' inside an `if` or loop on a "
                                     "traced value", note="whether it runs, or how often, is only known when the "
                                                          "compiled function runs; return the value instead",
                               notes=[self.note(self.nonlocal_names[name], f"'{name}' is declared nonlocal here")])
            error.concretization = True
            raise error
        if isinstance(self.outer, Enclosing) and name in self.outer:
            self.outer.assign(name, value)
        else:  # (a variable of a function that is not being read: its cell, as Python assigns it)
            self.closure[name].cell_contents = value

    def assign_global(self, name: str, value: Any, node: cst.CSTNode) -> None:
        """``global g; g = value``: the module's variable is assigned while the function is read, as JAX runs the
        Python while tracing (under jit the value is a traced one, as JAX's global gets a tracer). Inside an `if`
        or loop on a traced value the assignment would happen on some run-time paths only: refused (a loop over
        a static range is unrolled instead, and then each trip assigns)."""
        notes = [self.note(self.global_names[name], f"'{name}' is declared global here")]
        if not concrete.at_top_level(self.trace):
            error = self.error(node, f"cannot assign the global variable '{name}' inside an `if` or loop on a traced "
                                     "value", note="whether it runs, or how often, is only known when the compiled "
                                                   "function runs; return the value and assign it outside",
                               notes=notes)
            error.concretization = True  # (a static-range loop retries unrolled)
            raise error
        if self.fn is None:
            raise self.error(node, f"cannot assign the global variable '{name}': the function's module is not known",
                             notes=notes)
        self.globals[name] = value

    # -- statements -----------------------------------------------------------------------------------------
    def run_body(self, body: cst.BaseSuite | Sequence[cst.CSTNode]) -> None:
        self.exec_block(flatten_statements(body))

    def exec_block(self, stmts: Sequence[cst.CSTNode]) -> None:
        from srcjax.transpiler.frontend import control

        for i, stmt in enumerate(stmts):
            self.exec_stmt(stmt)
            if any(self.env.get(flag, False) is not False for flag in FLAGS):
                control.after_exit_flags(self, stmts[i + 1 :], stmt)
                return

    def exec_stmt(self, stmt: cst.CSTNode) -> None:
        handler = getattr(self, "stmt_" + type(stmt).__name__, None)
        if handler is None:
            raise self.error(stmt, f"unsupported statement in a compiled function: {type(stmt).__name__}",
                             note=_UNSUPPORTED_HINTS.get(type(stmt).__name__, ""))
        with self.trace.builder.at(self.loc(stmt)):
            try:
                handler(stmt)
            except (TranspileError, Exit):
                raise
            except Exception as e:  # noqa: BLE001 - reported at the user's line, never as an internal trace
                raise self.wrap(stmt, e) from e

    def stmt_Expr(self, stmt: cst.Expr) -> None:
        self.eval(stmt.value)

    def stmt_Pass(self, stmt: cst.Pass) -> None:
        pass

    def stmt_Assign(self, stmt: cst.Assign) -> None:
        value = self.eval(stmt.value)
        for target in stmt.targets:
            self.assign(target.target, value)

    def stmt_AnnAssign(self, stmt: cst.AnnAssign) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value))

    def stmt_AugAssign(self, stmt: cst.AugAssign) -> None:
        op = _BINARY[_AUGMENTED[type(stmt.operator)]]
        target = stmt.target
        if isinstance(target, cst.Subscript):
            base = self.eval(target.value)
            index = self.eval_index(target)
            current = base[index]
            self.assign(target, op(current, self.eval(stmt.value)))
            return
        current = self.eval(target)
        value = self.eval(stmt.value)
        if isinstance(current, (list, dict, set)) and not is_symbolic(value):
            # in-place on a Python container (``out += [x]``) keeps aliasing, as Python does
            iop = {operator.add: operator.iadd, operator.or_: operator.ior}.get(op, op)
            self.assign(target, iop(current, value))
        else:
            self.assign(target, op(current, value))

    def stmt_Return(self, stmt: cst.Return) -> None:
        raise Exit("return", None if stmt.value is None else self.eval(stmt.value),
                   Assignment(self.loc(stmt), self.source.file.span(stmt)))

    def stmt_Break(self, stmt: cst.Break) -> None:
        raise Exit("break")

    def stmt_Continue(self, stmt: cst.Continue) -> None:
        raise Exit("continue")

    def stmt_If(self, stmt: cst.If) -> None:
        from srcjax.transpiler.frontend import control

        control.exec_if(self, stmt)

    def stmt_Match(self, stmt: cst.Match) -> None:
        """``match`` on a value known while the function is read, with Python's patterns: the first case whose
        pattern matches (binding its names) and whose guard holds runs. A traced subject is refused."""
        subject = self.eval(stmt.subject)
        if is_symbolic(subject):
            raise self.error(stmt.subject, "match on a traced value: which case runs is only known when the compiled "
                                           "function runs", note="use lax.switch, or an if/elif on the value")
        for case in stmt.cases:
            bound: dict[str, Any] = {}
            if not self._matches(case.pattern, subject, bound):
                continue
            for name, value in bound.items():
                self.assign_name(name, value, case.pattern)
            if case.guard is not None and not self._concrete_truth(case.guard):
                continue
            self.run_body(case.body)
            return

    def _concrete_truth(self, node: cst.BaseExpression) -> bool:
        value = self.eval(node)
        if is_symbolic(value):
            raise self.error(node, "a match guard on a traced value: whether the case runs is only known when the "
                                   "compiled function runs", note="use jnp.where or lax.cond inside the case")
        return bool(value)

    def _matches(self, pattern: cst.MatchPattern, subject: Any, bound: dict[str, Any]) -> bool:
        """Whether ``subject`` matches ``pattern`` (Python's rules), collecting the names it binds in ``bound``."""
        if isinstance(pattern, cst.MatchAs):
            if pattern.pattern is not None and not self._matches(pattern.pattern, subject, bound):
                return False
            if pattern.name is not None:
                bound[pattern.name.value] = subject
            return True
        if isinstance(pattern, cst.MatchValue):
            return bool(subject == self.eval(pattern.value))
        if isinstance(pattern, cst.MatchSingleton):
            return subject is self.eval(pattern.value)
        if isinstance(pattern, cst.MatchOr):
            return any(self._matches(p.pattern, subject, bound) for p in pattern.patterns)
        if isinstance(pattern, (cst.MatchList, cst.MatchTuple)):
            if not isinstance(subject, AbcSequence) or isinstance(subject, (str, bytes, bytearray)):
                return False
            items, elements = list(subject), list(pattern.patterns)
            star = next((i for i, e in enumerate(elements) if isinstance(e, cst.MatchStar)), None)
            if star is None:
                return len(items) == len(elements) and all(
                    self._matches(e.value, x, bound) for e, x in zip(elements, items))
            after = len(elements) - star - 1
            if len(items) < len(elements) - 1:
                return False
            head, rest, tail = items[:star], items[star: len(items) - after], items[len(items) - after:]
            if elements[star].name is not None:
                bound[elements[star].name.value] = rest
            return all(self._matches(e.value, x, bound) for e, x in zip(elements[:star] + elements[star + 1:],
                                                                          head + tail))
        if isinstance(pattern, cst.MatchMapping):
            if not isinstance(subject, Mapping):
                return False
            keys = [self.eval(e.key) for e in pattern.elements]
            if any(k not in subject for k in keys) or not all(
                    self._matches(e.pattern, subject[k], bound) for e, k in zip(pattern.elements, keys)):
                return False
            if pattern.rest is not None:
                bound[pattern.rest.value] = {k: v for k, v in subject.items() if k not in keys}
            return True
        if isinstance(pattern, cst.MatchClass):
            cls = self.eval(pattern.cls)
            if not isinstance(subject, cls):
                return False
            names = getattr(cls, "__match_args__", ())
            if len(pattern.patterns) > len(names) and not (len(pattern.patterns) == 1 and cls in (
                    bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)):
                raise self.error(pattern, f"{cls.__name__}() accepts {len(names)} positional sub-patterns "
                                          f"({len(pattern.patterns)} given)")
            if len(pattern.patterns) == 1 and not names:  # (int(x), str(s): the subject itself)
                return self._matches(pattern.patterns[0].value, subject, bound)
            pairs = [(names[i], p.value) for i, p in enumerate(pattern.patterns)]
            pairs += [(k.key.value, k.pattern) for k in pattern.kwds]
            return all(hasattr(subject, a) and self._matches(p, getattr(subject, a), bound) for a, p in pairs)
        raise self.error(pattern, f"unsupported pattern: {type(pattern).__name__}")

    def stmt_While(self, stmt: cst.While) -> None:
        from srcjax.transpiler.frontend import control

        control.exec_while(self, stmt)

    def stmt_For(self, stmt: cst.For) -> None:
        from srcjax.transpiler.frontend import control

        control.exec_for(self, stmt)

    def stmt_FunctionDef(self, stmt: cst.FunctionDef) -> None:
        from srcjax.transpiler.frontend.calls import InterpretedFunction

        fn: Any = InterpretedFunction(self, stmt)
        for decorator in reversed(stmt.decorators):
            fn = self.eval(decorator.decorator)(fn)
        self.assign_name(stmt.name.value, fn, stmt)

    def stmt_Assert(self, stmt: cst.Assert) -> None:
        """An assertion is checked while the function is read. On a traced value that needs the value's
        concrete value, which the trace has where JAX's would (under grad, jvp, vjp or vmap outside jit, for a
        value computed from the arguments; in an ``if`` on a traced value, only where its branch is taken);
        under jit it is refused, as JAX refuses it."""
        test = self.eval(stmt.test)
        if is_symbolic(test):
            reached = concrete.runs(self.trace)
            if reached is False:
                return  # (in the branch not taken: JAX does not run it)
            if reached is None and not concrete.at_top_level(self.trace):
                self.unroll_loop(stmt.test, "an assert")
                raise self.error(stmt.test, "cannot assert on a value inside an `if` or loop on a traced value",
                                 note="the assertion would run on some run-time paths only; assert before the `if` or "
                                      "loop, or return the value and check it outside the compiled function")
            known = concrete.evaluate(self.trace, test)
            if known is None:
                why = ("under vmap a value computed from a mapped argument is one per example" if
                       self.trace.context.kind == "vmap" else "under jit an assertion sees abstract values")
                raise self.error(stmt.test, "cannot assert on a value that is only known when the compiled function "
                                            "runs", note=f"{why}, as in JAX; return the value and check it outside "
                                                         "the compiled function (outside jit, grad and vmap check "
                                                         "assertions on the arguments' values)")
            test = known
        if not test:
            message = self.eval(stmt.msg) if stmt.msg is not None else None
            raise AssertionError(message) if message is not None else AssertionError()

    def stmt_Raise(self, stmt: cst.Raise) -> None:
        if stmt.exc is None:
            if not self.handling:
                raise self.error(stmt, "a bare 'raise' outside an `except` clause")
            raise self.handling[-1]  # (located where it was first raised)
        reached = concrete.runs(self.trace)
        if reached is False:
            raise Exit("dead")  # (in the branch of an `if` not taken on these inputs: JAX does not run it)
        conditional = reached is None and bool(self.trace.context.outer_objects)
        if conditional:  # (in an `if` or loop on a traced value whose path is not known)
            self.unroll_loop(stmt, "a raise")
        error = self.eval(stmt.exc)
        cause = self.eval(stmt.cause.item) if stmt.cause is not None else None
        if conditional and isinstance(error, BaseException):
            # raised on the paths through this region only: refused if it leaves the function (``refuse_raise``),
            # as JAX refuses the `if` itself; an ``except`` around it in the region may still catch it
            located = self.wrap(stmt, error)
            located.conditional_raise = True
            raise located from error
        if stmt.cause is not None:
            raise error from cause
        raise error

    def stmt_Try(self, stmt: cst.Try) -> None:
        """``try`` runs as written while the function is read: an exception raised then (a dict's KeyError, a
        helper's ValueError) goes to the first ``except`` clause that matches it. An exception raised inside an
        `if` or loop on a traced value would be raised on some run-time paths only: catching it is refused.
        srcjax's own refusals (what it cannot compile) are not the program's exceptions and are never caught."""
        where = (self.trace.builder, self.trace.builder.block)
        try:
            try:
                self.exec_block(flatten_statements(stmt.body))
            except Exit:
                raise
            except Exception as error:  # noqa: BLE001 - matched against the user's handlers below
                handler, caught = self.handler_for(stmt, error, where)
                if handler is None:
                    raise
                self.run_handler(handler, caught, error)
            else:
                if stmt.orelse is not None:
                    self.exec_block(flatten_statements(stmt.orelse.body))
        finally:
            if stmt.finalbody is not None:
                self.run_finally(flatten_statements(stmt.finalbody.body))

    def stmt_With(self, stmt: cst.With) -> None:
        """``with`` runs as written while the function is read: each manager's ``__enter__`` before the body, its
        ``__exit__`` after it, also when the body returns, breaks or raises (an option's context manager, a named
        scope, a lock: Python objects, as under JAX's tracing). A manager may swallow the program's own exception
        where catching it is allowed (see ``stmt_Try``), never srcjax's refusals."""
        if stmt.asynchronous is not None:
            raise self.error(stmt, "`async with` cannot be compiled")
        where = (self.trace.builder, self.trace.builder.block)
        exits: list[tuple[Any, Any]] = []
        try:
            for item in stmt.items:
                manager = self.eval(item.item)
                if is_symbolic(manager):
                    raise self.error(item.item, "a traced value is not a context manager")
                try:
                    enter, leave = type(manager).__enter__, type(manager).__exit__
                except AttributeError:
                    raise self.error(item.item, f"'{type(manager).__name__}' object does not support the context "
                                                "manager protocol") from None
                if _program_manager(manager):  # (its enter and exit run once per trip under JAX)
                    self.unroll_loop(item.item, "the program's own context manager")
                value = enter(manager)
                exits.append((manager, leave))
                if item.asname is not None:
                    self.assign(item.asname.name, value)
            self.exec_block(flatten_statements(stmt.body))
        except Exit:
            for manager, leave in reversed(exits):
                leave(manager, None, None, None)
            raise
        except Exception as error:  # noqa: BLE001 - offered to the managers' __exit__, innermost first
            caught = _user_exception(error)
            swallowed = False
            for manager, leave in reversed(exits):
                if swallowed:
                    leave(manager, None, None, None)
                    continue
                shown = caught if caught is not None else error
                if leave(manager, type(shown), shown, shown.__traceback__) and caught is not None \
                        and _unconditional(error, where):
                    swallowed = True
            if not swallowed:
                raise
        else:
            for manager, leave in reversed(exits):
                leave(manager, None, None, None)

    def handler_for(self, stmt: cst.Try, error: Exception, where: tuple[Any, Any]) -> tuple[Any, Any]:
        """The ``except`` clause of ``stmt`` that catches ``error``, and the exception it binds; (None, None)."""
        caught = _user_exception(error)
        if caught is None:
            return None, None
        if getattr(error, "concretization", False) and self.trace.context.unrollable and \
                not concrete.at_top_level(self.trace):
            return None, None  # (a static-range loop built as a loop op is unrolled, and its index then static)
        for handler in stmt.handlers:
            if handler.type is not None and not isinstance(caught, self.eval(handler.type)):
                continue
            if not _unconditional(error, where):
                notes = []
                if isinstance(error, TranspileError) and error.loc is not None:
                    notes.append(Note(f"{type(caught).__name__} is raised here, inside an `if` or loop on a traced "
                                      "value", error.loc, error.length))
                raise self.error(handler.type or handler, f"cannot catch {type(caught).__name__} here: whether it is "
                                                          "raised is only known when the compiled function runs",
                                 note="raise it outside the `if` or loop, or check the condition before calling the "
                                      "compiled function", notes=notes)
            return handler, caught
        return None, None

    def run_handler(self, handler: cst.ExceptHandler, caught: BaseException, error: Exception) -> None:
        name = handler.name.name.value if handler.name is not None else None
        if name is not None:
            self.assign_name(name, caught, handler)
        self.handling.append(error)
        try:
            self.exec_block(flatten_statements(handler.body))
        finally:
            self.handling.pop()
            if name is not None and name not in self.global_names:
                self.env.pop(name, None)  # (Python unbinds it after the clause)

    def run_finally(self, body: Sequence[cst.CSTNode]) -> None:
        """A ``finally`` block runs on every path: the exit flags of a return on a traced condition in the ``try``
        do not guard it; they hold again after it, unless it exits itself."""
        saved = {flag: self.env.get(flag, False) for flag in FLAGS}
        self.env.update({flag: False for flag in FLAGS})
        self.exec_block(body)
        for flag, value in saved.items():
            if self.env.get(flag, False) is False:
                self.env[flag] = value

    def stmt_Import(self, stmt: cst.Import) -> None:
        import importlib

        for alias in stmt.names:
            name = _dotted(alias.name)
            module = importlib.import_module(name)
            if alias.asname is not None:
                self.assign_name(alias.asname.name.value, module, stmt)
            else:
                top = name.split(".")[0]
                self.assign_name(top, importlib.import_module(top), stmt)

    def stmt_ImportFrom(self, stmt: cst.ImportFrom) -> None:
        import importlib

        if stmt.relative or isinstance(stmt.names, cst.ImportStar):
            raise self.error(stmt, "relative and star imports are not supported inside a compiled function")
        module = importlib.import_module(_dotted(stmt.module))
        for alias in stmt.names:
            name = _dotted(alias.name)
            value = getattr(module, name, None)
            if value is None:
                value = importlib.import_module(f"{module.__name__}.{name}")
            target = alias.asname.name.value if alias.asname is not None else name
            self.assign_name(target, value, stmt)

    def stmt_Del(self, stmt: cst.Del) -> None:
        self.delete(stmt.target)

    def delete(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and target.value in self.global_names:
            if not concrete.at_top_level(self.trace):
                raise self.error(target, f"cannot delete the global variable '{target.value}' inside an `if` or loop "
                                         "on a traced value")
            del self.globals[target.value]
        elif isinstance(target, cst.Name):
            self.env.pop(target.value, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.delete(element.value)
        elif isinstance(target, cst.Subscript):
            container = self.eval(target.value)
            if is_symbolic(container) or hasattr(container, "aval"):
                raise self.error(target, "cannot delete elements of an array")
            del container[self.eval_index(target)]
        else:
            raise self.error(target, f"cannot delete {type(target).__name__}")

    def stmt_Global(self, stmt: cst.Global) -> None:
        for item in stmt.names:
            self.global_names[item.name.value] = stmt

    def stmt_Nonlocal(self, stmt: cst.Nonlocal) -> None:
        for item in stmt.names:
            name = item.name.value
            in_outer = isinstance(self.outer, Enclosing) and name in self.outer
            if not in_outer and name not in self.closure:
                raise self.error(item, f"no binding for nonlocal '{name}' found",
                                 note="nonlocal names a variable of the function this one is defined in")
            self.nonlocal_names[name] = stmt

    def check_outer_write(self, node: cst.CSTNode, obj: Any, what: str) -> None:
        """Refuse a change to ``obj`` (``what``) inside a region of control flow on traced values when it was made
        before the region (``control.outer_objects``). The error is marked ``outer_write``: a short loop over a
        static range then runs unrolled instead, as JAX runs it. Every change is noted in the context's
        ``written``."""
        self.trace.context.written.add(id(obj))
        regions = self.trace.context.outer_objects
        if regions and (any(id(obj) in ids for ids in regions) or id(obj) in self.made_outside()):
            error = self.error(node, f"{what} cannot change inside an `if` on a traced value or a compiled loop, "
                                     "as the object was made before it",
                               note="srcjax reads both branches of such an `if` (and a loop's body once) while it "
                                    "compiles the function, so the change would happen whatever the data; keep the "
                                    "value in a local variable (v = ...) and select with jnp.where, or use lax.scan")
            error.outer_write = True
            raise error

    def made_outside(self) -> set[int]:
        """The ids of the mutable objects this function reaches through its module's globals and its closure: all
        made before any region of control flow on traced values it runs in (``check_outer_write``)."""
        if self._made_outside is None:
            from srcjax.transpiler.frontend.control import outer_objects

            reached = {f"g{i}": v for i, v in enumerate(self.globals.values())}
            for name, cell in self.closure.items():
                try:
                    reached[name] = cell.cell_contents
                except ValueError:  # (an empty cell)
                    pass
            self._made_outside = outer_objects(reached)
        return self._made_outside

    # -- assignment targets ---------------------------------------------------------------------------------
    def assign(self, target: cst.BaseExpression, value: Any) -> None:
        if isinstance(target, cst.Name):
            self.assign_name(target.value, value, target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            self.assign_unpacked(target, value)
        elif isinstance(target, cst.Subscript):
            self.assign_item(target, value)
        elif isinstance(target, cst.Attribute):
            obj = self.eval(target.value)  # (an object of the module's, or a closure's, too: as JAX's tracing does)
            self.check_outer_write(target, obj, f"'{_dotted(target)}'")
            setattr(obj, target.attr.value, value)
        elif isinstance(target, cst.StarredElement):
            raise self.error(target, "a starred assignment target must be inside a tuple or list")
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__}")

    def assign_unpacked(self, target: cst.Tuple | cst.List, value: Any) -> None:
        elements = list(target.elements)
        starred = [i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)]
        try:
            items = list(value)
        except ConcretizationError as e:
            raise self.wrap(target, e) from e
        except TypeError:
            raise self.error(target, f"cannot unpack a value of type {type(value).__name__}") from None
        if starred:
            (s,) = starred
            after = len(elements) - s - 1
            if len(items) < len(elements) - 1:
                raise self.error(target, f"not enough values to unpack (expected at least {len(elements) - 1}, "
                                         f"got {len(items)})")
            items = items[:s] + [list(items[s: len(items) - after])] + items[len(items) - after:]
        elif len(items) != len(elements):
            raise self.error(target, f"cannot unpack {len(items)} values into {len(elements)} targets")
        for element, item in zip(elements, items):
            self.assign(element.value, item)

    def assign_item(self, target: cst.Subscript, value: Any) -> None:
        container = self.eval(target.value)
        index = self.eval_index(target)
        if hasattr(container, "aval") and hasattr(container, "at"):
            # NumPy-style ``y[i] = v`` on an array: a functional update that rebinds the name
            self.assign(target.value, container.at[index].set(value))
        else:
            self.check_outer_write(target, container, "an item of a container")
            container[index] = value

    # -- expressions ------------------------------------------------------------------------------------------
    def eval(self, node: cst.BaseExpression) -> Any:
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is None:
            raise self.error(node, f"unsupported expression in a compiled function: {type(node).__name__}",
                             note=_UNSUPPORTED_HINTS.get(type(node).__name__, ""))
        return handler(node)

    def expr_Name(self, node: cst.Name) -> Any:
        return self.lookup(node.value, node)

    def expr_Integer(self, node: cst.Integer) -> int:
        return int(node.evaluated_value)

    def expr_Float(self, node: cst.Float) -> float:
        return float(node.evaluated_value)

    def expr_Imaginary(self, node: cst.Imaginary) -> complex:
        return complex(node.evaluated_value)

    def expr_SimpleString(self, node: cst.SimpleString) -> Any:
        return node.evaluated_value

    def expr_ConcatenatedString(self, node: cst.ConcatenatedString) -> Any:
        return self.eval(node.left) + self.eval(node.right)

    def expr_FormattedString(self, node: cst.FormattedString) -> str:
        parts = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value)
                continue
            value = self.eval(part.expression)
            if is_symbolic(value):
                value = self.printable(value, part.expression)
            if part.conversion:
                value = {"r": repr, "s": str, "a": ascii}[part.conversion](value)
            spec = ""
            if part.format_spec:
                spec = "".join(p.value if isinstance(p, cst.FormattedStringText) else str(self.eval(p.expression))
                               for p in part.format_spec)
            try:
                parts.append(format(value, spec))
            except Exception as e:  # noqa: BLE001 - reported at the formatted expression
                raise self.wrap(part.expression, e) from e
        return "".join(parts)

    def expr_Ellipsis(self, node: cst.Ellipsis) -> Any:
        return Ellipsis

    def expr_Tuple(self, node: cst.Tuple) -> tuple:
        return tuple(self.eval_elements(node.elements))

    def expr_List(self, node: cst.List) -> list:
        return self.eval_elements(node.elements)

    def expr_Set(self, node: cst.Set) -> set:
        return set(self.hashable(node, item) for item in self.eval_elements(node.elements))

    def python_locals(self) -> dict[str, Any]:
        """What ``locals()`` gives here: the function's variables and the free ones it reads (not the
        interpreter's own entries)."""
        names = {}
        for name, cell in self.closure.items():
            with contextlib.suppress(ValueError):  # (a cell not yet assigned)
                names[name] = cell.cell_contents
        names.update((k, v) for k, v in self.env.items() if k.isidentifier())
        return names

    def hashable(self, node: cst.CSTNode, key: Any) -> Any:
        """``key``, refused as a dict key or set item when it is (or holds) a traced value: JAX's tracers are
        unhashable, where srcjax's IR values hash by identity and would silently miss (``{0: a}.get(i, b)``)."""
        traced = _traced_in_key(key)
        if traced is not None:
            raise self.wrap(node, TypeError(f"unhashable type: a traced value ({traced.aval}) cannot be hashed (a "
                                            "dict key, a set item, hash()); its value is only known when the "
                                            "compiled function runs"))
        return key

    def eval_elements(self, elements: Sequence[cst.BaseElement]) -> list:
        out: list = []
        for element in elements:
            if isinstance(element, cst.StarredElement):
                out.extend(self.eval(element.value))
            else:
                out.append(self.eval(element.value))
        return out

    def expr_Dict(self, node: cst.Dict) -> dict:
        out: dict = {}
        for element in node.elements:
            if isinstance(element, cst.StarredDictElement):
                out.update(self.eval(element.value))
            else:
                out[self.hashable(element.key, self.eval(element.key))] = self.eval(element.value)
        return out

    def expr_Attribute(self, node: cst.Attribute) -> Any:
        obj = self.eval(node.value)
        try:
            return getattr(obj, node.attr.value)
        except AttributeError as e:
            raise self.wrap(node, self.tracer_named(e)) from e

    def expr_BinaryOperation(self, node: cst.BinaryOperation) -> Any:
        left, right = self.eval(node.left), self.eval(node.right)
        if isinstance(left, str) and isinstance(node.operator, cst.Modulo):  # ``"%s" % x``: text, as print shows it
            right = self.printable(right, node.right)
        try:
            return _BINARY[type(node.operator)](left, right)
        except (TranspileError, Exit):
            raise
        except Exception as e:  # noqa: BLE001
            raise self.wrap(node, self.tracer_named(e)) from e

    def expr_UnaryOperation(self, node: cst.UnaryOperation) -> Any:
        value = self.eval(node.expression)
        if isinstance(node.operator, cst.Not):
            if is_symbolic(value):
                from srcjax.transpiler.frontend.control import to_predicate

                return values.logical_not(to_predicate(self, value, node.expression))
            return not value
        try:
            return _UNARY[type(node.operator)](value)
        except (TranspileError, Exit):
            raise
        except Exception as e:  # noqa: BLE001
            raise self.wrap(node, self.tracer_named(e)) from e

    def tracer_named(self, error: Exception) -> Exception:
        """Python's own TypeError or AttributeError (``unsupported operand type(s) for +: 'Value' and 'NoneType'``,
        ``'Value' object has no attribute 'numpy'``) with a traced value's type named as JAX names its tracer, not
        by the IR's class."""
        if type(error) in (TypeError, AttributeError) and "'Value'" in str(error):
            return type(error)(str(error).replace("'Value'", f"'{concrete.tracer_name(self.trace)}'"))
        return error

    def expr_Comparison(self, node: cst.Comparison) -> Any:
        left = self.eval(node.left)
        result: Any = True
        for target in node.comparisons:
            right = self.eval(target.comparator)
            if isinstance(target.operator, (cst.In, cst.NotIn)) and isinstance(right, _HASHED):
                self.hashable(node, left)
            try:
                outcome = _COMPARE[type(target.operator)](left, right)
            except (TranspileError, Exit):
                raise
            except Exception as e:  # noqa: BLE001
                raise self.wrap(node, e) from e
            result = outcome if result is True else self.logical("and", result, outcome, node)
            if result is False:
                return False
            left = right
        return result

    def logical(self, kind: str, a: Any, b: Any, node: cst.CSTNode) -> Any:
        """``a and b`` / ``a or b`` where one side is symbolic: Python's value (b where a is true for ``and``); on
        bools, the logical operation. ``a``'s truth is NumPy's (one element, else an error), and both sides need
        one shape: which one Python gives is only known when the compiled function runs."""
        from srcjax.transpiler.frontend.control import to_predicate

        if not is_symbolic(a):
            return (a and b) if kind == "and" else (a or b)  # (Python's short circuit on a static value)
        truth = to_predicate(self, a, node)
        if values.aval(a).shape != values.aval(b).shape:
            raise self.error(node, f"the two sides of `{kind}` have shapes {values.aval(a).shape} and "
                                   f"{values.aval(b).shape}; which side Python gives is only known when the compiled "
                                   "function runs, so they need one shape",
                             note="use jnp.logical_and / jnp.logical_or, or jnp.where, for an elementwise result")
        if values.aval(a).dtype == bool and values.aval(b).dtype == bool:
            return values.logical_and(a, b) if kind == "and" else values.logical_or(a, b)
        return values.where(truth, b, a) if kind == "and" else values.where(truth, a, b)

    def expr_BooleanOperation(self, node: cst.BooleanOperation) -> Any:
        kind = "and" if isinstance(node.operator, cst.And) else "or"
        left = self.eval(node.left)
        if not is_symbolic(left):  # Python's short circuit on a static value
            if (kind == "and" and not left) or (kind == "or" and left):
                return left
            return self.eval(node.right)
        return self.logical(kind, left, self.eval(node.right), node)

    def expr_IfExp(self, node: cst.IfExp) -> Any:
        test = self.eval(node.test)
        if not is_symbolic(test):
            return self.eval(node.body) if test else self.eval(node.orelse)
        from srcjax.transpiler.frontend import control

        return control.conditional_expression(self, test, node)

    def expr_Subscript(self, node: cst.Subscript) -> Any:
        value = self.eval(node.value)
        index = self.eval_index(node)
        if isinstance(value, Mapping):
            self.hashable(node, index)
        try:
            return value[index]
        except (TranspileError, Exit):
            raise
        except Exception as e:  # noqa: BLE001
            raise self.wrap(node, e) from e

    def eval_index(self, node: cst.Subscript) -> Any:
        parts = []
        for element in node.slice:
            s = element.slice
            if isinstance(s, cst.Slice):
                parts.append(slice(*(None if p is None else self.eval(p) for p in (s.lower, s.upper, s.step))))
            elif isinstance(s.value, cst.StarredElement):
                parts.extend(self.eval(s.value.value))
            else:
                parts.append(self.eval(s.value))
        single = len(node.slice) == 1 and not (isinstance(node.slice[0].slice, cst.Index)
                                                and isinstance(node.slice[0].slice.value, cst.StarredElement))
        return parts[0] if single else tuple(parts)

    def expr_Call(self, node: cst.Call) -> Any:
        from srcjax.transpiler.frontend.calls import call

        fn = self.eval(node.func)
        args: list = []
        kwargs: dict = {}
        for arg in node.args:
            value = self.eval(arg.value)
            if arg.star == "*":
                args.extend(value)
            elif arg.star == "**":
                kwargs.update(value)
            elif arg.keyword is not None:
                kwargs[arg.keyword.value] = value
            else:
                args.append(value)
        return call(self, fn, args, kwargs, node)

    def expr_Lambda(self, node: cst.Lambda) -> Any:
        from srcjax.transpiler.frontend.calls import InterpretedFunction

        return InterpretedFunction(self, node)

    def expr_NamedExpr(self, node: cst.NamedExpr) -> Any:
        value = self.eval(node.value)
        self.assign(node.target, value)
        name = node.target.value if isinstance(node.target, cst.Name) else None
        if name in self.env:  # in a comprehension it binds in the function's scope too (PEP 572)
            for env in self.outside:
                env[name], env["@" + name] = self.env[name], self.env["@" + name]
        return value

    def expr_ListComp(self, node: cst.ListComp) -> list:
        return self.comprehension(node, lambda: self.eval(node.elt), list)

    def expr_SetComp(self, node: cst.SetComp) -> set:
        return set(self.comprehension(node, lambda: self.hashable(node.elt, self.eval(node.elt)), list))

    def expr_GeneratorExp(self, node: cst.GeneratorExp) -> Any:
        return iter(self.comprehension(node, lambda: self.eval(node.elt), list))

    def expr_DictComp(self, node: cst.DictComp) -> dict:
        return dict(self.comprehension(node, lambda: (self.hashable(node.key, self.eval(node.key)),
                                                      self.eval(node.value)), list))

    def comprehension(self, node: Any, element: Callable[[], Any], kind: type) -> list:
        """Comprehensions iterate statically (arrays along their first axis), in a scope of their own; a lambda
        made in one sees its variables as they are when it is called (``[lambda: i for i in r]``: the last)."""
        saved = self.env
        self.env = dict(saved)
        self.scopes.append((self.env, frozenset(_comprehension_targets(node))))
        self.outside.append(saved)
        out: list = []

        def loop(clause: cst.CompFor | None) -> None:
            if clause is None:
                out.append(element())
                return
            iterable = self.eval(clause.iter)
            try:
                items = iter(iterable)
            except Exception as e:  # noqa: BLE001 - reported at the iterable, not as an internal error
                raise self.wrap(clause.iter, e) from e
            for item in items:
                self.assign(clause.target, item)
                keep = True
                for condition in clause.ifs:
                    test = self.eval(condition.test)
                    if is_symbolic(test):
                        raise self.error(condition.test, "a comprehension cannot filter on a value that is only "
                                                         "known when the compiled function runs",
                                         note="the number of items it keeps would depend on the data (JAX cannot "
                                              "trace it either); keep every item and select with jnp.where: "
                                              "sum(jnp.where(v > 0, v, 0) for v in x), or jnp.where(x > 0, x, 0)")
                    keep = keep and bool(test)
                if keep:
                    loop(clause.inner_for_in)

        try:
            loop(node.for_in)
        finally:
            self.env = saved
            self.scopes.pop()
            self.outside.pop()
        return out

    # -- values as text, concrete values -----------------------------------------------------------------------
    def printable(self, tree: Any, node: cst.CSTNode) -> Any:
        """``tree`` with its traced values as ``print``, ``str`` and f-strings show them while the function is
        read, as JAX prints its tracers (``frontend.concrete.printable``)."""
        leaves, treedef = tree_flatten(tree)
        if not any(is_symbolic(leaf) for leaf in leaves):
            return tree
        self.unroll_loop(node, "printing a traced value")
        return tree_unflatten(treedef, [concrete.printable(self.trace, x) if is_symbolic(x) else x for x in leaves])

    def unroll_loop(self, node: cst.CSTNode, what: str) -> None:
        """Inside a loop over a static range that is being built as a loop op: have it unrolled, as JAX runs a
        Python loop, so that ``what`` happens once per trip with the index a Python int."""
        if self.trace.context.unrollable and not concrete.at_top_level(self.trace):
            error = self.error(node, f"{what} inside a loop over a static range unrolls the loop")
            error.concretization = True  # (``control._counted_loop`` retries unrolled)
            raise error

    def expr_Yield(self, node: cst.Yield) -> Any:
        raise self.error(node, "generators cannot be compiled", note="build a list and return it instead")

    def expr_Await(self, node: cst.Await) -> Any:
        raise self.error(node, "async functions cannot be compiled")


_UNSUPPORTED_HINTS = {
    "TryStar": "use `except` instead of `except*` inside a compiled function",
    "ClassDef": "define classes outside the compiled function",
    "Match": "use if/elif instead of match inside a compiled function",
    "Yield": "build a list and return it instead",
}


class Enclosing(Mapping):
    """What a function defined inside interpreted code sees of where it was defined, looked up at each call
    (Python's late binding): the variables of the comprehensions around the definition, then the defining
    frame's locals as they are then, then what that frame itself sees from further out."""

    def __init__(self, frame: Frame, scopes: Sequence[tuple[dict[str, Any], frozenset[str]]]):
        self.frame, self.scopes = frame, list(scopes)

    def _scope(self, name: str) -> Mapping | None:
        for env, names in reversed(self.scopes):
            if name in names and name in env:
                return env
        frame = self.frame
        if name in frame.global_names:
            return None  # (declared global there: the global, found by the caller)
        if name in frame.env:
            return frame.env
        if frame.outer is not None and name in frame.outer:
            return frame.outer
        return None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._scope(name) is not None

    def assign(self, name: str, value: Any) -> None:
        """``name = value`` where the defining code binds ``name`` (``nonlocal``)."""
        scope = self._scope(name)
        if scope is None:
            raise KeyError(name)
        if isinstance(scope, Enclosing):
            scope.assign(name, value)
        else:
            scope[name] = value

    def __getitem__(self, name: str) -> Any:
        scope = self._scope(name)
        if scope is None:
            raise KeyError(name)
        return scope[name]

    def __iter__(self) -> Iterator[str]:
        names = {n for env, scope in self.scopes for n in scope if n in env} | set(self.frame.env)
        names |= set(self.frame.outer) if self.frame.outer is not None else set()
        return iter(sorted(names))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _comprehension_targets(node: Any) -> set[str]:
    """The names the ``for`` clauses of a comprehension bind."""
    names: set[str] = set()

    def collect(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                collect(element.value)
        elif isinstance(target, cst.StarredElement):
            collect(target.value)

    clause = node.for_in
    while clause is not None:
        collect(clause.target)
        clause = clause.inner_for_in
    return names


def _tag(error: TranspileError) -> TranspileError:
    """Note where ``error`` is raised: per trace being built, the block being filled and, where the statement is
    known to run on the trace's inputs, the blocks it is in (see ``_unconditional``)."""
    if not hasattr(error, "raised_in"):
        from srcjax.transpiler.frontend.calls import _traces

        error.raised_in = [(t.builder, t.builder.block, _reached(t)) for t in getattr(_traces, "stack", [])]
    return error


def _reached(trace: Any) -> list | None:
    try:
        return concrete.reached_blocks(trace)
    except Exception:  # noqa: BLE001 - a condition that cannot be computed: not known to be reached
        return None


def _unconditional(error: BaseException, where: tuple[Any, Any]) -> bool:
    """Whether ``error`` is raised on the paths through the ``try`` at ``where`` (its builder and block) that run:
    raised in that block, or in regions of ``if``s opened since that are known to be taken, and at the top level
    of traces begun from there; not inside a region of control flow that may not run."""
    chain = getattr(error, "raised_in", None)
    if not chain:
        return True
    builder, block = where

    def inside(b: Any, blk: Any, reached: list | None, top: Any) -> bool:
        return blk is top or any(x is top for x in reached or ())

    rest = chain
    for k, (b, blk, reached) in enumerate(chain):
        if b is builder:
            if not inside(b, blk, reached, block):
                return False
            rest = chain[k + 1:]
            break
    return all(inside(b, blk, reached, block if b is builder else b.function.body) for b, blk, reached in rest)


def _user_exception(error: BaseException) -> BaseException | None:
    """The program's own exception that ``error`` reports (a located ``TranspileError`` keeps it as its cause);
    None for srcjax's refusals, which the program's handlers do not see."""
    if not isinstance(error, TranspileError):
        return error
    cause = error.__cause__
    if cause is not None and not isinstance(cause, (TranspileError, Exit)):
        return cause
    return error if type(error) is not TranspileError else None


_QUIET_MANAGERS = (contextlib.suppress, contextlib.nullcontext, type(threading.Lock()), type(threading.RLock()))


def _program_manager(manager: Any) -> bool:
    """Whether a context manager is the program's own, whose ``__enter__`` and ``__exit__`` may do what each trip of
    a loop must show (record, count), rather than srcjax's (an option, a named scope) or one without effects."""
    if isinstance(manager, _QUIET_MANAGERS):
        return False
    owner = type(manager)
    if owner.__module__ == "contextlib":  # (a @contextmanager generator: whose function it runs)
        owner = getattr(manager, "func", owner)
    return not (getattr(owner, "__module__", None) or "").startswith("srcjax")


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    raise TypeError(f"not a dotted name: {type(node).__name__}")


def flatten_statements(body: Any) -> list[cst.CSTNode]:
    """The statements of a suite, with each line's small statements (``a = 1; b = 2``) listed separately."""
    stmts = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else body
    out: list[cst.CSTNode] = []
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out
