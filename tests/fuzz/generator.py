"""Random well-typed srcjax programs, deterministic per seed: statements, control flow, helpers, pytrees.

``generate(seed)`` returns a ``Program``: dimension constants, zero to two helper functions and ``main``. The
statements cover assignment (new names and rebinding), augmented assignment, ``x.at[i].set/add/multiply``
(through the module's ``at_update``), NumPy-style ``y[i] = v`` (which only compiled srcjax runs), ``if``/``elif``/
``else`` on traced and static conditions, ``for`` over ranges and over an array's rows, ``while`` loops that
end (a value halved until small, a counter, ``while True`` with ``break``), ``break``/``continue``, early
``return``, tuple-returning helpers, nested ``def``s and ``lambda``s that close over locals, ``lax.fori_loop``
and ``lax.cond`` (through the module's ``fori`` and ``cond``), a list built by ``append`` then stacked, and
tuple/dict arguments and results. A loop's updates of outer names pass through a squashing function, so values
stay bounded.
"""

from __future__ import annotations

import random

import numpy as np

from tests.fuzz.expressions import ExprGen, Scope
from tests.fuzz.program import Expr, Function, Program, Stmt, Ty, leaf

SQUASH = ["jnp.tanh({0})", "jnp.sin({0})", "({0} / (1.0 + jnp.abs({0})))", "(0.5 * jnp.tanh({0}))"]


