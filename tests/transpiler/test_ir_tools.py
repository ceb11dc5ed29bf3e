"""The IR's printer, parser, verifier and interpreter on hand-built functions (``test_ir_cases``).

Every case prints -> parses -> prints to the same text, verifies, evaluates eagerly like its NumPy
reference, and re-records unchanged under a ``Builder``; broken functions are rejected with messages that
name the problem, and bad text with its line and column.
"""

from __future__ import annotations

import ast

import numpy as np
import pytest

import srcjax.runtime  # noqa: F401 - installs the eager interpreter
from srcjax.runtime.array import Array
from tests.transpiler.test_ir_cases import (
    CASES,
    IR,
    arrays,
    bcast,
    case_arith,
    case_consts,
    case_control,
    case_scan,
    f32,
    i32,
    named,
    same_bits,
)
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import Literal, Value, walk
from srcjax.transpiler.parser import ParseError, evaluate_param, param_classes, parse_function
from srcjax.transpiler.primitives import PRIMITIVES, core
from srcjax.transpiler.primitives.control import for_p, while_p
from srcjax.transpiler.primitives.core import Primitive
from srcjax.transpiler.primitives.elementwise import (
    add_p,
    complex_p,
    lt_p,
    mul_p,
    neg_p,
    tanh_p,
)
from srcjax.transpiler.primitives.shape import reshape_p
from srcjax.transpiler.printer import print_function
from srcjax.transpiler.types import TensorType
from srcjax.transpiler.verifier import VerificationError, verify


# -- printer and parser --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_print_parse_print_round_trips(name):
    fn, _, _ = CASES[name]()
    text = print_function(fn)
    again = parse_function(text)
    assert print_function(again) == text
    verify(again)
    assert print_function(fn) == text  # deterministic


PRINTED = """\
func @loss(%w: f32[3,4], %x: f32[4], %p: bool[], %q: f32[]) -> (f32[12], f32[4]) {
  %0: f32[12] = reshape[new_sizes=(12,), dimensions=None] %w
  %h: f32[12] = tanh %0
  %y: f32[12] = cond %p {
    yield %h
  } else {
    %1: f32[12] = neg %h
    yield %1
  }
  %q.1: f32[] = mul %q, 2.0:f32{weak}
  %2: f32[4] = broadcast_in_dim[shape=(4,), broadcast_dimensions=()] %q.1
  %x.1: f32[4] = add %x, %2
  %i: i32[], %s: f32[4] = while (%i.1 = 0:i32, %s.1 = %x.1) cond {
    %3: bool[] = lt %i.1, 3:i32{weak}
    yield %3
  } body {
    %4: i32[] = add %i.1, 1:i32{weak}
    %s.2: f32[4] = mul %s.1, %x
    yield %4, %s.2
  }
  return %y, %s
}
"""


def test_printed_form():
    with IR("loss") as ir:
        w, x, p, q = ir.param("w", f32, (3, 4)), ir.param("x", f32, (4,)), ir.param("p", np.bool_), ir.param("q", f32)
        h = named(tanh_p.bind(reshape_p.bind(w, new_sizes=(12,), dimensions=None)), "h")
        (y,) = ir.cond(p, lambda: [h], lambda: [neg_p.bind(h)], names=["y"])
        q1 = named(mul_p.bind(q, 2.0), "q")
        x1 = named(add_p.bind(x, bcast(q1, (4,))), "x")
        i, s = ir.while_(
            [np.int32(0), x1],
            lambda i, s: [lt_p.bind(i, 3)],
            lambda i, s: [add_p.bind(i, 1), named(mul_p.bind(s, x), "s")],
            names=["i", "s"],
        )
        fn = ir.finish(y, s)
    assert print_function(fn) == PRINTED
    with pytest.raises(TypeError, match="cannot print a parameter value <object"):
        fn.body.ops[0].params["dimensions"] = object()
        print_function(fn)


