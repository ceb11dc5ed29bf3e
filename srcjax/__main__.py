"""The ``srcjax`` command.

    srcjax transpile FILE.py:FUNC --args 'f32[3], f32[]' [--emit ir|python|llvm|asm|ptx] [--grad --vmap ...]

prints the IR or the generated Python of FUNC specialised to the argument types. ``--args`` takes a
comma-separated list of ``dtype[shape]`` types (``f32[3,4]``, ``i32[]``, ``bool[5]``) and Python literals
for static arguments; it may be left out when FUNC's parameters are annotated with such strings.
Transformations (``TRANSFORMS``) compose in the order given (``--grad --vmap``: ``vmap(grad(f))``);
``srcjax/transpile.py`` builds their IR. What FILE prints goes to stderr; the output is the source alone.

    srcjax compile FILE.py -o DIR

compiles every ``@jit`` function of FILE that declares signatures (``@srcjax.aot.signatures(...)``) into
``DIR/lib<stem>_aot.so`` and a loader ``DIR/<stem>_aot.py`` that imports only NumPy (``srcjax/aot.py``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import inspect
import os
import re
import runpy
import sys
from typing import Any, Callable

from srcjax.transpiler.types import DTYPES_BY_SHORT_NAME, TensorType


def _argnums(options: argparse.Namespace) -> int | tuple[int, ...]:
    if not options.argnums:
        return 0
    nums = tuple(int(n) for n in options.argnums.split(","))
    return nums[0] if len(nums) == 1 else nums


def _in_axes(options: argparse.Namespace) -> Any:
    if not options.in_axes:
        return 0
    axes = tuple(None if a.strip() == "None" else int(a) for a in options.in_axes.split(","))
    return axes[0] if len(axes) == 1 else axes


# name -> help (``srcjax/transpile.py`` applies them)
TRANSFORMS: dict[str, str] = {
    "grad": "the gradient (reverse mode) with respect to --argnums",
    "value_and_grad": "the value and the gradient",
    "vjp": "the outputs and the vector-Jacobian product: (*args, *out_bars) -> (*outs, *arg_bars)",
    "jvp": "the outputs and the Jacobian-vector product: (*args, *arg_dots) -> (*outs, *out_dots)",
    "vmap": "the function batched over --in-axes (--args gives the batched types)",
    "jacfwd": "the Jacobian by forward mode",
    "jacrev": "the Jacobian by reverse mode",
    "hessian": "the Hessian",
    "pmap": "the program of one replica, collectives over --axis-name included (last; --args: with the device axis)",
}


class _InOrder(argparse.Action):
    """Records the transformation flags in the order given: they compose in that order."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.transforms = [*(getattr(namespace, "transforms", None) or []), self.dest]


_TYPE = re.compile(r"^\s*([a-z]+[0-9]*)\[([0-9,\s]*)\]\s*$")


class UsageError(Exception):
    pass


def parse_type(text: str) -> TensorType | None:
    match = _TYPE.match(text)
    if not match:
        return None
    name, dims = match.groups()
    if name not in DTYPES_BY_SHORT_NAME:
        raise UsageError(f"unknown dtype '{name}' in '{text.strip()}' (known: {', '.join(DTYPES_BY_SHORT_NAME)})")
    shape = tuple(int(d) for d in dims.replace(" ", "").split(",") if d)
    return TensorType(DTYPES_BY_SHORT_NAME[name], shape)