class FunctionGen:
    """The body of one function; ``result`` is its result: a list of types, returned as one array (one type),
    a tuple, or a dict (``result_keys``)."""

    def __init__(self, program_gen: ProgramGen, params: dict[str, Ty], result: list[Ty],
                 result_keys: list[str] | None, max_depth: int):
        self.p = program_gen
        self.rng = program_gen.rng
        self.scope = Scope()
        for name, ty in params.items():
            self.scope.bind(name, ty, assignable="[" not in name)
        self.exprs = ExprGen(self.rng, program_gen.dims, self.scope, program_gen.single_helpers(), program_gen.smooth)
        self.result, self.result_keys = result, result_keys
        self.max_depth = max_depth
        self.frozen: set[str] = set()  # names a while loop's termination depends on

    def fresh(self, prefix: str) -> str:
        self.p.names += 1
        return f"{prefix}{self.p.names}"

    def expr(self, shape: tuple[str, ...], depth: int | None = None) -> Expr:
        return self.exprs.float(shape, self.rng.randint(1, 3) if depth is None else depth)

    # -- blocks ----------------------------------------------------------------------------------------------
    def block(self, n: int, depth: int, loop: bool) -> list[Stmt]:
        """``n`` statements at nesting ``depth``; ``loop``: inside a loop (break/continue allowed, and rebinding
        an outer name squashes the value)."""
        out: list[Stmt] = []
        for _ in range(n):
            out += self.statement(depth, loop)
        return out

    def statement(self, depth: int, loop: bool) -> list[Stmt]:
        choices = [(5.0, self.assign_new), (3.0, self.reassign), (1.0, self.aug_assign), (1.0, self.at_update),
                   (0.4, self.item_set), (0.6, self.unpack_helper), (0.3, self.stacked_list)]
        if depth == 0 and not loop:
            choices += [(0.4, self.local_function), (0.4, self.lax_loop), (0.4, self.lax_cond)]
        if depth < self.max_depth:
            choices += [(2.0, self.if_stmt), (1.2, self.for_range), (0.6, self.for_rows), (1.0, self.while_loop)]
        if loop:
            choices += [(0.7, self.break_or_continue)]
        choices += [(0.5, self.early_return)]
        weights = [w for w, _ in choices]
        for _ in range(10):
            (make,) = self.rng.choices([c for _, c in choices], weights)
            made = make(depth, loop)
            if made is not None:
                return made
        return self.assign_new(depth, loop)

    def scoped(self, make):
        """Names bound inside a nested block are local to it (they may be unbound after a traced ``if``)."""
        self.scope.push()
        try:
            return make()
        finally:
            self.scope.pop()

    def assignable(self, pred=lambda ty: True) -> list[str]:
        return [n for n, (t, a) in self.scope.names().items()
                if a and t.kind == "f" and n not in self.frozen and pred(t)]

    # -- simple statements -------------------------------------------------------------------------------------
    def assign_new(self, depth, loop):
        shape = self.new_shape()
        name = self.fresh("v")
        stmt = Stmt(f"{name} = {{0}}", [self.expr(shape)])
        self.scope.bind(name, Ty("f", shape))
        return [stmt]

    def new_shape(self) -> tuple[str, ...]:
        shapes = [t.shape for t in (v[0] for v in self.scope.names().values()) if t.kind == "f"]
        if shapes and self.rng.random() < 0.6:
            return self.rng.choice(shapes)
        return self.exprs.random_shape()

    def reassign(self, depth, loop):
        names = self.assignable()
        if not names:
            return None
        name = self.rng.choice(names)
        ty = self.scope.lookup(name)[0]
        value = self.expr(ty.shape)
        if loop and self.rng.random() < 0.9:  # bounded however often the loop runs
            value = Expr(self.rng.choice(SQUASH), (value,), ty)
        return [Stmt(f"{name} = {{0}}", [value])]

    def aug_assign(self, depth, loop):
        names = self.assignable()
        if not names:
            return None
        name = self.rng.choice(names)
        ty = self.scope.lookup(name)[0]
        value = self.exprs.float(self.exprs.suffix(ty.shape), 2)
        if loop:
            value = Expr("(0.5 * jnp.tanh({0}))", (value,), value.ty)
        op = self.rng.choice(["+=", "-=", "*="])
        if op == "*=":
            value = Expr("(0.5 + 0.25 * jnp.tanh({0}))", (value,), value.ty)
        # on a copy first: NumPy's ``+=`` writes into the array, which another name may view (``v = x[0]``)
        return [Stmt(f"{name} = {name} * 1.0\n{name} {op} {{0}}", [value])]

    def at_update(self, depth, loop):
        names = self.assignable(lambda t: len(t.shape) >= 1)
        if not names:
            return None
        name = self.rng.choice(names)
        ty = self.scope.lookup(name)[0]
        index = self.index_for(ty.shape[0])
        how = self.rng.choice(["set", "add", "multiply"])
        value = self.exprs.float(self.exprs.suffix(ty.shape[1:]), 2)
        if how == "multiply":
            value = Expr("(0.5 + 0.25 * jnp.tanh({0}))", (value,), value.ty)
        elif loop:
            value = Expr("jnp.tanh({0})", (value,), value.ty)
        return [Stmt(f'{name} = at_update({name}, {index}, {{0}}, "{how}")', [value])]

    def index_for(self, token: str) -> str:
        """An index into an axis of length ``token``: an enclosing loop's index over it, or a constant."""
        loops = [n for n, (t, _) in self.scope.names().items() if t.kind == "i" and t.shape == (token,)]
        if loops and self.rng.random() < 0.6:
            return self.rng.choice(loops)
        size = self.exprs.value(token)
        return str(self.rng.randrange(size) if self.rng.random() < 0.8 else -1)

    def item_set(self, depth, loop):
        """NumPy-style ``y[i] = v`` on a copy (so that NumPy, which mutates in place, computes the same)."""
        names = self.assignable(lambda t: len(t.shape) >= 1)
        if not names:
            return None
        name = self.rng.choice(names)
        ty = self.scope.lookup(name)[0]
        index = self.index_for(ty.shape[0])
        value = self.exprs.float(self.exprs.suffix(ty.shape[1:]), 2)
        if loop:
            value = Expr("jnp.tanh({0})", (value,), value.ty)
        op = self.rng.choice(["=", "+=", "="])
        return [Stmt(f"{name} = {name} * 1.0\n{name}[{index}] {op} {{0}}", [value])]

    def unpack_helper(self, depth, loop):
        pairs = [(n, params, result) for n, (params, result) in self.p.helpers.items() if isinstance(result, list)]
        if not pairs:
            return None
        name, params, result = self.rng.choice(pairs)
        args = [self.exprs.float(t.shape, 2) for t in params]
        targets = [self.fresh("u") for _ in result]
        for t, ty in zip(targets, result):
            self.scope.bind(t, ty)
        call = f"{name}({', '.join('{%d}' % i for i in range(len(args)))})"
        return [Stmt(f"{', '.join(targets)} = {call}", args)]

    def local_function(self, depth, loop):
        """A nested ``def`` (or a ``lambda``) that reads names of the enclosing function (a closure), called at
        once on two arguments of its parameter's type."""
        names = self.scope.floats()
        if not names:
            return None
        param = self.scope.lookup(self.rng.choice(names))[0]
        function, u, name = self.fresh("f"), self.fresh("p"), self.fresh("v")
        self.scope.push()
        self.scope.bind(u, param, assignable=False)
        body = self.exprs.float(param.shape, 2)
        self.scope.pop()
        call = Expr(f"({function}({{0}}) + {function}({{1}}))", (self.expr(param.shape), self.expr(param.shape)), param)
        self.scope.bind(name, param)
        if self.rng.random() < 0.3:
            definition = Stmt(f"{function} = lambda {u}: {{0}}", [body])
        else:
            definition = Stmt(f"def {function}({u}):", blocks=[("", [Stmt("return {0}", [body])])])
        return [definition, Stmt(f"{name} = {{0}}", [call])]

    def lax_loop(self, depth, loop):
        """``v = fori(n, body, v)``: ``lax.fori_loop`` with a body that closes over the function's names."""
        names = self.assignable()
        if not names:
            return None
        name = self.rng.choice(names)
        ty = self.scope.lookup(name)[0]
        body, index, carry = self.fresh("body"), self.fresh("i"), self.fresh("h")
        self.scope.push()
        self.scope.bind(carry, ty, assignable=False)
        self.scope.bind(index, Ty("n", ()), assignable=False)
        update = Expr(self.rng.choice(SQUASH), (self.exprs.float(ty.shape, 2),), ty)
        if self.rng.random() < 0.5:
            update = Expr(f"({{0}} + 0.1 * {index})", (update,), ty)
        self.scope.pop()
        definition = Stmt(f"def {body}({index}, {carry}):", blocks=[("", [Stmt("return {0}", [update])])])
        return [definition, Stmt(f"{name} = fori({self.rng.randint(1, 4)}, {body}, {name})")]

    def lax_cond(self, depth, loop):
        """``v = cond(pred, t, f, v)``: ``lax.cond`` with two branch functions over one operand."""
        names = self.assignable()
        if not names:
            return None
        name = self.rng.choice(names)
        ty = self.scope.lookup(name)[0]
        branches, operand = [self.fresh("branch"), self.fresh("branch")], self.fresh("h")
        definitions = []
        for branch in branches:
            self.scope.push()
            self.scope.bind(operand, ty, assignable=False)
            value = self.exprs.float(ty.shape, 2)
            self.scope.pop()
            definitions.append(Stmt(f"def {branch}({operand}):", blocks=[("", [Stmt("return {0}", [value])])]))
        call = Stmt(f"{name} = cond({{0}}, {branches[0]}, {branches[1]}, {name})", [self.exprs.condition(1)])
        return [*definitions, call]

    def stacked_list(self, depth, loop):
        """``acc = []; for i in range(n): acc.append(...)``, then ``jnp.stack(acc)``: an unrolled loop."""
        token = self.exprs.base_token()
        shape = self.exprs.random_shape(max_rank=1)
        acc, index, name = self.fresh("acc"), self.fresh("i"), self.fresh("s")

        def body():
            self.scope.bind(index, Ty("i", (token,)), assignable=False)
            return Stmt(f"{acc}.append({{0}})", [self.expr(shape)])

        append = self.scoped(body)
        loop_stmt = Stmt(f"{acc} = []\nfor {index} in range({token}):", blocks=[("", [append])])
        self.scope.bind(name, Ty("f", (token,) + shape))
        return [loop_stmt, Stmt(f"{name} = jnp.stack({acc})")]

    # -- control flow ------------------------------------------------------------------------------------------
    def body(self, depth: int, loop: bool, n: int | None = None) -> list[Stmt]:
        return self.scoped(lambda: self.block(self.rng.randint(1, 3) if n is None else n, depth + 1, loop))

    def if_stmt(self, depth, loop):
        if self.rng.random() < 0.15:  # a static condition: one branch is taken at trace time
            token = self.exprs.base_token()
            cond = leaf(f"{token} > {self.rng.randint(1, 3)}", Ty("b", ()))
        else:
            cond = self.exprs.condition(self.rng.randint(1, 2))
        blocks = [("", self.body(depth, loop))]
        r = self.rng.random()
        if r < 0.2:
            inner = Stmt("if {0}:", [self.exprs.condition(1)], [("", self.body(depth, loop))])
            if self.rng.random() < 0.5:
                inner.blocks.append(("else:", self.body(depth, loop)))
            blocks.append(("else:", [inner]))  # rendered as else: if (an elif)
        elif r < 0.7:
            blocks.append(("else:", self.body(depth, loop)))
        return [Stmt("if {0}:", [cond], blocks)]

    def for_range(self, depth, loop):
        index = self.fresh("i")
        if self.rng.random() < 0.6:
            token = self.exprs.base_token()
            header = f"for {index} in range({token}):"
            ty = Ty("i", (token,))
        else:
            n = self.rng.randint(2, 7)
            start = self.rng.choice([0, 0, 1])
            header = f"for {index} in range({start}, {n}):"
            ty = Ty("i", (str(n),)) if start == 0 else Ty("n", ())

        def make():
            self.scope.bind(index, ty, assignable=False)
            return self.block(self.rng.randint(1, 3), depth + 1, True)

        return [Stmt(header, blocks=[("", self.scoped(make))])]

    def for_rows(self, depth, loop):
        sources = [n for n, (t, _) in self.scope.names().items() if t.kind == "f" and 1 <= len(t.shape) <= 2]
        if not sources:
            return None
        source = self.rng.choice(sources)
        ty = self.scope.lookup(source)[0]
        row = self.fresh("r")
        enumerate_ = self.rng.random() < 0.3
        index = self.fresh("i")
        header = f"for {index}, {row} in enumerate({source}):" if enumerate_ else f"for {row} in {source}:"

        def make():
            self.scope.bind(row, Ty("f", ty.shape[1:]), assignable=False)
            if enumerate_:
                self.scope.bind(index, Ty("i", ty.shape[:1]), assignable=False)
            return self.block(self.rng.randint(1, 3), depth + 1, True)

        return [Stmt(header, blocks=[("", self.scoped(make))])]

    def while_loop(self, depth, loop):
        kind = self.rng.choice(["halve", "counter", "true"])
        if kind == "halve":  # ends: the value halves each time round, its size falls below a positive bound
            names = self.assignable()
            if not names:
                return None
            name = self.rng.choice(names)
            bound = self.rng.choice(["0.5", "1.0", "0.25"])
            halve = Stmt(f"{name} = {name} * 0.5", protected=True)
            self.frozen.add(name)
            try:
                rest = self.body(depth, True, self.rng.randint(0, 2))
            finally:
                self.frozen.discard(name)
            measure = self.rng.choice([f"jnp.max(jnp.abs({name}))", f"jnp.sum(jnp.abs({name}))",
                                       f"jnp.linalg.norm({name})"])
            return [Stmt(f"while {measure} > {bound}:", blocks=[("", [halve, *rest])])]
        counter = self.fresh("k")
        limit = self.rng.randint(1, 4)
        step = Stmt(f"{counter} = {counter} + 1", protected=True)
        rest = self.body(depth, True)
        if kind == "counter":
            cond = self.exprs.condition(1)
            return [Stmt(f"{counter} = 0\nwhile {counter} < {limit} and ({{0}}):", [cond],
                         blocks=[("", [step, *rest])])]
        # the exit test comes right after the increment: a ``continue`` in the rest cannot skip it
        stop = Stmt(f"if {counter} > {limit} or ({{0}}):", [self.exprs.condition(1)], [("", [Stmt("break")])],
                    protected=True)
        return [Stmt(f"{counter} = 0\nwhile True:", blocks=[("", [step, stop, *rest])])]

    def break_or_continue(self, depth, loop):
        word = self.rng.choice(["break", "continue"])
        return [Stmt("if {0}:", [self.exprs.condition(1)], [("", [Stmt(word)])])]

    def early_return(self, depth, loop):
        return [Stmt("if {0}:", [self.exprs.condition(1)], [("", [self.return_stmt()])])]

    def return_stmt(self) -> Stmt:
        values = [self.exprs.float(t.shape, self.rng.randint(1, 3)) for t in self.result]
        slots = ", ".join("{%d}" % i for i in range(len(values)))
        if self.result_keys is not None:
            items = ", ".join(f'"{k}": {{{i}}}' for i, k in enumerate(self.result_keys))
            return Stmt(f"return {{{{{items}}}}}", values)
        if len(values) == 1:
            return Stmt("return {0}", values)
        return Stmt(f"return ({slots})", values)


