"""``TranspileError``: what the front end reports about user code, pointing at the user's line.

    examples/bad.py:7:8: error: cannot branch on a value whose shape differs between branches
        if x.sum() > 0:
           ^~~~~~~~~~~
      'y' is f32[3] in the then-branch (line 8) and f32[4] in the else-branch (line 10)
"""

from __future__ import annotations

from srcjax.transpiler.ir import SourceLoc


class TranspileError(Exception):
    def __init__(self, message: str, loc: SourceLoc | None = None, *, note: str = "", length: int = 1):
        self.message, self.loc, self.note, self.length = message, loc, note, max(1, length)
        super().__init__(self.render())

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc else None

    @property
    def column(self) -> int | None:
        return self.loc.column if self.loc else None

    def render(self) -> str:
        if self.loc is None:
            head = f"error: {self.message}"
            return head + (f"\n  {self.note}" if self.note else "")
        loc = self.loc
        lines = [f"{loc.file}:{loc.line}:{loc.column}: error: {self.message}"]
        if loc.text:
            text = loc.text.rstrip("\n")
            lines.append(f"    {text}")
            width = max(1, min(self.length, len(text) - loc.column + 1))
            lines.append("    " + " " * (loc.column - 1) + "^" + "~" * (width - 1))
        if self.note:
            lines.extend(f"  {line}" for line in self.note.splitlines())
        return "\n".join(lines)


class MissingSourceWarning(UserWarning):
    """A function's source cannot be used (none on disk or in ``linecache``, or not the code that runs): it is
    traced instead, as JAX traces it. Said once per function."""
