"""The ahead-of-time stages of ``jit(f)`` (JAX's ``jax.stages``): ``jit(f).trace(*args)`` gives a ``Traced``
(the IR, no code yet), ``.lower()`` a ``Lowered`` and ``.compile()`` a ``Compiled``, callable with the call's
non-static arguments of the types it was compiled for.

srcjax has one program representation between tracing and native code, its IR: ``Traced.jaxpr`` prints it (as
``make_jaxpr`` does) and ``Lowered.compiler_ir()`` returns it. There is no StableHLO or HLO, so
``compiler_ir("stablehlo")`` and ``compiler_ir("hlo")`` give None, JAX's answer where a representation is
unavailable. Costs and memory are srcjax's own figures, under XLA's names (``runtime/cost_analysis.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from srcjax.runtime import tree_util
from srcjax.runtime.api import (
    ClosedJaxpr, Compiled as Specialisation, ShapeDtypeStruct, Signature, _argument_paths, _flags, _is_dynamic,
    abstractify)
from srcjax.runtime.array import Array
from srcjax.runtime.config import config
from srcjax.runtime.cost_analysis import cost_analysis, fused_cost_analysis
from srcjax.transpiler.ir import Function, Value
from srcjax.transpiler.types import TensorType


@dataclass(frozen=True)
class ArgInfo:
    """What a stage knows of one argument leaf: its type (``_aval``) and whether it is donated."""

    _aval: TensorType
    donated: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self._aval.shape

    @property
    def dtype(self) -> Any:
        return self._aval.dtype


@dataclass(frozen=True)
class CompiledMemoryStats:
    """``Compiled.memory_analysis()``: the bytes of the arguments and results, of the results written over donated
    arguments (``alias``), of the buffers the fused plan allocates for intermediate values (``temp``) and of the
    machine code, for the whole program (JAX's are one device's, for a ``shard_map``). srcjax's memory is the
    host's; the ``host_*`` fields are XLA's for memory beside a device."""

    generated_code_size_in_bytes: int
    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0

    @property
    def peak_memory_in_bytes(self) -> int:
        """At most all of it live at once: arguments, results not written over arguments, and temporaries."""
        return (self.argument_size_in_bytes + self.output_size_in_bytes - self.alias_size_in_bytes
                + self.temp_size_in_bytes)


class _Stage:
    """What every stage says about the call it was made for (JAX's ``Stage``): the arguments' and results'
    types and structures. ``in_tree`` is that of ``(args, kwargs)`` with the static arguments left out."""

    def __init__(self, jitted: Any, signature: Signature, ir: Function, out_tree: Any, names: list[str],
                 donated: tuple[int, ...]):
        """``names``: per leaf of ``in_tree``, the name errors give it; ``donated``: the indices of the donated ones
        among the dynamic leaves (the compiled function's parameters)."""
        self._jitted, self._signature, self._ir, self._out_tree = jitted, signature, ir, out_tree
        self._names, self._donated = names, donated
        args, kwargs = tree_util.treedef_children(signature.treedef)  # (of ``[args], {kwargs}``)
        self._in_tree = tree_util.treedef_tuple([tree_util.treedef_tuple(tree_util.treedef_children(args)), kwargs])

    @property
    def in_tree(self) -> Any:
        return self._in_tree

    @property
    def out_tree(self) -> Any:
        return self._out_tree

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """The indices of the donated leaves of ``in_tree`` (JAX's "flat tuple of donated argument indices")."""
        dynamic = [i for i, d in enumerate(self._signature.dynamic) if d]
        return tuple(sorted(dynamic[j] for j in self._donated))

    @property
    def in_avals(self) -> Any:
        return tree_util.tree_unflatten(self.in_tree, list(self._signature.types))

    @property
    def args_info(self) -> Any:
        donated = set(self.donate_argnums)
        return tree_util.tree_unflatten(self.in_tree, [ArgInfo(aval, i in donated)
                                                       for i, aval in enumerate(self._signature.types)])

    _weak_results = False  # (JAX's ``Traced.out_info`` keeps the results' weak bits; the later stages drop them)

    @property
    def out_info(self) -> Any:
        weak = self._weak_results
        return tree_util.tree_unflatten(self._out_tree, [ShapeDtypeStruct(r.aval.shape, r.aval.dtype,
                                                                          weak and r.aval.weak_type)
                                                         for r in self._ir.results])


class Traced(_Stage):
    """``jit(f).trace(*args)``: ``f`` traced for these arguments' types (JAX's ``jax.stages.Traced``); ``jaxpr`` is
    srcjax's IR of it (a ``ClosedJaxpr``, as ``make_jaxpr`` gives)."""

    _weak_results = True

    @property
    def jaxpr(self) -> ClosedJaxpr:
        return ClosedJaxpr(self._ir, self._out_tree)

    @property
    def out_avals(self) -> Any:
        return tree_util.tree_unflatten(self._out_tree, [r.aval for r in self._ir.results])

    @property
    def fun_name(self) -> str:
        return getattr(self._jitted.fn, "__name__", "<unnamed function>")

    def lower(self, *, lowering_platforms: Sequence[str] | None = None) -> Lowered:
        """(srcjax's IR is the same for every platform: ``lowering_platforms`` changes nothing.)"""
        return Lowered(self._jitted, self._signature, self._ir, self._out_tree, self._names, self._donated)


class Lowered(_Stage):
    """``jit(f).lower(*args)`` (JAX's ``jax.stages.Lowered``): ``compile()`` makes the native code."""

    def compile(self, compiler_options: dict | None = None) -> Compiled:
        if compiler_options:
            raise ValueError(f"srcjax's compiler takes no compiler options (XLA's), got {sorted(compiler_options)}")
        compiled = self._jitted._compiled_for(self._signature, self._ir, self._out_tree, self._donated)
        return Compiled(self._jitted, self._signature, compiled, self._names)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The IR's text, whatever the dialect asked for (srcjax has no other)."""
        from srcjax.transpiler.printer import print_function

        return print_function(self._ir)

    def compiler_ir(self, dialect: str | None = None) -> Function | None:
        """srcjax's IR (``dialect`` None or "srcjax"); None for JAX's "stablehlo" and "hlo", which srcjax does not
        have (JAX's answer where a representation is unavailable)."""
        if dialect in (None, "srcjax"):
            return self._ir
        if dialect in ("stablehlo", "hlo"):
            return None
        raise ValueError(f"unknown dialect: {dialect}")

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost figures counted over srcjax's IR, op by op (``runtime/cost_analysis.py``): JAX's
        ``Lowered.cost_analysis()`` numbers where the IR has the ops JAX lowers to."""
        return cost_analysis(self._ir)


class Compiled(_Stage):
    """``lowered.compile()`` (JAX's ``jax.stages.Compiled``): called with the lowered call's non-static arguments,
    which must have the structure, shapes and dtypes it was compiled for (JAX's TypeErrors otherwise). Other
    attributes are the specialisation's (``native``, ``ir``, ``as_text()``)."""

    def __init__(self, jitted: Any, signature: Signature, compiled: Specialisation, names: list[str]):
        super().__init__(jitted, signature, compiled.ir, compiled.out_tree, names, compiled.donated)
        self._compiled = compiled
        self._checked: set[tuple] = set()  # the argument types (all Arrays) calls were checked with
        self._place = getattr(jitted, "place", None)  # (``jit(f, out_shardings=...)``: lays the results out)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._compiled, name)

    def as_text(self) -> str:
        return self._compiled.as_text()

    def cost_analysis(self) -> dict[str, float]:
        """The flops and transcendentals of ``Lowered.cost_analysis()``, and the bytes the native code's fused steps
        read and write (``cost_analysis.fused_cost_analysis``), as JAX counts its optimized program's fusions
        (srcjax's steps are not XLA's fusions: the figures are close to JAX's, not always equal): 12 for ``2*x + y``
        on scalars, where the ops one by one read and write 24. Where the function runs in the interpreter, or its
        plan has loops, the bytes are counted op by op."""
        native = self._compiled.native
        if native is None:
            return cost_analysis(self._ir)
        return fused_cost_analysis(self._ir, native.plan)

    def memory_analysis(self) -> CompiledMemoryStats:
        """srcjax's figures (``CompiledMemoryStats``); an interpreted function has no temporaries nor code."""
        native = self._compiled.native
        nbytes = lambda values: sum(v.aval.size * v.aval.dtype.itemsize for v in values)  # noqa: E731
        results = self._ir.results
        alias = temp = code = 0
        if native is not None:
            aliases = native.aliases()
            alias = nbytes([results[aliases[i]] for i in self._compiled.donated if i in aliases])
            temp = sum(b.size * b.dtype.itemsize for b in native.plan.temps)
            code = native.code.nbytes
        return CompiledMemoryStats(code, nbytes(self._ir.params), nbytes(results), alias, temp)

    def runtime_executable(self) -> Any:
        """The native executable (``codegen/llvm/compile.py``'s ``Executable``), or None where the function runs in
        the interpreter."""
        return self._compiled.native

    @property
    def input_shardings(self) -> Any:
        sharding = _default_sharding()
        return tree_util.tree_unflatten(self.in_tree, [sharding] * self.in_tree.num_leaves)

    @property
    def out_info(self) -> Any:
        """The results' ``ShapeDtypeStruct``s with the layouts they come out with (``output_shardings``)."""
        placed = tree_util.tree_leaves(self.output_shardings, is_leaf=lambda x: x is not None)
        return tree_util.tree_unflatten(self._out_tree, [ShapeDtypeStruct(r.aval.shape, r.aval.dtype, sharding=s)
                                                         for r, s in zip(self._ir.results, placed)])

    @property
    def output_shardings(self) -> Any:
        from srcjax.runtime.sharding_base import Sharding

        sharding = _default_sharding()
        placed = self._compiled._shardings or [None] * len(self._ir.results)
        shardings = tree_util.tree_unflatten(self._out_tree, [sharding if s is None else s for s in placed])
        if self._place is None:
            return shardings
        # (``out_shardings``: one layout, or a prefix of the results' tree with None where any will do)
        is_layout = lambda x: x is None or isinstance(x, Sharding)  # noqa: E731
        wanted = tree_util.tree_broadcast(self._jitted.out_shardings, shardings, is_leaf=is_layout)
        return tree_util.tree_map(lambda want, have: have if want is None else want, wanted, shardings,
                                  is_leaf=is_layout)

    @staticmethod
    def call(*args: Any, **kwargs: Any) -> Any:
        """``Compiled.call(compiled, *args)``: the call, as JAX spells it (a static method)."""
        compiled, *args = args
        return compiled(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and not (_flags["jax_disable_jit"] or _flags["jax_debug_nans"] or _flags["jax_debug_infs"]):
            # Arrays of types a call has already been checked with: the specialisation's own entry, as ``jit(f)(x)``
            key = tuple([a.aval if type(a) is Array else None for a in args])
            if key in self._checked:
                result = self._compiled.call_arrays(args)
                return result if self._place is None else self._place(result)
        result = self._checked_call(args, kwargs)
        return result if self._place is None else self._place(result)

    def _checked_call(self, args: tuple, kwargs: dict) -> Any:
        if config.jax_disable_jit:  # (JAX's: there is no function left to run op by op)
            name = getattr(self._jitted.fn, "__name__", "<unnamed function>")
            raise ValueError("Disable jit is not supported in the AOT path since the function is not available for "
                             f"(jit({name}))")
        sig = self._signature
        leaves, tree = tree_util.tree_flatten((tuple(args), kwargs))
        if tree != self.in_tree:
            raise TypeError(_pytree_mismatch(self.in_tree, (tuple(args), kwargs)))
        traced = next((leaf for leaf in leaves if isinstance(leaf, Value)), None)
        if traced is not None:  # (JAX's policy: a compiled function is not transformed, jit included)
            raise TypeError("Cannot apply JAX transformations to a function lowered and compiled for a particular "
                            f"signature. Detected argument of Tracer type {type(traced)}.")
        mismatches = []
        for leaf, want, dynamic, name in zip(leaves, sig.types, sig.dynamic, self._names):
            if not dynamic:
                continue
            if not _is_dynamic(leaf) or isinstance(leaf, ShapeDtypeStruct):
                raise TypeError(f"Argument '{leaf}' of type {type(leaf)} is not a valid JAX type")
            got = abstractify(leaf)
            if got.shape != want.shape or got.dtype != want.dtype:
                mismatches.append(f"Argument '{name}' compiled with {_type_name(want)} and called with "
                                  f"{_type_name(got)}")
        if mismatches:
            raise TypeError("Argument types differ from the types for which this computation was compiled. Perhaps "
                            "you are calling the compiled executable with a different enable_x64 mode than when it "
                            "was AOT compiled? The mismatches are:\n" + "\n".join(mismatches))
        if not kwargs and len(leaves) == len(args) and all(type(a) is Array for a in args):
            self._checked.add(tuple([a.aval for a in args]))  # (a flat call of Arrays: its types pass from now on)
        return self._compiled(*[leaf for leaf, d in zip(leaves, sig.dynamic) if d])


def _default_sharding() -> Any:
    from srcjax.runtime.devices import SingleDeviceSharding, default_device

    return SingleDeviceSharding(default_device())


def _type_name(aval: TensorType) -> str:
    return f"{aval.dtype}[{','.join(str(d) for d in aval.shape)}]"


def leaf_names(fn: Any, args: Sequence[Any], kwargs: dict, static_positions: set[int],
               static_argnames: Sequence[str]) -> list[str]:
    """The names JAX's errors give the dynamic leaves: the parameter's name and the path in it (``x``, ``d['a']``)."""
    arg_paths, kwarg_paths = _argument_paths(fn, args, kwargs)
    named = [(arg_paths[i], a) for i, a in enumerate(args) if i not in static_positions]
    named += [(kwarg_paths[k], v) for k, v in kwargs.items() if k not in static_argnames]
    return [name + tree_util.keystr(path) for name, value in named
            for path, _ in tree_util.tree_flatten_with_path(value)[0]]


class _LeafType(type):
    def __repr__(cls) -> str:  # (what a mismatch says of a leaf: JAX's words)
        return "pytree leaf"


class _Leaf(metaclass=_LeafType):
    """Stands for each leaf of the trees a mismatch compares."""


def _pytree_mismatch(compiled_tree: Any, called: Any) -> str:
    """JAX's message for a call whose ``(args, kwargs)`` structure is not the compiled one, naming each place."""
    expected = tree_util.tree_unflatten(compiled_tree, [_Leaf() for _ in range(compiled_tree.num_leaves)])
    leaves, tree = tree_util.tree_flatten(called)
    given = tree_util.tree_unflatten(tree, [_Leaf() for _ in leaves])
    errors = list(_differences((), given, expected))
    lines = ["Function compiled with input pytree does not match the input pytree it was called with. There are "
             f"{len(errors)} mismatches, including:"]
    for (first, *rest), now, seen, why in errors:
        lines.append(f"    * at {['args', 'kwargs'][first.idx]}{tree_util.keystr(tuple(rest))}, seen {seen} but now "
                     f"given {now}, so {why}")
    return "\n".join(lines)


def _differences(path: tuple, a: Any, b: Any):
    """Where trees ``a`` and ``b`` differ in structure (JAX's ``equality_errors``): (path, what ``a`` has there,
    what ``b`` has, why they differ), the first difference on each path."""
    if isinstance(a, _Leaf) and isinstance(b, _Leaf):
        return
    if type(a) is not type(b):
        yield path, str(type(a)), str(type(b)), "their Python types differ"
        return
    if isinstance(a, (list, tuple)) and len(a) != len(b):
        yield path, f"{type(a).__name__} of length {len(a)}", f"{type(b).__name__} of length {len(b)}", \
            "the lengths do not match"
        return
    (a_items, a_aux), (b_items, b_aux) = (tree_util.flatten_one_level_with_keys(t) for t in (a, b))
    if len(a_items) != len(b_items):
        keys = lambda items: {k for k, _ in items}  # noqa: E731
        diff = " ".join(repr(getattr(k, "key", k)) for k in keys(a_items) ^ keys(b_items))
        children = lambda t, n: f"{type(t)} with {n} child{'ren' if n > 1 else ''}"  # noqa: E731
        yield path, children(a, len(a_items)), children(b, len(b_items)), "the numbers of children do not match" + \
            (f", with the symmetric difference of key sets: {{{diff}}}" if diff else "")
        return
    if a_aux != b_aux:
        yield path, f"{type(a)} with pytree metadata {a_aux}", f"{type(b)} with pytree metadata {b_aux}", \
            "the pytree node metadata does not match"
        return
    for (key, x), (_, y) in zip(a_items, b_items):
        yield from _differences((*path, key), x, y)
