"""The IR's tools: printer, parser, verifier, interpreter and Python emitter, on functions built by hand.

Each case builds a function with the ``Builder`` (binding primitives directly, control-flow ops through
``builder.region()``) together with a NumPy reference. Every case must print -> parse -> print to the same
text, verify, evaluate eagerly like its reference, re-record unchanged under a ``Builder`` (inlining), and
emit a Python module that gives bit-identical results to ``eval_function``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from itertools import zip_longest
from typing import Callable

import numpy as np
import pytest

import runtime  # noqa: F401 - installs the eager interpreter
from runtime.array import Array
from transpiler.builder import Builder
from transpiler.emit_python import LAX_CALLS, emit_module
from transpiler.interpret import eval_function
from transpiler.ir import Function, Literal, Op, SourceLoc, Value, walk
from transpiler.parser import ParseError, evaluate_param, param_classes, parse_function
from transpiler.primitives import PRIMITIVES, core
from transpiler.primitives.control import cond_p, for_p, scan_p, while_p
from transpiler.primitives.core import Primitive
from transpiler.primitives.elementwise import (
    abs_p, add_p, and_p, complex_p, convert_element_type_p, div_p, eq_p, exp_p, integer_pow_p, lt_p, max_p, min_p,
    mul_p, ne_p, neg_p, not_p, or_p, pow_p, select_n_p, sin_p, sub_p, tanh_p, xor_p, ge_p, le_p, gt_p,
)
from transpiler.primitives.shape import broadcast_in_dim_p, concatenate_p, iota_p, pad_p, reshape_p, transpose_p
from transpiler.printer import print_function
from transpiler.types import TensorType
from transpiler.verifier import VerificationError, verify

f32, i32, u32 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint32)


# -- a small DSL over the Builder ------------------------------------------------------------------------------
class IR:
    """Builds one function: ``with IR("f") as ir: x = ir.param("x", f32, (3,)); ...; fn = ir.finish(y)``."""

    def __init__(self, name: str, file: str = "cases.py"):
        self.b = Builder(name, SourceLoc(file, 1, 0, f"def {name}(...):", name))
        self.b.loc = None  # only ops built under ``at`` have a source line
        self._scope = core.interpreting(self.b)

    def __enter__(self) -> IR:
        self._scope.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._scope.__exit__(*exc)

    def param(self, name: str, dtype, shape=()) -> Value:
        return self.b.param(TensorType(dtype, shape), name)

    def finish(self, *results) -> Function:
        return self.b.finish(results)

    def at(self, line: int, text: str):
        return self.b.at(SourceLoc(self.b.function.source.file, line, 4, text))

    def _region(self, avals, names, body: Callable) -> object:
        with self.b.region(avals, names) as block:
            block.results = [self.b.operand(r) for r in body(*block.params)]
        return block

    def _emit(self, prim, operands, params, avals, names, regions) -> list[Value]:
        results = [Value(a, n) for a, n in zip_longest(avals, names[: len(avals)])]
        self.b.emit(Op(prim, operands, params, results, regions, loc=self.b.loc))
        return results

    def cond(self, pred, *branches: Callable, names=()) -> list[Value]:
        regions = [self._region([], [], branch) for branch in branches]
        avals = [r.aval for r in regions[0].results]
        return self._emit(cond_p, [self.b.operand(pred)], {}, avals, list(names), regions)

    def while_(self, init, cond: Callable, body: Callable, names=()) -> list[Value]:
        init = [self.b.operand(x) for x in init]
        avals = [x.aval for x in init]
        regions = [self._region(avals, names, cond), self._region(avals, names, body)]
        return self._emit(while_p, init, {}, avals, list(names), regions)

    def for_(self, n, init, body: Callable, names=(), index: str | None = "k") -> list[Value]:
        init = [self.b.operand(x) for x in init]
        avals = [x.aval for x in init]
        region = self._region([TensorType(i32, ()), *avals], [index, *names], body)
        return self._emit(for_p, [self.b.operand(n), *init], {}, avals, list(names), [region])

    def scan(self, init, xs, body: Callable, *, reverse=False, names=()) -> list[Value]:
        init, xs = [self.b.operand(x) for x in init], [self.b.operand(x) for x in xs]
        length = xs[0].shape[0]
        avals = [x.aval for x in init]
        slices = [x.aval.update(shape=x.shape[1:]) for x in xs]
        region = self._region([*avals, *slices], [*names[: len(init)], *["x"] * len(xs)], body)
        ys = [y.aval.update(shape=(length, *y.shape)) for y in region.results[len(init):]]
        params = {"length": length, "reverse": reverse, "num_carry": len(init)}
        return self._emit(scan_p, [*init, *xs], params, avals + ys, list(names), [region])


def named(v: Value, name: str) -> Value:
    v.name = name
    return v


def bcast(x, shape):
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=())


def to_f32(x):
    return convert_element_type_p.bind(x, new_dtype=f32, weak_type=False)


# -- the cases: (function, NumPy reference, arguments) --------------------------------------------------------
def case_arith():
    with IR("arith") as ir:
        x, y, q = ir.param("x", f32, (3,)), ir.param("y", f32, (3,)), ir.param("q", f32)
        with ir.at(2, "a = q * 2.0"):
            a = named(mul_p.bind(q, 2.0), "a")  # a weak literal
        with ir.at(3, "h = x * a + y"):
            h = named(add_p.bind(mul_p.bind(x, bcast(a, (3,))), y), "h")
        m = max_p.bind(q, np.float32(0.25))  # a strong literal
        d = named(div_p.bind(h, bcast(m, (3,))), "d")
        e = exp_p.bind(neg_p.bind(d))
        s = named(select_n_p.bind(lt_p.bind(x, y), e, sub_p.bind(h, y)), "s")
        p = pow_p.bind(add_p.bind(abs_p.bind(x), bcast(1.0, (3,))), y)
        k = integer_pow_p.bind(x, y=3)
        r = integer_pow_p.bind(add_p.bind(abs_p.bind(y), bcast(np.float32(1), (3,))), y=-2)
        c = convert_element_type_p.bind(ge_p.bind(x, y), new_dtype=i32, weak_type=False)
        fn = ir.finish(h, s, p, k, r, c, d)

    def reference(x, y, q):
        a = q * 2.0
        h = x * a + y
        d = h / max(q, 0.25)
        s = np.where(x < y, h - y, np.exp(-d))
        return [h, s, (np.abs(x) + 1) ** y, x**3, (np.abs(y) + 1) ** -2.0, (x >= y).astype(np.int32), d]

    args = [np.array([0.5, -1.5, 2.0], f32), np.array([1.0, -2.0, 0.25], f32), np.float32(1.5)]
    return fn, reference, args


def case_literals():
    """Literals of every kind the printer must read back exactly."""
    with IR("literals") as ir:
        x = ir.param("x", f32)
        outs = [
            add_p.bind(x, np.float32(np.nan)), max_p.bind(x, -np.inf), min_p.bind(x, np.float32(np.inf)),
            mul_p.bind(x, np.float32(-0.0)), add_p.bind(x, 0.1), mul_p.bind(x, np.float32(1e20)),
            add_p.bind(x, np.float32(3.4028235e38)), add_p.bind(x, np.float32(1.4e-45)),
        ]
        ci = convert_element_type_p.bind(x, new_dtype=i32, weak_type=False)
        outs += [add_p.bind(ci, -7), mul_p.bind(ci, np.int32(-2147483648))]
        cu = convert_element_type_p.bind(x, new_dtype=u32, weak_type=False)
        outs.append(xor_p.bind(cu, np.uint32(4294967295)))
        outs.append(and_p.bind(lt_p.bind(x, 1.0), True))
        h = convert_element_type_p.bind(x, new_dtype=np.float16, weak_type=False)
        outs.append(add_p.bind(h, np.float16(0.1)))
        c = complex_p.bind(x, x)
        outs.append(add_p.bind(c, np.complex64(1 - 2.5j)))
        fn = ir.finish(*outs)

    def reference(x):
        with np.errstate(all="ignore"):
            c = np.complex64(complex(x, x))
            return [x + np.float32(np.nan), max(x, np.float32(-np.inf)), min(x, np.float32(np.inf)), x * np.float32(-0.0),
                    x + np.float32(0.1), x * np.float32(1e20), x + np.float32(3.4028235e38), x + np.float32(1.4e-45),
                    np.int32(int(x) - 7), np.int32(int(x)) * np.int32(-2147483648),
                    np.uint32(int(x)) ^ np.uint32(4294967295), np.bool_(x < 1.0), np.float16(x) + np.float16(0.1),
                    c + np.complex64(1 - 2.5j)]

    return fn, reference, [np.float32(3.0)]


def case_control():
    with IR("control") as ir:
        x, p, i, n = ir.param("x", f32, (3,)), ir.param("p", np.bool_), ir.param("i", i32), ir.param("n", i32)
        with ir.at(4, "if p:"):
            (y,) = ir.cond(p, lambda: [tanh_p.bind(x)], lambda: [neg_p.bind(x)], names=["y"])
        (z,) = ir.cond(i, lambda: [mul_p.bind(y, bcast(2.0, (3,)))], lambda: [y], lambda: [sin_p.bind(y)],
                       names=["z"])

        def accumulate(k, s):
            with ir.at(9, "s = s + k"):
                return [named(add_p.bind(s, bcast(to_f32(k), (3,))), "s")]

        (s,) = ir.for_(n, [z], accumulate, names=["s"])
        j, acc = ir.while_([np.int32(0), s], lambda j, acc: [lt_p.bind(j, n)],
                           lambda j, acc: [add_p.bind(j, 1), mul_p.bind(acc, bcast(0.5, (3,)))], names=["j", "acc"])
        fn = ir.finish(acc, j, z)

    def reference(x, p, i, n):
        y = np.tanh(x) if p else -x
        z = [y * 2, y, np.sin(y)][min(max(int(i), 0), 2)]
        s = z + sum(range(int(n)))
        return [s * 0.5 ** max(int(n), 0), np.int32(max(int(n), 0)), z]

    args = [np.array([0.5, -1.0, 2.0], f32), np.bool_(False), np.int32(7), np.int32(4)]
    return fn, reference, args


def case_nested():
    """A for loop holding a cond holding a while; regions use values of enclosing blocks."""
    with IR("nested") as ir:
        x, n = ir.param("x", f32), ir.param("n", i32)

        def step(k, c, t):
            def grow():
                (w,) = ir.while_([c], lambda v: [lt_p.bind(v, x)], lambda v: [add_p.bind(mul_p.bind(v, 2.0), 1.0)],
                                 names=["v"])
                return [w]

            (c2,) = ir.cond(lt_p.bind(to_f32(k), 2.0), grow, lambda: [sub_p.bind(c, 1.0)], names=["c"])
            return [c2, named(add_p.bind(t, c2), "t")]

        c, t = ir.for_(n, [np.float32(0.5), np.float32(0)], step, names=["c", "t"])
        fn = ir.finish(c, t)

    def reference(x, n):
        c, t = 0.5, 0.0
        for k in range(int(n)):
            if k < 2:
                while c < x:
                    c = c * 2 + 1
            else:
                c = c - 1
            t = t + c
        return [c, t]

    return fn, reference, [np.float32(20.0), np.int32(5)]


def case_scan():
    with IR("scan") as ir:
        c0, xs = ir.param("c", f32, (2,)), ir.param("xs", f32, (4, 2))
        half = bcast(0.5, (2,))

        def body(c, x):
            c2 = named(add_p.bind(mul_p.bind(c, half), x), "c")
            return [c2, named(mul_p.bind(c2, x), "y")]

        c1, ys = ir.scan([c0], [xs], body, names=["c", "ys"])
        c2, zs = ir.scan([c1], [xs], body, reverse=True, names=["c", "zs"])
        empty = ir.param("e", f32, (0, 2))
        c3, ws = ir.scan([c2], [empty], body, names=["c", "ws"])
        fn = ir.finish(c3, ys, zs, ws)

    def reference(c, xs, e):
        outs = []
        for order in (range(4), range(3, -1, -1)):
            ys = [None] * 4
            for i in order:
                c = c * 0.5 + xs[i]
                ys[i] = c * xs[i]
            outs.append(np.stack(ys))
        return [c, *outs, np.zeros((0, 2))]

    args = [np.array([1.0, -1.0], f32), np.arange(8, dtype=f32).reshape(4, 2) / 3, np.zeros((0, 2), f32)]
    return fn, reference, args


def case_consts():
    mat = np.arange(6, dtype=f32).reshape(2, 3) / 7
    with IR("consts") as ir:
        x = ir.param("x", f32, (2, 3))
        closed_over = Array(mat)
        a = add_p.bind(x, closed_over)
        b = mul_p.bind(a, closed_over)  # the same array again: one const
        m = and_p.bind(lt_p.bind(x, b), np.array([[True, False, True]] * 2))
        fn = ir.finish(b, m, transpose_p.bind(reshape_p.bind(b, new_sizes=(3, 2), dimensions=None), permutation=(1, 0)))

    def reference(x):
        b = (x + mat) * mat
        return [b, (x < b) & np.array([[True, False, True]] * 2), b.reshape(3, 2).T]

    return fn, reference, [np.ones((2, 3), f32)]


def case_multi():
    """Carried values that swap, pass through, or are unused after the loop; inits read after the loop."""
    with IR("multi") as ir:
        a, b, n = ir.param("a", f32), ir.param("b", f32), ir.param("n", i32)

        def body(k, a, b, keep):
            a2 = named(add_p.bind(a, b), "a")
            return [b, a2, keep]  # swap, then pass through

        a1, b1, _ = ir.for_(n, [a, b, a], body, names=["a", "b", "keep"])

        def alias(k, u, v):
            u2 = named(add_p.bind(u, v), "u")
            v2 = named(mul_p.bind(u, 2.0), "v")  # reads u after u2 is defined
            return [u2, v2]

        u, v = ir.for_(n, [a1, b1], alias, names=["u", "v"], index=None)
        flag = named(lt_p.bind(a, 100.0), "go")

        def grow(go, w):  # w*w + 2 >= 2 grows past 100 from any start
            w2 = add_p.bind(mul_p.bind(w, w), 2.0)
            return [lt_p.bind(w2, 100.0), w2]

        go, w = ir.while_([flag, b], lambda go, w: [go], grow, names=["go", "w"])
        fn = ir.finish(u, v, add_p.bind(u, a1), go, w, 7.0)

    def reference(a, b, n):
        go, w = a < 100.0, b
        for _ in range(int(n)):
            a, b = b, a + b
        u, v = a, b
        for _ in range(int(n)):
            u, v = u + v, u * 2
        while go:
            go, w = w * w + 2 < 100, w * w + 2
        return [u, v, u + a, go, w, 7.0]

    return fn, reference, [np.float32(1.0), np.float32(2.0), np.int32(5)]


def case_shapes():
    """Shape primitives: every param kind they have (tuples, nested tuples, negative ints, None, dtypes)."""
    with IR("shapes") as ir:
        x = ir.param("x", f32, (2, 3))
        p = pad_p.bind(x, np.float32(-1), padding_config=((1, -1, 0), (0, 2, 1)))
        r = reshape_p.bind(x, new_sizes=(3, 2), dimensions=(1, 0))
        c = concatenate_p.bind(x, x, dimension=0)
        io = iota_p.bind(dtype=i32, shape=(2, 3), dimension=1)
        t = add_p.bind(to_f32(io), x)
        fn = ir.finish(p, r, c, t, eq_p.bind(x, t), ne_p.bind(x, t), le_p.bind(x, t), gt_p.bind(x, t),
                       or_p.bind(not_p.bind(lt_p.bind(x, t)), eq_p.bind(x, x)))

    def reference(x):
        p = np.full((2, 7), -1.0)
        p[1, 0:5:2] = x[0]
        t = np.arange(3)[None, :] + x
        return [p, x.T.reshape(3, 2), np.concatenate([x, x]), t, x == t, x != t, x <= t, x > t, ~(x < t) | (x == x)]

    return fn, reference, [np.arange(6, dtype=f32).reshape(2, 3) - 2]


CASES = {name[5:]: case for name, case in sorted(globals().items()) if name.startswith("case_")}


def arrays(args) -> list[Array]:
    return [Array(np.asarray(a)) for a in args]


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


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
        i, s = ir.while_([np.int32(0), x1], lambda i, s: [lt_p.bind(i, 3)],
                         lambda i, s: [add_p.bind(i, 1), named(mul_p.bind(s, x), "s")], names=["i", "s"])
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


@pytest.mark.parametrize("text", ["nan:f32", "-inf:f32", "inf:f64", "-0.0:f32", "0.1:f32", "1e+20:f32{weak}",
                                  "3.4028235e+38:f32", "1e-45:f32", "-2147483648:i32", "4294967295:u32",
                                  "True:bool", "0.1:f16", "(1.0-2.5j):c64", "(nan+infj):c128", "7:i8{weak}"])
def test_literals_read_back_exactly(text):
    assert parse_function("func @f() -> () {\n  return\n}\n").results == []
    source = f"func @f() -> {text.split(':')[1].split('{')[0]}[]{'{weak}' if '{weak}' in text else ''} {{\n" \
             f"  return {text}\n}}\n"
    again = parse_function(source)
    (lit,) = again.results
    assert isinstance(lit, Literal) and print_function(again) == source


def test_float_literals_that_need_all_their_digits():
    # The text goes back through float64 to float32; the printer checks that path and, where the shortest
    # text would round twice, prints the exact decimal instead.
    for value in [np.float32(16777216.0), np.nextafter(np.float32(0.1), np.float32(1)), np.float32(1 / 3)]:
        fn = parse_function(f"func @f() -> f32[] {{\n  return 0.0:f32\n}}\n")
        fn.body.results = [Literal(value, TensorType(f32, ()))]
        again = parse_function(print_function(fn))
        assert again.results[0].value.tobytes() == np.float32(value).tobytes()


PARAM_KINDS = dict(s="a 'quoted' \\ string", f=-1.5e-7, nan=float("nan"), inf=float("-inf"), c=complex(1, -2),
                   l=[1, (2,)], n=None, d=np.dtype(np.uint8), t=((1, -2), (), (True, False)), b=True, i=-3)


def test_every_param_kind_round_trips(monkeypatch):
    prim = Primitive("ir_test_params", params=tuple(PARAM_KINDS))
    prim.def_shape(lambda x, **params: x)
    monkeypatch.setitem(PRIMITIVES, prim.name, prim)
    with IR("params") as ir:
        x = ir.param("x", f32)
        fn = ir.finish(prim.bind(x, **PARAM_KINDS))
    text = print_function(fn)
    assert (f"ir_test_params[s={PARAM_KINDS['s']!r}, f=-1.5e-07, nan=nan, inf=-inf, c=complex(1.0, -2.0), "
            "l=[1, (2,)], n=None, d=u8, t=((1, -2), (), (True, False)), b=True, i=-3] %x") in text
    (op,) = parse_function(text).body.ops
    for key, value in PARAM_KINDS.items():
        assert op.params[key] == value or (key == "nan" and np.isnan(op.params[key])), key
    assert print_function(parse_function(text)) == text
    verify(fn)


def test_param_classes_of_the_primitive_modules_round_trip():
    indexing = pytest.importorskip("transpiler.primitives.indexing")
    fft = pytest.importorskip("transpiler.primitives.fft")
    numbers = indexing.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    with IR("gather") as ir:
        x, idx = ir.param("x", f32, (5, 3)), ir.param("idx", i32, (2, 1))
        g = indexing.gather_p.bind(x, idx, dimension_numbers=numbers, slice_sizes=(1, 3),
                                   mode=indexing.GatherScatterMode.CLIP, fill_value=None, indices_are_sorted=False,
                                   unique_indices=False)
        z = fft.fft_p.bind(complex_p.bind(g, g), fft_type=fft.FftType.FFT, fft_lengths=(3,))
        fn = ir.finish(z)
    text = print_function(fn)
    assert ("gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), "
            "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()), slice_sizes=(1, 3), "
            "mode=GatherScatterMode.CLIP") in text
    assert "fft[fft_type=FftType.FFT, fft_lengths=(3,)]" in text
    again = parse_function(text)
    assert print_function(again) == text
    assert again.body.ops[0].params["dimension_numbers"] == numbers
    verify(again)
    conv = pytest.importorskip("transpiler.primitives.convolution")
    spec = conv.ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
    node = ast.parse("ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))", mode="eval")
    assert evaluate_param(node.body, param_classes()) == spec


@pytest.mark.parametrize("text, message", [
    ("func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = add %x, %zz\n  return %y\n}", "line 2, column 23: undefined value %zz"),
    ("func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = frob %x\n  return %y\n}", "line 2, column 15: unknown primitive 'frob'"),
    ("func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = integer_pow[y=__import__('os')] %x\n  return %y\n}",
     "line 2, column 29: parameter 'y': '__import__' is not a parameter class"),
    ("func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = integer_pow[y=os.system] %x\n  return %y\n}",
     "line 2, column 29: parameter 'y': 'os' is not an enum"),
    ("func @f(%x: f33[3]) -> f32[] {\n  return %x\n}", "line 1, column 13: unknown dtype 'f33'"),
    ("func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = neg %x\n}", "line 3, column 1: the block ends without 'return'"),
    ("func @f(%x: u8[]) -> u8[] {\n  %y: u8[] = add %x, 300:u8\n  return %y\n}", "line 2, column 22: 300 does not fit"),
    ("func @f(%x: f32[]) -> f32[] {\n  %x: f32[] = neg %x\n  return %x\n}", "line 2, column 3: value %x is defined twice"),
    ("func @f(%x: f32[]) -> i32[] {\n  return %x\n}", "line 1, column 23: the header declares results (i32[])"),
    ("func @f(%x: f32[]) -> f32[] {\n  %y: f32[] = neg %x\n  yield %y\n}", "line 3, column 3: expected 'return' to end this block, found 'yield'"),
])
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
    assert info.value.errors == ["%a = mystery: unknown primitive 'mystery' (not registered)",
                                 "%b = mul: %ghost is never defined"]
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


# -- the Python emitter -------------------------------------------------------------------------------------------
_UFUNCS = {"add": add_p, "subtract": sub_p, "multiply": mul_p, "true_divide": div_p, "power": pow_p,
           "negative": neg_p, "equal": eq_p, "not_equal": ne_p, "less": lt_p, "less_equal": le_p, "greater": gt_p,
           "greater_equal": ge_p, "bitwise_and": and_p, "bitwise_or": or_p, "bitwise_xor": xor_p, "invert": not_p}


def _same_dtype_ufunc(prim):
    """What a jnp ufunc does on the operands the emitter gives operators: one dtype, or a weak Python scalar."""
    def ufunc(*args):
        like = next(a for a in args if isinstance(a, Array))
        return prim.bind(*(a if isinstance(a, Array) else Array(np.asarray(a, like.dtype), weak_type=not isinstance(
            a, np.generic)) for a in args))
    return ufunc


@pytest.fixture
def run_module(monkeypatch):
    """Executes an emitted module and returns its function. Where srcjax.numpy does not have a ufunc yet (it
    is being written beside this), a stand-in binds the primitive, so these tests check the emitter alone."""
    import runtime.numpy as rnp

    for name, prim in _UFUNCS.items():
        if not hasattr(rnp, name):
            monkeypatch.setattr(rnp, name, _same_dtype_ufunc(prim), raising=False)

    def run(source: str, name: str):
        namespace: dict = {}
        exec(compile(source, f"<emitted {name}>", "exec"), namespace)
        return namespace[name]

    return run


@pytest.mark.parametrize("name", CASES)
def test_emitted_module_agrees_with_eval_function_bit_for_bit(name, run_module):
    fn, _, args = CASES[name]()
    source = emit_module(fn)
    assert source == emit_module(fn)  # deterministic
    compile(source, name, "exec")
    outs = run_module(source, name)(*arrays(args))
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    expected = eval_function(fn, *arrays(args))
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected):
        assert same_bits(got, want), (got, want)


@pytest.mark.parametrize("name", ["control", "nested", "multi"])
@pytest.mark.parametrize("seed", range(3))
def test_emitted_control_flow_agrees_on_other_inputs(name, seed, run_module):
    fn, _, args = CASES[name]()
    rng = np.random.default_rng(seed)
    args = [np.asarray(rng.integers(-1, 6), a.dtype) if np.asarray(a).dtype.kind in "iub"
            else (rng.normal(size=np.shape(a)) * 4).astype(np.asarray(a).dtype) for a in args]
    outs = run_module(emit_module(fn), name)(*arrays(args))
    for got, want in zip(outs, eval_function(fn, *arrays(args))):
        assert same_bits(got, want)


def test_emitted_module_reads_like_hand_written_code():
    fn, _, _ = case_control()
    source = emit_module(fn)
    assert source.startswith("# generated by srcjax from cases.py:control\n")
    assert "def control(x, p, i, n):" in source
    assert "    if p:" in source and "        y = lax.tanh(x)" in source and "        y = -x" in source
    assert "    if i <= 0:" in source and "    elif i == 1:" in source
    assert "    for k in map(jnp.int32, range(n)):" in source
    assert "        s = s + t" in source  # the loop's value stays in its variable: no ``s_1 = s`` copies
    assert "    while j < n:" in source
    assert "# if p:  (cases.py:4)" in source and "# s = s + k  (cases.py:9)" in source


def test_emitted_module_golden():
    with IR("mlp", "examples/mlp.py") as ir:
        w, x = ir.param("w", f32, (3,)), ir.param("x", f32, (3,))
        with ir.at(5, "h = w * x + 1.0"):
            h = named(add_p.bind(mul_p.bind(w, x), bcast(1.0, (3,))), "h")
        with ir.at(6, "t = jnp.tanh(h)"):
            t = named(tanh_p.bind(h), "t")
        with ir.at(7, "y = t / 2"):
            y = named(div_p.bind(t, bcast(np.float32(2), (3,))), "y")
        z = concatenate_p.bind(y, x, dimension=0)
        fn = ir.finish(z, np.array([1.5, 2.0], f32))
    assert emit_module(fn, header_comment="forward") == '''\
# generated by srcjax from examples/mlp.py:mlp (forward)
import base64

import numpy as np

import srcjax.numpy as jnp
from srcjax import lax


def _constant(data, dtype, shape):
    """An array the function closes over, stored as base64 of its bytes."""
    return jnp.asarray(np.frombuffer(base64.b64decode(data), dtype).reshape(shape))


const = _constant("AADAPwAAAEA=", np.float32, (2,))


def mlp(w, x):
    t0 = w * x       # h = w * x + 1.0  (mlp.py:5)
    t1 = lax.broadcast_in_dim(np.float32(1.0), shape=(3,), broadcast_dimensions=())
    h = t0 + t1
    t = lax.tanh(h)  # t = jnp.tanh(h)  (mlp.py:6)
    t2 = lax.broadcast_in_dim(np.float32(2.0), shape=(3,), broadcast_dimensions=())  # y = t / 2  (mlp.py:7)
    y = t / t2
    t3 = lax.concatenate([y, x], dimension=0)
    return t3, const
'''


def test_emitter_binds_primitives_lax_does_not_expose():
    with IR("cast") as ir:
        x = ir.param("x", f32, (2,))
        weak = convert_element_type_p.bind(x, new_dtype=f32, weak_type=True)  # lax has no weak_type keyword
        fn = ir.finish(weak, convert_element_type_p.bind(x, new_dtype=i32, weak_type=False))
    source = emit_module(fn)
    assert "from transpiler.primitives import PRIMITIVES" in source
    assert 'convert_element_type_p = PRIMITIVES["convert_element_type"]' in source
    assert "convert_element_type_p.bind(x, new_dtype=np.float32, weak_type=True)" in source
    assert "lax.convert_element_type(x, new_dtype=np.int32)" in source


def test_lax_functions_the_emitter_calls_take_those_keywords():
    """Every ``LAX_CALLS`` entry names a srcjax.lax function that accepts the primitive's params by keyword,
    with JAX's defaults where the emitter leaves a param out."""
    lax = pytest.importorskip("srcjax.lax")
    problems = []
    for prim_name, call in sorted(LAX_CALLS.items()):
        function = getattr(lax, call.function, None)
        prim = PRIMITIVES.get(prim_name)
        if prim is None:
            continue
        if not callable(function):
            problems.append(f"lax.{call.function} is {function!r}, not a function")
            continue
        signature = inspect.signature(function)
        operands = [object()] if call.operands == "list" else [object()] * _arity(prim_name)
        only_if = {k for k, _ in call.only_if}
        try:
            signature.bind(*operands, **{p: None for p in prim.params if p not in only_if})
        except TypeError as e:
            problems.append(f"lax.{call.function}{signature}: {e}")
        for key, default in call.defaults:
            actual = signature.parameters[key].default if key in signature.parameters else "missing"
            if not (actual == default or (actual is None and default is None)):
                problems.append(f"lax.{call.function}: default {key}={actual!r}, the emitter assumes {default!r}")
    assert not problems, "\n".join(problems)


