"""Quaternion to Euler angles as ``tensorflow_graphics.geometry.transformation.euler
.from_quaternion`` computes them (Octo's furniture_bench, iamlab and cmu_playing_with_food
actions): quaternions ``[x, y, z, w]``, angles about x, y and z (extrinsic x-y-z), the
Gimbal-lock branch where ``|r20|`` is within 1e-6 of 1.

TF Graphics also shrinks its intermediates by a few float32 ulps (``safe_shrink``); that is
left out, so values agree to about 1e-6, not bit for bit.
"""

from __future__ import annotations

import numpy as np

_EPS = np.float32(2 * np.finfo(np.float32).eps)  # TF Graphics' select_eps_for_addition


def _sign(x: np.ndarray) -> np.ndarray:
    """TF Graphics' ``nonzero_sign``: -1 below zero, else 1."""
    return np.where(x < 0, -1.0, 1.0).astype(x.dtype)


def euler_from_quaternion(quaternions: np.ndarray) -> np.ndarray:
    q = np.asarray(quaternions, dtype=np.float32)
    x, y, z, w = (q[..., i] for i in range(4))
    tx, ty, tz = 2 * x, 2 * y, 2 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z

    def clip(v):
        return np.clip(v, -1, 1)

    r00, r10 = clip(1 - (tyy + tzz)), clip(txy + twz)
    r21, r22 = clip(tyz + twx), clip(1 - (txx + tyy))
    r20, r01, r02 = clip(txz - twy), clip(txy - twz), clip(txz + twy)
    # the general case
    theta_y = -np.arcsin(r20)
    s = _sign(np.cos(theta_y))
    r00e = _sign(r00) * _EPS + r00
    r22e = _sign(r22) * _EPS + r22
    general = np.stack(
        (np.arctan2(r21 * s, r22e * s), theta_y, np.arctan2(r10 * s, r00e * s)), axis=-1
    )
    # Gimbal lock
    s20 = _sign(r20)
    r02e = _sign(r02) * _EPS + r02
    gx = np.arctan2(-s20 * r01, -s20 * r02e)
    gimbal = np.stack((gx, -s20 * np.float32(np.pi / 2), np.zeros_like(gx)), axis=-1)
    locked = (np.abs(np.abs(r20) - 1.0) < 1e-6)[..., None]
    return np.where(locked, gimbal, general).astype(np.float32)
