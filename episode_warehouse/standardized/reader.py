"""Reading standardized partitions: :func:`open_standardized` and :func:`dataset_statistics`."""

from __future__ import annotations

import json
import os

import numpy as np
import torch
from tensordict import NonTensorStack, TensorDict

from episode_warehouse.errors import NotMaterializedError, StaleSelectionError
from episode_warehouse.file_maps import map_npy
from episode_warehouse.paths import artifact_name
from episode_warehouse.records import RECORD
from episode_warehouse.standardized.record import StandardizedRecord
from episode_warehouse.standardized.statistics import STATISTICS_FILE
from episode_warehouse.storage import Root, parse_root
from episode_warehouse.ted.reader import TedReader


class Opened:
    """A standardized partition of a root, read only: its record, its arrays (memory-mapped
    from a folder, or fetched once into the reader cache from a bucket) and its views' frames,
    read from the TED it was built from (the maps and readers are not pickled: a DataLoader
    worker opens them again)."""

    def __init__(self, root: Root, source: str, partition: str) -> None:
        self.root, self.source, self.partition = root, source, partition
        subject = f"{source}:{partition}"
        artifact = root.artifact(artifact_name("standardized", source, partition))
        data, _ = artifact.read()
        if not data:
            raise NotMaterializedError(
                "this partition is not standardized",
                subject=subject,
                fix=f"./warehouse materialize {source} {partition} --through standardized",
            )
        self.meta = StandardizedRecord.from_json_checked(
            data, subject=f"{artifact.url}/{RECORD}", fix="re-materialize its standardized stage"
        )
        self.folder = artifact.mapped(data) or artifact.fetch(data)
        self._maps: dict[str, np.ndarray] = {}
        self._ted: TedReader | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_maps": {}, "_ted": None}

    def _map(self, relative: str) -> np.ndarray:
        if relative not in self._maps:
            self._maps[relative] = map_npy(  # no descriptor held (file_maps.py)
                self.folder / relative, "re-materialize the standardized stage of this partition"
            ).numpy()
        return self._maps[relative]

    def array(self, name: str) -> np.ndarray:
        """``name``.npy, mapped copy-on-write (writes never reach the file)."""
        return self._map(f"{name}.npy")

    def ted(self) -> TedReader:
        """The reader of the TED version this partition was built from.

        Raises:
            StaleSelectionError: the TED was rebuilt since (the rows would not match).
        """
        if self._ted is None:
            self._ted = self._built_from(TedReader.of(self.root, self.source, self.partition))
        return self._ted

    def _built_from(self, ted: TedReader) -> TedReader:
        built_from = self.meta.inputs.get("ted")
        if ted.meta.version != built_from:
            raise StaleSelectionError(
                f"its TED was rebuilt (version {ted.meta.version}) since it was "
                f"standardized from version {built_from}",
                subject=f"{self.source}:{self.partition}",
                fix=f"./warehouse materialize {self.source} {self.partition} --through "
                "standardized",
            )
        return ted

    def frames(self, view: str):
        """The view's frames, indexed by TED row (``frames(v)[ted_rows]`` reads those rows),
        or ``None`` for a view the dataset lacks. Every reader of a view draws rows at random
        or reads them all (``VLADataset``, :func:`open_standardized`, the RLDS export), so from
        a bucket root the TED is fetched whole into the reader cache at the first call and
        memory-mapped (:meth:`TedReader.local_rows`), as ``StepWindowDataset``'s is.

        Raises:
            StaleSelectionError: the TED was rebuilt since (the rows would not match).
        """
        file = self.meta.views.get(view)
        if file is None:
            return None
        ted = self.ted()
        rows = ted.local_rows()
        self._built_from(ted)  # its fetch opens the current version where the built one is gone
        return rows.file_rows(file)

    @property
    def instructions(self) -> np.ndarray:
        return np.array(self.meta.instructions, dtype=object)


def locate(source: str, partition: str, root: Root | str | os.PathLike | None = None) -> Opened:
    """The standardized partition of ``source:partition`` under ``root``, opened for reading.

    Raises:
        NotMaterializedError: the partition is not standardized.
    """
    return Opened(parse_root(root), source, partition)


def standardized_ranges(source: str, dataset: str, root=None) -> list[str]:
    """The standardized shard ranges of ``dataset`` (``droid@00000-00031`` ...) in shard
    order, or [] where it has none."""
    from episode_warehouse.partition_keys import SEPARATOR
    from episode_warehouse.ted.chunks import published_ranges

    if SEPARATOR in dataset:
        return []
    ranges = published_ranges(parse_root(root), f"standardized/{source}", dataset)
    return [r.key for r in ranges]


def open_standardized(source: str, partition: str, root=None) -> TensorDict:
    """The partition's kept steps as a TensorDict (episodes in catalog order, steps in order).

    Keys: ``action`` float32 [N, A]; ``("observation", "state")`` float32 [N, S] where the
    dataset has a proprio state; ``("observation", "image", view)`` uint8 [N, C, H, W] at native
    size for each view the dataset maps; ``language_instruction`` (one string per step);
    ``episode`` int64 (the TED's episode); ``is_init``; ``("next", "reward" | "done" |
    "terminated" | "truncated")``.

    Actions, states and flags are memory-mapped; the frames of the kept rows are read from the
    TED's files here (N x frame bytes in memory): to train on a large dataset stream it with
    :class:`~episode_warehouse.standardized.VLADataset`, which reads one item's frames at a time.

    Raises:
        NotMaterializedError: the partition is not standardized.
    """
    opened = locate(source, partition, root)
    meta, n = opened.meta, opened.meta.rows

    def t(name: str) -> torch.Tensor:
        return torch.from_numpy(np.asarray(opened.array(name)))

    td = TensorDict({"action": t("action"), "episode": t("episode"), "is_init": t("is_init")},
                    batch_size=[n])  # fmt: skip
    if meta.state_dim:
        td.set(("observation", "state"), t("state"))
    rows = np.asarray(opened.array("ted_row"))
    for view in meta.views:
        frames = opened.frames(view)
        if frames is not None:
            td.set(("observation", "image", view), torch.from_numpy(np.asarray(frames[rows])))
    td.set(("next", "reward"), t("reward").unsqueeze(-1))
    for flag in ("done", "terminated", "truncated"):
        td.set(("next", flag), t(flag).unsqueeze(-1))
    texts = opened.instructions[np.asarray(opened.array("instruction"))]
    td.set("language_instruction", NonTensorStack.from_list([str(x) for x in texts]))
    return td


def dataset_statistics(source: str, partition: str, root=None) -> dict:
    """The partition's statistics in Octo's JSON layout (``action``/``proprio`` with ``mean``,
    ``std``, ``max``, ``min``, ``p01``, ``p99``, ``q01``, ``q99``, ``mask``; ``num_transitions``,
    ``num_trajectories``), computed once when the partition was built.

    Raises:
        NotMaterializedError: the partition is not standardized.
    """
    opened = locate(source, partition, root)
    stats = json.loads((opened.folder / STATISTICS_FILE).read_text())
    return stats[opened.meta.dataset]