def test_generic_form_round_trips_and_the_verifier_reports_it():
    """A control op whose regions do not fit its pretty form prints generically, and still round-trips."""
    with IR("odd") as ir:
        x = ir.param("x", f32)
        with ir.b.region([TensorType(f32, ())], ["a"]) as cond_block:
            cond_block.results = [lt_p.bind(cond_block.params[0], 1.0)]
        with ir.b.region([TensorType(f32, ()), TensorType(f32, ())], ["a", "b"]) as body:
            body.results = [body.params[0]]
        (r,) = ir._emit(while_p, [x], {}, [x.aval], ["r"], [cond_block, body])
        fn = ir.finish(r)
    text = print_function(fn)
    assert '"while" %x region(%a: f32[]) {' in text and "} region(%a.1: f32[], %b: f32[]) {" in text
    assert print_function(parse_function(text)) == text
    with pytest.raises(VerificationError, match="while body parameters"):
        verify(fn)


def test_region_binders_carry_types_only_when_they_differ():
    with IR("typed") as ir:
        n = ir.param("n", i32)
        (s,) = ir.for_(n, [0.0], lambda k, s: [add_p.bind(s, 1.0)], names=["s"])  # a weak f32 init
        fn = ir.finish(s)
    text = print_function(fn)
    assert "for %k = 0 to %n (%s.1 = 0.0:f32{weak}) {" in text
    fn.body.ops[0].regions[0].params[1].aval = TensorType(f32, ())  # now the param is strong: annotated
    text = print_function(fn)
    assert "for %k = 0 to %n (%s.1: f32[] = 0.0:f32{weak}) {" in text
    assert print_function(parse_function(text)) == text


def test_names_that_are_not_identifiers():
    fn = small()
    fn.name = "<lambda>"
    fn.params[0].name = "x.y"  # hints are sanitised: ``x_y``
    text = print_function(fn)
    assert text.startswith('func @"<lambda>"(%x_y: f32[], %p: bool[]) -> f32[] {')
    again = parse_function(text)
    assert again.name == "<lambda>" and print_function(again) == text


def test_switch_prints_every_branch():
    fn, _, _ = case_control()
    text = print_function(fn)
    assert "%z: f32[3] = switch %i {" in text and text.count("} case {") == 2
    assert "for %k = 0 to %n (%s.1 = %z) {" in text
    assert "scan[" not in text


def test_scan_header():
    fn, _, _ = case_scan()
    text = print_function(fn)
    assert "%c.1: f32[2], %ys: f32[4,2] = scan[length=4, reverse=False, num_carry=1] (%c.2 = %c, %x in %xs) {" in text
    assert "scan[length=4, reverse=True, num_carry=1]" in text


def test_constants_print_first_and_parse_as_zeros():
    fn, _, (x,) = case_consts()
    text = print_function(fn)
    body = text.splitlines()[1:]
    assert body[0] == "  const %0: f32[2,3]" and body[1] == "  const %1: bool[2,3]"
    again = parse_function(text)
    assert [c.aval for c, _ in again.consts] == [c.aval for c, _ in fn.consts]
    assert all(not d.any() for _, d in again.consts)
    ours = eval_function(again, *arrays([x]), consts=[d for _, d in fn.consts])  # the data, passed back in
    assert all(same_bits(a, b) for a, b in zip(ours, eval_function(fn, *arrays([x]))))


@pytest.mark.parametrize(
    "text",
    [
        "nan:f32",
        "-nan:f32",  # (the sign of a NaN is data, copysign reads it; the text is the disk cache's key)
        "-inf:f32",
        "inf:f64",
        "-0.0:f32",
        "0.1:f32",
        "1e+20:f32{weak}",
        "3.4028235e+38:f32",
        "1e-45:f32",
        "-2147483648:i32",
        "4294967295:u32",
        "True:bool",
        "0.1:f16",
        "(1.0-2.5j):c64",
        "(nan+infj):c128",
        "(-nan-nanj):c64",
        "7:i8{weak}",
    ],
)
def test_literals_read_back_exactly(text):
    assert parse_function("func @f() -> () {\n  return\n}\n").results == []
    source = (
        f"func @f() -> {text.split(':')[1].split('{')[0]}[]{'{weak}' if '{weak}' in text else ''} {{\n"
        f"  return {text}\n}}\n"
    )
    again = parse_function(source)
    (lit,) = again.results
    assert isinstance(lit, Literal) and print_function(again) == source


