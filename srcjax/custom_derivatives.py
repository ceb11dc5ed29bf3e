"""``srcjax.custom_derivatives`` (``jax.custom_derivatives``): the custom-rule decorators, under their module's
name."""

from srcjax.runtime.autodiff import CustomVJPPrimal, SymbolicZero, custom_jvp, custom_vjp  # noqa: F401
