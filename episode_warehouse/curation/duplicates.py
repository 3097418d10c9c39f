"""Exact and near duplicate episodes over the whole catalog, within and across datasets.

**The rule.** Two episodes *resemble* each other when they hold the same data (equal
``content_hash``), or when all of these hold:

- their steps agree: their ``step_minhash`` values agree in at least :data:`STEP_SHARE` of
  places, which estimates that at least that share of their distinct steps are the same steps
  (Jaccard similarity of the step sets: a copy, a copy whose frames were re-encoded, a recording
  cut a few steps later); the estimate's standard error at J = 0.5 is 0.06 with 64 values;
- their observations agree: where both have cameras, at least one of the steps they sampled by
  content (``sample_steps``: the smallest fingerprints, so two episodes that share steps sample
  the same ones) is shared, and at those steps their 8x8 thumbnails of the decoded frames differ
  by at most :data:`FRAME_TOLERANCE` grey levels on average (a re-encoded copy differs by about
  one; the same trajectory replayed in another scene by tens);
- their texts agree: where both have an instruction, it is the same (``text_hash``).

**Who is dropped.** Episodes are taken in ``(source, partition, episode)`` order; one that
resembles an episode kept before it is dropped, and its ``near_duplicate_of`` names the first
such kept episode; otherwise it is kept (``near_duplicate_of`` NULL). An episode is dropped only
for one it resembles itself: a chain whose ends share no step keeps both ends. ``duplicate_group``
names the kept episode for it and for every episode dropped for it. Every episode is listed
(checked), with the ``content_hash`` it was checked with (the catalog's view ignores a row whose
episode has changed since: docs/curation.md).

**The search.** Candidates come from locality-sensitive hashing over the *kept* episodes: the 64
values cut into :data:`BANDS` bands of :data:`ROWS_PER_BAND`; an episode is compared with the
kept episodes that share a whole band with it (a pair with Jaccard J shares at least one with
probability 1 - (1 - J^2)^32: 0.999 at J = 0.5), the comparisons vectorized per bucket. Equal
episodes collapse first (a group of identical ones costs one comparison each), and a bucket past
:data:`BUCKET_CAP` kept episodes (a band whose values many distinct episodes share: constant
actions) gives no candidates, so the work grows with the episodes, never with their square.
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
FRAME_TOLERANCE = 8.0  # mean absolute difference of the sample thumbnails, grey levels
BUCKET_CAP = 256  # kept episodes in one band's bucket past which it gives no candidates
THUMB_BYTES = 64


@dataclass(frozen=True)
class EpisodeSignatures:
    """The signature columns of many episodes, as the catalog holds them, in the order in
    which the rule takes them."""

    names: list[str]  # "source/partition#episode"
    content_hash: list[str | None]
    step_minhash: list[list[int] | None]
    sample_steps: list[list[int] | None] | None = None
    sample_thumbs: list[bytes | None] | None = None
    text_hash: list[str | None] | None = None

    def column(self, name: str) -> list:
        values = getattr(self, name)
        return values if values is not None else [None] * len(self.names)


def episode_name(source: str, partition: str, episode: int) -> str:
    return f"{source}/{partition}#{episode}"


def step_share(a: np.ndarray, b: np.ndarray) -> float:
    """The share of MinHash values two episodes agree in (estimates their Jaccard)."""
    return float(np.mean(a == b))


class _Looks:
    """What the rule compares besides steps: each episode's sample steps, thumbnails, text."""

    def __init__(self, signatures: EpisodeSignatures) -> None:
        self.steps = signatures.column("sample_steps")
        self.thumbs = signatures.column("sample_thumbs")
        self.text = signatures.column("text_hash")

    def agree(self, i: int, j: int) -> bool:
        """Whether episodes ``i`` and ``j`` look alike (texts and frames; see the module)."""
        if self.text[i] is not None and self.text[j] is not None and self.text[i] != self.text[j]:
            return False
        a, b = self.thumbs[i], self.thumbs[j]
        if a is None and b is None:
            return True  # no camera: the steps are all there is
        if a is None or b is None or not self.steps[i] or not self.steps[j]:
            return False
        per_step_a = len(a) // len(self.steps[i])
        per_step_b = len(b) // len(self.steps[j])
        if per_step_a != per_step_b or not per_step_a:
            return False  # other cameras
        where_b = {s: k for k, s in enumerate(self.steps[j])}
        shared = [(k, where_b[s]) for k, s in enumerate(self.steps[i]) if s in where_b]
        if not shared:
            return False  # no step seen in both: nothing says their frames agree
        x = np.frombuffer(a, np.uint8).reshape(len(self.steps[i]), per_step_a)
        y = np.frombuffer(b, np.uint8).reshape(len(self.steps[j]), per_step_b)
        ka, kb = (np.array(v) for v in zip(*shared, strict=True))
        diff = np.abs(x[ka].astype(np.int16) - y[kb].astype(np.int16))
        return float(diff.mean()) <= FRAME_TOLERANCE


