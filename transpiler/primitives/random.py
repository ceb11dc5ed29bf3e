"""Primitives of the 'random' family: the Threefry-2x32 block function (Random123, 20 rounds).

``srcjax.random`` builds keys, splitting and every sampler from this one counter-based hash, exactly
as JAX does, so its streams are bit-identical to JAX's. Samplers are library code, not primitives.
"""

from __future__ import annotations

import numpy as np

from srcjax.transpiler.primitives.batching import elementwise_rule
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType, short_name

# Rotation distances of the two alternating groups of four rounds, and the key-schedule parity constant.
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_PARITY = 0x1BD11BDA

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)


@threefry2x32_p.def_shape
def _threefry2x32_shape(k0: TensorType, k1: TensorType, x0: TensorType, x1: TensorType) -> list[TensorType]:
    # Operands: key words k0, k1 and counter words x0, x1, all uint32 of one shape (callers broadcast keys).
    operands = (k0, k1, x0, x1)
    for name, t in zip(("k0", "k1", "x0", "x1"), operands):
        check(t.dtype == np.uint32, "threefry2x32", f"operand {name} must be uint32, got {short_name(t.dtype)}")
    check(len({t.shape for t in operands}) == 1, "threefry2x32",
          f"operands must have one shape (broadcast the key first), got {[t.shape for t in operands]}", kind="value")
    out = TensorType(np.uint32, x0.shape)
    return [out, out]


def _rotate_left(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


@threefry2x32_p.def_impl
def _threefry2x32_impl(k0, k1, x0, x1):
    # uint32 arithmetic wraps mod 2^32; the key schedule is (k0, k1, k0 ^ k1 ^ parity), injected after
    # every group of four rounds together with the injection counter 1..5.
    with np.errstate(over="ignore"):
        k0, k1 = np.asarray(k0, np.uint32), np.asarray(k1, np.uint32)
        schedule = (k0, k1, k0 ^ k1 ^ np.uint32(KEY_PARITY))
        x0 = np.asarray(x0, np.uint32) + schedule[0]
        x1 = np.asarray(x1, np.uint32) + schedule[1]
        for group in range(5):
            for r in ROTATIONS[group % 2]:
                x0 = x0 + x1
                x1 = _rotate_left(x1, r) ^ x0
            x0 = x0 + schedule[(group + 1) % 3]
            x1 = x1 + schedule[(group + 2) % 3] + np.uint32(group + 1)
    return [np.asarray(x0, np.uint32), np.asarray(x1, np.uint32)]


threefry2x32_p.def_zero_jvp("threefry2x32 is an integer hash: zero derivative")
threefry2x32_p.def_unsupported("transpose", "not linear")


@threefry2x32_p.def_vmap
def _threefry2x32_vmap(args, dims):
    # elementwise over its four operands (unbatched ones broadcast along the batch axis); both results are
    # batched where the operands are
    out, d = elementwise_rule(threefry2x32_p)(args, dims)
    return out, [d, d]

register_module(globals())
