"""The closed set of primitives, one family module each; importing this registers them all."""

from srcjax.transpiler.primitives import (  # noqa: F401 - imported to register
    collectives,
    control,
    convolution,
    custom,
    elementwise,
    fft,
    indexing,
    linalg,
    random,
    reduce,
    shape,
)
from srcjax.transpiler.primitives.core import PRIMITIVES, Primitive  # noqa: F401
