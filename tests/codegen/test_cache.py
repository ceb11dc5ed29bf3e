"""The disk cache of compiled code (codegen/cache.py): a second process loads the entry instead of compiling;
corrupt, foreign and half-written entries are compiled again and overwritten; concurrent writers leave
one whole entry; ``SRCJAX_CACHE=0`` writes nothing. Processes run in a temporary cache directory."""

import errno
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from srcjax.codegen import cache

ROOT = Path(__file__).resolve().parents[2]
KEY = hashlib.sha256(b"some function").digest()

# A fresh process: jit(selu) on 1e5 float32, timed from before ``import srcjax`` to after the first call.
SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import srcjax
import srcjax.numpy as jnp
from srcjax.codegen import cache

def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

x = np.linspace(-3, 3, 100_000, dtype=np.float32)
t1 = time.perf_counter()
f = srcjax.jit(selu)
y = np.asarray(f(x))
t2 = time.perf_counter()
expected = 1.05 * np.where(x > 0, x.astype(np.float64), 1.67 * np.expm1(x.astype(np.float64)))
native = f.lower(x).compile().native is not None
print(json.dumps({"stats": cache.stats, "error": float(np.max(np.abs(y - expected))), "native": native,
                  "first_call": t2 - t1, "total": t2 - t0}))
