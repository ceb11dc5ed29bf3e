"""Python control flow on symbolic values, lowered to structured IR ops.

- ``if`` on a symbolic condition runs both branches, each in a region with its own copy of the locals;
  names whose values differ become the ``cond`` op's results (numbers and arrays are unified to one
  type; anything else that differs, or arrays whose shapes differ, is an error naming both lines).
- ``while`` on a symbolic condition and ``for`` over a long ``range`` become ``while``/``for`` ops whose
  carried values are the loop's changing locals. The body is traced once with the entry types; if a
  carried value comes out with another dtype (``s = 0`` then ``s = s + x``) or a static value changes,
  the types are joined and the body traced again, so the IR does not grow with the trip count.
- ``for`` over other iterables, or a body that changes Python containers, is unrolled.
- ``return``/``break``/``continue`` under a symbolic condition set flags; what follows runs under a
  guard, and loops stop when ``$brk`` or ``$ret`` is set.
"""

from __future__ import annotations

import types
from typing import Any, Callable, Sequence

import libcst as cst
import numpy as np

from srcjax.transpiler.frontend import values
from srcjax.transpiler.frontend.errors import TranspileError
from srcjax.transpiler.frontend.frame import (
    BRK, CONT, FLAGS, MUTATORS, RET, RETVAL, Assignment, Exit, Frame, Undefined, flatten_statements, is_symbolic,
)
from srcjax.transpiler.ir import ConcretizationError, Op, Value
from srcjax.transpiler.primitives.control import cond_p, for_p, while_p
from srcjax.transpiler.primitives.indexing import dynamic_slice_p
from srcjax.transpiler.primitives.shape import reshape_p
from srcjax.transpiler.trees import tree_flatten, tree_unflatten
from srcjax.transpiler.types import TensorType

_PY_NUMBERS = (bool, int, float, complex)  # Python's own number types (NumPy's scalars are arrays' kin)
UNROLL_FALLBACK_LIMIT = 256  # a static-range loop whose body needs the index as a Python int is unrolled
MAX_RETRACES = 4
_MISSING = object()
_NUMBERS = (bool, int, float, complex, np.number, np.bool_)


# -- helpers ---------------------------------------------------------------------------------------------------
def _aval(frame: Frame, x: Any) -> TensorType:
    return values.aval(x)


def _is_array_like(x: Any) -> bool:
    return isinstance(x, (Value, np.ndarray, *_NUMBERS)) or isinstance(getattr(x, "aval", None), TensorType)


def _static_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b) or _is_array_like(a) and not isinstance(a, _NUMBERS):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable values are simply different
        return False


def to_predicate(frame: Frame, value: Any, node: cst.CSTNode) -> Any:
    """A symbolic condition as a bool scalar (``x != 0`` for numbers): an array of one element is its element, as
    NumPy's truth of it; arrays of other sizes are an error."""
    aval = _aval(frame, value)
    if aval.shape != ():
        if int(np.prod(aval.shape)) != 1:
            raise frame.error(node, f"the truth value of an array of shape {aval.shape} is ambiguous",
                              note="reduce it to one value with .any() or .all(), or use jnp.where elementwise")
        value = reshape_p.bind(value, new_sizes=(), dimensions=None)
    return value if aval.dtype == np.bool_ else values.as_bool(value)


def _join_types(frame: Frame, name: str, leaves: Sequence[Any], where: Sequence[str], node: cst.CSTNode,
                sites: Sequence[Any] = ()) -> tuple[np.dtype, bool, tuple[int, ...]]:
    avals = [_aval(frame, v) for v in leaves]
    shapes = {a.shape for a in avals}
    if len(shapes) > 1:
        detail = " and ".join(f"{a} {w}" for a, w in zip(avals, where))
        raise _paths_error(frame, name, "a value's shape", [str(a) for a in avals], where, sites, node,
                           f"{_named(name)} is {detail}")
    dtype, weak = values.result_type(*leaves)
    return dtype, weak, avals[0].shape


def _named(name: str) -> str:
    """A local as messages name it (the value a ``return`` gives is kept as a local of its own, and so is a
    conditional expression's)."""
    if name.startswith(_IFEXP):
        return "the conditional expression's value"
    return "the returned value" if name == RETVAL else f"'{name}'"


# -- shape errors that point at the assignments involved (the line to change first, then notes) ----------------
def _paths_error(frame: Frame, name: str, subject: str, shown: Sequence[str], where: Sequence[str],
                 sites: Sequence[Any], node: cst.CSTNode, detail: str) -> TranspileError:
    """The two paths of a branch give ``name`` a different shape, structure or static value (``subject``; how
    the value shows on each path: ``shown``): the error points at the assignment of the last path that assigns
    it itself, with notes at the other path's assignment and at the branch. (Without such an assignment: at
    the branch, with ``detail``.)"""
    before = frame.env.get("@" + name)  # (the locals before the branch)
    own = [k for k, site in enumerate(sites) if isinstance(site, Assignment) and site is not before]
    if len(shown) != 2 or len(sites) != 2 or not own:
        return frame.error(node, f"{subject} differs between the paths of control flow on a symbolic value",
                           note=detail)
    k = own[-1]
    j = 1 - k
    other = where[j].split(" (line ", 1)[0]
    notes = [sites[j].note(f"{_named(name)} is {shown[j]} here")] if isinstance(sites[j], Assignment) else []
    is_if = where[0].startswith("in the then-branch")
    notes.append(frame.note(node, "the branch is on a traced value" if is_if else "the paths split here, on a "
                                                                                  "traced value"))
    return TranspileError(f"{_named(name)} is {shown[k]} here but {shown[j]} {other}; {subject} cannot differ between "
                          "the paths of control flow on a traced value", sites[k].loc, length=sites[k].length,
                          notes=notes)


