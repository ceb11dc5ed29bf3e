"""``cost_analysis()`` of a lowered or compiled function (JAX's ``Lowered.cost_analysis``): the figures XLA's
``HloCostAnalysis`` gives, counted over srcjax's IR.

Each op counts as the HLO instruction JAX lowers it to, before fusion (what JAX's ``Lowered.cost_analysis``
reports): ``flops`` is one per element of each elementwise op (comparisons, selects, clamps and converts
included), ``2*M*N*K`` for a product (for a convolution, two per multiply of an input element that is not
padding), the input's elements less the output's for a reduction, and nothing for what only moves data
(reshape, broadcast, slice, gather, concatenate, pad; a transpose not even bytes). ``transcendentals`` counts
the elements of exp, log, tanh, sin, pow, sqrt and the like apart from the flops; ``bytes accessed`` is what
each op reads and writes, with ``bytes accessed{i}{}`` the part of operand ``i`` and ``bytes accessedout{}``
the results, and ``utilization{i}{}`` the fraction of operand ``i`` each op uses, summed. A key is present
only when its count is not zero, as in XLA's dict. A constant of one value (which srcjax folds into an array)
and a scalar operand of an elementwise op on arrays count as the broadcast of a scalar JAX's HLO has. Where
srcjax's IR of a library function differs from JAX's (``relu``, ``outer``, integer ``floor_divide``), the counts
follow srcjax's ops.

A loop's body counts once, as XLA counts a ``while`` (the trip count is not known to it); a ``cond`` counts the
most any branch does, per key. Ops JAX lowers to custom calls (LAPACK's factorizations, ``top_k``, callbacks)
count no flops. Functions JAX's CPU lowering expands into many HLO ops (``logistic``, ``lgamma``, ``erf_inv``,
...) count the flops and transcendentals of that expansion, but the bytes of the one op srcjax has. A program
over several devices (``shard_map``) counts all of them, where JAX's figures are one device's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.transpiler.ir import Block, Function, Literal, Op, Value

FLOPS, TRANSCENDENTALS, BYTES, UTILIZATION = "flops", "transcendentals", "bytes accessed", "utilization"

# one flop per element of the result
_ELEMENTWISE = frozenset(
    "abs add and bitcast_convert_type ceil clz complex div eq floor ge gt imag is_finite le lt max min mul mulhi ne "
    "neg not or population_count real rem round clamp shift_left shift_right_arithmetic shift_right_logical sign "
    "square sub xor".split())
# one transcendental per element of the result, and no flop (XLA keeps them apart: one stands for many flops)
_TRANSCENDENTAL = frozenset("atan atan2 cbrt cos erf exp expm1 log log1p pow rsqrt sin sqrt tan tanh".split())
# (flops, transcendentals) per element of functions JAX's CPU lowering expands into several HLO ops: the counts of
# JAX 0.10.2's expansions for float32 (and, where they differ, float64)
_EXPANDED = {"acos": (3, 2), "acosh": (7, 4), "asin": (5, 2), "asinh": (11, 3), "atanh": (6, 2), "cosh": (3, 2),
             "sinh": (10, 3), "digamma": (73, 3), "erf_inv": (37, 2), "erfc": (62, 1), "exp2": (1, 1),
             "lgamma": (53, 4), "logistic": (3, 1), "nextafter": (24, 0)}
_EXPANDED_F64 = {"erf_inv": (100, 2), "erfc": (90, 1)}
_REDUCTIONS = frozenset("reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or reduce_xor".split())
# cumulative ops, lowered on CPU to a ``reduce_window`` over the whole axis: (flops, transcendentals) per step
_CUMULATIVE = {"cumsum": (1, 0), "cumprod": (1, 0), "cummax": (1, 0), "cummin": (1, 0), "cumlogsumexp": (8, 2)}
_SCATTER_COMBINED = frozenset("scatter_add scatter_mul scatter_min scatter_max".split())
# ops that read only the elements of operand 0 that they write (operand 0 counts as many bytes as the result)
_READ_AS_RESULT = frozenset("slice dynamic_slice gather".split())
# no cost at all: ops that are no HLO instruction (annotations)
_FREE = frozenset("stop_gradient name optimization_barrier".split())
# ops JAX emits no instruction for when the result has the operand's shape and dtype (a convert of the weak bit)
_IDENTITY_WHEN_SAME = frozenset("broadcast_in_dim reshape squeeze expand_dims convert_element_type".split())
_ARGMAX_FLOPS = {"f": 9, "other": 7}  # per compared element: the comparator JAX's argmax reduction applies


def cost_analysis(fn: Function) -> dict[str, float]:
    """XLA's cost dict of ``fn``: the sum over its ops (see the module's docstring)."""
    totals = _block_cost(fn.body)
    _add(totals, _results_tuple(fn))
    for _, data in fn.consts:
        if data.size > 1 and (data == data.flat[0]).all():
            # (srcjax folds a constant filled with one value into an array; JAX's HLO broadcasts the scalar)
            item = data.dtype.itemsize
            _add(totals, {BYTES: item * (1 + data.size), f"{BYTES}0{{}}": item, f"{BYTES}out{{}}": item * data.size,
                          f"{UTILIZATION}0{{}}": 1.0})
    return {key: float(value) for key, value in totals.items() if value}


def _results_tuple(fn: Function) -> dict[str, float]:
    """Several results leave XLA's program as a tuple of them: a pointer each, and a use of each."""
    n = len(fn.results)
    if n < 2:
        return {}
    cost = {f"{UTILIZATION}{i}{{}}": 1.0 for i in range(n)}
    cost.update({BYTES: 8.0 * n, f"{BYTES}out{{}}": 8.0 * n})
    return cost


