"""The run-time half of an ahead-of-time module: ``codegen/aot.py`` copies this file (from ``# -- runtime``
on) into every loader it writes, followed by the module's metadata and one function per compiled function.

It loads the shared library, binds the BLAS routines its code calls (found in NumPy's install, as
``codegen/llvm/blas.py`` finds them), checks each call's arguments against the compiled signatures and
calls the matching entry ``void entry(i8** buffers)`` (inputs, constants, outputs) through ctypes. It
imports the standard library and NumPy only: no srcjax, no llvmlite, no libcst.
"""

# -- runtime ------------------------------------------------------------------------------------------------
import ast as _ast
import ctypes as _ctypes
import glob as _glob
import os as _os
import sys as _sys

import numpy as _np

_HERE = _os.path.dirname(_os.path.abspath(__file__))
_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2}  # a Python bool, int or float fits a dtype of this kind or later
_PYTHON_KIND = {bool: "b", int: "i", float: "f"}
# LLVM's name of a CPU feature -> /proc/cpuinfo's, for every feature whose instructions LLVM emits on its own
# (vectorised loops, shuffles, bit counts), so whose absence would crash compiled code: the AVX-512 extensions
# of later CPUs (vpopcntd, vpermb, ...) and AMD's sse4a (extrq) included
_CPU_FLAGS = {"popcnt": "popcnt", "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2",
              "sse4a": "sse4a", "avx": "avx", "avx2": "avx2", "fma": "fma", "fma4": "fma4", "xop": "xop", "tbm": "tbm",
              "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm", "movbe": "movbe", "pclmul": "pclmulqdq",
              "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512cd": "avx512cd", "avx512dq": "avx512dq",
              "avx512vl": "avx512vl", "avx512ifma": "avx512ifma", "avx512vbmi": "avx512vbmi",
              "avx512vbmi2": "avx512_vbmi2", "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq",
              "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16", "gfni": "gfni",
              "vaes": "vaes", "vpclmulqdq": "vpclmulqdq", "avxvnni": "avx_vnni"}  # fmt: skip


def _type_text(dtype: _np.dtype, shape) -> str:
    name = "bool" if dtype.kind == "b" else f"{dtype.kind}{dtype.itemsize * 8}"
    return f"{name}[{','.join(str(d) for d in shape)}]"


def _describe(arg) -> str:
    if isinstance(arg, (bool, int, float, complex, str)) or arg is None:
        return repr(arg)
    if hasattr(arg, "dtype") and hasattr(arg, "shape"):
        return _type_text(_np.dtype(arg.dtype), arg.shape)
    return type(arg).__name__


def _object_offsets():
    """(offset of a tuple's first item, offset of an ndarray's data pointer) in this interpreter, measured on
    live objects (CPython only: ``id`` is an address there); None where that fails."""
    if _sys.implementation.name != "cpython":
        return None
    try:
        probe, other = _np.zeros(3), _np.ones(2, _np.int8)

        def find(obj, wanted):
            for offset in range(8, 129, 8):
                if _ctypes.c_void_p.from_address(id(obj) + offset).value == wanted:
                    return offset
            return None

        item, data = find((probe,), id(probe)), find(probe, probe.ctypes.data)
        if item is None or data is None or find(other, other.ctypes.data) != data:
            return None
        return item, data
    except Exception:  # noqa: BLE001 - any surprise means: build pointer arrays instead
        return None


_OFFSETS = _object_offsets()
_FAST_WORK = 1 << 15  # calls with fewer elements than this keep the GIL (cheaper to enter)


