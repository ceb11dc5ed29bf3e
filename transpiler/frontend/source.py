"""Finding a function's source: the libcst node of its ``def`` (or ``lambda``) and where it is.

Whole files are parsed once (cached by path and modification time) so that positions are the file's
own lines and columns. A lambda is found among the lambdas of its first line by its parameters and the
column of its body.

The text found must be what runs: the file may have been edited since the function was defined, or its code
rewritten before it ran (pytest rewrites the ``assert`` statements of test modules). So the file's text is
compiled, and the function's code object must equal the one compiled at its place (bytecode, constants,
names); where it does not, the source counts as missing.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import os
import types
from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from srcjax.transpiler.ir import SourceLoc


@dataclass
class ParsedFile:
    path: str
    lines: list[str]
    module: cst.Module
    positions: dict[cst.CSTNode, CodeRange]
    index: Any = None  # the functions by line, built on first use (see _index)

    def loc(self, node: cst.CSTNode, function: str = "") -> SourceLoc:
        pos = self.positions.get(node)
        if pos is None:
            return SourceLoc(self.path, 0, 1, "", function)
        line = pos.start.line
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceLoc(self.path, line, pos.start.column + 1, text, function)

    def span(self, node: cst.CSTNode) -> int:
        """How many characters of its first line the node covers (for the caret's underline)."""
        pos = self.positions.get(node)
        if pos is None:
            return 1
        if pos.end.line == pos.start.line:
            return max(1, pos.end.column - pos.start.column)
        return max(1, len(self.lines[pos.start.line - 1].rstrip("\n")) - pos.start.column)


class SourceNotFound(Exception):
    pass


@functools.lru_cache(maxsize=64)
def _parse_file(path: str, mtime: float, text: str) -> ParsedFile:
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:  # (the file was rewritten since it was imported, or libcst lags Python)
        raise SourceNotFound(f"the source file {path} does not parse: {e.message}") from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    return ParsedFile(path, text.splitlines(keepends=True), module, dict(positions))


def parse_file(path: str) -> ParsedFile:
    lines = linecache.getlines(path)
    if not lines:
        raise SourceNotFound(f"the source file {path} cannot be read")
    try:
        mtime = os.path.getmtime(path)
    except OSError:
        mtime = 0.0
    return _parse_file(path, mtime, "".join(lines))


@dataclass
class FunctionSource:
    file: ParsedFile
    node: cst.FunctionDef | cst.Lambda
    name: str

    def loc(self, node: cst.CSTNode) -> SourceLoc:
        return self.file.loc(node, self.name)


class _Index(cst.CSTVisitor):
    """Every ``def`` and ``lambda`` of a file by the line a code object reports for it: one walk per file, so
    finding the functions of a file with many of them stays linear."""

    def __init__(self, file: ParsedFile):
        self.file = file
        self.functions: dict[int, list[cst.FunctionDef]] = {}
        self.lambdas: dict[int, list[cst.Lambda]] = {}

    def _start(self, node: cst.CSTNode) -> int:
        pos = self.file.positions.get(node)
        return pos.start.line if pos else -1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        # (a decorated function's code starts at its first decorator's expression, which may be a line below the
        # `@`: ``@(`` then ``jax.jit`` on the next line; every line from the first `@` to the `def` holds only it)
        first = min([self._start(d) for d in node.decorators] + [self._start(node)])
        for line in range(first, self._start(node) + 1):
            self.functions.setdefault(line, []).append(node)
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.lambdas.setdefault(self._start(node), []).append(node)
        return True


def _index(file: ParsedFile) -> _Index:
    if file.index is None:
        file.index = _Index(file)
        file.module.visit(file.index)
    return file.index


@functools.lru_cache(maxsize=64)
def _compiled(path: str, text: str) -> dict[tuple[str, int], list[types.CodeType]] | None:
    """The code objects compiling ``text`` gives, by (name, first line); None if it does not compile."""
    try:
        top = compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    found: dict[tuple[str, int], list[types.CodeType]] = {}
    todo = [top]
    while todo:
        code = todo.pop()
        found.setdefault((code.co_name, code.co_firstlineno), []).append(code)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Whether two code objects compute the same thing (line numbers aside)."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_argcount, a.co_kwonlyargcount,
            a.co_posonlyargcount, a.co_flags) != (b.co_code, b.co_names, b.co_varnames, b.co_freevars,
                                                   b.co_cellvars, b.co_argcount, b.co_kwonlyargcount,
                                                   b.co_posonlyargcount, b.co_flags):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType) and _same_code(x, y)):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):  # (repr: NaN equals NaN, -0.0 differs from 0.0)
            return False
    return True


def _check_current(code: types.CodeType, file: ParsedFile) -> None:
    """Raise ``SourceNotFound`` unless the file's text, compiled, gives ``code`` at its place."""
    compiled = _compiled(file.path, "".join(file.lines))
    if compiled is None or not any(_same_code(code, c) for c in compiled.get((code.co_name, code.co_firstlineno), ())):
        raise SourceNotFound(f"the source of {code.co_name} in {file.path} is not the code that runs (the file was "
                             "edited after it was loaded, or its code was rewritten before it ran)")


