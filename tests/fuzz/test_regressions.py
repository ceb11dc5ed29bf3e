"""Every shrunk fuzzer failure in tests/fuzz/regressions/ is run again under the check that failed: it must pass.

A case whose failure is a srcjax bug not fixed yet is listed in ``KNOWN_BUGS`` and expected to fail (strictly:
when the bug is fixed the test says so, and its entry goes). A file's header says what failed and how it was
found; its ``FUZZ`` dictionary holds the check, the input seed and the argument shapes.
"""

import pytest

from tests.fuzz import cases

# file name -> the bug, for the cases that still fail (each file's header has what failed and how it was found;
# the other files are bugs the fuzzer found that are fixed, kept so that they stay fixed)
KNOWN_BUGS: dict[str, str] = {}

FILES = sorted(cases.REGRESSIONS.glob("*.py"))


def _param(path):
    reason = KNOWN_BUGS.get(path.name)
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in FILES])
def test_regression_case(path):
    case, _ = cases.load(path)
    failures = case.run()
    assert not failures, "\n".join(str(f) for f in failures)


def test_known_bugs_name_existing_files():
    names = {p.name for p in FILES}
    assert set(KNOWN_BUGS) <= names, sorted(set(KNOWN_BUGS) - names)