def test_float_literals_that_need_all_their_digits():
    # The text goes back through float64 to float32; the printer checks that path (and would print the exact
    # decimal where the shortest text rounded twice).
    for value in [np.float32(16777216.0), np.nextafter(np.float32(0.1), np.float32(1)), np.float32(1 / 3)]:
        fn = parse_function("func @f() -> f32[] {\n  return 0.0:f32\n}\n")
        fn.body.results = [Literal(value, TensorType(f32, ()))]
        again = parse_function(print_function(fn))
        assert again.results[0].value.tobytes() == np.float32(value).tobytes()


PARAM_KINDS = dict(
    s="a 'quoted' \\ string",
    f=-1.5e-7,
    nan=float("nan"),
    inf=float("-inf"),
    c=complex(1, -2),
    l=[1, (2,)],
    n=None,
    d=np.dtype(np.uint8),
    t=((1, -2), (), (True, False)),
    b=True,
    i=-3,
)


def test_every_param_kind_round_trips(monkeypatch):
    prim = Primitive("ir_test_params", params=tuple(PARAM_KINDS))
    prim.def_shape(lambda x, **params: x)
    monkeypatch.setitem(PRIMITIVES, prim.name, prim)
    with IR("params") as ir:
        x = ir.param("x", f32)
        fn = ir.finish(prim.bind(x, **PARAM_KINDS))
    text = print_function(fn)
    assert (
        f"ir_test_params[s={PARAM_KINDS['s']!r}, f=-1.5e-07, nan=nan, inf=-inf, c=complex(1.0, -2.0), "
        "l=[1, (2,)], n=None, d=u8, t=((1, -2), (), (True, False)), b=True, i=-3] %x"
    ) in text
    (op,) = parse_function(text).body.ops
    for key, value in PARAM_KINDS.items():
        assert op.params[key] == value or (key == "nan" and np.isnan(op.params[key])), key
    assert print_function(parse_function(text)) == text
    verify(fn)


def test_param_classes_of_the_primitive_modules_round_trip():
    indexing = pytest.importorskip("srcjax.transpiler.primitives.indexing")
    fft = pytest.importorskip("srcjax.transpiler.primitives.fft")
    numbers = indexing.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    with IR("gather") as ir:
        x, idx = ir.param("x", f32, (5, 3)), ir.param("idx", i32, (2, 1))
        g = indexing.gather_p.bind(
            x,
            idx,
            dimension_numbers=numbers,
            slice_sizes=(1, 3),
            mode=indexing.GatherScatterMode.CLIP,
            fill_value=None,
            indices_are_sorted=False,
            unique_indices=False,
        )
        z = fft.fft_p.bind(complex_p.bind(g, g), fft_type=fft.FftType.FFT, fft_lengths=(3,))
        fn = ir.finish(z)
    text = print_function(fn)
    assert (
        "gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), "
        "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()), slice_sizes=(1, 3), "
        "mode=GatherScatterMode.CLIP"
    ) in text
    assert "fft[fft_type=FftType.FFT, fft_lengths=(3,)]" in text
    again = parse_function(text)
    assert print_function(again) == text
    assert again.body.ops[0].params["dimension_numbers"] == numbers
    verify(again)
    conv = pytest.importorskip("srcjax.transpiler.primitives.convolution")
    spec = conv.ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
    node = ast.parse("ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))", mode="eval")
    assert evaluate_param(node.body, param_classes()) == spec


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = add %x, %zz\n  return %y\n}",
            "line 2, column 23: undefined value %zz",
        ),
        (
            "func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = frob %x\n  return %y\n}",
            "line 2, column 15: unknown primitive 'frob'",
        ),
        (
            "func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = integer_pow[y=__import__('os')] %x\n  return %y\n}",
            "line 2, column 29: parameter 'y': '__import__' is not a parameter class",
        ),
        (
            "func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = integer_pow[y=1), print(0] %x\n  return %y\n}",
            "line 2, column 30: ')' does not close the bracket before it",
        ),
        (
            "func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = integer_pow[y=os.system] %x\n  return %y\n}",
            "line 2, column 29: parameter 'y': 'os' is not an enum",
        ),
        ("func @f(%x: f33[3]) -> f32[] {\n  return %x\n}", "line 1, column 13: unknown dtype 'f33'"),
        ("func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = neg %x\n}", "line 3, column 1: the block ends without 'return'"),
        (
            "func @f(%x: u8[]) -> u8[] {\n  %y: u8[] = add %x, 300:u8\n  return %y\n}",
            "line 2, column 22: 300 does not fit",
        ),
        (
            "func @f(%x: f32[]) -> f32[] {\n  %x: f32[] = neg %x\n  return %x\n}",
            "line 2, column 3: value %x is defined twice",
        ),
        ("func @f(%x: f32[]) -> i32[] {\n  return %x\n}", "line 1, column 23: the header declares results (i32[])"),
        (
            "func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = neg %x\n  yield %y\n}",
            "line 3, column 3: expected 'return' to end this block, found 'yield'",
        ),
    ],
)
def test_parse_errors_name_line_and_column(text, message):
    with pytest.raises(ParseError) as info:
        parse_function(text)
    assert message in str(info.value)
    assert "^" in str(info.value).splitlines()[-1]


