"""Running one program: written to a real file (srcjax reads source through ``inspect``), loaded twice (srcjax,
and NumPy as ``jnp`` for the float64 oracle), given random inputs, and compared leaf by leaf.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import pathlib
import re
import runpy
import signal
import tempfile
from typing import Any, Callable, Iterator

import numpy as np

import srcjax
from srcjax.runtime import tree_util
from tests.fuzz.program import Program, map_spec, shape_value

_counter = itertools.count()
_directory: pathlib.Path | None = None


class Mismatch(Exception):
    """A check failed: ``check`` names it, ``kind`` is "mismatch" or the srcjax exception's type (a crash)."""

    def __init__(self, check: str, kind: str, detail: str):
        super().__init__(f"[{check}] {kind}: {detail}")
        self.check, self.kind, self.detail = check, kind, detail

    @property
    def signature(self) -> tuple[str, str, str]:
        """What the shrinker keeps failing: the same check, failing the same way (for a crash, with the same
        message, numbers left out: shapes change as the program shrinks)."""
        if self.kind == "mismatch":
            return self.check, self.kind, ""
        found = re.search(r"error: ([^|]*)", self.detail)
        head = (found.group(1) if found else self.detail.split("|")[0]).strip()
        return self.check, self.kind, re.sub(r"\d+", "#", head)[:100]


class Invalid(Exception):
    """The program is ill-posed at these inputs (NumPy fails, a value is not finite or is huge, or the output
    jumps under a tiny change of the inputs): not a test of srcjax."""


def work_directory() -> pathlib.Path:
    global _directory
    if _directory is None:
        _directory = pathlib.Path(tempfile.mkdtemp(prefix="srcjax_fuzz_"))
    return _directory


class _Float32NumPy:
    """NumPy whose array constructors make float32 (``jnp`` for a float32 NumPy run): a second reference with
    other rounding. Where it and the float64 one disagree, the program's output hangs on rounding (a comparison
    of values that are equal in exact arithmetic, say), and a float32 run cannot be checked against it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def _f32(x: Any) -> Any:
        x = np.asarray(x)
        return x.astype(np.float32) if x.dtype == np.float64 else x

    def ones(self, shape):
        return np.ones(shape, np.float32)

    def zeros(self, shape):
        return np.zeros(shape, np.float32)

    def full(self, shape, value):
        return np.full(shape, value, np.float32)

    def eye(self, n):
        return np.eye(n, dtype=np.float32)

    def linspace(self, start, stop, num):
        return np.linspace(start, stop, num, dtype=np.float32)

    def arange(self, n):
        return np.arange(n, dtype=np.float32)

    def asarray(self, x):
        return self._f32(x)

    def where(self, c, x, y):
        return self._f32(np.where(c, x, y))

    def broadcast_to(self, x, shape):
        # laid out in memory, as srcjax's products take their operands: NumPy multiplies a broadcast view with
        # its own loop, the same for every row, but BLAS may round the rows of a matrix differently, and a
        # program comparing such rows for equality (seed 600039) then hangs on rounding
        return np.ascontiguousarray(np.broadcast_to(x, shape))


FLOAT32_NUMPY = _Float32NumPy()


class Loaded:
    """A program's module under srcjax (``fn``) and under NumPy (``reference``); ``source`` replaces the
    program's rendering (a regression case's file)."""

    def __init__(self, program: Program, source: str | None = None, compiled_only: bool | None = None):
        self.program = program
        self.source = program.render() if source is None else source
        path = work_directory() / f"fuzz_{os.getpid()}_{next(_counter)}.py"
        path.write_text(self.source)
        self.path = path
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.module = module
        self.fn = getattr(module, program.entry)
        self.reference = runpy.run_path(str(path), init_globals={"__fuzz_numpy__": np})[program.entry]
        self.reference32 = runpy.run_path(str(path), init_globals={"__fuzz_numpy__": FLOAT32_NUMPY})[program.entry]
        self.compiled_only = program.compiled_only() if compiled_only is None else compiled_only


def sample(program: Program, seed: int, batch: int | None = None) -> list[Any]:
    """Float32 normal inputs for ``program``'s arguments (with a leading ``batch`` axis when given)."""
    rng = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    return [map_spec(lambda s: rng.normal(size=lead + shape_value(s, program.dims)).astype(np.float32), spec)
            for spec in program.arg_specs]


def as64(tree: Any) -> Any:
    return tree_util.tree_map(lambda x: np.asarray(x, np.float64), tree)


def as_srcjax(tree: Any) -> Any:
    return tree_util.tree_map(lambda x: srcjax.numpy.asarray(x), tree)


def leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def run_reference(loaded: Loaded, args: list[Any]) -> Any:
    """NumPy in float64 on ``args``; ``Invalid`` where NumPy fails or the values are not small and finite."""
    try:
        with np.errstate(all="raise", under="ignore"):
            out = loaded.reference(*as64(args))
    except Exception as e:  # noqa: BLE001 - a program NumPy cannot run (e.g. one the shrinker broke) is no test
        raise Invalid(f"NumPy: {type(e).__name__}: {e}") from None
    except Hang:
        raise Invalid("NumPy does not finish") from None
    for leaf in leaves(out):
        if leaf.dtype.kind != "f" or not np.all(np.isfinite(leaf)) or np.max(np.abs(leaf), initial=0) > 1e4:
            raise Invalid("the reference output is not finite floats of moderate size")
    return out


