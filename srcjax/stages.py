"""``srcjax.stages`` (``jax.stages``): the types of a jitted function's stages, for annotations and isinstance:
``Wrapped`` (``jit(f)``), ``Traced`` (``jit(f).trace(*args)``), ``Lowered`` (``.lower()``) and ``Compiled``
(``.compile()``), and ``ArgInfo`` (what their ``args_info`` holds per argument)."""

from typing import Union

from srcjax.runtime.api import Jitted as Wrapped
from srcjax.runtime.stages import ArgInfo, Compiled, Lowered, Traced

CompilerOptions = dict[str, Union[str, bool]]  # (``Lowered.compile``'s options: srcjax's compiler takes none)

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
