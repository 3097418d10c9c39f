"""Reading standardized partitions: :func:`open_standardized` and :func:`dataset_statistics`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch
from tensordict import NonTensorStack, TensorDict

from episode_warehouse.atomic import read_json
from episode_warehouse.errors import NotMaterializedError
from episode_warehouse.incremental import checkout
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RECORD
from episode_warehouse.standardized.record import StandardizedRecord
from episode_warehouse.standardized.statistics import STATISTICS_FILE


class Opened:
    """A standardized partition's folder and record, its arrays memory-mapped once per process
    (the maps are not pickled: a DataLoader worker maps the files again)."""

    def __init__(self, folder: Path, meta: StandardizedRecord) -> None:
        self.folder, self.meta = folder, meta
        self._maps: dict[str, np.ndarray] = {}

    def __getstate__(self) -> dict:
        return {"folder": self.folder, "meta": self.meta}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["folder"], state["meta"])  # type: ignore[misc]

    def _map(self, relative: str) -> np.ndarray:
        if relative not in self._maps:
            self._maps[relative] = np.load(self.folder / relative, mmap_mode="c")
        return self._maps[relative]

    def array(self, name: str) -> np.ndarray:
        """``name``.npy, mapped copy-on-write (writes never reach the file)."""
        return self._map(f"{name}.npy")

    def frames(self, view: str) -> np.ndarray | None:
        """The view's frame file (every TED row), or ``None`` for a view the dataset lacks."""
        file = self.meta.views.get(view)
        return None if file is None else self._map(file)

    @property
    def instructions(self) -> np.ndarray:
        return np.array(self.meta.instructions, dtype=object)


def open_folder(folder: str | os.PathLike, *, subject: str) -> Opened:
    folder = Path(folder)
    data = read_json(folder / RECORD)
    if not data:
        raise NotMaterializedError(
            "this partition is not standardized",
            subject=subject,
            fix=f"./warehouse materialize {subject.replace(':', ' ')} --through standardized",
        )
    meta = StandardizedRecord.from_json_checked(
        data, subject=str(folder / RECORD), fix="re-materialize its standardized stage"
    )
    return Opened(folder, meta)


def locate(source: str, partition: str, root=None) -> Opened:
    """The standardized partition of ``source:partition`` under ``root`` (a ``gs://`` root:
    pulled into its local copy)."""
    layout = WarehouseLayout.from_root(root)
    folder = layout.standardized_dir(source, partition)
    if layout.bucket is not None:
        checkout(layout.root, folder, StandardizedRecord)
    return open_folder(folder, subject=f"{source}:{partition}")


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
