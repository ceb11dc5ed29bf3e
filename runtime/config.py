"""Configuration flags, read and set like JAX's: ``config.update("jax_enable_x64", True)``.

Each flag may also be set from the environment (``JAX_ENABLE_X64=1``) before the first import.
"""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Any, Callable, Iterator


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


def _one_of(name: str, choices: tuple, allow_none: bool = False) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None and allow_none:
            return None
        if value not in choices:
            none = "None or " if allow_none else ""
            raise ValueError(f"{name}: the value must be {none}one of {list(choices)}, got {value!r}")
        return value

    return convert


# JAX's names for matrix product precisions (``jax_default_matmul_precision``)
MATMUL_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32", "ANY_F8_ANY_F8_F32",
    "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32",
    "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32",
    "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64",
)


def _prng_impl(value: Any) -> str:
    if value not in ("threefry2x32", "rbg", "unsafe_rbg"):
        raise ValueError(f"jax_default_prng_impl: the value must be one of ['threefry2x32', 'rbg', 'unsafe_rbg'], "
                         f"got {value!r}")
    if value != "threefry2x32":
        raise NotImplementedError(f"jax_default_prng_impl={value!r}: srcjax implements the threefry2x32 keys only")
    return value


def _device_or_platform(value: Any) -> Any:
    """``jax_default_device``: None, a device, or a platform's name."""
    if value is None or (isinstance(value, str) and value in ("cpu", "gpu", "cuda")):
        return value
    if not isinstance(value, str) and hasattr(value, "platform") and hasattr(value, "id"):
        return value
    raise ValueError("jax.default_device must be passed either a Device object (e.g. `jax.devices('cpu')[0]`) or a "
                     f"platform name string like 'cpu' or 'gpu', got: {value!r}")


# JAX's transfer guard levels
TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


def _transfer_guard(value: Any) -> str | None:
    if value is not None and value not in TRANSFER_GUARD_LEVELS:
        raise ValueError(f"new enum value must be None or in {list(TRANSFER_GUARD_LEVELS)}, got {value!r} of type "
                         f"{type(value)}.")
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
    "jax_default_matmul_precision": (None, _one_of("jax_default_matmul_precision", MATMUL_PRECISIONS, True)),
    "jax_numpy_rank_promotion": ("allow", _one_of("jax_numpy_rank_promotion", ("allow", "warn", "raise"))),
    # "strict": only Python scalars (weak types) promote implicitly; other mixes raise TypePromotionError
    "jax_numpy_dtype_promotion": ("standard", _one_of("jax_numpy_dtype_promotion", ("standard", "strict"))),
    "jax_random_seed_offset": (0, int),
    "jax_high_dynamic_range_gumbel": (False, _bool),  # gumbel's mode when none is given: 'high' if set
    "jax_default_prng_impl": ("threefry2x32", _prng_impl),
    "jax_compilation_cache_dir": (None, lambda v: v),
    # "off": an error located in the user's source keeps srcjax's frames in its traceback (else only the user's)
    "jax_traceback_filtering": ("auto", _one_of("jax_traceback_filtering", (
        "off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto"))),
    # where arrays not placed explicitly live (a device or a platform name; None: the first local device)
    "jax_default_device": (None, _device_or_platform),
    # what a transfer between host and devices may do (JAX's levels; every CPU device shares the host's memory,
    # so srcjax accepts the levels and allows every transfer)
    "jax_transfer_guard": (None, _transfer_guard),
    "jax_transfer_guard_host_to_device": (None, _transfer_guard),
    "jax_transfer_guard_device_to_host": (None, _transfer_guard),
    "jax_transfer_guard_device_to_device": (None, _transfer_guard),
    # the disk cache's size in bytes, least recently used entries deleted beyond it (JAX's option; -1: no
    # limit, 0: nothing written). JAX's default is -1; ours is bounded, since every jit is cached.
    "jax_compilation_cache_max_size": (256 << 20, _size),
    # JAX's other options of the disk cache: off, and the smallest entry and shortest compilation it stores (-1 or
    # 0: any). JAX's default shortest compilation is 1 s; ours is 0, since native code compiles in 0.1-1 s.
    "jax_enable_compilation_cache": (True, _bool),
    "jax_persistent_cache_min_entry_size_bytes": (0, int),
    "jax_persistent_cache_min_compile_time_secs": (0.0, float),
    "jax_persistent_cache_enable_xla_caches": ("xla_gpu_per_fusion_autotune_cache_dir", str),  # (XLA's: none here)
    # compiled specialisations each jitted function keeps (least recently compiled dropped first; -1: no limit)
    "srcjax_jit_cache_max_entries": (1024, _size),
    # compiled code kept loaded for reuse by later jits of the same function and types, by count and by bytes
    "srcjax_code_cache_max_entries": (512, _size),
    "srcjax_code_cache_max_size": (256 << 20, _size),
}


