"""A dataset built as shard ranges, opened as one TED.

A large RLDS dataset is materialized as shard-range partitions (``droid@00000-00031``, ...: the
key's form, :class:`ShardRange`, is defined here; which datasets are cut so is
:mod:`~episode_warehouse.sources.openx.shard_ranges`' business), each a complete TED of its
own, never rewritten to join the others. :func:`open_dataset_ted` (and ``open_ted`` given the
dataset's name) opens them as one TensorDict: each key is a :class:`ConcatTensor` over the
ranges' tensors (memory-mapped numbers, encoded cameras, shifted next observations), ranges in
shard order, ``episode`` numbered across the dataset.
Indexing it reads only the rows it picks, from the ranges that hold them; a slice inside one
range is that range's view (no copy). Nothing is concatenated in memory unless a whole-tensor
operation asks for it (then, as every stand-in does, the whole tensor is computed: right,
never free).

The layout, then, is the ranges' own folders (``ted/openx/droid@00000-00031/`` ...): a range
is rebuilt alone when one of its shards changes, and a reader opening the dataset sees each
range's published version. The ranges must be contiguous from shard 0; a gap is an error that
names it.
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from episode_warehouse.errors import NotMaterializedError, PartitionConflictError, PartitionKeyError
from episode_warehouse.frames.tensor import placeholder
from episode_warehouse.partition_keys import SEPARATOR, ShardRange, parse_range
from episode_warehouse.stand_in import StandIn
from episode_warehouse.storage import Root
from episode_warehouse.ted.record import TedRecord

log = logging.getLogger(__name__)
EPISODE_KEY = "episode"


class ConcatTensor(StandIn):
    """The rows of several tensors one after the other, read where they are when indexed.
    ``maps[i]`` renumbers part ``i``'s values: an int is added (episode ids numbered across
    parts), a tensor is a lookup (a part's task and text indices into the union's tables)."""

    _parts: list[torch.Tensor]
    _starts: np.ndarray  # first row of each part, and the total at the end
    _maps: list[int | torch.Tensor] | None
    _plain: torch.Tensor

    @staticmethod
    def __new__(
        cls, parts: list[torch.Tensor], maps: list[int | torch.Tensor] | None = None
    ) -> ConcatTensor:
        first = parts[0]
        starts = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
        plain = placeholder(int(starts[-1]), tuple(first.shape[1:]), first.dtype)
        out = plain.as_subclass(cls)
        out._parts, out._starts, out._maps, out._plain = parts, starts, maps, plain
        return out

    def __reduce_ex__(self, protocol):
        return (ConcatTensor, (self._parts, self._maps))

    def _part_rows(self, part: int, index) -> torch.Tensor:
        rows = self._parts[part][index]
        renumber = None if self._maps is None else self._maps[part]
        if isinstance(renumber, torch.Tensor):
            return renumber[rows.long()].to(rows.dtype)
        return rows + renumber if renumber else rows

    def rows(self, index) -> torch.Tensor:
        whole_index = index
        rest: tuple = ()
        if isinstance(index, tuple):
            index, rest = (index[0], index[1:]) if index else (slice(None), ())
        total = int(self._starts[-1])
        if index is Ellipsis or index is None:  # not an index of rows: the computed whole's
            return self.whole()[whole_index]
        if isinstance(index, int) or (isinstance(index, torch.Tensor) and index.ndim == 0
                                      and index.dtype != torch.bool):  # fmt: skip
            row = int(index) + total if int(index) < 0 else int(index)
            if not 0 <= row < total:
                raise IndexError(f"index {int(index)} is out of bounds for size {total}")
            part = int(np.searchsorted(self._starts, row, side="right") - 1)
            out = self._part_rows(part, row - int(self._starts[part]))
            return out[rest] if rest else out
        if isinstance(index, slice):
            start, stop, step = index.indices(total)
            part = int(np.searchsorted(self._starts, start, side="right") - 1)
            if step == 1 and stop > start and stop <= self._starts[part + 1]:  # inside one part
                base = int(self._starts[part])
                out = self._part_rows(part, slice(start - base, stop - base))
                return out[(slice(None), *rest)] if rest else out
            ids = np.arange(start, stop, step, dtype=np.int64)
        else:
            ids = _row_ids(index, total)
        out = self._gather(ids)
        return out[(slice(None), *rest)] if rest else out

    def _gather(self, ids: np.ndarray) -> torch.Tensor:
        if len(ids) == 0:
            return self._plain[:0].clone()
        part_of = np.searchsorted(self._starts, ids, side="right") - 1
        order = np.argsort(part_of, kind="stable")
        pieces = []
        for part in np.unique(part_of):
            local = ids[order][part_of[order] == part] - self._starts[part]
            pieces.append(self._part_rows(int(part), torch.from_numpy(local)))
        gathered = torch.cat(pieces) if len(pieces) > 1 else pieces[0]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return gathered[torch.from_numpy(inverse)]

    def whole(self) -> torch.Tensor:
        return torch.cat(
            [self._part_rows(i, slice(None)) for i in range(len(self._parts))]
        ).contiguous()

    def shape_only(self) -> torch.Tensor:
        return self._plain


def _row_ids(index, total: int) -> np.ndarray:
    """Row numbers of an integer or boolean index (tensor, array or list)."""
    if isinstance(index, torch.Tensor):
        index = index.cpu().numpy()
    ids = np.asarray(index)
    if ids.dtype == bool:
        if ids.shape != (total,):
            raise IndexError(f"a boolean index of shape {ids.shape} for {total} rows")
        return np.flatnonzero(ids)
    ids = ids.astype(np.int64).reshape(-1)
    ids = np.where(ids < 0, ids + total, ids)
    if len(ids) and (ids.min() < 0 or ids.max() >= total):
        raise IndexError(f"an index is out of bounds for size {total}")
    return ids


def published_ranges(root: Root, prefix: str, dataset: str) -> list[ShardRange]:
    """The shard ranges of ``dataset`` published under ``prefix`` (``ted/openx``,
    ``standardized/openx``), in shard order; names that are not a range's key are passed over."""
    names = [rel.split("/")[-1] for rel in root.published(prefix, 1)]
    found = []
    for name in names:
        if name.startswith(dataset + SEPARATOR):
            try:
                shard_range = parse_range(name)
            except PartitionKeyError:
                continue
            if shard_range is not None and shard_range.dataset == dataset:
                found.append(shard_range)
    return sorted(found, key=lambda r: r.first)


