"""The rule matrix's CPU column, read from the lowering table (codegen/llvm/table.py): every primitive has a row;
a host call (its NumPy implementation, called from inside the native code) says why, and has an implementation
to call. Run with -s to see the column."""

import pytest

import srcjax.transpiler.primitives  # noqa: F401 - registers every family
from srcjax.codegen.llvm.table import CPU, PLANNED, Kind
from srcjax.transpiler.primitives.core import PRIMITIVES


def test_print_cpu_column(capsys):
    with capsys.disabled():
        print(f"\n{'primitive':28s} cpu")
        for name in sorted(PRIMITIVES):
            row = CPU.get(name)
            cell = "(no row)" if row is None else row.kind.value
            print(f"{name:28s} {cell}" + (f"  ({row.reason})" if row is not None and row.reason else ""))


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_every_primitive_has_a_row_in_the_cpu_table(name):
    row = CPU.get(name)
    assert row is not None, f"'{name}' has no row in codegen/llvm/table.py (a HOST row says why it is not lowered)"
    if row.kind is Kind.HOST:
        assert row.reason, f"'{name}' runs as a host call without a reason"
        assert PRIMITIVES[name].impl is not None, f"'{name}' runs as a host call but has no NumPy implementation"
    if row.kind in PLANNED:
        assert row.plan is not None, f"'{name}' is planned but names no planner step"
    if row.accepts is not None:
        assert row.reason and PRIMITIVES[name].impl is not None, f"'{name}': ops it does not accept need a host call"


def test_the_table_has_rows_only_for_primitives():
    assert set(CPU) <= set(PRIMITIVES), sorted(set(CPU) - set(PRIMITIVES))
