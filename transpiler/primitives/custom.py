"""Primitives that change only how a value differentiates: ``stop_gradient`` and user-defined rules.

``custom_jvp_call`` and ``custom_vjp_call`` hold the traced function as a region (what runs) and the
user's rules as parameters (opaque Python callables: they print by name and do not parse back). The
transforms call the rules; everything else runs the region.
"""

from __future__ import annotations

from typing import Any

from srcjax.transpiler.primitives.ad import Zero
from srcjax.transpiler.primitives.batching import elementwise_rule
from srcjax.transpiler.primitives.control import ControlPrimitive
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType

stop_gradient_p = Primitive("stop_gradient")


@stop_gradient_p.def_shape
def _stop_gradient_shape(x: TensorType) -> TensorType:
    check(isinstance(x, TensorType), "stop_gradient", f"expects an array, got {x}")
    return x


stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_jvp(lambda primals, tangents: (stop_gradient_p.bind(*primals), Zero(tangents[0].aval)))
stop_gradient_p.mark_no_rule("transpose", "stop_gradient has a zero derivative, so it never appears in a linear part")
stop_gradient_p.def_vmap(elementwise_rule(stop_gradient_p))  # the identity, elementwise


class CustomCall(ControlPrimitive):
    """A call whose region is the function and whose params carry the user's rules."""


def _custom_check(op) -> list[str]:
    (region,) = op.regions
    errors = []
    if [p.aval.strong() for p in region.params] != [v.aval.strong() for v in op.operands]:
        errors.append(f"{op.prim.name} region parameters do not match its operands")
    if [r.aval.strong() for r in region.results] != [r.aval.strong() for r in op.results]:
        errors.append(f"{op.prim.name} region results do not match the op's results")
    return errors


def _custom_run(op, operands, run_block) -> list[Any]:
    return run_block(op.regions[0], operands)


custom_jvp_call_p = CustomCall("custom_jvp_call", params=("rule", "in_tree", "out_tree", "nondiff"))
custom_vjp_call_p = CustomCall("custom_vjp_call", params=("rule", "in_tree", "out_tree", "nondiff"))
for _p in (custom_jvp_call_p, custom_vjp_call_p):
    _p.check_regions, _p.run = _custom_check, _custom_run
custom_jvp_call_p.def_jvp(lambda primals, tangents, *, rule, **_: rule.jvp_rule(primals, tangents))

register_module(globals())
