"""Functions of the IR built by hand for the IR tools' tests, each with a NumPy reference and arguments.

A small DSL over the ``Builder`` binds primitives directly and builds control-flow ops with
``builder.region()``. The cases cover arithmetic, literals of every kind, constants, nested control flow,
scans (reversed and empty), carried values that swap or are read after their loop, and shape params.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Callable

import numpy as np

import srcjax.runtime  # noqa: F401 - installs the eager interpreter
from srcjax.runtime.array import Array
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.ir import Function, Op, SourceLoc, Value
from srcjax.transpiler.primitives import core
from srcjax.transpiler.primitives.control import cond_p, for_p, scan_p, while_p
from srcjax.transpiler.primitives.elementwise import (
    abs_p,
    add_p,
    and_p,
    complex_p,
    convert_element_type_p,
    div_p,
    eq_p,
    exp_p,
    ge_p,
    gt_p,
    integer_pow_p,
    le_p,
    lt_p,
    max_p,
    min_p,
    mul_p,
    ne_p,
    neg_p,
    not_p,
    or_p,
    pow_p,
    select_n_p,
    sin_p,
    sub_p,
    tanh_p,
    xor_p,
)
from srcjax.transpiler.primitives.shape import broadcast_in_dim_p, concatenate_p, iota_p, pad_p, reshape_p, transpose_p
from srcjax.transpiler.types import TensorType

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
        ys = [y.aval.update(shape=(length, *y.shape)) for y in region.results[len(init) :]]
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
            add_p.bind(x, np.float32(np.nan)),
            max_p.bind(x, -np.inf),
            min_p.bind(x, np.float32(np.inf)),
            mul_p.bind(x, np.float32(-0.0)),
            add_p.bind(x, 0.1),
            mul_p.bind(x, np.float32(1e20)),
            add_p.bind(x, np.float32(3.4028235e38)),
            add_p.bind(x, np.float32(1.4e-45)),
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
            return [
                x + np.float32(np.nan),
                max(x, np.float32(-np.inf)),
                min(x, np.float32(np.inf)),
                x * np.float32(-0.0),
                x + np.float32(0.1),
                x * np.float32(1e20),
                x + np.float32(3.4028235e38),
                x + np.float32(1.4e-45),
                np.int32(int(x) - 7),
                np.int32(int(x)) * np.int32(-2147483648),
                np.uint32(int(x)) ^ np.uint32(4294967295),
                np.bool_(x < 1.0),
                np.float16(x) + np.float16(0.1),
                c + np.complex64(1 - 2.5j),
            ]

    return fn, reference, [np.float32(3.0)]


def case_control():
    with IR("control") as ir:
        x, p, i, n = ir.param("x", f32, (3,)), ir.param("p", np.bool_), ir.param("i", i32), ir.param("n", i32)
        with ir.at(4, "if p:"):
            (y,) = ir.cond(p, lambda: [tanh_p.bind(x)], lambda: [neg_p.bind(x)], names=["y"])
        (z,) = ir.cond(i, lambda: [mul_p.bind(y, bcast(2.0, (3,)))], lambda: [y], lambda: [sin_p.bind(y)], names=["z"])

        def accumulate(k, s):
            with ir.at(9, "s = s + k"):
                return [named(add_p.bind(s, bcast(to_f32(k), (3,))), "s")]

        (s,) = ir.for_(n, [z], accumulate, names=["s"])
        j, acc = ir.while_(
            [np.int32(0), s],
            lambda j, acc: [lt_p.bind(j, n)],
            lambda j, acc: [add_p.bind(j, 1), mul_p.bind(acc, bcast(0.5, (3,)))],
            names=["j", "acc"],
        )
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
                # two ops in the condition: the emitter writes ``while True:`` ... ``break``
                (w,) = ir.while_(
                    [c],
                    lambda v: [lt_p.bind(add_p.bind(v, 1.0), x)],
                    lambda v: [add_p.bind(mul_p.bind(v, 2.0), 1.0)],
                    names=["v"],
                )
                return [w]

            (c2,) = ir.cond(lt_p.bind(to_f32(k), 2.0), grow, lambda: [sub_p.bind(c, 1.0)], names=["c"])
            return [c2, named(add_p.bind(t, c2), "t")]

        c, t = ir.for_(n, [np.float32(0.5), np.float32(0)], step, names=["c", "t"])
        fn = ir.finish(c, t)

    def reference(x, n):
        c, t = 0.5, 0.0
        for k in range(int(n)):
            if k < 2:
                while c + 1 < x:
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
        fn = ir.finish(
            p,
            r,
            c,
            t,
            eq_p.bind(x, t),
            ne_p.bind(x, t),
            le_p.bind(x, t),
            gt_p.bind(x, t),
            or_p.bind(not_p.bind(lt_p.bind(x, t)), eq_p.bind(x, x)),
        )

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
