"""llvmlite set-up for the target CPU: the target machine, the -O3 pipeline, one JIT engine, IR and assembly text.

The target is the host CPU unless ``SRCJAX_CPU`` names an x86-64 microarchitecture level (``x86-64``,
``x86-64-v2`` = SSE4.2, ``x86-64-v3`` = AVX2 + FMA, ``x86-64-v4`` = AVX-512) that the host can run: code
compiled for a baseline runs on every machine of that level, and the test suite compiles for one so that no
test depends on the features of the machine it happens to run on.

llvmlite 0.50 wraps LLVM 22: targets are initialised explicitly (``llvm.initialize()`` is gone) and only the
new pass manager exists. Everything is created on first use, so importing this module costs nothing.
One MCJIT engine holds every compiled module of the process; a module's machine code lives as long as
the process (compiled functions are cached by their callers, so modules are few).

Object code is the common currency of the disk cache and the ahead-of-time compiler: ``compile_to_object``
optimises a module and emits it (for the JIT's loader, or position-independent for a shared library),
``load_object`` hands such code to the JIT and returns its functions' addresses.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Sequence

import llvmlite.binding as llvm
import llvmlite.ir as ir

_lock = threading.RLock()  # LLVM's context and MCJIT are not thread-safe: one user at a time (re-entered)
_state: dict[str, object] = {}

# The x86-64 psABI's microarchitecture levels: LLVM's CPU name -> the features (LLVM's names) it adds to the
# level before it. Each level's features are those of every level up to it.
_LEVELS = {
    "x86-64": ("sse", "sse2", "cx8", "cmov", "fxsr", "mmx"),
    "x86-64-v2": ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"),
    "x86-64-v3": ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"),
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}


class TargetError(ValueError):
    """``SRCJAX_CPU`` names no target this machine can compile for and run."""


@dataclass(frozen=True)
class Target:
    """The CPU code is compiled for: LLVM's CPU name, the feature string the target machine gets, and the
    features the code may use."""

    cpu: str
    features: str
    enabled: frozenset[str]


def _choose_target() -> Target:
    host = llvm.get_host_cpu_features()
    host_enabled = frozenset(name for name, on in host.items() if on)
    chosen = os.environ.get("SRCJAX_CPU", "").strip() or "host"
    if chosen == "host":
        return Target(llvm.get_host_cpu_name(), host.flatten(), host_enabled)
    if chosen not in _LEVELS:
        raise TargetError(f"SRCJAX_CPU={chosen!r}: expected 'host' or one of {', '.join(_LEVELS)}")
    names = list(_LEVELS)
    enabled = frozenset(f for level in names[: names.index(chosen) + 1] for f in _LEVELS[level])
    if not llvm.get_process_triple().startswith("x86_64"):
        raise TargetError(f"SRCJAX_CPU={chosen!r} is an x86-64 level; this machine is {llvm.get_process_triple()}")
    missing = sorted(enabled - host_enabled - {"mmx", "cx8", "fxsr", "cmov", "sahf"})  # (not always listed)
    if missing:
        raise TargetError(f"SRCJAX_CPU={chosen!r} needs {', '.join(missing)}, which this CPU lacks "
                          "(its code would not run)")
    return Target(chosen, "", enabled)


def _init() -> dict[str, object]:
    if _state:
        return _state
    with _lock:
        return _init_locked()


def _init_locked() -> dict[str, object]:
    if not _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        chosen = _choose_target()
        machine = llvm.Target.from_default_triple().create_target_machine(
            cpu=chosen.cpu, features=chosen.features, opt=3, reloc="default", codemodel="jitdefault", jit=True
        )
        machine.set_asm_verbosity(False)
        empty = llvm.parse_assembly("")
        engine = llvm.create_mcjit_compiler(empty, machine)
        _state.update(machine=machine, engine=engine, target=chosen, counter=0)
    return _state


def target() -> Target:
    """The CPU compiled code is for (the host's, or ``SRCJAX_CPU``'s level)."""
    return _init()["target"]  # type: ignore[return-value]


def has_fma() -> bool:
    """Whether the target multiplies and adds with one rounding in one instruction (x86 before AVX2 does not; every
    64-bit ARM does)."""
    return "fma" in target().enabled or not llvm.get_process_triple().startswith("x86_64")


def target_machine(pic: bool = False) -> llvm.TargetMachine:
    """The target machine: the JIT's, or (``pic``) one emitting position-independent code for shared libraries
    (same CPU and features)."""
    state = _init()
    with _lock:
        if pic and "pic_machine" not in state:
            _add_pic_machine(state)
    return state["pic_machine" if pic else "machine"]  # type: ignore[return-value]


def _add_pic_machine(state: dict) -> None:
    chosen: Target = state["target"]
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=chosen.cpu, features=chosen.features, opt=3, reloc="pic", codemodel="default"
    )
    machine.set_asm_verbosity(False)
    state["pic_machine"] = machine


def host_description() -> str:
    """The CPU code is compiled for (part of any cache key for machine code)."""
    chosen = target()
    return f"{llvm.get_process_triple()} {chosen.cpu} {chosen.features} llvm{llvm.llvm_version_info}"


def new_module(name: str) -> ir.Module:
    """An empty llvmlite module for the target's triple and data layout."""
    machine = target_machine()
    module = ir.Module(name=name)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    return module


