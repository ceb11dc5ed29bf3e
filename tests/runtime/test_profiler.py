"""``srcjax.profiler``, ``srcjax.stages`` and ``srcjax.version``: what JAX's tutorials use of them."""

import gzip
import json
import pathlib

import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import profiler


def test_trace_writes_the_annotated_regions(tmp_path):
    @profiler.annotate_function
    def step(x):
        return x + 1

    with profiler.trace(tmp_path):
        with profiler.TraceAnnotation("outer", size=3):
            step(jnp.ones(3)).block_until_ready()
        with profiler.StepTraceAnnotation("train", step_num=7):
            pass
    (written,) = pathlib.Path(tmp_path, "plugins", "profile").glob("*/*.trace.json.gz")
    events = json.loads(gzip.decompress(written.read_bytes()))["traceEvents"]
    names = [e["name"] for e in events]
    assert "outer" in names and "train" in names and any(n.endswith("step") for n in names)
    assert all(e["dur"] >= 0 for e in events)
    with profiler.TraceAnnotation("ignored"):  # (no trace running: nothing recorded, nothing fails)
        pass


def test_start_stop_trace_and_memory_profile(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already been started"):
        profiler.start_trace(str(tmp_path))
    profiler.stop_trace()
    assert isinstance(profiler.device_memory_profile(), bytes)
    profiler.save_device_memory_profile(tmp_path / "memory.prof")
    assert gzip.decompress((tmp_path / "memory.prof").read_bytes()) == b""


def test_stages_and_version():
    wrapped = srcjax.jit(lambda x: x * 2)
    lowered = wrapped.lower(1.0)
    assert isinstance(wrapped, srcjax.stages.Wrapped) and isinstance(lowered, srcjax.stages.Lowered)
    assert isinstance(lowered.compile(), srcjax.stages.Compiled)
    assert srcjax.version.__version__ == srcjax.__version__
    assert srcjax.__version_info__ == tuple(int(p) for p in srcjax.__version__.split("."))
