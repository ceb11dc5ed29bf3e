"""``sparsify(f)``: ``f``, written for dense arrays, run on BCOO arguments.

``f`` is traced to srcjax's IR with a dense stand-in of each BCOO argument's shape and dtype, and the IR is
evaluated op by op: an op whose operands are all dense binds its primitive as usual (so under jit, grad and
vmap it is recorded or computed by the current interpreter); an op with a BCOO operand runs the sparse rule
of its primitive from the table below, which gives BCOO or dense results as JAX's rules do. A primitive
without a rule is an error naming it, as JAX's.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import tree_util
from srcjax.runtime.api import abstractify
from srcjax.runtime.array import Array
from srcjax.runtime.sparse.bcoo import BCOO
from srcjax.runtime.sparse.bcoo_index import bcoo_slice, bcoo_squeeze
from srcjax.runtime.sparse.bcoo_layout import (
    bcoo_broadcast_in_dim, bcoo_concatenate, bcoo_reduce_sum, bcoo_reshape, bcoo_sum_duplicates, bcoo_transpose,
)
from srcjax.runtime.sparse.api import SPARSIFY_TRACING
from srcjax.runtime.sparse.bcsr import BCSR
from srcjax.runtime.sparse.bcoo_dot import add, subtract, bcoo_dot_general, bcoo_multiply_dense, bcoo_multiply_sparse
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import Evaluator, concrete
from srcjax.transpiler.ir import Value, free_values
from srcjax.transpiler.primitives import control, core
from srcjax.transpiler.types import TensorType

__all__ = ["sparsify"]

# f(0) = 0: applied to the stored data (nonlinear ones after duplicates are summed), as JAX's
_LINEAR_UNARY = ("neg", "conj", "real", "imag", "copy")
_ZERO_PRESERVING_UNARY = ("abs", "asin", "asinh", "atan", "atanh", "expm1", "log1p", "sign", "sin", "sinh", "sqrt",
                          "square", "tan", "tanh", "convert_element_type", "bessel_i1e")
# these would make every element nonzero: JAX refuses them, saying so
_DENSIFYING = ("acos", "acosh", "bessel_i0e", "cos", "cosh", "eq", "exp", "ge", "gt", "le", "lt", "log", "ne", "xor")


def _unary(name: str, linear: bool) -> Callable:
    def rule(mat: BCOO, op: Any, **params: Any) -> BCOO:
        if not linear and not mat.unique_indices:
            mat = bcoo_sum_duplicates(mat, nse=mat.nse)
        data = op.prim.bind(mat.data, **params)
        return BCOO((data, mat.indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                    unique_indices=mat.unique_indices)
    return rule


def _mul(x: Any, y: Any, op: Any) -> BCOO:
    if isinstance(x, BCOO) and isinstance(y, BCOO):
        if x.indices is y.indices and x.unique_indices:  # (one structure: the product is elementwise on data)
            return BCOO((x.data * y.data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted,
                        unique_indices=True)
        return bcoo_multiply_sparse(x, y)
    mat, other = (x, y) if isinstance(x, BCOO) else (y, x)
    return BCOO((bcoo_multiply_dense(mat, other), mat.indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def _div(x: Any, y: Any, op: Any) -> BCOO:
    if isinstance(y, BCOO):
        raise NotImplementedError("Division by a sparse array is not implemented because it would result in dense "
                                  "output. If this is your intent, use sparse.todense() to convert your arguments "
                                  "to a dense array.")
    return BCOO((bcoo_multiply_dense(x, 1. / y), x.indices), shape=x.shape, indices_sorted=x.indices_sorted,
                unique_indices=x.unique_indices)


def _add(x: Any, y: Any, op: Any) -> Any:
    return add(x, y)


def _sub(x: Any, y: Any, op: Any) -> Any:
    return subtract(x, y)


def _reduce_sum(mat: BCOO, op: Any, *, axes: Any, **_: Any) -> Any:
    out = bcoo_reduce_sum(mat, axes=axes)
    return jnp.sum(out.data) if out.shape == () else out


def _integer_pow(mat: BCOO, op: Any, *, y: int) -> BCOO:
    if y <= 0:
        raise NotImplementedError(f"sparse rule for integer_pow with non-positive exponent {y} is not implemented "
                                  "because it would result in dense output. If this is your intent, use "
                                  "sparse.todense() to convert your argument to a dense array.")
    return _unary("integer_pow", linear=False)(mat, op, y=y)


def _concatenate(operands: tuple[Any, ...], dimension: int) -> BCOO:
    if not all(isinstance(x, BCOO) for x in operands):
        raise NotImplementedError("sparse rule for concatenate of sparse and dense arrays is not implemented.")
    return bcoo_concatenate(operands, dimension=dimension)


def _dot_general(lhs: Any, rhs: Any, op: Any, *, dimension_numbers: Any, precision: Any = None,
                 preferred_element_type: Any = None, **_: Any) -> Any:
    return bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
                            preferred_element_type=preferred_element_type)


SPARSE_RULES: dict[str, Callable] = {
    **{name: _unary(name, linear=True) for name in _LINEAR_UNARY},
    **{name: _unary(name, linear=False) for name in _ZERO_PRESERVING_UNARY},
    "mul": _mul, "div": _div, "add": _add, "sub": _sub,
    "dot_general": _dot_general,
    "reduce_sum": _reduce_sum,
    "integer_pow": _integer_pow,
    "slice": lambda mat, op, *, start_indices, limit_indices, strides=None: bcoo_slice(
        mat, start_indices=start_indices, limit_indices=limit_indices, strides=strides),
    "squeeze": lambda mat, op, *, dimensions: bcoo_squeeze(mat, dimensions=dimensions),
    "concatenate": lambda *args, dimension: _concatenate(args[:-1], dimension),
    "broadcast_in_dim": lambda mat, op, *, shape, broadcast_dimensions, **_: bcoo_broadcast_in_dim(
        mat, shape=shape, broadcast_dimensions=broadcast_dimensions),
    "transpose": lambda mat, op, *, permutation: bcoo_transpose(mat, permutation=permutation),
    "reshape": lambda mat, op, *, new_sizes, dimensions=None, **_: bcoo_reshape(mat, new_sizes=new_sizes,
                                                                                 dimensions=dimensions),
}


class _SparseEvaluator(Evaluator):
    """Evaluates the IR with BCOO values allowed: an op that reads one runs its primitive's sparse rule."""

    def __init__(self) -> None:
        super().__init__()
        self._rebuilding: list[Any] = []  # the control ops whose regions are being recorded again

    def eval_op(self, op: Any) -> None:
        operands = [self.read(v) for v in op.operands]
        if isinstance(op.prim, control.ControlPrimitive) and self._reads_sparse(op, operands):
            # eagerly a region just runs, its ops through these rules; compiled, a region may read sparse values
            # from outside (a loop over a dense carry using a sparse matrix) but not pass them in or out
            if not isinstance(core.current_interpreter(), Builder):
                outs = self._run_control(op, operands)
            elif any(isinstance(x, BCOO) for x in operands):
                raise _sparse_control_error(op)
            else:
                return super().eval_op(op)
            for result, value in zip(op.results, outs):
                self.env[id(result)] = value
            return None
        if not any(isinstance(x, BCOO) for x in operands):
            return super().eval_op(op)
        name = op.prim.name
        rule = SPARSE_RULES.get(name)
        if rule is None:
            if name in _DENSIFYING:
                raise NotImplementedError(f"sparse rule for {name} is not implemented because it would result in "
                                          "dense output. If this is your intent, use sparse.todense() to convert "
                                          "your arguments to dense matrices.")
            raise NotImplementedError(f"sparse rule for {name} is not implemented.")
        out = rule(*operands, op, **op.params)
        outs = list(out) if op.prim.multiple_results else [out]
        for result, value in zip(op.results, outs):
            self.env[id(result)] = value

    def _stays_structured(self, op: Any, operands: list[Any]) -> bool:
        outer = [self.env.get(id(v)) for region in op.regions for v in free_values(region)]
        symbolic = any(isinstance(x, BCOO) and isinstance(x.data, Value) for x in outer)
        return (symbolic and op.prim is not control.cond_p) or super()._stays_structured(op, operands)

    def _rebuild(self, builder: Any, op: Any, operands: list[Any]) -> list[Any]:
        self._rebuilding.append(op)
        try:
            return super()._rebuild(builder, op, operands)
        finally:
            self._rebuilding.pop()

    def run_block(self, block: Any, args: Any) -> list[Any]:
        results = super().run_block(block, args)
        if self._rebuilding and any(isinstance(r, BCOO) for r in results):  # (it would have to be split in buffers)
            raise _sparse_control_error(self._rebuilding[-1])
        return results

    def _reads_sparse(self, op: Any, operands: list[Any]) -> bool:
        """Whether an op holding regions gets, or its regions read from outside, a sparse value."""
        outer = [self.env.get(id(v)) for region in op.regions for v in free_values(region)]
        return any(isinstance(x, BCOO) for x in (*operands, *outer))


