"""What an episode stream delivers in one epoch, to which shard, and where it resumes.

An *item* is ``(selection row, offset, length)``: a whole episode or one slice of it. For an
epoch, :func:`epoch_items` fixes every item in order (a permutation of the episodes seeded with
``seed + epoch``, or weighted draws); :func:`shard_items` deals whole episodes round-robin to
ranks, then to DataLoader workers (a *shard* is one (rank, worker)), so every item belongs to
exactly one shard. A shard's position is the number of its items already delivered.

Resuming with the same layout skips that many items. Resuming with another world size or
worker count pools the unread items of every old shard (:func:`remaining_items`, from all old
shards' states) and deals them again, episode by episode: nothing is repeated or lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from episode_warehouse.errors import ConfigError


@dataclass(frozen=True)
class Plan:
    """How a stream turns a selection into items (all that decides the order)."""

    lengths: tuple[int, ...]
    slice_len: int | None
    drop_last: bool
    seed: int
    shuffle: bool
    weights: tuple[float, ...] | None = None  # weighted draws instead of a permutation
    num_samples: int | None = None


def _chunks(length: int, slice_len: int | None, drop_last: bool) -> list[tuple[int, int]]:
    if slice_len is None:
        return [(0, length)]
    out = [(o, slice_len) for o in range(0, length - slice_len + 1, slice_len)]
    rest = length % slice_len
    if rest and not drop_last:
        out.append((length - rest, rest))
    return out


def epoch_items(plan: Plan, epoch: int) -> np.ndarray:
    """The epoch's items as an (n, 3) int64 array of (row, offset, length), in order.

    Unweighted: every episode once, in a permutation seeded with ``seed + epoch`` (or in
    selection order without ``shuffle``), each cut into consecutive slices. Weighted:
    ``num_samples`` draws with replacement, with probability proportional to the weights;
    with ``slice_len``, each draw is one slice at a uniform random offset of an episode at
    least that long.
    """
    lengths = np.asarray(plan.lengths, dtype=np.int64)
    rng = np.random.default_rng(plan.seed + epoch)
    if plan.weights is not None:
        w = np.asarray(plan.weights, dtype=np.float64)
        if plan.slice_len is not None:
            w = np.where(lengths >= plan.slice_len, w, 0.0)
        if not w.sum() > 0:
            raise ConfigError(
                "no episode can be drawn: every weight is zero (or every weighted episode is "
                f"shorter than slice_len {plan.slice_len})",
                subject="selection weights",
                fix="give some episodes a positive weight, or lower slice_len",
            )
        rows = rng.choice(len(lengths), size=plan.num_samples or len(lengths), p=w / w.sum())
        if plan.slice_len is None:
            return np.stack([rows, np.zeros_like(rows), lengths[rows]], axis=1)
        offsets = rng.integers(0, lengths[rows] - plan.slice_len + 1)
        return np.stack([rows, offsets, np.full_like(rows, plan.slice_len)], axis=1)
    order = rng.permutation(len(lengths)) if plan.shuffle else np.arange(len(lengths))
    items = [
        (int(i), o, n)
        for i in order
        for o, n in _chunks(int(lengths[i]), plan.slice_len, plan.drop_last)
    ]
    return np.array(items, dtype=np.int64).reshape(-1, 3)


def _episode_groups(items: np.ndarray) -> list[np.ndarray]:
    """Positions of consecutive items of the same episode draw, in order (a weighted draw of
    the same episode twice is two groups)."""
    if not len(items):
        return []
    if items[:, 1].min() < 0:  # pragma: no cover - offsets are never negative
        raise ValueError("negative offset")
    new = np.ones(len(items), dtype=bool)
    new[1:] = (items[1:, 0] != items[:-1, 0]) | (items[1:, 1] <= items[:-1, 1])
    starts = np.flatnonzero(new)
    return np.split(np.arange(len(items)), starts[1:])


def deal(groups: list[np.ndarray], shard: int, shards: int) -> np.ndarray:
    """The positions of the groups dealt to ``shard`` (round-robin), in order."""
    mine = groups[shard::shards]
    return np.concatenate(mine) if mine else np.zeros(0, dtype=np.int64)


def shard_index(rank: int, world_size: int, worker: int, num_workers: int) -> tuple[int, int]:
    """(index, count) of a shard: ranks first, then workers (rank r, worker w -> r + W * w),
    which is dealing to ranks and then each rank's share to its workers."""
    return rank + world_size * worker, world_size * num_workers


def shard_items(items: np.ndarray, rank: int, world_size: int, worker: int, num_workers: int):
    """The items of one shard, in delivery order."""
    index, count = shard_index(rank, world_size, worker, num_workers)
    return items[deal(_episode_groups(items), index, count)]


def remaining_items(items: np.ndarray, states: list[dict]) -> np.ndarray:
    """The items of an epoch not yet delivered by the old shards whose ``states`` are given
    (one per old (rank, worker), each with its layout and position), in epoch order.

    Raises:
        ConfigError: the states do not cover every old shard exactly once.
    """
    layout = {(s["world_size"], s["num_workers"]) for s in states}
    if len(layout) != 1:
        raise ConfigError(
            f"the states come from different layouts {sorted(layout)}",
            subject="stream state",
            fix="pass the states of all ranks (and workers) of one run",
        )
    world_size, num_workers = layout.pop()
    seen = {(s["rank"], s["worker"]) for s in states}
    want = {(r, w) for r in range(world_size) for w in range(num_workers)}
    if seen != want or len(states) != len(want):
        raise ConfigError(
            f"states of {sorted(seen)} given, the run had {sorted(want)}",
            subject="stream state",
            fix="pass the state of every rank and worker of the run, each once",
        )
    groups = _episode_groups(items)
    unread = []
    for s in states:
        index, count = shard_index(s["rank"], world_size, s["worker"], num_workers)
        unread.append(deal(groups, index, count)[s["position"] :])
    return items[np.sort(np.concatenate(unread))] if unread else items[:0]
