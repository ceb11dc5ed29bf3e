"""Ahead-of-time compilation: declare a jitted function's signatures, compile a file into a loadable module.

    from srcjax import aot, jit

    @aot.signatures("f32[1000], f32[]", "f64[3,3], f64[]")
    @jit
    def scale(x, a):
        return a * x

``python -m srcjax compile FILE.py -o DIR`` (``compile_file``) compiles every such function at every
declared signature into ``DIR/lib<stem>_aot.so`` plus a loader ``DIR/<stem>_aot.py`` that imports only NumPy:
``from <stem>_aot import scale``. A signature lists the positional arguments as for ``transpile --args``:
types like ``f32[3,4]`` for arrays, Python literals for static arguments (compiled in; the loaded function
accepts exactly that value there). As under ``jit``, 64-bit arguments compute in 32 bits unless the file turns
``jax_enable_x64`` on. The library itself is built by ``codegen/aot.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

from srcjax.codegen.aot import AotError, Specialisation, build, find_c_compiler  # noqa: F401 - part of this API
from srcjax.runtime.api import Jitted

__all__ = ["AotError", "compile_file", "find_c_compiler", "signatures"]


def _parse(spec: str) -> list[Any]:
    from srcjax.__main__ import parse_args_spec

    if not isinstance(spec, str):
        raise TypeError(f"a signature is a string like 'f32[3], f32[]', got {spec!r}")
    try:
        return parse_args_spec(spec)
    except Exception as e:  # noqa: BLE001 - the command line's UsageError, whichever module object raised it
        raise ValueError(f"bad signature '{spec}': {e}") from None


def signatures(*specs: str) -> Callable[[Jitted], Jitted]:
    """Declare the signatures ``python -m srcjax compile`` compiles a ``@jit`` function for (above ``@jit``)."""
    for spec in specs:
        _parse(spec)

    def declare(fn: Jitted) -> Jitted:
        if not isinstance(fn, Jitted):
            raise TypeError(
                f"@aot.signatures goes above @jit: it got {getattr(fn, '__name__', fn)!r}, which is "
                "not a jit-compiled function"
            )
        fn.__srcjax_signatures__ = tuple(getattr(fn, "__srcjax_signatures__", ())) + specs
        return fn

    return declare


def _functions(namespace: dict, module_name: str) -> list[tuple[str, Jitted]]:
    """The ``@jit`` functions defined in the file (not imported into it), in order, once each."""
    seen, out = set(), []
    for name, value in namespace.items():
        if isinstance(value, Jitted) and id(value) not in seen and getattr(value.fn, "__module__", None) == module_name:
            seen.add(id(value))
            out.append((name, value))
    return out


def _specialise(name: str, fn: Jitted, spec: str, path: str) -> Specialisation:
    from srcjax.runtime.dtypes import canonicalize_dtype
    from srcjax.transpiler.frontend.calls import trace_function
    from srcjax.transpiler.frontend.errors import TranspileError
    from srcjax.transpiler.types import TensorType

    where = f"{os.path.basename(path)}: {name}({spec})"
    try:
        args = _parse(spec)
    except ValueError as e:
        raise AotError(f"{where}: {e}") from None
    for i in fn._static_argnums_with_names(args):  # (static_argnames included)
        if i < len(args) and isinstance(args[i], TensorType):
            raise AotError(
                f"{where}: argument {i} is static (static_argnums or static_argnames), so the signature gives a "
                f"value for it, not the type {args[i]}"
            )
    # the types jit would compile for such arguments: 64-bit ones narrow unless jax_enable_x64 is on (the file
    # may turn it on); the loader converts what it accepts to them
    traced = [TensorType(canonicalize_dtype(a.dtype), a.shape) if isinstance(a, TensorType) else a for a in args]
    try:
        ir, out_tree = trace_function(fn.fn, traced, name=name)
    except TranspileError as e:
        raise AotError(f"{where}:\n{e}") from None
    except TypeError as e:  # (a call with the wrong number of arguments)
        raise AotError(f"{where}: {e}") from None
    return Specialisation(name, spec, ir, args, out_tree)


def compile_file(path: str | os.PathLike, directory: str | os.PathLike, log=sys.stderr,
                 gpu_arches: tuple[str, ...] = ()) -> Path:
    """Compile every ``@jit`` function of ``path`` that declares signatures into ``directory``; the loader's
    path. Functions without signatures are skipped with a note on ``log``. ``gpu_arches`` (``sm_80``, ...): also
    write each specialisation's GPU kernels there (``codegen.aot.write_gpu``)."""
    from srcjax.__main__ import run_file

    path = str(path)
    wrong = [arch for arch in gpu_arches if not re.fullmatch(r"sm_[0-9]{2,3}[af]?", arch)]
    if wrong:
        raise AotError(f"{', '.join(map(repr, wrong))}: expected GPU compute capabilities like sm_80 or sm_90")
    if not os.path.isfile(path):
        raise AotError(f"{path} is a folder: expected a .py file" if os.path.isdir(path) else f"no such file: {path}")
    run_name, saved_path = "__srcjax_compile__", list(sys.path)
    try:  # (the file's folder is on sys.path while it runs and is traced)
        with contextlib.redirect_stdout(log):  # (whatever the module prints is not part of the output)
            namespace = run_file(path, run_name)
        specs = []
        for name, fn in _functions(namespace, run_name):
            declared = getattr(fn, "__srcjax_signatures__", ())
            if not declared:
                print(f"srcjax compile: skipping {name}: no signatures (add @srcjax.aot.signatures(...) above @jit)",
                      file=log)
            specs += [_specialise(name, fn, spec, path) for spec in declared]
    finally:
        sys.path[:] = saved_path
    if not specs:
        raise AotError(
            f"{path} has no @jit function with declared signatures: put "
            "@srcjax.aot.signatures('f32[3], f32[]', ...) above @jit on the functions to compile"
        )
    loader = build(specs, path, directory)
    if gpu_arches:
        from srcjax.codegen.aot import write_gpu

        write_gpu(specs, path, directory, gpu_arches, log)
    return loader
