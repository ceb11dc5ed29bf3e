"""The ``Primitive`` class and the interpreter stack that ``bind`` dispatches to.

A primitive owns its math: a shape/dtype rule, a NumPy implementation, and JVP, transpose and batching
rules. Each of those three rules is in one of three states, never two: a rule; a declared zero derivative
(``def_zero_jvp``: comparisons, integer ops; the engine uses a symbolic zero); or unsupported
(``def_unsupported``: the engine raises ``TransformError`` naming the primitive, the transform and the
reason). A rule neither given nor declared is a hole, which the engines report the same way and the rule
matrix test fails on: no rule is never read as a zero derivative.

``bind`` does not compute anything itself: it hands the operands to the current interpreter, which is the
runtime's eager interpreter when nothing is being compiled and the front end's IR builder while a function
is. This is how one ``jnp.dot`` works on concrete arrays and inside a compiled function alike.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Sequence

from srcjax.transpiler.types import TensorType

ShapeRule = Callable[..., "TensorType | list[TensorType]"]


class PrimitiveError(Exception):
    """Base of the errors primitives raise for bad operands (the message names the primitive)."""


class PrimitiveTypeError(PrimitiveError, TypeError):
    pass


class PrimitiveValueError(PrimitiveError, ValueError, TypeError):
    """Operands a primitive's shape rule refuses (sizes, axes): a ValueError, and a TypeError as JAX's shape rules
    raise for most of them (``dynamic_slice``, ``broadcast_in_dim``, ``concatenate``): either ``except`` catches it."""


class TransformError(Exception):
    """A transform met a primitive it cannot transform: the rule is unsupported or missing (the message names the
    primitive, the transform, and the reason or where to add the rule)."""


RULES = ("jvp", "transpose", "vmap")  # the rules the transforms look up, each in one of the states below
RULE, ZERO, UNSUPPORTED, MISSING = "rule", "zero", "unsupported", "missing"
_NOUN = {"jvp": "JVP", "transpose": "transpose", "vmap": "batching"}
_TRANSFORM = {"jvp": "differentiation (jvp, grad)", "transpose": "reverse-mode differentiation (grad, vjp)",
              "vmap": "batching (vmap)"}


def check(condition: bool, prim: str, message: str, *, kind: str = "type") -> None:
    """Raise a primitive error ``'<prim>: <message>'`` unless ``condition`` holds."""
    if not condition:
        cls = PrimitiveTypeError if kind == "type" else PrimitiveValueError
        raise cls(f"{prim}: {message}")


class Primitive:
    """An operation of the IR. ``params`` names its static attributes (the printed ``[k=v]``)."""

    def __init__(self, name: str, *, params: Sequence[str] = (), multiple_results: bool = False):
        self.name = name
        self.params = tuple(params)
        self.multiple_results = multiple_results
        self.family = ""  # set by the family module through ``register``
        self.shape_rule: ShapeRule | None = None
        self.impl: Callable[..., Any] | None = None
        self.jvp_rule: Callable[..., Any] | None = None
        self.transpose_rule: Callable[..., Any] | None = None
        self.vmap_rule: Callable[..., Any] | None = None
        self.linear = False
        # recorded even when every operand is concrete (``axis_index`` means something only under a vmap)
        self.always_record = False
        # an effect besides its results (``debug_callback`` calls back into Python): it is recorded even on concrete
        # operands, and kept though nothing reads its results; never merged with an equal op, nor moved out of its
        # loop or branch (``passes.has_effect``: an op whose regions hold one has the effect too)
        self.effect = False
        # ``impl_into(outs, *operands, **params)``: the implementation writing into the result arrays ``outs`` (a host
        # call from native code hands it the result buffers; ``process_allreduce`` lets MPI write there)
        self.impl_into: Callable[..., None] | None = None
        # the ``srcjax.lax`` function of the same name that binds it with its operands (elementwise primitives:
        # emitted Python spells the op as that call, transpiler/emit_spelling.py), and whether it takes Python
        # scalars; None where emit_spelling.py says how the op is written
        self.lax_function: tuple[str, bool] | None = None
        # Rules that are absent on purpose: rule -> (ZERO or UNSUPPORTED, why), e.g.
        # {"jvp": (ZERO, "comparisons have zero derivative"), "transpose": (UNSUPPORTED, "not linear")}.
        self.declared: dict[str, tuple[str, str]] = {}
        # Rules called as ``rule(engine, op)`` rather than on values: those of ops that hold regions (the rule
        # transforms the regions through the engine) and of collectives (the rule needs the batched axis).
        # For such a primitive the transpose rule is its reverse-mode hook (see ``transforms/vjp.py``).
        self.op_rules: set[str] = set()

    def __repr__(self) -> str:
        return self.name

    # -- rule registration (each returns its argument so it can decorate) --------------------------
    def def_shape(self, rule: ShapeRule) -> ShapeRule:
        self.shape_rule = rule
        return rule

    def def_impl(self, impl: Callable[..., Any]) -> Callable[..., Any]:
        self.impl = impl
        return impl

    def def_jvp(self, rule: Callable[..., Any], *, op_rule: bool = False) -> Callable[..., Any]:
        self.jvp_rule = rule
        self._set_op_rule("jvp", op_rule)
        return rule

    def def_linear(self, transpose: Callable[..., Any]) -> Callable[..., Any]:
        """Linear in all operands: the JVP is the primitive applied to the tangents."""
        self.linear = True
        self.transpose_rule = transpose
        return transpose

    def def_transpose(self, transpose: Callable[..., Any], *, op_rule: bool = False) -> Callable[..., Any]:
        """Linear in some operands (``dynamic_slice`` in its operand, ``mul`` in either): how to transpose. An op
        rule here is a reverse-mode hook, ``hook(engine, op) -> record``: it linearizes and transposes the op."""
        self.transpose_rule = transpose
        self._set_op_rule("transpose", op_rule)
        return transpose

    def def_vmap(self, rule: Callable[..., Any], *, op_rule: bool = False) -> Callable[..., Any]:
        self.vmap_rule = rule
        self._set_op_rule("vmap", op_rule)
        return rule

    def def_zero_jvp(self, reason: str) -> None:
        """The derivative is zero (comparisons, integer results, piecewise constants): the tangent is a symbolic
        zero, and the primitive never appears in a linear part, so it has no transpose either."""
        self.declared["jvp"] = (ZERO, reason)
        self.declared.setdefault("transpose", (UNSUPPORTED, "not linear: its derivative is a declared zero"))

    def def_zero_transpose(self, reason: str) -> None:
        """Linear, but differentiation sees the zero map (``stop_gradient``): no cotangent flows back."""
        self.declared["transpose"] = (ZERO, reason)

    def def_unsupported(self, rule: str, reason: str) -> None:
        """The transform that needs ``rule`` raises ``TransformError`` with ``reason`` ("not linear", ...)."""
        if rule not in RULES:
            raise ValueError(f"unknown rule {rule!r}; the rules are {RULES}")
        self.declared[rule] = (UNSUPPORTED, reason)

    def _set_op_rule(self, rule: str, on: bool) -> None:
        if on:
            self.op_rules.add(rule)

    def rule_state(self, rule: str) -> str:
        """``RULE``, ``ZERO``, ``UNSUPPORTED`` or ``MISSING`` (a hole: neither a rule nor a declaration)."""
        present = {"jvp": self.jvp_rule is not None or self.linear, "transpose": self.transpose_rule is not None,
                   "vmap": self.vmap_rule is not None}[rule]
        if present:
            return RULE
        return self.declared.get(rule, (MISSING, ""))[0]

    def rule_error(self, rule: str, detail: str = "") -> TransformError:
        """The error a transform raises for a primitive whose ``rule`` is unsupported or missing."""
        state, reason = self.declared.get(rule, (MISSING, ""))
        if state == UNSUPPORTED:
            message = f"{_TRANSFORM[rule]} of '{self.name}' is not supported: {reason} ({self.family})"
        else:
            message = f"no {_NOUN[rule]} rule for '{self.name}' ({self.family}), needed by {_TRANSFORM[rule]}"
        return TransformError(message + (f"; {detail}" if detail else ""))

    # -- use -----------------------------------------------------------------------------------------
    def abstract_eval(self, *types: TensorType, **params: Any) -> TensorType | list[TensorType]:
        if self.shape_rule is None:
            raise NotImplementedError(f"no shape rule for '{self.name}' ({self.family})")
        return self.shape_rule(*types, **params)

    def bind(self, *operands: Any, **params: Any) -> Any:
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"{self.name}: unknown parameter(s) {sorted(unknown)}; it takes {list(self.params)}")
        return current_interpreter().process(self, operands, params)


# -- the interpreter stack ---------------------------------------------------------------------------
class Interpreter:
    """Something that gives meaning to ``prim.bind``: computes it, records it, or transforms it."""

    def process(self, prim: Primitive, operands: Sequence[Any], params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def canonical(self, x: Any) -> Any:
        """A concrete operand (Python scalar, NumPy array) as this interpreter's array type."""
        return x


