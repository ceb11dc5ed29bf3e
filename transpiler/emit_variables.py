"""Which values of a function share one Python variable in the emitted code (the emitter's planner).

A loop's carried value keeps one variable through the loop, and a value is assigned straight into the
variable that carries it where that is provably safe, so the emitted code has no ``a = b`` chains; a
stack's push appends to the list in place, so its result shares the list's variable.
"""

from __future__ import annotations

from srcjax.transpiler.ir import Block, Function, Literal, Op, Value
from srcjax.transpiler.printer import control_form, sanitize


# -- variables: which values share one Python variable -----------------------------------------------------
class Variables:
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


class Planner:
    """Decides which values share a variable. Coalescing is done only where it is provably safe."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.vars = Variables()
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
            elif op.name in ("stack_push", "stack_add"):
                self.vars.union(op.results[0], op.operands[0])  # appended in place: one list, one variable
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
