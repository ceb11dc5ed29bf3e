"""Emits a function of the IR as a Python module that computes it with srcjax, readable as hand-written code.

Each op becomes one statement: a Python operator where it means exactly the primitive (operands of one
dtype, e.g. ``h + b``, ``x / y`` for floats), a ``lax.<name>(...)`` call where lax's function binds the
primitive with the same operands and params (``LAX_CALLS``, JAX's signatures), else
``<name>_p.bind(...)`` on the registered primitive. Control flow becomes Python ``if``/``else``,
``while``, ``for k in range(n)`` and a ``for`` loop that stacks a scan's outputs. Names come from the
source (versioned ``x_1``); a loop's carried value keeps one variable through the loop, and values are
assigned straight into the variable that carries them where that is safe, so there are no ``a = b``
chains. A comment names the source line of each op that has one. Constants are embedded as base64 and
decoded once at import. The module, run eagerly, binds the same primitives as ``interpret.eval_function``
in the same order, so the two agree bit for bit.
"""

from __future__ import annotations

import base64
import dataclasses
import keyword
import os
from typing import Any

import numpy as np

from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.parser import param_classes
from srcjax.transpiler.primitives.core import PRIMITIVES
from srcjax.transpiler.printer import control_form, float_text, format_param, ordered_params, sanitize


# -- how each primitive is written -------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LaxCall:
    """``lax.<function>(operands..., param=value...)`` binds the primitive with exactly these params.

    ``operands``: ``"args"`` passes one argument per operand, ``"list"`` passes them as one list.
    ``defaults``: JAX's default of a param; a param equal to it is left out of the call.
    ``only_if``: param values for which the lax function is the primitive (left out of the call); other
    values bind the primitive directly. ``scalars``: weak literals may be passed as Python scalars (lax
    converts them to the other operand's dtype).
    """

    function: str
    operands: str = "args"
    defaults: tuple[tuple[str, Any], ...] = ()
    only_if: tuple[tuple[str, Any], ...] = ()
    scalars: bool = False


_UNARY = (
    "abs acos acosh asin asinh atan atanh cbrt ceil clz conj cos cosh digamma erf erf_inv erfc exp exp2 expm1 "
    "floor imag is_finite lgamma log log1p logistic neg population_count real rsqrt sign sin sinh sqrt tan tanh"
)
_BINARY = (
    "add atan2 complex div eq ge gt le lt max min mul ne nextafter pow rem shift_left shift_right_arithmetic "
    "shift_right_logical sub"
)
_DOT_DEFAULTS = (("precision", None), ("preferred_element_type", None))
LAX_CALLS: dict[str, LaxCall] = {
    **{name: LaxCall(name) for name in _UNARY.split()},
    **{name: LaxCall(name, scalars=True) for name in _BINARY.split()},
    "and": LaxCall("bitwise_and", scalars=True),
    "or": LaxCall("bitwise_or", scalars=True),
    "xor": LaxCall("bitwise_xor", scalars=True),
    "not": LaxCall("bitwise_not"),
    "select_n": LaxCall("select_n"),
    "clamp": LaxCall("clamp"),
    "integer_pow": LaxCall("integer_pow"),
    "round": LaxCall("round", defaults=(("rounding_method", 0),)),
    "convert_element_type": LaxCall("convert_element_type", only_if=(("weak_type", False),)),
    "bitcast_convert_type": LaxCall("bitcast_convert_type"),
    "broadcast_in_dim": LaxCall("broadcast_in_dim"),
    "reshape": LaxCall("reshape", defaults=(("dimensions", None),)),
    "transpose": LaxCall("transpose"),
    "squeeze": LaxCall("squeeze"),
    "expand_dims": LaxCall("expand_dims"),
    "rev": LaxCall("rev"),
    "pad": LaxCall("pad"),
    "slice": LaxCall("slice", defaults=(("strides", None),)),
    "concatenate": LaxCall("concatenate", operands="list"),
    "iota": LaxCall("broadcasted_iota"),
    **{f"reduce_{m}": LaxCall(f"reduce_{m}") for m in ("sum", "max", "min", "prod", "and", "or", "xor")},
    **{
        name: LaxCall(name, defaults=(("axis", 0), ("reverse", False)))
        for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
    },
    "dot_general": LaxCall("dot_general", defaults=_DOT_DEFAULTS),
    "conv_general_dilated": LaxCall(
        "conv_general_dilated", defaults=(("feature_group_count", 1), ("batch_group_count", 1), *_DOT_DEFAULTS)
    ),
    "fft": LaxCall("fft"),
    "gather": LaxCall("gather", defaults=(("indices_are_sorted", False), ("unique_indices", False))),
    **{
        name: LaxCall(name, defaults=(("indices_are_sorted", False), ("unique_indices", False)))
        for name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")
    },
    "sort": LaxCall("sort", operands="list"),
    "top_k": LaxCall("top_k"),
}

