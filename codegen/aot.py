"""Ahead-of-time modules: compiled specialisations -> one shared library and a loader that needs only NumPy.

For a source file ``stem.py`` this writes, into the output directory:

- ``libstem_aot.so``: every specialisation's entry ``void <symbol>(i8** buffers)`` (inputs, constants, outputs:
  see ``codegen/llvm/compile.py``), compiled position-independent for the host CPU; the thread runtime
  ``srcjax_parallel`` where a nest runs on threads; and for each BLAS routine the code calls
  (``srcjax_sgemm``, ...) a trampoline through a pointer ``srcjax_<routine>_address`` that the loader sets,
  so the library is linked without knowing which BLAS the loading process will find. Only the entries
  and those pointers are exported (a version script), so two such libraries never bind to each other.
- ``stem_aot.npz``: the IR's constants, passed to the entries as buffers (absent when there are none).
- ``stem_aot.py``: the loader, ``codegen/aot_loader.py`` followed by the metadata (signatures, output
  types and pytree structures, the CPU features the code assumes) and one function per compiled function.

Whatever the library could not do without the compiling process is an error here, never a slower path:
what the native backend does not compile, and code that calls a symbol the C library does not provide or
holds an address of this process (a call back into Python).
"""

from __future__ import annotations

import ast
import ctypes
import ctypes.util
import hashlib
import os
import pprint
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite.ir as ir
import numpy as np

from srcjax.transpiler.ir import Function
from srcjax.transpiler.trees import tree_unflatten
from srcjax.transpiler.types import TensorType


class AotError(Exception):
    """Something in the file cannot be compiled ahead of time (the message says what and where)."""


@dataclass
class Specialisation:
    """One function at one signature: its IR, the signature's arguments (``TensorType`` for an array, any
    other value for a static argument baked into the code; the IR's parameters may have narrower dtypes) and
    the pytree structure of its results."""

    function: str
    signature: str
    ir: Function
    args: list[Any]
    out_tree: Any


# -- pytrees and arguments as JSON ---------------------------------------------------------------------------
class _Leaf:
    def __init__(self, index: int):
        self.index = index


def output_structure(out_tree: Any, count: int, where: str) -> Any:
    """The results' pytree as JSON: a leaf's index, ``{"tuple"|"list": [...]}``, ``{"dict": [[key, tree]]}``
    or null; other node types (namedtuples, registered classes) are an error naming ``where``."""

    def encode(node: Any) -> Any:
        if isinstance(node, _Leaf):
            return node.index
        if node is None:
            return None
        if type(node) in (tuple, list):
            return {type(node).__name__: [encode(child) for child in node]}
        if type(node) is dict:
            for key in node:
                if not isinstance(key, (str, int)) and key is not None:
                    raise AotError(
                        f"{where}: returns a dict with key {key!r}; ahead-of-time modules return dicts "
                        "keyed by strings or numbers"
                    )
            return {"dict": [[key, encode(child)] for key, child in node.items()]}
        raise AotError(
            f"{where}: returns a {type(node).__name__}; ahead-of-time modules return arrays in tuples, "
            "lists, dicts and None (convert it before returning)"
        )

    return encode(tree_unflatten(out_tree, [_Leaf(i) for i in range(count)]))


def _params(spec: Specialisation, where: str) -> list[dict]:
    """Per argument: the array type the loader accepts and the dtype it converts it to (the parameter's, which
    may be narrower), or the static value's literal."""
    params = iter(spec.ir.params)
    return [
        {"dtype": np.dtype(a.dtype).name, "shape": list(a.shape), "as": np.dtype(next(params).aval.dtype).name}
        if isinstance(a, TensorType)
        else _param(a, where)
        for a in spec.args
    ]


def _param(arg: Any, where: str) -> dict:
    try:
        if ast.literal_eval(repr(arg)) == arg:
            return {"static": repr(arg)}
    except (ValueError, SyntaxError):
        pass
    raise AotError(
        f"{where}: the static argument {arg!r} is not a Python literal (numbers, strings, booleans, "
        "None and tuples of them)"
    )


