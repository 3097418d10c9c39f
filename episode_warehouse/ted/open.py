"""``open_ted``: a TED as one TensorDict, by key. The key's form decides how it is opened
(:func:`~episode_warehouse.partition_keys.key_form`): a partition's or a shard range's TED is
opened whole (memory-mapped); a dataset built as shard ranges, named by the dataset, is its
published ranges joined (:mod:`~episode_warehouse.ted.chunks`)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from episode_warehouse.errors import PartitionConflictError
from episode_warehouse.partition_keys import key_form
from episode_warehouse.paths import artifact_name
from episode_warehouse.storage import Root, parse_root
from episode_warehouse.ted.assemble import MappedRows
from episode_warehouse.ted.chunks import (
    EPISODE_KEY,
    ConcatTensor,
    dataset_ranges,
    has_ranges,
    union_tables,
)
from episode_warehouse.ted.files import read_meta
from episode_warehouse.ted.reader import TedReader

log = logging.getLogger(__name__)


def open_ted_folder(folder: Path, next_obs: str = "view") -> TensorDictBase:
    """Open the TED at ``folder`` (see :func:`open_ted` for the keys and ``next_obs``)."""
    return MappedRows(Path(folder), read_meta(folder)).whole(next_obs)


def open_ted(
    source: str,
    partition: str,
    root: str | os.PathLike | Root | None = None,
    *,
    next_obs: str = "view",
) -> TensorDictBase:
    """The TED of one partition as a memory-mapped TensorDict (opens in milliseconds).

    Keys (N steps, all episodes of the partition concatenated):

    - ``observation`` and ``("next", "observation")`` (Atari: uint8 [N, 84, 84]; OpenX:
      nested ``observation/<name>``); "next" is a zero-copy shifted view, zeros on last steps
    - ``action`` (Atari int32 [N]; OpenX as in the data), plus any other per-step values
    - ``("next", "reward")`` float32 [N, 1]; ``("next", "done" | "terminated" | "truncated")``
      bool [N, 1]; root ``done``, ``terminated``, ``truncated`` bool [N, 1], all False
    - ``is_init`` bool [N] (first step of each episode), ``episode`` int32 [N]

    ``("next", "observation")`` costs nothing with ``next_obs="view"`` (the default): it is the
    same file shifted by one row, and indexing, slicing, ``torch.stack`` of slices, ``.clone()``
    of a slice and ``.to()`` to the same device cost only the rows they touch. A whole-tensor
    operation on it (``td["next", "observation"].float().mean()``, ``.to("cuda")``) allocates
    the corrected tensor first: N x frame bytes (~7 GB for a million Atari frames).
    ``next_obs="copy"`` makes that copy once, at open, as a plain tensor in memory.

    Args:
        source: ``"atari"``, ``"openx"`` or ``"lerobot"``.
        partition: e.g. ``"Pong/5"`` or ``"cmu_stretch"``; a dataset built as shard ranges
            (``droid@00000-00031`` ...) by its name, ``"droid"``: its ranges opened as one
            (:mod:`~episode_warehouse.ted.chunks`).
        root: the warehouse root (a setting or a :class:`~episode_warehouse.storage.Root`);
            defaults to ``$EPISODE_WAREHOUSE_ROOT``. With a ``gs://`` root the TED is
            downloaded once into ``$EPISODE_WAREHOUSE_CACHE`` (default
            ``~/.cache/episode-warehouse``), keyed by its version; nothing else is written.
        next_obs: ``"view"`` (zero-copy, default) or ``"copy"`` (materialized in memory).

    Raises:
        NotMaterializedError: the partition's TED has not been built.
    """
    return open_ted_and_rows(source, partition, root, next_obs=next_obs)[0]


def open_ted_and_rows(
    source: str,
    partition: str,
    root: str | os.PathLike | Root | None = None,
    *,
    next_obs: str = "view",
) -> tuple[TensorDictBase, MappedRows | None]:
    """:func:`open_ted`, and the TED's memory-mapped rows where its files are on this machine
    (a partition's or a shard range's TED under a folder root), which the batch read takes
    (:func:`~episode_warehouse.ted.gather.gather_rows`); None for a bucket root's or a dataset
    of ranges."""
    store = parse_root(root)
    named = key_form(partition) == "name"  # a partition's key, or a dataset's built as ranges
    if named and not _published(store, source, partition) and has_ranges(store, source, partition):
        return open_dataset_ted(source, partition, store, next_obs=next_obs), None
    reader = TedReader.of(store, source, partition)
    return reader.whole(next_obs), reader.mapped_rows()


def _published(store: Root, source: str, partition: str) -> bool:
    """Whether ``partition`` has a TED of its own in ``store``."""
    return bool(store.artifact(artifact_name("ted", source, partition)).read()[0])


def open_dataset_ted(
    source: str,
    dataset: str,
    root: str | os.PathLike | Root | None = None,
    *,
    next_obs: str = "view",
) -> TensorDictBase:
    """Every step of ``dataset``'s shard ranges as one TensorDict (see the module)."""
    store = parse_root(root)
    readers = [TedReader.of(store, source, key) for key in dataset_ranges(store, source, dataset)]
    parts = [reader.whole(next_obs) for reader in readers]
    _check_one_version_and_layout(dataset, readers, parts)
    episodes = [reader.meta.episodes for reader in readers]
    maps: dict[str, list[int | torch.Tensor]] = {
        EPISODE_KEY: np.concatenate([[0], np.cumsum(episodes)[:-1]]).astype(int).tolist()
    }
    for key, (_, lookups) in union_tables([r.meta for r in readers]).items():
        maps[key] = [torch.from_numpy(lookup) for lookup in lookups]
    rows = sum(td.batch_size[0] for td in parts)
    out = TensorDict(batch_size=[rows])
    for key in parts[0].keys(True, True):
        name = key if isinstance(key, str) else "/".join(key)
        out.set(key, ConcatTensor([td.get(key) for td in parts], maps.get(name)))
    log.info("opened %s %s as %d shard ranges, %d steps", source, dataset, len(parts), rows)
    return out


