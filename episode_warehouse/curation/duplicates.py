"""Exact and near duplicate episodes over the whole catalog, within and across datasets.

Two episodes are **duplicates** when their ``content_hash`` is equal (the same stored data), or
when they are **near duplicates**: signatures of the same schema (the same trajectory signature
length and number of frame hashes) with

- trajectory signatures within :data:`TRAJECTORY_DISTANCE` (root mean square difference of the
  ``slog`` values; distinct episodes of one task sit far above it), and
- frame hashes within :data:`HASH_BITS` differing bits on average (of 64), when they have any.

Pairs are found by exact distances between trajectory signatures, a block of
:data:`BLOCK` episodes at a time (a matrix product: O(n^2) work, O(n x BLOCK) memory), within
each schema; the relation is closed transitively (union-find). Each group's first episode in
``(source, partition, episode)`` order is kept: its ``near_duplicate_of`` is NULL, every other
member's names it (``source/partition#episode``), and ``duplicate_group`` is the kept one's name
for every member. ``WHERE near_duplicate_of IS NULL`` keeps one of each.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

log = logging.getLogger(__name__)

TRAJECTORY_DISTANCE = 0.02
HASH_BITS = 10
BLOCK = 2048


@dataclass(frozen=True)
class EpisodeSignatures:
    """The signature columns of many episodes, as the catalog holds them."""

    names: list[str]  # "source/partition#episode", in the order duplicates keep the first
    content_hash: list[str | None]
    frame_hashes: list[list[int] | None]
    trajectory: list[list[float] | None]


def episode_name(source: str, partition: str, episode: int) -> str:
    return f"{source}/{partition}#{episode}"


class _Groups:
    def __init__(self, n: int) -> None:
        self.parent = np.arange(n)

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:
            self.parent[i], i = root, self.parent[i]
        return int(root)

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)  # the earlier episode stays the root


def _hash_bits(hashes: np.ndarray) -> np.ndarray:
    """(n, k) int64 hashes as (n, 64 k) bits."""
    return np.unpackbits(hashes.astype(">i8").view(np.uint8).reshape(len(hashes), -1), axis=1)


def _near_pairs(members: np.ndarray, signatures: EpisodeSignatures) -> list[tuple[int, int]]:
    """Pairs (i < j, indices into the names) of near duplicates among ``members`` (one schema)."""
    traj = np.array([signatures.trajectory[i] for i in members], np.float32)
    dims = traj.shape[1]
    has_frames = signatures.frame_hashes[members[0]] is not None
    bits = None
    if has_frames:
        hashes = np.array([[h if h is not None else 0 for h in signatures.frame_hashes[i]]
                           for i in members], np.int64)  # fmt: skip
        bits = _hash_bits(hashes).astype(np.float32)
        per_frame = hashes.shape[1]
    norms = (traj.astype(np.float64) ** 2).sum(1)
    limit = TRAJECTORY_DISTANCE**2 * dims
    pairs = []
    for a in range(0, len(members), BLOCK):
        block = traj[a : a + BLOCK].astype(np.float64)
        d2 = norms[a : a + BLOCK, None] + norms[None, :] - 2 * block @ traj.T.astype(np.float64)
        close = np.argwhere(d2 <= limit + 1e-9 * (1 + norms[None, :]))
        close = close[close[:, 0] + a < close[:, 1]]
        if bits is not None and len(close):
            i, j = close[:, 0] + a, close[:, 1]
            differing = np.abs(bits[i] - bits[j]).sum(1) / per_frame
            close = close[differing <= HASH_BITS]
        pairs += [(int(members[i + a]), int(members[j])) for i, j in close]
    return pairs


def find_duplicates(signatures: EpisodeSignatures) -> pa.Table:
    """``episode`` (the name), ``near_duplicate_of`` and ``duplicate_group`` of every episode
    that has a duplicate (episodes without one are not listed)."""
    n = len(signatures.names)
    groups = _Groups(n)
    by_hash: dict[str, int] = {}
    for i, h in enumerate(signatures.content_hash):
        if h is not None:
            if h in by_hash:
                groups.join(by_hash[h], i)
            else:
                by_hash[h] = i
    schemas: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (traj, frames) in enumerate(
        zip(signatures.trajectory, signatures.frame_hashes, strict=True)
    ):
        if traj is not None:
            schemas[(len(traj), -1 if frames is None else len(frames))].append(i)
    for members in schemas.values():
        for a, b in _near_pairs(np.array(members), signatures):
            groups.join(a, b)
    roots = np.array([groups.find(i) for i in range(n)], np.int64)
    counts = np.bincount(roots, minlength=n) if n else np.zeros(0, np.int64)
    listed = [i for i in range(n) if counts[roots[i]] > 1]
    names = signatures.names
    log.info("duplicates: %d episodes in %d groups", len(listed), len(set(roots[listed].tolist())))
    return pa.table(
        {
            "episode_name": pa.array([names[i] for i in listed], pa.string()),
            "near_duplicate_of": pa.array(
                [None if roots[i] == i else names[roots[i]] for i in listed], pa.string()
            ),
            "duplicate_group": pa.array([names[roots[i]] for i in listed], pa.string()),
        }
    )