# -- compiling ------------------------------------------------------------------------------------------------
@dataclass
class _Entry:
    spec: Specialisation
    symbol: str
    code: bytes
    externals: list[str]
    blas: dict[str, ir.FunctionType]  # BLAS symbol -> its type as declared
    consts: list[np.ndarray]
    meta: dict  # the loader's description of this entry


def _system_symbols() -> list[ctypes.CDLL]:
    libraries = [ctypes.CDLL(None)]
    for name in ("m", "pthread"):
        path = ctypes.util.find_library(name)
        if path:
            try:
                libraries.append(ctypes.CDLL(path))
            except OSError:
                pass
    return libraries


def _resolves(symbol: str, libraries: list[ctypes.CDLL]) -> bool:
    return any(hasattr(library, symbol) for library in libraries)


# an address of this process baked into the code: a constant pointer above the first pages
_ADDRESS = re.compile(r"inttoptr \(i64 (\d{5,}) to")


def _compile_entry(spec: Specialisation, symbol: str, libraries: list[ctypes.CDLL]) -> _Entry:
    from srcjax.codegen.llvm import blas, engine, interrupt, pool
    from srcjax.codegen.llvm.compile import emit_entry, plan_function
    from srcjax.codegen.llvm.plan import Unsupported

    where = f"{spec.function}({spec.signature})"
    meta = {
        "signature": spec.signature,
        "symbol": symbol,
        "params": _params(spec, where),
        "inputs": [p.name for p in spec.ir.params],
        "outputs": [{"dtype": np.dtype(r.aval.dtype).name, "shape": list(r.aval.shape)} for r in spec.ir.results],
        "tree": output_structure(spec.out_tree, len(spec.ir.results), where),
    }
    try:
        plan = plan_function(spec.ir, blas.gemm_dtypes())
        host = getattr(plan, "host_ops", None)
        if host:  # (ops the JIT computes by calling back into NumPy: codegen/llvm/host.py)
            names = ", ".join(sorted({f"'{op.name}'" for op in host}))
            raise Unsupported(f"{names} has no native lowering (the JIT calls back into Python for it)")
        module = engine.new_module(symbol)
        # (the library's BLAS is bound by the loader, without its thread controls: products are not split)
        emit_entry(module, plan, symbol, python_entry=False, split_blas=False)
    except Unsupported as e:
        raise AotError(f"{where}: cannot be compiled ahead of time: {e}") from None
    found = blas.find_gemm()
    blas_names = {s.replace("gemm", routine) for s in (found.symbols.values() if found else ())
                  for routine in ("gemm", "syrk", "gemv")}
    declared = {g.name: g.ftype for g in module.functions if g.is_declaration and g.name in blas_names}
    obj = engine.compile_to_object(module, 3, pic=True)
    for name in obj.externals:
        ours = (pool.PARALLEL, interrupt.COUNTER)  # (linked into the library)
        if name not in declared and name not in ours and not _resolves(name, libraries):
            raise AotError(
                f"{where}: the compiled code calls '{name}', which only the compiling process provides "
                "(a call back into Python?): it cannot run from a shared library"
            )
    for match in _ADDRESS.finditer(obj.llvm_ir):
        if int(match.group(1)) >= 1 << 16:
            raise AotError(
                f"{where}: the compiled code holds an address of the compiling process "
                f"({hex(int(match.group(1)))}): it cannot run from a shared library"
            )
    consts = [np.ascontiguousarray(data, buffer.dtype) for buffer, data in plan.consts]
    meta["constants"] = [f"{symbol}_{j}" for j in range(len(consts))]
    return _Entry(spec, symbol, obj.code, obj.externals, declared, consts, meta)


def _runtime_object() -> bytes:
    """The thread runtime ``srcjax_parallel``, emitted by codegen/llvm/pool.py."""
    from srcjax.codegen.llvm import engine, pool

    module = engine.new_module("srcjax_aot_runtime")
    pool.emit_runtime(module, host_flag=False)
    return engine.compile_to_object(module, 2, pic=True).code


