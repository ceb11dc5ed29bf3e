"""The differentiation API: ``grad``, ``value_and_grad``, ``jvp``, ``vjp``, ``linearize``, ``jacfwd``,
``jacrev``, ``hessian``, ``custom_jvp``, ``custom_vjp``, ``checkpoint``.

Every transformation reads the function through the front end (so Python control flow on data is
differentiated too), transforms the IR, and evaluates the result with the current interpreter: eagerly
when called from ordinary code, recorded (inlined) when called from code that is itself being compiled
or transformed. That is how ``grad(grad(f))``, ``jit(grad(f))`` and ``grad(jit(f))`` compose. Pytrees
are flattened here; the IR transforms see flat parameter lists.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from runtime import tree_util
from runtime.api import Signature
from runtime.array import Array
from transpiler.frontend import trace_function
from transpiler.interpret import eval_function
from transpiler.ir import Function, Value
from transpiler.primitives.ad import Zero, aval_of
from transpiler.transforms.jvp import jvp_function
from transpiler.transforms.vjp import vjp_function
from transpiler.types import TensorType


def _argnums(argnums: int | Sequence[int], n: int, what: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -n <= i < n:
            raise ValueError(f"{what}: argnums {argnums} out of range for a function called with {n} positional "
                             "arguments")
    return tuple(i % n for i in nums)


class _Traced:
    """A function traced for one call signature: its IR, result structure and which params are which."""

    def __init__(self, fn: Callable, args: Sequence[Any], kwargs: dict):
        self.signature = Signature(fn, args, kwargs, (), ())
        abstract_args, abstract_kwargs = self.signature.abstract_call_args(len(args))
        self.ir, self.out_tree = trace_function(fn, abstract_args, abstract_kwargs)
        self.leaves = self.signature.dynamic_leaves()
        # which dynamic leaf belongs to which positional argument
        owner = []
        for i, arg in enumerate(args):
            owner += [i] * sum(1 for leaf in tree_util.tree_leaves(arg) if _dynamic(leaf))
        owner += [-1] * (len(self.leaves) - len(owner))
        self.owner = owner

    def call_args(self) -> list[Any]:
        return self.leaves + list(self.ir.captured)


def _dynamic(leaf: Any) -> bool:
    return isinstance(leaf, (Array, Value, np.ndarray, np.generic, bool, int, float, complex))


_cache: dict[Any, Any] = {}


def _cached(kind: str, fn: Callable, traced: _Traced, make: Callable[[], Function], extra: Any = ()) -> Function:
    """Transformed IR, cached per function, signature and options while nothing is captured."""
    if traced.ir.captured:
        return make()
    key = (kind, fn, traced.signature.key, extra)
    try:
        hit = _cache.get(key)
    except TypeError:
        return make()
    if hit is None:
        hit = _cache[key] = make()
    return hit


def _check_inputs(traced: _Traced, argnums: Sequence[int], allow_int: bool, holomorphic: bool, what: str) -> list[bool]:
    wrt = []
    for leaf, owner, param in zip(traced.leaves, traced.owner, traced.ir.params):
        on = owner in argnums
        if on:
            kind = param.aval.dtype.kind
            if kind not in "fc" and not allow_int:
                raise TypeError(f"{what} requires real- or complex-valued inputs (input dtype that is a sub-dtype "
                                f"of np.inexact), but got {param.aval.dtype.name}. If you want to use Boolean- or "
                                "integer-valued inputs, use vjp or set allow_int to True.")
            if kind == "c" and not holomorphic:
                raise TypeError(f"{what} requires real-valued inputs (input dtype that is a sub-dtype of "
                                f"np.floating), but got {param.aval.dtype.name}. For holomorphic differentiation, "
                                "pass holomorphic=True.")
            if holomorphic and kind != "c":
                raise TypeError(f"{what} with holomorphic=True requires inputs with complex dtype, but got "
                                f"{param.aval.dtype.name}.")
        wrt.append(on)
    return wrt + [False] * len(traced.ir.captured)


def _grads_tree(args: Sequence[Any], argnums: Sequence[int], grads: Sequence[Any], wrt: Sequence[bool],
                traced: _Traced) -> Any:
    """Put the flat gradients back into the structure of the differentiated arguments."""
    it = iter(grads)
    per_leaf = [next(it) if on and p.aval.dtype.kind in "fc" else _float0(p.aval) if on else None
                for on, p in zip(wrt, traced.ir.params)]
    out = []
    for i in argnums:
        leaves, treedef = tree_util.tree_flatten(args[i])
        mine = [g for g, owner in zip(per_leaf, traced.owner) if owner == i]
        out.append(tree_util.tree_unflatten(treedef, mine))
    return out


FLOAT0 = np.dtype([("float0", "V")])


def _float0(aval: TensorType) -> np.ndarray:
    """The gradient of an integer input (``allow_int=True``): JAX's ``float0``, a dtype with no values."""
    return np.zeros(aval.shape, dtype=FLOAT0)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes: Sequence = ()) -> Callable:
    """The gradient of a scalar-valued ``fun`` with respect to the arguments ``argnums``."""
    value_and_grad_f = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        value, g = value_and_grad_f(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    grad_f.__srcjax_transform__ = ("grad", fun, argnums, has_aux)
    return grad_f


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False, reduce_axes: Sequence = ()) -> Callable:
    if not callable(fun):
        raise TypeError(f"value_and_grad expects a callable, got {type(fun).__name__}")

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = _argnums(argnums, len(args), "grad")
        traced = _Traced(fun, args, kwargs)
        outs = traced.ir.results
        if has_aux:
            n_main = _check_aux_output(traced)
        else:
            n_main = len(outs)
        if n_main != 1 or outs[0].aval.shape != ():
            shapes = [str(tuple(o.aval.shape)) for o in outs[:n_main]]
            raise TypeError("Gradient only defined for scalar-output functions. Output "
                            + (f"had shape: {shapes[0]}." if n_main == 1 else f"was a tree of {n_main} values "
                               f"with shapes {', '.join(shapes)}."))
        kind = outs[0].aval.dtype.kind
        if kind not in "fc" or (kind == "c" and not holomorphic):
            raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {outs[0].aval.dtype.name}"
                            + (". For holomorphic differentiation, pass holomorphic=True." if kind == "c" else ""))
        wrt = _check_inputs(traced, nums, allow_int, holomorphic, "grad")
        ir = _cached("grad", fun, traced, lambda: vjp_function(_only_first_output_seeded(traced.ir), wrt,
                                                               seed_ones=True), (nums,))
        results = eval_function(ir, *traced.call_args())
        n_out = len(outs)
        primal = tree_util.tree_unflatten(traced.out_tree, list(results[:n_out]))
        grads = _grads_tree(args, nums, results[n_out:], wrt, traced)
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        return primal, g

    return value_and_grad_f