def _shown(frame: Frame, value: Any) -> str:
    """A value as a structure error shows it: a container's kind and size, an array's type."""
    if isinstance(value, (tuple, list, dict)) or not _is_array_like(value):
        return _describe(value)
    return str(_aval(frame, value))


def _loop_shape_error(frame: Frame, name: str, before: TensorType, after: TensorType, before_site: Any,
                      stmt: cst.CSTNode) -> TranspileError:
    """An iteration of a loop on a traced value changes ``name``'s shape: the error points at the assignment in
    the loop, with notes at the loop and at the assignment before it."""
    site = frame.env.get("@" + name)
    if not isinstance(site, Assignment) or site is before_site:
        return frame.error(stmt, "a value's shape changes inside a loop on a symbolic value",
                           note=f"{_named(name)} is {before} before the loop and {after} after an iteration "
                                f"(line {site if site is not None else '?'})")
    notes = [frame.note(stmt, "the loop is on a traced value")]
    if isinstance(before_site, Assignment):
        notes.append(before_site.note(f"{_named(name)} is {before} here, before the loop"))
    return TranspileError(f"{_named(name)} is {after} here after an iteration but {before} before the loop; a value's "
                          "shape cannot change inside a loop on a traced value", site.loc, length=site.length,
                          notes=notes)


def _convert(frame: Frame, x: Any, dtype: np.dtype, weak: bool) -> Any:
    return values.convert(x, dtype, weak)


def _record_exit(frame: Frame, exit_: Exit) -> None:
    if exit_.kind == "return":
        frame.env[RET], frame.env[RETVAL] = True, exit_.value
        if exit_.site is not None:
            frame.env["@" + RETVAL] = exit_.site
    elif exit_.kind == "break":
        frame.env[BRK] = True
    else:
        frame.env[CONT] = True


def _containers(env: dict[str, Any]) -> dict[str, tuple]:
    """The Python containers the locals hold, by what changing one changes (identity and items)."""
    def items(v: Any) -> tuple:
        if isinstance(v, dict):
            return tuple((k, id(x)) for k, x in v.items())
        return tuple(sorted(map(id, v))) if isinstance(v, set) else tuple(map(id, v))

    # (not the interpreter's own entries: a value returned from inside a loop may be a dict, which the loop carries)
    return {k: (id(v), items(v)) for k, v in env.items() if isinstance(v, (list, dict, set)) and not k.startswith("$")}


# -- Python objects made before a region of control flow on traced values ----------------------------------------
_OUTER_DEPTH, _OUTER_LIMIT = 3, 10_000  # how deep, and how many objects, ``outer_objects`` looks
_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), type, types.ModuleType, types.FunctionType,
              types.BuiltinFunctionType, types.MethodType, range, slice, np.generic, np.dtype)


def outer_objects(env: dict[str, Any]) -> set[int]:
    """The ids of the mutable Python objects the locals reach a few levels deep (lists, dicts, sets, NumPy arrays,
    objects with attributes): what code read inside an ``if`` on a traced value, or inside a compiled loop, must
    not change. Both branches of such an ``if``, and a loop's body once, run while the function is read, so a
    change to one of these would happen whatever the data, and once however many trips the loop makes."""
    seen: set[int] = set()
    todo = [(v, 0) for k, v in env.items() if not k.startswith(("$", "@"))]
    looked = 0
    while todo and looked < _OUTER_LIMIT:
        obj, depth = todo.pop()
        looked += 1
        if isinstance(obj, _IMMUTABLE) or is_symbolic(obj) or hasattr(obj, "aval") or id(obj) in seen:
            continue
        if isinstance(obj, tuple):
            children = list(obj)
        elif isinstance(obj, (list, set, frozenset)):
            children = list(obj)
        elif isinstance(obj, dict):
            children = list(obj.values())
        elif isinstance(obj, np.ndarray) or hasattr(obj, "__dict__"):
            children = [] if isinstance(obj, np.ndarray) else list(getattr(obj, "__dict__", {}).values())
        else:
            continue
        if not isinstance(obj, (tuple, frozenset)):
            seen.add(id(obj))
        if depth < _OUTER_DEPTH:
            todo.extend((c, depth + 1) for c in children)
    return seen


class _OuterObjects:
    """``with _OuterObjects(frame):`` around a region: writes to objects made before it are refused inside. The
    objects are looked for at the first write the region tries (``ids``), not for every region read: the locals
    they are reached from are the region's start's (``frame.env`` then, which the region's code does not change:
    it runs on copies)."""

    def __init__(self, frame: Frame):
        self.stack = frame.trace.context.outer_objects
        self.env = frame.env
        self._ids: set[int] | None = None

    @property
    def ids(self) -> set[int]:
        if self._ids is None:
            self._ids = outer_objects(self.env)
        return self._ids

    def __enter__(self) -> None:
        self.stack.append(self.ids)

    def __exit__(self, *exc: Any) -> None:
        self.stack.pop()


def _zeros_like(frame: Frame, tree: Any) -> Any:
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [values.zeros(_aval(frame, leaf).strong()) if _is_array_like(leaf) else leaf
                                    for leaf in leaves])


# -- if --------------------------------------------------------------------------------------------------------
def exec_if(frame: Frame, stmt: cst.If) -> None:
    test = frame.eval(stmt.test)
    orelse = stmt.orelse
    else_body: list[cst.CSTNode] = []
    if isinstance(orelse, cst.If):
        else_body = [orelse]
    elif isinstance(orelse, cst.Else):
        else_body = flatten_statements(orelse.body)
    if not is_symbolic(test):
        try:
            taken = bool(test)
        except ConcretizationError as e:
            raise frame.wrap(stmt.test, e) from e
        frame.exec_block(flatten_statements(stmt.body) if taken else else_body)
        return
    pred = to_predicate(frame, test, stmt.test)
    then_body = flatten_statements(stmt.body)
    branch(frame, pred, [lambda: frame.exec_block(then_body), lambda: frame.exec_block(else_body)],
           ["in the then-branch", "in the else-branch"], stmt.test)


