"""``jax.profiler``: traces of the annotated regions a program runs through, written where TensorBoard and Perfetto
look for them (``LOG_DIR/plugins/profile/<run>/<host>.trace.json.gz``, Chrome's trace-event JSON).

JAX's profiler records every XLA op as well; srcjax records the regions named by ``TraceAnnotation``,
``StepTraceAnnotation`` and ``annotate_function`` while a trace runs (outside one they cost a check). The
device memory profile is an empty pprof profile: srcjax's arrays are host memory, which it does not sample.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import gzip
import json
import os
import socket
import threading
import time
from typing import Any, Callable, Iterator

_lock = threading.Lock()
_session: dict[str, Any] | None = None  # the trace running: its log_dir and events


def start_trace(log_dir: Any, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                profiler_options: Any = None) -> None:
    """Start recording; ``stop_trace`` writes what was recorded under ``log_dir``."""
    global _session
    with _lock:
        if _session is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be run at a time.")
        _session = {"log_dir": os.fspath(log_dir), "events": [], "perfetto": bool(create_perfetto_trace)}


def stop_trace() -> None:
    """Stop recording and write the trace (``plugins/profile/<run>/<host>.trace.json.gz`` under the log dir)."""
    global _session
    with _lock:
        if _session is None:
            raise RuntimeError("No profile started")
        session, _session = _session, None
    run = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
    folder = os.path.join(session["log_dir"], "plugins", "profile", run)
    os.makedirs(folder, exist_ok=True)
    trace = {"displayTimeUnit": "ns", "traceEvents": session["events"]}
    with gzip.open(os.path.join(folder, f"{socket.gethostname()}.trace.json.gz"), "wt") as f:
        json.dump(trace, f)
    if session["perfetto"]:
        with gzip.open(os.path.join(folder, "perfetto_trace.json.gz"), "wt") as f:
            json.dump(trace, f)


@contextlib.contextmanager
def trace(log_dir: Any, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options: Any = None) -> Iterator[None]:
    """``with trace(log_dir):`` records the block (``start_trace`` then ``stop_trace``)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """``with TraceAnnotation("name", **kwargs):`` names the block in the trace (its kwargs become the event's
    arguments)."""

    def __init__(self, name: str, **kwargs: Any):
        self.name, self.kwargs = name, kwargs
        self._starts: list[int] = []

    def __enter__(self) -> TraceAnnotation:
        self._starts.append(time.perf_counter_ns())
        return self

    def __exit__(self, *exc: Any) -> None:
        start = self._starts.pop()
        session = _session
        if session is not None:
            end = time.perf_counter_ns()
            session["events"].append({"name": self.name, "ph": "X", "ts": start / 1e3, "dur": (end - start) / 1e3,
                                      "pid": os.getpid(), "tid": threading.get_ident(),
                                      "args": {k: str(v) for k, v in self.kwargs.items()}})


class StepTraceAnnotation(TraceAnnotation):
    """A training step's block: ``with StepTraceAnnotation("train", step_num=step):``."""

    def __init__(self, name: str, **kwargs: Any):
        super().__init__(name, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs: Any) -> Callable:
    """``func``, each call of it a ``TraceAnnotation`` named ``name`` (default: its qualified name)."""
    name = name or getattr(func, "__qualname__", None) or getattr(func, "__name__", "function")

    @functools.wraps(func)
    def annotated(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)

    return annotated


def device_memory_profile(backend: str | None = None) -> bytes:
    """The devices' memory as a gzipped pprof profile: an empty one (srcjax does not sample host memory)."""
    if backend is not None:
        from srcjax.runtime.devices import _check

        _check(backend)
    return gzip.compress(b"", mtime=0)


def save_device_memory_profile(filename: Any, backend: str | None = None) -> None:
    """Write ``device_memory_profile(backend)`` to ``filename``."""
    with open(filename, "wb") as f:
        f.write(device_memory_profile(backend))


def start_server(port: int) -> None:
    raise NotImplementedError("jax.profiler.start_server: srcjax has no profiler server; use trace(log_dir)")


def stop_server() -> None:
    raise NotImplementedError("jax.profiler.stop_server: srcjax has no profiler server; use trace(log_dir)")
