"""Shrinking a failing program: delete statements and helpers, inline blocks, replace expressions by smaller ones
of the same type, make dimensions smaller and drop unused arguments, keeping each change after which the same
check still fails the same way (greedy, to a fixpoint or a time limit).
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
import time
from typing import Callable, Iterator

from tests.fuzz.program import HELPERS, Expr, Program, Stmt, leaf, replace_node, shape_text

Path = tuple  # (function index, (statement index, block index), ...): a statement list


def block_paths(program: Program) -> Iterator[Path]:
    def walk(body: list[Stmt], path: Path) -> Iterator[Path]:
        yield path
        for si, stmt in enumerate(body):
            for bi, (_, inner) in enumerate(stmt.blocks if not stmt.protected else []):  # (kept whole)
                yield from walk(inner, path + ((si, bi),))

    for fi, function in enumerate(program.functions):
        yield from walk(function.body, (fi,))


def resolve(program: Program, path: Path) -> list[Stmt]:
    body = program.functions[path[0]].body
    for si, bi in path[1:]:
        body = body[si].blocks[bi][1]
    return body


def _edited(program: Program, path: Path, edit: Callable[[list[Stmt]], None]) -> Program:
    new = copy.deepcopy(program)
    edit(resolve(new, path))
    return new


def candidates(program: Program) -> Iterator[Program]:
    """Smaller variants of ``program``, the biggest cuts first; many are invalid (the caller tests each)."""
    for fi in range(len(program.functions) - 1):  # a helper (main is the last function)
        new = copy.deepcopy(program)
        del new.functions[fi]
        yield new
    paths = list(block_paths(program))
    for path in paths:
        body = resolve(program, path)
        for si, stmt in enumerate(body):
            if stmt.protected:  # (a loop's exit: without it the loop would not end)
                continue
            yield _edited(program, path, lambda b, si=si: b.pop(si))
            for _, inner in stmt.blocks:  # the statement replaced by one of its blocks
                kept = [s for s in inner if not s.protected]
                yield _edited(program, path, lambda b, si=si, kept=kept: b.__setitem__(slice(si, si + 1),
                                                                                        copy.deepcopy(kept)))
            if len(stmt.blocks) > 1:
                yield _edited(program, path, lambda b, si=si: b[si].blocks.pop())
    for name, value in program.dims.items():
        for smaller in sorted({1, 2, value - 1}):
            if 1 <= smaller < value:
                new = copy.deepcopy(program)
                new.dims[name] = smaller
                yield new
    main = program.main()
    body = "\n".join(main.render().split("\n")[1:])
    for pi, param in enumerate(main.params):
        if len(main.params) > 1 and not re.search(rf"\b{param}\b", body):
            new = copy.deepcopy(program)
            del new.main().params[pi]
            del new.arg_specs[pi]
            yield new
    for path in paths:
        for si, stmt in enumerate(resolve(program, path)):
            for ei, expr in enumerate(stmt.exprs):
                for simpler in simpler_exprs(expr):
                    yield _edited(program, path, lambda b, si=si, ei=ei, simpler=simpler:
                                  b[si].exprs.__setitem__(ei, simpler))


def simpler_exprs(expr: Expr) -> Iterator[Expr]:
    """``expr`` with one node replaced by a child of the same type, or by a constant of its type."""
    for node in expr.nodes():
        for child in node.args:
            if child.ty == node.ty:
                yield replace_node(expr, node, child)
        if node.args and node.ty.kind == "f":
            shape = node.ty.shape  # (a bare 0.5 would be a float, without the methods of an array: ``x.sum()``)
            constant = leaf(f"jnp.full({shape_text(shape)}, 0.5)" if shape else "jnp.asarray(0.5)", node.ty)
            yield replace_node(expr, node, constant)
        if node.args and node.ty == ("b", ()):  # a condition made static
            yield replace_node(expr, node, leaf("True", node.ty))
            yield replace_node(expr, node, leaf("False", node.ty))


# -- names defined before use ---------------------------------------------------------------------------------------
def well_scoped(program: Program) -> bool:
    """Every name a function reads is certainly bound where it is read (a global, or assigned on every path
    before that point, as the generator writes programs), and every function ends with a ``return``. A cut
    that breaks this makes a program srcjax rightly rejects, which NumPy may still run (on its one path)."""
    module = set(program.dims) | {f.name for f in program.functions} | {"jnp", "REFERENCE"}
    module |= {call.rstrip("(") for call, _ in HELPERS}
    module |= set(dir(builtins))
    for function in program.functions:
        node = ast.parse(function.render()).body[0]
        if not node.body or not isinstance(node.body[-1], ast.Return):
            return False
        bound = module | {a.arg for a in node.args.args}
        if _walk(node.body, bound) is None:
            return False
    return True


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _writes(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _walk(body: list[ast.stmt], bound: set[str]) -> tuple[set[str], bool] | None:
    """The names certainly bound after ``body`` and whether it certainly exits (return, break, continue);
    None if it reads a name that may be unbound."""
    bound = set(bound)
    for stmt in body:
        if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
            return (bound, True) if _reads(stmt) <= bound else None
        if isinstance(stmt, ast.If):
            if not _reads(stmt.test) <= bound:
                return None
            branches = [_walk(stmt.body, bound), _walk(stmt.orelse, bound)]
            if None in branches:
                return None
            open_ = [b for b, exits in branches if not exits]
            if not open_:
                return bound, True
            bound = set.intersection(*open_)
        elif isinstance(stmt, (ast.For, ast.While)):  # (the body may not run: nothing it binds is certain)
            head = stmt.iter if isinstance(stmt, ast.For) else stmt.test
            inner = bound | (_writes(stmt.target) if isinstance(stmt, ast.For) else set())
            if not _reads(head) <= bound or _walk(stmt.body, inner) is None:
                return None
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)):
            reads = _reads(stmt.value) | (_writes(stmt.target) if isinstance(stmt, ast.AugAssign) else set())
            reads -= {a.arg for n in ast.walk(stmt.value) if isinstance(n, ast.Lambda) for a in n.args.args}
            for target in getattr(stmt, "targets", []):
                reads |= _reads(target)  # (``y[i] = v`` reads y and i)
            if not reads <= bound:
                return None
            for target in getattr(stmt, "targets", []):
                bound |= _writes(target)
        elif isinstance(stmt, ast.FunctionDef):  # (a closure reads the names bound before it)
            inner = _walk(stmt.body, bound | {a.arg for a in stmt.args.args})
            if inner is None or not inner[1]:
                return None
            bound.add(stmt.name)
        elif not isinstance(stmt, ast.Pass):
            return None
    return bound, False


def size(program: Program) -> tuple[int, int]:
    return len(program.render()), sum(program.dims.values())


def shrink(program: Program, still_fails: Callable[[Program], bool], seconds: float = 120.0,
           log: Callable[[str], None] = lambda s: None) -> Program:
    """The smallest variant of ``program`` found for which ``still_fails`` holds (``program`` itself fails)."""
    deadline = time.monotonic() + seconds
    improved = True
    tried = 0
    while improved and time.monotonic() < deadline:
        improved = False
        start = 0
        while time.monotonic() < deadline:
            found = None
            for index, candidate in enumerate(candidates(program)):
                if index < start or size(candidate) >= size(program) or not well_scoped(candidate):
                    continue
                if time.monotonic() > deadline:
                    break
                tried += 1
                if still_fails(candidate):
                    found = index
                    break
            if found is None:
                break
            program = candidate
            improved = True
            start = found  # the cuts before this one failed on a bigger program: go on from here
            log(f"shrunk to {size(program)[0]} characters after {tried} tries")
    return program