# Python operators that mean exactly the primitive on operands of one dtype (srcjax.numpy binds it), for
# the dtype kinds listed: ``/`` is true division only for inexact types, ``<`` is not defined on complex.
OPERATORS: dict[str, tuple[str, str]] = {
    "add": ("{} + {}", "iufc"),
    "sub": ("{} - {}", "iufc"),
    "mul": ("{} * {}", "iufc"),
    "div": ("{} / {}", "fc"),
    "pow": ("{} ** {}", "f"),
    "neg": ("-{}", "ifc"),
    "eq": ("{} == {}", "biufc"),
    "ne": ("{} != {}", "biufc"),
    "lt": ("{} < {}", "biuf"),
    "le": ("{} <= {}", "biuf"),
    "gt": ("{} > {}", "biuf"),
    "ge": ("{} >= {}", "biuf"),
    "and": ("{} & {}", "biu"),
    "or": ("{} | {}", "biu"),
    "xor": ("{} ^ {}", "biu"),
    "not": ("~{}", "biu"),
}

# Names the generated code itself uses (modules, and the builtins it calls): values named so get a version.
_RESERVED = {"np", "jnp", "lax", "base64", "PRIMITIVES", "range", "reversed", "map", "complex", "_constant"}


# -- variables: which values share one Python variable -----------------------------------------------------
class _Variables:
    """Union-find over values: members of a class are one Python variable (a loop's carried value, and
    values assigned straight into it)."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.members: dict[int, list[Value]] = {}

    def add(self, v: Value) -> None:
        if id(v) not in self.parent:
            self.parent[id(v)] = id(v)
            self.members[id(v)] = [v]

    def find(self, v: Value) -> int:
        self.add(v)
        key = id(v)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, a: Value, b: Value) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            self.members[ra] += self.members.pop(rb)

    def same(self, a: Value, b: Value) -> bool:
        return not isinstance(a, Literal) and not isinstance(b, Literal) and self.find(a) == self.find(b)

    def hints(self, v: Value) -> set[str]:
        return {h for h in (sanitize(m.name) for m in self.members[self.find(v)]) if h}

    def may_share(self, a: Value, b: Value) -> bool:
        """One variable keeps the source's names only where they agree (``s = s + x``); ``acc = s`` stays."""
        return len(self.hints(a) | self.hints(b)) <= 1


def _uses(op: Op) -> set[int]:
    """Every value an op reads, its regions included."""
    return {id(v) for v in op.operands} | _region_uses(op)


def _region_uses(op: Op) -> set[int]:
    used: set[int] = set()
    for region in op.regions:
        used |= {id(v) for v in region.results}
        for inner in region.ops:
            used |= _uses(inner)
    return used


def _read_while_running(op: Op, form: str) -> set[int]:
    """What a control op reads after it may have started writing its variables: its regions' uses, and the
    operands read once the loop runs (a ``for``'s trip count, a scan's xs). Carried inits are read by one
    parallel assignment before the loop, a cond's predicate before its branch."""
    late = {"for": op.operands[:1], "scan": op.operands[op.params.get("num_carry", 0) :]}.get(form, [])
    return _region_uses(op) | {id(v) for v in late}


