"""The ``srcjax`` command.

    srcjax transpile FILE.py:FUNC --args 'f32[3], f32[]' [--emit ir|python]

prints the IR or the generated Python of FUNC specialised to the argument types. ``--args`` takes a
comma-separated list of ``dtype[shape]`` types (``f32[3,4]``, ``i32[]``, ``bool[5]``) and Python literals
for static arguments; it may be left out when FUNC's parameters are annotated with such strings.
Transformations (``--grad``, ``--vmap``, ...) are listed in ``TRANSFORMS`` as they are built.

    srcjax compile FILE.py -o DIR

compiles every ``@jit`` function of FILE that declares signatures (``@srcjax.aot.signatures(...)``) into
``DIR/lib<stem>_aot.so`` and a loader ``DIR/<stem>_aot.py`` that imports only NumPy (``srcjax/aot.py``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import os
import re
import runpy
import sys
from typing import Any, Callable

from srcjax.transpiler.types import DTYPES_BY_SHORT_NAME, TensorType

def _argnums(options: argparse.Namespace) -> int | tuple[int, ...]:
    nums = tuple(int(n) for n in options.argnums.split(",")) if options.argnums else (0,)
    return nums[0] if len(nums) == 1 and options.argnums is None or (options.argnums and "," not in options.argnums
                                                                      and len(nums) == 1) else nums


def _in_axes(options: argparse.Namespace) -> Any:
    if not options.in_axes:
        return 0
    axes = tuple(None if a.strip() == "None" else int(a) for a in options.in_axes.split(","))
    return axes[0] if len(axes) == 1 else axes


def _transform(name: str) -> Callable[[Callable, argparse.Namespace], Callable]:
    def make(fn: Callable, options: argparse.Namespace) -> Callable:
        import srcjax

        argnums = _argnums(options)
        if name == "grad":
            return srcjax.grad(fn, argnums=argnums, has_aux=options.has_aux)
        if name == "value_and_grad":
            return srcjax.value_and_grad(fn, argnums=argnums, has_aux=options.has_aux)
        if name in ("jacfwd", "jacrev", "hessian"):
            return getattr(srcjax, name)(fn, argnums=argnums)
        if name == "vmap":
            return srcjax.vmap(fn, in_axes=_in_axes(options))
        if name == "jvp":
            return lambda *args: srcjax.jvp(fn, args, args)
        if name == "vjp":
            def vjp_fn(*args):
                out, f_vjp = srcjax.vjp(fn, *args)
                return out, f_vjp(out)

            return vjp_fn
        raise UsageError(f"unknown transformation {name}")

    return make


# name -> (help, function(fn, options) -> transformed fn)
TRANSFORMS: dict[str, tuple[str, Callable[[Callable, argparse.Namespace], Callable]]] = {
    "grad": ("the gradient (reverse mode) with respect to --argnums", _transform("grad")),
    "vmap": ("the function batched over --in-axes (--args gives the batched types)", _transform("vmap")),
    "value_and_grad": ("the value and the gradient", _transform("value_and_grad")),
    "vjp": ("the vector-Jacobian product, with the output as cotangent", _transform("vjp")),
    "jvp": ("the Jacobian-vector product, with the input as tangent", _transform("jvp")),
    "jacfwd": ("the Jacobian by forward mode", _transform("jacfwd")),
    "jacrev": ("the Jacobian by reverse mode", _transform("jacrev")),
    "hessian": ("the Hessian", _transform("hessian")),
}

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


def load_function(spec: str) -> Callable:
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise UsageError(f"expected FILE.py:FUNCTION, got '{spec}'")
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    with contextlib.redirect_stdout(sys.stderr):  # whatever the module prints is not part of the output
        namespace = runpy.run_path(path, run_name="__srcjax_transpile__")
    fn: Any = namespace
    for part in name.split("."):
        fn = fn.get(part) if isinstance(fn, dict) else getattr(fn, part, None)
        if fn is None:
            raise UsageError(f"{path} has no function '{name}'")
    return getattr(fn, "__srcjax_inline__", fn)


def transpile(options: argparse.Namespace) -> str:
    from srcjax.transpiler.frontend.calls import trace_function

    import srcjax  # noqa: F401 - loads the runtime (arrays, numpy) that compiled code runs with

    fn = load_function(options.target)
    args = parse_args_spec(options.args) if options.args is not None else args_from_annotations(fn)
    name = fn.__name__
    if (options.grad or options.value_and_grad) and not options.has_aux:
        return _emit(_reverse_mode(fn, args, options), options.emit)
    for transform in TRANSFORMS:
        if getattr(options, transform, False):
            fn = TRANSFORMS[transform][1](fn, options)
            name = f"{transform}_{name}"
    ir, _ = trace_function(fn, args, name=name)
    return _emit(ir, options.emit)


def _emit(ir: Any, form: str) -> str:
    from srcjax.transpiler.emit_python import emit_module
    from srcjax.transpiler.printer import print_function

    if form == "ir":
        return print_function(ir)
    if form == "python":
        return emit_module(ir)
    from srcjax.codegen.llvm.compile import compile_function

    native = compile_function(ir)
    if native is None:
        raise UsageError(f"{ir.name} has operations the native compiler does not handle yet; --emit ir shows them")
    return native.llvm_ir if form == "llvm" else native.assembly()


def _reverse_mode(fn: Callable, args: list[Any], options: argparse.Namespace):
    """``--grad``/``--value-and-grad`` as the reverse-mode transform of the function's IR itself, so the
    printed code keeps its forward and backward sections."""
    from srcjax.transpiler.frontend.calls import trace_function
    from srcjax.transpiler.ir import Function
    from srcjax.transpiler.passes import clean
    from srcjax.transpiler.transforms.vjp import vjp_function

    ir, _ = trace_function(fn, args)
    if len(ir.results) != 1 or ir.results[0].aval.shape != ():
        raise UsageError(f"--grad needs a function with one scalar output; {fn.__name__} returns "
                         f"{', '.join(str(r.aval) for r in ir.results)}")
    argnums = _argnums(options)
    nums = {argnums} if isinstance(argnums, int) else set(argnums)
    wrt = [i in nums for i in range(len(ir.params))]
    grad = vjp_function(ir, wrt, seed_ones=True)
    results = grad.results if options.value_and_grad else grad.results[1:]
    prefix = "value_and_grad" if options.value_and_grad else "grad"
    trimmed = Function(f"{prefix}_{fn.__name__}", grad.params, type(grad.body)(grad.body.params, grad.body.ops,
                       list(results)), grad.consts, grad.source, sections=grad.sections)
    return clean(trimmed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="srcjax", description="srcjax: JAX's programming model as a compiler")
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("transpile", help="print the IR or generated Python of a function")
    t.add_argument("target", help="FILE.py:FUNCTION")
    t.add_argument("--args", help="argument types, e.g. 'f32[3], f32[]' (Python literals for static ones)")
    t.add_argument("--emit", choices=["ir", "python", "llvm", "asm"], default="python")
    for name, (help_text, _) in TRANSFORMS.items():
        t.add_argument(f"--{name.replace('_', '-')}", dest=name, action="store_true", help=help_text)
    t.add_argument("--argnums", help="which arguments to differentiate, e.g. 0 or 0,1 (default 0)")
    t.add_argument("--in-axes", dest="in_axes", help="for --vmap: the mapped axis of each argument, e.g. 0,None")
    t.add_argument("--has-aux", dest="has_aux", action="store_true", help="the function returns (value, aux)")
    c = commands.add_parser("compile", help="compile a file's @jit functions ahead of time into a loadable module")
    c.add_argument("file", help="FILE.py; its @jit functions declare signatures with @srcjax.aot.signatures")
    c.add_argument("-o", "--output", default=".", help="where lib<stem>_aot.so and <stem>_aot.py go (default: .)")
    options = parser.parse_args(argv)
    from srcjax.codegen.aot import AotError
    from srcjax.transpiler.frontend.errors import TranspileError

    try:
        if options.command == "transpile":
            print(transpile(options))
        elif options.command == "compile":
            from srcjax.aot import compile_file

            print(compile_file(options.file, options.output))
    except (UsageError, TranspileError, AotError) as e:
        print(f"srcjax: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
