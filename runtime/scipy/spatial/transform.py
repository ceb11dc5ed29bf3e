"""``srcjax.scipy.spatial.transform``: ``Rotation`` and ``Slerp``, JAX's NamedTuple versions of SciPy's classes.

A rotation is a unit quaternion stored scalar-last, (x, y, z, w), possibly a stack (..., 4); q and -q are the
same rotation, and ``as_quat(canonical=True)`` picks the one with w > 0 (or the first nonzero component
positive). Every function here works on the trailing axis and broadcasts over the leading ones, with JAX's
formulas (SciPy's), so the numbers are JAX's.
"""

from __future__ import annotations

import re
import typing
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.numpy._core import promote_dtypes_inexact

__all__ = ["Rotation", "Slerp"]

_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


# -- quaternion arithmetic on the trailing axis ---------------------------------------------------------------
def _norm(v: Any) -> Any:
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(quat: Any) -> Any:
    quat = jnp.asarray(quat)
    return quat / _norm(quat)[..., None]


def _compose(p: Any, q: Any) -> Any:
    """The product p q (rotation q, then p): vector part p_w q_v + q_w p_v + p_v x q_v, scalar p_w q_w - p_v.q_v."""
    p, q = jnp.asarray(p), jnp.asarray(q)
    (px, py, pz, pw), (qx, qy, qz, qw) = _components(p), _components(q)
    cross = (py * qz - pz * qy, pz * qx - px * qz, px * qy - py * qx)
    return jnp.stack([pw * qx + qw * px + cross[0], pw * qy + qw * py + cross[1], pw * qz + qw * pz + cross[2],
                      pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _components(quat: Any) -> tuple[Any, Any, Any, Any]:
    return quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]


def _as_matrix(quat: Any) -> Any:
    x, y, z, w = _components(quat)
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
    return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)


def _from_matrix(matrix: Any) -> Any:
    """Shepperd's method: the quaternion from the largest of the diagonal and the trace, for stability."""
    matrix = jnp.asarray(matrix)
    m = [[matrix[..., r, c] for c in range(3)] for r in range(3)]
    trace = m[0][0] + m[1][1] + m[2][2]
    choice = jnp.argmax(jnp.stack([m[0][0], m[1][1], m[2][2], trace], axis=-1), axis=-1)
    candidates = []
    for i in range(3):  # the largest diagonal entry is m[i][i]
        j, k = (i + 1) % 3, (i + 2) % 3
        quat = [None] * 4
        quat[i] = 1 - trace + 2 * m[i][i]
        quat[j] = m[j][i] + m[i][j]
        quat[k] = m[k][i] + m[i][k]
        quat[3] = m[k][j] - m[j][k]
        candidates.append(jnp.stack(quat, axis=-1))
    candidates.append(jnp.stack([m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1], 1 + trace], axis=-1))
    quat = candidates[3]
    for i in range(3):
        quat = jnp.where((choice == i)[..., None], candidates[i], quat)
    return _normalize(quat)


def _from_rotvec(rotvec: Any, degrees: bool) -> Any:
    """(sin(t/2) r/t, cos(t/2)) for the angle t = |r|; sin(t/2)/t by its series below t = 1e-3."""
    (rotvec,) = promote_dtypes_inexact(jnp.asarray(rotvec))
    if degrees:
        rotvec = jnp.deg2rad(rotvec)
    angle = _norm(rotvec)
    angle2 = angle * angle
    small_scale = 0.5 - angle2 / 48 + angle2 * angle2 / 3840
    large_scale = jnp.sin(angle / 2) / angle
    scale = jnp.where(angle <= 1e-3, small_scale, large_scale)
    return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(quat: Any, degrees: bool) -> Any:
    """t v / sin(t/2) from the quaternion with w >= 0 (so 0 <= t <= pi); t / sin(t/2) by its series near 0."""
    quat = jnp.where((quat[..., 3] < 0)[..., None], -quat, quat)
    angle = 2.0 * jnp.arctan2(_norm(quat[..., :3]), quat[..., 3])
    angle2 = angle * angle
    small_scale = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
    large_scale = angle / jnp.sin(angle / 2)
    scale = jnp.where(angle <= 1e-3, small_scale, large_scale)
    if degrees:
        scale = jnp.rad2deg(scale)
    return scale[..., None] * quat[..., :3]


def _from_mrp(mrp: Any) -> Any:
    """Modified Rodrigues parameters p: q = (2 p, 1 - |p|^2) / (1 + |p|^2)."""
    mrp = jnp.asarray(mrp)
    squared_plus_1 = jnp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
    return jnp.concatenate([2 * mrp[..., :3], 2 - squared_plus_1], axis=-1) / squared_plus_1


