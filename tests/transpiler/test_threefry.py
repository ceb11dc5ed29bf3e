"""The threefry2x32 primitive: Random123's known-answer vectors, vectorisation, and its shape rule."""

import numpy as np
import pytest

from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.primitives.random import threefry2x32_p
from srcjax.transpiler.types import TensorType

# (key words, counter words) -> output words: Random123's known-answer tests for Threefry-2x32-20.
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def u32(*values):
    return np.array(values, np.uint32)


@pytest.mark.parametrize("key, count, expected", KNOWN_ANSWERS)
def test_known_answers(key, count, expected):
    y0, y1 = threefry2x32_p.impl(u32(key[0]), u32(key[1]), u32(count[0]), u32(count[1]))
    assert (y0.dtype, y1.dtype) == (np.uint32, np.uint32)
    assert (int(y0[0]), int(y1[0])) == expected


def test_vectorised_over_counters_and_keys():
    # Every element is an independent block: the vector result equals the per-element results.
    keys = [k for k, _, _ in KNOWN_ANSWERS]
    counts = [c for _, c, _ in KNOWN_ANSWERS]
    cols = [u32(*(k[0] for k in keys)), u32(*(k[1] for k in keys)), u32(*(c[0] for c in counts)),
            u32(*(c[1] for c in counts))]
    y0, y1 = threefry2x32_p.impl(*(c.reshape(3, 1) for c in cols))
    assert y0.shape == y1.shape == (3, 1)
    assert [(int(a), int(b)) for a, b in zip(y0.ravel(), y1.ravel())] == [e for _, _, e in KNOWN_ANSWERS]


def test_zero_d_and_empty_operands():
    y0, y1 = threefry2x32_p.impl(*(np.array(0, np.uint32),) * 4)
    assert y0.shape == () and int(y0) == 0x6B200159 and int(y1) == 0x99BA4EFE
    y0, y1 = threefry2x32_p.impl(*(np.zeros((0, 2), np.uint32),) * 4)
    assert y0.shape == y1.shape == (0, 2)


def test_bind():
    # Whichever interpreter is current (NumPy fallback or the runtime's eager one) computes the same words.
    y0, y1 = threefry2x32_p.bind(*(np.zeros(2, np.uint32),) * 4)
    assert np.asarray(y0).tolist() == [0x6B200159] * 2 and np.asarray(y1).tolist() == [0x99BA4EFE] * 2


def test_shape_rule():
    t = TensorType(np.uint32, (4, 3))
    assert threefry2x32_p.abstract_eval(t, t, t, t) == [t, t]
    assert threefry2x32_p.multiple_results


@pytest.mark.parametrize(
    "types, error, message",
    [
        ([TensorType(np.int32, (2,))] + [TensorType(np.uint32, (2,))] * 3, PrimitiveTypeError, "k0 must be uint32"),
        ([TensorType(np.uint32, (2,))] * 3 + [TensorType(np.float32, (2,))], PrimitiveTypeError, "x1 must be uint32"),
        ([TensorType(np.uint32, ())] * 2 + [TensorType(np.uint32, (2,))] * 2, PrimitiveValueError, "one shape"),
    ],
)
def test_shape_rule_rejects(types, error, message):
    with pytest.raises(error, match=message):
        threefry2x32_p.abstract_eval(*types)