def _sparse_control_error(op: Any) -> NotImplementedError:
    return NotImplementedError(f"sparsify: '{op.prim.name}' passing sparse values into or out of its regions inside "
                               "a traced or compiled function is not built in srcjax (a region may read a sparse "
                               "value from outside; it runs eagerly); convert with sparse.todense() first")


def _is_sparse(x: Any) -> bool:
    return isinstance(x, (BCOO, BCSR))


def _dynamic(x: Any) -> bool:
    return isinstance(x, (Array, Value, np.ndarray)) or (isinstance(x, np.generic) and x.dtype.kind in "biufc")


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
    """``f`` made to accept BCOO arrays where it takes arrays (``use_tracer`` is accepted and has no effect:
    there is one implementation)."""
    from srcjax.transpiler.frontend import trace_function

    del use_tracer

    @functools.wraps(f)
    def sparsified(*args: Any, **kwargs: Any) -> Any:
        leaves, treedef = tree_util.tree_flatten((list(args), kwargs), is_leaf=_is_sparse)
        leaves = [x.to_bcoo() if isinstance(x, BCSR) else x for x in leaves]  # (its rules are BCOO's)
        if not any(_is_sparse(x) for x in leaves):
            return f(*args, **kwargs)
        stand_ins = [TensorType(x.dtype, x.shape) if _is_sparse(x) else abstractify(x) if _dynamic(x) else x
                     for x in leaves]
        abstract_args, abstract_kwargs = tree_util.tree_unflatten(treedef, stand_ins)
        token = SPARSIFY_TRACING.set(True)
        try:
            ir, out_tree = trace_function(f, tuple(abstract_args), abstract_kwargs)
        finally:
            SPARSIFY_TRACING.reset(token)
        inputs = [x for x, s in zip(leaves, stand_ins) if isinstance(s, TensorType)] + list(ir.captured)
        evaluator = _SparseEvaluator()
        for value, data in ir.consts:
            evaluator.env[id(value)] = concrete(np.asarray(data), value.aval)
        for param, x in zip(ir.params, inputs):
            evaluator.env[id(param)] = x
        results = evaluator.run_block(ir.body, inputs if ir.body.params else [])
        return tree_util.tree_unflatten(out_tree, results)

    return sparsified
