"""``jnp.ufunc`` and ``jnp.frompyfunc``: a Python function of scalars made a NumPy-style universal function.

As in JAX, calling one maps the function over the broadcast elements of its arguments (one batched trace with
``vmap``, not a Python loop per element); ``reduce``, ``accumulate``, ``at`` and ``reduceat`` of a binary one
loop over an axis with ``lax.fori_loop``/``lax.scan``, and ``outer`` applies it to every pair of elements.
Results, dtypes and errors follow JAX's ``jax.numpy.ufunc``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp  # the package namespace, resolved at call time
from srcjax.runtime import lax
from srcjax.runtime.eager import fast_path
from srcjax.runtime.numpy._core import (
    asarray,
    aval,
    broadcast_shapes,
    broadcast_to,
    check_arraylike,
    convert,
    is_arraylike,
)
from srcjax.runtime.numpy.manipulation import normalize_axis

__all__ = ["frompyfunc", "ufunc"]

_AT_INPLACE = ("Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like\nnp.ufunc.at(). "
               "Instead, you can pass inplace=False and capture the result; e.g.\n"
               ">>> arr = jnp.add.at(arr, ind, val, inplace=False)\n")


def _shape(x: Any) -> tuple[int, ...]:
    return aval(x).shape


def _one(x: Any) -> Any:
    """A 1 of ``x``'s dtype, weakly typed as ``x`` is: what the result dtype of the function is probed with
    (JAX's ``lax._one``; a Python scalar argument is a weakly typed one)."""
    typ = aval(x)
    return convert(np.ones((), typ.dtype), typ.dtype, weak_type=typ.weak_type)


def _static(method: str, **options: Any) -> None:
    """JAX compiles the methods with these options static, so each must be hashable (jit's error otherwise)."""
    for name, value in options.items():
        try:
            hash(value)
        except TypeError:
            raise ValueError(f"Non-hashable static arguments are not supported: {method} got {name}={value!r} "
                             f"of type {type(value).__name__}") from None


def _check_indices(method: str, indices: Any) -> None:
    """JAX compiles ``at`` with the indices as array arguments: a list of them, or a slice, is refused."""
    if isinstance(indices, list):
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not allowed; use "
                        "`arr[array(seq)]` instead of `arr[seq]`.")
    for index in indices if isinstance(indices, tuple) else (indices,):
        if index is not None and not isinstance(index, (list, tuple)) and not is_arraylike(index):
            raise TypeError(f"{method}: an index must be an array or an integer (JAX compiles the indices as "
                            f"array arguments), got {type(index).__name__}")


