"""srcjax.scipy.spatial.transform (Rotation, Slerp) against closed forms in float64 NumPy (rotation matrices of
the basis axes, Rodrigues' formula; scipy is not a dependency), round trips, and JAX 0.10.2's numbers where
JAX's conventions decide them (gimbal lock, the canonical quaternion, the mean's eigenvector)."""

import numpy as np
import pytest

import srcjax
from srcjax.runtime import numpy as jnp
from srcjax.scipy.spatial.transform import Rotation, Slerp


def basis_rotation(axis, angle):
    c, s = np.cos(angle), np.sin(angle)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    m = np.eye(3)
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return m


def rodrigues(rotvec):
    angle = np.linalg.norm(rotvec)
    k = rotvec / angle
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross


def _quats(n, seed):
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def test_conversions_match_closed_forms():
    quats = _quats(5, 0)
    rotations = Rotation.from_quat(quats * 3)  # normalized on the way in
    np.testing.assert_allclose(rotations.as_quat(), quats, rtol=1e-5, atol=1e-6)
    rotvecs = np.asarray(rotations.as_rotvec(), np.float64)
    matrices = rotations.as_matrix()
    assert matrices.shape == (5, 3, 3) and rotvecs.shape == (5, 3)
    for m, v in zip(np.asarray(matrices), rotvecs):
        np.testing.assert_allclose(m, rodrigues(v), atol=1e-5)
    np.testing.assert_allclose(rotations.magnitude(), np.linalg.norm(rotvecs, axis=1), rtol=1e-5)
    assert np.all(np.linalg.norm(rotvecs, axis=1) <= np.pi + 1e-6)
    canonical = np.where(quats[:, 3:] < 0, -quats, quats)
    for back in (Rotation.from_matrix(matrices), Rotation.from_rotvec(rotvecs), Rotation.from_mrp(rotations.as_mrp())):
        np.testing.assert_allclose(back.as_quat(canonical=True), canonical, atol=2e-5)
    np.testing.assert_allclose(rotations.as_quat(canonical=True, scalar_first=True), np.roll(canonical, 1, axis=1),
                               atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(rotations.as_mrp(), axis=1) <= 1, True)
    vectors = np.random.default_rng(1).normal(size=(5, 3))
    np.testing.assert_allclose(rotations.apply(vectors), np.einsum("nij,nj->ni", matrices, vectors), atol=1e-5)
    np.testing.assert_allclose(rotations.apply(vectors[0], inverse=True),
                               np.einsum("nji,j->ni", matrices, vectors[0]), atol=1e-5)
    np.testing.assert_allclose((rotations * rotations.inv()).as_matrix(), np.broadcast_to(np.eye(3), (5, 3, 3)),
                               atol=1e-5)
    composed = rotations[:2] * rotations[2:4]
    np.testing.assert_allclose(composed.as_matrix(), np.asarray(matrices[:2]) @ np.asarray(matrices[2:4]), atol=1e-5)
    small = Rotation.from_rotvec(np.array([1e-4, 0.0, 0.0], np.float32))  # the series branch
    np.testing.assert_allclose(small.as_quat(), [5e-5, 0, 0, 1], rtol=1e-5)
    np.testing.assert_allclose(small.as_rotvec(), [1e-4, 0, 0], rtol=1e-5)
    np.testing.assert_allclose(Rotation.from_rotvec(np.array([90.0, 0, 0]), degrees=True).as_matrix(),
                               basis_rotation(0, np.pi / 2), atol=1e-6)


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "zxz", "XYX", "yx", "Z"])
def test_euler_angles(seq):
    angles = np.random.default_rng(len(seq)).uniform(-1.2, 1.2, size=(4, len(seq))).astype(np.float32)
    angles[:, 1:2] += 1.5 if seq[0] == seq[-1] and len(seq) == 3 else 0  # symmetric: the middle angle in (0, pi)
    rotations = Rotation.from_euler(seq, angles)
    axes = ["xyz".index(a) for a in seq.lower()]
    for rotation, row in zip(np.asarray(rotations.as_matrix()), angles.astype(np.float64)):
        # extrinsic (lower case): the first rotation is applied first; intrinsic: about the moved axes
        factors = [basis_rotation(a, t) for a, t in zip(axes, row)]
        want = np.eye(3)
        for f in factors:
            want = want @ f if seq.isupper() else f @ want
        np.testing.assert_allclose(rotation, want, atol=1e-5)
    if len(seq) == 3:
        np.testing.assert_allclose(rotations.as_euler(seq), angles, atol=2e-5)
        np.testing.assert_allclose(rotations.as_euler(seq, degrees=True), np.rad2deg(angles), atol=2e-3)