def _check_one_version_and_layout(dataset: str, readers, parts: list[TensorDictBase]) -> None:
    """The ranges join only when they are of one dataset version (each episode's
    ``dataset_version``) and one layout (the same keys, each of one row shape and dtype).

    Raises:
        PartitionConflictError: naming the ranges that disagree and how.
    """
    keys = [r.meta.partition or str(i) for i, r in enumerate(readers)]
    versions = []
    for reader in readers:
        table = reader.episodes()
        column = "dataset_version"
        found = set(table.column(column).to_pylist()) if column in table.column_names else set()
        versions.append(sorted(str(v) for v in found if v is not None))
    problems = []
    if len({tuple(v) for v in versions}) > 1:
        problems.append(
            "dataset versions differ: "
            + "; ".join(f"{k} {'/'.join(v) or '?'}" for k, v in zip(keys, versions, strict=True))
        )
    layouts = [
        {
            "/".join((k,) if isinstance(k, str) else k): (tuple(td.get(k).shape[1:]),
                                                          str(td.get(k).dtype))
            for k in td.keys(True, True)
        }
        for td in parts
    ]  # fmt: skip
    first = layouts[0]
    for key, layout in zip(keys[1:], layouts[1:], strict=True):
        if layout != first:
            differ = sorted(k for k in set(first) | set(layout) if first.get(k) != layout.get(k))
            shown = ", ".join(f"{k}: {first.get(k)} in {keys[0]}, {layout.get(k)} here"
                              for k in differ[:3])  # fmt: skip
            problems.append(f"{key} has another layout than {keys[0]} ({shown})")
    if problems:
        raise PartitionConflictError(
            f"the shard ranges of {dataset} cannot be read as one: " + "; ".join(problems),
            subject=f"{dataset} ({', '.join(keys)})",
            fix=f"rebuild every range from one version (warehouse recut openx {dataset} "
            "SHARDS_PER_RANGE), or pin the version with OPENX_VERSIONS",
        )