def rounding_matters(loaded: Loaded, args: list[Any], want: Any, rtol: float, atol: float) -> bool:
    """Whether NumPy in float32 disagrees with NumPy in float64 (``want``) beyond the tolerances."""
    try:
        with np.errstate(all="ignore"):
            got = loaded.reference32(*args)
        compare("float32 NumPy", got, want, rtol, atol)
    except Mismatch:
        return True
    except Exception:  # noqa: BLE001 - float32 NumPy fails where float64 runs: rounding matters
        return True
    return False


def conditioning(loaded: Loaded, args: list[Any], seed: int) -> Any:
    """The reference output, after checking that it moves little when the inputs move by a few float32 ulps:
    a branch or loop exit that flips under float32 rounding would make float32 runs disagree with float64."""
    want = run_reference(loaded, args)
    rng = np.random.default_rng(seed + 7919)
    for _ in range(2):
        nudged = tree_util.tree_map(lambda x: np.asarray(x, np.float64) * (1 + 3e-5 * rng.standard_normal(np.shape(x))),
                                    args)
        moved = run_reference(loaded, nudged)
        for a, b in zip(leaves(want), leaves(moved)):
            if np.max(np.abs(a - b), initial=0) > 1e-2 * max(1.0, float(np.max(np.abs(a), initial=0))):
                raise Invalid("the output jumps under a relative change of the inputs of 3e-5")
    return want


def compare(check: str, got: Any, want: Any, rtol: float, atol: float) -> None:
    """Leaf by leaf: same structure and shapes, values within ``rtol`` and ``atol`` times the leaf's scale."""
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    if got_tree != want_tree:
        raise Mismatch(check, "mismatch", f"result structure {got_tree} != {want_tree}")
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            raise Mismatch(check, "mismatch", f"leaf {i}: shape {g.shape} != {w.shape}")
        if not np.all(np.isfinite(g)):
            raise Mismatch(check, "mismatch", f"leaf {i}: not finite: {g!r}, expected {w!r}")
        scale = max(1.0, float(np.max(np.abs(w), initial=0)))
        bad = np.abs(g.astype(np.float64) - w) > atol * scale + rtol * np.abs(w)
        if np.any(bad):
            raise Mismatch(check, "mismatch", f"leaf {i}: got {g!r}, expected {w!r}")


def crash(check: str, error: BaseException) -> Mismatch:
    message = str(error).strip().split("\n")
    return Mismatch(check, type(error).__name__, " | ".join(message[:6])[:600])


@contextlib.contextmanager
def x64() -> Iterator[None]:
    saved = srcjax.config.jax_enable_x64
    srcjax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        srcjax.config.update("jax_enable_x64", saved)


@contextlib.contextmanager
def native(enabled: bool) -> Iterator[None]:
    """``SRCJAX_NATIVE``, read when ``jit`` compiles a specialisation."""
    saved = os.environ.get("SRCJAX_NATIVE")
    os.environ["SRCJAX_NATIVE"] = "1" if enabled else "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SRCJAX_NATIVE"]
        else:
            os.environ["SRCJAX_NATIVE"] = saved


class Hang(BaseException):
    """A check ran past its time limit (a BaseException, so that no ``except Exception`` in srcjax eats it)."""


TIME_LIMIT = 20.0  # seconds per check: a program runs in well under a second and compiles in a few; longer is a hang


@contextlib.contextmanager
def time_limit(seconds: float | None = None) -> Iterator[None]:
    """Raise ``Hang`` in this (the main) thread after ``seconds`` (``TIME_LIMIT`` by default)."""

    def expire(signum, frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT if seconds is None else seconds)
    try:
        yield
    except Hang:
        _restart_code_generator()
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def default_time_limit(seconds: float | None) -> Iterator[None]:
    """``TIME_LIMIT`` set to ``seconds`` for a while (None: unchanged)."""
    global TIME_LIMIT
    saved = TIME_LIMIT
    TIME_LIMIT = saved if seconds is None else seconds
    try:
        yield
    finally:
        TIME_LIMIT = saved


def _restart_code_generator() -> None:
    """A ``Hang`` raised while the compiler talked to its code-generating child process leaves the exchange half
    done, and every later compilation reads the wrong reply: stop the child (srcjax starts a new one). (A
    Ctrl-C there does the same to a user's session: reported as a bug.)"""
    try:
        from srcjax.codegen.llvm import engine

        engine._worker.stop()
    except Exception:  # noqa: BLE001 - srcjax without such a child process: nothing to do
        pass


def guarded(check: str, run: Callable[[], Any]) -> Any:
    """``run()``, with any exception from srcjax reported as a crash of ``check`` (and a hang as "Hang")."""
    try:
        return run()
    except Mismatch:
        raise
    except Hang:
        raise Mismatch(check, "Hang", f"still running after {TIME_LIMIT:.0f} s") from None
    except Exception as e:  # noqa: BLE001 - whatever srcjax raises is the finding
        raise crash(check, e) from e
