"""llvmlite set-up for the target CPU: the target machine, the -O3 pipeline, the JIT, IR and assembly text.

The target is the host CPU (with 512-bit vectors in loops on AVX-512 hosts, unless ``SRCJAX_VECTOR_BITS=256``)
unless ``SRCJAX_CPU`` names an x86-64 microarchitecture level (``x86-64``,
``x86-64-v2`` = SSE4.2, ``x86-64-v3`` = AVX2 + FMA, ``x86-64-v4`` = AVX-512) that the host can run: code
compiled for a baseline runs on every machine of that level, and the test suite compiles for one so that no
test depends on the features of the machine it happens to run on.

llvmlite 0.50 wraps LLVM 22: targets are initialised explicitly (``llvm.initialize()`` is gone) and only the
new pass manager exists. Everything is created on first use, so importing this module costs nothing.
Each compiled module is loaded in an MCJIT engine of its own (``Code``), released when nothing refers to it:
the memory of code nobody calls any more goes back to the system.

Object code is the common currency of the disk cache and the ahead-of-time compiler: ``compile_to_object``
optimises a module and emits it (for the JIT's loader, or position-independent for a shared library),
``load_object`` hands such code to the JIT.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import llvmlite.binding as llvm
import llvmlite.ir as ir

from srcjax.codegen.llvm import codegen_worker

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
        features = host.flatten()
        if "avx512f" in host_enabled and os.environ.get("SRCJAX_VECTOR_BITS", "512") != "256":
            # LLVM's tuning of AVX-512 CPUs keeps loops to 256-bit vectors; ours pay at 512 (on a Zen 4, one
            # thread: jit(selu) of 1e6 float32 0.57 -> 0.44 ms, tanh 0.71 -> 0.57, logistic 0.54 -> 0.45)
            features += ",-prefer-256-bit"
        return Target(llvm.get_host_cpu_name(), features, host_enabled)
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
        codegen_worker.initialize()
        chosen = _choose_target()
        _state.update(target=chosen, counter=0)
        _state["machine"] = _jit_machine()
        # the first MCJIT engine makes the process's own symbols (libc's) resolvable by name, which
        # ``symbol_address`` checks before code that calls them is loaded: one empty engine, kept
        _state["first_engine"] = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _jit_machine())
    return _state


def _jit_machine() -> llvm.TargetMachine:
    """A target machine for code loaded in this process (an engine owns the one it is made with)."""
    chosen: Target = _state["target"]  # type: ignore[assignment]
    return codegen_worker.MachineSpec(chosen.cpu, chosen.features, pic=False).create()


def target() -> Target:
    """The CPU compiled code is for (the host's, or ``SRCJAX_CPU``'s level)."""
    return _init()["target"]  # type: ignore[return-value]


_fma_assumed: list[bool] = []  # (``assume_fma``: code for another target is being emitted)


def has_fma() -> bool:
    """Whether the target multiplies and adds with one rounding in one instruction (x86 before AVX2 does not; every
    64-bit ARM and every NVIDIA GPU does)."""
    if _fma_assumed:
        return _fma_assumed[-1]
    return "fma" in target().enabled or not llvm.get_process_triple().startswith("x86_64")


def emitting_for_host() -> bool:
    """Whether the code being emitted is the host's (not a GPU kernel's, nor its host emulation)."""
    return not _fma_assumed


def has_masked_moves() -> bool:
    """Whether vectors are masked lane by lane at no cost in the host's code: AVX-512's mask registers. (With SSE a
    masked vector moves one lane at a time: a masked loop ran 2.8x slower; with AVX2 the vectoriser chose narrower
    vectors for a masked loop of special functions.)"""
    return emitting_for_host() and "avx512f" in target().enabled


def has_vector_scale() -> bool:
    """Whether ``llvm.ldexp`` on vectors is one instruction (AVX-512's ``vscalef``) in the host's code; elsewhere it
    is a libm call per element."""
    return emitting_for_host() and "avx512f" in target().enabled


@contextlib.contextmanager
def assume_fma(value: bool = True) -> Iterator[None]:
    """Emit code as if the target had (or lacked) a fused multiply-add: GPU kernels, and their host emulation, which
    must compute what the kernels compute."""
    _fma_assumed.append(value)
    try:
        yield
    finally:
        _fma_assumed.pop()


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
    state["pic_machine"] = codegen_worker.MachineSpec(chosen.cpu, chosen.features, pic=True).create()


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


class Code:
    """Machine code loaded in an execution engine of its own. The engine, and with it the code's memory, is
    released once nothing refers to this object any more (whatever calls the code must hold it), so a process
    that compiles without end (a fresh closure jitted in a loop) keeps only the code it still uses."""

    def __init__(self, engine: llvm.ExecutionEngine, names: Sequence[str], nbytes: int):
        self._engine = engine
        self.nbytes = nbytes  # the object code's size: what caches of code weigh
        self.addresses = {name: engine.get_function_address(name) for name in names}
        missing = [n for n, a in self.addresses.items() if not a]
        if missing:
            raise RuntimeError(f"the JIT has no function(s) {missing}")

    def global_address(self, name: str) -> int:
        """The address of the global variable ``name`` of this code, or 0."""
        with _lock:
            return self._engine.get_global_value_address(name) or 0

    def __del__(self) -> None:
        # (disposed under the lock at the next load: never from inside LLVM's own work)
        try:
            _retired.append(self._engine)
        except (NameError, AttributeError):  # (the interpreter is shutting down)
            pass


_retired: list[llvm.ExecutionEngine] = []
_kept: list[Code] = []  # code that lives as long as the process (the thread runtime, the SIGINT handler)


@dataclass
class CompiledModule:
    """A module's functions loaded in the JIT (``code`` holds them) and its optimised LLVM IR (for
    ``--emit llvm|asm``)."""

    code: Code
    llvm_ir: str

    @property
    def addresses(self) -> dict[str, int]:
        return self.code.addresses

    def assembly(self) -> str:
        return emit_assembly(self.llvm_ir)


def parse(module: ir.Module | str, context: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    ref = llvm.parse_assembly(str(module), context)
    ref.verify()
    return ref


@contextlib.contextmanager
def _parsed(module: ir.Module | str) -> Iterator[llvm.ModuleRef]:
    """``module`` parsed in a context of its own, released afterwards: LLVM's global context would keep every
    type, constant and metadata string of every module for the life of the process."""
    context = llvm.create_context()
    ref = parse(module, context)
    try:
        yield ref
    finally:
        ref.close()
        context.close()


def compile_module(module: ir.Module | str, names: Sequence[str], speed_level: int = 3,
                   permanent: bool = False) -> CompiledModule:
    """Verify, optimise and JIT-compile ``module``; its functions ``names`` stay loaded while the result's ``code``
    is referenced (``permanent``: for the life of the process)."""
    obj = compile_to_object(module, speed_level)
    code = load_object(obj.code, names)
    if permanent:
        keep(code)
    return CompiledModule(code, obj.llvm_ir)


def keep(code: Code) -> None:
    """Keep ``code`` loaded for the life of the process (code others reach by symbol, not by reference)."""
    _kept.append(code)


@dataclass
class ObjectCode:
    """A module compiled to object code: the code, its optimised LLVM IR and the functions and variables it uses
    but does not define (``llvm.*`` intrinsics left out): what must resolve when it is loaded or linked."""

    code: bytes
    llvm_ir: str
    externals: list[str]


def compile_to_object(module: ir.Module | str, speed_level: int = 3, pic: bool = False) -> ObjectCode:
    """Verify, optimise and code-generate ``module`` (``pic``: position-independent, for a shared library): here,
    or in a child process once this one has optimised ``IN_PROCESS_LIMIT`` modules (codegen_worker.py)."""
    text = str(module)
    with _lock:  # (the target machines are shared)
        state = _init()
        state["optimised"] = int(state.get("optimised", 0)) + 1  # type: ignore[arg-type]
        if state["optimised"] <= codegen_worker.IN_PROCESS_LIMIT:
            return ObjectCode(*codegen_worker.generate(text, target_machine(pic), speed_level))
        chosen: Target = state["target"]  # type: ignore[assignment]
        spec = codegen_worker.MachineSpec(chosen.cpu, chosen.features, pic)
        return ObjectCode(*_worker.generate(text, spec, speed_level))


_worker = codegen_worker.Worker()


def load_object(code: bytes, names: Sequence[str]) -> Code:
    """Load object code made by ``compile_to_object`` (not ``pic``) into an engine of its own; ``names`` are the
    functions to look up. Every symbol it calls must resolve (``symbol_address``): LLVM's loader aborts the
    process otherwise."""
    with _lock:
        _init()
        while _retired:
            retired = _retired.pop()
            if any(other is retired for other in _retired) or retired.closed:
                continue  # (listed twice, or disposed already: disposing it again would fail)
            try:
                retired.close()
            except ctypes.ArgumentError:  # (its handle is gone already)
                pass
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _jit_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        return Code(engine, names, len(code))


def unique_name(prefix: str) -> str:
    """A symbol name not used by any earlier module of the process (the symbols they export share one namespace)."""
    with _lock:
        state = _init()
        state["counter"] = int(state["counter"]) + 1  # type: ignore[arg-type]
        return f"{prefix}_{state['counter']}"


def emit_assembly(module: ir.Module | str | llvm.ModuleRef) -> str:
    """The target's assembly of ``module`` (already-optimised IR is not optimised again)."""
    with _lock:
        if isinstance(module, llvm.ModuleRef):
            return target_machine().emit_assembly(module)
        with _parsed(module) as ref:
            return target_machine().emit_assembly(ref)


