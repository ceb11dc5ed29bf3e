"""Optimising and code-generating LLVM modules, in this process or in a child process.

llvmlite's pass builder allocates pass-instrumentation state that it never frees: about 100 KB stays behind
for every module the -O3 pipeline optimises. A process that compiles without end (a fresh closure jitted in
a loop) would grow without end. So after ``IN_PROCESS_LIMIT`` optimised modules, a process hands the work to
a child (this file run as a script; it imports llvmlite and nothing of srcjax) and loads the object code it
returns; the child is replaced after ``CHILD_LIMIT`` modules. What the parent keeps of compiled code is then
only the code in use (``engine.Code``), which is freed when nothing calls it any more.

The protocol is private to this file: a request is a JSON header (target CPU and features, relocation model,
speed level) and the module's LLVM IR; a reply is a JSON header (externals, or an error) with the object
code and the optimised IR, each prefixed by its length. An exchange cut short in the parent (Ctrl-C while it
writes a request or waits for the reply) would leave the stream out of step, so the child is killed then and
the next request starts a new one.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import BinaryIO

import llvmlite
import llvmlite.binding as llvm

IN_PROCESS_LIMIT = int(os.environ.get("SRCJAX_IN_PROCESS_COMPILES") or 256)
CHILD_LIMIT = 1000
_LEN = struct.Struct("<Q")


# LLVM 22's machine peephole pass folds an AVX-512 masked load into a masked instruction that uses the same mask
# even where that instruction moves elements between lanes (a permute), and so drops the load's own masking:
# select(m, shuffle(select(m, a, b)), c) came out as select(m, shuffle(a), c). A jit(grad) through a minimum
# took both sides of a tie for one (fuzz seed 991025). ISel has already folded the loads it can, so the pass is
# turned off: the loops lose an instruction at most.
BACKEND_OPTIONS = ("--disable-peephole",)


def initialize() -> None:
    """LLVM's native target, its assembly printer and ``BACKEND_OPTIONS``, in whichever process generates code."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for option in BACKEND_OPTIONS:
        llvm.set_option("srcjax", option)


@dataclass(frozen=True)
class MachineSpec:
    """What a target machine is made from: the same in the parent and in the child."""

    cpu: str
    features: str
    pic: bool

    def create(self) -> llvm.TargetMachine:
        reloc, model = ("pic", "default") if self.pic else ("default", "jitdefault")
        machine = llvm.Target.from_default_triple().create_target_machine(
            cpu=self.cpu, features=self.features, opt=3, reloc=reloc, codemodel=model, jit=not self.pic
        )
        machine.set_asm_verbosity(False)
        return machine


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, speed_level: int = 3) -> None:
    """Run LLVM's default ``-O<speed_level>`` pipeline (vectorisers on) over ``module`` in place."""
    tuning = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)
    if any(f.name.startswith(_SLOW_PATHS) for f in module.functions):
        # the vector variants of slow paths (math._trig_large) that the vectoriser has just called: inlined, so that
        # a vector needing none is a test and a branch, then the code around them tidied
        after = llvm.create_new_module_pass_manager()
        after.add_always_inliner_pass()
        after.add_simplify_cfg_pass()
        after.add_instruction_combine_pass()
        after.run(module, builder)


_SLOW_PATHS = ("srcjax_sin_large", "srcjax_cos_large")