def test_parse_error_for_a_value_from_a_sibling_region():
    text = """func @f(%p: bool[], %x: f32[]) -> f32[] {
  %y: f32[] = cond %p {
    %t: f32[] = neg %x
    yield %t
  } else {
    yield %t
  }
  return %y
}"""
    with pytest.raises(ParseError, match="line 6, column 11: undefined value %t"):
        parse_function(text)


# -- verifier ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_verifier_accepts_every_case(name):
    fn, _, _ = CASES[name]()
    verify(fn)


def small():
    with IR("small") as ir:
        x, p = ir.param("x", f32), ir.param("p", np.bool_)
        a = named(neg_p.bind(x), "a")
        b = named(mul_p.bind(a, x), "b")
        (y,) = ir.cond(p, lambda: [tanh_p.bind(b)], lambda: [b], names=["y"])
        return ir.finish(y)


def test_verifier_rejects_use_before_definition():
    fn = small()
    fn.body.ops[0], fn.body.ops[1] = fn.body.ops[1], fn.body.ops[0]
    with pytest.raises(VerificationError, match=r"%b = mul: %a is used before it is defined"):
        verify(fn)


def test_verifier_rejects_a_wrong_result_type():
    fn = small()
    fn.body.ops[1].results[0].aval = TensorType(i32, ())
    with pytest.raises(VerificationError) as info:
        verify(fn)
    assert "%b = mul: results have types (i32[]) but 'mul' of (f32[], f32[]) gives (f32[])" in str(info.value)
    assert "cond branch 1 yield has types (i32[]), expected (f32[])" in str(info.value)


def test_verifier_checks_the_weak_bit():
    fn = small()
    fn.body.ops[0].results[0].aval = TensorType(f32, (), weak_type=True)
    with pytest.raises(VerificationError, match=r"%a = neg: results have types \(f32\[\]\{weak\}\)"):
        verify(fn)


def test_verifier_rejects_a_value_from_a_sibling_region():
    fn = small()
    cond = fn.body.ops[2]
    then_value = cond.regions[0].results[0]
    cond.regions[1].results = [then_value]
    with pytest.raises(VerificationError, match=r"region 1 of %y = cond: %0 is defined inside another region"):
        verify(fn)


def test_verifier_rejects_bad_cond_yield_types():
    fn = small()
    cond = fn.body.ops[2]
    cond.regions[1].results = [Literal(1, TensorType(i32, ()))]
    with pytest.raises(VerificationError, match=r"cond branch 1 yield has types \(i32\[\]\), expected \(f32\[\]\)"):
        verify(fn)