def split_top_level(text: str) -> list[str]:
    """Split at commas that are not inside brackets or parentheses."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return parts


def parse_args_spec(text: str) -> list[Any]:
    out: list[Any] = []
    for part in split_top_level(text):
        typ = parse_type(part)
        if typ is not None:
            out.append(typ)
            continue
        try:
            out.append(ast.literal_eval(part.strip()))
        except (ValueError, SyntaxError):
            raise UsageError(f"cannot read argument '{part.strip()}': expected a type like f32[3] or a Python "
                             "literal") from None
    return out


def args_from_annotations(fn: Callable) -> list[Any]:
    out = []
    for name, param in inspect.signature(fn).parameters.items():
        annotation = param.annotation
        typ = parse_type(annotation) if isinstance(annotation, str) else None
        if typ is None:
            raise UsageError(f"--args is needed: parameter '{name}' of {fn.__name__} has no type annotation like "
                             "'f32[3]'")
        out.append(typ)
    return out


def run_file(path: str, run_name: str) -> dict:
    """Run the file ``path`` as the module ``run_name``; its namespace. Its folder goes first on ``sys.path`` (and
    stays, for the imports its functions make when traced), as for ``python FILE.py``; a file of a package (folders
    holding ``__init__.py``) runs as that package's module (``python -m pkg.mod``), so that its relative imports
    (``from .helpers import g``) work."""
    folder, file = os.path.split(os.path.abspath(path))
    root, package = folder, []
    while os.path.isfile(os.path.join(root, "__init__.py")):
        root, name = os.path.split(root)
        package.insert(0, name)
    stem = file.removesuffix(".py")
    in_package = package and file.endswith(".py") and all(p.isidentifier() for p in [*package, stem])
    sys.path[:0] = [folder, root] if in_package else [folder]
    if in_package and _module_file(".".join([*package, stem])) == os.path.realpath(path):
        return runpy.run_module(".".join([*package, stem]), run_name=run_name)
    return runpy.run_path(path, run_name=run_name)  # (a package of that name imported from elsewhere, say)


def _module_file(name: str) -> str | None:
    """The file the module ``name`` would be run from (its packages imported), or None."""
    try:
        spec = importlib.util.find_spec(name)
    except ImportError:
        return None
    return os.path.realpath(spec.origin) if spec is not None and spec.origin else None


def load_function(spec: str) -> Callable:
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise UsageError(f"expected FILE.py:FUNCTION, got '{spec}'")
    if not os.path.isfile(path):
        raise UsageError(f"{path} is a folder: expected a .py file" if os.path.isdir(path) else f"no such file: {path}")
    with contextlib.redirect_stdout(sys.stderr):  # whatever the module prints is not part of the output
        namespace = run_file(path, "__srcjax_transpile__")
    fn: Any = namespace
    for part in name.split("."):
        fn = fn.get(part) if isinstance(fn, dict) else getattr(fn, part, None)
        if fn is None:
            raise UsageError(f"{path} has no function '{name}'")
    return getattr(fn, "__srcjax_inline__", fn)


def transpile(options: argparse.Namespace) -> str:
    """The text ``srcjax transpile`` prints. What the user's module prints while it loads or is traced goes
    to stderr: the output is the generated source alone."""
    import srcjax  # noqa: F401 - loads the runtime (arrays, numpy) that compiled code runs with
    from srcjax import transpile as transform_ir

    with contextlib.redirect_stdout(sys.stderr):
        fn = load_function(options.target)
        args = parse_args_spec(options.args) if options.args is not None else args_from_annotations(fn)
        _check_arity(fn, args)
        ir = transform_ir.transformed(fn, args, options.transforms, argnums=_argnums(options),
                                      in_axes=_in_axes(options), has_aux=options.has_aux,
                                      axis_name=options.axis_name)
        return _emit(ir, options.emit, options.arch)


def _check_arity(fn: Callable, args: list[Any]) -> None:
    """One line naming the parameters when --args gives too few or too many arguments."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args)
    except TypeError:
        params = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        needed = sum(p.default is p.empty for p in params)
        if any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values()):
            count = f"at least {needed}"
        else:
            count = f"{needed}" if needed == len(params) else f"{needed} to {len(params)}"
        plural = "" if count == "1" else "s"
        raise UsageError(f"{fn.__name__}({', '.join(p.name for p in params)}) takes {count} argument{plural}; "
                         f"--args gives {len(args)}") from None


