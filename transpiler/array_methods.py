"""Operators and methods shared by concrete arrays and the symbolic values of a function being compiled.

Both answer ``x + y``, ``x.sum()``, ``x.T`` or ``x.at[i].set(v)`` as ``srcjax.numpy`` does (which binds
primitives): user code run or compiled means NumPy's semantics on these values. The numpy module belongs to the
runtime, which installs it here when it is imported (``install_numpy_api``); ``transpiler`` imports nothing
above it, now or later.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

_api: list[ModuleType] = []


def install_numpy_api(module: ModuleType) -> None:
    _api[:] = [module]


def numpy_api() -> ModuleType:
    if not _api:
        raise RuntimeError("array operators and methods need srcjax.numpy: import srcjax (or srcjax.numpy) first")
    return _api[0]


_OPERAND_TYPES = (bool, int, float, complex, np.generic, np.ndarray)


def _binary(name: str, reflected: bool = False):
    def method(self, other):
        if not isinstance(other, _OPERAND_TYPES) and getattr(other, "aval", None) is None:
            return NotImplemented
        fn = getattr(numpy_api(), name)
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _unary(name: str):
    def method(self):
        return getattr(numpy_api(), name)(self)

    return method


def _forward(name: str):
    """A method that calls ``jnp.<name>(self, ...)``."""

    def method(self, *args, **kwargs):
        return getattr(numpy_api(), name)(self, *args, **kwargs)

    method.__name__ = name
    return method


class ArrayMethods:
    __slots__ = ()
    __array_priority__ = 100  # NumPy defers to our reflected operators

    @property
    def T(self):
        return numpy_api().transpose(self)

    @property
    def mT(self):
        return numpy_api().matrix_transpose(self)

    @property
    def real(self):
        return numpy_api().real(self)

    @property
    def imag(self):
        return numpy_api().imag(self)

    @property
    def at(self):
        return numpy_api().IndexUpdateHelper(self)

    def __getitem__(self, index):
        return numpy_api().getitem(self, index)

    # -- operators -------------------------------------------------------------------------------------
    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __divmod__, __rdivmod__ = _binary("divmod"), _binary("divmod", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rlshift__ = _binary("left_shift"), _binary("left_shift", True)
    __rshift__, __rrshift__ = _binary("right_shift"), _binary("right_shift", True)
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __neg__, __pos__, __abs__ = _unary("negative"), _unary("positive"), _unary("abs")
    __invert__ = _unary("invert")

    def __round__(self, ndigits=None):
        if ndigits is None:  # (as JAX: an array of the default int dtype, rounded half to even, traced or not)
            from srcjax.transpiler import dtypes

            return numpy_api().round(self).astype(dtypes.default_int_dtype())
        return numpy_api().round(self, ndigits)

    # -- methods (jnp functions with the array first) ---------------------------------------------------
    all = _forward("all")
    any = _forward("any")
    argmax = _forward("argmax")
    argmin = _forward("argmin")
    argpartition = _forward("argpartition")
    argsort = _forward("argsort")
    astype = _forward("astype")
    choose = _forward("choose")
    clip = _forward("clip")
    conj = _forward("conj")
    conjugate = _forward("conjugate")
    cumprod = _forward("cumprod")
    cumsum = _forward("cumsum")
    diagonal = _forward("diagonal")
    dot = _forward("dot")
    flatten = _forward("ravel")
    max = _forward("max")
    mean = _forward("mean")
    min = _forward("min")
    nonzero = _forward("nonzero")
    prod = _forward("prod")
    ptp = _forward("ptp")
    ravel = _forward("ravel")
    repeat = _forward("repeat")
    round = _forward("round")
    searchsorted = _forward("searchsorted")
    sort = _forward("sort")
    std = _forward("std")
    sum = _forward("sum")
    swapaxes = _forward("swapaxes")
    take = _forward("take")
    trace = _forward("trace")
    var = _forward("var")

    def byteswap(self):
        """The bytes of each element in reverse order (JAX's ``Array.byteswap``, which takes no arguments)."""
        return numpy_api().manipulation.byteswap(self)

    def compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
        """``jnp.compress(condition, self, axis)``: the array is the function's second operand, as in JAX."""
        return numpy_api().compress(condition, self, axis, out=out, size=size, fill_value=fill_value)

    def __contains__(self, other):
        """``other in x``: whether the 1-d ``x`` holds the scalar ``other`` (JAX's rule, narrower than NumPy's)."""
        if other is None or isinstance(other, str):
            raise TypeError(f"Array.__contains__: unsupported operand type {type(other)}.")
        jnp = numpy_api()
        query = jnp.asarray(other)
        if self.ndim != 1:
            raise ValueError(f"Array.__contains__: search array must be one-dimensional, got arr.shape={self.shape}.")
        if query.ndim != 0:
            raise ValueError(f"Array.__contains__: query value must be a scalar, got query.shape={query.shape}")
        return jnp.any(self == query)

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int) and shape[0] is not None:
            shape = shape[0]
        return numpy_api().reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return numpy_api().transpose(self, axes or None)

    def squeeze(self, axis=None):
        return numpy_api().squeeze(self, axis)

    def view(self, dtype=None):
        if dtype is None:
            return self
        return numpy_api().manipulation.view(self, dtype)

    def to_device(self, device, /, *, stream=None):
        """The array API's ``jax.device_put``: a value being compiled stays where the computation runs, as in JAX
        (concrete arrays move: ``Array.to_device``)."""
        return self


