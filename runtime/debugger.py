"""What ``srcjax.debug.breakpoint`` stops in: the frames it shows, the debuggers to choose from, and ``jdb``, JAX's
text debugger and the default one (a ``(jdb)`` prompt on stdin and stdout, pdb's commands for looking around).

The frames are those of the functions around the breakpoint, innermost first. A function srcjax is compiling does
not run as Python code: the front end reads its source, so its frame is the front end's ``Frame`` of it, whose
``env`` holds its locals (traced values among them, which ``breakpoint`` turns into the values the run computed)
and whose statement being read is the line. Frames of srcjax's own code are left out (``filter_frames``).
"""

from __future__ import annotations

import cmd
import dataclasses
import inspect
import linecache
import pprint
import sys
import threading
import traceback
from typing import IO, Any, Callable

from srcjax.transpiler.frontend.calls import is_user_file
from srcjax.transpiler.frontend.frame import Frame, Undefined


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
    """One frame shown by the debugger (JAX's fields): ``source`` is its function's lines, ``offset`` the index of
    the current line in them (None where the source is not known)."""

    filename: str
    locals: dict[str, Any]
    globals: dict[str, Any]
    code_context: list[str] | None
    source: list[str]
    lineno: int
    offset: int | None

    def with_locals(self, values: dict[str, Any]) -> DebuggerFrame:
        return dataclasses.replace(self, locals=values)

    @classmethod
    def of_python(cls, frame: Any) -> DebuggerFrame:
        info = inspect.getframeinfo(frame, context=1)
        source, offset = _lines(frame, info.lineno)
        return cls(info.filename, dict(frame.f_locals), {}, info.code_context, source, info.lineno, offset)

    @classmethod
    def of_interpreted(cls, frame: Frame, statement: Any) -> DebuggerFrame:
        """The frame of a function the front end is reading, at ``statement``."""
        loc = frame.loc(statement)
        names = {k: v for k, v in frame.env.items() if k.isidentifier() and not isinstance(v, Undefined)}
        source, offset = _lines(frame.fn, loc.line) if frame.fn is not None else ([], None)
        if offset is None:  # (a function defined inside read code: the whole file)
            source = [line.rstrip("\n") for line in linecache.getlines(loc.file)]
            offset = loc.line - 1 if 0 < loc.line <= len(source) else None
        return cls(loc.file, names, {}, [loc.text], source, loc.line, offset)


def _lines(obj: Any, lineno: int) -> tuple[list[str], int | None]:
    """The source lines of a function (or frame) and the index of line ``lineno`` in them, as JAX finds them."""
    try:
        lines, start = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return [], None
    source = "".join(lines).split("\n")
    offset = lineno - max(start, 1)
    return (source, offset) if 0 <= offset < len(source) else ([], None)


def current_frames(filter_frames: bool = True) -> list[DebuggerFrame]:
    """The frames around the caller of the function calling this, innermost first."""
    frames: list[DebuggerFrame] = []
    seen: set[int] = set()
    python = sys._getframe(2)
    while python is not None:
        if python.f_code is Frame.exec_stmt.__code__:  # the front end reading a statement of a function
            frame = python.f_locals["self"]
            if id(frame) not in seen:  # (the innermost statement: the others hold it)
                seen.add(id(frame))
                frames.append(DebuggerFrame.of_interpreted(frame, python.f_locals["stmt"]))
        elif not filter_frames or is_user_file(python.f_code.co_filename):
            frames.append(DebuggerFrame.of_python(python))
        python = python.f_back
    return frames


# -- the debuggers -----------------------------------------------------------------------------------------------------
Debugger = Callable[..., None]  # debugger(frames, thread_id, **kwargs)
_debuggers: dict[str, tuple[int, Debugger]] = {}
_lock = threading.Lock()  # one debugger session at a time (pmap's replicas may stop together)


def register_debugger(name: str, debugger: Debugger, priority: int) -> None:
    if name in _debuggers:
        raise ValueError(f'Debugger with name "{name}" already registered.')
    _debuggers[name] = (priority, debugger)


