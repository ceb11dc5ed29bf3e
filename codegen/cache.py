"""The compile cache on disk: native object code per specialisation, reused by later processes.

An entry's key is the SHA-256 of everything the machine code depends on: the printed IR (the whole call
graph, inlined, with the signature's types), the constants' bytes, the compiler (srcjax's version, a digest
of the sources of ``codegen/`` and ``transpiler/``), llvmlite and LLVM, the host CPU's name and features, and
the process facts baked into the code (the BLAS found, the thread count and parallel threshold, the object offsets of
the Python entry).

An entry is one file ``<key>.o`` in the cache directory, written atomically (a temporary file in the same
directory, fsync, rename), so concurrent writers leave one whole entry. Its layout, little-endian::

    magic "SRCJAXO\\0" | u32 format | 32-byte key | u64 n + JSON metadata | u64 n + object code
    | u64 n + optimised LLVM IR | 32-byte SHA-256 of everything before it

An entry that is short, has the wrong magic, format or key, a bad checksum or metadata that does not
parse is ignored: the function is compiled again and the entry overwritten. Nothing is unpickled; the
object code is only handed to LLVM's loader after its checksum and key matched. The symbols of an entry are
named after its key, so they never clash with modules compiled in the same process. The thread runtime
of ``codegen/llvm/pool.py`` (``srcjax_parallel``) has an entry of its own, loaded once per process.

Only a regular file of bounded size is read as an entry (a link, a FIFO or a device is not: it could hang the
process or feed it gigabytes). Reading an entry renews its modification time; when the directory grows past
its limit (``configure``: JAX's ``jax_compilation_cache_max_size``), the entries least recently used are
deleted first. The code loaded in this process is kept for reuse by later compilations of the same key, least
recently used dropped first beyond ``set_memory_limits``; a function still in use keeps its own code.

``SRCJAX_CACHE=0`` turns the cache off, as JAX's ``jax_enable_compilation_cache`` does; entries smaller or
quicker to compile than JAX's ``jax_persistent_cache_min_entry_size_bytes`` / ``_min_compile_time_secs`` are not
stored. The directory is the configured one
(``config.jax_compilation_cache_dir``, passed in by the runtime), else ``$XDG_CACHE_HOME/srcjax``, else
``~/.cache/srcjax``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"SRCJAXO\0"
FORMAT = 1
_HEAD = struct.Struct("<8sI32s")
_LEN = struct.Struct("<Q")
_DIGEST = 32

# key -> (entry name, its code, LLVM IR): the code loaded in this process, most recently used last. Bounded
# (``set_memory_limits``): an entry dropped here lives on only while a compiled function still holds its code.
_loaded: OrderedDict[bytes, tuple[str, Any, str]] = OrderedDict()
_memory_limits = {"entries": 512, "bytes": 256 << 20}
_lock = threading.RLock()  # (re-entered: loading an entry may load the thread runtime's)
_compiler: list[str] = []
stats = {"hits": 0, "misses": 0}  # functions loaded from an entry / compiled and stored, in this process


def enabled() -> bool:
    return os.environ.get("SRCJAX_CACHE", "1") != "0" and limits["enabled"]


def cache_dir(configured: str | os.PathLike | None = None) -> Path:
    """Where entries live: ``configured`` if given, else ``$XDG_CACHE_HOME/srcjax``, else ``~/.cache/srcjax``."""
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "srcjax"


def compiler_version() -> str:
    """srcjax's version, llvmlite's and LLVM's, and a digest of the sources of the code generator and of the
    transpiler, whose tables it lowers with (special functions' coefficients, fill values, the passes run
    before lowering) (computed once: a change to either invalidates every entry even when the version number
    stays)."""
    if not _compiler:
        import llvmlite
        import llvmlite.binding as llvm

        import srcjax.transpiler as transpiler

        # (read, not imported: codegen does not import the package above it; importlib.metadata costs 20 ms)
        srcjax_version = getattr(sys.modules.get("srcjax"), "__version__", "unknown")
        sources = hashlib.sha256()
        for root in (Path(__file__).resolve().parent, Path(transpiler.__file__).resolve().parent):
            for path in sorted(root.rglob("*.py")):
                name = f"{root.name}/{path.relative_to(root).as_posix()}"
                sources.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        _compiler.append(
            f"srcjax {srcjax_version} sources {sources.hexdigest()} llvmlite {llvmlite.__version__} "
            f"llvm {llvm.llvm_version_info}"
        )
    return _compiler[0]


def cache_key(ir_text: str, consts: list[np.ndarray]) -> bytes:
    """SHA-256 of the IR text, the constants (dtype, shape, bytes), the compiler and the host."""
    from srcjax.codegen.llvm import blas, engine, entry, gemm, kernels

    found = blas.find_gemm()
    h = hashlib.sha256()
    for part in (
        ir_text,
        compiler_version(),
        engine.host_description(),
        f"blas {found.origin if found else None} {found.int_bits if found else 0} small {found and found.small}",
        f"threads {kernels.num_threads()} {kernels.PARALLEL_MIN_WORK} offsets {entry.object_offsets()}",
        f"products split from {gemm.GEMM_SPLIT_MIN_WORK} in {gemm.GEMM_CHUNKS_PER_THREAD} blocks a thread"
        f" ({gemm.SMALL_CHUNKS_PER_THREAD} small-kernel ones)",
    ):
        h.update(_LEN.pack(len(part.encode())) + part.encode())
    for data in consts:
        data = np.ascontiguousarray(data)
        meta = f"{data.dtype.str} {data.shape}".encode()
        h.update(_LEN.pack(len(meta)) + meta + _LEN.pack(data.nbytes) + data.tobytes())
    return h.digest()


# -- the file format ----------------------------------------------------------------------------------------
def encode(key: bytes, meta: dict, obj: bytes, llvm_ir: str) -> bytes:
    body = bytearray(_HEAD.pack(MAGIC, FORMAT, key))
    for part in (json.dumps(meta, sort_keys=True).encode(), obj, llvm_ir.encode()):
        body += _LEN.pack(len(part)) + part
    return bytes(body + hashlib.sha256(body).digest())


def decode(data: bytes, key: bytes) -> tuple[dict, bytes, str] | None:
    """(metadata, object code, LLVM IR) of an entry made for ``key``, or None if it is anything else."""
    if len(data) < _HEAD.size + _DIGEST:
        return None
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    magic, fmt, stored_key = _HEAD.unpack_from(body)
    if magic != MAGIC or fmt != FORMAT or stored_key != key or hashlib.sha256(body).digest() != digest:
        return None
    parts, at = [], _HEAD.size
    for _ in range(3):
        if at + _LEN.size > len(body):
            return None
        (n,) = _LEN.unpack_from(body, at)
        at += _LEN.size
        if at + n > len(body):
            return None
        parts.append(body[at : at + n])
        at += n
    if at != len(body):
        return None
    try:
        meta = json.loads(parts[0])
        llvm_ir = parts[2].decode()
    except (ValueError, UnicodeDecodeError):
        return None
    if not (isinstance(meta, dict) and isinstance(meta.get("name"), str) and isinstance(meta.get("entries"), list)):
        return None
    if not all(isinstance(s, str) for s in meta["entries"] + meta.get("externals", [])):
        return None
    return meta, parts[1], llvm_ir


# -- the size of the directory ----------------------------------------------------------------------------------
# disk_bytes: the directory's limit (-1: none), as JAX's jax_compilation_cache_max_size; entry_bytes: the largest
# file read as an entry; enabled, least_bytes, least_seconds: JAX's jax_enable_compilation_cache and the
# smallest entry and shortest compilation stored (jax_persistent_cache_min_entry_size_bytes, _min_compile_time_secs).
# The runtime sets them from its configuration (``configure``).
limits = {"disk_bytes": 256 << 20, "entry_bytes": 256 << 20, "enabled": True, "least_bytes": 0, "least_seconds": 0.0}
_usage: dict[Path, int] = {}  # directory -> its entries' bytes as this process last counted them, plus its writes


def configure(disk_bytes: int, enabled: bool = True, least_bytes: int = 0, least_seconds: float = 0.0) -> None:
    with _lock:
        limits["disk_bytes"] = int(disk_bytes)
        limits["entry_bytes"] = 256 << 20 if disk_bytes < 0 else min(int(disk_bytes), 256 << 20)
        limits.update(enabled=bool(enabled), least_bytes=int(least_bytes), least_seconds=float(least_seconds))


def _account(directory: Path, written: int) -> None:
    """Count a write; past the limit, delete the least recently used entries (oldest modification time:
    ``read_entry`` renews it) until the directory holds at most nine tenths of the limit."""
    cap = limits["disk_bytes"]
    if cap < 0:
        return
    with _lock:
        if directory not in _usage:
            _usage[directory] = sum(size for _, size, _ in _entries(directory))
        else:
            _usage[directory] += written
        if _usage[directory] <= cap:
            return
        entries = sorted(_entries(directory), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        for path, size, _ in entries:
            if total <= cap * 0.9:
                break
            try:
                os.unlink(path)
                total -= size
            except OSError:
                pass
        _usage[directory] = total


def _entries(directory: Path) -> list[tuple[str, int, float]]:
    """(path, size, modification time) of the entries in ``directory``, and of temporaries left over by a
    process that died while writing (older than a minute)."""
    found = []
    try:
        with os.scandir(directory) as scan:
            for e in scan:
                if not e.name.endswith(".o"):
                    continue
                try:
                    info = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if e.name.startswith(".tmp-") and time.time() - info.st_mtime < 60:
                    continue
                found.append((e.path, info.st_size if stat.S_ISREG(info.st_mode) else 0, info.st_mtime))
    except OSError:
        pass
    return found


def entry_path(directory: Path, key: bytes) -> Path:
    return directory / f"{key.hex()}.o"


def read_entry(path: Path, key: bytes) -> tuple[dict, bytes, str] | None:
    """The entry at ``path`` if it is a regular file (not a link, a FIFO or a device) of at most
    ``limits["entry_bytes"]`` holding an entry made for ``key``; its modification time is renewed (the disk
    cache evicts the least recently used entries first)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limits["entry_bytes"]:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(info.st_size + 1)
        if len(data) != info.st_size:  # (it changed while we read it)
            return None
        entry = decode(data, key)
        if entry is not None:
            try:
                os.utime(fd)
            except OSError:  # (a read-only cache, shared or on a read-only mount, is still read)
                pass
        return entry
    except OSError:
        return None
    finally:
        os.close(fd)


