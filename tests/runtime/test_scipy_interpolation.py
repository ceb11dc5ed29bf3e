"""srcjax.scipy.ndimage.map_coordinates and srcjax.scipy.interpolate.RegularGridInterpolator against float64
references written point by point from SciPy's documented rules (scipy is not a dependency), JAX's docstring
examples (JAX 0.10.2's numbers), finite differences for the derivatives, and jit and vmap."""

import itertools

import numpy as np
import pytest

import srcjax
from srcjax.runtime import numpy as jnp
from srcjax.scipy import interpolate, ndimage


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _index(i, n, mode):
    """The sample that stands at integer position i under the mode (None: outside, for 'constant')."""
    if mode == "constant":
        return i if 0 <= i < n else None
    if mode == "nearest":
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    if mode == "mirror":  # d c b | a b c d | c b a
        if n == 1:
            return 0
        i %= 2 * (n - 1)
        return i if i < n else 2 * (n - 1) - i
    i %= 2 * n  # reflect: d c b a | a b c d | d c b a
    return i if i < n else 2 * n - 1 - i


def reference_map_coordinates(a, coordinates, order, mode, cval):
    out = np.empty(np.shape(coordinates[0]))
    for p in np.ndindex(out.shape):
        point = [float(c[p]) for c in coordinates]
        if order == 0:
            corners = [[(int(_round_half_away(x)), 1.0)] for x in point]
        else:
            corners = [[(int(np.floor(x)), 1 - (x - np.floor(x))), (int(np.floor(x)) + 1, x - np.floor(x))]
                       for x in point]
        total = 0.0
        for corner in itertools.product(*corners):
            index = [_index(i, n, mode) for (i, _), n in zip(corner, a.shape)]
            value = cval if None in index else a[tuple(index)]
            total += np.prod([w for _, w in corner]) * value
        out[p] = total
    return out


MODES = ["constant", "nearest", "wrap", "mirror", "reflect"]


@pytest.mark.parametrize("shape", [(6,), (1,), (4, 3), (2, 3, 2)])
def test_map_coordinates_matches_the_modes_rules(shape):
    rng = np.random.default_rng(len(shape) * 7 + shape[0])
    a = rng.normal(size=shape).astype(np.float32)
    coordinates = [rng.uniform(-5, n + 5, size=(9,)).astype(np.float32) for n in shape]
    coordinates[0][:4] = [0.5, -0.5, 1.5, -2.5]  # halfway cases round away from zero
    for order, mode in itertools.product([0, 1], MODES):
        got = ndimage.map_coordinates(a, coordinates, order, mode=mode, cval=1.5)
        assert got.dtype == np.float32 and got.shape == (9,)
        want = reference_map_coordinates(a.astype(np.float64), coordinates, order, mode, 1.5)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5, err_msg=f"{order} {mode}")


def test_map_coordinates_dtypes_docstring_and_errors():
    a = jnp.arange(12.0).reshape(3, 4)
    # JAX 0.10.2's docstring example
    np.testing.assert_allclose(ndimage.map_coordinates(a, [jnp.array([0.5, 1.5]), jnp.array([1.5, 2.5])], order=1),
                               [3.5, 8.5])
    ints = np.array([[3, -7, 2], [5, 1, 9]], np.int32)
    got = ndimage.map_coordinates(ints, [np.array([0.25, 0.5, 1.0]), np.array([0.5, 1.75, 2.0])], 1)
    assert got.dtype == np.int32  # the interpolated value is rounded half away from zero, as in JAX
    want = reference_map_coordinates(ints, [np.array([0.25, 0.5, 1.0]), np.array([0.5, 1.75, 2.0])], 1, "constant", 0)
    np.testing.assert_array_equal(np.asarray(got), _round_half_away(want))
    # integer coordinates index directly; coordinates broadcast against each other
    got = ndimage.map_coordinates(a, [np.array([[0], [2]]), np.array([1, 3, 5])], 0, mode="wrap")
    np.testing.assert_array_equal(np.asarray(got), [[1.0, 3.0, 1.0], [9.0, 11.0, 9.0]])
    with pytest.raises(ValueError, match="sequence of length input.ndim"):
        ndimage.map_coordinates(a, [np.zeros(2)], 1)
    with pytest.raises(NotImplementedError, match="mode"):
        ndimage.map_coordinates(a, [np.zeros(2), np.zeros(2)], 1, mode="grid-wrap")
    with pytest.raises(NotImplementedError, match="order<=1"):
        ndimage.map_coordinates(a, [np.zeros(2), np.zeros(2)], 3)


def test_map_coordinates_derivatives_and_vmap():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 5))
    c0, c1 = np.array([0.3, 1.7, -0.6, 2.2]), np.array([2.4, 0.1, 3.6, -1.2])

    def loss(a, c0, c1):
        return jnp.sum(ndimage.map_coordinates(a, [c0, c1], 1, mode="reflect") ** 2)

    def reference(a, c0, c1):
        return np.sum(reference_map_coordinates(a, [c0, c1], 1, "reflect", 0.0) ** 2)

    ga, g0, g1 = srcjax.grad(loss, argnums=(0, 1, 2))(a, c0, c1)
    eps = 1e-6
    for k in range(4):  # coordinates: central differences (no point sits on a cell edge)
        e = np.eye(4)[k] * eps
        np.testing.assert_allclose(g0[k], (reference(a, c0 + e, c1) - reference(a, c0 - e, c1)) / (2 * eps), atol=1e-5)
        np.testing.assert_allclose(g1[k], (reference(a, c0, c1 + e) - reference(a, c0, c1 - e)) / (2 * eps), atol=1e-5)
    direction = rng.normal(size=a.shape)
    fd = (reference(a + eps * direction, c0, c1) - reference(a - eps * direction, c0, c1)) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(ga) * direction), fd, rtol=1e-5)
    batch0, batch1 = rng.uniform(-1, 5, (3, 6)), rng.uniform(-1, 6, (3, 6))
    nearest = srcjax.vmap(lambda c0, c1: ndimage.map_coordinates(a, [c0, c1], 0, mode="constant", cval=-2.0))
    got = nearest(batch0, batch1)
    for b in range(3):
        np.testing.assert_allclose(got[b], reference_map_coordinates(a, [batch0[b], batch1[b]], 0, "constant", -2.0))


