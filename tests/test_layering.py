"""The packages import one way (srcjax -> runtime -> codegen -> transpiler) and the code generator has no import
cycles, counting the imports inside functions (which hide cycles rather than remove them)."""

from __future__ import annotations

import ast
import concurrent.futures
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = {"transpiler": "srcjax.transpiler", "codegen": "srcjax.codegen", "runtime": "srcjax.runtime",
           "srcjax": "srcjax"}


def modules(folder: str) -> dict[str, pathlib.Path]:
    """Module name -> file, for every module under ``folder``."""
    found = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([FOLDERS[folder], *parts])] = path
    return found


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (imports for annotations only)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)


def imported(path: pathlib.Path, name: str) -> set[str]:
    """The srcjax modules ``path`` (module ``name``) imports anywhere in it (functions included, annotations-only
    imports not), as written: ``from srcjax.codegen.llvm import engine`` gives ``srcjax.codegen.llvm`` and
    ``srcjax.codegen.llvm.engine``."""
    names = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return {n for n in names if n == "srcjax" or n.startswith("srcjax.")}


ALL = {name: path for folder in FOLDERS for name, path in modules(folder).items()}


def _known(name: str) -> str | None:
    while name and name not in ALL:
        name = name.rpartition(".")[0]
    return name or None


def graph(prefix: str) -> dict[str, set[str]]:
    return {
        name: {m for n in imported(path, name) if (m := _known(n)) and m.startswith(prefix) and m != name}
        for name, path in ALL.items()
        if name.startswith(prefix)
    }


@pytest.mark.parametrize("lower, upper", [
    ("srcjax.transpiler", ("srcjax.runtime", "srcjax.codegen")),
    ("srcjax.codegen", ("srcjax.runtime",)),
])
def test_lower_packages_import_nothing_above_them(lower, upper):
    offenders = {
        name: sorted(n for n in imported(path, name) if n.startswith(upper) or n == "srcjax")
        for name, path in ALL.items()
        if name.startswith(lower)
    }
    assert not {k: v for k, v in offenders.items() if v}


def first_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """An import cycle of the graph ``edges`` (as the list of its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_code_generator_has_no_import_cycles():
    cycle = first_cycle(graph("srcjax.codegen"))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


# The front end's modules still import one another (the package, calls, control, frame): the one knot left in the
# transpiler, whose imports among themselves are not counted until it is untied. Every other import counts.
KNOT = "srcjax.transpiler.frontend"


def test_the_transpiler_has_no_import_cycles():
    edges = {name: {m for m in targets if not (name.startswith(KNOT) and m.startswith(KNOT))}
             for name, targets in graph("srcjax.transpiler").items()}
    cycle = first_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.slow
def test_each_code_generator_module_imports_alone():
    script = "import importlib, sys\nimportlib.import_module(sys.argv[1])\n"
    # (scripts run on their own are left out: the child process, the generated loader's template)
    names = [n for n in sorted(modules("codegen")) if not n.endswith(("codegen_worker", "aot_loader"))]
    # (a few at a time: each process spends most of its life importing, waiting on the disk as much as a core)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        runs = pool.map(lambda name: subprocess.run([sys.executable, "-c", script, name], capture_output=True,
                                                    text=True), names)
        failures = {name: run.stderr.strip().splitlines()[-1] for name, run in zip(names, runs) if run.returncode}
    assert not failures