def test_jax_conventions_and_errors():
    # gimbal lock sets the third angle (the first, intrinsic) to 0: JAX 0.10.2's results
    lock = np.array([0.3, np.pi / 2, 0.1], np.float32)
    np.testing.assert_allclose(Rotation.from_euler("xyz", lock).as_euler("xyz"), [0.2, 1.5707963, 0.0], atol=1e-6)
    np.testing.assert_allclose(Rotation.from_euler("XYZ", lock).as_euler("XYZ"), [0.4, 1.5707963, 0.0], atol=1e-6)
    np.testing.assert_allclose(Rotation.from_euler("zxz", np.array([0.3, 0.0, 0.1], np.float32)).as_euler("zxz"),
                               [0.4, 0.0, 0.0], atol=1e-6)
    quats = np.array([[0, 0, -1, 0], [-1, 0, 0, 0], [0, 0, 0, -1], [0.5, 0, 0, -0.5]], np.float32)
    np.testing.assert_allclose(Rotation.from_quat(quats).as_quat(canonical=True),
                               [[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 1], [-0.70710677, 0, 0, 0.70710677]])
    quats = np.array([[0.1, 0.2, 0.3, 0.9], [-0.1, 0.25, 0.35, 0.85], [0.0, 0.1, 0.4, -0.9]], np.float32)
    mean = Rotation.from_quat(quats).mean(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(mean.as_quat(canonical=True), [-0.01858218, 0.07679892, -0.03395987, 0.9962948],
                               atol=1e-5)  # JAX 0.10.2's
    single = Rotation.identity()
    assert single.single and single.quat.dtype == np.float32 and not Rotation.from_quat(quats).single
    assert len(Rotation.from_quat(quats)) == 3 and Rotation.from_quat(quats)[1:].quat.shape == (2, 4)
    assert Rotation.concatenate([Rotation.from_quat(quats), Rotation.from_quat(quats[:1])]).quat.shape == (4, 4)
    with pytest.raises(TypeError, match="no len"):
        len(single)
    with pytest.raises(TypeError, match="not subscriptable"):
        single[0]
    with pytest.raises(NotImplementedError):  # as in JAX 0.10.2
        Rotation.random(srcjax.random.key(0))
    for seq, error in [("xx", "consecutive"), ("xYz", "from"), ("xyzx", "upto 3")]:
        with pytest.raises(ValueError, match=error):
            Rotation.from_euler(seq, np.zeros(len(seq)))
    with pytest.raises(ValueError, match="Expected 3 axes"):
        single.as_euler("xy")
    with pytest.raises(ValueError, match="number of values"):
        Rotation.from_quat(quats).mean(np.ones(2))


def test_slerp():
    times = np.array([0.0, 1.0, 3.0], np.float32)
    keys = Rotation.from_rotvec(np.array([[0, 0, 0], [0, 0, 1.0], [0.5, 0, 1.0]], np.float32))
    slerp = Slerp.init(times, keys)
    at = slerp(np.array([0.0, 0.5, 1.0, 2.0, 3.0], np.float32))
    np.testing.assert_allclose(at[np.array([0, 2, 4])].as_quat(), keys.as_quat(), atol=1e-6)
    np.testing.assert_allclose(at[1].as_rotvec(), [0, 0, 0.5], atol=1e-6)  # halfway about one axis
    halfway = keys[1] * Rotation.from_rotvec(0.5 * (keys[1].inv() * keys[2]).as_rotvec())
    np.testing.assert_allclose(at[3].as_quat(), halfway.as_quat(), atol=1e-6)
    one = slerp(np.float32(2.0))
    assert one.single and np.allclose(one.quat, at[3].quat)
    with pytest.raises(ValueError, match="at least 2"):
        Slerp.init(times[:1], keys[:1])
    with pytest.raises(ValueError, match="equal to number of timestamps"):
        Slerp.init(times[:2], keys)


def test_rotation_pytree_grad_and_vmap():
    quats, vectors = _quats(3, 4), np.random.default_rng(5).normal(size=(3, 3)).astype(np.float32)

    def loss(rotation, vectors):
        return jnp.sum(rotation.apply(vectors) * np.arange(3.0))

    rotation = Rotation.from_quat(quats)
    g_rotation, g_vectors = srcjax.grad(loss, argnums=(0, 1))(rotation, vectors)
    assert isinstance(g_rotation, Rotation)
    # the loss is linear in the vectors: its gradient is R^T w for the weights w = (0, 1, 2)
    np.testing.assert_allclose(g_vectors, np.einsum("nji,j->ni", rotation.as_matrix(), np.arange(3.0)), atol=1e-5)
    # and quadratic in the quaternion's components (R is): <g, q> = 2 loss
    np.testing.assert_allclose(jnp.sum(g_rotation.quat * quats), 2 * loss(rotation, vectors), rtol=1e-5)
    batched = srcjax.vmap(lambda q: Rotation.from_quat(q).as_euler("zyx"))(quats)
    np.testing.assert_allclose(batched, rotation.as_euler("zyx"), atol=1e-6)
