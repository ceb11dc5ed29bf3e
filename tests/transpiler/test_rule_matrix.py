"""The primitive x rule matrix: every primitive has each rule, or says why it has none.

Run with -s to see the matrix. A hole is explained by ``prim.mark_no_rule(rule, why)``; control-flow
primitives (which hold regions) have their rules in the transform engines instead.
"""

import pytest

import srcjax.transpiler.primitives  # noqa: F401 - registers every family
from srcjax.transpiler.primitives.ad import jvp_of
from srcjax.transpiler.primitives.control import ControlPrimitive
from srcjax.transpiler.primitives.core import PRIMITIVES
from srcjax.transpiler.transforms.jvp import CONTROL_JVP
from srcjax.transpiler.transforms.vmap import CONTROL_VMAP

RULES = ("shape", "impl", "jvp", "transpose", "vmap")


def has_rule(prim, rule):
    if isinstance(prim, ControlPrimitive):
        return {"shape": prim.check_regions is not None, "impl": prim.run is not None,
                "jvp": prim in CONTROL_JVP or prim.jvp_rule is not None, "transpose": True,
                "vmap": prim in CONTROL_VMAP}[rule]
    return {"shape": prim.shape_rule is not None, "impl": prim.impl is not None,
            "jvp": jvp_of(prim) is not None, "transpose": prim.transpose_rule is not None,
            "vmap": prim.vmap_rule is not None}[rule]


def matrix():
    rows = []
    for name in sorted(PRIMITIVES):
        prim = PRIMITIVES[name]
        cells = []
        for rule in RULES:
            if has_rule(prim, rule):
                cells.append("yes")
            elif rule in prim.no_rule:
                cells.append("none")
            else:
                cells.append("HOLE")
        rows.append((name, prim.family.split("/")[-1], cells))
    return rows


def test_print_rule_matrix(capsys):
    rows = matrix()
    with capsys.disabled():
        print(f"\n{'primitive':28s} {'family':16s} " + " ".join(f"{r:>9s}" for r in RULES))
        for name, family, cells in rows:
            print(f"{name:28s} {family:16s} " + " ".join(f"{c:>9s}" for c in cells))
    assert len(rows) >= 100


@pytest.mark.parametrize("rule", RULES)
def test_no_unexplained_holes(rule):
    holes = [name for name, _, cells in matrix() if cells[RULES.index(rule)] == "HOLE"]
    assert not holes, f"primitives with no {rule} rule and no reason given: {holes}"


def test_explanations_are_sentences():
    for name, prim in PRIMITIVES.items():
        for rule, why in prim.no_rule.items():
            assert len(why.split()) >= 2, f"{name}: the reason for having no {rule} rule is too short: {why!r}"