class ImplInterpreter(Interpreter):
    """Calls the NumPy implementation directly: the fallback when no runtime is loaded."""

    def process(self, prim, operands, params):
        if prim.impl is None:
            raise NotImplementedError(f"no implementation for '{prim.name}' ({prim.family})")
        return prim.impl(*operands, **params)


_base: list[Interpreter] = [ImplInterpreter()]
# Each thread has its own stack of interpreters (a function compiled in one thread must not see another
# thread's binds); ``_in_use`` holds every thread's, so "is anything compiled anywhere?" is one cheap test.
_stacks = threading.local()
_in_use: list[Interpreter] = []
_in_use_lock = threading.Lock()


def set_base_interpreter(interpreter: Interpreter) -> None:
    """The interpreter used when nothing else is on the stack (the runtime installs its eager one)."""
    _base[0] = interpreter


def interpreters_in_use() -> list[Interpreter]:
    """The interpreters above the base in every thread: the live list, empty while nothing is compiled or
    transformed anywhere (when it is not, ``current_interpreter`` says what this thread's binds go to)."""
    return _in_use


def base_interpreter() -> Interpreter:
    return _base[0]


def current_interpreter() -> Interpreter:
    stack = getattr(_stacks, "stack", None)
    return stack[-1] if stack else _base[0]


