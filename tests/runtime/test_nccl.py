"""NCCL through ctypes (runtime/nccl.py): the library from the ``nvidia-nccl-cu13`` wheel (or ``SRCJAX_NCCL``),
its version, unique ids, and a communicator's id agreed over MPI. Creating the communicator needs a GPU; without
one NCCL's error comes back as an ``NcclError`` that says so. Skipped where NCCL is not installed (CI: it is a
300 MB extra, ``pip install 'srcjax[nccl]'``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from srcjax.runtime import nccl

pytestmark = pytest.mark.skipif(nccl.library_path() is None, reason="NCCL is not installed (srcjax[nccl])")


def test_version_and_unique_ids():
    lib = nccl.Nccl()
    major, minor, _ = lib.version()
    assert (major, minor) >= (2, 18)
    first, second = lib.unique_id(), lib.unique_id()
    assert len(first) == nccl.UNIQUE_ID_BYTES and first != second


def test_a_communicator_needs_its_ids_bytes_and_a_rank_inside_it():
    lib = nccl.Nccl()
    with pytest.raises(ValueError, match="128 bytes"):
        nccl.Communicator(lib, b"short", 2, 0)
    with pytest.raises(ValueError, match="outside"):
        nccl.Communicator(lib, lib.unique_id(), 2, 2)


def test_without_a_gpu_the_communicator_fails_with_nccls_reason():
    if Path("/dev/nvidia0").exists():
        pytest.skip("a GPU is present")
    with pytest.raises(nccl.NcclError, match="ncclCommInitRank failed"):
        nccl.Communicator(nccl.Nccl(), nccl.Nccl().unique_id(), 1, 0)


AGREE = """
import numpy as np, sys
import srcjax
from srcjax.runtime import nccl
srcjax.distributed.initialize()
from srcjax.runtime.distributed import _state
uid = nccl.shared_unique_id(_state.engine, nccl.Nccl())
everyone = _state.engine.allgather(np.frombuffer(uid, np.uint8))
assert (everyone == everyone[0]).all(), "the processes got different ids"
print("agreed", len(uid))
"""


def test_processes_agree_on_a_communicators_id_over_mpi():
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec (srcjax[mpi])")
    run = subprocess.run([str(mpiexec), "-n", "2", sys.executable, "-c", AGREE], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("agreed 128") == 2