def _emit(ir: Any, form: str, arch: str | None = None) -> str:
    from srcjax.transpiler.emit_python import emit_module
    from srcjax.transpiler.emit_spelling import NotEmittable
    from srcjax.transpiler.printer import print_function

    if form == "ir":
        return print_function(ir)
    if form == "python":
        try:
            return emit_module(ir)
        except NotEmittable as e:
            raise UsageError(f"{e}; --emit ir shows the function") from None
    if form == "ptx":
        from srcjax.codegen.llvm.plan import Unsupported
        from srcjax.codegen.ptx import program, target

        try:
            built = program.build(ir, device=True)
        except Unsupported as e:
            raise UsageError(f"{ir.name} does not compile for the GPU: {e}") from None
        if not built.kernels:
            return f"// {ir.name} has no kernels: {built.describe() or 'no steps'}"
        return f"// {built.describe().replace(chr(10), chr(10) + '// ')}\n" + built.ptx(arch or target.DEFAULT_ARCH)
    from srcjax.codegen.llvm.compile import compile_function

    native = compile_function(ir)
    if native is None:
        raise UsageError(f"{ir.name} has operations the native compiler does not handle yet; --emit ir shows them")
    return native.llvm_ir if form == "llvm" else native.assembly()


def _print(text: str) -> None:
    """Print the output; a reader that stops early (``| head``) ends it quietly, as for any command."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # Python flushes stdout again at exit: let that succeed
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="srcjax", description="srcjax: JAX's programming model as a compiler")
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("transpile", help="print the IR or generated Python of a function")
    t.add_argument("target", help="FILE.py:FUNCTION")
    t.add_argument("--args", help="argument types, e.g. 'f32[3], f32[]' (Python literals for static ones)")
    t.add_argument("--emit", choices=["ir", "python", "llvm", "asm", "ptx"], default="python")
    t.add_argument("--arch", help="for --emit ptx: the GPU's compute capability, e.g. sm_80 (default) or sm_90")
    for name, help_text in TRANSFORMS.items():
        t.add_argument(f"--{name.replace('_', '-')}", dest=name, action=_InOrder, nargs=0,
                       help=help_text)
    t.set_defaults(transforms=[])
    t.add_argument("--argnums", help="which arguments to differentiate, e.g. 0 or 0,1 (default 0)")
    t.add_argument("--in-axes", dest="in_axes", help="for --vmap: the mapped axis of each argument, e.g. 0,None")
    t.add_argument("--has-aux", dest="has_aux", action="store_true", help="the function returns (value, aux)")
    t.add_argument("--axis-name", dest="axis_name", help="for --pmap: the axis its collectives name, e.g. i")
    t.epilog = "Transformations compose in the order given: --grad --vmap is vmap(grad(f))."
    c = commands.add_parser("compile", help="compile a file's @jit functions ahead of time into a loadable module")
    c.add_argument("file", help="FILE.py; its @jit functions declare signatures with @srcjax.aot.signatures")
    c.add_argument("-o", "--output", default=".", help="where lib<stem>_aot.so and <stem>_aot.py go (default: .)")
    c.add_argument("--ptx", metavar="ARCHES", help="also write the GPU kernels for these compute capabilities, e.g. "
                   "sm_80,sm_90: PTX, cubins (with CUDA's toolkit) and <stem>_aot_gpu.json")
    options = parser.parse_args(argv)
    from srcjax.codegen.aot import AotError
    from srcjax.codegen.llvm.engine import TargetError
    from srcjax.transpiler.frontend.errors import TranspileError
    from srcjax.transpile import TransformRefused

    try:
        if options.command == "transpile":
            _print(transpile(options))
        elif options.command == "compile":
            from srcjax.aot import compile_file

            arches = tuple(a.strip() for a in options.ptx.split(",") if a.strip()) if options.ptx else ()
            _print(compile_file(options.file, options.output, gpu_arches=arches))
    except (UsageError, TranspileError, AotError, TransformRefused, TargetError) as e:  # (TargetError: SRCJAX_CPU)
        print(f"srcjax: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
