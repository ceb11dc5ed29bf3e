"""The code generator's tests are of the CPU's native code: the CPU is their default backend, GPU or not (the
GPU backend's kernels are tested through the host emulation directly, test_ptx_emulation.py)."""

import pytest


@pytest.fixture(autouse=True)
def _on_the_cpu(cpu_backend):
    yield