def branch(frame: Frame, pred: Any, runs: Sequence[Callable[[], None]], where: Sequence[str],
           node: cst.CSTNode, else_flags: dict[str, Any] | None = None, then_flags: dict[str, Any] | None = None
           ) -> None:
    """Build a ``cond`` op whose regions run ``runs`` on copies of the locals, and merge the locals after it.
    ``then_flags`` and ``else_flags`` are locals the first and the last region start with (what taking it
    tells: the code after an exit runs only where no exit was taken)."""
    builder = frame.trace.builder
    base = frame.env
    before = _containers(base)
    envs, blocks = [], []
    # which region runs when (``frontend.concrete.reachable``: where the inputs are known, whether it is taken)
    parent, guards = builder.block, frame.trace.context.guards
    dead: set[int] = set()  # regions that raise where they are known not to run
    outer = _OuterObjects(frame)
    for i, run in enumerate(runs):
        with builder.region() as block:
            frame.env = dict(base)
            if i == 0 and then_flags:
                frame.env.update(then_flags)
            if i == len(runs) - 1 and else_flags:
                frame.env.update(else_flags)
            guards.append((parent, block, pred, i == 0) if len(runs) == 2 else (parent, block, None, None))
            try:
                with outer:
                    run()
            except Exit as e:
                if e.kind == "raise":
                    raise
                if e.kind == "dead":
                    dead.add(i)
                else:
                    _record_exit(frame, e)
            finally:
                guards.pop()
            if i == 0 and then_flags:  # a flag still as assumed is the flag itself there: no new cond result
                for flag, assumed in then_flags.items():
                    if frame.env.get(flag) is assumed and flag in base:
                        frame.env[flag] = base[flag]
            envs.append(frame.env)
            blocks.append(block)
    frame.env = base
    if dead:
        _revive(frame, base, envs, blocks, dead)
    if _containers(base) != before:
        raise frame.error(node, "a Python list or dict was changed inside an `if` on a symbolic value",
                          note="the branch taken is only known when the compiled function runs; build the "
                               "container outside the `if` and select array values with jnp.where")
    where = [f"{w} (line {{line}})" for w in where]
    merged, yields, avals = _merge(frame, envs, blocks, where, node)
    results = [Value(t) for t in avals]
    for block, yielded in zip(blocks, yields):
        block.results = [builder.operand(v) for v in yielded]
    builder.emit(Op(cond_p, [builder.operand(pred)], {}, results, regions=blocks, loc=builder.loc))
    _rebind(frame, merged, results)


def _revive(frame: Frame, base: dict[str, Any], envs: list[dict], blocks: list, dead: set[int]) -> None:
    """Regions that stopped at a ``raise`` where they are known not to run (``Exit("dead")``) yield, in place of
    what they left, zeros of what the running region leaves: the values are never used. If no region runs, neither
    does the code around the ``if``."""
    live = [k for k in range(len(envs)) if k not in dead]
    if not live:
        raise Exit("dead")
    source = envs[live[0]]
    for k in dead:
        env = dict(source)
        with frame.trace.builder.reopen(blocks[k]):
            for name, value in source.items():
                if name.startswith("@") or value is base.get(name, _MISSING):
                    continue
                if name in FLAGS:
                    env[name] = value if isinstance(value, bool) else False
                else:
                    env[name] = _zeros_like(frame, value)
        envs[k] = env


def _merge(frame: Frame, envs: list[dict], blocks: list, where: list[str], node: cst.CSTNode
           ) -> tuple[dict[str, Any], list[list[Any]], list[TensorType]]:
    """Unify the paths' locals. Returns per-name templates, each path's yields and the result types."""
    builder = frame.trace.builder
    names = sorted({k for env in envs for k in env if not k.startswith("@")})
    merged: dict[str, Any] = {}
    yields: list[list[Any]] = [[] for _ in envs]
    avals: list[TensorType] = []
    for name in names:
        values = [env.get(name, _MISSING) for env in envs]
        values = [_MISSING if isinstance(v, Undefined) else v for v in values]  # (bound on no path through here)
        if all(v is values[0] for v in values):
            # (bound on no path: what one path says about it, not None where that path never saw the name)
            merged[name] = values[0] if values[0] is not _MISSING else next(
                env[name] for env in envs if isinstance(env.get(name), Undefined))
            continue
        if any(v is _MISSING for v in values):
            present = next(v for v in values if v is not _MISSING)
            if name in FLAGS:
                values = [False if v is _MISSING else v for v in values]
            elif name == RETVAL:
                filler = _zeros_like(frame, present)
                values = [filler if v is _MISSING else v for v in values]
            else:
                lines = [env.get("@" + name) for env in envs]
                paths = [w.format(line=ln) for w, ln in zip(where, lines) if ln is not None]
                merged[name] = Undefined(name, f"{_named(name)} is assigned only {' and '.join(paths)}")
                continue
        flat = [tree_flatten(v) for v in values]
        if any(f[1] != flat[0][1] for f in flat):
            detail = " and ".join(f"{_describe(v)} {w.format(line=env.get('@' + name, '?'))}"
                                  for v, w, env in zip(values, where, envs))
            raise _paths_error(frame, name, "a value's structure", [_shown(frame, v) for v in values], where,
                               [env.get("@" + name) for env in envs], node, f"{_named(name)} is {detail}")
        template = []
        for j in range(len(flat[0][0])):
            leaves = [f[0][j] for f in flat]
            if all(_static_equal(leaf, leaves[0]) for leaf in leaves):
                template.append(leaves[0])
                continue
            if not all(_is_array_like(leaf) for leaf in leaves):
                detail = " and ".join(f"{leaf!r} {w.format(line=env.get('@' + name, '?'))}"
                                      for leaf, w, env in zip(leaves, where, envs))
                raise _paths_error(frame, name, "a static value", [repr(leaf) for leaf in leaves], where,
                                   [env.get("@" + name) for env in envs], node, f"{_named(name)} is {detail}")
            line_where = [w.format(line=env.get("@" + name, "?")) for w, env in zip(where, envs)]
            dtype, weak, shape = _join_types(frame, name, leaves, line_where, node,
                                             [env.get("@" + name) for env in envs])
            for k, (leaf, block) in enumerate(zip(leaves, blocks)):
                with builder.reopen(block):
                    yields[k].append(_convert(frame, leaf, dtype, weak))
            template.append(_Slot(len(avals), name))
            avals.append(TensorType(dtype, shape, weak))
        merged[name] = _Merged(flat[0][1], template)
    return merged, yields, avals


