"""srcjax.scipy.fft (the DCT of type 2 and its inverse) against the defining sum in float64 NumPy (scipy is not a
dependency), and srcjax.scipy.cluster.vq.vq against a brute-force search."""

import numpy as np
import pytest

import srcjax
from srcjax.runtime import numpy as jnp
from srcjax.scipy import fft
from srcjax.scipy.cluster import vq


def dct_matrix(n, norm):
    """y = C x with y[k] = 2 sum_j x[j] cos(pi k (2j + 1) / 2n); 'ortho' scales row 0 by 1/sqrt(4n), the others
    by 1/sqrt(2n)."""
    k, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    c = 2 * np.cos(np.pi * k * (2 * j + 1) / (2 * n))
    if norm == "ortho":
        c /= np.sqrt(np.where(np.arange(n) == 0, 4.0, 2.0) * n)[:, None]
    return c


def reference(x, axes, sizes, norm, inverse):
    """The transform along each axis in turn (the DCT is separable), after cropping or zero-padding."""
    x = np.asarray(x, np.complex128)
    for axis, n in zip(axes, sizes):
        x = np.moveaxis(x, axis, -1)
        x = np.concatenate([x[..., :n], np.zeros(x.shape[:-1] + (max(0, n - x.shape[-1]),))], axis=-1)
        c = dct_matrix(n, norm)
        x = np.moveaxis(x @ (np.linalg.inv(c) if inverse else c).T, -1, axis)
    return x


CASES = [  # shape, dct/idct keywords, dctn/idctn keywords
    ((7,), {}, {}),
    ((6,), {"n": 9}, {"s": 4}),
    ((4, 5), {"axis": 0, "n": 3}, {"axes": (0, 1)}),
    ((3, 4, 5), {"axis": 1}, {"s": (6, 3), "axes": (-1, 0)}),
    ((2, 3, 4, 5), {"axis": -2}, {}),  # four axes: two two-axis transforms
]


@pytest.mark.parametrize("shape, one, many", CASES)
def test_dct_and_idct_match_the_defining_sums(shape, one, many):
    rng = np.random.default_rng(len(shape))
    x = rng.normal(size=shape).astype(np.float32)
    ndim = len(shape)
    axis = one.get("axis", -1) % ndim
    n = one.get("n", shape[axis])
    if "axes" in many:
        axes = tuple(a % ndim for a in many["axes"])
    else:
        axes = tuple(range(ndim - len(np.atleast_1d(many["s"])), ndim)) if "s" in many else tuple(range(ndim))
    sizes = np.atleast_1d(many["s"]) if "s" in many else [shape[a] for a in axes]
    for norm in (None, "ortho"):
        for name, inverse in (("dct", False), ("idct", True)):
            got = getattr(fft, name)(x, norm=norm, **one)
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, reference(x, [axis], [n], norm, inverse).real, rtol=1e-4, atol=1e-4)
            got = getattr(fft, name + "n")(x, norm=norm, **many)
            np.testing.assert_allclose(got, reference(x, axes, sizes, norm, inverse).real, rtol=1e-4, atol=1e-4)


def test_dct_dtypes_inverse_and_errors():
    rng = np.random.default_rng(1)
    z = (rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))).astype(np.complex64)
    got = fft.dctn(z, norm="ortho")
    assert got.dtype == np.complex64  # the real and imaginary parts are transformed apart
    np.testing.assert_allclose(got, reference(z, (0, 1), (4, 3), "ortho", False), rtol=1e-4, atol=1e-5)
    assert fft.dct(np.arange(5, dtype=np.int32)).dtype == np.float32
    x = rng.normal(size=(5, 6)).astype(np.float32)
    np.testing.assert_allclose(fft.idctn(fft.dctn(x)), x, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fft.idct(fft.dct(x, norm="ortho", axis=0), norm="ortho", axis=0), x, atol=1e-5)
    with pytest.raises(NotImplementedError, match="type 2"):
        fft.dct(x, type=3)
    with pytest.raises(ValueError, match="not implemented"):
        fft.idctn(x, norm="forward")
    with pytest.raises(TypeError):
        fft.dct([1.0, 2.0])
    with pytest.raises(ValueError, match="out of bounds"):
        fft.dct(x, axis=2)


def test_dct_gradient_and_vmap():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 4)).astype(np.float32)
    weights = rng.normal(size=(3, 4))
    # the DCT is linear: the gradient of <w, dctn(x)> is C_0^T w C_1
    grad = srcjax.grad(lambda x: jnp.sum(fft.dctn(x, norm="ortho") * weights))(x)
    np.testing.assert_allclose(grad, dct_matrix(3, "ortho").T @ weights @ dct_matrix(4, "ortho"), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(srcjax.vmap(fft.idct)(x), reference(x, [1], [4], None, True).real, rtol=1e-4, atol=1e-5)


def test_vq_assigns_the_nearest_code():
    obs = jnp.array([[1.1, 2.1, 3.1], [5.9, 4.8, 6.2]])
    code_book = jnp.array([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0], [3.0, 4.0, 5.0], [4.0, 5.0, 6.0]])
    codes, distances = vq.vq(obs, code_book)  # JAX 0.10.2's docstring example
    np.testing.assert_array_equal(codes, [0, 3])
    np.testing.assert_allclose(distances, [0.17320499, 1.9209373], rtol=1e-6)
    rng = np.random.default_rng(3)
    obs, code_book = rng.normal(size=(7, 2)), rng.normal(size=(4, 2))
    obs[0] = code_book[2]
    all_distances = np.linalg.norm(obs[:, None] - code_book[None], axis=-1)
    codes, distances = vq.vq(obs.astype(np.float32), code_book.astype(np.float32))
    assert codes.dtype == np.int32 and distances.dtype == np.float32
    np.testing.assert_array_equal(codes, np.argmin(all_distances, axis=1))
    np.testing.assert_allclose(distances, np.min(all_distances, axis=1), rtol=1e-5, atol=1e-6)
    codes, distances = vq.vq(np.array([1, 5, 9]), np.array([4, 8]))  # one-dimensional: scalar observations
    np.testing.assert_array_equal(codes, [0, 0, 1])
    np.testing.assert_allclose(distances, [3.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="same rank"):
        vq.vq(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match="ndim different than 1 or 2"):
        vq.vq(np.ones((2, 3, 1)), np.ones((3, 3, 1)))
