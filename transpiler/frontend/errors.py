"""``TranspileError``: what the front end reports about user code, pointing at the user's line. An error that
involves several lines names the one to change first and each other one in a ``note:`` of its own, as clang
and rustc do:

    examples/bad.py:10:9: error: 'y' is f32[2] here but f32[3] in the then-branch; a value's shape cannot differ
    between the paths of control flow on a traced value
            y = x[:2]
            ^
    examples/bad.py:8:9: note: 'y' is f32[3] here
            y = x
            ^
    examples/bad.py:7:8: note: the branch is on a traced value
        if x.sum() > 0:
           ^~~~~~~~~~~
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Callable, Sequence

from srcjax.transpiler.ir import SourceLoc


@dataclass(frozen=True)
class Note:
    """Another line an error involves: its message, where it is, and how many columns the caret spans."""

    message: str
    loc: SourceLoc | None
    length: int = 1


class TranspileError(Exception):
    def __init__(self, message: str, loc: SourceLoc | None = None, *, note: str = "", length: int = 1,
                 notes: Sequence[Note] = ()):
        self.message, self.loc, self.note, self.length = message, loc, note, max(1, length)
        self.notes = list(notes)
        # (not super(): a located error is also the program's exception class, whose __init__ takes its own args)
        Exception.__init__(self, self.render())

    def __str__(self) -> str:  # (not KeyError's, which would print the message as a quoted one-line repr)
        return self.render()

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc else None

    @property
    def column(self) -> int | None:
        return self.loc.column if self.loc else None

    def render(self) -> str:
        lines = _located("error", self.message, self.loc, self.length)
        if self.note:
            lines.extend(f"  {line}" for line in self.note.splitlines())
        for note in getattr(self, "notes", ()):
            lines.extend(_located("note", note.message, note.loc, note.length))
        return "\n".join(lines)


def _located(kind: str, message: str, loc: SourceLoc | None, length: int) -> list[str]:
    """``file:line:col: kind: message``, then the source line with a caret under the span (when known)."""
    if loc is None:
        return [f"{kind}: {message}"]
    lines = [f"{loc.file}:{loc.line}:{loc.column}: {kind}: {message}"]
    if loc.text:
        text = loc.text.rstrip("\n")
        lines.append(f"    {text}")
        width = max(1, min(length, len(text) - loc.column + 1))
        lines.append("    " + " " * (loc.column - 1) + "^" + "~" * (width - 1))
    return lines


_FILTER_TRACEBACKS = [True]  # JAX's ``jax_traceback_filtering`` (not "off"), as the runtime's config sets it


def set_traceback_filtering(on: bool) -> None:
    _FILTER_TRACEBACKS[0] = on


def user_frames(error: BaseException, is_user_file: Callable[[str], bool]) -> list[types.TracebackType]:
    """The entries of ``error``'s traceback in the user's files, outermost first."""
    kept, tb = [], error.__traceback__
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    return kept


def without_library_frames(error: TranspileError, is_user_file: Callable[[str], bool]) -> TranspileError | None:
    """``error`` leaving the outermost function being compiled, its traceback cut to the frames of the user's files
    (the line it names was read, not run: the frames between are srcjax's), as JAX filters its tracebacks; None
    where filtering is off (``jax_traceback_filtering='off'``) and the error keeps every frame and its cause."""
    if not _FILTER_TRACEBACKS[0]:
        return None
    shown = None
    for tb in reversed(user_frames(error, is_user_file)):
        shown = types.TracebackType(shown, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    return error.with_traceback(shown)


class MissingSourceWarning(UserWarning):
    """A function's source cannot be used (none on disk or in ``linecache``, or not the code that runs): it is
    traced instead, as JAX traces it. Said once per function."""