class _Slot:
    """A leaf of a merged value that is a result of the control-flow op."""

    def __init__(self, index: int, name: str):
        self.index, self.name = index, name


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        return f"a dict with keys {sorted(value)}"
    return type(value).__name__


class _Merged:
    """A merged local: its pytree structure, with ``_Slot``s where the op's results go."""

    def __init__(self, treedef: Any, template: list):
        self.treedef, self.template = treedef, template


def _rebind(frame: Frame, merged: dict[str, Any], results: Sequence[Value]) -> None:
    for name, entry in merged.items():
        if isinstance(entry, _Merged):
            _bind_templates(frame, {name: (entry.treedef, entry.template)}, results)
        else:
            frame.env[name] = entry


def after_exit_flags(frame: Frame, rest: Sequence[cst.CSTNode], stmt: cst.CSTNode) -> None:
    """After a statement that may have exited on a symbolic condition: stop, or guard what follows."""
    flags = {f: frame.env.get(f, False) for f in FLAGS}
    if flags[RET] is True:
        raise Exit("return", frame.env.get(RETVAL))
    if flags[BRK] is True:
        raise Exit("break")
    if flags[CONT] is True:
        raise Exit("continue")
    if not rest:
        return
    active = [v for v in flags.values() if v is not False]
    stop = active[0]
    for v in active[1:]:
        stop = values.logical_or(stop, v)
    only_return = all(flags[f] is False for f in (BRK, CONT))
    else_flags = {RET: True} if only_return else None
    then_flags = {f: False for f, v in flags.items() if v is not False}  # (the code after runs where none was)
    branch(frame, values.logical_not(stop), [lambda: frame.exec_block(rest), lambda: None],
           ["where the code after line {line} runs".replace("{line}", str(frame.loc(stmt).line)),
            "where an earlier return, break or continue was taken"], stmt, else_flags=else_flags,
           then_flags=then_flags)
    if frame.env.get(RET) is True:
        raise Exit("return", frame.env.get(RETVAL))


_IFEXP = "$ifexp"


def conditional_expression(frame: Frame, test: Any, node: cst.IfExp) -> Any:
    """``a if test else b`` on a symbolic test: a ``cond`` that evaluates only the side the test picks, as Python
    does (``where(test, a, b)`` computes both, and a gradient through the other side, sqrt(x) at x < 0, say, is
    then NaN); a choice between values that need no computing (names, numbers) is a select."""
    if _plain(node.body) and _plain(node.orelse):
        return select_values(frame, test, frame.eval(node.body), frame.eval(node.orelse), node)
    pred = to_predicate(frame, test, node.test)
    name = f"{_IFEXP}{id(node)}"

    def side(expr: cst.BaseExpression) -> Callable[[], None]:
        def run() -> None:
            frame.env[name] = frame.eval(expr)
            frame.env["@" + name] = Assignment(frame.loc(expr), frame.source.file.span(expr))

        return run

    branch(frame, pred, [side(node.body), side(node.orelse)], ["left of `if`", "after `else`"], node.test)
    frame.env.pop("@" + name, None)
    return frame.env.pop(name)


def _plain(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        return _plain(expr.expression)
    return isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.Imaginary))


def select_values(frame: Frame, test: Any, a: Any, b: Any, node: cst.CSTNode) -> Any:
    """``a if test else b`` on a symbolic test: both sides are evaluated and selected elementwise."""
    pred = to_predicate(frame, test, node)
    (la, ta), (lb, tb) = tree_flatten(a), tree_flatten(b)
    if ta != tb:
        raise frame.error(node, "the two sides of a conditional expression on a symbolic value differ in "
                                f"structure ({_describe(a)} and {_describe(b)})")
    out = [x if _static_equal(x, y) else values.where(pred, x, y) for x, y in zip(la, lb)]
    return tree_unflatten(ta, out)


