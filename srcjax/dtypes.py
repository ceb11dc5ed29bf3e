"""``srcjax.dtypes`` (``jax.dtypes``): dtype canonicalisation and promotion."""

from srcjax.runtime.dtypes import (  # noqa: F401
    TypePromotionError,
    canonicalize_dtype,
    extended,
    is_weakly_typed,
    issubdtype,
    prng_key,
    promote_types,
)
from srcjax.runtime.dtypes import jax_result_type as result_type  # noqa: F401
from srcjax.runtime.numpy._core import finfo, iinfo  # noqa: F401
from srcjax.runtime.autodiff import FLOAT0 as float0  # noqa: F401 - the tangent dtype of integer values
