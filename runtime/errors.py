"""``srcjax.errors`` (``jax.errors``): the exception types users catch.

srcjax raises one type where JAX distinguishes the way a concrete value was asked for (``bool(x)``,
``int(x)``, ``np.asarray(x)``): ``ConcretizationTypeError`` and its three refinements are that one type, so
an ``except`` naming any of them catches what JAX's would. Both are ``TypeError``s, as JAX's are. A traced
boolean index is a ``NonConcreteBooleanIndexError``, an ``IndexError`` (``JAXIndexError``), as JAX's is.
A ``pure_callback``/``io_callback`` that raises, or returns the wrong shapes, is a ``JaxRuntimeError`` (a
``RuntimeError``), as in JAX; the callback's own exception type is kept too (``JaxRuntimeError[KeyError]``).
"""

from srcjax.transpiler.ir import (
    ConcretizationError,
    JAXIndexError,
    JAXTypeError,
    JaxRuntimeError,
    NonConcreteBooleanIndexError,
    UnexpectedTracerError,
)

ConcretizationTypeError = ConcretizationError
TracerArrayConversionError = ConcretizationError
TracerBoolConversionError = ConcretizationError
TracerIntegerConversionError = ConcretizationError

_RUNTIME_ERRORS: dict[type, type] = {}


def callback_failed(error: Exception) -> JaxRuntimeError:
    """What a callback's exception becomes when it leaves the running program: a ``JaxRuntimeError``, as JAX raises,
    that is also of the callback's own type (so an ``except`` naming either catches it)."""
    if isinstance(error, JaxRuntimeError):
        return error
    kind = type(error)
    cls = _RUNTIME_ERRORS.get(kind)
    if cls is None:
        try:
            cls = type(f"JaxRuntimeError[{kind.__name__}]", (JaxRuntimeError, kind), {"__str__": BaseException.__str__})
            cls.__new__(cls)
        except Exception:  # noqa: BLE001 - a type Python cannot combine (its own layout or metaclass)
            cls = JaxRuntimeError
        _RUNTIME_ERRORS[kind] = cls
    combined = cls.__new__(cls)
    combined.__dict__.update(getattr(error, "__dict__", {}))
    BaseException.__init__(combined, f"INTERNAL: CpuCallback error calling callback: {kind.__name__}: {error}")
    return combined


__all__ = [
    "ConcretizationTypeError", "JAXIndexError", "JAXTypeError", "JaxRuntimeError", "NonConcreteBooleanIndexError",
    "TracerArrayConversionError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "UnexpectedTracerError",
]
