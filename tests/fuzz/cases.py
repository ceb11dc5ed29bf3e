"""A fuzz case (a program, the input seed and the check it is run under, or the transformation stack for a
composition case), how to run it, and its regression file: the program's module with a header saying what
failed and a ``FUZZ`` dictionary that ``test_regressions.py`` reads to run the same check again.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
import textwrap
from typing import Any

import numpy as np

from tests.fuzz import checks, compose, harness
from tests.fuzz.harness import Hang, Invalid, Loaded, Mismatch, leaves, run_reference, sample, time_limit
from tests.fuzz.program import Program

REGRESSIONS = pathlib.Path(__file__).resolve().parent / "regressions"
FINDINGS = REGRESSIONS.parent / "findings"  # what ``make fuzz`` found, for a person to review
HANG_LIMIT = 3.0  # seconds per check when shrinking or rerunning a case that hangs


@dataclasses.dataclass
class Case:
    """``group`` is a key of ``checks.CHECKS``, or "compose" with ``stack`` the transformations (outermost
    first) applied to ``main`` (one array in, one out)."""

    program: Program
    seed: int
    group: str
    stack: tuple[str, ...] = ()
    source: str | None = None  # a regression file's text, run as it is
    compiled_only: bool | None = None
    time_limit: float | None = None  # per check, for a case that hangs (harness.TIME_LIMIT otherwise)

    def load(self) -> Loaded:
        return Loaded(self.program, self.source, self.compiled_only)

    def run(self) -> list[Mismatch]:
        """The case's failures; ``Invalid`` if the program is ill-posed at its input."""
        with harness.default_time_limit(self.time_limit):
            return self._run()

    def _run(self) -> list[Mismatch]:
        loaded = self.load()
        if self.group != "compose":
            return checks.run_checks(loaded, self.seed, only=self.group)
        try:
            with time_limit():
                run_composition(loaded, self.stack, self.seed)
        except Hang:
            e = Mismatch("compose", "Hang", f"still running after {harness.TIME_LIMIT:.0f} s")
            e.group = "compose"
            return [e]
        except Mismatch as e:
            e.group = "compose"
            return [e]
        return []


def run_composition(loaded: Loaded, stack: tuple[str, ...], seed: int) -> None:
    """``stack`` of transformations of the program's ``main`` (one array in, one out) vs its reference."""
    (x,) = sample(loaded.program, seed)
    out = leaves(run_reference(loaded, [x]))
    if len(out) != 1:
        raise Invalid("a composition base returns one array")
    compose.check_stack(stack, loaded.fn, loaded.reference, np.shape(x), out[0].shape, seed)


def still_fails(case: Case, signature: tuple) -> bool:
    try:
        return any(m.signature == signature for m in case.run())
    except Invalid:
        return False
    except Exception:  # noqa: BLE001 - a candidate the harness cannot run (e.g. a name left undefined) is no repro
        return False


# -- regression files ---------------------------------------------------------------------------------------------
def save(case: Case, failure: Mismatch, directory: pathlib.Path, generator_seed: int, original: int) -> pathlib.Path:
    """Write the case as a regression file named after the check and the seed; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{failure.check}_{'_'.join(case.stack) + '_' if case.stack else ''}{generator_seed}".replace("-", "_")
    path = directory / f"{name}.py"
    what = f"check '{case.group}'" + (f" of jax stack {'('.join(case.stack)}(main{')' * len(case.stack)}"
                                       if case.stack else "")
    detail = textwrap.wrap(f"{failure}", 116, max_lines=12, placeholder=" ...") or [""]
    source = case.program.render()
    header = [
        f"# srcjax fuzzer regression case: {what} failed.",
        f"# Found from generator seed {generator_seed} (tests/fuzz/generator.py), inputs from seed {case.seed};",
        f"# shrunk from {original} to {len(source)} characters. Run by tests/fuzz/test_regressions.py.",
        "# Failure when found:",
        *[f"#   {line}" for line in detail],
        "# ruff: noqa: E501, F401, F841, B007",
    ]
    meta = dict(group=case.group, stack=list(case.stack), seed=case.seed, signature=list(failure.signature),
                args=case.program.arg_specs, dims=case.program.dims, compiled_only=case.program.compiled_only())
    if failure.kind == "Hang":
        meta["time_limit"] = HANG_LIMIT
    path.write_text("\n".join(header) + "\n" + source + f"\n\nFUZZ = {meta!r}\n")
    return path


def load(path: pathlib.Path) -> tuple[Case, tuple]:
    """A regression file's case and the signature of the failure it was saved for."""
    text = path.read_text()
    found = re.search(r"^FUZZ = (.*)$", text, re.M)
    meta: dict[str, Any] = ast.literal_eval(found.group(1))
    program = Program(meta["dims"], [], meta["args"])
    case = Case(program, meta["seed"], meta["group"], tuple(meta["stack"]), text, meta["compiled_only"],
                meta.get("time_limit"))
    return case, tuple(meta["signature"])
