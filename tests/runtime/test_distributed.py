"""Processes under ``mpiexec`` (two with two devices each, and four with one) give what one process gives over
four devices: every collective (MPI's own collectives between the processes), derivatives through them, and
data-parallel training of the MLP example, which ends where single-device training ends.

``make test`` installs the ``mpi`` extra (mpi4py and MPICH) and sets ``SRCJAX_REQUIRE_MPI=1``, so these run on
every CI machine; elsewhere they skip when no ``mpiexec`` is installed beside the interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import srcjax
from srcjax.runtime import distributed
from tests.runtime import parallel_programs as programs

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


@pytest.fixture(scope="module", params=[(2, 2), (4, 1)], ids=["2x2", "4x1"])
def mpi_results(request, tmp_path_factory) -> tuple[int, list[dict[str, np.ndarray]]]:
    """(devices per process, each process's results) of ``parallel_programs.py`` under ``mpiexec``."""
    processes, local = request.param
    mpiexec = _mpiexec()
    if mpiexec is None:
        if os.environ.get("SRCJAX_REQUIRE_MPI") == "1":
            pytest.fail("SRCJAX_REQUIRE_MPI=1 but no mpiexec is installed (pip install 'srcjax[mpi]')")
        pytest.skip("no mpiexec (pip install 'srcjax[mpi]')")
    out = tmp_path_factory.mktemp("mpi") / "results"
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
               JAX_PLATFORMS="cpu")  # (the processes' virtual CPU devices, a GPU present or not)
    run = subprocess.run([mpiexec, "-n", str(processes), sys.executable, programs.__file__, str(out), str(local)],
                         capture_output=True, text=True, timeout=600, env=env, cwd=root)
    assert run.returncode == 0, f"mpiexec failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    return local, [dict(np.load(f"{out}.{rank}.npz")) for rank in range(processes)]


@pytest.fixture
def four_devices():
    saved = srcjax.config.jax_num_cpu_devices
    srcjax.config.update("jax_num_cpu_devices", programs.DEVICES)
    yield
    srcjax.config.update("jax_num_cpu_devices", saved)


def test_devices_span_the_processes(mpi_results):
    local, processes = mpi_results[0], len(mpi_results[1])
    for rank, results in enumerate(mpi_results[1]):
        np.testing.assert_array_equal(results["devices"], [0, 1, 2, 3])
        np.testing.assert_array_equal(results["local_devices"], list(range(local * rank, local * (rank + 1))))
        np.testing.assert_array_equal(results["counts"], [rank, processes, processes * local, local])


@pytest.mark.parametrize("mode", ["batched", "replicas"])
def test_collectives_in_one_process_are_jaxs(four_devices, monkeypatch, mode):
    """Every collective of ``parallel_programs.collectives`` over four devices of one process, batched and on
    replicas (threads), against JAX 0.10.2's pmap over four host devices (jax_collectives.npz; JAX defines no
    derivative of pmax, whose tie rule test_collective_grads.py checks)."""
    monkeypatch.setenv("SRCJAX_PMAP", mode)
    ours = programs.collectives(programs.X)
    with np.load(Path(__file__).with_name("jax_collectives.npz")) as recorded:
        assert set(recorded.files) == set(ours) - {"grad_pmax"}
        for name in recorded.files:
            assert ours[name].shape == recorded[name].shape, name
            np.testing.assert_allclose(ours[name], recorded[name], rtol=1e-6, atol=1e-6, err_msg=name)


def test_collectives_across_processes_match_one_process(mpi_results, four_devices):
    reference = programs.collectives(programs.X)
    local = mpi_results[0]
    for rank, results in enumerate(mpi_results[1]):
        rows = slice(rank * local, (rank + 1) * local)
        for name, expected in reference.items():
            np.testing.assert_allclose(results[name], expected[rows], rtol=1e-6, atol=1e-6,
                                       err_msg=f"{name} on process {rank}")


def test_multihost_utils_across_processes(mpi_results):
    count = len(mpi_results[1])
    for results in mpi_results[1]:
        np.testing.assert_array_equal(results["multihost_stacked"], [[p, 10 * p] for p in range(count)])
        np.testing.assert_array_equal(results["multihost_tiled"], np.arange(count, dtype=np.float32))
        np.testing.assert_array_equal(results["multihost_broadcast"], [1.0])  # (process 0's)
        assert results["multihost_raised"]
        np.testing.assert_array_equal(results["multihost_preemption"], [False, False, True])


def test_data_parallel_training_over_processes_ends_where_one_device_ends(mpi_results):
    single = programs.flat(programs.train_single(programs.STEPS))
    for results in mpi_results[1]:
        for name, expected in single.items():
            np.testing.assert_allclose(results[name], expected, rtol=2e-5, atol=2e-6, err_msg=name)


def test_data_parallel_training_in_one_process_ends_where_one_device_ends(four_devices):
    single = programs.flat(programs.train_single(programs.STEPS))
    parallel = programs.flat(programs.train_data_parallel(programs.STEPS, *programs.shards(programs.DEVICES, 0)))
    for name, expected in single.items():
        np.testing.assert_allclose(parallel[name], expected, rtol=2e-5, atol=2e-6, err_msg=name)


# -- initialize ----------------------------------------------------------------------------------------------------
@pytest.fixture
def fresh_world():
    distributed.shutdown()
    yield
    distributed.shutdown()


def test_one_process_alone(fresh_world):
    srcjax.distributed.initialize(num_processes=1)
    assert srcjax.distributed.is_initialized()
    assert (srcjax.process_index(), srcjax.process_count()) == (0, 1)
    with pytest.raises(RuntimeError, match="only be called once"):
        srcjax.distributed.initialize(num_processes=1)


def test_processes_not_started_by_mpi_cannot_meet(fresh_world, monkeypatch):
    for name in distributed._LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match=r"mpiexec -n 2"):
        srcjax.distributed.initialize("localhost:1234", num_processes=2, process_id=0)
    with pytest.raises(ValueError, match="coordinator_address"):
        srcjax.distributed.initialize()
    assert not srcjax.distributed.is_initialized()


def test_a_cross_process_collective_without_other_processes_is_an_error(fresh_world):
    from srcjax.transpiler.primitives import processes

    with pytest.raises(RuntimeError, match="not joined"):
        processes.process_allreduce_p.bind(np.ones(3, np.float32), op="sum")