def generate(text: str, machine: llvm.TargetMachine, speed_level: int) -> tuple[bytes, str, list[str]]:
    """(object code, optimised IR, externals) of the module ``text``, parsed in a context of its own (LLVM's
    global context would keep every type, constant and metadata string of every module)."""
    context = llvm.create_context()
    module = llvm.parse_assembly(text, context)
    try:
        module.verify()
        optimize(module, machine, speed_level)
        externals = sorted(
            [f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")]
            + [g.name for g in module.global_variables if g.is_declaration]
        )
        return machine.emit_object(module), str(module), externals
    finally:
        module.close()
        context.close()


# -- the parent's side ------------------------------------------------------------------------------------------
class Worker:
    """The child process, started on first use and replaced after ``CHILD_LIMIT`` modules (callers hold the
    engine's lock: one request at a time)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.owner = os.getpid()  # (a forked process starts a child of its own, leaving its parent's alone)
        self.served = 0
        self.lock = threading.Lock()
        atexit.register(self.stop)

    def generate(self, text: str, spec: MachineSpec, speed_level: int) -> tuple[bytes, str, list[str]]:
        with self.lock:
            if self.owner != os.getpid():
                self.process, self.owner = None, os.getpid()
            header = {"cpu": spec.cpu, "features": spec.features, "pic": spec.pic, "speed_level": speed_level}
            try:
                if self.process is None or self.process.poll() is not None or self.served >= CHILD_LIMIT:
                    self._restart()
                self.served += 1
                _send(self.process.stdin, [json.dumps(header).encode(), text.encode()])
                reply, code, optimised = _receive(self.process.stdout, 3)
            except (OSError, EOFError, ValueError) as e:
                error = self._stop_locked()
                raise RuntimeError(f"the code generator's child process failed ({e}): {error}") from None
            except BaseException:
                # interrupted (Ctrl-C, an exception raised by a signal handler) mid-exchange: part of a request
                # may have gone out, or a reply be left unread, so the stream is out of step. The child goes;
                # the next request starts a fresh one.
                self._stop_locked(kill=True)
                raise
        answer = json.loads(reply)
        if "error" in answer:
            raise RuntimeError(f"the code generator's child process: {answer['error']}")
        return code, optimised.decode(), answer["externals"]

    def _restart(self) -> None:
        self._stop_locked()
        # (-P: this file's folder is not put on the path, where its neighbours would shadow the standard library)
        paths = [os.path.dirname(os.path.dirname(llvmlite.__file__)), os.environ.get("PYTHONPATH", "")]
        self.errors = tempfile.TemporaryFile()  # (a pipe nobody reads could fill and stall the child)
        self.served = 0
        self.process = subprocess.Popen(
            [sys.executable, "-P", os.path.abspath(__file__)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errors, env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)},
        )

    def stop(self) -> None:
        with self.lock:
            if self.owner == os.getpid():
                self._stop_locked()

    def _stop_locked(self, kill: bool = False) -> str:
        """End the child (``kill``: at once, not when it has read the end of its requests); what it wrote to its
        standard error (the end of it)."""
        process, self.process = self.process, None
        if process is None:
            return ""
        try:
            if kill:
                process.kill()
            else:
                process.stdin.close()
            process.wait(timeout=10)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()  # (a killed child's stdin may hold part of a request: flushing it fails)
            except (OSError, ValueError):
                pass
        self.errors.seek(0)
        text = self.errors.read().decode(errors="replace")[-2000:]
        self.errors.close()
        return text


def _send(stream: BinaryIO, parts: list[bytes]) -> None:
    stream.write(b"".join(_LEN.pack(len(p)) + p for p in parts))
    stream.flush()


def _receive(stream: BinaryIO, count: int) -> list[bytes]:
    parts = []
    for _ in range(count):
        head = stream.read(_LEN.size)
        if len(head) < _LEN.size:
            raise EOFError("the stream ended")
        (n,) = _LEN.unpack(head)
        data = stream.read(n)
        if len(data) < n:
            raise EOFError("the stream ended")
        parts.append(data)
    return parts


# -- the child's side --------------------------------------------------------------------------------------------
def _serve(requests: BinaryIO, replies: BinaryIO) -> None:
    initialize()
    machines: dict[MachineSpec, llvm.TargetMachine] = {}
    while True:
        try:
            header, text = _receive(requests, 2)
        except EOFError:
            return
        request = json.loads(header)
        spec = MachineSpec(request["cpu"], request["features"], request["pic"])
        try:
            machine = machines.get(spec) or machines.setdefault(spec, spec.create())
            code, optimised, externals = generate(text.decode(), machine, request["speed_level"])
            _send(replies, [json.dumps({"externals": externals}).encode(), code, optimised.encode()])
        except Exception as e:  # noqa: BLE001 - reported to the parent, which raises it
            _send(replies, [json.dumps({"error": f"{type(e).__name__}: {e}"}).encode(), b"", b""])


if __name__ == "__main__":
    # Ctrl-C at a terminal reaches the whole process group: the parent decides (a compile it interrupts ends
    # this process; one that is idle stays for the next request)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _serve(sys.stdin.buffer, sys.stdout.buffer)