def _block_cost(block: Block) -> dict[str, float]:
    totals: dict[str, float] = {}
    for op in block.ops:
        _add(totals, _op_cost(op))
    return totals


def _add(totals: dict[str, float], cost: dict[str, float]) -> None:
    for key, value in cost.items():
        totals[key] = totals.get(key, 0) + value


def _nbytes(v: Value) -> int:
    return v.aval.dtype.itemsize * (1 if isinstance(v, Literal) else v.aval.size)


def _op_cost(op: Op) -> dict[str, float]:
    name = op.name
    if name in _FREE:
        return {}
    if name in _IDENTITY_WHEN_SAME:
        x, y = op.operands[0], op.results[0]
        if (x.aval.dtype, x.aval.shape) == (y.aval.dtype, y.aval.shape) or (
                name == "convert_element_type" and x.aval.dtype == y.aval.dtype):
            return {}
    if op.regions:
        return _region_cost(op)
    cost = _memory(op)
    flops, transcendentals = _arithmetic(op)
    cost[FLOPS], cost[TRANSCENDENTALS] = flops, transcendentals
    return cost


def _region_cost(op: Op) -> dict[str, float]:
    """A loop's body once (and its condition, or the counter's increment and comparison); a ``cond``'s costliest
    branch per key, and the conversion of its predicate to an index; a call's body (``checkpoint``, custom rules'
    primal function)."""
    if op.name == "cond":
        cost: dict[str, float] = {}
        for branch in map(_block_cost, op.regions):
            for key, value in branch.items():
                cost[key] = max(cost.get(key, 0), value)
        _add(cost, _predicate_cost(op.operands[0]))
        return cost
    if op.name == "while":
        cost = _block_cost(op.regions[0])
        _add(cost, _block_cost(op.regions[1]))
        return cost
    cost = _block_cost(op.regions[0])
    if op.name in ("for", "scan"):
        cost[FLOPS] = cost.get(FLOPS, 0) + 2
    return cost


def _predicate_cost(predicate: Value) -> dict[str, float]:
    """What JAX adds to a ``cond`` to make its predicate a branch index: a bool converted to int32, an integer
    clamped into range (between two int32 constants)."""
    size = predicate.aval.dtype.itemsize
    reads = [size] if predicate.aval.dtype.kind == "b" else [4, size, 4]
    cost = {f"{BYTES}{i}{{}}": float(n) for i, n in enumerate(reads)}
    cost.update({f"{UTILIZATION}{i}{{}}": 1.0 for i in range(len(reads))})
    cost.update({f"{BYTES}out{{}}": 4.0, BYTES: float(sum(reads) + 4), FLOPS: 1.0})
    return cost


