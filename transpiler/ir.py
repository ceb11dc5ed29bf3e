"""The typed SSA IR: values, ops with nested blocks (structured control flow), and functions.

A ``Function`` has typed parameters, a body ``Block`` and results. An ``Op`` applies a primitive to
operands and defines result values; control-flow ops (``cond``, ``while``, ``for``, ``scan``) also hold
regions: nested blocks whose ``params`` are bound by the op (loop-carried values, the loop index) and
whose ``results`` are what the region yields. Blocks may use values defined in enclosing blocks. There is
no CFG and no phi node. Scalar constants appear inline as ``Literal``s; larger constants (arrays a
function closes over) are the function's ``consts``.

``Value`` carries the array operators and methods (``x + y``, ``x.sum()``), so user code and rules run
unchanged on values while a function is being built.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from srcjax.transpiler.array_methods import ArrayMethods
from srcjax.transpiler.primitives.core import Primitive
from srcjax.transpiler.types import TensorType


class JAXTypeError(TypeError):
    """The base of the type errors about traced values, as ``jax.errors.JAXTypeError``."""


class JAXIndexError(IndexError):
    """The base of the index errors about traced values, as ``jax.errors.JAXIndexError``."""


class ConcretizationError(JAXTypeError):
    """A symbolic value was used where a concrete Python value is needed (``bool(x)``, ``float(x)``)."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """A boolean mask index is a symbolic value: the result's shape would depend on its data (JAX's
    ``NonConcreteBooleanIndexError``, an ``IndexError``)."""


class JaxRuntimeError(RuntimeError):
    """A failure while a program runs (JAX's ``jax.errors.JaxRuntimeError``, XLA's runtime error): a callback that
    raised, or returned results of the wrong shape or dtype."""


class UnexpectedTracerError(JAXTypeError):
    """A symbolic value was used after the compilation that made it ended: the function being compiled saved
    it outside itself (a list, a global) instead of returning it (JAX's ``UnexpectedTracerError``)."""


class Value(ArrayMethods):
    """An SSA value: the result of an op, a block parameter or a function parameter."""

    # ``origin`` is set when the compilation that made the value ends (``Builder.finish``): the function and
    # where in it the value was made. A value with an origin used again escaped that compilation.
    __slots__ = ("aval", "name", "origin")
    __hash__ = object.__hash__  # identity: values are keys of the transforms' environments

    def __init__(self, aval: TensorType, name: str | None = None):
        self.aval = aval
        self.name = name  # a hint from the user's source; the printer makes names unique

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    itemsize = property(lambda self: self.aval.dtype.itemsize)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

    def __repr__(self) -> str:  # (what errors that show a value say: a traced value, its type and source name)
        return f"Traced<{self.name}: {self.aval}>" if self.name else f"Traced<{self.aval}>"

    def copy(self) -> Value:
        return self  # (values are immutable: a copy is the value)

    def item(self, *args: Any) -> Any:
        return np.asarray(self._concrete("item()")).item(*args)

    def tolist(self) -> Any:
        return np.asarray(self._concrete("tolist()")).tolist()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # Where the trace being built knows the value from its inputs (``known_value``, set by the front end: under
    # grad or jvp outside jit, as JAX's tracers there hold a concrete primal), Python's conversions see it, as
    # they do when Python code that has no source is run on traced values; elsewhere they are refused, and so
    # are conversions other than bool() of a differentiated value (``exact``), as JAX refuses them.
    known_value: Callable[[Value, bool], Any] | None = None

    def _concrete(self, what: str, exact: bool = True) -> Any:
        known = Value.known_value(self, exact) if Value.known_value is not None else None
        if known is None:
            raise ConcretizationError(
                f"{what} needs a concrete value, but {self.aval} is only known when the compiled function runs")
        return known

    def __bool__(self) -> bool:
        return bool(self._concrete("bool()", exact=False))

    def __int__(self) -> int:
        return int(self._concrete("int()"))

    def __float__(self) -> float:
        return float(self._concrete("float()"))

    def __complex__(self) -> complex:
        return complex(self._concrete("complex()"))

    def __index__(self) -> int:
        return operator.index(self._concrete("using an array as a Python index"))

    def __array__(self, dtype=None, copy=None):
        raise ConcretizationError(f"conversion to a NumPy array needs a concrete value, but {self.aval} is only "
                                  "known when the compiled function runs")  # (refused even where known, as JAX's)


@dataclass(frozen=True)
class Origin:
    """Where a value of a finished compilation came from: the function compiled (its name and definition)
    and the source line that made the value (``None`` for the function's parameters)."""

    function: str
    source: SourceLoc | None
    loc: SourceLoc | None = None


def _where(loc: SourceLoc) -> str:
    return f"{loc.file}:{loc.line}" + (f" (`{loc.text.strip()}`)" if loc.text.strip() else "")


def unexpected_tracer(value: Value, use: str) -> UnexpectedTracerError:
    """The error for ``value`` used (as ``use``: "add operand 0") after the compilation that made it ended."""
    origin = getattr(value, "origin", None)
    if origin is None:
        made = "a compilation that has ended"
    else:
        defined = f" defined at {origin.source.file}:{origin.source.line}" if origin.source else ""
        made = f"the compilation of {origin.function}{defined}"
    text = (f"Encountered an unexpected tracer: {use} is a traced value of type {value.aval} that escaped the "
            f"transformation that made it ({made}). A function being transformed (jit, grad, vmap, ...) saved it "
            "outside itself (in a list, a global, an attribute) instead of returning it; transformed functions "
            "must return their outputs, and their traced values have no value once the transformation is over.")
    if origin is not None and origin.loc is not None:
        text += f" The value was created at {_where(origin.loc)}."
    elif origin is not None and origin.source is not None:
        text += f" The value is an argument of {origin.function}."
    return UnexpectedTracerError(text)


class Literal(Value):
    """A scalar constant used as an operand (printed inline: ``2.0:f32``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any, aval: TensorType):
        super().__init__(aval)
        self.value = np.asarray(value, aval.dtype)

    def __repr__(self) -> str:
        return f"Literal({self.value!r})"


@dataclass(frozen=True)
class SourceLoc:
    """Where an op comes from in the user's source (1-based line and column)."""

    file: str
    line: int
    column: int
    text: str = ""  # the source line, for comments in emitted code and for error messages
    function: str = ""


@dataclass(eq=False)
class Block:
    params: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)