def _check_aux_output(traced: _Traced) -> int:
    ir = traced.ir
    try:
        probe = tree_util.tree_unflatten(traced.out_tree, list(range(len(ir.results))))
    except Exception:  # noqa: BLE001
        probe = None
    if not isinstance(probe, (tuple, list)) or len(probe) != 2:
        raise TypeError("has_aux=True requires the function to return a pair (output, auxiliary data)")
    main = tree_util.tree_leaves(probe[0])
    if len(main) != 1 or main[0] != 0:
        raise TypeError("Gradient only defined for scalar-output functions; the first element of the pair "
                        "returned with has_aux=True must be a scalar")
    return 1


def _only_first_output_seeded(ir: Function) -> Function:
    """The function with every output but the first made a constant of the differentiation (``has_aux``)."""
    from transpiler.ir import Block, Op
    from transpiler.primitives.custom import stop_gradient_p

    if len(ir.results) == 1:
        return ir
    body = ir.body
    ops, results = list(body.ops), [body.results[0]]
    for r in body.results[1:]:
        if r.aval.dtype.kind in "fc":
            stopped = Value(r.aval, r.name)
            ops.append(Op(stop_gradient_p, [r], {}, [stopped]))
            results.append(stopped)
        else:
            results.append(r)
    return Function(ir.name, ir.params, Block(body.params, ops, results), ir.consts, ir.source, ir.captured)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False, reduce_axes: Sequence = ()):
    """``(out, f_vjp)``; ``f_vjp(cotangent)`` gives the cotangents of ``primals`` (``(out, f_vjp, aux)``
    with ``has_aux``)."""
    traced = _Traced(fun, primals, {})
    n_main = _check_aux_output(traced) if has_aux else len(traced.ir.results)
    wrt = [True] * len(traced.leaves) + [False] * len(traced.ir.captured)
    ir = _cached("vjp", fun, traced, lambda: vjp_function(traced.ir, wrt))
    forward = eval_function(traced.ir, *traced.call_args())
    out = tree_util.tree_unflatten(traced.out_tree, list(forward))
    main_out = out[0] if has_aux else out
    main_tree = tree_util.tree_structure(main_out)

    def f_vjp(cotangent):
        ct_leaves, ct_tree = tree_util.tree_flatten(cotangent)
        if ct_tree != main_tree:
            raise ValueError(f"the cotangent's structure {ct_tree} does not match the output's {main_tree}")
        for c, o in zip(ct_leaves, tree_util.tree_leaves(main_out)):
            if np.shape(c) != np.shape(o):
                raise ValueError(f"cotangent of shape {np.shape(c)} for an output of shape {np.shape(o)}")
        all_cts = list(ct_leaves) + [np.zeros(r.aval.shape, r.aval.dtype) for r in traced.ir.results[n_main:]]
        results = eval_function(ir, *traced.call_args(), *all_cts)
        grads = _grads_tree(primals, range(len(primals)), results[len(traced.ir.results):], wrt, traced)
        return tuple(grads)

    return (main_out, f_vjp, out[1]) if has_aux else (main_out, f_vjp)


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """``(fun(*primals), d fun(primals) . tangents)``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    traced = _Traced(fun, primals, {})
    tangent_leaves = []
    for p, t in zip(primals, tangents):
        pl, ptree = tree_util.tree_flatten(p)
        tl, ttree = tree_util.tree_flatten(t)
        if ptree != ttree:
            raise TypeError(f"jvp: primal and tangent structures differ: {ptree} and {ttree}")
        for a, b in zip(pl, tl):
            if np.shape(a) != np.shape(b):
                raise ValueError(f"jvp: primal of shape {np.shape(a)} has a tangent of shape {np.shape(b)}")
        tangent_leaves += [b for a, b in zip(pl, tl) if _dynamic(a)]
    params = traced.ir.params
    wrt = [p.aval.dtype.kind in "fc" for p in params[: len(traced.leaves)]] + [False] * len(traced.ir.captured)
    ir = _cached("jvp", fun, traced, lambda: jvp_function(traced.ir, wrt))
    tangent_args = [t for t, on in zip(tangent_leaves, wrt) if on]
    results = eval_function(ir, *traced.call_args(), *tangent_args)
    n = len(traced.ir.results)
    out = tree_util.tree_unflatten(traced.out_tree, list(results[:n]))
    tan = tree_util.tree_unflatten(traced.out_tree, list(results[n:]))
    if has_aux:
        return out[0], tan[0], out[1]
    return out, tan


def linearize(fun: Callable, *primals: Any):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the derivative at ``primals``."""
    out, _ = jvp(fun, primals, [tree_util.tree_map(lambda x: np.zeros(np.shape(x), _tangent_dtype(x)), p)
                                for p in primals])

    def f_jvp(*tangents):
        return jvp(fun, primals, list(tangents))[1]

    return out, f_jvp


