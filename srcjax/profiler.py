"""``srcjax.profiler`` (``jax.profiler``): traces of annotated regions."""

from srcjax.runtime.profiler import (  # noqa: F401
    StepTraceAnnotation, TraceAnnotation, annotate_function, device_memory_profile, save_device_memory_profile,
    start_server, start_trace, stop_server, stop_trace, trace,
)