# -- loops -----------------------------------------------------------------------------------------------------
class _Names(cst.CSTVisitor):
    """Names a loop body may rebind, and whether it may break, return or change containers."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.breaks = self.returns = False
        self.receivers: set[str] = set()  # names whose mutating method the body calls (``acc.append``)
        self.mutates_other = False  # a mutating call on something else (``self.items.append``), or ``del``
        self._loop_depth = 0
        self.subscript_targets: set[str] = set()

    def _target(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            self.names.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for e in node.elements:
                self._target(e.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)
        elif isinstance(node, cst.Subscript):
            base = node.value
            while isinstance(base, cst.Subscript):
                base = base.value
            if isinstance(base, cst.Name):
                self.names.add(base.value)
                self.subscript_targets.add(base.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> bool:
        self._target(node.target)
        node.iter.visit(self)
        self._loop(node.body, node.orelse)
        return False

    def visit_While(self, node: cst.While) -> bool:
        node.test.visit(self)
        self._loop(node.body, node.orelse)
        return False

    def _loop(self, body: cst.BaseSuite, orelse: cst.Else | None) -> None:
        """A nested loop: a ``break`` in its body is its own, one in its ``else`` clause the enclosing loop's."""
        self._loop_depth += 1
        body.visit(self)
        self._loop_depth -= 1
        if orelse is not None:
            orelse.visit(self)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Break(self, node: cst.Break) -> None:
        if self._loop_depth == 0:
            self.breaks = True

    def visit_Return(self, node: cst.Return) -> None:
        self.returns = True

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in MUTATORS:
            receiver = node.func.value
            if isinstance(receiver, cst.Subscript) and isinstance(receiver.value, cst.Attribute) \
                    and receiver.value.attr.value == "at":
                return  # ``y.at[i].add(v)``: an array's functional update, no mutation
            if isinstance(node.func.value, cst.Name):
                self.receivers.add(node.func.value.value)
            else:
                self.mutates_other = True

    def visit_Del(self, node: cst.Del) -> None:
        self.mutates_other = True

    def mutates(self, frame: Frame) -> bool:
        """Whether the body may change a Python container that exists before it (``acc.append`` on a list bound
        outside; ``jnp.add`` is no mutation, nor is appending to a list the body makes itself)."""
        return self.mutates_other or any(
            isinstance(frame.peek(name), (list, dict, set, bytearray)) for name in self.receivers)


def _scan_body(*nodes: cst.CSTNode) -> _Names:
    names = _Names()
    for node in nodes:
        node.visit(names)
    return names


def exec_while(frame: Frame, stmt: cst.While) -> None:
    body = flatten_statements(stmt.body)
    outer = {f: frame.env.get(f, False) for f in (BRK, CONT)}
    frame.env[BRK] = frame.env[CONT] = False
    try:
        while True:
            test = frame.eval(stmt.test)
            if is_symbolic(test) or is_symbolic(frame.env.get(BRK)) or is_symbolic(frame.env.get(RET, False)):
                _symbolic_loop(frame, stmt, body, kind="while", test=test)
                break
            if frame.env[BRK] is True or not test:
                break
            _run_iteration(frame, body)
        broke = frame.env[BRK]
    finally:
        frame.env.update(outer)
    _loop_else(frame, stmt, broke)


def _loop_else(frame: Frame, stmt: cst.While | cst.For, broke: Any) -> None:
    """A loop's ``else`` clause, after the loop (the enclosing loop's flags back, so that a ``break`` in it leaves
    that loop): it runs where the loop ended without a ``break`` or ``return``, which may be known only when the
    compiled function runs (``broke``, and the return flag, traced)."""
    if not isinstance(stmt.orelse, cst.Else):
        return
    else_body = flatten_statements(stmt.orelse.body)
    returned = frame.env.get(RET, False)
    stops = [flag for flag in (broke, returned) if flag is not False]
    if any(flag is True for flag in stops):
        return
    if not stops:
        frame.exec_block(else_body)
        return
    stop = stops[0] if len(stops) == 1 else values.logical_or(*stops)
    branch(frame, values.logical_not(stop), [lambda: frame.exec_block(else_body), lambda: None],
           ["in the loop's `else` clause", "where the loop ended by a break or return"], stmt,
           then_flags={RET: False} if returned is not False else None)


def _run_iteration(frame: Frame, body: Sequence[cst.CSTNode]) -> None:
    frame.env[CONT] = False
    try:
        frame.exec_block(body)
    except Exit as e:
        if e.kind == "break":
            frame.env[BRK] = True
        elif e.kind != "continue":
            raise
    frame.env[CONT] = False


def exec_for(frame: Frame, stmt: cst.For) -> None:
    from srcjax.transpiler.frontend.calls import SymbolicRange

    iterable = frame.eval(stmt.iter)
    body = flatten_statements(stmt.body)
    scan = _scan_body(stmt.body)
    outer = {f: frame.env.get(f, False) for f in (BRK, CONT)}
    frame.env[BRK] = frame.env[CONT] = False
    try:
        if isinstance(iterable, SymbolicRange):
            _symbolic_loop(frame, stmt, body, kind="for", rng=iterable)
        elif isinstance(iterable, range) and len(iterable) > 1 and not scan.mutates(frame) and not _mutates_container(
                frame, scan):
            _counted_loop(frame, stmt, body, iterable, None)
        elif isinstance(iterable, Value):
            if not iterable.shape:
                raise frame.error(stmt.iter, "iteration over a 0-d array")
            rows = range(iterable.shape[0])
            if scan.mutates(frame) or _mutates_container(frame, scan):  # (a static row count: unrolled, as a range)
                _unrolled(frame, stmt, body, [iterable[i] for i in rows])
            else:
                _counted_loop(frame, stmt, body, rows, iterable)
        else:
            _unrolled(frame, stmt, body, iterable)
        broke = frame.env[BRK]
    finally:
        frame.env.update(outer)
    _loop_else(frame, stmt, broke)