def _tangent_dtype(x: Any) -> np.dtype:
    from runtime import dtypes

    dtype = dtypes.dtype_and_weak(x)[0]
    return dtype if dtype.kind in "fc" else dtypes.default_float_dtype()


def _std_basis(tree: Any) -> tuple[list[Any], int]:
    leaves = tree_util.tree_leaves(tree)
    sizes = [int(np.prod(np.shape(x))) for x in leaves]
    return sizes, sum(sizes)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian by forward mode: one JVP per input coordinate, stacked."""

    def jac(*args):
        nums = _argnums(argnums, len(args), "jacfwd")
        inputs = [args[i] for i in nums]

        def f_of_inputs(*xs):
            full = list(args)
            for i, x in zip(nums, xs):
                full[i] = x
            return fun(*full)

        leaves, treedef = tree_util.tree_flatten(inputs)
        columns = []
        for j, leaf in enumerate(leaves):
            shape = np.shape(leaf)
            for idx in np.ndindex(*shape):
                basis = [np.zeros(np.shape(x), _tangent_dtype(x)) for x in leaves]
                basis[j][idx] = 1
                tangents = tree_util.tree_unflatten(treedef, basis)
                _, t = jvp(f_of_inputs, list(inputs), list(tangents))
                columns.append((j, idx, t))
        return _assemble_forward(fun, args, nums, leaves, columns, isinstance(argnums, int))

    return jac


def _assemble_forward(fun, args, nums, in_leaves, columns, single):
    import runtime.numpy as jnp

    out_example = columns[0][2] if columns else fun(*args)
    out_leaves, out_tree = tree_util.tree_flatten(out_example)
    per_input = []
    for j, leaf in enumerate(in_leaves):
        cols = [t for (jj, _, t) in columns if jj == j]
        mats = []
        for k, o in enumerate(out_leaves):
            stacked = jnp.stack([tree_util.tree_leaves(c)[k] for c in cols], axis=-1) if cols else None
            mats.append(jnp.reshape(stacked, np.shape(o) + np.shape(leaf)))
        per_input.append(tree_util.tree_unflatten(out_tree, mats))
    if single:
        return per_input[0]
    return tuple(per_input)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """The Jacobian by reverse mode: one VJP per output coordinate, stacked."""

    def jac(*args):
        import runtime.numpy as jnp

        nums = _argnums(argnums, len(args), "jacrev")
        out, f_vjp = vjp(lambda *xs: fun(*_replace(args, nums, xs)), *[args[i] for i in nums])
        out_leaves, out_tree = tree_util.tree_flatten(out)
        rows = []
        for k, o in enumerate(out_leaves):
            for idx in np.ndindex(*np.shape(o)):
                basis = [np.zeros(np.shape(x), aval_of(x).dtype) for x in out_leaves]
                basis[k][idx] = 1
                rows.append((k, f_vjp(tree_util.tree_unflatten(out_tree, basis))))
        per_output = []
        for k, o in enumerate(out_leaves):
            mine = [r for kk, r in rows if kk == k]
            per_arg = []
            for a, i in enumerate(nums):
                in_leaves, in_tree = tree_util.tree_flatten(args[i])
                mats = []
                for li, leaf in enumerate(in_leaves):
                    stacked = jnp.stack([tree_util.tree_leaves(r[a])[li] for r in mine])
                    mats.append(jnp.reshape(stacked, np.shape(o) + np.shape(leaf)))
                per_arg.append(tree_util.tree_unflatten(in_tree, mats))
            per_output.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        return tree_util.tree_unflatten(out_tree, per_output)

    return jac


def _replace(args: Sequence[Any], nums: Sequence[int], xs: Sequence[Any]) -> list[Any]:
    full = list(args)
    for i, x in zip(nums, xs):
        full[i] = x
    return full


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    return jacfwd(jacrev(fun, argnums), argnums)


# -- user-defined derivatives ---------------------------------------------------------------------------------------
class custom_jvp:  # noqa: N801 - JAX's name
    """``@custom_jvp`` with ``f.defjvp(rule)``: ``rule(primals, tangents) -> (primal_out, tangent_out)``."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.rule: Callable | None = None
        functools.update_wrapper(self, fun)

    def defjvp(self, rule: Callable, symbolic_zeros: bool = False) -> Callable:
        self.rule = rule
        return rule

    def defjvps(self, *partials: Callable | None) -> None:
        def rule(primals, tangents):
            out = self.fun(*primals)
            total = None
            for partial, t in zip(partials, tangents):
                if partial is not None:
                    term = partial(t, out, *primals)
                    total = term if total is None else tree_util.tree_map(lambda a, b: a + b, total, term)
            return out, total

        self.rule = rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            import inspect

            bound = inspect.signature(self.fun).bind(*args, **kwargs)
            args = bound.args
        return _custom_call(self, args, "jvp")

    # called by the transforms with flat values
    def jvp_rule(self, primals: list[Any], tangents: list[Any]) -> tuple[list[Any], list[Any]]:
        from transpiler.primitives.ad import instantiate

        if self.rule is None:
            raise TypeError(f"No JVP defined for custom_jvp function {self.__name__} using defjvp.")
        args = tree_util.tree_unflatten(self._in_tree, primals)
        tans = tree_util.tree_unflatten(self._in_tree, [instantiate(t) for t in tangents])
        static = [args[i] for i in self.nondiff_argnums]
        diff_args = [a for i, a in enumerate(args) if i not in self.nondiff_argnums]
        diff_tans = [t for i, t in enumerate(tans) if i not in self.nondiff_argnums]
        out, tan = self.rule(*static, tuple(diff_args), tuple(diff_tans))
        return tree_util.tree_leaves(out), tree_util.tree_leaves(tan)