def reference_grid_interpolation(grid, values, points, method, fill_value):
    grid = [np.asarray(g, np.float64) for g in grid]
    out = []
    for point in points:
        cells = []
        for x, g in zip(point, grid):
            i = min(max(np.searchsorted(g, x) - 1, 0), len(g) - 2)
            cells.append((i, (x - g[i]) / (g[i + 1] - g[i])))
        if method == "nearest":
            value = values[tuple(i if t <= 0.5 else i + 1 for i, t in cells)]
        else:
            value = sum(np.prod([t if up else 1 - t for up, (_, t) in zip(corner, cells)])
                        * values[tuple(i + up for up, (i, _) in zip(corner, cells))]
                        for corner in itertools.product((0, 1), repeat=len(cells)))
        outside = any(x < g[0] or x > g[-1] for x, g in zip(point, grid))
        out.append(fill_value if outside and fill_value is not None else value)
    return np.array(out)


def test_regular_grid_interpolator():
    # JAX 0.10.2's docstring example
    interp = interpolate.RegularGridInterpolator((jnp.array([1, 2, 3]), jnp.array([4, 5, 6])),
                                                 jnp.array([[10, 20, 30], [40, 50, 60], [70, 80, 90]]))
    got = interp(jnp.array([[1.5, 4.5], [2.2, 5.8]]))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [30.0, 64.0], rtol=1e-6)
    rng = np.random.default_rng(5)
    grid = (np.array([0.0, 1.0, 2.5, 4.0]), np.array([-1.0, 0.0, 2.0, 3.0, 7.0]))
    values = rng.normal(size=(4, 5)).astype(np.float32)
    points = rng.uniform(-2, 8, size=(7, 2)).astype(np.float32)
    points[0] = [2.5, 0.0]
    for method, fill_value in itertools.product(["linear", "nearest"], [np.nan, None, 0.5]):
        interp = interpolate.RegularGridInterpolator(grid, jnp.asarray(values), method, fill_value=fill_value)
        want = reference_grid_interpolation(grid, values.astype(np.float64), points.astype(np.float64), method,
                                            fill_value)
        np.testing.assert_allclose(interp(jnp.asarray(points)), want, rtol=1e-5, atol=1e-6)
        other = "nearest" if method == "linear" else "linear"  # the method given at the call wins
        want = reference_grid_interpolation(grid, values.astype(np.float64), points.astype(np.float64), other,
                                            fill_value)
        np.testing.assert_allclose(interp(jnp.asarray(points), other), want, rtol=1e-5, atol=1e-6)
    # trailing value axes are carried along; a tuple of coordinate arrays is a set of points
    stacked = rng.normal(size=(4, 5, 2)).astype(np.float32)
    interp = interpolate.RegularGridInterpolator(grid, jnp.asarray(stacked), fill_value=None)
    got = interp((jnp.asarray(points[:, 0]), jnp.asarray(points[:, 1])))
    assert got.shape == (7, 2)
    for k in range(2):
        np.testing.assert_allclose(got[:, k], reference_grid_interpolation(grid, stacked[..., k], points, "linear",
                                                                           None), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        interpolate.RegularGridInterpolator(grid, jnp.asarray(values), "cubic")
    with pytest.raises(NotImplementedError, match="bounds_error"):
        interpolate.RegularGridInterpolator(grid, jnp.asarray(values), bounds_error=True)
    with pytest.raises(ValueError, match="fill_value"):
        interpolate.RegularGridInterpolator(grid, jnp.asarray(values), fill_value=1j)
    with pytest.raises(ValueError, match="dimension 3"):
        interpolate.RegularGridInterpolator(grid, jnp.asarray(values))(jnp.ones((2, 3)))


def test_regular_grid_interpolator_is_a_pytree_under_grad():
    rng = np.random.default_rng(6)
    grid = (jnp.asarray([0.0, 1.0, 2.5, 4.0]), jnp.asarray([-1.0, 0.0, 2.0, 3.0, 7.0]))
    interp = interpolate.RegularGridInterpolator(grid, jnp.asarray(rng.normal(size=(4, 5)).astype(np.float32)))
    leaves, treedef = srcjax.tree_util.tree_flatten(interp)
    assert len(leaves) == 4  # the two grid axes, the values, the fill value
    points = rng.uniform(0, 3.5, size=(6, 2))

    def loss(interp, points):
        return jnp.sum(interp(points) ** 2)

    g_interp, g_points = srcjax.grad(loss, argnums=(0, 1))(interp, jnp.asarray(points, np.float32))
    assert isinstance(g_interp, interpolate.RegularGridInterpolator) and g_interp.method == "linear"
    # the loss is quadratic in the values: <g, v> = 2 loss
    np.testing.assert_allclose(jnp.sum(g_interp.values * interp.values), 2 * loss(interp, points), rtol=1e-5)
    direction, eps = rng.normal(size=points.shape), 1e-4
    values = np.asarray(interp.values, np.float64)
    def reference_loss(points):
        return np.sum(reference_grid_interpolation(grid, values, points, "linear", None) ** 2)

    fd = (reference_loss(points + eps * direction) - reference_loss(points - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(g_points) * direction), fd, rtol=1e-5)