def _arity(name: str) -> int:
    counts = {"clamp": 3, "pad": 2, "select_n": 3, "dot_general": 2, "conv_general_dilated": 2, "gather": 2,
              "iota": 0, "complex": 2}
    if name in counts:
        return counts[name]
    if name.startswith("scatter"):
        return 3
    return 2 if LAX_CALLS[name].scalars else 1


def test_emitter_refuses_malformed_control_flow():
    with IR("odd") as ir:
        x = ir.param("x", f32)
        with ir.b.region([TensorType(f32, ())], ["a"]) as block:
            block.results = [block.params[0]]
        (r,) = ir._emit(while_p, [x], {}, [x.aval], ["r"], [block])
        fn = ir.finish(r)
    with pytest.raises(ValueError, match="malformed 'while' op"):
        emit_module(fn)


def test_dataclass_params_are_imported_by_the_emitted_module():
    indexing = pytest.importorskip("transpiler.primitives.indexing")
    numbers = indexing.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    with IR("take") as ir:
        x, idx = ir.param("x", f32, (5, 3)), ir.param("idx", i32, (2, 1))
        fn = ir.finish(indexing.gather_p.bind(x, idx, dimension_numbers=numbers, slice_sizes=(1, 3),
                                              mode=indexing.GatherScatterMode.CLIP, fill_value=None,
                                              indices_are_sorted=False, unique_indices=False))
    source = emit_module(fn)
    assert "from transpiler.primitives.indexing import GatherDimensionNumbers, GatherScatterMode" in source
    assert dataclasses.is_dataclass(numbers)
    args = arrays([np.arange(15, dtype=f32).reshape(5, 3), np.array([[4], [9]], np.int32)])
    namespace: dict = {}
    exec(source, namespace)
    assert same_bits(namespace["take"](*args), eval_function(fn, *args)[0])


