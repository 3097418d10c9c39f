"""Read a published TED: :class:`TedReader` (whole, memory-mapped; or the rows of an episode)
and :func:`open_ted`, the one-call way in."""

from __future__ import annotations

import difflib
import json
import logging
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tensordict import TensorDict, TensorDictBase

from episode_warehouse.errors import (
    CorruptInputError,
    NotMaterializedError,
    SourceMissingError,
    StaleSelectionError,
)
from episode_warehouse.frames.rows import FrameRows, open_frames
from episode_warehouse.frames.tensor import FrameTensor
from episode_warehouse.paths import artifact_name
from episode_warehouse.records import RECORD
from episode_warehouse.storage import Artifact, Root, parse_root
from episode_warehouse.ted.layout import ARRAY, EPISODES, NEXT_OF, UNSQUEEZE, ZEROS
from episode_warehouse.ted.next_view import NextObservation
from episode_warehouse.ted.record import TedRecord

if TYPE_CHECKING:
    from episode_warehouse.ted.ranges import RangeRows

log = logging.getLogger(__name__)


def _map(path: Path) -> torch.Tensor:
    # mode "c": a private copy-on-write mapping; pages are read lazily, writes never reach disk.
    try:
        array = np.load(path, mmap_mode="c")
    except (OSError, ValueError) as exc:
        raise CorruptInputError(
            f"a TED array cannot be read ({exc})",
            subject=str(path),
            fix="re-materialize the ted stage of this partition",
        ) from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.from_numpy(array)


NEXT_OBS = ("view", "copy")


def read_meta(folder: Path) -> TedRecord:
    """The TED record of ``folder``, checked for format and version."""
    meta_path = Path(folder) / RECORD
    if not meta_path.is_file():
        raise NotMaterializedError(
            "no TED here (meta.json is missing)",
            subject=str(folder),
            fix="materialize the ted stage of this partition, e.g. "
            "'warehouse materialize atari Pong/5 --through ted'",
        )
    meta = checked_record(json.loads(meta_path.read_text()), str(meta_path))
    folder = Path(folder)
    check_named_files(meta, lambda name: (folder / name).is_file(), str(meta_path))
    return meta


def checked_record(data: object, subject: str) -> TedRecord:
    """``data`` as a TED record of this format version.

    Raises:
        FormatVersionError: a TED of another format version.
        CorruptInputError: a field missing or of another type.
    """
    return TedRecord.from_json_checked(
        data, subject=subject, fix="re-materialize the ted stage with this warehouse version"
    )


def named_files(meta: TedRecord) -> list[str]:
    """Every file name a TED record gives: each key's file and final file, an encoded
    camera's offsets and video files, the episodes table."""
    from episode_warehouse.frames.rows import offsets_file

    names = {EPISODES, "next/done.npy"}
    for entry in meta.keys.values():
        for field in ("file", "final"):
            if field in entry:
                names.add(entry[field])
        if "frames" in entry:
            names.add(offsets_file(entry["file"]))
            names.update(entry["frames"].get("videos", []))
    return sorted(str(n) for n in names)


def check_named_files(meta: TedRecord, listed, subject: str) -> None:
    """Refuse a record naming any file that is not a relative name of its own version
    (``listed(name)``: the artifact's :meth:`~episode_warehouse.storage.Artifact.lists`): a
    record is written by whoever can write the root, and an absolute name or one with ``..``
    would make a reader open any file of this machine.

    Raises:
        CorruptInputError: naming the record and the name.
    """
    from episode_warehouse.guards.names import name_problem

    for name in named_files(meta):
        problem = name_problem(name)
        if problem is None and not listed(name):
            problem = "it is not a file of this version (not listed as published)"
        if problem is not None:
            raise CorruptInputError(
                f"the TED record names the file {name!r}: {problem}",
                subject=subject,
                fix="re-materialize the ted stage of this partition (the record was altered)",
            )


def final_files_of(meta: TedRecord) -> list[str]:
    """The per-episode files of final observations a TED's keys read (one row per episode)."""
    return sorted({e["final"] for e in meta.keys.values() if "final" in e})


def files_of(meta: TedRecord) -> list[str]:
    """The per-step files a TED's keys read (an encoded camera's frame file; its offsets are
    :func:`frame_files`' business)."""
    steps = {"next/done.npy"}
    for entry in meta.keys.values():
        if entry["kind"] != ZEROS:
            steps.add(entry["file"])
    return sorted(steps)


