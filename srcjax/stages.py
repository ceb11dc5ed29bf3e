"""``srcjax.stages`` (``jax.stages``): the types of a jitted function's stages, for annotations and isinstance:
``Wrapped`` (``jit(f)``), ``Lowered`` (``jit(f).lower(*args)``) and ``Compiled`` (``.compile()``)."""

from srcjax.runtime.api import AotCompiled as Compiled
from srcjax.runtime.api import Jitted as Wrapped
from srcjax.runtime.api import Lowered

__all__ = ["Compiled", "Lowered", "Wrapped"]
