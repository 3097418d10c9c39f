"""The decoded-episodes folder format: constants, array specs, and a reader."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.decoded.episode_table import EPISODE_DATA
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import FormatVersionError, NotMaterializedError
from episode_warehouse.frames.rows import FRAMES_SUFFIX, OFFSETS_SUFFIX, FrameRows, open_frames
from episode_warehouse.records import RECORD

FORMAT_ID = DecodedRecord.format_id()  # an input of the decode stage: a new version rebuilds it
EPISODES = "episodes.parquet"
ARRAYS = "arrays"
# observation: stored once, rows+1 rows; TED's ("next", key) is the same file shifted by one
# reward / terminal: ("next", "reward") / ("next", "terminated"); next: another ("next", key)
# truncation: ("next", "truncated") as the source recorded it (Minari: gymnasium's TimeLimit
#   may set it on the step that also terminates); without it truncated = done & ~terminated
# step: any other per-step value, at the TED root
# final: one row per episode, the observation after its last step where the source recorded it
#   (Minari's N+1th), at the same key as its observation; the TED's ("next", key) reads it there
ROLES = ("observation", "reward", "terminal", "truncation", "next", "step", "final")
FINAL = "final"
# the camera layouts a decoder declares in its record's ``images`` (key -> layout), carried to
# the TED: rows of (C, H, W) uint8, or a grey (H, W) uint8 observation
CHW = "chw"
GRAY = "gray"
# a depth camera: rows of (1, H, W) uint16 or float32 (TFDS's depth images); shown as depth by
# the viewer, exported as float32 values (never squeezed into 8 bits); a non-finite pixel is a
# missing reading, kept and counted (the record's ``nonfinite``), not refused
DEPTH = "depth"
FRAMES = "frames"  # an ArraySpec's encoding: a camera's frames stored encoded
VIDEOS = "videos"  # the folder of a video camera's files, beside its frames
_REBUILD = "re-materialize the decoded stage with this version of the warehouse"

# the per-episode columns every decoder writes: the catalog's, less partition and lineage
EPISODE_SCHEMA = EPISODE_DATA.arrow_schema


def episode_table(columns: dict) -> pa.Table:
    """A decoder's episodes as a table of :data:`EPISODE_SCHEMA`; columns a source does not
    have (RL Unplugged's ids for Dopamine and OpenX) are nulls."""
    n = len(columns["episode"])
    full = {
        f.name: columns[f.name] if f.name in columns else pa.nulls(n, f.type)
        for f in EPISODE_SCHEMA
    }
    return pa.table(full, schema=EPISODE_SCHEMA)


@dataclass(frozen=True)
class ArraySpec:
    """One per-step array: ``key`` uses ``/`` for nesting (``observation/image``).

    ``encoding`` is how the writer stored it, not what a decoder declares (so it takes no part
    in comparing layouts): ``""``, an ``.npy`` array; ``FRAMES``, a camera's frames encoded
    (``<key>.frames`` and ``<key>.offsets.npy``, :mod:`episode_warehouse.frames.rows`)."""

    key: str
    row_shape: tuple[int, ...]
    dtype: str
    role: str
    encoding: str = field(default="", compare=False)
    videos: tuple[str, ...] = field(default=(), compare=False)  # a video camera's files

    def path(self, folder: Path) -> Path:
        if self.role == FINAL:
            return folder / ARRAYS / FINAL / f"{self.key}.npy"
        return folder / ARRAYS / f"{self.key}{FRAMES_SUFFIX if self.encoding else '.npy'}"

    def offsets_path(self, folder: Path) -> Path:
        """The offsets of an encoded camera's frames."""
        return folder / ARRAYS / f"{self.key}{OFFSETS_SUFFIX}"

    def video_path(self, folder: Path, name: str) -> Path:
        """Where a video camera's file ``name`` is kept (``arrays/videos/<name>``)."""
        return folder / ARRAYS / VIDEOS / name

    def encoded(self) -> ArraySpec:
        return replace(self, encoding=FRAMES)

    def to_json(self) -> dict:
        encoding = {"encoding": self.encoding} if self.encoding else {}
        videos = {"videos": list(self.videos)} if self.videos else {}
        return {"shape": list(self.row_shape), "dtype": self.dtype, "role": self.role,
                **encoding, **videos}  # fmt: skip

    @classmethod
    def from_json(cls, name: str, obj: dict) -> ArraySpec:
        """The spec of ``meta.json`` ``arrays[name]`` (a final row's name is ``final/<key>``)."""
        key = name.removeprefix(f"{FINAL}/") if obj["role"] == FINAL else name
        return cls(key, tuple(obj["shape"]), obj["dtype"], obj["role"], obj.get("encoding", ""),
                   tuple(obj.get("videos", ())))  # fmt: skip


@dataclass(frozen=True)
class DecodedEpisodes:
    """A published decoded folder, opened lazily (arrays are memory-mapped on request)."""

    folder: Path
    meta: DecodedRecord

    @property
    def rows(self) -> int:
        return self.meta.rows

    @property
    def arrays(self) -> dict[str, ArraySpec]:
        return {k: ArraySpec.from_json(k, v) for k, v in self.meta.arrays.items()}

    def array(self, key: str) -> np.ndarray | FrameRows:
        """The memory-mapped array of ``key`` (rows+1 rows for observations); an encoded
        camera's rows, decoded when indexed."""
        spec = self.arrays[key]
        if spec.encoding:
            names = [f"{ARRAYS}/{VIDEOS}/{v}" for v in spec.videos]
            return open_frames(
                spec.path(self.folder), spec.row_shape, spec.dtype, names, self.folder
            )
        return np.load(spec.path(self.folder), mmap_mode="r")

    def rows_at(self, key: str, row: int) -> tuple[Path, int]:
        """The file of ``key`` and the byte offset of its row ``row`` in it."""
        array = self.array(key)
        if not isinstance(array, np.memmap):
            raise FormatVersionError(
                f"{key} is not a plain .npy array", subject=str(self.folder), fix=_REBUILD
            )
        return self.arrays[key].path(self.folder), array.offset + row * array.strides[0]

    def episodes(self) -> pa.Table:
        return pq.read_table(self.folder / EPISODES)


def open_decoded(folder: Path) -> DecodedEpisodes:
    """Open a published decoded folder.

    Raises:
        NotMaterializedError: the folder has no ``meta.json`` (never built).
    """
    meta_path = Path(folder) / RECORD
    if not meta_path.is_file():
        raise NotMaterializedError(
            "decoded episodes are not materialized",
            subject=str(folder),
            fix="materialize the decoded stage of this partition first",
        )
    data = json.loads(meta_path.read_text())
    meta = DecodedRecord.from_json_checked(data, subject=str(meta_path), fix=_REBUILD)
    return DecodedEpisodes(Path(folder), meta)


def open_previous(folder: Path) -> DecodedEpisodes | None:
    """The decoded folder published at ``folder`` in this format, or None (never built, or
    built in another format version): what an incremental decoder may copy from."""
    try:
        return open_decoded(folder)
    except (NotMaterializedError, FormatVersionError):
        return None