class ufunc:
    """A universal function: ``func`` applied elementwise to ``nin`` broadcast arguments, giving ``nout``
    results; ``call``, ``reduce``, ``accumulate``, ``at`` and ``reduceat`` replace the generic methods."""

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *, name: str | None = None,
                 nargs: int | None = None, identity: Any = None, call: Callable | None = None,
                 reduce: Callable | None = None, accumulate: Callable | None = None, at: Callable | None = None,
                 reduceat: Callable | None = None):
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = operator.index(nargs or nin)
        self.identity = identity
        self._methods = {"reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat}
        self._call = _checked_call(self.__name__, repr(self), self._vectorized if call is None else call)

    def _key(self) -> tuple:
        return self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def _binary_only(self, method: str) -> None:
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    # -- calling ----------------------------------------------------------------------------------------------
    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        return self._call(*args, out=out, where=where)

    def _vectorized(self, *args: Any) -> Any:
        """``func`` of the elements of the broadcast arguments: one ``vmap`` over them, flattened."""
        from srcjax.runtime.vmap import vmap

        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} expected {self.nin} arguments, got {len(args)}")
        arrays = [asarray(a) for a in args]
        shape = broadcast_shapes(*(_shape(a) for a in arrays))
        if not shape:
            return self._func(*arrays)
        flat = [jnp.ravel(broadcast_to(a, shape)) for a in arrays]
        results = vmap(self._func)(*flat)
        if isinstance(results, tuple):
            return tuple(jnp.reshape(r, shape) for r in results)
        return jnp.reshape(results, shape)

    def outer(self, A: Any, B: Any, /) -> Any:
        """``func(a, b)`` for every element ``a`` of ``A`` and ``b`` of ``B``: shape ``A.shape + B.shape``."""
        self._binary_only("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        a, b = jnp.ravel(asarray(A)), jnp.ravel(asarray(B))
        result = self(jnp.reshape(a, (-1, 1)), jnp.reshape(b, (1, -1)))
        return jnp.reshape(result, (*np.shape(A), *np.shape(B)))

    # -- reductions ---------------------------------------------------------------------------------------------
    def _result_dtype(self, *args: Any) -> np.dtype:
        from srcjax.runtime.api import eval_shape

        return eval_shape(self._func, *(_one(a) for a in args)).dtype

    def reduce(self, a: Any, axis: int | None = 0, dtype: Any = None, out: None = None, keepdims: bool = False,
               initial: Any = None, where: Any = None) -> Any:
        """``func`` folded along ``axis`` (all axes for ``None``), from ``initial`` or the first element."""
        _static(f"{self.__name__}.reduce", axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        check_arraylike(f"{self.__name__}.reduce", a)
        self._binary_only("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if initial is not None:
            check_arraylike(f"{self.__name__}.reduce", initial)
        if where is not None:
            check_arraylike(f"{self.__name__}.reduce", where)
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, so to use a "
                                 "where mask one has to specify 'initial'.")
            if aval(where).dtype != np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got dtype={aval(where).dtype}")
        if self._methods["reduce"] is not None:
            return self._methods["reduce"](a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                                           where=where)
        return self._reduce_by_loop(a, axis, dtype, keepdims, initial, where)

    def _reduce_by_loop(self, a: Any, axis: Any, dtype: Any, keepdims: bool, initial: Any, where: Any) -> Any:
        arr = asarray(a)
        initial = self.identity if initial is None else initial
        dtype = self._result_dtype(arr, arr) if dtype is None else np.dtype(dtype)
        ndim = len(_shape(arr))
        if where is not None:
            where = broadcast_to(where, _shape(arr))
        if isinstance(axis, tuple):  # (each axis is checked first, as JAX checks them)
            for ax in axis:
                normalize_axis(ax, ndim, f"{self.__name__}.reduce")
            raise NotImplementedError("tuple of axes")
        if axis is None:
            final_shape = (1,) * ndim if keepdims else ()
            arr, axis = jnp.ravel(arr), 0
            where = None if where is None else jnp.ravel(where)
        else:
            axis = normalize_axis(axis, ndim, f"{self.__name__}.reduce")
            shape = _shape(arr)
            final_shape = (*shape[:axis], *((1,) if keepdims else ()), *shape[axis + 1:])
        arr = jnp.moveaxis(arr, axis, 0)
        where = None if where is None else jnp.moveaxis(where, axis, 0)
        n = _shape(arr)[0]
        if n == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} which has no identity")
            return jnp.full(final_shape, initial, dtype)

        def step(i: Any, value: Any) -> Any:
            combined = self(value, arr[i].astype(dtype))
            return combined if where is None else jnp.where(where[i], combined, value)

        start, first = (1, arr[0]) if initial is None else (0, initial)
        first = broadcast_to(jnp.astype(asarray(first), dtype), _shape(arr)[1:])
        result = lax.fori_loop(start, n, step, first)
        return jnp.reshape(result, final_shape) if keepdims else result

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """The running ``func`` along ``axis``: element i combines elements 0..i, first to last."""
        _static(f"{self.__name__}.accumulate", axis=axis, dtype=dtype)
        self._binary_only("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        if self._methods["accumulate"] is not None:
            return self._methods["accumulate"](a, axis=axis, dtype=dtype)
        check_arraylike(f"{self.__name__}.accumulate", a)
        arr = asarray(a)
        dtype = self._result_dtype(arr, arr) if dtype is None else np.dtype(dtype)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        axis = normalize_axis(axis, len(_shape(arr)), f"{self.__name__}.accumulate")
        if math.prod(_shape(arr)) == 0:
            return jnp.zeros(_shape(arr), dtype)
        arr = jnp.moveaxis(arr, axis, 0)
        first = arr[0].astype(dtype)

        def step(carry: tuple[Any, Any], _: Any) -> tuple[Any, Any]:
            # (JAX's loop, its where promoting the result to dtype's join with func's: a dtype func's results
            # do not keep is the scan's type error, as in JAX)
            i, x = carry
            y = jnp.where(i == 0, first, self(x.astype(dtype), arr[i].astype(dtype)))
            return (i + 1, y), y

        _, result = lax.scan(step, (0, first), None, length=_shape(arr)[0])
        return jnp.moveaxis(result, 0, axis)

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """A copy of ``a`` with ``func`` applied at ``indices`` (with ``b``'s values for a binary one), one index
        after another, so repeated indices apply it repeatedly."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        _check_indices(f"{self.__name__}.at", indices)
        if self._methods["at"] is not None:
            return self._methods["at"](a, indices) if b is None else self._methods["at"](a, indices, b)
        return self._at_by_loop(a, indices, *(() if b is None else (b,)))

    def _at_by_loop(self, a: Any, indices: Any, *args: Any) -> Any:
        check_arraylike(f"{self.__name__}.at", a, *args)
        dtype = self._result_dtype(a, *args)
        a = jnp.astype(asarray(a), dtype)  # (jnp's astype, as JAX's: a complex to bool is x != 0)
        args = tuple(jnp.astype(asarray(arg), dtype) for arg in args)
        indices = indices if isinstance(indices, tuple) else (indices,)
        for index in indices:  # JAX's at is compiled with the indices as array arguments
            check_arraylike(f"{self.__name__}.at indices", index)
        if not indices:
            return a
        shape = broadcast_shapes(*(np.shape(i) for i in indices))
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *args))
        count = math.prod(shape)
        if args:
            (arg,) = args
            rest = _shape(arg)[len(shape):]
            args = (jnp.reshape(broadcast_to(arg, (*shape, *rest)), (count, *rest)),)
        flat = [jnp.ravel(broadcast_to(asarray(i), shape)) for i in indices]

        def step(i: Any, x: Any) -> Any:
            index = tuple(f[i] for f in flat)
            return x.at[index].set(self(x.at[index].get(), *(arg[i] for arg in args)))

        return lax.fori_loop(0, count, step, a)

    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """``reduce`` over the segments of ``axis`` that start at ``indices`` (each runs to the next start; a
        start not below the next gives just its own element)."""
        _static(f"{self.__name__}.reduceat", axis=axis, dtype=dtype)
        self._binary_only("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        if self._methods["reduceat"] is not None:
            return self._methods["reduceat"](a, indices, axis=axis, dtype=dtype)
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a, indices = asarray(a), asarray(indices)
        if not _shape(a):
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={_shape(a)!r}")
        if len(_shape(indices)) != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got indices.shape={_shape(indices)!r}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = normalize_axis(axis, len(_shape(a)), f"{self.__name__}.reduceat")
        result = jnp.take(a, indices, axis=axis)
        ndim = len(_shape(result))
        bounds = jnp.append(indices, _shape(a)[axis])
        bounds = jnp.reshape(bounds, tuple(-1 if d == axis else 1 for d in range(ndim)))
        starts = lax.slice_in_dim(bounds, 0, _shape(bounds)[axis] - 1, axis=axis)
        ends = lax.slice_in_dim(bounds, 1, _shape(bounds)[axis], axis=axis)

        def step(i: Any, value: Any) -> Any:
            inside = (i > starts) & (i < ends)
            return jnp.where(inside, self(value, jnp.take(a, jnp.reshape(i, (1,)), axis=axis)), value)

        return lax.fori_loop(0, _shape(a)[axis], step, result)


def _checked_call(name: str, shown: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` with the checks and options of every ufunc's call (JAX's ``ufunc.__call__``)."""

    def checked(*args: Any, out: None = None, where: None = None) -> Any:
        check_arraylike(name, *args)
        if out is not None:
            raise NotImplementedError(f"out argument of {shown}")
        if where is not None:
            raise NotImplementedError(f"where argument of {shown}")
        return call(*args)

    checked.__name__ = checked.__qualname__ = name
    checked.__doc__, checked.__wrapped__ = call.__doc__, call  # (its signature is call's: make_jaxpr's names)
    return checked


def builtin_ufunc(func: Callable[..., Any], nin: int, *, identity: Any = None, **methods: Callable) -> ufunc:
    """The ``jnp`` function ``func`` as a ``jnp.ufunc``, as JAX's built-in ones are; ``methods`` (``reduce``,
    ``accumulate``, ``at``, ``reduceat``) replace the generic loops with the matching library functions.

    Calling it calls ``func`` through the eager fast path with no Python frame in between: the ufunc is the one
    instance of a subclass whose ``__call__`` is that function itself (an eager ``jnp.add`` of small arrays
    costs a few microseconds, and a method forwarding the call would add a tenth of one)."""
    kind = type(f"{func.__name__}_ufunc", (ufunc,), {"__module__": __name__})
    u = kind(func, nin, 1, identity=identity, call=func, **methods)
    kind.__call__ = staticmethod(fast_path(u._call))
    return u


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """``func`` (of ``nin`` scalars, returning ``nout`` values) as a ``jnp.ufunc``."""
    return ufunc(func, nin, nout, identity=identity)