def frame_files(meta: TedRecord) -> dict[str, tuple[tuple[int, ...], str, list[str]]]:
    """The TED's cameras stored encoded: frame file -> (row shape, dtype, a video camera's
    files relative to the TED folder)."""
    return {
        e["file"]: (
            tuple(e["frames"]["shape"]),
            e["frames"]["dtype"],
            e["frames"].get("videos", []),
        )
        for e in meta.keys.values()
        if "frames" in e
    }


def open_ted_folder(folder: Path, next_obs: str = "view") -> TensorDictBase:
    """Open the TED at ``folder`` (see :func:`open_ted` for the keys and ``next_obs``)."""
    return MappedRows(Path(folder), read_meta(folder)).whole(next_obs)


def assemble(meta: TedRecord, tensor_of, rows: int, next_obs: str = "view") -> TensorDictBase:
    """The TensorDict of ``rows`` steps of a TED from its record and ``tensor_of(file)``: the
    rows of each per-step file (one more row for observation files; an encoded camera's as
    :class:`~episode_warehouse.frames.rows.FrameRows`, which become tensors that decode when
    indexed). A memory-mapped folder and the rows of one episode fetched from a bucket are
    assembled by this same code, so both give the same values."""
    if next_obs not in NEXT_OBS:
        raise ValueError(f"next_obs must be one of {NEXT_OBS}, not {next_obs!r}")
    leaves: dict[tuple[str, ...], torch.Tensor] = {}
    done = tensor_of("next/done.npy")
    for name, entry in meta.keys.items():
        key = tuple(name.split("/"))
        kind = entry["kind"]
        if kind == ZEROS:
            leaves[key] = torch.zeros(
                1, *entry["shape"], dtype=getattr(torch, entry["dtype"])
            ).expand(rows, *entry["shape"])
            continue
        tensor = tensor_of(entry["file"])
        if kind == ARRAY:
            if isinstance(tensor, FrameRows):  # an encoded camera: decoded when indexed
                leaves[key] = FrameTensor(tensor.window(0, rows))
            else:
                leaves[key] = tensor[:rows] if entry.get("rows_plus_one") else tensor
        elif kind == UNSQUEEZE:
            leaves[key] = tensor.unsqueeze(-1)
        elif kind == NEXT_OF:
            final = tensor_of(entry["final"]) if "final" in entry else None
            episode = tensor_of("episode.npy") if final is not None else None
            shifted = (
                FrameTensor(tensor.window(1, rows + 1))
                if isinstance(tensor, FrameRows)
                else tensor[1 : rows + 1]
            )
            view = NextObservation(shifted, done, final, episode)
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
        self._maps: dict[str, torch.Tensor | FrameRows] = {}
        self._views: OrderedDict[tuple[int, int], TensorDictBase] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_maps": {}, "_views": OrderedDict(), "_lock": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def _mapped(self, file: str) -> torch.Tensor | FrameRows:
        if file not in self._maps:
            if file in self._frames:
                shape, dtype, videos = self._frames[file]
                self._maps[file] = open_frames(
                    self.folder / file, shape, dtype, videos, self.folder
                )
            else:
                self._maps[file] = _map(self.folder / file)
        return self._maps[file]

    def episodes(self) -> pa.Table:
        return pq.read_table(self.folder / EPISODES)

    def file_rows(self, file: str) -> np.ndarray | FrameRows:
        """Every row of ``file``, memory-mapped (indexing reads the rows it picks; an encoded
        camera's decodes them)."""
        rows = self._mapped(file)
        return rows if isinstance(rows, FrameRows) else rows.numpy()

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
        def tensor_of(file: str) -> torch.Tensor | FrameRows:
            full = self._mapped(file)
            if file in self._finals:
                return full
            extra = 1 if len(full) == self.ted.rows + 1 else 0  # observation files
            if isinstance(full, FrameRows):
                return full.window(start, start + length + extra)
            return full[start : start + length + extra]

        return assemble(self.ted, tensor_of, length)