class ProgramGen:
    """``single``: ``main`` takes one small array and returns one (a base for nested transformations), built
    from smooth operations only."""

    def __init__(self, seed: int, single: bool = False):
        self.rng = random.Random(seed)
        self.single = self.smooth = single
        names = ["A", "B", "C"][: self.rng.randint(1, 3)]
        self.dims = {n: self.rng.choice([1, 2, 2, 3] if single else [1, 2, 2, 3, 3, 4, 5]) for n in names}
        if all(v == 1 for v in self.dims.values()):
            self.dims[names[0]] = 3
        self.helpers: dict[str, tuple[list[Ty], Ty | list[Ty]]] = {}
        self.names = 0

    def single_helpers(self) -> dict[str, tuple[list[Ty], Ty]]:
        return {n: (p, r) for n, (p, r) in self.helpers.items() if isinstance(r, Ty)}

    def helper(self, index: int) -> Function:
        probe = ExprGen(self.rng, self.dims, Scope(), {}, self.smooth)
        params = {f"a{j}": Ty("f", probe.random_shape()) for j in range(self.rng.randint(1, 2))}
        pair = self.rng.random() < 0.35
        result = [Ty("f", probe.random_shape()) for _ in range(2 if pair else 1)]
        gen = FunctionGen(self, params, result, None, max_depth=1)
        body = gen.block(self.rng.randint(1, 3), 0, False)
        body.append(gen.return_stmt())
        name = f"helper{index}"
        self.helpers[name] = (list(params.values()), result if pair else result[0])
        return Function(name, list(params), body)

    def main(self) -> tuple[Function, list]:
        if self.single:
            return self.single_main()
        probe = ExprGen(self.rng, self.dims, Scope(), {})
        params: dict[str, Ty] = {}
        specs, names, unpack = [], [], []
        for j in range(self.rng.randint(1, 3)):
            r = self.rng.random()
            name = "xyz"[j]
            names.append(name)
            if r < 0.15:  # a tuple argument
                shapes = [probe.random_shape() for _ in range(2)]
                specs.append(shapes)
                if self.rng.random() < 0.5:
                    parts = [f"{name}{k}" for k in range(2)]
                    unpack.append(Stmt(f"{', '.join(parts)} = {name}"))
                    params.update({p: Ty("f", s) for p, s in zip(parts, shapes)})
                else:
                    params.update({f"{name}[{k}]": Ty("f", s) for k, s in enumerate(shapes)})
            elif r < 0.3:  # a dict argument
                shapes = {"w": probe.random_shape(), "b": probe.random_shape()}
                specs.append(shapes)
                params.update({f'{name}["{k}"]': Ty("f", s) for k, s in shapes.items()})
            else:
                shape = probe.random_shape(max_rank=3 if self.rng.random() < 0.1 else 2)
                specs.append(shape)
                params[name] = Ty("f", shape)
        n_results = self.rng.choice([1, 1, 1, 2, 3])
        result = [Ty("f", probe.random_shape()) for _ in range(n_results)]
        keys = ["out", "aux", "extra"][:n_results] if n_results > 1 and self.rng.random() < 0.3 else None
        gen = FunctionGen(self, params, result, keys, max_depth=2)
        body = unpack + gen.block(self.rng.randint(2, 6), 0, False)
        body.append(gen.return_stmt())
        return Function("main", names, body), specs


    def single_main(self) -> tuple[Function, list]:
        probe = ExprGen(self.rng, self.dims, Scope(), {}, True)
        shape, result = self.small_shape(probe), self.small_shape(probe)
        gen = FunctionGen(self, {"x": Ty("f", shape)}, [Ty("f", result)], None, max_depth=1)
        body = gen.block(self.rng.randint(1, 4), 0, False)
        body.append(gen.return_stmt())
        return Function("main", ["x"], body), [shape]

    def small_shape(self, probe: ExprGen) -> tuple[str, ...]:
        for _ in range(20):
            shape = probe.random_shape(max_rank=2)
            if int(np.prod([probe.value(t) for t in shape])) <= 3:
                return shape
        return ()


def generate(seed: int, single: bool = False) -> Program:
    gen = ProgramGen(seed, single)
    functions = [gen.helper(i) for i in range(gen.rng.choice([0, 0, 1, 1, 2]))]
    main, specs = gen.main()
    return Program(gen.dims, functions + [main], specs)