def _defined_inside(op: Op) -> set[int]:
    """The op's results and every value defined in its regions."""
    inside = {id(r) for r in op.results}
    for region in op.regions:
        inside |= {id(p) for p in region.params}
        for inner in region.ops:
            inside |= _defined_inside(inner)
    return inside


def _carried_slots(op: Op, form: str) -> list[tuple[Value, Value, list[Value], Value]]:
    """A loop's carried values: (init operand, result, the region params that alias it, the body's yield)."""
    if form == "while":
        cond, body = op.regions
        return [
            (x, r, [c, b], y) for x, r, c, b, y in zip(op.operands, op.results, cond.params, body.params, body.results)
        ]
    (body,) = op.regions
    if form == "for":
        return [(x, r, [p], y) for x, r, p, y in zip(op.operands[1:], op.results, body.params[1:], body.results)]
    n = op.params["num_carry"]
    return [(x, r, [p], y) for x, r, p, y in zip(op.operands[:n], op.results[:n], body.params[:n], body.results[:n])]


class _Planner:
    """Decides which values share a variable. Coalescing is done only where it is provably safe."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.vars = _Variables()
        self.plan_block(fn.body, is_function=True)

    def plan_block(self, block: Block, is_function: bool = False) -> None:
        # later[i]: values read by ops[i:] or yielded by the block
        later: list[set[int]] = [set() for _ in range(len(block.ops) + 1)]
        later[-1] = {id(v) for v in block.results}
        for i in range(len(block.ops) - 1, -1, -1):
            later[i] = later[i + 1] | _uses(block.ops[i])
        local = {id(p) for p in self.fn.params} if is_function else set()
        for i, op in enumerate(block.ops):
            for region in op.regions:
                self.plan_block(region)
            form = control_form(op)
            if form in ("while", "for", "scan"):
                body = op.regions[-1]
                for init, result, params, yielded in _carried_slots(op, form):
                    for p in params:
                        self.vars.union(result, p)
                    self.coalesce_yield(body, params[-1], yielded)
                    if (
                        not isinstance(init, Literal)
                        and id(init) in local
                        and id(init) not in later[i + 1]
                        and id(init) not in _region_uses(op)
                        and sum(x is init for x in op.operands) == 1
                        and self.vars.may_share(result, init)
                    ):
                        self.vars.union(result, init)  # the loop carries it in its own variable
            elif form in ("cond", "switch"):
                for branch in op.regions:
                    for result, yielded in zip(op.results, branch.results):
                        self.coalesce_yield(branch, result, yielded)
            local |= {id(r) for r in op.results}

    def coalesce_yield(self, block: Block, target: Value, yielded: Value) -> None:
        """Let the op that defines ``yielded`` in ``block`` assign it straight into ``target``'s variable."""
        if isinstance(yielded, Literal) or self.vars.same(target, yielded) or not self.vars.may_share(target, yielded):
            return
        if sum(v is yielded for v in block.results) != 1:
            return
        index = next((i for i, op in enumerate(block.ops) if any(r is yielded for r in op.results)), None)
        if index is None:
            return
        op = block.ops[index]
        inside = _defined_inside(op)
        if any(id(m) not in inside for m in self.vars.members[self.vars.find(yielded)]):
            return  # its variable also holds values from elsewhere
        # The target's variable must not be read once the op starts writing: a plain op reads its operands
        # before it assigns (``s = s + x`` is fine), a control op may write while it still reads.
        still_read = {id(v) for v in block.results if v is not yielded}
        for later_op in block.ops[index + 1 :]:
            still_read |= _uses(later_op)
        form = control_form(op)
        if form is not None:
            still_read |= _read_while_running(op, form)
        target_members = {id(m) for m in self.vars.members[self.vars.find(target)]}
        if target_members & still_read:
            return
        self.vars.union(target, yielded)


# -- the emitter -----------------------------------------------------------------------------------------------
def _identifier(name: str | None) -> str | None:
    text = sanitize(name)
    if text is not None and (keyword.iskeyword(text) or text in ("True", "False", "None")):
        text += "_"
    return text