def has_ranges(root: Root, source: str, dataset: str) -> bool:
    """Whether any shard range of ``dataset`` is published (``dataset`` itself is not a
    range's key)."""
    return SEPARATOR not in dataset and bool(published_ranges(root, f"ted/{source}", dataset))


def dataset_ranges(root: Root, source: str, dataset: str) -> list[str]:
    """The published shard-range partitions of ``dataset``, in shard order, checked to be
    contiguous from shard 0.

    Raises:
        NotMaterializedError: none is published, or a range of shards is missing between them.
        PartitionConflictError: two ranges share shards.
    """
    ranges = published_ranges(root, f"ted/{source}", dataset)
    if not ranges:
        raise NotMaterializedError(
            f"no TED of {source} {dataset!r}, nor of any shard range of it",
            subject=root.url,
            fix=f"materialize it: warehouse materialize {source} {dataset} --through ted, or its "
            f"shard ranges ({dataset}@00000-00031 ...)",
        )
    expected = 0
    for before, r in zip([None, *ranges], ranges, strict=False):
        if r.first < expected:  # built before overlaps were refused: never count a shard twice
            raise PartitionConflictError(
                f"the published ranges {before.key if before else ''} and {r.key} of {dataset} "
                "share shards: their episodes would be counted twice",
                subject=root.url,
                fix=f"drop one of them (warehouse drop {source} {r.key}), or re-cut the dataset "
                f"(warehouse recut {source} {dataset} SHARDS_PER_RANGE)",
            )
        if r.first != expected:
            raise NotMaterializedError(
                f"shards {expected} to {r.first - 1} of {dataset} are in no published range "
                f"(the ranges: {', '.join(x.key for x in ranges[:6])}"
                f"{' ...' if len(ranges) > 6 else ''})",
                subject=root.url,
                fix=f"materialize {dataset}@{expected:05d}-{r.first - 1:05d} (or the ranges "
                "that hold those shards) through the ted stage",
            )
        expected = r.last + 1
    return [r.key for r in ranges]


def union_tables(metas: list[TedRecord]) -> dict[str, tuple[list[str], list[np.ndarray]]]:
    """The ranges' lookup tables (``tasks`` for ``task_index``, each text leaf's ``texts``) as
    one: ``{key: (the union's strings, first seen first; per range, its index -> the
    union's)}``. What :func:`open_dataset_ted` renumbers by, and what its indices mean."""
    tables: dict[str, list[list[str]]] = {"task_index": [list(m.tasks) for m in metas]}
    for leaf in sorted({k for m in metas for k in m.extra.get("texts", {})}):
        tables[leaf] = [list(m.extra.get("texts", {}).get(leaf, [])) for m in metas]
    out = {}
    for key, per_range in tables.items():
        union: dict[str, int] = {}
        lookups = [
            np.array([union.setdefault(t, len(union)) for t in texts], dtype=np.int64)
            for texts in per_range
        ]
        out[key] = (list(union), lookups)
    return out
