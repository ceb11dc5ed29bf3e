"""``srcjax.dlpack`` (``jax.dlpack``): arrays from other libraries through the DLPack protocol."""

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime.numpy.creation import from_dlpack  # noqa: F401


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` can be exchanged: srcjax's dtypes (bool, integers, floats, complex)."""
    dtype = np.dtype(dtype)
    return dtype.kind in "biufc" and dtype.itemsize <= 16 and dtype != getattr(dtypes, "bfloat16", None)