def write_entry(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically: a temporary file beside it, fsync, rename; then keep the directory
    within ``limits["disk_bytes"]``. False on failure (or when the limit leaves no room for it)."""
    if limits["disk_bytes"] >= 0 and len(data) > limits["disk_bytes"]:
        return False
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".o")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _account(path.parent, len(data))
        return True
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False


# -- compiling through the cache ------------------------------------------------------------------------------
def compile_function(fn, directory: str | os.PathLike | None = None):
    """``codegen.llvm.compile.compile_function`` through the disk cache: an entry made for this function,
    compiler and host is loaded; otherwise the function is compiled to object code, stored and loaded."""
    from srcjax.codegen.llvm import blas, engine
    from srcjax.codegen.llvm import compile as native
    from srcjax.codegen.llvm.plan import Unsupported
    from srcjax.transpiler.printer import print_function

    if not enabled():
        return native.compile_function(fn)
    try:
        plan = native.plan_function(fn, blas.gemm_dtypes())
    except Unsupported:
        return None
    key = cache_key(print_function(fn), [data for _, data in plan.consts])

    def load(build) -> engine.CompiledModule:
        def build_entry():
            _parallel_runtime(directory)  # (the emitter binds it if a nest runs on threads: from its entry)
            return (*build(), 3)

        _, code, llvm_ir = _cached(key, directory, build_entry, count=True)
        return engine.CompiledModule(code, llvm_ir)

    return native.compile_function(fn, plan, f"srcjax_{native._safe(fn.name)}_{key.hex()[:24]}", load)


def set_memory_limits(entries: int, nbytes: int) -> None:
    """At most ``entries`` compiled functions, of at most ``nbytes`` of object code and LLVM IR in all, are kept
    loaded for reuse by later compilations of the same key (functions in use keep their own code); -1: no
    limit."""
    with _lock:
        _memory_limits.update(entries=int(entries), bytes=int(nbytes))
        _trim()


def clear_memory() -> None:
    """Forget the loaded code kept for reuse (``srcjax.clear_caches``)."""
    with _lock:
        _loaded.clear()


def _weight(done: tuple[str, Any, str]) -> int:
    return done[1].nbytes + len(done[2])


def _trim() -> None:
    entries, nbytes = (float("inf") if n < 0 else n for n in (_memory_limits["entries"], _memory_limits["bytes"]))
    total = sum(map(_weight, _loaded.values()))
    while _loaded and (len(_loaded) > entries or total > nbytes):
        _, dropped = _loaded.popitem(last=False)
        total -= _weight(dropped)


def _cached(key: bytes, directory, build, count: bool = False) -> tuple[str, Any, str]:
    """(entry function's name, its ``engine.Code``, LLVM IR) for ``key``: loaded once per process while it is
    kept (or used), from its entry if that is sound, else built (``build() -> (module, entry names, speed
    level)``) and stored."""
    with _lock:
        done = _loaded.get(key)
        if done is not None:
            _loaded.move_to_end(key)
            return done
        path = entry_path(cache_dir(directory), key)
        entry = read_entry(path, key)
        done = _load(entry, directory) if entry is not None else None
        if done is None:
            started = time.perf_counter()
            done, data = _compile(key, *build())
            if time.perf_counter() - started >= limits["least_seconds"] and len(data) >= limits["least_bytes"]:
                write_entry(path, data)
            stats["misses"] += count
        else:
            stats["hits"] += count
        _loaded[key] = done
        _trim()
    return done


def _compile(key: bytes, module, entries: list[str], speed_level: int) -> tuple[tuple[str, Any, str], bytes]:
    """Optimise and code-generate ``module`` once; load the object code and encode it as an entry."""
    from srcjax.codegen.llvm import engine

    obj = engine.compile_to_object(module, speed_level)
    meta = {"name": entries[0], "entries": entries, "externals": obj.externals}
    code = engine.load_object(obj.code, entries)
    return (entries[0], code, obj.llvm_ir), encode(key, meta, obj.code, obj.llvm_ir)


def _load(entry: tuple[dict, bytes, str], directory) -> tuple[str, Any, str] | None:
    """Bind the symbols an entry calls, then load its object code; None if a symbol cannot be resolved
    (LLVM's loader would abort the process on it)."""
    from srcjax.codegen.llvm import blas, engine, interrupt, pool, replicas

    meta, obj, llvm_ir = entry
    if pool.PARALLEL in meta.get("externals", []):
        _parallel_runtime(directory)
    if interrupt.COUNTER in meta.get("externals", []):
        interrupt.bind()
    if replicas.BARRIER in meta.get("externals", []):
        replicas.bind_runtime()
    blas.find_gemm()
    if not all(engine.symbol_address(s) for s in meta.get("externals", [])):
        return None
    try:
        code = engine.load_object(obj, meta["entries"])
    except RuntimeError:
        return None
    return meta["name"], code, llvm_ir


def _parallel_runtime(directory) -> None:
    """Bind ``srcjax_parallel`` (the thread runtime of codegen/llvm/pool.py, compiled once per process) from its
    own entry, which saves its compilation (30 ms) in every process that runs parallel code."""
    from srcjax.codegen.llvm import pool

    key = hashlib.sha256(b"parallel runtime\0" + cache_key("", [])).digest()
    pool.bind_runtime(lambda build: _cached(key, directory, build)[1])