_bound: dict[str, int] = {}  # symbol -> address of the process-wide functions ``bind_once`` compiled
_bind_lock = threading.RLock()  # (re-entrant: a runtime whose emitter needs another)


def bind_once(name: str, emit: Callable[[ir.Module], None],
              load: Callable[[Callable[[], tuple[ir.Module, list[str], int]]], Code] | None = None) -> None:
    """Compile the function ``name`` that ``emit`` writes into a module of its own (or have ``load(build)`` load
    it: the disk cache), keep it and bind its symbol for the life of the process, unless that is done already:
    modules calling it (srcjax_parallel, srcjax_barrier) declare it and do not each carry a copy."""
    with _bind_lock:
        if name in _bound:
            return

        def build() -> tuple[ir.Module, list[str], int]:
            module = new_module(name)
            emit(module)
            return module, [name], 2

        code = load(build) if load is not None else compile_module(*build()).code
        keep(code)
        add_symbol(name, code.addresses[name])
        _bound[name] = code.addresses[name]


def add_symbol(name: str, address: int) -> None:
    """Make ``name`` resolve to ``address`` in modules compiled later (e.g. a BLAS routine found by ctypes)."""
    with _lock:
        llvm.add_symbol(name, address)


def symbol_address(name: str) -> int:
    """The address of a symbol of the process (libc, libm, symbols added with ``add_symbol``), or 0."""
    _init()
    with _lock:
        return llvm.address_of_symbol(name) or 0