@contextlib.contextmanager
def interpreting(interpreter: Interpreter) -> Iterator[Interpreter]:
    stack = _stacks.__dict__.setdefault("stack", [])
    stack.append(interpreter)
    with _in_use_lock:
        _in_use.append(interpreter)
    try:
        yield interpreter
    finally:
        stack.pop()
        with _in_use_lock:
            for i in range(len(_in_use) - 1, -1, -1):  # (by identity: interpreters may define __eq__)
                if _in_use[i] is interpreter:
                    del _in_use[i]
                    break


# -- the registry --------------------------------------------------------------------------------------
PRIMITIVES: dict[str, Primitive] = {}


def registered(name: str) -> Primitive:
    """The primitive ``name``, looked up when a rule runs. The vocabulary modules (``ad``, ``batching``) and the
    lower families use it for the primitives of families above them (``ad.zeros`` binds ``broadcast_in_dim``,
    whose family imports ``ad``), so that the modules import one way."""
    return PRIMITIVES[name]


def register_module(namespace: dict[str, Any]) -> None:
    """Register every ``*_p`` primitive of a family module; call as ``register_module(globals())``."""
    family = namespace["__name__"].removeprefix("srcjax.").replace(".", "/") + ".py"  # its path in the repository
    for name, prim in namespace.items():
        if name.endswith("_p") and isinstance(prim, Primitive):
            if PRIMITIVES.get(prim.name) is prim:
                continue  # imported from the family that declares it
            if prim.name in PRIMITIVES:
                raise ValueError(f"primitive '{prim.name}' registered twice")
            prim.family = family
            PRIMITIVES[prim.name] = prim