# the options a trace reads (dtypes, the random bits' program, rank promotion's errors, ...): compiled code and
# traces are kept per value of them, as JAX keys its caches on them
TRACE_FLAGS = ("jax_enable_x64", "jax_numpy_rank_promotion", "jax_numpy_dtype_promotion", "jax_threefry_partitionable",
               "jax_default_prng_impl", "jax_default_matmul_precision", "jax_high_dynamic_range_gumbel")


class Config:
    def __init__(self) -> None:
        values, chosen = {}, set()
        for name, (default, convert) in _FLAGS.items():
            env = os.environ.get(name.upper())
            values[name] = convert(env) if env is not None else default
            if env is not None:
                chosen.add(name)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_chosen", chosen)
        object.__setattr__(self, "_listeners", [])

    def update(self, name: str, value: Any) -> None:
        if name not in _FLAGS:
            raise AttributeError(f"unknown config option '{name}'; known options: {', '.join(sorted(_FLAGS))}")
        self._values[name] = _FLAGS[name][1](value)
        self._chosen.add(name)
        for listener in self._listeners:
            listener(name)

    def chosen(self, name: str) -> bool:
        """Whether the option was set (``update``, or its environment variable) rather than left at its default."""
        return name in self._chosen

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

    def trace_state(self) -> tuple:
        """The values of ``TRACE_FLAGS``: part of every compilation cache's key."""
        values = self._values
        return tuple(values[name] for name in TRACE_FLAGS)

    @property
    def x64_enabled(self) -> bool:
        return self._values["jax_enable_x64"]


config = Config()


_NO_DEFAULT = object()


class State:
    """An option's context manager, as JAX exports them (``jax.enable_x64``, ``jax.debug_nans``, ...): ``with
    jax.debug_nans(True):``, or as a decorator, the option holds the value, then its old one again. ``value`` is
    its current value. The value is the process's (JAX keeps one per thread)."""

    def __init__(self, name: str, default: Any = _NO_DEFAULT):
        self.name = name
        self._default = default
        self.__doc__ = f"Context manager for `{name}` config option."

    @property
    def value(self) -> Any:
        return config.read(self.name)

    def __call__(self, new_value: Any = _NO_DEFAULT) -> _StateContext:
        if new_value is _NO_DEFAULT:
            if self._default is _NO_DEFAULT:
                raise TypeError(f"Context manager for {self.name.removeprefix('jax_')} config option requires an "
                                "argument representing the new value for the config option.")
            new_value = self._default
        return _StateContext(self.name, _FLAGS[self.name][1](new_value))

    def __repr__(self) -> str:
        return f"State({self.name}={self.value!r})"


class _StateContext:
    def __init__(self, name: str, value: Any):
        self.name, self.new_value, self.saved = name, value, []

    def __enter__(self) -> None:
        self.saved.append(config.read(self.name))
        config.update(self.name, self.new_value)

    def __exit__(self, *exc: Any) -> None:
        config.update(self.name, self.saved.pop())

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def with_value(*args: Any, **kwargs: Any) -> Any:
            with _StateContext(self.name, self.new_value):
                return function(*args, **kwargs)

        return with_value


enable_x64 = State("jax_enable_x64", True)
debug_nans = State("jax_debug_nans", True)
debug_infs = State("jax_debug_infs", True)
enable_checks = State("jax_enable_checks", True)
threefry_partitionable = State("jax_threefry_partitionable", True)
numpy_rank_promotion = State("jax_numpy_rank_promotion")
numpy_dtype_promotion = State("jax_numpy_dtype_promotion")
default_matmul_precision = State("jax_default_matmul_precision")
default_prng_impl = State("jax_default_prng_impl")
default_device = State("jax_default_device")
transfer_guard_host_to_device = State("jax_transfer_guard_host_to_device")
transfer_guard_device_to_host = State("jax_transfer_guard_device_to_host")
transfer_guard_device_to_device = State("jax_transfer_guard_device_to_device")


def transfer_guard(new_val: str) -> contextlib.AbstractContextManager:
    """``with transfer_guard("disallow"):`` sets the guard of every kind of transfer (JAX's
    ``jax.transfer_guard``)."""
    level = _transfer_guard(new_val)
    names = ("jax_transfer_guard_host_to_device", "jax_transfer_guard_device_to_host",
             "jax_transfer_guard_device_to_device", "jax_transfer_guard")

    @contextlib.contextmanager
    def guarded() -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for name in names:
                stack.enter_context(_StateContext(name, level))
            yield

    return guarded()
