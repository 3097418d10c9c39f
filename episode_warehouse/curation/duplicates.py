"""Exact and near duplicate episodes over the whole catalog, within and across datasets.

Two episodes are **duplicates** when their ``content_hash`` is equal (the same stored data), or
when they are **near duplicates**: their ``step_minhash`` values agree in at least
:data:`STEP_SHARE` of places, which estimates that at least that share of their distinct steps
are the same steps (Jaccard similarity of the step sets; a copy, a copy whose frames were
re-encoded, a recording cut a few steps later). The estimate's standard error at J = 0.5 is
0.06 with 64 values.

Candidate pairs come from locality-sensitive hashing: the 64 values cut into :data:`BANDS`
bands of :data:`ROWS_PER_BAND`; episodes whose values are equal over a whole band land in the
same bucket: a pair with Jaccard J becomes a candidate with probability 1 - (1 - J^2)^32,
0.999 at J = 0.5, 0.28 at J = 0.1 (then checked, and refused), 0.0003 at J = 0.003 (one shared
step in 300). Work grows with the episodes plus the
candidate pairs, not with their square. The relation is closed transitively (union-find). Each
group's first episode in ``(source, partition, episode)`` order is kept: its
``near_duplicate_of`` is NULL, every other member's names it (``source/partition#episode``),
and ``duplicate_group`` is the kept one's name for every member. ``WHERE near_duplicate_of IS
NULL`` keeps one of each.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

log = logging.getLogger(__name__)

STEP_SHARE = 0.5
BANDS = 32
ROWS_PER_BAND = 2


@dataclass(frozen=True)
class EpisodeSignatures:
    """The signature columns of many episodes, as the catalog holds them, in the order in
    which a group keeps its first."""

    names: list[str]  # "source/partition#episode"
    content_hash: list[str | None]
    step_minhash: list[list[int] | None]


def episode_name(source: str, partition: str, episode: int) -> str:
    return f"{source}/{partition}#{episode}"


class _Groups:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:
            self.parent[i], i = root, self.parent[i]
        return root

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)  # the earlier episode stays the root


def candidate_pairs(minhashes: np.ndarray) -> set[tuple[int, int]]:
    """Pairs (i < j) of rows of ``minhashes`` (n, 64) equal over at least one whole band."""
    pairs: set[tuple[int, int]] = set()
    for band in range(BANDS):
        keys = minhashes[:, band * ROWS_PER_BAND : (band + 1) * ROWS_PER_BAND]
        buckets: dict[bytes, list[int]] = defaultdict(list)
        for i, key in enumerate(keys):
            buckets[key.tobytes()].append(i)
        for members in buckets.values():
            for a in range(len(members)):
                for b in members[a + 1 :]:
                    pairs.add((members[a], b))
    return pairs


def step_share(a: np.ndarray, b: np.ndarray) -> float:
    """The share of MinHash values two episodes agree in (estimates their Jaccard)."""
    return float(np.mean(a == b))


def find_duplicates(signatures: EpisodeSignatures) -> pa.Table:
    """``episode_name``, ``near_duplicate_of`` and ``duplicate_group`` of every episode that
    has a duplicate (episodes without one are not listed)."""
    n = len(signatures.names)
    groups = _Groups(n)
    first_of: dict[str, int] = {}
    for i, h in enumerate(signatures.content_hash):
        if h is not None:
            groups.join(first_of.setdefault(h, i), i)
    have = [i for i, m in enumerate(signatures.step_minhash) if m is not None]
    if have:
        minhashes = np.array([signatures.step_minhash[i] for i in have], np.int64)
        candidates = candidate_pairs(minhashes)
        for a, b in candidates:
            if step_share(minhashes[a], minhashes[b]) >= STEP_SHARE:
                groups.join(have[a], have[b])
        log.info("duplicates: %d candidate pairs among %d episodes", len(candidates), n)
    roots = [groups.find(i) for i in range(n)]
    sizes: dict[int, int] = defaultdict(int)
    for r in roots:
        sizes[r] += 1
    listed = [i for i in range(n) if sizes[roots[i]] > 1]
    names = signatures.names
    return pa.table(
        {
            "episode_name": pa.array([names[i] for i in listed], pa.string()),
            "near_duplicate_of": pa.array(
                [None if roots[i] == i else names[roots[i]] for i in listed], pa.string()
            ),
            "duplicate_group": pa.array([names[roots[i]] for i in listed], pa.string()),
        }
    )