class _Emitter:
    def __init__(self, fn: Function):
        self.fn = fn
        self.sections = fn.sections
        self.vars = _Planner(fn).vars
        self.names: dict[int, str] = {}  # class root -> Python name
        self.used_names = set(_RESERVED) | {f"{name}_p" for name in PRIMITIVES} | set(param_classes())
        self.function_name = self.fresh(fn.name) or "f"
        self.used: set[int] = set()  # values read anywhere (the rest of a multi-result op is ``_``)
        self._collect_uses(fn.body)
        self.modules: set[str] = set()  # np, jnp, lax, base64
        self.binds: set[str] = set()
        self.classes: dict[str, str] = {}  # class name -> module
        self.lines: list[tuple[int, str, Any]] = []  # (depth, code, source location)
        self._last_loc: tuple[str, int] | None = None

    def _collect_uses(self, block: Block) -> None:
        self.used |= {id(v) for v in block.results}
        for op in block.ops:
            self.used |= {id(v) for v in op.operands}
            for region in op.regions:
                self._collect_uses(region)

    # -- names -------------------------------------------------------------------------------------------------
    def fresh(self, hint: str | None) -> str | None:
        base = _identifier(hint)
        if base is None:
            return None
        name, version = base, 0
        while name in self.used_names:
            version += 1
            name = f"{base}_{version}"
        self.used_names.add(name)
        return name

    def var(self, v: Value, fallback: str | None = None) -> str:
        root = self.vars.find(v)
        if root not in self.names:
            hints = [m.name for m in self.vars.members[root]] + [fallback]  # members agree on their name
            hint = next((h for h in hints if _identifier(h)), None)
            name = self.fresh(hint)
            if name is None:
                number = 0
                while f"t{number}" in self.used_names:
                    number += 1
                name = f"t{number}"
                self.used_names.add(name)
            self.names[root] = name
        return self.names[root]

    # -- operands -----------------------------------------------------------------------------------------------
    def scalar(self, lit: Literal) -> tuple[str, str]:
        """A literal as (NumPy type name, argument text): ``("float32", "2.0")``."""
        dtype, value = lit.aval.dtype, lit.value[()]
        if dtype.kind == "b":
            return "bool_", "True" if value else "False"
        if dtype.kind == "c":
            part = np.finfo(dtype).dtype
            re, im = self.float_source(value.real, part), self.float_source(value.imag, part)
            return dtype.name, f"complex({re}, {im})"
        return dtype.name, str(int(value)) if dtype.kind in "iu" else self.float_source(value, dtype)

    def literal(self, lit: Literal, python: bool = False) -> str:
        """A literal as a NumPy scalar of its dtype (``np.float32(2.0)``; bools as ``True``); with ``python``,
        a weak one as a Python scalar that converts to exactly its value (``2.0``)."""
        type_name, text = self.scalar(lit)
        if type_name == "bool_" or (python and lit.aval.weak_type and lit.aval.dtype.kind in "iuf"):
            return text
        self.modules.add("np")
        return f"np.{type_name}({text})"

    def float_source(self, value: Any, dtype: Any) -> str:
        text = float_text(value, dtype)
        if text in ("nan", "inf", "-inf"):
            self.modules.add("np")
            return text.replace("nan", "np.nan").replace("inf", "np.inf")
        return text

    def arg(self, v: Value, python: bool = False) -> str:
        return self.literal(v, python) if isinstance(v, Literal) else self.var(v)

    def value(self, v: Value) -> str:
        """``v`` as a value to assign to a variable: literals become arrays (``jnp.float32(2.0)``)."""
        if not isinstance(v, Literal):
            return self.var(v)
        self.modules.add("jnp")
        type_name, text = self.scalar(v)
        return f"jnp.{type_name}({text})"

    def param(self, value: Any) -> str:
        """A param value as Python source (dtypes as ``np.float32``; param classes are imported)."""
        return format_param(value, self.dtype, lambda x: self.float_source(x, np.float64), self.import_class)

    def dtype(self, dtype: np.dtype) -> str:
        self.modules.add("np")
        return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"

    def import_class(self, cls: type) -> None:
        self.classes[cls.__name__] = cls.__module__

    # -- statements ---------------------------------------------------------------------------------------------
    def line(self, depth: int, code: str, op: Op | None = None) -> None:
        loc = None
        if op is not None and op.loc is not None and (op.loc.file, op.loc.line) != self._last_loc:
            loc = op.loc
            self._last_loc = (op.loc.file, op.loc.line)
        self.lines.append((depth, code, loc))

    def assign(self, depth: int, pairs: list[tuple[Value, Value]], op: Op | None = None) -> None:
        """``target = source`` for each pair whose variables differ, as one parallel assignment."""
        pairs = [(t, s) for t, s in pairs if not self.vars.same(t, s)]
        if not pairs:
            return
        targets = ", ".join(self.var(t) for t, _ in pairs)
        sources = ", ".join(self.value(s) for _, s in pairs)
        self.line(depth, f"{targets} = {sources}", op)

    def block(self, block: Block, depth: int) -> None:
        for op in block.ops:
            self.op(op, depth)

    def op(self, op: Op, depth: int) -> None:
        label = self.sections.get(id(op))
        if label is not None:
            self.lines.append((depth, f"# {label}", None))
        form = control_form(op)
        if form is None:
            self.plain(op, depth)
        elif form == "generic":
            raise ValueError(f"cannot emit a malformed '{op.name}' op (run the verifier)")
        else:
            getattr(self, f"_{form}")(op, depth)

    def targets(self, op: Op) -> str:
        names = [self.var(r) if id(r) in self.used or not op.prim.multiple_results else "_" for r in op.results]
        if op.prim.multiple_results and len(names) == 1:
            return f"({names[0]},)"
        return ", ".join(names)

    def plain(self, op: Op, depth: int) -> None:
        expression = self.expression(op)
        self.line(depth, f"{self.targets(op)} = {expression}" if op.results else expression, op)

    def expression(self, op: Op) -> str:
        operator = OPERATORS.get(op.name)
        operands = op.operands
        if operator and self.operator_fits(op, operator[1]):
            texts = [self.arg(v, python=True) for v in operands]
            if op.name == "pow" and texts[0].startswith("-"):
                texts[0] = f"({texts[0]})"
            return operator[0].format(*texts)
        call = LAX_CALLS.get(op.name)
        if call is not None and all(op.params.get(k) == v for k, v in call.only_if):
            self.modules.add("lax")
            defaults = dict(call.defaults)
            skip = {k for k, _ in call.only_if}
            args = [self.arg(v, python=call.scalars) for v in operands]
            if call.operands == "list":
                args = ["[" + ", ".join(args) + "]"]
            args += [
                f"{k}={self.param(v)}"
                for k, v in ordered_params(op)
                if k not in skip and not (k in defaults and _equal(v, defaults[k]))
            ]
            return f"lax.{call.function}({', '.join(args)})"
        self.binds.add(op.name)
        args = [self.arg(v) for v in operands] + [f"{k}={self.param(v)}" for k, v in ordered_params(op)]
        return f"{op.name}_p.bind({', '.join(args)})"

    @staticmethod
    def operator_fits(op: Op, kinds: str) -> bool:
        operands = op.operands
        if op.params or not operands or any(v.aval.dtype != operands[0].aval.dtype for v in operands):
            return False
        if operands[0].aval.dtype.kind not in kinds or all(isinstance(v, Literal) for v in operands):
            return False
        first = operands[0]  # a NumPy scalar on the left would compute with NumPy, not srcjax
        return not (isinstance(first, Literal) and first.aval.dtype.kind != "b" and not first.aval.weak_type)

    # -- control flow ---------------------------------------------------------------------------------------------
    def _cond(self, op: Op, depth: int) -> None:
        if len(op.regions) != 2:
            raise ValueError(f"a cond on a bool has 2 branches, this one has {len(op.regions)} (run the verifier)")
        self.line(depth, f"if {self.arg(op.operands[0])}:", op)
        self.branch(op, op.regions[0], depth + 1)
        self.line(depth, "else:")
        self.branch(op, op.regions[1], depth + 1)

    def _switch(self, op: Op, depth: int) -> None:
        index, last = self.arg(op.operands[0]), len(op.regions) - 1
        if last == 0:  # the index is clamped to the one branch there is
            self.branch(op, op.regions[0], depth)
            return
        for i, branch in enumerate(op.regions):  # branch clamp(index, 0, last)
            head = f"if {index} <= 0:" if i == 0 else f"elif {index} == {i}:" if i < last else "else:"
            self.line(depth, head, op if i == 0 else None)
            self.branch(op, branch, depth + 1)

    def branch(self, op: Op, branch: Block, depth: int) -> None:
        start = len(self.lines)
        self.block(branch, depth)
        self.assign(depth, list(zip(op.results, branch.results)))
        if len(self.lines) == start:
            self.line(depth, "pass")

    def _while(self, op: Op, depth: int) -> None:
        cond, body = op.regions
        self.assign(depth, [(r, x) for r, x in zip(op.results, op.operands)], op)
        (c,) = cond.results
        single = cond.ops[0] if len(cond.ops) == 1 else None
        if not cond.ops:
            self.line(depth, f"while {self.arg(c)}:", op)
        elif (
            single is not None and control_form(single) is None and len(single.results) == 1 and single.results[0] is c
        ):
            self.line(depth, f"while {self.expression(single)}:", op)
        else:
            self.line(depth, "while True:", op)
            self.block(cond, depth + 1)
            self.line(depth + 1, f"if not {self.arg(c)}:")
            self.line(depth + 2, "break")
        start = len(self.lines)
        self.block(body, depth + 1)
        self.assign(depth + 1, list(zip(body.params, body.results)))
        if len(self.lines) == start:
            self.line(depth + 1, "pass")

    def _for(self, op: Op, depth: int) -> None:
        (body,) = op.regions
        trip, *init = op.operands
        self.assign(depth, [(r, x) for r, x in zip(op.results, init)], op)
        index = body.params[0]
        count = str(int(trip.value)) if isinstance(trip, Literal) else self.var(trip)
        if id(index) in self.used:
            self.modules.add("jnp")
            self.line(depth, f"for {self.var(index)} in map(jnp.int32, range({count})):", op)
        else:
            self.line(depth, f"for _ in range({count}):", op)
        start = len(self.lines)
        self.block(body, depth + 1)
        self.assign(depth + 1, list(zip(body.params[1:], body.results)))
        if len(self.lines) == start:
            self.line(depth + 1, "pass")

    def _scan(self, op: Op, depth: int) -> None:
        (body,) = op.regions
        n, length, reverse = op.params["num_carry"], op.params["length"], op.params.get("reverse", False)
        self.assign(depth, [(r, x) for r, x in zip(op.results[:n], op.operands[:n])], op)
        outputs = op.results[n:]
        self.modules.add("jnp")
        if length == 0:  # the body never runs: the outputs are empty
            for r in outputs:
                self.line(depth, f"{self.var(r)} = jnp.zeros({r.aval.shape}, {self.param(r.aval.dtype)})", op)
            return
        for r in outputs:
            self.line(depth, f"{self.var(r)} = []", op)
        index = self.fresh("i")
        steps = f"reversed(range({length}))" if reverse else f"range({length})"
        self.line(depth, f"for {index} in {steps}:", op)
        for p, xs in zip(body.params[n:], op.operands[n:]):
            if id(p) in self.used:
                self.line(depth + 1, f"{self.var(p)} = {self.arg(xs)}[{index}]")
        start = len(self.lines)
        self.block(body, depth + 1)
        self.assign(depth + 1, list(zip(body.params[:n], body.results[:n])))
        for r, y in zip(outputs, body.results[n:]):
            self.line(depth + 1, f"{self.var(r)}.append({self.value(y)})")
        if len(self.lines) == start:
            self.line(depth + 1, "pass")
        for r in outputs:
            self.line(depth, f"{self.var(r)} = jnp.stack({self.var(r)}{'[::-1]' if reverse else ''})")

    # -- the function and the module -----------------------------------------------------------------------------
    def function(self) -> list[str]:
        fn = self.fn
        for value, _ in fn.consts:
            self.var(value, fallback="const")
        params = [self.var(p) for p in fn.params]
        self.block(fn.body, 1)
        results = [self.value(r) for r in fn.results]
        if results:
            self.line(1, "return " + ", ".join(results))
        elif not self.lines:
            self.line(1, "pass")
        return [f"def {self.function_name}({', '.join(params)}):", *self.render()]

    def render(self) -> list[str]:
        """The body lines, source comments aligned in one column (lines too long for it are left out of it)."""
        codes = ["    " * depth + code for depth, code, _ in self.lines]
        commented = [len(c) for c, (_, _, loc) in zip(codes, self.lines) if loc is not None and len(c) <= 60]
        column = max(commented, default=0) + 2
        out = []
        for code, (_, _, loc) in zip(codes, self.lines):
            if loc is None:
                out.append(code)
                continue
            where = f"({os.path.basename(loc.file)}:{loc.line})"
            text = f"{loc.text.strip()}  {where}" if loc.text.strip() else where
            out.append(f"{code}{' ' * max(column - len(code), 2)}# {text}")
        return out

    def constants(self) -> list[str]:
        lines = []
        for value, data in self.fn.consts:
            data = np.ascontiguousarray(np.asarray(data, value.aval.dtype))
            encoded = base64.b64encode(data.tobytes()).decode("ascii")
            tail = f"{self.param(value.aval.dtype)}, {value.aval.shape}"
            if len(encoded) <= 80:
                lines.append(f'{self.var(value)} = _constant("{encoded}", {tail})')
                continue
            lines.append(f"{self.var(value)} = _constant(")
            lines += [f'    "{encoded[i : i + 88]}"' for i in range(0, len(encoded), 88)]
            lines[-1] += ","
            lines += [f"    {tail},", ")"]
        return lines

    def module(self, header_comment: str | None) -> str:
        body = self.function()
        constants = self.constants()
        if constants:
            self.modules |= {"base64", "np", "jnp"}
        out = []
        source = self.fn.source
        if source is not None:
            note = f" ({header_comment})" if header_comment else ""
            out.append(f"# generated by srcjax from {_shown_path(source.file)}:{source.function or self.fn.name}{note}")
        elif header_comment:
            out.append(f"# {header_comment}")
        if "base64" in self.modules:
            out += ["import base64", ""]
        if "np" in self.modules:
            out += ["import numpy as np", ""]
        first_party = []
        if "jnp" in self.modules:
            first_party.append("import srcjax.numpy as jnp")
        if "lax" in self.modules:
            first_party.append("from srcjax import lax")
        if self.binds:
            first_party.append("from srcjax.transpiler.primitives import PRIMITIVES")
        for module in sorted(set(self.classes.values())):
            names = sorted(n for n, m in self.classes.items() if m == module)
            first_party.append(f"from {module} import {', '.join(names)}")
        out += first_party
        if self.binds:
            out += [""] + [f'{name}_p = PRIMITIVES["{name}"]' for name in sorted(self.binds)]
        if constants:
            out += [
                "",
                "",
                "def _constant(data, dtype, shape):",
                '    """An array the function closes over, stored as base64 of its bytes."""',
                "    return jnp.asarray(np.frombuffer(base64.b64decode(data), dtype).reshape(shape))",
                "",
                "",
                *constants,
            ]
        while out and out[-1] == "":
            out.pop()
        if out:
            out += ["", ""]
        return "\n".join(out + body) + "\n"


def _equal(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def _shown_path(path: str) -> str:
    """A source path as the header shows it: relative to the working directory when inside it, so generated
    code is the same on every checkout."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return os.path.basename(path)
    return relative if not relative.startswith("..") else os.path.basename(path)


def emit_module(fn: Function, *, header_comment: str | None = None) -> str:
    """A self-contained module defining ``def <fn.name>(...)`` that computes ``fn`` with srcjax."""
    return _Emitter(fn).module(header_comment)


def emit_function_source(fn: Function) -> str:
    """Just the ``def`` (it refers to ``lax``, ``jnp``, ``np``, bound primitives and constants by name)."""
    return "\n".join(_Emitter(fn).function()) + "\n"