def _identity(signatures: EpisodeSignatures, i: int) -> tuple:
    """What equal episodes share: their steps, sample frames and text (or their content)."""
    minhash = signatures.step_minhash[i]
    if minhash is None:
        return ("content", signatures.content_hash[i])
    return (
        tuple(minhash),
        tuple(signatures.column("sample_steps")[i] or ()),
        signatures.column("sample_thumbs")[i],
        signatures.column("text_hash")[i],
    )


def find_duplicates(signatures: EpisodeSignatures) -> pa.Table:
    """``episode_name``, ``near_duplicate_of`` and ``duplicate_group`` of every episode (see the
    module: NULL ``near_duplicate_of`` for a kept one, ``duplicate_group`` NULL for an episode
    nothing resembles)."""
    n = len(signatures.names)
    looks = _Looks(signatures)
    kept_for = [-1] * n  # the kept episode each dropped one resembles
    kept: list[int] = []
    by_content: dict[str, int] = {}
    by_identity: dict[tuple, int] = {}
    # per band: bucket key -> the kept episodes there (indices into ``kept_rows``)
    buckets: list[dict[bytes, list[int]]] = [defaultdict(list) for _ in range(BANDS)]
    kept_rows = np.zeros((0, BANDS * ROWS_PER_BAND), np.int64)
    kept_index: list[int] = []  # row of kept_rows -> episode
    capped: set[tuple[int, bytes]] = set()
    for i in range(n):
        content = signatures.content_hash[i]
        text = signatures.column("text_hash")[i]
        same = by_content.get(f"{content}|{text}") if content is not None else None
        if same is None:
            same = by_identity.get(_identity(signatures, i))
        if same is not None:  # equal to an episode seen before: dropped for the one it was
            kept_for[i] = same if kept_for[same] < 0 else kept_for[same]
            continue
        minhash = signatures.step_minhash[i]
        match = -1
        if minhash is not None:
            row = np.asarray(minhash, np.int64)
            width = ROWS_PER_BAND
            keys = [row[b * width : (b + 1) * width].tobytes() for b in range(BANDS)]
            candidates: set[int] = set()
            for band, key in enumerate(keys):
                members = buckets[band].get(key)
                if members:
                    candidates.update(members)
            if candidates:
                order = np.array(sorted(candidates))
                shares = (kept_rows[order] == row).mean(1)
                for k in order[shares >= STEP_SHARE].tolist():
                    if looks.agree(i, kept_index[k]):
                        match = kept_index[k]
                        break
        if match >= 0:
            kept_for[i] = match
        else:
            kept.append(i)
            if minhash is not None:
                k = len(kept_index)
                kept_index.append(i)
                if k >= len(kept_rows):  # grow geometrically
                    grown = np.zeros((max(16, 2 * len(kept_rows)), kept_rows.shape[1]), np.int64)
                    grown[: len(kept_rows)] = kept_rows
                    kept_rows = grown
                kept_rows[k] = row
                for band, key in enumerate(keys):
                    members = buckets[band][key]
                    if len(members) < BUCKET_CAP:
                        members.append(k)
                    else:
                        capped.add((band, key))
        if content is not None:
            by_content.setdefault(f"{content}|{text}", i)
        by_identity.setdefault(_identity(signatures, i), i)
    if capped:
        log.info("duplicates: %d band buckets reached %d kept episodes and were capped",
                 len(capped), BUCKET_CAP)  # fmt: skip
    has_duplicate = {k for k in kept_for if k >= 0}
    names = signatures.names
    near = [None if kept_for[i] < 0 else names[kept_for[i]] for i in range(n)]
    group = [
        names[kept_for[i]] if kept_for[i] >= 0 else (names[i] if i in has_duplicate else None)
        for i in range(n)
    ]
    log.info("duplicates: %d episodes, %d kept, %d dropped", n, len(kept), n - len(kept))
    return pa.table(
        {
            "episode_name": pa.array(names, pa.string()),
            "near_duplicate_of": pa.array(near, pa.string()),
            "duplicate_group": pa.array(group, pa.string()),
        }
    )