class custom_vjp:  # noqa: N801 - JAX's name
    """``@custom_vjp`` with ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``,
    ``bwd(residuals, cotangent) -> cotangents`` (a tuple, one per differentiable argument)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            import inspect

            args = inspect.signature(self.fun).bind(*args, **kwargs).args
        return _custom_call(self, args, "vjp")

    def forward(self, primals: list[Any]) -> tuple[list[Any], list[Any]]:
        if self.fwd is None:
            raise TypeError(f"No VJP defined for custom_vjp function {self.__name__} using defvjp.")
        args = tree_util.tree_unflatten(self._in_tree, primals)
        out, residuals = self.fwd(*args)
        self._res_tree = tree_util.tree_structure(residuals)
        return tree_util.tree_leaves(out), tree_util.tree_leaves(residuals)

    def backward(self, residuals: list[Any], cotangents: list[Any]) -> list[Any]:
        res = tree_util.tree_unflatten(self._res_tree, residuals)
        ct = tree_util.tree_unflatten(self._out_tree, cotangents)
        args = tree_util.tree_unflatten(self._in_tree, [None] * self._in_tree.num_leaves)
        static = [args[i] for i in self.nondiff_argnums]
        cts = self.bwd(*static, res, ct)
        if not isinstance(cts, (tuple, list)):
            raise TypeError(f"custom_vjp bwd function must return a tuple of cotangents, got {type(cts).__name__}")
        full: list[Any] = []
        it = iter(cts)
        for i in range(len(args)):
            full.append(None if i in self.nondiff_argnums else next(it))
        out_leaves: list[Any] = []
        for i, c in enumerate(full):
            n = len(tree_util.tree_leaves(tree_util.tree_unflatten(self._in_tree, [0] * self._in_tree.num_leaves)[i]))
            out_leaves += [None] * n if c is None else tree_util.tree_leaves(c)
        return out_leaves


def _custom_call(obj: Any, args: Sequence[Any], kind: str) -> Any:
    """Run ``obj.fun``: directly when nothing is traced, else as a custom call op holding the function."""
    from transpiler.builder import Builder
    from transpiler.frontend.calls import current_trace, interpret, is_user_function
    from transpiler.ir import Op
    from transpiler.primitives import core
    from transpiler.primitives.custom import custom_jvp_call_p, custom_vjp_call_p

    builder = core.current_interpreter()
    leaves, in_tree = tree_util.tree_flatten(list(args))
    if not isinstance(builder, Builder) or not any(isinstance(x, Value) for x in leaves):
        return obj.fun(*args)
    obj._in_tree = in_tree
    values = [builder.operand(x) for x in leaves]
    with builder.region([v.aval for v in values]) as block:
        inner = tree_util.tree_unflatten(in_tree, list(block.params))
        out = interpret(current_trace(), obj.fun, inner, {}) if is_user_function(obj.fun) else obj.fun(*inner)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        block.results = [builder.operand(o) for o in out_leaves]
    obj._out_tree = out_tree
    results = [Value(r.aval) for r in block.results]
    prim = custom_jvp_call_p if kind == "jvp" else custom_vjp_call_p
    builder.emit(Op(prim, values, {"rule": obj, "in_tree": None, "out_tree": None, "nondiff": obj.nondiff_argnums},
                    results, regions=[block], loc=builder.loc))
    return tree_util.tree_unflatten(out_tree, results)


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Any = None, static_argnums: Sequence[int] = ()):
    """``checkpoint`` (``remat``): the same values and derivatives as ``fun``. srcjax saves the forward values
    the backward pass needs; recomputing them instead, to trade time for memory, is not implemented."""

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return fun(*args, **kwargs)

    return wrapped


remat = checkpoint


def stop_gradient(x: Any) -> Any:
    from transpiler.primitives.custom import stop_gradient_p

    def stop(leaf):
        if isinstance(leaf, (Array, Value)) or hasattr(leaf, "aval"):
            return stop_gradient_p.bind(leaf) if aval_of(leaf).dtype.kind in "fc" else leaf
        return leaf

    return tree_util.tree_map(stop, x)


__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian", "custom_jvp",
           "custom_vjp", "checkpoint", "remat", "stop_gradient", "Zero"]
