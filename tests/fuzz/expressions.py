"""Random well-typed expressions over ``jnp``: asked for a type, build an expression of exactly that type.

Values stay bounded and smooth enough for float32 and finite differences: transcendental functions only of
bounded arguments (``exp(tanh(x))``), ``log``/``sqrt`` only of positive ones (``x*x + 1``), division only by
``1 + x*x``. Kinks (``abs``, ``maximum``, ``where``) sit where random inputs almost never land.
"""

from __future__ import annotations

import random
from typing import Callable

from tests.fuzz.program import Expr, Ty, dim_value, leaf, shape_text

# one-argument forms; ``{0}`` may appear twice (the shrinker then replaces both together)
UNARY = [
    "jnp.tanh({0})", "jnp.sin({0})", "jnp.cos({0})", "jnp.exp(jnp.tanh({0}))", "jnp.exp(-jnp.square({0}))",
    "jnp.log(jnp.square({0}) + 1.0)", "jnp.log1p(jnp.abs({0}))", "jnp.sqrt(jnp.square({0}) + 0.25)",
    "jnp.abs({0})", "jnp.square({0})", "({0} ** 2)", "(-{0})", "jnp.arctan({0})", "jnp.sinh(jnp.tanh({0}))",
    "jnp.clip({0}, -0.8, 0.8)", "({0} / (1.0 + jnp.abs({0})))", "jnp.maximum({0}, 0.1 * {0})",
    "jnp.expm1(jnp.sin({0}))", "jnp.cosh(jnp.tanh({0}))", "(0.5 * jnp.tanh(0.5 * {0}) + 0.5)", "({0} * 0.5)",
    "(1.5 * {0})", "({0} - 0.25)", "jnp.power(jnp.abs({0}) + 1.0, 1.5)", "jnp.reciprocal(1.0 + jnp.square({0}))",
    "jnp.exp2(jnp.tanh({0}))", "jnp.log2(jnp.square({0}) + 2.0)", "jnp.tan(0.5 * jnp.tanh({0}))",
    "jnp.arcsinh({0})", "jnp.negative({0})", "jnp.sqrt(jnp.abs({0}) + 0.1)", "({0} * {0} * {0} * 0.1)",
]
BINARY = [
    "({0} + {1})", "({0} - {1})", "({0} * {1})", "jnp.maximum({0}, {1})", "jnp.minimum({0}, {1})",
    "({0} / (1.0 + jnp.square({1})))", "jnp.logaddexp({0}, {1})", "jnp.add({0}, {1})", "jnp.multiply({0}, {1})",
    "jnp.subtract({0}, {1})", "jnp.hypot({0}, {1} + 0.5)", "({0} * jnp.tanh({1}))",
]
COMPARE = ["({0} > {1})", "({0} < {1})", "({0} >= {1})", "({0} <= {1})", "jnp.greater({0}, {1})"]
CONSTANTS = ["0.3", "-0.2", "0.0", "0.5", "-0.7", "1.0"]
# (format, axis-taking?) reductions over one axis ({axis} is filled in) or all axes
REDUCE_AXIS = [
    "jnp.sum({0}, axis={axis})", "jnp.mean({0}, axis={axis})", "jnp.max({0}, axis={axis})",
    "jnp.min({0}, axis={axis})", "{0}.sum(axis={axis})", "jnp.var({0}, axis={axis})",
    "jnp.max(jnp.abs({0}), axis={axis})", "jnp.prod(0.5 + jnp.tanh({0}) * 0.25 + 0.5, axis={axis})",
    "jnp.linalg.norm({0} + 0.5, axis={axis})", "{0}.mean(axis={axis})", "jnp.amax({0}, axis={axis})",
]
REDUCE_ALL = ["jnp.sum({0})", "jnp.mean({0})", "jnp.max({0})", "jnp.min({0})", "{0}.sum()", "jnp.var({0})",
              "jnp.linalg.norm({0} + 0.5)", "{0}.max()", "jnp.prod(jnp.tanh({0}) * 0.25 + 1.0)"]
SAME_SHAPE = ["jnp.flip({0}, axis={axis})", "jnp.roll({0}, 1, axis={axis})", "jnp.sort({0}, axis={axis})",
              "jnp.cumsum({0}, axis={axis})"]


