"""The fuzzing loop: generate programs by seed, run every check and a sample of transformation stacks, shrink
each new failure and save it as a regression case.

``python -m tests.fuzz.fuzz [--seconds N] [--start SEED] [--out DIR]`` runs until interrupted (or for N
seconds; ``FUZZ_SECONDS`` also sets it), printing programs per second and the failures found. A failure whose
signature (check, exception type, message) a regression file or an earlier finding already has is counted, not
shrunk again. Findings go to tests/fuzz/findings/; a person reads each, moves a real bug's case into
tests/fuzz/regressions/ (and lists it in ``KNOWN_BUGS`` of test_regressions.py until it is fixed), and fixes the
fuzzer when the program was ill-posed.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import os
import pathlib
import random
import sys
import time
import warnings

from srcjax.runtime.api import NativeFallbackWarning
from tests.fuzz import cases, compose
from tests.fuzz.cases import Case
from tests.fuzz.checks import CHECKS
from tests.fuzz.generator import generate
from tests.fuzz.harness import Invalid, Mismatch
from tests.fuzz.shrink import shrink

STACKS_PER_SEED = 6


def program_failures(seed: int) -> list[tuple[Case, Mismatch]]:
    """Every check on the program of ``seed``; [] when it passes or is ill-posed."""
    program = generate(seed)
    out = []
    for group in CHECKS:
        case = Case(program, seed, group)
        try:
            out += [(case, m) for m in case.run()]
        except Invalid:
            return out
    return out


def sampled_stacks(seed: int, count: int = STACKS_PER_SEED) -> list[tuple[str, ...]]:
    return random.Random(seed).sample(compose.stacks(3), count)


def composition_failures(seed: int, stacks: list[tuple[str, ...]]) -> list[tuple[Case, Mismatch]]:
    """``stacks`` of transformations of the one-array program of ``seed``."""
    program = generate(seed, single=True)
    out = []
    for stack in stacks:
        case = Case(program, seed, "compose", stack)
        try:
            out += [(case, m) for m in case.run()]
        except Invalid:
            continue
    return out


def shorter_stack(case: Case, failure: Mismatch) -> Case:
    """The case with as few transformations as still fail the same way."""
    stack = list(case.stack)
    for i in reversed(range(len(stack))):
        shorter = dataclasses.replace(case, stack=tuple(stack[:i] + stack[i + 1:]))
        if len(stack) > 1 and cases.still_fails(shorter, failure.signature):
            stack.pop(i)
    return dataclasses.replace(case, stack=tuple(stack))


def shrink_case(case: Case, failure: Mismatch, seconds: float, log=lambda s: None) -> Case:
    """The case made as small as possible (its stack, then its program) while it fails with ``failure``'s
    signature."""
    limit = cases.HANG_LIMIT if failure.kind == "Hang" else None
    case = shorter_stack(dataclasses.replace(case, time_limit=limit), failure)
    program = shrink(case.program, lambda p: cases.still_fails(dataclasses.replace(case, program=p),
                                                                failure.signature), seconds, log)
    return dataclasses.replace(case, program=program)


def dedupe_key(signature: tuple, stack: tuple[str, ...] = ()) -> tuple:
    """Failures counted as one bug: a crash by its exception and message (the same front-end error fails every
    check), a wrong value by its check; a composition's also by its shortest failing stack."""
    check, kind, message = signature
    return ((kind, message) if kind != "mismatch" else (check, kind)) + tuple(stack)


def known_failures(directory: pathlib.Path) -> collections.Counter:
    known: collections.Counter = collections.Counter()
    for path in sorted(directory.glob("*.py")):
        try:
            case, signature = cases.load(path)
        except Exception:  # noqa: BLE001 - a file being written or edited by hand
            continue
        known[dedupe_key(signature, case.stack)] += 1
        if signature[1] != "mismatch":
            known[dedupe_key(signature)] += 1
    return known


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS", "0")) or None)
    parser.add_argument("--start", type=int, default=int(os.environ.get("FUZZ_START", time.time_ns() % 10**9)))
    parser.add_argument("--out", type=pathlib.Path, default=cases.FINDINGS)
    parser.add_argument("--shrink-seconds", type=float, default=120.0)
    parser.add_argument("--keep", type=int, default=3, help="wrong-value failures of one check saved at most")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    warnings.simplefilter("error", NativeFallbackWarning)  # (as in the test suite: pyproject.toml)
    known = known_failures(args.out)
    if args.out != cases.REGRESSIONS:
        known.update(known_failures(cases.REGRESSIONS))
    started = time.monotonic()
    programs, failures, new = 0, 0, 0
    seen: collections.Counter = collections.Counter()  # failures by signature, new or known
    last = started
    print(f"fuzzing from seed {args.start}; shrunk failures go to {args.out}", flush=True)
    try:
        for seed in itertools.count(args.start):
            if args.seconds is not None and time.monotonic() - started > args.seconds:
                break
            found = program_failures(seed) + composition_failures(seed, sampled_stacks(seed))
            programs += 1
            for case, failure in found:
                failures += 1
                seen[dedupe_key(failure.signature)] += 1
                if known[dedupe_key(failure.signature)] >= (args.keep if failure.kind == "mismatch" else 1):
                    continue  # (the same failure in any stack: a crash of the front end, say)
                case = shorter_stack(case, failure)
                key = dedupe_key(failure.signature, case.stack)
                if known[key] >= (args.keep if failure.kind == "mismatch" else 1):
                    continue
                known[key] += 1
                if failure.kind != "mismatch":
                    known[dedupe_key(failure.signature)] += 1
                print(f"seed {seed}: new failure {failure}", flush=True)
                small = shrink_case(case, failure, args.shrink_seconds)
                path = cases.save(small, failure, args.out, seed, len(case.program.render()))
                new += 1
                print(f"  shrunk to {len(small.program.render())} characters: {path}", flush=True)
            if time.monotonic() - last > 10:
                last = time.monotonic()
                rate = programs / (last - started)
                print(f"{programs} programs ({rate:.1f}/s), {failures} failures, {new} new", flush=True)
    except KeyboardInterrupt:
        pass
    elapsed = time.monotonic() - started
    print(f"done: {programs} programs in {elapsed:.0f} s ({programs / max(elapsed, 1e-9):.1f}/s), {failures} "
          f"failures, {new} new cases saved")
    for key, count in seen.most_common():  # (a known failure, a regression case still open, is counted too)
        print(f"  {count:6d}  {' '.join(str(part)[:100] for part in key)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
