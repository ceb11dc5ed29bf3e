"""The primitive x rule matrix: every primitive has each rule, or declares why not, in one of three states.

Run with -s to see the matrix. A cell is ``rule`` (an op rule, which gets the engine, prints ``op rule``), ``zero``
(a declared zero derivative: ``def_zero_jvp``, ``def_zero_transpose``), ``unsupported`` (``def_unsupported``: the
transform raises, giving the reason), or ``HOLE`` (nothing said: a failure). Ops that hold regions register their
rules like every other primitive, beside it. The engines read the states, and never take a missing rule for a
zero derivative.
"""

import numpy as np
import pytest

import srcjax.transpiler.primitives  # noqa: F401 - registers every family
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.primitives.control import ControlPrimitive
from srcjax.transpiler.primitives.core import PRIMITIVES, RULES, Primitive, TransformError, interpreting
from srcjax.transpiler.transforms.jvp import jvp_function
from srcjax.transpiler.transforms.vjp import vjp_function
from srcjax.transpiler.transforms.vmap import vmap_function
from srcjax.transpiler.types import TensorType

COLUMNS = ("shape", "impl") + RULES


def cell(prim, column):
    if column in ("shape", "impl"):
        if isinstance(prim, ControlPrimitive):
            present = (prim.check_regions if column == "shape" else prim.run) is not None
        else:
            present = (prim.shape_rule if column == "shape" else prim.impl) is not None
        return "yes" if present else "HOLE"
    state = prim.rule_state(column)
    if state == "rule":
        return "op rule" if column in prim.op_rules else "rule"
    return "HOLE" if state == "missing" else state


def matrix():
    return [(name, PRIMITIVES[name].family.split("/")[-1], [cell(PRIMITIVES[name], c) for c in COLUMNS])
            for name in sorted(PRIMITIVES)]


def test_print_rule_matrix(capsys):
    rows = matrix()
    with capsys.disabled():
        print(f"\n{'primitive':28s} {'family':16s} " + " ".join(f"{c:>11s}" for c in COLUMNS))
        for name, family, cells in rows:
            print(f"{name:28s} {family:16s} " + " ".join(f"{c:>11s}" for c in cells))
        counts = {state: sum(cells.count(state) for _, _, cells in rows) for state in ("zero", "unsupported")}
        print(f"declared: {counts['zero']} zero derivatives, {counts['unsupported']} unsupported rules")
    assert len(rows) >= 100


@pytest.mark.parametrize("column", COLUMNS)
def test_no_unexplained_holes(column):
    holes = [name for name, _, cells in matrix() if cells[COLUMNS.index(column)] == "HOLE"]
    assert not holes, f"primitives with no {column} rule and no declaration: {holes}"


def test_declarations_are_sentences_and_not_contradicted():
    for name, prim in PRIMITIVES.items():
        for rule, (state, why) in prim.declared.items():
            assert len(why.split()) >= 2, f"{name}: the reason its {rule} rule is {state} is too short: {why!r}"
            assert prim.rule_state(rule) == "rule" or state in ("zero", "unsupported")
        assert prim.declared.get("vmap", ("unsupported",))[0] == "unsupported", f"{name}: a batching rule is never zero"


def test_region_ops_and_collectives_have_real_rules():
    for name in ("cond", "while", "for", "custom_jvp_call", "custom_vjp_call", "stack_push", "stack_get"):
        assert [cell(PRIMITIVES[name], rule) for rule in RULES] == ["op rule"] * 3, name
    assert [cell(PRIMITIVES["scan"], rule) for rule in RULES] == ["op rule", "unsupported", "unsupported"]
    for name in ("psum", "pmean", "all_gather", "psum_scatter"):
        assert [cell(PRIMITIVES[name], rule) for rule in RULES] == ["rule", "rule", "op rule"], name
    for name in ("pmax", "pmin"):
        assert [cell(PRIMITIVES[name], rule) for rule in RULES] == ["rule", "unsupported", "op rule"], name
    assert [cell(PRIMITIVES["axis_index"], rule) for rule in RULES] == ["zero", "unsupported", "op rule"]


# -- the engines read the three states ---------------------------------------------------------------------------------
F32 = TensorType(np.dtype(np.float32), (3,))


def _probe(setup) -> Primitive:
    """A float elementwise primitive (not registered) whose rules ``setup`` declares."""
    prim = Primitive("probe")
    prim.family = "tests/transpiler/test_rule_matrix.py"
    prim.def_shape(lambda x: x)
    prim.def_impl(lambda x: np.floor(x))
    setup(prim)
    return prim


def _function(prim):
    builder = Builder("f")
    x = builder.param(F32, "x")
    with interpreting(builder):
        return builder.finish([prim.bind(x)])


def test_a_declared_zero_derivative_is_a_zero_tangent():
    fn = _function(_probe(lambda p: p.def_zero_jvp("piecewise constant: the derivative is zero")))
    jvp = jvp_function(fn)
    assert jvp.results[1].aval == F32 and jvp.body.ops[-1].name == "broadcast_in_dim"  # a materialised zero
    grad = vjp_function(fn)
    assert "probe" in {op.name for op in grad.body.ops} and grad.body.results[-1].aval == F32


@pytest.mark.parametrize("transform", ["jvp", "vjp"])
def test_an_unsupported_or_missing_jvp_raises(transform):
    run = {"jvp": jvp_function, "vjp": vjp_function}[transform]
    with pytest.raises(TransformError, match=r"differentiation \(jvp, grad\) of 'probe' is not supported: "
                                             r"it never converges \(tests/transpiler/test_rule_matrix.py\)"):
        run(_function(_probe(lambda p: p.def_unsupported("jvp", "it never converges"))))
    with pytest.raises(TransformError, match=r"no JVP rule for 'probe' \(tests/transpiler/test_rule_matrix.py\)"):
        run(_function(_probe(lambda p: None)))


def test_an_unsupported_or_missing_transpose_raises():
    def linear_without_transpose(prim):
        prim.def_jvp(lambda primals, tangents: (prim.bind(*primals), prim.bind(*tangents)))

    with pytest.raises(TransformError, match=r"no transpose rule for 'probe' .* it appears in the JVP of 'probe'"):
        vjp_function(_function(_probe(linear_without_transpose)))

    def not_linear(prim):
        linear_without_transpose(prim)
        prim.def_unsupported("transpose", "not linear")

    with pytest.raises(TransformError, match=r"reverse-mode differentiation \(grad, vjp\) of 'probe' is not "
                                             r"supported: not linear"):
        vjp_function(_function(_probe(not_linear)))


def test_an_unsupported_or_missing_batching_rule_raises_only_when_batched():
    for setup in (lambda p: p.def_unsupported("vmap", "no batched form"), lambda p: None):
        fn = _function(_probe(setup))
        assert vmap_function(fn, [None], 2, out_dims=[None]).results[0].aval == F32  # nothing batched
        with pytest.raises(TransformError, match=r"batching \(vmap\) of 'probe' is not supported: no batched form|"
                                                 r"no batching rule for 'probe'"):
            vmap_function(fn, [0], 2)


def test_only_the_three_rules_can_be_declared():
    with pytest.raises(ValueError, match="unknown rule"):
        Primitive("probe").def_unsupported("batching", "no such rule")