def _counted_loop(frame: Frame, stmt: cst.For, body: Sequence[cst.CSTNode], rng: range, rows: Any) -> None:
    """A ``for`` over a static range (or an array's rows) as a loop op; unrolled where the index must be static."""
    items = (lambda r: [rows[i] for i in r]) if rows is not None else list
    base = dict(frame.env)
    context = frame.trace.context
    unrollable = len(rng) <= UNROLL_FALLBACK_LIMIT  # (a print or assert in the body then has it unrolled)
    try:
        context.unrollable += unrollable
        try:
            _symbolic_loop(frame, stmt, body, kind="for", rng=rng, rows=rows)
        finally:
            context.unrollable -= unrollable
    except _Unroll:
        frame.env = base
        _unrolled(frame, stmt, body, items(rng))
    except _Peel:
        frame.env = base
        _unrolled(frame, stmt, body, items(rng[:1]))
        if frame.env[BRK] is not True:
            _counted_loop(frame, stmt, body, rng[1:], rows) if len(rng) > 2 else _unrolled(
                frame, stmt, body, items(rng[1:]))
    except TranspileError as e:  # (what only Python can run: a concrete value needed, an outer object changed)
        if not (getattr(e, "concretization", False) or getattr(e, "outer_write", False)):
            raise
        if len(rng) > UNROLL_FALLBACK_LIMIT:
            e.notes.append(frame.note(stmt, f"this loop makes {len(rng)} trips, so it is compiled as a loop whose "
                                            f"variable is traced (one of at most {UNROLL_FALLBACK_LIMIT} trips runs "
                                            "unrolled where its body needs a Python value)"))
            e.args = (e.render(),)
            raise
        frame.env = base
        _unrolled(frame, stmt, body, items(rng))


def _mutates_container(frame: Frame, scan: _Names) -> bool:
    return any(isinstance(frame.env.get(n), (list, dict)) for n in scan.subscript_targets)


def _unrolled(frame: Frame, stmt: cst.For, body: Sequence[cst.CSTNode], iterable: Any) -> None:
    try:
        items = iter(iterable)
    except ConcretizationError as e:
        raise frame.wrap(stmt.iter, e) from e
    except TypeError as e:
        raise frame.wrap(stmt.iter, e) from e
    for item in items:
        if frame.env[BRK] is True:
            break
        stop = [v for v in (frame.env[BRK], frame.env.get(RET, False)) if is_symbolic(v)]
        if stop:
            guard = values.logical_not(stop[0] if len(stop) == 1 else values.logical_or(*stop))

            def iteration(item=item):
                frame.assign(stmt.target, item)
                _run_iteration(frame, body)

            branch(frame, guard, [iteration, lambda: None], ["in a loop iteration", "after the loop stopped"], stmt,
                   then_flags={BRK: False, RET: False})
            continue
        frame.assign(stmt.target, item)
        _run_iteration(frame, body)