def _blas_object(routines: dict[str, ir.FunctionType]) -> bytes:
    """``srcjax_<routine>(...)``: a tail call through the pointer ``srcjax_<routine>_address``."""
    from srcjax.codegen.llvm import engine

    module = engine.new_module("srcjax_aot_blas")
    for name, ftype in sorted(routines.items()):
        pointer = ir.GlobalVariable(module, ftype.as_pointer(), name=f"{name}_address")
        pointer.initializer = ir.Constant(ftype.as_pointer(), None)
        fn = ir.Function(module, ftype, name=name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.call(b.load(pointer), fn.args, tail=True)
        b.ret_void()
    return engine.compile_to_object(module, 2, pic=True).code


CALL = "srcjax_aot_call"
BUILD = "srcjax_aot_build"


def _call_object(build: bytes) -> bytes:
    """``srcjax_aot_call(entry, tuple, count, item_offset, data_offset)``: calls ``entry`` with the data pointers
    of the ``count`` NumPy arrays in a Python tuple, read at the offsets the loader measured in its own
    interpreter (so the library does not depend on one); the loader falls back to building the pointer array
    itself (a few microseconds per array) where it cannot measure them. ``srcjax_aot_build``: the bytes
    ``build``, which the loader checks against its own (a loader and a library of different builds, as a stale
    ``__pycache__`` gives, would pass arrays of the wrong sizes)."""
    from srcjax.codegen.llvm import engine, interrupt
    from srcjax.codegen.llvm.kernels import I64, PTR, for_range

    module = engine.new_module("srcjax_aot_call")
    stamp = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), len(build)), name=BUILD)
    stamp.initializer, stamp.global_constant = ir.Constant(stamp.type.pointee, bytearray(build)), True
    # the count of SIGINTs compiled loops read (codegen/llvm/interrupt.py): nothing counts them in a library
    count = interrupt.counter(module)
    count.initializer, count.visibility = ir.Constant(I64, 0), "hidden"
    entry_type = ir.FunctionType(ir.VoidType(), [PTR.as_pointer()])
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [entry_type.as_pointer(), PTR, I64, I64, I64]), name=CALL)
    entry, items, count, item_offset, data_offset = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    array = b.alloca(PTR, count)

    def pointer(i):
        item = b.load(b.bitcast(b.gep(items, [b.add(item_offset, b.mul(i, ir.Constant(I64, 8)))]), PTR.as_pointer()))
        data = b.load(b.bitcast(b.gep(item, [data_offset]), PTR.as_pointer()))
        b.store(data, b.gep(array, [i]))

    for_range(b, ir.Constant(I64, 0), count, pointer)
    b.call(entry, [array])
    b.ret_void()
    return engine.compile_to_object(module, 2, pic=True).code


