"""``srcjax.errors`` (``jax.errors``): the exception types users catch.

srcjax raises one type where JAX distinguishes the way a concrete value was asked for (``bool(x)``,
``int(x)``, ``np.asarray(x)``): ``ConcretizationTypeError`` and its three refinements are that one type, so
an ``except`` naming any of them catches what JAX's would. Both are ``TypeError``s, as JAX's are. A traced
boolean index is a ``NonConcreteBooleanIndexError``, an ``IndexError`` (``JAXIndexError``), as JAX's is.
"""

from srcjax.transpiler.ir import (
    ConcretizationError,
    JAXIndexError,
    JAXTypeError,
    NonConcreteBooleanIndexError,
    UnexpectedTracerError,
)

ConcretizationTypeError = ConcretizationError
TracerArrayConversionError = ConcretizationError
TracerBoolConversionError = ConcretizationError
TracerIntegerConversionError = ConcretizationError

__all__ = [
    "ConcretizationTypeError", "JAXIndexError", "JAXTypeError", "NonConcreteBooleanIndexError",
    "TracerArrayConversionError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "UnexpectedTracerError",
]