def _symbolic_loop(frame: Frame, stmt: cst.While | cst.For, body: Sequence[cst.CSTNode], kind: str,
                   rng: Any = None, rows: Any = None, test: Any = None) -> None:
    """Build a ``while`` or ``for`` op for the loop, tracing its body once per set of carried types. A ``while``
    whose test binds names (``while (z := f(y)) < c``) is rotated: the body computes the next trip's test (``test``
    is this trip's), carried with the names it binds, for the body and the code after the loop to see them."""
    from srcjax.transpiler.frontend.calls import SymbolicRange

    builder = frame.trace.builder
    scan = _scan_body(stmt.body, stmt.test) if isinstance(stmt, cst.While) else _scan_body(stmt.body)
    # a static range's loop runs to its end unless it breaks or returns (its loop variable is then the range's last)
    static_end = kind == "for" and isinstance(rng, range) and not scan.breaks and not scan.returns
    mutation_error = frame.error(stmt, "a loop on a symbolic value cannot change Python lists or dicts",
                                 note="the number of iterations is only known when the compiled function runs; "
                                      "collect results in an array (x = x.at[i].set(v)) or use lax.scan")
    if scan.mutates(frame):
        raise mutation_error
    containers = _containers(frame.env)
    # (a name bound on only some paths so far is not carried: the body binds it before any use, or it stays unbound)
    names = sorted(n for n in scan.names
                   if n in frame.env and not n.startswith("$") and not isinstance(frame.env[n], Undefined))
    if scan.breaks:
        names.append(BRK)
    if scan.returns:
        names.append(RET)
        if RETVAL in frame.env:
            names.append(RETVAL)
    retest = f"$test{id(stmt)}" if kind == "while" and _scan_body(stmt.test).names else None
    if retest:
        frame.env[retest] = to_predicate(frame, test, stmt.test)
        names.append(retest)
    counted = kind == "for"
    peelable = counted and isinstance(rng, range) and len(rng) > 1
    unrollable = counted and isinstance(rng, range) and len(rng) <= UNROLL_FALLBACK_LIMIT  # (see _Unroll)
    # A ``for`` over a static range that may stop early (a break or return on traced values) stays a ``for`` when it
    # is short, each trip running only while nothing has stopped it: a fixed trip count, which reverse mode
    # can differentiate again (grad(grad(f))); a long one is a ``while`` that ends when it stops.
    masked = counted and isinstance(rng, range) and (scan.breaks or scan.returns) and len(rng) <= UNROLL_FALLBACK_LIMIT
    use_while = kind == "while" or ((scan.breaks or scan.returns) and not masked) or isinstance(rng, SymbolicRange)
    if counted:
        if isinstance(rng, SymbolicRange):
            start, stop, step = rng.start, rng.stop, rng.step
            trip = values.trip_count(start, stop, step)
        else:
            start, step = rng.start, rng.step
            trip = len(rng)
    base = frame.env
    outer = _OuterObjects(frame)
    promoted: set[tuple[str, int]] = set()  # static leaves that change, carried from the next trace on
    joined: dict[tuple[str, int], tuple[np.dtype, bool]] = {}
    for _attempt in range(MAX_RETRACES):
        # the carried leaves: symbolic ones, plus static ones found to change
        carried_names, init, templates = [], [], {}
        for name in names:
            value = base.get(name, False if name in (BRK, RET) else _MISSING)
            if value is _MISSING:
                continue
            leaves, treedef = tree_flatten(value)
            template = []
            for j, leaf in enumerate(leaves):
                if is_symbolic(leaf) or (name, j) in promoted:
                    if not _is_array_like(leaf):
                        raise frame.error(stmt, f"'{name}' changes inside a loop on a symbolic value but is not a "
                                                "number or an array", note=f"it is {leaf!r}")
                    dtype, weak = joined.get((name, j), (None, None))
                    if dtype is None:
                        aval = _aval(frame, leaf)
                        dtype, weak = aval.dtype, aval.weak_type
                    template.append(_Slot(len(init), name))
                    init.append(_convert(frame, leaf, dtype, weak))
                else:
                    template.append(leaf)
            carried_names.append(name)
            templates[name] = (treedef, template)
        carried_avals = [_aval(frame, v) for v in init]
        if counted and use_while:
            carried_avals = [TensorType(np.int32, ())] + carried_avals
        # -- the body ------------------------------------------------------------------------------------
        with builder.region(carried_avals) as body_block:
            params = list(body_block.params)
            frame.env = dict(base)
            if counted and use_while:
                k, params = params[0], params[1:]
            elif counted:
                k = None
            _bind_templates(frame, templates, params)
            if counted and not use_while:
                body_block.params.insert(0, Value(TensorType(np.int32, ()), "k"))
                k = body_block.params[0]
                builder.own(k)
            if counted:
                from_zero = not is_symbolic(start) and start == 0  # (a traced start is never compared here)
                index = k if from_zero and step == 1 else values.add(k if step == 1 else values.mul(k, step), start)
                target = _row(rows, index) if rows is not None else index
                frame.assign(stmt.target, target)
            frame.env[CONT] = False
            stop = [frame.env[f] for f in (BRK, RET) if f in carried_names and is_symbolic(frame.env[f])]
            with outer:
                if masked and stop:
                    guard = values.logical_not(stop[0] if len(stop) == 1 else values.logical_or(*stop))
                    branch(frame, guard, [lambda: frame.exec_block(body), lambda: None],
                           ["in a loop iteration", "after the loop stopped"], stmt,
                           then_flags={f: False for f in (BRK, RET) if f in carried_names})
                else:
                    try:
                        frame.exec_block(body)
                    except Exit as e:
                        if e.kind == "raise":
                            raise
                        _record_exit(frame, e)
                if retest:
                    _next_test(frame, stmt, retest)
            frame.env[CONT] = False
            if static_end and peelable and _bound_inside_and_read_outside(frame, stmt, scan, base):
                raise _Peel()  # (the first trip, unrolled, binds them: the rest of the loop carries them)
            # compare what the body leaves with what it was given
            changed = False
            outputs = []
            returned = _MISSING  # a value returned from inside the loop: carried from the next trace on
            if scan.returns and RETVAL in frame.env and RETVAL not in carried_names:
                returned = frame.env[RETVAL]
                changed = True
            for name in carried_names:
                treedef, template = templates[name]
                leaves, out_tree = tree_flatten(frame.env.get(name))
                if out_tree != treedef:
                    if unrollable:
                        raise _Unroll()
                    raise frame.error(stmt, "a value's structure changes inside a loop on a symbolic value",
                                      note=f"{_named(name)} is {_describe(base.get(name))} before the loop and "
                                           f"{_describe(frame.env.get(name))} after an iteration "
                                           f"(line {frame.env.get('@' + name, '?')})")
                for j, (slot, leaf) in enumerate(zip(template, leaves)):
                    if isinstance(slot, _Slot):
                        want = carried_avals[slot.index + (1 if counted and use_while else 0)]
                        got = _aval(frame, leaf) if _is_array_like(leaf) else None
                        if got is None:
                            if unrollable:
                                raise _Unroll()
                            raise frame.error(stmt, f"'{name}' becomes a {type(leaf).__name__} inside the loop")
                        if got.shape != want.shape and peelable:
                            raise _Peel()
                        if got.shape != want.shape:
                            raise _loop_shape_error(frame, name, want, got, base.get("@" + name), stmt)
                        if (got.dtype, got.weak_type) != (want.dtype, want.weak_type):
                            dtype, weak = values.result_type(_Typed(want), leaf)
                            if (dtype, weak) != (want.dtype, want.weak_type):
                                joined[(name, j)] = (dtype, weak)
                                changed = True
                        outputs.append(_convert(frame, leaf, want.dtype, want.weak_type))
                    elif not _static_equal(slot, leaf):
                        if unrollable and ((type(slot) in _PY_NUMBERS and type(leaf) in _PY_NUMBERS)
                                           or not _is_array_like(leaf) or not _is_array_like(slot)):
                            raise _Unroll()
                        if not _is_array_like(leaf) or not _is_array_like(slot):
                            raise frame.error(stmt, "a static value changes inside a loop on a symbolic value",
                                              note=f"{_named(name)} is {slot!r} before the loop and {leaf!r} after "
                                                   f"an iteration")
                        promoted.add((name, j))
                        changed = True
            if counted and use_while:
                outputs.insert(0, values.add(k, np.int32(1)))
            body_block.results = [builder.operand(v) for v in outputs]
        frame.env = base
        if _containers(base) != containers:  # (one the syntax did not show: through another name)
            raise mutation_error
        if returned is not _MISSING:  # (its zeros, the value before any return, are made outside the loop)
            base = dict(base)
            base[RETVAL] = _zeros_like(frame, returned)
            names.append(RETVAL)
        if not changed:
            break
    else:
        raise frame.error(stmt, "the types of a loop's values do not settle", note="give them fixed dtypes before "
                                                                                  "the loop")
    # -- the op --------------------------------------------------------------------------------------------
    operands = [builder.operand(v) for v in init]
    results = [Value(t) for t in _strip_counter(carried_avals, counted and use_while)]
    if use_while:
        with builder.region(carried_avals) as cond_block:
            params = list(cond_block.params)
            frame.env = dict(base)
            if counted:
                k, params = params[0], params[1:]
            _bind_templates(frame, templates, params)
            if counted:
                test = values.less(k, trip)
            elif retest:
                test = frame.env[retest]
            else:
                test = to_predicate(frame, frame.eval(stmt.test), stmt.test)
            for flag in (BRK, RET):
                if flag in carried_names:
                    test = values.logical_and(test, values.logical_not(frame.env[flag]))
            cond_block.results = [builder.operand(test)]
            frame.env = base
        counter = [builder.operand(np.int32(0))] if counted else []
        op_results = ([Value(TensorType(np.int32, ()))] if counted else []) + results
        builder.emit(Op(while_p, counter + operands, {}, op_results, regions=[cond_block, body_block],
                        loc=builder.loc))
    else:
        trip_value = builder.operand(np.int32(trip))
        builder.emit(Op(for_p, [trip_value, *operands], {}, results, regions=[body_block], loc=builder.loc))
    frame.env = base
    _bind_templates(frame, templates, results)
    for name in scan.names:  # (first bound inside the body: no value before the loop to carry, none after it)
        unbound = name not in frame.env or isinstance(frame.env[name], Undefined)
        if unbound and not name.startswith("$") and name not in carried_names:
            frame.env[name] = Undefined(name, f"'{name}' is assigned only inside the loop on a traced value (line "
                                              f"{frame.loc(stmt).line}), which may run no times; a value the loop "
                                              "changes is kept after it only if it has one before it")
    broke = frame.env.get(BRK, False) if BRK in carried_names else False  # (whether it broke: its `else` reads it)
    for name in (BRK, CONT, retest):
        frame.env.pop(name, None)
    frame.env[BRK], frame.env[CONT] = broke, False
    if counted and static_end and len(rng) and (rows is not None or isinstance(stmt.target, cst.Name)):
        # (Python leaves the loop variable at its last value: the last index, or the array's last row)
        frame.assign(stmt.target, rng[-1] if rows is None else rows[rng[-1]])
    elif counted:
        frame.env[_target_name(stmt)] = Undefined(_target_name(stmt), "the loop variable of a compiled loop is "
                                                                      "not available after the loop")