class _Specialisation:
    """One compiled signature of a function: how to check and convert arguments, and its entry."""

    def __init__(self, meta: dict, lib, constants):
        self.text = meta["signature"]
        self.params = [("static", _ast.literal_eval(p["static"])) if "static" in p else
                       ("array", _np.dtype(p["dtype"]), tuple(p["shape"]), _np.dtype(p["as"]))
                       for p in meta["params"]]  # fmt: skip
        self.consts = tuple(_np.ascontiguousarray(constants[key]) for key in meta["constants"])
        self.outputs = [(tuple(o["shape"]), _np.dtype(o["dtype"])) for o in meta["outputs"]]
        self.tree = meta["tree"]
        self.entry = lib[meta["symbol"]]
        self.entry.argtypes, self.entry.restype = [_ctypes.c_void_p], None
        self.count = len(meta["inputs"]) + len(self.consts) + len(self.outputs)
        self.call = None
        if _OFFSETS is not None:  # the data pointers read in C from the tuple of arrays: one ctypes call
            work = sum(_np.prod(p[2], dtype=int) for p in self.params if p[0] == "array")
            work += sum(_np.prod(shape, dtype=int) for shape, _ in self.outputs)
            factory = _ctypes.PYFUNCTYPE if work < _FAST_WORK else _ctypes.CFUNCTYPE
            call = factory(
                None, _ctypes.c_void_p, _ctypes.py_object, _ctypes.c_int64, _ctypes.c_int64, _ctypes.c_int64
            )(_ctypes.cast(lib.srcjax_aot_call, _ctypes.c_void_p).value)
            address = _ctypes.cast(self.entry, _ctypes.c_void_p).value
            self.call = lambda arrays: call(address, arrays, self.count, *_OFFSETS)

    def convert(self, args: tuple):
        """The buffers of the array arguments if ``args`` fit this signature, else None (or an ``OverflowError``
        for a Python int the compiled dtype cannot hold, as ``jit`` raises). NumPy arrays must have the declared
        dtype; Python numbers and lists take it if their kind fits (bool < int < float). They are converted to
        the compiled dtype (64-bit types compile to 32 bits unless x64 was on)."""
        if len(args) != len(self.params):
            return None
        buffers = []
        for arg, param in zip(args, self.params):
            if param[0] == "static":
                if type(arg) is not type(param[1]) or arg != param[1]:
                    return None
                continue
            _, dtype, shape, converted = param
            if type(arg) is _np.ndarray:  # (the common case first)
                if arg.dtype != dtype or arg.shape != shape:
                    return None
                buffers.append(_np.ascontiguousarray(arg, converted))
                continue
            if isinstance(arg, (bool, int, float, list, tuple)):
                try:
                    value = _np.asarray(arg)
                except ValueError:  # (a ragged list)
                    return None
                kind = _PYTHON_KIND.get(type(arg), value.dtype.kind)
                if value.shape != shape or _KIND_ORDER.get(kind, 9) > _KIND_ORDER.get(dtype.kind, -1):
                    return None
                if value.dtype.kind in "iu" and converted.kind in "iu" and value.size:
                    bounds = _np.iinfo(converted)
                    for wrong in (int(value.min()), int(value.max())):
                        if not bounds.min <= wrong <= bounds.max:
                            return OverflowError(f"Python int {wrong} too large to convert to {converted.name}")
            else:
                if not (hasattr(arg, "dtype") and hasattr(arg, "shape")):
                    return None
                value = _np.asarray(arg)
                if value.dtype != dtype or value.shape != shape:
                    return None
            buffers.append(_np.ascontiguousarray(value, converted))
        return buffers

    def __call__(self, buffers: list):
        outs = [_np.empty(shape, dtype) for shape, dtype in self.outputs]
        arrays = (*buffers, *self.consts, *outs)
        if self.call is not None:
            self.call(arrays)
        else:
            self.entry((_ctypes.c_void_p * max(self.count, 1))(*[a.ctypes.data for a in arrays]))
        return _unflatten(self.tree, outs)


def _unflatten(tree, leaves: list):
    if isinstance(tree, int):
        return leaves[tree]
    if tree is None:
        return None
    ((kind, children),) = tree.items()
    if kind == "dict":
        return {key: _unflatten(child, leaves) for key, child in children}
    items = [_unflatten(child, leaves) for child in children]
    return tuple(items) if kind == "tuple" else items


