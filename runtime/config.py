"""Configuration flags, read and set like JAX's: ``config.update("jax_enable_x64", True)``.

Each flag may also be set from the environment (``JAX_ENABLE_X64=1``) before the first import.
"""

from __future__ import annotations

import os
from typing import Any, Callable


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _platform(value: Any) -> str | None:
    if value is None or value == "":
        return None
    value = str(value).lower()
    for name in value.split(","):
        if name not in ("cpu", "gpu", "cuda"):
            raise ValueError(f"jax_platform_name: unknown platform '{name}' (known: cpu, gpu, cuda)")
    return value


def _size(value: Any) -> int:
    """A size in bytes or a count: -1 (no limit) or more."""
    n = int(value)
    if n < -1:
        raise ValueError(f"expected a size of at least -1 (no limit), got {value!r}")
    return n


def _positive_int(value: Any) -> int:
    n = int(value)
    if n < 1:
        raise ValueError(f"jax_num_cpu_devices must be at least 1, got {value!r}")
    return n


# name -> (default, converter)
_FLAGS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "jax_enable_x64": (False, _bool),
    "jax_num_cpu_devices": (1, _positive_int),
    "jax_threefry_partitionable": (False, _bool),
    "jax_platform_name": (None, _platform),
    "jax_platforms": (None, _platform),
    "jax_debug_nans": (False, _bool),
    "jax_debug_infs": (False, _bool),
    "jax_disable_jit": (False, _bool),
    "jax_enable_checks": (False, _bool),
    "jax_default_matmul_precision": (None, lambda v: v),
    "jax_numpy_rank_promotion": ("allow", str),
    "jax_random_seed_offset": (0, int),
    "jax_default_prng_impl": ("threefry2x32", str),
    "jax_compilation_cache_dir": (None, lambda v: v),
    # the disk cache's size in bytes, least recently used entries deleted beyond it (JAX's option; -1: no
    # limit, 0: nothing written). JAX's default is -1; ours is bounded, since every jit is cached.
    "jax_compilation_cache_max_size": (256 << 20, _size),
    # compiled specialisations each jitted function keeps (least recently compiled dropped first; -1: no limit)
    "srcjax_jit_cache_max_entries": (1024, _size),
    # compiled code kept loaded for reuse by later jits of the same function and types, by count and by bytes
    "srcjax_code_cache_max_entries": (512, _size),
    "srcjax_code_cache_max_size": (256 << 20, _size),
}


class Config:
    def __init__(self) -> None:
        values = {}
        for name, (default, convert) in _FLAGS.items():
            env = os.environ.get(name.upper())
            values[name] = convert(env) if env is not None else default
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_listeners", [])

    def update(self, name: str, value: Any) -> None:
        if name not in _FLAGS:
            raise AttributeError(f"unknown config option '{name}'; known options: {', '.join(sorted(_FLAGS))}")
        self._values[name] = _FLAGS[name][1](value)
        for listener in self._listeners:
            listener(name)

    def read(self, name: str) -> Any:
        if name not in _FLAGS:
            raise AttributeError(f"unknown config option '{name}'")
        return self._values[name]

    def on_update(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(name)`` after every update (caches keyed on flags drop their entries)."""
        self._listeners.append(listener)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"unknown config option '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("use config.update(name, value) to change an option")

    @property
    def x64_enabled(self) -> bool:
        return self._values["jax_enable_x64"]


config = Config()