def _as_mrp(quat: Any) -> Any:
    """v / (1 + w) from the quaternion with w >= 0 (the parameters of magnitude at most 1)."""
    sign = jnp.where(quat[..., 3] < 0, -1.0, 1.0)
    return sign[..., None] * quat[..., :3] / (1.0 + sign * quat[..., 3])[..., None]


def _make_canonical(quat: Any) -> Any:
    """q or -q, whichever has w > 0, or, w being 0, the first nonzero of x, y, z positive."""
    negative, zero = quat < 0, quat == 0
    flip = negative[..., 3]
    all_zero_before = zero[..., 3]
    for i in range(3):
        flip = flip | (all_zero_before & negative[..., i])
        all_zero_before = all_zero_before & zero[..., i]
    return jnp.where(flip[..., None], -quat, quat)


def _elementary(axis: int, angle: Any) -> Any:
    """The rotation by ``angle`` about basis axis ``axis``: sin(a/2) at that axis, cos(a/2) as w."""
    parts = [jnp.zeros_like(angle)] * 3 + [jnp.cos(angle / 2.0)]
    parts[axis] = jnp.sin(angle / 2.0)
    return jnp.stack(parts, axis=-1)


def _check_sequence(seq: str, lengths: tuple[int, ...]) -> bool:
    """Whether the axis sequence (1 to 3 of x, y, z, no axis twice in a row) is intrinsic (upper case)."""
    if len(seq) not in lengths:
        if lengths == (3,):
            raise ValueError(f"Expected 3 axes, got {seq}.")
        raise ValueError(f"Expected axis specification to be a non-empty string of upto 3 characters, got {seq}")
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    if not (intrinsic or re.match(r"^[xyz]{1,3}$", seq)):
        raise ValueError(f"Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', 'Z'], got {seq}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return intrinsic


def _from_euler(seq: str, angles: Any, degrees: bool) -> Any:
    intrinsic = _check_sequence(seq, (1, 2, 3))
    (angles,) = promote_dtypes_inexact(jnp.atleast_1d(angles))
    if angles.shape[-1] != len(seq):
        raise ValueError(f"from_euler: angles must have {len(seq)} values along their last axis, one per axis of "
                         f"{seq!r}, got shape {angles.shape}")
    if degrees:
        angles = jnp.deg2rad(angles)
    axes = [_AXIS_INDEX[a] for a in seq.lower()]
    result = _elementary(axes[0], angles[..., 0])
    for n in range(1, len(axes)):  # intrinsic: each rotation about the moved axes, i.e. composed on the right
        quat = _elementary(axes[n], angles[..., n])
        result = _compose(result, quat) if intrinsic else _compose(quat, result)
    return result


def _as_euler(quat: Any, seq: str, degrees: bool) -> Any:
    """Bernardes and Viollet's direct method (2022), as SciPy: the middle angle from the quaternion's
    components in the sequence's frame, the outer ones from their half sum and half difference; at gimbal
    lock (middle angle 0 or pi, to 1e-7) the third angle (the first, intrinsic) is set to 0."""
    extrinsic = not _check_sequence(seq, (3,))
    axes = [_AXIS_INDEX[a] for a in seq.lower()]
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2  # +1 for an even permutation of (x, y, z), -1 for an odd one
    w, qi, qj, qk = quat[..., 3], quat[..., i], quat[..., j], quat[..., k]
    if symmetric:
        a, b, c, d = w, qi, qj, qk * sign
    else:
        a, b, c, d = w - qj, qi + qk * sign, qj + w, qk * sign - qi
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    case = jnp.where(jnp.abs(middle) <= eps, 1, jnp.where(jnp.abs(middle - np.pi) <= eps, 2, 0))
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    angles = [jnp.zeros_like(middle), middle, jnp.zeros_like(middle)]
    angles[0] = jnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    first, third = (0, 2) if extrinsic else (2, 0)
    angles[first] = jnp.where(case == 0, half_sum - half_diff, angles[first])
    angles[third] = jnp.where(case == 0, half_sum + half_diff, angles[third])
    if not symmetric:
        angles[third] = angles[third] * sign
        angles[1] = angles[1] - np.pi / 2
    angles = (jnp.stack(angles, axis=-1) + np.pi) % (2 * np.pi) - np.pi
    return jnp.rad2deg(angles) if degrees else angles


def _apply(matrix: Any, vectors: Any, inverse: Any) -> Any:
    """R v (or R^T v) over broadcast stacks of matrices and vectors."""
    matrix = jnp.where(inverse, jnp.swapaxes(matrix, -1, -2), matrix)
    return jnp.matmul(matrix, jnp.asarray(vectors)[..., None])[..., 0]


# -- the classes ----------------------------------------------------------------------------------------------
class Rotation(typing.NamedTuple):
    """Rotations in 3 dimensions, one (``quat`` of shape (4,)) or a stack (N, 4), scalar-last quaternions.
    A NamedTuple, so a pytree with the quaternions as its leaf."""

    quat: Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence[Rotation]) -> Rotation:
        return cls(jnp.concatenate([rotation.quat for rotation in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> Rotation:
        """Rotations about the axes of ``seq`` by ``angles`` (..., len(seq)): lower case for axes fixed in
        space (extrinsic), upper case for axes moving with the body (intrinsic)."""
        return cls(_from_euler(seq, angles, degrees))

    @classmethod
    def from_matrix(cls, matrix: Any) -> Rotation:
        return cls(_from_matrix(matrix))

    @classmethod
    def from_mrp(cls, mrp: Any) -> Rotation:
        return cls(_from_mrp(mrp))

    @classmethod
    def from_quat(cls, quat: Any) -> Rotation:
        """From scalar-last quaternions, normalized."""
        return cls(_normalize(quat))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> Rotation:
        return cls(_from_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
        """The identity rotation; only a single one (num None), as in JAX."""
        assert num is None
        return cls(jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> Rotation:
        """Not implemented, as in JAX 0.10.2 (which raises the same)."""
        raise NotImplementedError()

    def __getitem__(self, indexer: Any) -> Rotation:
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self) -> int:
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other: Rotation) -> Rotation:  # type: ignore[override]
        """The composition: ``other`` first, then ``self``."""
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors: Any, inverse: bool = False) -> Any:
        return _apply(self.as_matrix(), vectors, inverse)

    def as_euler(self, seq: str, degrees: bool = False) -> Any:
        return _as_euler(self.quat, seq, degrees)

    def as_matrix(self) -> Any:
        return _as_matrix(self.quat)

    def as_mrp(self) -> Any:
        return _as_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False) -> Any:
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        quat = _make_canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, shift=1, axis=-1) if scalar_first else quat

    def inv(self) -> Rotation:
        return Rotation(self.quat * jnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

    def magnitude(self) -> Any:
        """The rotation angle in [0, pi]."""
        return 2.0 * jnp.arctan2(_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

    def mean(self, weights: Any = None) -> Rotation:
        """The (weighted) mean rotation: the eigenvector of sum_i w_i q_i q_i^T with the largest eigenvalue."""
        dtype = self.quat.dtype
        w = jnp.ones(self.quat.shape[0], dtype=dtype) if weights is None else jnp.asarray(weights, dtype=dtype)
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError(f"Expected `weights` to have number of values equal to number of rotations, got "
                             f"{w.shape[0]} values and {len(self)} rotations.")
        _, v = jnp_linalg.eigh(jnp.dot(w[None, :] * self.quat.T, self.quat))
        return Rotation(v[:, -1])

    @property
    def single(self) -> bool:
        """Whether this is one rotation rather than a stack."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between rotations at increasing ``times``; build it with
    ``Slerp.init(times, rotations)``. Between key times t_i and t_i+1 the rotation is
    r_i exp(alpha log(r_i^-1 r_i+1)), alpha = (t - t_i) / (t_i+1 - t_i)."""

    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> Slerp:
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError(f"Expected times to be specified in a 1 dimensional array, got {times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError(f"Expected number of rotations to be equal to number of timestamps given, got "
                             f"{len(rotations)} rotations and {times.shape[0]} timestamps.")
        starts = Rotation(rotations.as_quat()[:-1])
        steps = (starts.inv() * Rotation(rotations.as_quat()[1:])).as_rotvec()
        return cls(times=times, timedelta=jnp.diff(times), rotations=starts, rotvecs=steps)

    def __call__(self, times: Any) -> Rotation:
        """The interpolated rotations at ``times`` (a scalar gives a single rotation); times outside the key
        times extrapolate the first or last interval."""
        times = jnp.asarray(times, dtype=self.times.dtype)
        if times.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single_time = times.ndim == 0
        times = jnp.atleast_1d(times)
        interval = jnp.maximum(jnp.searchsorted(self.times, times) - 1, 0)
        alpha = (times - self.times[interval]) / self.timedelta[interval]
        result = self.rotations[interval] * Rotation.from_rotvec(self.rotvecs[interval] * alpha[:, None])
        return result[0] if single_time else result