def test_verifier_rejects_an_unknown_primitive_and_lists_every_problem():
    fn = small()
    fn.body.ops[0].prim = Primitive("mystery")
    fn.body.ops[1].operands = [fn.body.ops[1].operands[0], Value(TensorType(f32, ()), "ghost")]
    with pytest.raises(VerificationError) as info:
        verify(fn)
    assert info.value.errors == [
        "%a = mystery: unknown primitive 'mystery' (not registered)",
        "%b = mul: %ghost is never defined",
    ]
    assert str(info.value).startswith("@small: 2 problems")


def test_verifier_rejects_a_value_defined_twice_and_bad_loop_regions():
    fn = small()
    fn.body.ops[1].results = fn.body.ops[0].results
    with pytest.raises(VerificationError, match="value %a is defined twice"):
        verify(fn)
    fn, _, _ = case_control()
    loop = next(op for op in fn.body.ops if op.prim is while_p)
    loop.regions[0].results = [loop.regions[0].params[1]]
    with pytest.raises(VerificationError, match="while condition must yield one bool scalar"):
        verify(fn)


def test_verifier_reports_a_param_the_text_cannot_hold():
    fn = small()
    fn.body.ops[0].params = {"y": object()}
    with pytest.raises(VerificationError) as info:
        verify(fn)
    assert "the function cannot be printed: cannot print a parameter value <object" in str(info.value)
    assert "%a = neg: unknown parameter(s) ['y']; 'neg' takes []" in str(info.value)


def test_verifier_names_the_source_line():
    fn, _, _ = case_arith()
    op = next(op for op in fn.body.ops if op.loc and op.loc.line == 3 and op.name == "add")
    op.results[0].aval = TensorType(f32, (4,))
    with pytest.raises(VerificationError, match=r"%h = add \(cases.py:3\): results have types \(f32\[4\]\)"):
        verify(fn)


# -- the interpreter ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_eval_function_agrees_with_numpy(name):
    fn, reference, args = CASES[name]()
    ours = eval_function(fn, *arrays(args))
    expected = reference(*[np.asarray(a, np.float64) if np.asarray(a).dtype == f32 else a for a in args])
    assert len(ours) == len(expected)
    for got, want, result in zip(ours, expected, fn.results):
        got = np.asarray(got)
        assert got.dtype == result.aval.dtype and got.shape == result.aval.shape
        want = np.asarray(want)
        if got.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6 if got.dtype != np.float16 else 1e-3, atol=1e-30)


@pytest.mark.parametrize("name", CASES)
def test_eval_function_under_a_builder_re_records_the_function(name):
    fn, _, _ = CASES[name]()
    inner = Builder(fn.name, fn.source)
    inner.loc = None
    with core.interpreting(inner):
        params = [inner.param(p.aval, p.name) for p in fn.params]
        outs = eval_function(fn, *params)
    again = inner.finish(outs)
    verify(again)
    assert print_function(again) == print_function(fn)
    assert [op.loc for op in walk(again.body)] == [op.loc for op in walk(fn.body)]


def test_eval_function_under_a_builder_folds_what_is_concrete():
    fn, reference, args = case_control()
    inner = Builder("folded")
    with core.interpreting(inner):
        x = inner.param(fn.params[0].aval, "x")
        outs = eval_function(fn, x, *arrays(args[1:]))  # p and i known: each cond takes its branch
    folded = inner.finish(outs)
    verify(folded)
    assert [op.prim for op in walk(folded.body) if op.regions] == [for_p, while_p]  # they carry values of x
    for got, want in zip(eval_function(folded, *arrays(args[:1])), eval_function(fn, *arrays(args))):
        assert same_bits(got, want)


def test_eval_function_checks_arguments():
    fn, _, args = case_arith()
    with pytest.raises(TypeError, match="takes 3 arguments, got 2"):
        eval_function(fn, *arrays(args[:2]))
    with pytest.raises(TypeError, match=r"argument 0 has type i32\[3\], the parameter is f32\[3\]"):
        eval_function(fn, Array(np.zeros(3, np.int32)), *arrays(args[1:]))


def test_scan_of_length_zero_gives_empty_outputs():
    fn, _, args = case_scan()
    *_, ws = eval_function(fn, *arrays(args))
    assert np.asarray(ws).shape == (0, 2) and np.asarray(ws).dtype == f32
