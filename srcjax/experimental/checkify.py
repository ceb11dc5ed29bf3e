"""``srcjax.experimental.checkify`` (``jax.experimental.checkify``): checks inside compiled code, as error values."""

from srcjax.runtime.checkify import (
    all_checks, automatic_checks, checkify, div_checks, float_checks, index_checks, nan_checks, user_checks,
)
from srcjax.runtime.checks import (
    DivisionByZeroError, Error, FailedCheckError, JaxRuntimeError, NaNError, OOBError, check, check_error,
    debug_check, init_error,
)

ErrorCategory = type

__all__ = [
    "DivisionByZeroError", "Error", "ErrorCategory", "FailedCheckError", "JaxRuntimeError", "NaNError", "OOBError",
    "all_checks", "automatic_checks", "check", "check_error", "checkify", "debug_check", "div_checks", "float_checks",
    "index_checks", "init_error", "nan_checks", "user_checks",
]
