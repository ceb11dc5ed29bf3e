"""``srcjax.typing`` (``jax.typing``): the annotations user code writes for array arguments and dtypes."""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from srcjax.runtime.array import Array

# what the array functions accept: arrays, NumPy arrays and scalars, Python numbers
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
# what ``dtype=`` accepts: a name, a NumPy dtype or scalar type, a Python type, or anything with ``.dtype``
DTypeLike = Union[str, type[Any], np.dtype, Any]

__all__ = ["ArrayLike", "DTypeLike"]