def optimize(module: llvm.ModuleRef, speed_level: int = 3, pic: bool = False) -> None:
    """Run LLVM's default ``-O<speed_level>`` pipeline (vectorisers on) over ``module`` in place."""
    tuning = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(target_machine(pic), tuning)
    builder.getModulePassManager().run(module, builder)


@dataclass
class CompiledModule:
    """Addresses of a module's functions in the JIT, and its optimised LLVM IR (for ``--emit llvm|asm``)."""

    addresses: dict[str, int]
    llvm_ir: str

    def assembly(self) -> str:
        return emit_assembly(self.llvm_ir)


def parse(module: ir.Module | str) -> llvm.ModuleRef:
    ref = llvm.parse_assembly(str(module))
    ref.verify()
    return ref


def compile_module(module: ir.Module | str, names: Sequence[str], speed_level: int = 3) -> CompiledModule:
    """Verify, optimise and JIT-compile ``module``; returns the addresses of the functions ``names``."""
    with _lock:
        state = _init()
        ref = parse(module)
        optimize(ref, speed_level)
        text = str(ref)
        engine: llvm.ExecutionEngine = state["engine"]  # type: ignore[assignment]
        engine.add_module(ref)
        engine.finalize_object()
        addresses = {name: engine.get_function_address(name) for name in names}
    missing = [n for n, a in addresses.items() if not a]
    if missing:
        raise RuntimeError(f"the JIT has no function(s) {missing}")
    return CompiledModule(addresses, text)


@dataclass
class ObjectCode:
    """A module compiled to object code: the code, its optimised LLVM IR and the functions and variables it uses
    but does not define (``llvm.*`` intrinsics left out): what must resolve when it is loaded or linked."""

    code: bytes
    llvm_ir: str
    externals: list[str]


def compile_to_object(module: ir.Module | str, speed_level: int = 3, pic: bool = False) -> ObjectCode:
    """Verify, optimise and code-generate ``module`` (``pic``: position-independent, for a shared library)."""
    with _lock:  # (the target machines are shared)
        ref = parse(module)
        optimize(ref, speed_level, pic)
        externals = sorted(
            [f.name for f in ref.functions if f.is_declaration and not f.name.startswith("llvm.")]
            + [g.name for g in ref.global_variables if g.is_declaration]
        )
        return ObjectCode(target_machine(pic).emit_object(ref), str(ref), externals)


def load_object(code: bytes, names: Sequence[str]) -> dict[str, int]:
    """Load object code made by ``compile_to_object`` (not ``pic``) into the JIT; the addresses of ``names``.
    Every symbol it calls must resolve (``symbol_address``): LLVM's loader aborts the process otherwise."""
    with _lock:
        engine: llvm.ExecutionEngine = _init()["engine"]  # type: ignore[assignment]
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        addresses = {name: engine.get_function_address(name) for name in names}
    missing = [n for n, a in addresses.items() if not a]
    if missing:
        raise RuntimeError(f"the loaded object code has no function(s) {missing}")
    return addresses


def unique_name(prefix: str) -> str:
    """A symbol name not used by any earlier module of the engine (they share one namespace)."""
    with _lock:
        state = _init()
        state["counter"] = int(state["counter"]) + 1  # type: ignore[arg-type]
        return f"{prefix}_{state['counter']}"


def emit_assembly(module: ir.Module | str | llvm.ModuleRef) -> str:
    """The target's assembly of ``module`` (already-optimised IR is not optimised again)."""
    with _lock:
        ref = module if isinstance(module, llvm.ModuleRef) else parse(module)
        return target_machine().emit_assembly(ref)


def global_address(name: str) -> int:
    """The address of the global variable ``name`` of a module (compiled or loaded) in the JIT, or 0."""
    with _lock:
        return _init()["engine"].get_global_value_address(name) or 0  # type: ignore[attr-defined]


def add_symbol(name: str, address: int) -> None:
    """Make ``name`` resolve to ``address`` in modules compiled later (e.g. a BLAS routine found by ctypes)."""
    with _lock:
        llvm.add_symbol(name, address)


def symbol_address(name: str) -> int:
    """The address of a symbol of the process (libc, libm, symbols added with ``add_symbol``), or 0."""
    _init()
    with _lock:
        return llvm.address_of_symbol(name) or 0