def _memory(op: Op) -> dict[str, float]:
    """Bytes read per operand and written, and the fraction of each operand used (its ``utilization``), as XLA's
    handlers count the instruction."""
    reads = [_nbytes(v) for v in op.operands]
    used = [1.0] * len(reads)
    written = sum(_nbytes(r) for r in op.results)
    name = op.name
    if name in _READ_AS_RESULT:
        reads[0] = written
        used[0] = op.results[0].aval.size / max(op.operands[0].aval.size, 1)
    elif name == "transpose":  # (XLA's analysis counts no bytes for it)
        reads[0] = written = 0
    elif name == "dynamic_update_slice":  # (in place: the operand is not read, only the update written)
        used[0] = 1 - op.operands[1].aval.size / max(op.operands[0].aval.size, 1)
        reads[0], written = 0, reads[1]
    elif name.startswith("scatter"):  # (in place: the elements the updates land on are read and written)
        reads[0] = written = reads[2]
    elif name in ("argmax", "argmin"):
        return _arg_reduction_memory(op)
    elif name in _REDUCTIONS or name in _CUMULATIVE or name.startswith("reduce_window"):
        reads.append(op.operands[0].aval.dtype.itemsize)  # (the initial value XLA's reduce takes as an operand)
        used.append(1.0)
    if len(op.results) > 1:  # (XLA's op makes a tuple; a get-tuple-element takes each result out of it)
        used[0] += len(op.results)
    cost = {f"{BYTES}{i}{{}}": float(n) for i, n in enumerate(reads)}
    cost.update({f"{UTILIZATION}{i}{{}}": u for i, u in enumerate(used)})
    cost[f"{BYTES}out{{}}"] = float(written)
    cost[BYTES] = float(sum(reads) + written)
    if name in _ELEMENTWISE or name in _TRANSCENDENTAL or name in _EXPANDED or name == "select_n":
        _add(cost, _scalar_broadcasts(op, cost))
    return cost


def _scalar_broadcasts(op: Op, cost: dict[str, float]) -> dict[str, float]:
    """A scalar operand of an elementwise op on arrays (``clamp``'s bounds, ``select_n``'s predicate, a literal) is
    broadcast to the result's shape by an op of its own in JAX's HLO: the elementwise op reads it whole, the
    broadcast reads the scalar and writes it whole."""
    extra: dict[str, float] = {}
    size = op.results[0].aval.size
    for i, v in enumerate(op.operands):
        if v.aval.size == 1 and size > 1:
            item = v.aval.dtype.itemsize
            cost[f"{BYTES}{i}{{}}"] += (size - 1) * item  # (the elementwise op's read of the broadcast)
            _add(extra, {BYTES: (size - 1) * item + item + size * item, f"{BYTES}0{{}}": item,
                         f"{BYTES}out{{}}": size * item, f"{UTILIZATION}0{{}}": 1.0})
    return extra


def _arg_reduction_memory(op: Op) -> dict[str, float]:
    """JAX's argmax: an iota of the axis (broadcast to the operand's shape), then one reduction of the values and
    the indices together, from an initial value and index, to the value and the index."""
    x, index = op.operands[0].aval, op.results[0].aval
    size, axis_length = index.dtype.itemsize, x.shape[op.params["axes"][0]]
    iota = {BYTES: axis_length * size, f"{BYTES}out{{}}": axis_length * size}
    if x.ndim > 1:  # (the broadcast of the iota)
        _add(iota, {BYTES: (axis_length + x.size) * size, f"{BYTES}0{{}}": axis_length * size,
                    f"{BYTES}out{{}}": x.size * size, f"{UTILIZATION}0{{}}": 1.0})
    reads = [x.size * x.dtype.itemsize, x.size * size, x.dtype.itemsize, size]
    written = index.size * (x.dtype.itemsize + size)
    cost = {f"{BYTES}{i}{{}}": float(n) for i, n in enumerate(reads)}
    cost.update({f"{UTILIZATION}{i}{{}}": 1.0 for i in range(len(reads))})
    cost[f"{UTILIZATION}0{{}}"] += 2  # (the comparator's computation, as XLA adds it in: its own two operands)
    cost.update({f"{BYTES}out{{}}": float(written), BYTES: float(sum(reads) + written)})
    _add(cost, iota)
    return cost


