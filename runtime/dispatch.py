"""Asynchronous dispatch: the one worker thread that runs large compiled calls in program order.

A compiled call whose work pays for the hand-off is queued as a ``Job`` and returns at once with Arrays whose
buffers are *pending* (``Array._pending`` holds a ``Pending``, one per result; reading ``_value`` waits for the
job). A finished job hands each result buffer to its ``Pending`` if something still holds that (an Array, a
queued job that reads it) and keeps none itself: a result nobody reads is freed at once, not kept alive by
its siblings (a training loop that keeps every step's loss must not keep every step's parameters). The
worker is a daemon thread fed by a FIFO queue, so jobs run in the order they were submitted: a job whose
inputs are outputs of earlier jobs finds them finished, and reads their buffers without blocking the caller.
A job that raises (a host callback can) keeps the exception; every read of its results, and of the results
of jobs that consumed them, raises it again.

The native entry of a large call releases the GIL (see ``codegen.llvm.compile.Executable``), so Python
goes on while the worker computes. A thread that waits for a job the worker has not started, every earlier
job being finished, runs it itself (``Job.wait``): waiting at once then costs what a synchronous call does.
A compiled call made inside a running job (from a host callback) runs at once, on that thread.

The worker is started on first use; a forked child starts its own (the parent's queue is drained before the
fork, and jobs queued after the drain fail in the child, so no Array of the child waits on a thread it does
not have). The worker is a daemon: the process exits without waiting for queued work.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from srcjax.codegen.settings import environ_int

# Calls whose buffers hold at least this many elements in all (inputs and results) run on the worker. Measured
# on the (2-core, shared) development machine with x * 0.5 + 1.0 in float32: a call whose result is waited for
# at once costs about 0.1 ms more queued than run in place (the woken worker competes for the cores and the
# GIL), while queued calls overlap: 10 chained calls on 2^21 elements take 5.3 ms instead of 10.0, a call
# beside a NumPy op of the same size 7.6 ms instead of 11.5. Below about 2^21 elements per array the 0.1 ms
# is more than a tenth of the call.
ASYNC_MIN_WORK = environ_int("SRCJAX_ASYNC_MIN_WORK", 1 << 22)

_lock = threading.Lock()
_worker: list[Any] = []  # [queue, thread] once started in this process
_outstanding: set[Job] = set()  # submitted, not yet run (what a forked child must not wait for)
# [jobs submitted, jobs finished] in this process: job number k may start once ``finished == k``
_count = [0, 0]
_running = threading.local()  # ``.job``: the job this thread is running (host callbacks run inside it)


class Pending:
    """One result of a queued job: ``buffer`` is set when the job has run (unless it raised)."""

    __slots__ = ("job", "buffer", "__weakref__")

    def __init__(self, job: Job):
        self.job, self.buffer = job, None


class Job:
    """One queued call: ``run(inputs, outs)`` with pending inputs resolved to their buffers first. ``outs``
    holds a buffer or None per result; None is allocated (``np.empty`` of ``types[j]``, a (shape, dtype)) when
    the job runs, not when it is queued: a chain of queued calls then reuses the memory its finished steps
    freed, instead of touching fresh pages for every step.

    A job is run by whichever thread *claims* it first: the worker when it comes to it, or a thread that waits
    for its results while every earlier job has finished and the worker has not started it (the waiter would
    otherwise sleep while the worker wakes up: running it itself costs no more than a synchronous call)."""

    __slots__ = ("run", "inputs", "outs", "types", "error", "number", "claimed", "_done", "_results")

    def __init__(self, run: Callable[[list, tuple], None], inputs: list, outs: list, types: Sequence[tuple]):
        self.run, self.inputs, self.outs, self.types, self.error = run, inputs, outs, types, None
        self.number, self.claimed = -1, False
        self._done = threading.Lock()
        self._done.acquire()  # released when the job has run
        self._results: list[weakref.ref] = []

    def results(self) -> list[Pending]:
        """A ``Pending`` per result (made before the job is submitted; the job holds them weakly)."""
        pending = [Pending(self) for _ in self.types]
        self._results = [weakref.ref(p) for p in pending]
        return pending

    def execute(self) -> None:
        inputs = self.inputs
        for i, item in enumerate(inputs):
            if type(item) is Pending:  # a result of an earlier job: finished, as every earlier job is
                if item.job.error is not None:
                    raise item.job.error
                inputs[i] = item.buffer
        outs = tuple(np.empty(*t) if o is None else o for o, t in zip(self.outs, self.types))
        self.outs = None
        self.run(inputs, outs)
        for ref, buffer in zip(self._results, outs):
            pending = ref()
            if pending is not None:
                pending.buffer = buffer

    def done(self) -> bool:
        return not self._done.locked()

    def wait(self) -> None:
        """Block until the job has run (running it here if it is next and not started); raise what it raised."""
        if not self.done():
            if getattr(_running, "job", None) is not None:  # waiting here would wait for ourselves
                raise RuntimeError("a pending result was read inside a running computation before it ran (a host "
                                   "callback read the result of a later compiled call)")
            if _claim(self, waiting=True):
                _run(self)
            else:
                self._done.acquire()
                self._done.release()
        if self.error is not None:
            raise self.error


def _claim(job: Job, waiting: bool) -> bool:
    """Whether this thread runs ``job``: nobody has claimed it, and (for a waiting thread) it is next in line."""
    with _lock:
        if job.claimed or (waiting and job.number != _count[1]):
            return False
        job.claimed = True
        return True


def _run(job: Job) -> None:
    outer, _running.job = getattr(_running, "job", None), job
    try:
        job.execute()
    except BaseException as e:  # noqa: BLE001 - kept on the job and raised where its results are read
        job.error = e
    finally:
        _running.job = outer
    job.inputs = None  # the inputs' buffers are free to be donated again
    if job.number >= 0:
        with _lock:
            _count[1] += 1
            _outstanding.discard(job)
    job._done.release()


def _work(jobs: queue.SimpleQueue) -> None:
    while True:
        job = jobs.get()
        if _claim(job, waiting=False):
            _run(job)
            del job
        else:  # a waiting thread runs it: the next job may read its results. (Only its lock is kept here: a
            # reference to the job would keep its buffers alive until this thread next gets the GIL.)
            done = job._done
            del job
            done.acquire()
            done.release()


def submit(job: Job) -> None:
    """Queue ``job`` behind every job submitted before it (inside a running job, run it at once: a host callback
    that calls a compiled function cannot wait for the jobs queued behind its own)."""
    if getattr(_running, "job", None) is not None:
        job.claimed = True
        _run(job)
        return
    with _lock:
        if not _worker:
            jobs: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=_work, args=(jobs,), name="srcjax-dispatch", daemon=True)
            thread.start()
            _worker.extend((jobs, thread))
        job.number = _count[0]
        _count[0] += 1
        _outstanding.add(job)
        _worker[0].put(job)


def wait_all() -> None:
    """Block until every submitted job has run."""
    if not _worker or getattr(_running, "job", None) is not None:
        return
    marker = Job(lambda inputs, outs: None, [], [], ())
    submit(marker)
    marker.wait()


def _after_fork_in_child() -> None:
    """The child has no worker: jobs its parent had not run (submitted after the drain) fail, not hang."""
    global _lock
    _lock = threading.Lock()
    _worker.clear()
    _count[1] = _count[0]
    for job in _outstanding:
        if not job.done():
            job.error = RuntimeError("a pending computation was lost: the process forked before it ran")
            job.inputs = None
            job._done.release()
    _outstanding.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=wait_all, after_in_child=_after_fork_in_child)
