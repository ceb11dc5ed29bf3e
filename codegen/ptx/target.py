"""The NVPTX target: LLVM modules for ``nvptx64-nvidia-cuda``, CUDA's libdevice linked in, PTX out of llvmlite,
and ``ptxas`` to assemble it.

Kernels are compiled for a compute capability (``sm_80``: Ampere, ``sm_90``: Hopper; the device's own when one is
present). Elementwise rules are the CPU backend's (``codegen/llvm/rules.py``): arithmetic, conversions and our own
polynomials for exp, log, tanh, erf and friends lower to NVPTX as they are. What the CPU takes from libm (tan,
asin, pow, ...) comes from libdevice (``__nv_tanf``, ``__nv_pow``), linked into the module and internalised, so
the PTX carries only what the kernels call. ``llvm.exp.f32`` and its kin are never emitted: on NVPTX they are a
fatal LLVM error that ends the process.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import tempfile
import threading

import llvmlite.binding as llvm
import llvmlite.ir as ir

from srcjax.codegen.llvm.rules import Lowering

TRIPLE = "nvptx64-nvidia-cuda"
ARCHES = ("sm_80", "sm_90")  # what CI assembles every kernel for
DEFAULT_ARCH = "sm_80"
_PTX_VERSION = "+ptx80"  # PTX ISA 8.0: CUDA 12 and later drivers load it; ptxas of CUDA 13 assembles it
_lock = threading.RLock()


@functools.lru_cache(maxsize=None)
def machine(arch: str = DEFAULT_ARCH) -> llvm.TargetMachine:
    """The NVPTX target machine for compute capability ``arch`` (``sm_80``, ``sm_90``, ...)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features=_PTX_VERSION, opt=3)


def new_module(name: str) -> ir.Module:
    """An empty module for the GPU: the NVPTX triple and data layout."""
    module = ir.Module(name=name)
    module.triple = TRIPLE
    module.data_layout = str(machine().target_data)
    return module


def libdevice_path() -> str | None:
    """CUDA's ``libdevice.10.bc``: ``SRCJAX_LIBDEVICE``, else under ``CUDA_HOME``, /usr/local/cuda*, or a
    ``nvidia-cuda-nvcc`` wheel's folder on the path; None when there is none."""
    if os.environ.get("SRCJAX_LIBDEVICE"):
        return os.environ["SRCJAX_LIBDEVICE"]
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda",
             *sorted(glob.glob("/usr/local/cuda-*"), reverse=True)]
    for root in roots:
        if root and os.path.exists(os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")):
            return os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")
    ptxas = shutil.which("ptxas")
    if ptxas:  # (the toolkit's bin/ beside its nvvm/)
        candidate = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(ptxas))), "nvvm", "libdevice",
                                 "libdevice.10.bc")
        if os.path.exists(candidate):
            return candidate
    return None


@functools.lru_cache(maxsize=1)
def _libdevice_bitcode() -> bytes:
    path = libdevice_path()
    if path is None:
        raise GpuToolchainError("CUDA's libdevice.10.bc was not found (install the CUDA toolkit, or set "
                                "SRCJAX_LIBDEVICE to its path): kernels calling tan, asin, pow, ... need it")
    with open(path, "rb") as f:
        return f.read()


class GpuToolchainError(RuntimeError):
    """Something the GPU backend needs from CUDA's toolkit is missing (libdevice, ptxas)."""


class DeviceLowering(Lowering):
    """Lowering for kernels: what the CPU's rules take from libm comes from libdevice, and so does ``pow``."""

    def libm(self, name: str, *args: ir.Value) -> ir.Value:
        typ = args[0].type
        symbol = "__nv_" + (name if isinstance(typ, ir.DoubleType) else name + "f")
        return self.b.call(self.declare(symbol, typ, [a.type for a in args]), list(args))

    def intrinsic(self, name: str, *args: ir.Value, overload: list[ir.Type] | None = None) -> ir.Value:
        if name == "pow":  # (no NVPTX lowering of llvm.pow)
            return self.libm("pow", *args)
        return super().intrinsic(name, *args, overload=overload)


def compile_ptx(module: ir.Module | str, arch: str = DEFAULT_ARCH) -> tuple[str, str]:
    """(PTX, optimised LLVM IR) of ``module`` for ``arch``: libdevice linked where the module calls it, every
    function but the kernels internalised, LLVM's -O3 pipeline (with NVVMReflect, which resolves libdevice's
    ``__nvvm_reflect`` queries)."""
    text = str(module)
    with _lock:
        context = llvm.create_context()
        ref = None
        try:
            ref = llvm.parse_assembly(text, context)
            ref.verify()
            tm = machine(arch)
            if "__nv_" in text:
                lib = llvm.parse_bitcode(_libdevice_bitcode(), context)
                lib.triple, lib.data_layout = ref.triple, ref.data_layout
                ref.link_in(lib)
            for fn in ref.functions:
                if not fn.is_declaration and not _is_kernel(fn):
                    fn.linkage = "internal"
            tuning = llvm.create_pipeline_tuning_options(speed_level=3)
            builder = llvm.create_pass_builder(tm, tuning)
            builder.getModulePassManager().run(ref, builder)
            return tm.emit_assembly(ref), str(ref)
        finally:
            if ref is not None:  # (a module goes before its context)
                ref.close()
            context.close()


def _is_kernel(fn: llvm.ValueRef) -> bool:
    return "ptx_kernel" in str(fn).split("(", 1)[0]


def ptxas_path() -> str | None:
    found = shutil.which("ptxas")
    if found:
        return found
    for root in [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"))]:
        if root and os.path.exists(os.path.join(root, "bin", "ptxas")):
            return os.path.join(root, "bin", "ptxas")
    return None


def assemble(ptx: str, arch: str = DEFAULT_ARCH) -> bytes:
    """``ptxas -arch=<arch>`` of ``ptx``: the cubin, or ``GpuToolchainError`` with ptxas's message."""
    ptxas = ptxas_path()
    if ptxas is None:
        raise GpuToolchainError("ptxas was not found (CUDA's toolkit is not installed)")
    with tempfile.TemporaryDirectory(prefix="srcjax-ptx-") as folder:
        source, cubin = os.path.join(folder, "kernels.ptx"), os.path.join(folder, "kernels.cubin")
        with open(source, "w") as f:
            f.write(ptx)
        done = subprocess.run([ptxas, f"-arch={arch}", source, "-o", cubin], capture_output=True, text=True)
        if done.returncode != 0:
            raise GpuToolchainError(f"ptxas -arch={arch} failed: {done.stderr.strip() or done.stdout.strip()}")
        with open(cubin, "rb") as f:
            return f.read()
