"""``srcjax.image``: resize and scale_and_translate against JAX 0.10.2's numbers (recorded below: JAX is not
installed here), for every kernel, shrinking and growing, with and without antialiasing."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import image

X = (np.arange(20, dtype=np.float32).reshape(4, 5) ** 1.5 % 7).astype(np.float32)

# jax.image.resize(X, shape, method, antialias=...) and friends, printed by JAX 0.10.2 (7 significant digits)
RESIZE = {
    ('nearest', (6, 3), True): [
        [0, 2.828427, 1],
        [4.18034, 4.520258, 6],
        [4.18034, 4.520258, 6],
        [3.622776, 6.569221, 3.383202],
        [2.094749, 0.09279633, 5.819077],
        [2.094749, 0.09279633, 5.819077],
    ],
    ('nearest', (2, 8), True): [
        [4.18034, 4.18034, 0.6969385, 4.520258, 4.520258, 1.627417, 6, 6],
        [2.094749, 2.094749, 1, 0.09279633, 0.09279633, 6.367531, 5.819077, 5.819077],
    ],
    ('linear', (6, 3), True): [
        [0.4285714, 2.948271, 2.798351],
        [1.558013, 2.988025, 3.462193],
        [2.69049, 3.366781, 4.108584],
        [2.702638, 4.722795, 4.03878],
        [2.165623, 3.37529, 5.037728],
        [1.625571, 1.688783, 6.054128],
    ],
    ('bilinear', (2, 8), True): [
        [2.309114, 1.709732, 1.135898, 3.103897, 3.941807, 3.649629, 3.543294, 3.483315],
        [3.04756, 2.22335, 1.309729, 2.770511, 3.984839, 4.952714, 4.909706, 4.800977],
    ],
    ('linear', (6, 3), False): [
        [0.3333333, 2.828427, 2.398718],
        [1.67627, 3.674343, 3.470595],
        [3.000918, 4.861752, 4.43198],
        [2.927763, 6.227728, 3.990015],
        [2.319654, 3.331009, 4.940709],
        [1.729833, 0.09279633, 6.001895],
    ],
    ('cubic', (6, 3), True): [
        [0.1271622, 3.155203, 2.78396],
        [1.428804, 2.852161, 3.509067],
        [2.849037, 3.12245, 4.252707],
        [2.733471, 5.049806, 4.012414],
        [2.013846, 3.381514, 5.214704],
        [1.398882, 1.342142, 6.350609],
    ],
    ('bicubic', (2, 8), False): [
        [2.085562, 1.395077, 0.8780991, 2.744251, 3.648356, 3.332408, 3.426446, 3.519894],
        [2.8895, 2.085777, 1.300583, 2.477844, 4.158719, 5.799412, 5.176822, 4.422731],
    ],
    ('lanczos3', (6, 3), True): [
        [-0.1384418, 3.437124, 2.806705],
        [1.30713, 2.645563, 3.610678],
        [3.080785, 2.991587, 4.353002],
        [2.809206, 5.146919, 4.056977],
        [1.797803, 3.421383, 5.351477],
        [1.243298, 1.142141, 6.551992],
    ],
    ('lanczos3', (2, 8), True): [
        [2.552841, 1.453965, 1.0203, 3.393177, 4.524174, 3.504267, 3.211353, 3.342293],
        [3.527112, 2.272819, 1.162442, 2.537904, 4.290184, 5.055457, 5.162348, 4.995359],
    ],
    ('lanczos5', (6, 3), False): [
        [0.01370659, 2.886547, 1.954642],
        [1.367115, 2.964161, 3.544292],
        [3.054133, 5.463996, 4.297746],
        [2.829798, 7.301914, 3.272482],
        [2.131189, 3.107463, 4.882079],
        [2.11859, -0.6480687, 6.961957],
    ],
    ('lanczos5', (2, 8), True): [
        [2.663129, 1.378565, 1.040129, 3.465645, 4.638459, 3.501969, 3.031233, 3.409218],
        [3.62045, 2.304363, 1.160652, 2.536489, 4.329628, 5.033443, 5.106424, 5.119195],
    ],
}
SCALE_AND_TRANSLATE = [
    [0.09796072, 1.06166, 2.0626, 4.922548, 3.529813, 0.6593366],
    [2.415097, 1.156297, 4.954454, 3.623302, 3.099322, 4.702013],
    [2.352165, 1.23836, 2.940247, 5.309682, 5.481012, 4.54713],
]
SCALE_GRAD = [-9.38868, -19.01139]


@pytest.mark.parametrize("method, shape, antialias", list(RESIZE))
def test_resize_matches_jax(method, shape, antialias):
    out = image.resize(X, shape, method, antialias=antialias)
    assert out.dtype == np.float32 and out.shape == shape
    np.testing.assert_allclose(np.asarray(out), RESIZE[(method, shape, antialias)], rtol=2e-6, atol=2e-6)


def test_resize_under_jit_and_of_integers():
    out = srcjax.jit(lambda x: image.resize(x, (6, 3), "cubic"))(X)
    np.testing.assert_allclose(np.asarray(out), RESIZE[("cubic", (6, 3), True)], rtol=2e-6, atol=2e-6)
    ints = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert image.resize(ints, (5, 2), "linear").dtype == np.float32  # (JAX: integer images come back as floats)
    assert image.resize(ints, (5, 2), "nearest").dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(image.resize(X, X.shape, "lanczos3")), X)  # (nothing to resize)


def test_scale_and_translate_matches_jax():
    out = image.scale_and_translate(X, (3, 6), (0, 1), jnp.array([0.7, 1.3]), jnp.array([0.4, -0.6]), "lanczos3")
    np.testing.assert_allclose(np.asarray(out), SCALE_AND_TRANSLATE, rtol=2e-6, atol=2e-6)
    grad = srcjax.grad(lambda s: image.scale_and_translate(X, (3, 6), (0, 1), s, jnp.array([0.4, -0.6]),
                                                           "linear").sum())(jnp.array([0.7, 1.3]))
    np.testing.assert_allclose(np.asarray(grad), SCALE_GRAD, rtol=1e-5)


def test_bad_arguments_raise_as_jax():
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(X, (2, 2), "bogus")
    with pytest.raises(ValueError, match="shape must have length"):
        image.resize(X, (2,), "linear")
    with pytest.raises(ValueError, match="Nearest neighbor"):
        image.scale_and_translate(X, (2, 2), (0, 1), jnp.ones(2), jnp.zeros(2), "nearest")