def _check_machine(meta: dict) -> None:
    """Compiled code runs only on the architecture, and the CPU features, it was compiled for."""
    arch = meta["triple"].split("-")[0]
    here = _os.uname().machine if hasattr(_os, "uname") else arch
    if here != arch and not (arch == "x86_64" and here == "AMD64"):
        raise ImportError(f"{meta['library']} was compiled for {arch}; this machine is {here}")
    if not _os.path.exists("/proc/cpuinfo"):
        return
    with open("/proc/cpuinfo") as f:
        flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    if flags is None:
        return
    missing = [name for name in meta["cpu_features"] if _CPU_FLAGS.get(name, name) not in flags]
    if missing:
        raise ImportError(
            f"{meta['library']} was compiled for a CPU with {', '.join(missing)}, which this one "
            "lacks: compile it again on this machine"
        )


def _find_blas(candidates: list) -> tuple:
    """(library, symbol pattern) of a CBLAS with the integer width the code was compiled for, searched where
    NumPy's wheels keep their OpenBLAS."""
    numpy_dir = _os.path.dirname(_np.__file__)
    directories = [_os.path.join(numpy_dir, _os.pardir, "numpy.libs"), _os.path.join(numpy_dir, ".dylibs"), numpy_dir]
    for pattern, symbol in candidates:
        for directory in directories:
            for path in sorted(_glob.glob(_os.path.join(directory, pattern + ".so*"))):
                try:
                    library = _ctypes.CDLL(path)
                    getattr(library, symbol.format(t="s", r="gemm"))
                except (OSError, AttributeError):
                    continue
                return library, symbol
    raise ImportError(
        "this module's matrix products call a CBLAS like the OpenBLAS bundled with NumPy "
        f"({', '.join(p for p, _ in candidates)}); none was found in NumPy's install"
    )


_loaded: dict = {}  # "lib", "blas": kept alive as long as the module
_functions: dict = {}  # name -> its _Specialisations (filled by the generated code below)


def _load(meta: dict) -> dict:
    """Load the library, bind its BLAS routines, read its constants: one ``_Specialisation`` list per function."""
    _check_machine(meta)
    lib = _loaded["lib"] = _ctypes.CDLL(_os.path.join(_HERE, meta["library"]))
    try:
        build = (_ctypes.c_char * (len(meta["build"]) // 2)).in_dll(lib, "srcjax_aot_build").raw.hex()
    except ValueError:
        build = None
    if build != meta["build"]:
        raise ImportError(f"{meta['library']} is not the library this loader was written with (they come from "
                          "different builds): keep the files of one `srcjax compile` together, or compile again")
    if meta["blas"]:
        library, symbol = _find_blas(meta["blas"]["candidates"])
        _loaded["blas"] = library
        for routine in meta["blas"]["routines"]:  # e.g. "sgemm": the library's routine into our pointer
            address = _ctypes.cast(getattr(library, symbol.format(t=routine[0], r=routine[1:])), _ctypes.c_void_p)
            _ctypes.c_void_p.in_dll(lib, f"srcjax_{routine}_address").value = address.value
    constants = {}
    if meta["constants"]:
        with _np.load(_os.path.join(_HERE, meta["constants"]), allow_pickle=False) as data:
            constants = {key: data[key] for key in data.files}
    return {name: [_Specialisation(s, lib, constants) for s in specs] for name, specs in meta["functions"].items()}


def _call(name: str, args: tuple):
    overflow = None
    for specialisation in _functions[name]:
        buffers = specialisation.convert(args)
        if type(buffers) is list:
            return specialisation(buffers)
        overflow = buffers or overflow  # (the last: signatures tend to widen)
    accepted = "\n".join(f"  {name}({s.text})" for s in _functions[name])
    if overflow is not None:  # (no signature takes the arguments, one would but for the size of an int)
        raise OverflowError(f"{name}(): {overflow}; it was compiled ahead of time for:\n{accepted}")
    raise TypeError(
        f"{name}() got arguments ({', '.join(map(_describe, args))}); it was compiled ahead of time for:\n{accepted}"
    )