def _arithmetic(op: Op) -> tuple[float, float]:
    """(flops, transcendentals) of an op without regions."""
    name, out = op.name, op.results[0].aval
    if name in _ELEMENTWISE or name == "convert_element_type":
        return out.size, 0
    if name in _TRANSCENDENTAL:
        return 0, out.size
    if name in _EXPANDED:
        flops, transcendentals = (_EXPANDED_F64 if out.dtype == np.float64 else {}).get(name, _EXPANDED[name])
        return flops * out.size, transcendentals * out.size
    rule = _RULES.get(name)
    return rule(op) if rule is not None else (0, 0)


def _integer_pow(op: Op) -> tuple[float, float]:
    """Square-and-multiply, as JAX lowers ``x ** y``: a product per squaring and per set bit after the first, and
    a division for a negative power."""
    y = abs(op.params["y"])
    products = (y.bit_length() - 1) + (bin(y).count("1") - 1) if y else 0
    return (products + (op.params["y"] < 0)) * op.results[0].aval.size, 0


def _select_n(op: Op) -> tuple[float, float]:
    """JAX lowers a choice among ``n`` cases by an integer to a tree of ``n - 1`` comparisons and selects; by a
    bool, to one select."""
    cases, size = len(op.operands) - 1, op.results[0].aval.size
    if cases == 1:
        return 0, 0
    return (1 if op.operands[0].aval.dtype.kind == "b" else 2 * (cases - 1)) * size, 0


def _conj(op: Op) -> tuple[float, float]:
    """Of a complex number, JAX's lowering takes the real and imaginary parts, negates one and joins them."""
    return (4 if op.operands[0].aval.dtype.kind == "c" else 1) * op.results[0].aval.size, 0


def _reduction(op: Op) -> tuple[float, float]:
    return op.operands[0].aval.size - op.results[0].aval.size, 0


def _arg_reduction(op: Op) -> tuple[float, float]:
    kind = "f" if op.operands[0].aval.dtype.kind in "fc" else "other"
    return _ARGMAX_FLOPS[kind] * (op.operands[0].aval.size - op.results[0].aval.size), 0


def _cumulative(op: Op) -> tuple[float, float]:
    """Each result element reduces a window of the whole axis (padded): ``n - 1`` combinations."""
    steps = op.results[0].aval.size * (op.operands[0].aval.shape[op.params["axis"]] - 1)
    flops, transcendentals = _CUMULATIVE[op.name]
    return flops * steps, transcendentals * steps


def _reduce_window(op: Op) -> tuple[float, float]:
    window = int(np.prod(op.params["window_dimensions"], dtype=np.int64))
    return op.results[0].aval.size * (window - 1), 0


def _sort(op: Op) -> tuple[float, float]:
    """XLA's estimate: ``n * ceil(log2 n)`` comparisons over all ``n`` elements of the keys."""
    n = op.operands[0].aval.size
    return n * (n - 1).bit_length() if n > 1 else 0, 0


def _dot_general(op: Op) -> tuple[float, float]:
    (contract, _), _ = op.params["dimension_numbers"]
    lhs = op.operands[0].aval
    depth = int(np.prod([lhs.shape[d] for d in contract], dtype=np.int64))
    return 2 * op.results[0].aval.size * depth, 0


