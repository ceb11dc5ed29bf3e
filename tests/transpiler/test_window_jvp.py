"""The small-window JVP of reduce_window_max/min (offset by offset, no gather) chooses exactly the element the
gather formulation chooses: the first extremum in row-major order, NaN windows included, under padding,
strides and window dilation; the gradients (their transposes) agree too."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
import srcjax.transpiler.primitives.reduce as reduce_module
from srcjax import lax

CASES = [((6, 7), (2, 2), (2, 2), "VALID", (1, 1)), ((5, 8), (3, 3), (1, 2), "SAME", (1, 1)),
         ((2, 9, 9, 3), (1, 3, 3, 1), (1, 2, 2, 1), "SAME", (1, 1, 1, 1)), ((9,), (3,), (2,), "VALID", (2,))]


def _data(shape, kind, rng):
    x = rng.integers(0, 3, size=shape).astype(np.float32)  # many ties
    if kind == "nan":
        x.flat[::5] = np.nan
    if kind == "inf":
        x[...] = -np.inf
        x.flat[::4] = 1.0
    return x


@pytest.mark.parametrize("shape, window, strides, padding, dilation", CASES, ids=str)
@pytest.mark.parametrize("kind", ["ties", "nan", "inf"])
@pytest.mark.parametrize("op", ["max", "min"])
def test_offsetwise_choice_equals_the_gather_choice(monkeypatch, shape, window, strides, padding, dilation, kind, op):
    rng = np.random.default_rng(len(shape) + len(kind))
    x, t = _data(shape, kind, rng), rng.normal(size=shape).astype(np.float32)
    combine, init = (lax.max, -np.inf) if op == "max" else (lax.min, np.inf)

    def f(x):
        return lax.reduce_window(x, init, combine, window, strides, padding, window_dilation=dilation)

    results = []
    for limit in (16, 0):  # the offset-wise rule, then the gather rule
        monkeypatch.setattr(reduce_module, "_SMALL_WINDOW_JVP", limit)
        tangent = srcjax.jvp(f, (x,), (t,))[1]
        gradient = srcjax.grad(lambda x: jnp.sum(f(x) * 1.5))(x)
        results.append((np.asarray(tangent), np.asarray(gradient)))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