"""


def _environ(cache_dir, **env):
    environ = {**os.environ, "SRCJAX_CACHE": "1", "XDG_CACHE_HOME": str(cache_dir), **env}
    environ.pop("SRCJAX_NATIVE", None)
    return environ


def _run_many(cache_dirs, **env):
    """Run SCRIPT in one process per cache directory, all at once; their results."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT],
            cwd=ROOT,
            env=_environ(d, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for d in cache_dirs
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert result["native"] and result["error"] < 1e-5
        results.append(result)
    return results


def _run(cache_dir, **env):
    return _run_many([cache_dir], **env)[0]


def _entries(cache_dir):
    """Every file in the cache directory (temporaries included)."""
    return sorted((Path(cache_dir) / "srcjax").glob("*"))


def _selu_entry(cache_dir):
    """The entry of jit(selu); the other one in the directory is the thread runtime's."""
    entries = _entries(cache_dir)
    assert len(entries) == 2 and all(p.suffix == ".o" and not p.name.startswith(".") for p in entries)
    decoded = [cache.decode(p.read_bytes(), bytes.fromhex(p.stem)) for p in entries]
    assert None not in decoded
    (selu,) = [p for p, (meta, _, _) in zip(entries, decoded) if meta["name"].startswith("srcjax_selu_")]
    return selu


def _identity(paths):
    """What a rewrite changes (an atomic rename makes a new inode; a read renews only the modification time)."""
    return {p.name: (p.stat().st_ino, p.read_bytes()) for p in paths}


# -- the file format (in process: nothing is loaded into the JIT) ---------------------------------------------
def test_entry_round_trips():
    data = cache.encode(KEY, {"name": "f", "entries": ["f", "f.py"], "externals": ["malloc"]}, b"\x7fELF..", "ir")
    assert cache.decode(data, KEY) == (
        {"name": "f", "entries": ["f", "f.py"], "externals": ["malloc"]},
        b"\x7fELF..",
        "ir",
    )


def _flip(data, i):
    return data[:i] + bytes([data[i] ^ 1]) + data[i + 1 :]


REJECTED = [
    ("empty", lambda d: b""),
    ("truncated", lambda d: d[:-1]),
    ("header only", lambda d: d[:44]),
    ("bit flipped in the object code", lambda d: _flip(d, len(d) // 2)),
    ("bit flipped in the checksum", lambda d: _flip(d, len(d) - 1)),
    ("wrong magic", lambda d: b"PICKLE\0\0" + d[8:]),
    ("appended bytes", lambda d: d + b"\0"),
    ("a pickle", lambda d: b"\x80\x04\x95" + d),
]


@pytest.mark.parametrize("name, damage", REJECTED, ids=[r[0] for r in REJECTED])
def test_damaged_entry_is_rejected(name, damage):
    data = cache.encode(KEY, {"name": "f", "entries": ["f"]}, b"code", "ir")
    assert cache.decode(damage(data), KEY) is None


def test_foreign_entry_is_rejected():
    data = cache.encode(KEY, {"name": "f", "entries": ["f"]}, b"code", "ir")
    assert cache.decode(data, hashlib.sha256(b"another function").digest()) is None


def test_entry_with_a_valid_checksum_but_bad_metadata_is_rejected():
    body = bytearray(cache._HEAD.pack(cache.MAGIC, cache.FORMAT, KEY))
    for part in (b"[1, 2]", b"code", b"ir"):  # metadata that is JSON but not an entry's
        body += cache._LEN.pack(len(part)) + part
    assert cache.decode(bytes(body + hashlib.sha256(body).digest()), KEY) is None


def test_write_is_atomic_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "sub" / "entry.o"
    assert cache.write_entry(path, b"one") and cache.write_entry(path, b"two")
    assert path.read_bytes() == b"two" and [p.name for p in path.parent.iterdir()] == ["entry.o"]


def test_an_entry_of_a_read_only_cache_is_read(tmp_path, monkeypatch):
    """Renewing an entry's modification time (for eviction) fails in a cache shared read-only or on a read-only
    mount: the entry must be used all the same, not compiled again in every process."""
    data = cache.encode(KEY, {"name": "f", "entries": ["f"]}, b"code", "ir")
    (tmp_path / "entry.o").write_bytes(data)

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "utime", refuse)
    assert cache.read_entry(tmp_path / "entry.o", KEY) == cache.decode(data, KEY)


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "srcjax"
    assert cache.cache_dir(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == Path.home() / ".cache" / "srcjax"


def test_key_depends_on_ir_and_constants():
    ir = "func @f(%x: f32[3]) -> f32[3] {\n  return %x\n}"
    base = cache.cache_key(ir, [np.arange(3, dtype=np.float32)])
    assert base == cache.cache_key(ir, [np.arange(3, dtype=np.float32)])
    assert base != cache.cache_key(ir.replace("f32", "f64"), [np.arange(3, dtype=np.float32)])
    assert base != cache.cache_key(ir, [np.arange(3, dtype=np.int32)])  # same count, other dtype
    assert base != cache.cache_key(ir, [np.array([0, 1, 3], dtype=np.float32)])
    assert base != cache.cache_key(ir, [np.arange(3, dtype=np.float32).reshape(1, 3)])


def test_compiler_version_covers_the_tables_the_lowering_reads(monkeypatch):
    """The native lowering of erf, lgamma, ... reads its coefficients from transpiler/primitives/special.py:
    editing them must invalidate every entry, as editing codegen/ does (else the old machine code runs)."""
    import srcjax.transpiler.primitives.special as special

    edited = {Path(special.__file__).resolve(), Path(cache.__file__).resolve()}
    real = Path.read_bytes
    versions = []
    for changed in [None, *sorted(edited)]:
        monkeypatch.setattr(Path, "read_bytes", lambda self, c=changed: real(self) + b"#" * (self == c))
        monkeypatch.setattr(cache, "_compiler", [])
        versions.append(cache.compiler_version())
    assert len(set(versions)) == len(versions)


# -- across processes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("threads", ["serial", "parallel"])
def test_second_process_reuses_the_entry(tmp_path, threads):
    env = {"SRCJAX_PARALLEL_MIN_WORK": "1", "SRCJAX_NUM_THREADS": "2"} if threads == "parallel" else {}
    cold = _run(tmp_path, **env)
    assert cold["stats"] == {"hits": 0, "misses": 1}
    _selu_entry(tmp_path)
    written = _identity(_entries(tmp_path))
    warm = _run(tmp_path, **env)
    assert warm["stats"] == {"hits": 1, "misses": 0}
    assert _identity(_entries(tmp_path)) == written  # nothing compiled, nothing written
    print(
        f"\njit(selu) first call: cold {cold['first_call'] * 1e3:.0f} ms, warm {warm['first_call'] * 1e3:.0f} ms;"
        f" import + first call: cold {cold['total'] * 1e3:.0f} ms, warm {warm['total'] * 1e3:.0f} ms"
    )


@pytest.fixture(scope="module")
def good_entry(tmp_path_factory):
    """(file name, bytes) of the entry a process writes for jit(selu)."""
    directory = tmp_path_factory.mktemp("good")
    _run(directory)
    entry = _selu_entry(directory)
    return entry.name, entry.read_bytes()


def test_bad_entries_are_recompiled_and_overwritten(tmp_path, good_entry):
    name, good = good_entry
    meta, obj, ir = cache.decode(good, bytes.fromhex(Path(name).stem))
    damaged = {
        "corrupt": _flip(good, len(good) // 2),
        "foreign": cache.encode(KEY, meta, obj, ir),  # a whole, valid entry made for another key
        "half-written": good[: len(good) // 3],
    }
    for case, data in damaged.items():
        (tmp_path / case / "srcjax").mkdir(parents=True)
        (tmp_path / case / "srcjax" / name).write_bytes(data)
    results = _run_many([tmp_path / case for case in damaged])
    for case, result in zip(damaged, results):
        assert result["stats"] == {"hits": 0, "misses": 1}, case
        entry = tmp_path / case / "srcjax" / name
        assert _selu_entry(tmp_path / case) == entry and entry.read_bytes() == good, case  # (deterministic code)


def test_concurrent_writers_leave_one_whole_entry(tmp_path):
    _run_many([tmp_path] * 4)
    _selu_entry(tmp_path)  # whole entries, no temporary left behind


def test_disabled_cache_writes_nothing(tmp_path):
    result = _run(tmp_path, SRCJAX_CACHE="0")
    assert result["stats"] == {"hits": 0, "misses": 0}
    assert not (tmp_path / "srcjax").exists()


def test_configured_directory_is_used(tmp_path):
    script_dir = tmp_path / "configured"
    environ = _environ(tmp_path / "xdg")
    code = (
        "import srcjax, numpy as np\n"
        f"srcjax.config.update('jax_compilation_cache_dir', {str(script_dir)!r})\n"
        "print(np.asarray(srcjax.jit(lambda x: x * 2.0 + 1.0)(np.arange(4, dtype=np.float32))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "[1. 3. 5. 7.]" in out.stdout
    assert len(list(script_dir.glob("*.o"))) == 2 and not (tmp_path / "xdg").exists()


@pytest.mark.parametrize(
    "option, value, stored",
    [
        ("jax_enable_compilation_cache", False, False),
        ("jax_persistent_cache_min_compile_time_secs", 1e6, False),
        ("jax_persistent_cache_min_entry_size_bytes", 1 << 30, False),
        ("jax_persistent_cache_min_entry_size_bytes", -1, True),
        ("jax_persistent_cache_enable_xla_caches", "none", True),
    ],
)
def test_jax_persistent_cache_options(tmp_path, option, value, stored):
    """The options of JAX's persistent-cache documentation are accepted and honoured: off, too quick to compile,
    too small (``-1``: any size); XLA's own caches have nothing to do here."""
    code = (
        "import srcjax, numpy as np\n"
        f"srcjax.config.update({option!r}, {value!r})\n"
        "print(np.asarray(srcjax.jit(lambda x: x * 2.0 + 1.0)(np.arange(4, dtype=np.float32))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=_environ(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "[1. 3. 5. 7.]" in out.stdout
    assert bool(_entries(tmp_path)) == stored


# A product through BLAS plus a closed-over constant: the entry needs the BLAS symbols bound and the constant
# in its key.
GEMM = r"""
import json, sys
import numpy as np
import srcjax
from srcjax.codegen import cache

c = np.arange(12, dtype=np.float32).reshape(3, 4) * float(sys.argv[1])
a = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
b = np.linspace(0, 2, 8, dtype=np.float32).reshape(2, 4)
f = srcjax.jit(lambda a, b: a @ b + c)
y = np.asarray(f(a, b))
assert f.lower(a, b).compile().native is not None
print(json.dumps({"stats": cache.stats, "error": float(np.max(np.abs(y - (a.astype(np.float64) @ b + c))))}))
"""


def test_constants_and_blas_products_are_cached(tmp_path):
    def run(scale):
        out = subprocess.run(
            [sys.executable, "-c", GEMM, scale],
            cwd=ROOT,
            env=_environ(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["error"] < 1e-5
        return result["stats"]

    assert run("1.0") == {"hits": 0, "misses": 1}
    assert run("1.0") == {"hits": 1, "misses": 0}
    assert run("2.0") == {"hits": 0, "misses": 1}  # same IR, other constant: its own entry