def is_base(token: str) -> bool:
    return token.isidentifier() or token.isdigit()


class Scope:
    """The names visible at a point of the generated code, with their types, innermost scope last."""

    def __init__(self) -> None:
        self.frames: list[dict[str, tuple[Ty, bool]]] = [{}]

    def push(self) -> None:
        self.frames.append({})

    def pop(self) -> None:
        self.frames.pop()

    def bind(self, name: str, ty: Ty, assignable: bool = True) -> None:
        self.frames[-1][name] = (ty, assignable)

    def lookup(self, name: str) -> tuple[Ty, bool] | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None

    def names(self) -> dict[str, tuple[Ty, bool]]:
        out: dict[str, tuple[Ty, bool]] = {}
        for frame in self.frames:
            out.update(frame)
        return out

    def of_type(self, ty: Ty) -> list[str]:
        return [n for n, (t, _) in self.names().items() if t == ty]

    def floats(self) -> list[str]:
        return [n for n, (t, _) in self.names().items() if t.kind == "f"]


class ExprGen:
    """Expressions of a requested type, from the names in ``scope`` and the ``helpers`` (name -> (parameter
    types, result type)) that return one array."""

    def __init__(self, rng: random.Random, dims: dict[str, int], scope: Scope,
                 helpers: dict[str, tuple[list[Ty], Ty]], smooth: bool = False):
        """``smooth``: no kinks or jumps in the expressions (for derivatives of derivatives by differences)."""
        self.rng, self.dims, self.scope, self.helpers = rng, dims, scope, helpers
        self.productions: list[tuple[float, Callable[[tuple[str, ...], int], Expr | None]]] = [
            (3.0, self.unary), (4.0, self.binary), (1.0, self.where), (2.0, self.reduce), (1.5, self.product),
            (1.0, self.transpose), (0.8, self.reshape), (0.8, self.concatenate), (0.8, self.stack),
            (1.2, self.index), (0.8, self.same_shape), (0.4, self.dynamic_index), (0.4, self.constant),
            (0.5, self.count), (0.7, self.call_helper), (0.6, self.loop_index), (0.5, self.expand),
        ]
        self.unary_forms, self.binary_forms = UNARY, BINARY
        if smooth:
            kinks = ("abs", "clip", "maximum", "minimum", "hypot")
            self.unary_forms = [f for f in UNARY if not any(k in f for k in kinks)]
            self.binary_forms = [f for f in BINARY if not any(k in f for k in kinks)]
            jumps = (self.where, self.count, self.dynamic_index)
            self.productions = [(w, p) for w, p in self.productions if p not in jumps]

    # -- entry points -----------------------------------------------------------------------------------------
    def float(self, shape: tuple[str, ...], depth: int) -> Expr:
        ty = Ty("f", shape)
        if depth <= 0 or self.rng.random() < 0.25:
            return self.atom(shape)
        weights = [w for w, _ in self.productions]
        for _ in range(8):
            (production,) = self.rng.choices([p for _, p in self.productions], weights)
            expr = production(shape, depth - 1)
            if expr is not None:
                assert expr.ty == ty, (production.__name__, expr.ty, ty)
                return expr
        return self.atom(shape)

    def boolean(self, shape: tuple[str, ...], depth: int) -> Expr:
        ty = Ty("b", shape)
        r = self.rng.random()
        if r < 0.6 or depth <= 0:
            a = self.float(shape, depth - 1)
            b = self.float(self.suffix(shape), depth - 1) if self.rng.random() < 0.5 else \
                leaf(self.rng.choice(CONSTANTS), Ty("f", ()))
            return Expr(self.rng.choice(COMPARE), (a, b), ty)
        if r < 0.8:
            return Expr(self.rng.choice(["({0} & {1})", "({0} | {1})", "jnp.logical_and({0}, {1})",
                                         "jnp.logical_or({0}, {1})"]),
                        (self.boolean(shape, depth - 1), self.boolean(shape, depth - 1)), ty)
        return Expr(self.rng.choice(["(~{0})", "jnp.logical_not({0})"]), (self.boolean(shape, depth - 1),), ty)

    def condition(self, depth: int) -> Expr:
        """A scalar truth value for a Python ``if``/``while`` on traced data."""
        ty = Ty("b", ())
        r = self.rng.random()
        c = leaf(self.rng.choice(CONSTANTS), Ty("f", ()))
        if r < 0.55:
            x = self.float(self.random_shape(), depth)
            form = self.rng.choice(["jnp.sum({0}) > {1}", "jnp.max({0}) < {1}", "jnp.mean({0}) > {1}",
                                    "jnp.min({0}) < {1}", "{0}.sum() < {1}"])
            return Expr(form, (x, c), ty)
        if r < 0.75:
            return Expr("{0} > {1}", (self.float((), depth), c), ty)
        if r < 0.85:
            form = self.rng.choice(["jnp.all({0})", "jnp.any({0})"])
            return Expr(form, (self.boolean(self.random_shape(min_rank=1), depth - 1),), ty)
        if r < 0.95 and depth > 0:
            form = self.rng.choice(["({0}) and ({1})", "({0}) or ({1})"])
            return Expr(form, (self.condition(depth - 1), self.condition(depth - 1)), ty)
        return Expr("not ({0})", (self.condition(depth - 1),), ty)

    # -- shapes ---------------------------------------------------------------------------------------------
    def value(self, token: str) -> int:
        return dim_value(token, self.dims)

    def base_token(self) -> str:
        return self.rng.choice(list(self.dims))

    def token(self) -> str:
        r = self.rng.random()
        a, b = self.base_token(), self.base_token()
        if r < 0.05:
            return self.rng.choice(["1", "2"])
        if r < 0.09 and self.value(a) + self.value(b) <= 8:
            return f"{a}+{b}"
        if r < 0.12 and self.value(a) >= 2:
            return f"{a}-1"
        if r < 0.14 and self.value(a) * self.value(b) <= 8:
            return f"{a}*{b}"
        return a

    def random_shape(self, min_rank: int = 0, max_rank: int = 2) -> tuple[str, ...]:
        """Often the shape of a name in scope (so that expressions combine the program's values), else new."""
        known = [t.shape for t, _ in self.scope.names().values()
                 if t.kind == "f" and min_rank <= len(t.shape) <= max_rank]
        if known and self.rng.random() < 0.5:
            return self.rng.choice(known)
        rank = self.rng.choices(range(min_rank, max_rank + 1), [3, 4, 3, 0.5][min_rank: max_rank + 1])[0]
        return tuple(self.token() for _ in range(rank))

    def suffix(self, shape: tuple[str, ...]) -> tuple[str, ...]:
        """A shape that broadcasts against ``shape`` to ``shape``."""
        return shape[self.rng.randint(0, len(shape)):]

    # -- leaves ---------------------------------------------------------------------------------------------
    def atom(self, shape: tuple[str, ...]) -> Expr:
        ty = Ty("f", shape)
        names = self.scope.of_type(ty)
        if names and self.rng.random() < 0.9:
            return leaf(self.rng.choice(names), ty)
        others = self.scope.floats()
        if not others or self.rng.random() < 0.1:
            constant = self.rng.choice(CONSTANTS)
            return leaf(f"jnp.full({shape_text(shape)}, {constant})" if shape else f"jnp.asarray({constant})", ty)
        related = [(n, form) for n in others for form in [self.related(self.scope.lookup(n)[0].shape, shape)] if form]
        if related and self.rng.random() < 0.8:
            name, form = self.rng.choice(related)
            return Expr(form, (leaf(name, self.scope.lookup(name)[0]),), ty)
        name = self.rng.choice(others)
        other = self.scope.lookup(name)[0]
        source = leaf(name, other)
        reduced = Expr(self.rng.choice(["jnp.mean({0})", "jnp.sum({0})", "jnp.max({0})"]), (source,), Ty("f", ()))
        if not shape:
            return reduced
        return Expr(f"({{0}} * jnp.ones({shape_text(shape)}))", (reduced,), ty)

    def related(self, have: tuple[str, ...], want: tuple[str, ...]) -> str | None:
        """A one-step form that turns a value of shape ``have`` into one of shape ``want``, if there is one."""
        if want and have == want[len(want) - len(have):]:
            return f"jnp.broadcast_to({{0}}, {shape_text(want)})" if have else f"({{0}} * jnp.ones({shape_text(want)}))"
        if have == want + have[len(want):] and len(have) == len(want) + 1:
            return self.rng.choice(["jnp.mean({0}, axis=-1)", "jnp.sum({0}, axis=-1)", "{0}[..., 0]"])
        if have[1:] == want and have:
            return self.rng.choice(["jnp.sum({0}, axis=0)", "{0}[0]", "jnp.max({0}, axis=0)"])
        if len(want) == 2 and have == want[::-1]:
            return "{0}.T"
        return None

    # -- productions: each returns None where it does not apply ----------------------------------------------
    def unary(self, shape, depth):
        return Expr(self.rng.choice(self.unary_forms), (self.float(shape, depth),), Ty("f", shape))

    def binary(self, shape, depth):
        full = self.float(shape, depth)
        r = self.rng.random()
        if r < 0.15:
            other = leaf(self.rng.choice(CONSTANTS), Ty("f", ()))
        elif r < 0.3 and len(shape) == 2:  # a column against a matrix
            col = self.float(shape[:1], depth)
            return Expr(self.rng.choice(["({0} * {1}[:, None])", "({0} + {1}[:, None])"]), (full, col),
                        Ty("f", shape))
        else:
            other = self.float(self.suffix(shape), depth)
        args = (full, other) if self.rng.random() < 0.5 else (other, full)
        return Expr(self.rng.choice(self.binary_forms), args, Ty("f", shape))

    def where(self, shape, depth):
        cond = self.boolean(self.suffix(shape), depth)
        other = self.float(self.suffix(shape), depth)
        return Expr("jnp.where({0}, {1}, {2})", (cond, self.float(shape, depth), other), Ty("f", shape))

    def reduce(self, shape, depth):
        if not shape or self.rng.random() < 0.3:
            if shape:
                return None
            source = self.float(self.random_shape(min_rank=1), depth)
            return Expr(self.rng.choice(REDUCE_ALL), (source,), Ty("f", ()))
        if len(shape) >= 3:
            return None
        axis = self.rng.randint(0, len(shape))
        source = shape[:axis] + (self.token(),) + shape[axis:]
        written = axis - len(source) if self.rng.random() < 0.3 else axis  # negative axes too
        form = self.rng.choice(REDUCE_AXIS).replace("{axis}", str(written))
        return Expr(form, (self.float(source, depth),), Ty("f", shape))

    def product(self, shape, depth):
        k = self.token()
        f = lambda s: self.float(s, depth)  # noqa: E731
        ty = Ty("f", shape)
        if len(shape) == 0:
            form = self.rng.choice(["jnp.dot({0}, {1})", "jnp.vdot({0}, {1})", "jnp.inner({0}, {1})",
                                    "({0} @ {1})", "jnp.sum({0} * {1})"])
            return Expr(form, (f((k,)), f((k,))), ty)
        if len(shape) == 1:
            if self.rng.random() < 0.7:
                form = self.rng.choice(["({0} @ {1})", "jnp.dot({0}, {1})", "jnp.matmul({0}, {1})",
                                        "jnp.einsum('ij,j->i', {0}, {1})"])
                return Expr(form, (f((shape[0], k)), f((k,))), ty)
            return Expr(self.rng.choice(["({0} @ {1})", "jnp.dot({0}, {1})"]), (f((k,)), f((k, shape[0]))), ty)
        if len(shape) == 2:
            a, b = shape
            r = self.rng.random()
            if r < 0.5:
                form = self.rng.choice(["({0} @ {1})", "jnp.dot({0}, {1})", "jnp.einsum('ij,jk->ik', {0}, {1})",
                                        "jnp.tensordot({0}, {1}, axes=1)"])
                return Expr(form, (f((a, k)), f((k, b))), ty)
            if r < 0.75:
                return Expr(self.rng.choice(["jnp.outer({0}, {1})", "({0}[:, None] * {1}[None, :])"]),
                            (f((a,)), f((b,))), ty)
            return Expr("jnp.dot({0}, {1}.T)", (f((a, k)), f((b, k))), ty)
        if len(shape) == 3:
            n, a, b = shape
            form = self.rng.choice(["({0} @ {1})", "jnp.einsum('bij,bjk->bik', {0}, {1})", "jnp.matmul({0}, {1})"])
            return Expr(form, (f((n, a, k)), f((n, k, b))), ty)
        return None

    def transpose(self, shape, depth):
        ty = Ty("f", shape)
        if len(shape) == 2:
            form = self.rng.choice(["{0}.T", "jnp.transpose({0})", "jnp.swapaxes({0}, 0, 1)",
                                    "jnp.moveaxis({0}, 0, 1)", "{0}.transpose()"])
            return Expr(form, (self.float(shape[::-1], depth),), ty)
        if len(shape) == 3:
            perm = list(range(3))
            self.rng.shuffle(perm)
            source = [""] * 3
            for i, p in enumerate(perm):
                source[p] = shape[i]
            return Expr(f"jnp.transpose({{0}}, {tuple(perm)})", (self.float(tuple(source), depth),), ty)
        return None

    def reshape(self, shape, depth):
        ty = Ty("f", shape)
        if len(shape) == 1 and shape[0].count("*") == 1:
            a, b = shape[0].split("*")
            form = self.rng.choice(["jnp.ravel({0})", "{0}.reshape(-1)", "{0}.flatten()",
                                    f"{{0}}.reshape({shape[0]})", f"jnp.reshape({{0}}, ({shape[0]},))"])
            return Expr(form, (self.float((a, b), depth),), ty)
        if len(shape) == 2 and all(is_base(t) for t in shape):
            a, b = shape
            source = (f"{a}*{b}",) if self.rng.random() < 0.5 else (b, a)
            form = self.rng.choice([f"{{0}}.reshape({a}, {b})", f"jnp.reshape({{0}}, ({a}, {b}))",
                                    f"{{0}}.reshape(({a}, -1))"])
            return Expr(form, (self.float(source, depth),), ty)
        return None

    def expand(self, shape, depth):
        ty = Ty("f", shape)
        if len(shape) == 2 and shape[0] == "1":
            return Expr(self.rng.choice(["{0}[None, :]", "jnp.expand_dims({0}, 0)", "{0}[None]"]),
                        (self.float(shape[1:], depth),), ty)
        if len(shape) == 2 and shape[1] == "1":
            return Expr(self.rng.choice(["{0}[:, None]", "jnp.expand_dims({0}, 1)", "{0}[..., None]"]),
                        (self.float(shape[:1], depth),), ty)
        if len(shape) == 1 and self.rng.random() < 0.5:
            return Expr(self.rng.choice(["jnp.squeeze({0}, axis=1)", "{0}[:, 0]"]),
                        (self.float(shape + ("1",), depth),), ty)
        return None

    def concatenate(self, shape, depth):
        ty = Ty("f", shape)
        for axis, token in enumerate(shape):
            if token.count("+") == 1:
                a, b = token.split("+")
                left = self.float(shape[:axis] + (a,) + shape[axis + 1:], depth)
                right = self.float(shape[:axis] + (b,) + shape[axis + 1:], depth)
                forms = [f"jnp.concatenate([{{0}}, {{1}}], axis={axis})"]
                if len(shape) == 1:
                    forms += ["jnp.concatenate([{0}, {1}])", "jnp.hstack([{0}, {1}])", "jnp.append({0}, {1})"]
                if len(shape) == 2 and axis == 0:
                    forms += ["jnp.vstack([{0}, {1}])", "jnp.concatenate(({0}, {1}))"]
                return Expr(self.rng.choice(forms), (left, right), ty)
        return None

    def stack(self, shape, depth):
        ty = Ty("f", shape)
        if shape and shape[0] == "2":
            parts = (self.float(shape[1:], depth), self.float(shape[1:], depth))
            forms = ["jnp.stack([{0}, {1}])", "jnp.array([{0}, {1}])"] if len(shape) == 1 else \
                ["jnp.stack([{0}, {1}])", "jnp.stack(({0}, {1}), axis=0)"]
            return Expr(self.rng.choice(forms), parts, ty)
        if len(shape) == 2 and shape[1] == "2":
            parts = (self.float(shape[:1], depth), self.float(shape[:1], depth))
            return Expr(self.rng.choice(["jnp.stack([{0}, {1}], axis=1)", "jnp.stack([{0}, {1}], axis=-1)",
                                         "jnp.column_stack([{0}, {1}])"]), parts, ty)
        return None

    def index(self, shape, depth):
        ty = Ty("f", shape)
        r = self.rng.random()
        if shape and shape[0].endswith("-1") and is_base(shape[0][:-2]):
            source = (shape[0][:-2],) + shape[1:]
            form = self.rng.choice(["{0}[1:]", "{0}[:-1]", "({0}[1:] - {0}[:-1])"]
                                   + (["jnp.diff({0})"] if len(shape) == 1 else []))
            return Expr(form, (self.float(source, depth),), ty)
        if len(shape) >= 3:
            return None
        t = self.token()
        k = self.rng.randrange(self.value(t))
        if r < 0.5:
            written = k if self.rng.random() < 0.8 else k - self.value(t)  # negative indices too
            return Expr(f"{{0}}[{written}]", (self.float((t,) + shape, depth),), ty)
        if r < 0.8:
            form = self.rng.choice([f"{{0}}[..., {k}]", f"{{0}}[:, {k}]" if len(shape) == 1 else f"{{0}}[..., {k}]"])
            return Expr(form, (self.float(shape + (t,), depth),), ty)
        return Expr("{0}[::-1]", (self.float(shape, depth),), ty) if shape else None

    def same_shape(self, shape, depth):
        if not shape:
            return None
        form = self.rng.choice(SAME_SHAPE).replace("{axis}", str(self.rng.randrange(len(shape))))
        return Expr(form, (self.float(shape, depth),), Ty("f", shape))

    def dynamic_index(self, shape, depth):
        if len(shape) >= 2:
            return None
        t = self.token()
        picker = self.float((t,), depth)
        form = self.rng.choice(["{0}[jnp.argmax({1})]", "{0}[jnp.argmin({1})]",
                                "jnp.take({0}, jnp.argmax({1}), axis=0)"])
        return Expr(form, (self.float((t,) + shape, depth), picker), Ty("f", shape))

    def loop_index(self, shape, depth):
        """Indexing by an enclosing ``for`` loop's index, or the index itself as a number."""
        indices = [(n, t) for n, (t, _) in self.scope.names().items() if t.kind == "i"]
        if not indices:
            return None
        name, ty = self.rng.choice(indices)
        if not shape and self.rng.random() < 0.4:
            return Expr(f"({{0}} * {name})", (self.float((), depth),), Ty("f", ()))
        if len(shape) >= 2:
            return None
        return Expr(f"{{0}}[{name}]", (self.float(ty.shape + shape, depth),), Ty("f", shape))

    def constant(self, shape, depth):
        ty = Ty("f", shape)
        if len(shape) == 1 and is_base(shape[0]):
            form = self.rng.choice([f"(jnp.arange({shape[0]}) * 0.25)", f"jnp.linspace(-1.0, 1.0, {shape[0]})",
                                    f"jnp.ones({shape[0]})", f"jnp.zeros(({shape[0]},))"])
            return Expr(f"({{0}} + {form})", (self.float(shape, depth),), ty)
        if len(shape) == 2 and shape[0] == shape[1] and is_base(shape[0]):
            return Expr(f"({{0}} @ jnp.eye({shape[0]}))", (self.float(shape, depth),), ty)
        return Expr("({0} + jnp.zeros_like({0}) + 0.25)", (self.float(shape, depth),), ty)

    def count(self, shape, depth):
        """A number counted from booleans (an integer-valued term in float arithmetic)."""
        if shape:
            return Expr("jnp.where({0}, 1.0, -1.0)", (self.boolean(shape, depth),), Ty("f", shape))
        form = self.rng.choice(["(jnp.sum({0}) * 0.25)", "(jnp.count_nonzero({0}) * 0.1)"])
        return Expr(form, (self.boolean(self.random_shape(min_rank=1), depth),), Ty("f", ()))

    def call_helper(self, shape, depth):
        fits = [(n, params) for n, (params, result) in self.helpers.items() if result == Ty("f", shape)]
        if not fits:
            return None
        name, params = self.rng.choice(fits)
        args = tuple(self.float(p.shape, depth) for p in params)
        return Expr(f"{name}({', '.join('{%d}' % i for i in range(len(args)))})", args, Ty("f", shape))