def get_debugger(backend: str | None = None) -> Debugger:
    """``backend``'s debugger if registered, else the one of highest priority."""
    if backend is not None and backend in _debuggers:
        return _debuggers[backend][1]
    if not _debuggers:
        raise ValueError("No debuggers registered!")
    return max(_debuggers.values(), key=lambda entry: entry[0])[1]


def enter(frames: list[DebuggerFrame], backend: str | None = None, **kwargs: Any) -> None:
    thread_id = None if threading.current_thread() is threading.main_thread() else threading.get_ident()
    debugger = get_debugger(backend)
    with _lock:
        debugger(frames, thread_id, **kwargs)


class CliDebugger(cmd.Cmd):
    """``jdb``: JAX's text debugger, command for command."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], thread_id: int | None, stdin: IO[str] | None = None,
                 stdout: IO[str] | None = None, completekey: str = "tab"):
        super().__init__(stdin=stdin, stdout=stdout, completekey=completekey)
        self.use_rawinput = stdin is None
        self.frames, self.frame_index, self.thread_id = frames, 0, thread_id
        self.intro = "Entering jdb:"

    def evaluate(self, expression: str) -> Any:
        frame = self.frames[self.frame_index]
        return eval(expression, {}, {**frame.globals, **frame.locals})

    def default(self, line: str) -> None:
        """Evaluates an expression."""
        self.do_p(line)

    def _error_message(self) -> None:
        message = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
        print("***", message, file=self.stdout)

    def do_p(self, arg: str) -> None:
        """p expression
        Evaluates and prints the value of an expression"""
        try:
            print(repr(self.evaluate(arg)), file=self.stdout)
        except Exception:  # noqa: BLE001 - shown, as a debugger does
            self._error_message()

    def do_pp(self, arg: str) -> None:
        """pp expression
        Evaluates and pretty-prints the value of an expression"""
        try:
            print(pprint.pformat(self.evaluate(arg)), file=self.stdout)
        except Exception:  # noqa: BLE001
            self._error_message()

    def do_up(self, _: str) -> None:
        """u(p)
        Move up a stack frame."""
        if self.frame_index == len(self.frames) - 1:
            print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self.print_context()

    def do_down(self, _: str) -> None:
        """d(own)
        Move down a stack frame."""
        if self.frame_index == 0:
            print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self.print_context()

    def do_list(self, _: str) -> None:
        """l(ist)
        List source code for the current file."""
        self.print_context(num_lines=5)

    def do_continue(self, _: str) -> bool:
        """c(ont(inue))
        Continue the program's execution."""
        return True

    def do_quit(self, _: str) -> None:
        """q(uit)
        (exit)
        Quit the debugger. The program is given an exit command."""
        sys.exit(0)

    def do_where(self, _: str) -> None:
        """w(here)
        Prints a stack trace with the most recent frame on the bottom.
        'bt' is an alias for this command."""
        lines = ["Traceback:"]
        for frame in self.frames[::-1]:
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append("    <no source>" if frame.offset is None else f"    {frame.source[frame.offset].strip()}")
        print("\n".join(lines), file=self.stdout)

    do_u, do_d, do_l = do_up, do_down, do_list
    do_c = do_cont = do_continue
    do_q = do_EOF = do_exit = do_quit
    do_w = do_bt = do_where

    def print_context(self, num_lines: int = 2) -> None:
        frame = self.frames[self.frame_index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
                    lines.append(f"->  {line}" if i == frame.offset else f"    {line}")
        print("\n".join(lines), file=self.stdout)

    def run(self) -> None:
        while True:
            try:
                self.cmdloop()
                break
            except KeyboardInterrupt:
                print("--KeyboardInterrupt--", file=sys.stdout)


def run_debugger(frames: list[DebuggerFrame], thread_id: int | None, **kwargs: Any) -> None:
    CliDebugger(frames, thread_id, **kwargs).run()


register_debugger("cli", run_debugger, -1)