@dataclass(eq=False)
class Op:
    prim: Primitive
    operands: list[Value]
    params: dict[str, Any]
    results: list[Value]
    regions: list[Block] = field(default_factory=list)
    loc: SourceLoc | None = None

    @property
    def name(self) -> str:
        return self.prim.name


@dataclass(eq=False)
class Function:
    name: str
    params: list[Value]
    body: Block
    consts: list[tuple[Value, np.ndarray]] = field(default_factory=list)
    source: SourceLoc | None = None
    # values of an enclosing compilation this function closes over; they are its last params
    captured: list[Value] = field(default_factory=list)
    # labels for the generated Python: id(op) -> a comment line emitted before that top-level op
    sections: dict[int, str] = field(default_factory=dict)
    # id(value) -> (value, the sharding a result that is this value is laid out with: a shard_map's out_specs)
    result_shardings: dict[int, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def results(self) -> list[Value]:
        return self.body.results

    @property
    def signature(self) -> tuple[list[TensorType], list[TensorType]]:
        return [p.aval for p in self.params], [r.aval for r in self.results]


def walk(block: Block) -> Iterator[Op]:
    """Every op of a block, nested regions included, in program order."""
    for op in block.ops:
        yield op
        for region in op.regions:
            yield from walk(region)


def count_ops(fn: Function) -> int:
    return sum(1 for _ in walk(fn.body))


def free_values(block: Block) -> list[Value]:
    """Values a block uses but does not define (captured from enclosing blocks), in first-use order."""
    defined: set[int] = {id(v) for v in block.params}
    free: dict[int, Value] = {}

    def visit(b: Block) -> None:
        defined.update(id(v) for v in b.params)
        for op in b.ops:
            for v in op.operands:
                if id(v) not in defined and not isinstance(v, Literal):
                    free.setdefault(id(v), v)
            for region in op.regions:
                visit(region)
            defined.update(id(v) for v in op.results)
        for v in b.results:
            if id(v) not in defined and not isinstance(v, Literal):
                free.setdefault(id(v), v)

    visit(block)
    return list(free.values())