def _conv(op: Op) -> tuple[float, float]:
    """Two flops per (output element, kernel element) pair that reads an input element, not padding nor a hole
    of ``lhs_dilation``: counted per spatial axis, as XLA's ``HandleConvolution`` counts valid positions."""
    lhs, rhs, out = op.operands[0].aval, op.operands[1].aval, op.results[0].aval
    numbers, p = op.params["dimension_numbers"], op.params
    valid = 1
    for d in range(len(numbers.lhs_spec) - 2):
        size, kernel = lhs.shape[numbers.lhs_spec[2 + d]], rhs.shape[numbers.rhs_spec[2 + d]]
        outputs = out.shape[numbers.out_spec[2 + d]]
        dilation = p["lhs_dilation"][d]
        span = (size - 1) * dilation + 1 if size else 0
        at = (np.arange(outputs)[:, None] * p["window_strides"][d] - p["padding"][d][0]
              + np.arange(kernel)[None, :] * p["rhs_dilation"][d])
        valid *= int(np.count_nonzero((at >= 0) & (at < span) & (at % dilation == 0)))
    features = out.shape[numbers.out_spec[1]] * rhs.shape[numbers.rhs_spec[1]]
    return 2 * out.shape[numbers.out_spec[0]] * features * valid, 0


def _fft(op: Op) -> tuple[float, float]:
    """XLA's estimate: 8 flops (4 fused multiply-adds of a complex product) per element of the operand per factor
    of ``log2`` of each transformed length."""
    factors = int(np.prod([max(int(n), 1).bit_length() - 1 for n in op.params["fft_lengths"]], dtype=np.int64))
    return 8 * factors * op.operands[0].aval.size, 0


def _scatter_combined(op: Op) -> tuple[float, float]:
    return op.operands[2].aval.size, 0  # (one combination per update element)


_RULES: dict[str, Any] = {
    "select_n": _select_n, "conj": _conj, "integer_pow": _integer_pow, "argmax": _arg_reduction,
    "argmin": _arg_reduction, "sort": _sort, "dot_general": _dot_general, "conv_general_dilated": _conv, "fft": _fft,
    **{name: _reduction for name in _REDUCTIONS}, **{name: _cumulative for name in _CUMULATIVE},
    **{name: _reduce_window for name in ("reduce_window_sum", "reduce_window_max", "reduce_window_min")},
    **{name: _scatter_combined for name in _SCATTER_COMBINED},
}


def fused_cost_analysis(fn: Function, plan: Any) -> dict[str, float]:
    """The cost dict of ``fn`` compiled natively by ``plan`` (``codegen/llvm/plan.py``), as JAX's
    ``Compiled.cost_analysis()`` counts the optimized program: the same flops and transcendentals, but the bytes
    of the plan's steps, each (a loop nest, which fuses elementwise ops into what it stores, or a BLAS product)
    reading each buffer it loads from once and writing what it stores: operand ``i`` is the ``i``-th buffer a
    step reads. A plan with control flow or host calls counts its ops one by one (``cost_analysis``)."""
    from srcjax.codegen.llvm.nodes import instantiate
    from srcjax.codegen.llvm.plan import Gemm

    totals = cost_analysis(fn)
    if plan.control or plan.host_ops:
        return totals
    totals = {key: value for key, value in totals.items() if not key.startswith((BYTES, UTILIZATION))}
    _add(totals, _results_tuple(fn))
    size = lambda buffer: buffer.size * np.dtype(buffer.dtype).itemsize  # noqa: E731
    for step in plan.steps:
        if isinstance(step, Gemm):
            reads, writes = [plan.buffers[id(step.lhs.base)], plan.buffers[id(step.rhs.base)]], [step.target]
        else:
            body = instantiate(plan, step)
            reads = list({id(load.buffer): load.buffer for load in body.loads}.values())
            writes = list({id(b): b for b in [step.target] + [b for _, b in step.stores] if b is not None}.values())
        cost = {f"{BYTES}{i}{{}}": float(size(b)) for i, b in enumerate(reads)}
        cost.update({f"{UTILIZATION}{i}{{}}": 1.0 for i in range(len(reads))})
        cost[f"{BYTES}out{{}}"] = float(sum(map(size, writes)))
        cost[BYTES] = float(sum(map(size, reads)) + sum(map(size, writes)))
        _add(totals, cost)
    return {key: value for key, value in totals.items() if value}
