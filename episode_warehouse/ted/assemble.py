"""The TensorDict of a TED's rows, assembled from its record and the rows of its files: one
function (:func:`assemble`) for every way rows are read, and :class:`MappedRows`, the rows of a
TED whose files are on this machine (memory-mapped)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tensordict import TensorDict, TensorDictBase

from episode_warehouse.errors import NotMaterializedError
from episode_warehouse.file_maps import map_npy
from episode_warehouse.frames.plain_rows import PlainRows, Rows
from episode_warehouse.frames.rows import open_frames
from episode_warehouse.frames.tensor import leaf_of
from episode_warehouse.settings import Settings
from episode_warehouse.ted.files import checksum_files, final_files_of, frame_files
from episode_warehouse.ted.layout import ARRAY, EPISODES, NEXT_OF, UNSQUEEZE, ZEROS
from episode_warehouse.ted.next_view import NextObservation
from episode_warehouse.ted.record import TedRecord

NEXT_OBS = ("view", "copy")


def _map(path: Path) -> torch.Tensor:
    # a private copy-on-write map holding no descriptor: pages are read lazily, writes never
    # reach disk, and a reader of many TEDs keeps no file open (episode_warehouse/file_maps.py)
    return map_npy(path, "re-materialize the ted stage of this partition")


def assemble(meta: TedRecord, rows_of, rows: int, next_obs: str = "view") -> TensorDictBase:
    """The TensorDict of ``rows`` steps of a TED from its record and ``rows_of(file)``: the
    rows of each per-step file (one more row for observation files), plain or encoded (an
    encoded camera's leaf decodes when indexed). A memory-mapped folder and the rows of one
    episode fetched from a bucket are assembled by this same code, so both give the same
    values."""
    if next_obs not in NEXT_OBS:
        raise ValueError(f"next_obs must be one of {NEXT_OBS}, not {next_obs!r}")
    leaves: dict[tuple[str, ...], torch.Tensor] = {}
    done = leaf_of(rows_of("next/done.npy"))
    for name, entry in meta.keys.items():
        key = tuple(name.split("/"))
        kind = entry["kind"]
        if kind == ZEROS:
            leaves[key] = torch.zeros(
                1, *entry["shape"], dtype=getattr(torch, entry["dtype"])
            ).expand(rows, *entry["shape"])
            continue
        stored = rows_of(entry["file"])
        if kind == ARRAY:
            leaves[key] = leaf_of(stored.window(0, rows))
        elif kind == UNSQUEEZE:
            leaves[key] = leaf_of(stored).unsqueeze(-1)
        elif kind == NEXT_OF:
            final = leaf_of(rows_of(entry["final"])) if "final" in entry else None
            episode = leaf_of(rows_of("episode.npy")) if final is not None else None
            view = NextObservation(leaf_of(stored.window(1, rows + 1)), done, final, episode)
            leaves[key] = view if next_obs == "view" else view.corrected()
        else:
            raise NotMaterializedError(f"unknown key kind {kind!r}", subject="TED meta.json")
    td = TensorDict(batch_size=[rows])
    for key, value in leaves.items():
        td.set(key, value)
    return td


class MappedRows:
    """The rows of a TED whose files are on this machine: memory-mapped, sliced without a
    copy (``bytes_fetched`` stays 0; nothing is worth reading ahead)."""

    bytes_fetched = 0
    read_ahead = 0
    KEPT = 1024  # episodes' assembled views kept (a few KB each: no frame is copied)

    def __init__(self, folder: Path, ted: TedRecord) -> None:
        self.folder, self.ted = folder, ted
        self._finals = set(final_files_of(ted))
        self._frames = frame_files(ted)
        self._checksums = checksum_files(ted)
        self.verify = Settings.from_env().verify_frames
        self._maps: dict[str, Rows] = {}
        self._views: OrderedDict[tuple[int, int], TensorDictBase] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_maps": {}, "_views": OrderedDict(), "_lock": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def _mapped(self, file: str) -> Rows:
        if file not in self._maps:
            if file in self._frames:
                shape, dtype, videos = self._frames[file]
                self._maps[file] = open_frames(
                    self.folder / file, shape, dtype, videos, self.folder,
                    checksums=self._checksums.get(file), verify=self.verify,
                )  # fmt: skip
            else:
                self._maps[file] = PlainRows(_map(self.folder / file).numpy())
        return self._maps[file]

    def episodes(self) -> pa.Table:
        return pq.read_table(self.folder / EPISODES)

    def file_rows(self, file: str) -> Rows:
        """Every row of ``file``, memory-mapped (indexing reads the rows it picks; an encoded
        camera's decodes them)."""
        return self._mapped(file)

    def whole(self, next_obs: str = "view") -> TensorDictBase:
        """Every step (see :func:`open_ted` for the keys and ``next_obs``)."""
        return assemble(self.ted, self._mapped, self.ted.rows, next_obs)

    def read(self, start: int, length: int) -> TensorDictBase:
        """Steps ``[start, start + length)``, assembled as :class:`RangeRows` assembles them
        (views of the maps, kept for the next epoch's read of the same episode)."""
        key = (start, length)
        with self._lock:
            kept = self._views.get(key)
            if kept is not None:
                self._views.move_to_end(key)
                return kept
        view = self._assemble(start, length)
        with self._lock:
            self._views[key] = view
            while len(self._views) > self.KEPT:
                self._views.popitem(last=False)
        return view

    def _assemble(self, start: int, length: int) -> TensorDictBase:
        def rows_of(file: str) -> Rows:
            full = self._mapped(file)
            if file in self._finals:
                return full
            extra = 1 if len(full) == self.ted.rows + 1 else 0  # observation files
            return full.window(start, start + length + extra)

        return assemble(self.ted, rows_of, length)