def find_c_compiler() -> str | None:
    """``$CC``, else the first of cc, gcc, clang on the PATH."""
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def _link(objects: list[bytes], exports: list[str], output: Path, work: Path) -> None:
    compiler = find_c_compiler()
    if compiler is None:
        raise AotError(
            "no C compiler found ($CC, cc, gcc or clang on the PATH): one is needed to link the shared "
            "library (install gcc)"
        )
    paths = []
    for i, code in enumerate(objects):
        paths.append(work / f"part{i}.o")
        paths[-1].write_bytes(code)
    command = [compiler, "-shared", "-o", str(output), *map(str, paths)]
    if sys.platform.startswith("linux"):
        script = work / "exports.map"
        script.write_text("{\n  global:\n" + "".join(f"    {name};\n" for name in exports) + "  local: *;\n};\n")
        command += [f"-Wl,--version-script={script}", "-Wl,-Bsymbolic"]
    command += ["-lpthread", "-lm"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AotError(f"linking {output.name} failed ({' '.join(command)}):\n{result.stderr.strip()}")


# -- the whole module -----------------------------------------------------------------------------------------
def module_stem(source: str | os.PathLike) -> str:
    """The loader's module name for a source file: ``<stem>_aot``, made an identifier."""
    stem = re.sub(r"\W", "_", Path(source).stem)
    return f"{'_' + stem if stem[:1].isdigit() else stem}_aot"


def build(specs: list[Specialisation], source: str | os.PathLike, directory: str | os.PathLike) -> Path:
    """Compile ``specs`` (of the file ``source``) into ``directory``; returns the loader's path."""
    from srcjax.codegen.llvm import pool

    name = module_stem(source)
    clashes = sorted({s.function for s in specs} & reserved_names())
    if clashes:
        raise AotError(f"{Path(source).name}: the loader uses the name(s) {', '.join(clashes)} itself: rename them")
    libraries = _system_symbols()
    entries = []
    for i, spec in enumerate(specs):
        symbol = f"srcjax_aot_{re.sub(r'[^0-9A-Za-z_]', '_', spec.function)}_{i}"
        entries.append(_compile_entry(spec, symbol, libraries))
    routines = {n: t for e in entries for n, t in e.blas.items() if n in e.externals}
    meta = _metadata(name, entries, sorted(routines))
    build = hashlib.sha256(repr(meta).encode() + b"".join(e.code + b"".join(c.tobytes() for c in e.consts)
                                                          for e in entries)).digest()[:16]
    meta["build"] = build.hex()
    objects = [e.code for e in entries] + [_call_object(build)]
    if any(pool.PARALLEL in e.externals for e in entries):
        objects.append(_runtime_object())
    if routines:
        objects.append(_blas_object(routines))
    exports = [e.symbol for e in entries] + [CALL, BUILD] + [f"{n}_address" for n in routines]

    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AotError(f"cannot make the output folder {directory}: {e.strerror}") from None
    with tempfile.TemporaryDirectory(prefix="srcjax-aot-") as work:
        _link(objects, exports, Path(work) / meta["library"], Path(work))
        os.replace(Path(work) / meta["library"], directory / meta["library"])
    constants = {key: data for e in entries for key, data in zip(e.meta["constants"], e.consts)}
    if constants:
        with open(directory / meta["constants"], "wb") as f:
            np.savez(f, **constants)
    else:
        (directory / f"{name}.npz").unlink(missing_ok=True)  # (an earlier build's)
    loader = directory / f"{name}.py"
    loader.write_text(loader_source(meta, source))
    for stale in (directory / "__pycache__").glob(f"{name}.*.pyc"):  # (an earlier build's, if this one is written
        stale.unlink(missing_ok=True)  # in the same second and size, Python would take it for this one's)
    return loader


def write_gpu(specs: list[Specialisation], source: str | os.PathLike, directory: str | os.PathLike,
              arches: tuple[str, ...], log=None) -> list[Path]:
    """Beside the CPU library: per specialisation the GPU backend compiles, ``<stem>_aot.<symbol>.<arch>.ptx``,
    the ``.cubin`` that ptxas makes of it (where CUDA's toolkit is installed), and ``<stem>_aot_gpu.json``, the
    steps that run them (kernel launches with their grids and buffers, cuBLAS products). Specialisations with
    control flow or host calls run on the CPU, and are listed there as such."""
    import json

    from srcjax.codegen.llvm.plan import Gemm, Unsupported
    from srcjax.codegen.ptx import program, target

    directory = Path(directory)
    name, written, manifest = module_stem(source), [], {}
    for i, spec in enumerate(specs):
        symbol = f"srcjax_aot_{re.sub(r'[^0-9A-Za-z_]', '_', spec.function)}_{i}"
        try:
            built = program.build(spec.ir, device=True, name=symbol)
        except Unsupported as why:
            manifest[symbol] = {"function": spec.function, "signature": spec.signature, "cpu": str(why)}
            continue
        steps = []
        for step in built.steps:
            if isinstance(step, Gemm):
                steps.append({"cublas": [step.batch, step.m, step.n, step.k], "dtype": step.target.dtype.name})
            else:
                steps.append({"kernel": step.name, "kind": step.kind, "grid": list(step.grid), "block": step.block,
                              "buffers": [f"{b.kind}{b.index}" for b in step.buffers]})
        manifest[symbol] = {"function": spec.function, "signature": spec.signature, "steps": steps}
        for arch in arches:
            ptx = built.ptx(arch)
            path = directory / f"{name}.{symbol}.{arch}.ptx"
            path.write_text(ptx)
            written.append(path)
            if target.ptxas_path() is not None:
                cubin = directory / f"{name}.{symbol}.{arch}.cubin"
                try:
                    cubin.write_bytes(target.assemble(ptx, arch))
                except target.GpuToolchainError as e:
                    raise AotError(f"{spec.function}({spec.signature}): {e}") from None
                written.append(cubin)
    (directory / f"{name}_gpu.json").write_text(json.dumps(manifest, indent=1))
    if log is not None:
        print(f"srcjax compile: GPU kernels for {', '.join(arches)}: {len(written)} files in {directory}", file=log)
    return written


def _metadata(name: str, entries: list[_Entry], routines: list[str]) -> dict:
    """What the loader needs besides the library: see ``codegen/aot_loader.py``."""
    from srcjax.codegen.llvm import blas, engine

    functions: dict[str, list[dict]] = {}
    for e in entries:
        functions.setdefault(e.spec.function, []).append(e.meta)
    found = blas.find_gemm()
    return {
        "library": f"lib{name}.so",  # (not ``{name}.so``: Python would import it instead of the loader)
        "constants": f"{name}.npz" if any(e.consts for e in entries) else None,
        "triple": engine.target_machine().triple,
        "cpu_features": _cpu_features(),
        "blas": {"routines": [r.removeprefix("srcjax_") for r in routines], "candidates": _blas_candidates(found)}
        if routines
        else None,
        "functions": functions,
    }


def _cpu_features() -> list[str]:
    """The CPU features the code was compiled with that a loading machine must have: those of the target whose
    instructions LLVM may emit (``aot_loader._CPU_FLAGS``; the host's extensions included, as AVX-512's
    vpopcntd: ``SRCJAX_CPU`` compiles for a level instead, that every machine of the level runs)."""
    from srcjax.codegen.aot_loader import _CPU_FLAGS
    from srcjax.codegen.llvm import engine

    return [name for name in _CPU_FLAGS if name in engine.target().enabled]


def _blas_candidates(found) -> list[list[str]]:
    """(library file pattern, symbol format with {t} and {r}) of the CBLAS builds with the integer width the
    code was compiled for, the one found here first."""
    from srcjax.codegen.llvm import blas

    candidates = [
        [pattern, symbol.replace("gemm", "{r}")] for pattern, symbol, bits in blas._CANDIDATES if bits == found.int_bits
    ]
    here = found.origin.rsplit(":", 1)[1].replace("gemm", "{r}").replace("s{r}", "{t}{r}", 1)
    candidates.sort(key=lambda c: c[1] != here)
    return candidates


def _loader_runtime() -> str:
    text = Path(__file__).with_name("aot_loader.py").read_text()
    return text[text.index("\n# -- runtime") + 1 :]


def reserved_names() -> set[str]:
    """Names the loader defines itself: a compiled function cannot have one of them."""
    names = {"_META"}
    for node in ast.parse(_loader_runtime()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _docstring_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def loader_source(meta: dict, source: str | os.PathLike) -> str:
    """The loader module: a docstring listing the functions, the runtime, the metadata, the functions."""
    signatures = {f: [_docstring_text(s["signature"]) for s in specs] for f, specs in meta["functions"].items()}
    lines = [f'"""Compiled ahead of time by srcjax from {_docstring_text(Path(source).name)}; needs only NumPy.', ""]
    lines += [f"    {function}({s})" for function, texts in signatures.items() for s in texts]
    lines += ['"""', "", "# generated by `python -m srcjax compile`: do not edit", "", _loader_runtime().rstrip()]
    lines += ["", "", f"_META = {pprint.pformat(meta, width=116, sort_dicts=True)}", "_functions.update(_load(_META))"]
    for function, texts in signatures.items():
        lines += ["", "", f"def {function}(*args):", f'    """{function} compiled for: {"; ".join(texts)}"""']
        lines += [f"    return _call({function!r}, args)"]
    return "\n".join(lines) + "\n"
