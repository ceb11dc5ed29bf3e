"""The closed set of primitives, one family module each; importing this registers them all (and the op rules of
control flow, which live in modules of their own beside ``control``)."""

from srcjax.transpiler.primitives import (  # noqa: F401 - imported to register
    callback,
    collectives,
    control,
    control_jvp,
    control_vjp,
    control_vmap,
    convolution,
    custom,
    debug,
    elementwise,
    fft,
    indexing,
    linalg,
    processes,
    random,
    reduce,
    shape,
)
from srcjax.transpiler.primitives.core import PRIMITIVES, Primitive  # noqa: F401