def _holds(file: ParsedFile, node: cst.CSTNode, code: types.CodeType) -> bool:
    """Whether the source span of ``node`` holds the place of every instruction of ``code`` that has one (lines
    from 1, columns in UTF-8 bytes, as ``co_positions`` gives them)."""
    span = file.positions[node]

    def place(position: Any) -> tuple[int, int]:
        text = file.lines[position.line - 1] if 0 < position.line <= len(file.lines) else ""
        return position.line, len(text[: position.column].encode())

    start, end = place(span.start), place(span.end)
    return all(start <= (line, col) and (end_line, end_col) <= end
               for line, end_line, col, end_col in code.co_positions()
               if None not in (line, end_line, col, end_col) and (end_line, end_col) > (line, col))  # (RESUME: empty)


@functools.lru_cache(maxsize=1024)
def _find(code: Any, path: str) -> FunctionSource:
    # (``path`` is part of the key: code objects compare equal without their file, and two files may hold the same
    # function at the same place)
    try:
        file = parse_file(path)
        _check_current(code, file)
    except SourceNotFound:
        # linecache may hold the text of before an edit and a reload (importlib.reload, IPython's autoreload):
        # read the file again, and use it if it is the code that runs now (checkcache would keep the old text of a
        # file edited in the same second to the same size; a notebook cell's text has no file to read again)
        if os.path.isfile(path):
            linecache.updatecache(path)
        else:
            linecache.checkcache(path)
        file = parse_file(path)
        _check_current(code, file)
    index, line = _index(file), code.co_firstlineno
    if code.co_name == "<lambda>":
        params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
        candidates = [lam for lam in index.lambdas.get(line, []) if _lambda_params(lam) == params]
        if len(candidates) > 1:  # several lambdas on one line: the one whose body holds every instruction's place
            candidates = [lam for lam in candidates if _holds(file, lam.body, code)]
        if len(candidates) != 1:
            raise SourceNotFound(f"cannot tell which lambda at {path}:{code.co_firstlineno} runs")
        return FunctionSource(file, candidates[0], "<lambda>")
    for node in index.functions.get(line, []):
        if node.name.value == code.co_name:
            return FunctionSource(file, node, code.co_name)
    raise SourceNotFound(f"cannot find the source of {code.co_name} at {path}:{code.co_firstlineno}")


@functools.lru_cache(maxsize=1024)
def local_names(node: cst.FunctionDef | cst.Lambda) -> frozenset[str]:
    """The names local to a function, as Python's compiler finds them: its parameters and every name its own body
    binds (assigned, annotated, a loop's or ``with``'s or ``except``'s target, imported, defined, deleted, matched,
    bound by a walrus, in a comprehension too), less those it declares ``global`` or ``nonlocal``. Reading one
    before it is bound is an ``UnboundLocalError``, whatever the module holds under that name."""
    finder = _LocalNames()
    p = node.params
    for param in [*p.posonly_params, *p.params, *p.kwonly_params]:
        finder.names.add(param.name.value)
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            finder.names.add(star.name.value)
    node.body.visit(finder)
    return frozenset(finder.names - finder.declared)


class _LocalNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.declared: set[str] = set()  # (global and nonlocal)

    def _bind(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind(node.name.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)
        elif isinstance(node.name, cst.Name):
            self.names.add(node.name.value)
        else:  # (``import a.b`` binds ``a``)
            first = node.name
            while isinstance(first, cst.Attribute):
                first = first.value
            if isinstance(first, cst.Name):
                self.names.add(first.value)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.names.add(node.name.value)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self.names.add(node.name.value)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self.names.add(node.rest.value)

    def visit_Global(self, node: cst.Global) -> None:
        self.declared.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.declared.update(item.name.value for item in node.names)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.add(node.name.value)
        for decorator in node.decorators:  # (its decorators and defaults are read here; its body is its own scope)
            decorator.visit(self)
        node.params.visit(self)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        node.params.visit(self)
        return False

    def visit_CompFor(self, node: cst.CompFor) -> bool:  # (its targets are the comprehension's own)
        node.iter.visit(self)
        for condition in node.ifs:
            condition.visit(self)
        if node.inner_for_in is not None:
            node.inner_for_in.visit(self)
        return False


def _lambda_params(node: cst.Lambda) -> list[str]:
    p = node.params
    return [a.name.value for a in [*p.posonly_params, *p.params, *p.kwonly_params]]


def running_function(fn: Any) -> Any:
    """The function whose code runs when ``fn`` is called: ``fn`` itself when it is a Python function (a
    ``functools.wraps`` wrapper runs its own code, not that of the function its ``__wrapped__`` names), else
    what it wraps."""
    return fn if isinstance(fn, types.FunctionType) else inspect.unwrap(fn)


def function_source(fn: Callable[..., Any]) -> FunctionSource:
    code = getattr(running_function(fn), "__code__", None)
    if code is None:
        raise SourceNotFound(f"{fn!r} is not a Python function")
    return _find(code, code.co_filename)


def clear_caches() -> None:
    """Forget parsed files and located functions (``srcjax.clear_caches``)."""
    _parse_file.cache_clear()
    _compiled.cache_clear()
    _find.cache_clear()