# -- random programs: where the emitter shares variables, it must still compute the same thing ------------------
def random_function(seed: int) -> Function:
    """Nested conds and loops over f32 scalars, reusing a few names so that values share variables."""
    import random

    rng = random.Random(seed)
    hints = ["a", "b", "s", None]

    with IR(f"random{seed}") as ir:
        def block(visible: list, depth: int, count: int) -> list:
            values = list(visible)
            for _ in range(rng.randint(0, 3)):
                pick = lambda: rng.choice(values)  # noqa: E731
                kind = rng.choice(["arith"] * 3 + (["cond", "for", "while"] if depth < 2 else []))
                names = [rng.choice(hints) for _ in range(rng.randint(1, 2))]
                if kind == "arith":
                    prim = rng.choice([add_p, sub_p, mul_p])
                    out = [named(prim.bind(pick(), rng.choice([pick(), 0.5, np.float32(-1.5)])), names[0])]
                elif kind == "cond":
                    branches = [lambda: block(values, depth + 1, len(names)) for _ in range(2)]
                    out = ir.cond(lt_p.bind(pick(), pick()), *branches, names=names)
                elif kind == "for":
                    out = ir.for_(rng.randint(0, 3), [pick() for _ in names],
                                  lambda k, *carry: block([*values, *carry], depth + 1, len(names)), names=names)
                else:
                    def body(i, *carry):
                        return [add_p.bind(i, 1), *block([*values, *carry], depth + 1, len(names))]

                    out = ir.while_([np.int32(0), *(pick() for _ in names)], lambda i, *carry: [lt_p.bind(i, 2)],
                                    body, names=[None, *names])[1:]
                values += out
            return [rng.choice(values + [np.float32(2.5)]) for _ in range(count)]

        params = [ir.param(name, f32) for name in ("a", "b", "s")]
        return ir.finish(*block(params, 0, 3))


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_emit_and_round_trip(seed, run_module):
    fn = random_function(seed)
    verify(fn)
    text = print_function(fn)
    assert print_function(parse_function(text)) == text
    args = arrays([np.float32(1.25), np.float32(-0.5), np.float32(3.0)])
    outs = run_module(emit_module(fn), fn.name)(*args)
    for got, want in zip(outs, eval_function(fn, *args)):
        assert same_bits(got, want)