def _next_test(frame: Frame, stmt: cst.While, name: str) -> None:
    """The rotated loop's test for the next trip, computed where the trip did not stop the loop (after a break
    or return Python evaluates no test, and the names it binds keep their values)."""
    def evaluate() -> None:
        frame.env[name] = to_predicate(frame, frame.eval(stmt.test), stmt.test)

    stop = [frame.env[f] for f in (BRK, RET) if f in frame.env and frame.env[f] is not False]
    if not stop:
        evaluate()
    elif not any(f is True for f in stop):
        guard = values.logical_not(stop[0] if len(stop) == 1 else values.logical_or(*stop))
        branch(frame, guard, [evaluate, lambda: None], ["after a loop trip", "after the loop stopped"], stmt.test)


def _row(rows: Any, index: Any) -> Any:
    """Row ``index`` (a traced int32) of an array: what ``for row in array`` binds on each trip."""
    shape = values.aval(rows).shape
    start = [values.convert(index, np.dtype(np.int32))] + [np.int32(0)] * (len(shape) - 1)
    row = dynamic_slice_p.bind(rows, *start, slice_sizes=(1, *shape[1:]))
    return reshape_p.bind(row, new_sizes=shape[1:], dimensions=None)


def _strip_counter(avals: list[TensorType], has_counter: bool) -> list[TensorType]:
    return avals[1:] if has_counter else avals


def _target_name(stmt: cst.For) -> str:
    return stmt.target.value if isinstance(stmt.target, cst.Name) else "$target"


def _bind_templates(frame: Frame, templates: dict[str, tuple[Any, list]], values: Sequence[Any]) -> None:
    for name, (treedef, template) in templates.items():
        leaves = []
        for x in template:
            if isinstance(x, _Slot):
                value = values[x.index]
                if isinstance(value, Value) and value.name is None and not name.startswith("$"):
                    value.name = name
                leaves.append(value)
            else:
                leaves.append(x)
        frame.env[name] = tree_unflatten(treedef, leaves)


def _bound_inside_and_read_outside(frame: Frame, stmt: cst.For, scan: _Names, before: dict[str, Any]) -> bool:
    """Whether the loop's body binds a name that has no value before the loop and that the function reads outside
    the body: a loop over a static range runs at least once, so Python has it bound after the loop (names only
    the body reads, its temporaries, need no value carried)."""
    fresh = {n for n in scan.names if not n.startswith("$") and (n not in before or isinstance(before[n], Undefined))
             and n in frame.env and not isinstance(frame.env[n], Undefined)}
    if not fresh:
        return False
    outside = _NamesOutside(stmt.body)
    frame.source.node.visit(outside)
    return bool(fresh & outside.names)


class _NamesOutside(cst.CSTVisitor):
    """The names a function mentions outside one block of it."""

    def __init__(self, skipped: cst.CSTNode):
        self.skipped, self.names = skipped, set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.skipped:
            return False
        if isinstance(node, cst.Name):
            self.names.add(node.value)
        return True


class _Peel(Exception):
    """A carried value's shape changes in the first iteration: run that one unrolled, loop over the rest."""


class _Unroll(Exception):
    """A short loop over a static range does what only Python can do with its values (Python numbers that change,
    a list that grows, a value that changes type): run it unrolled, as JAX runs every loop, so that Python numbers
    stay Python's (a float64 sum, a test on it, an int past int32)."""


class _Typed:
    """Stands for a value of a given type in ``result_type``."""

    def __init__(self, aval: TensorType):
        self.aval = aval
        self.dtype = aval.dtype
        self.weak_type = aval.weak_type
        self.shape = aval.shape


__all__ = ["exec_if", "exec_while", "exec_for", "after_exit_flags", "select_values", "conditional_expression",
           "branch"]