class TedReader:
    """One published TED version, read through its root: every consumer's way in (trainer
    loaders, the viewer, the standardized stage, exports).

    Where the files are on this machine (a folder root) rows are memory-mapped; elsewhere (a
    bucket) they are fetched as byte ranges of what is read (:mod:`~episode_warehouse.ted.
    ranges`), and :meth:`whole` fetches every file once into the reader cache, checked.
    """

    def __init__(self, artifact: Artifact, record: dict | None = None) -> None:
        record = artifact.read()[0] if record is None else record
        if not record:
            raise NotMaterializedError(
                "no TED here (its meta.json is missing)",
                subject=artifact.url,
                fix="materialize the ted stage of this partition, e.g. "
                "'warehouse materialize atari Pong/5 --through ted'",
            )
        self.artifact, self.record = artifact, record
        self.meta = checked_record(record, f"{artifact.url}/{RECORD}")
        check_named_files(
            self.meta, lambda name: artifact.lists(record, name), f"{artifact.url}/{RECORD}"
        )
        self._strategy: MappedRows | RangeRows | None = None

    @property
    def _rows(self) -> MappedRows | RangeRows:
        """How rows are read: memory-mapped where the files are on this machine, else by
        byte ranges (chosen at the first read)."""
        if self._strategy is None:
            folder = self.artifact.mapped(self.record)
            if folder is not None:
                self._strategy = MappedRows(folder, self.meta)
            else:
                from episode_warehouse.ted.ranges import RangeRows

                self._strategy = RangeRows(self.artifact, self.record, self.meta)
        return self._strategy

    @classmethod
    def of(cls, root: Root, source: str, partition: str) -> TedReader:
        """The current TED of ``source``/``partition`` in ``root``.

        Raises:
            PartitionKeyError: not a source name or partition key.
            NotMaterializedError: it was never built (naming the closest built partitions).
        """
        artifact = root.artifact(artifact_name("ted", source, partition))
        record = artifact.read()[0]
        if not record:
            depth = partition.count("/") + 1
            built = [
                rel.split("/", 2)[2] for rel in root.published(f"ted/{source}", depth)
            ]  # fmt: skip
            close = difflib.get_close_matches(partition, built, n=3, cutoff=0.5)
            raise NotMaterializedError(
                f"no TED of {source} {partition!r} in this warehouse"
                + (f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else "")
                + (
                    f"; built: {', '.join(built[:8])}{' ...' if len(built) > 8 else ''}"
                    if built
                    else ""
                ),
                subject=artifact.url,
                fix=f"materialize it: warehouse materialize {source} {partition} --through ted "
                "(or pass root= the warehouse that holds it)",
            )
        return cls(artifact, record)

    @property
    def rows(self) -> int:
        return self.meta.rows

    @property
    def bytes_fetched(self) -> int:
        """Bytes read from object storage so far (0 where the files are memory-mapped)."""
        return self._rows.bytes_fetched

    @property
    def read_ahead(self) -> int:
        """Episodes a stream should read ahead of the one it yields: 0 where rows are
        memory-mapped (a read is a view), a few where each read is a request."""
        return self._rows.read_ahead

    def episodes(self) -> pa.Table:
        """The TED's episodes table (episode, start, length, ...)."""
        return self._rows.episodes()

    def read(self, start: int, length: int) -> TensorDictBase:
        """Steps ``[start, start + length)`` as the TED's TensorDict (``("next",
        "observation")`` zeros on the last step of the TED, as :func:`open_ted`'s)."""
        return self._rows.read(start, length)

    def file_rows(self, file: str):
        """The rows of one of the TED's files (a camera's frames), as an array indexed by row
        numbers: ``reader.file_rows(f)[rows]`` reads the rows it picks, and only those."""
        return self._rows.file_rows(file)

    def whole(self, next_obs: str = "view") -> TensorDictBase:
        """Every step, memory-mapped from :meth:`folder` (the TED's record as read once)."""
        return MappedRows(self.folder(), self.meta).whole(next_obs)

    def folder(self) -> Path:
        """The folder of the TED's files on this machine: where they are, or fetched into the
        reader cache once per version, checked (a version replaced meanwhile and gone: the
        current one, which this reader then reads)."""
        for _ in range(3):
            try:
                return self.artifact.mapped(self.record) or self.artifact.fetch(self.record)
            except (StaleSelectionError, SourceMissingError):
                current = self.artifact.read()[0]
                if not current or current == self.record:
                    raise
                log.info("%s was republished; opening the new version", self.artifact.url)
                self.__init__(self.artifact, current)  # type: ignore[misc]
        return self.artifact.fetch(self.record)


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
    store = parse_root(root)
    try:
        reader = TedReader.of(store, source, partition)
    except NotMaterializedError:
        from episode_warehouse.ted.chunks import has_ranges, open_dataset_ted

        if not has_ranges(store, source, partition):
            raise
        return open_dataset_ted(source, partition, store, next_obs=next_obs)
    return reader.whole(next_obs)
