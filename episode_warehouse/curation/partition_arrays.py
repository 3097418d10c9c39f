"""A partition's TED files as arrays for the curation passes: numeric per-step leaves as
``(rows, d)`` views and cameras as their stored rows (encoded frames or raw pixels),
memory-mapped, with the episodes' starts and lengths; and the **sample** of frames the passes
decode: each camera's frames at :data:`SAMPLE_FRACTIONS` of every episode, each decoded once
into a small grey preview (:func:`~episode_warehouse.frames.codec.decode_preview`: a JPEG at
1/8 of each side) that the audit checks and the perceptual hashes read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.plain_rows import Rows
from episode_warehouse.ted.assemble import MappedRows
from episode_warehouse.ted.cameras import declared_images, image_layout
from episode_warehouse.ted.files import read_meta
from episode_warehouse.ted.layout import ARRAY, BOOKKEEPING, EPISODES, UNSQUEEZE
from episode_warehouse.ted.record import TedRecord

SAMPLE_FRACTIONS = (0.25, 0.5, 0.75)  # of each episode: the frames decoded, per camera


def _is_camera(key: str, rows: Rows, declared: dict[str, str] | None) -> bool:
    """Whether TED key ``key`` is a camera: ``ted/cameras.py``'s answer (the one the export,
    the viewer and the standardized stage share), asked of the rows' shape and dtype."""
    parts = tuple(key.split("/"))
    if parts[0] != "observation":
        return False
    probe = torch.empty((0, *rows.row_shape), dtype=torch.from_numpy(np.zeros(0, rows.dtype)).dtype)
    return image_layout(parts[1:], probe, declared) is not None


@dataclass
class PartitionArrays:
    """The rows of one TED folder, by TED key (``"action"``, ``"observation/image"``)."""

    folder: Path
    meta: TedRecord
    starts: np.ndarray
    lengths: np.ndarray
    numeric: dict[str, np.ndarray] = field(default_factory=dict)  # (rows, d), any dtype
    cameras: dict[str, Rows] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)  # text leaf -> its lookup table
    text_rows: dict[str, np.ndarray] = field(default_factory=dict)  # text leaf -> (rows,) index
    instructions: list[str | None] = field(default_factory=list)  # per episode (its table's)
    _previews: dict[tuple[str, int], np.ndarray | CorruptInputError] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def open(cls, folder: Path) -> PartitionArrays:
        folder = Path(folder)
        meta = read_meta(folder)
        table = pq.read_table(folder / EPISODES)
        episodes = table.select(["start", "length"])
        mapped = MappedRows(folder, meta)
        texts = {k: list(v) for k, v in meta.extra.get("texts", {}).items()}
        out = cls(
            folder,
            meta,
            episodes.column("start").to_numpy().astype(np.int64),
            episodes.column("length").to_numpy().astype(np.int64),
            texts=texts,
            instructions=(
                table.column("language_instruction").to_pylist()
                if "language_instruction" in table.column_names
                else [None] * table.num_rows
            ),
        )
        declared = declared_images(meta)
        for key, entry in sorted(meta.keys.items()):
            if entry["kind"] not in (ARRAY, UNSQUEEZE) or key.rsplit("/", 1)[-1] in BOOKKEEPING:
                continue
            rows = mapped.file_rows(entry["file"]).window(0, meta.rows)
            if _is_camera(key, rows, declared):
                out.cameras[key] = rows
            elif key.rsplit("/", 1)[-1] not in texts and key not in texts:
                out.numeric[key] = np.asarray(rows).reshape(meta.rows, -1)
            else:
                out.text_rows[key] = np.asarray(rows).reshape(meta.rows, -1)[:, 0]
        return out

    @property
    def rows(self) -> int:
        return self.meta.rows

    def sample_rows(self, start: int, n: int) -> list[int]:
        """The rows of an episode whose frames are decoded (one per sample fraction)."""
        return [start + min(n - 1, int(f * n)) for f in SAMPLE_FRACTIONS] if n else []

    def preview(self, key: str, row: int) -> np.ndarray | CorruptInputError:
        """The grey preview of camera ``key``'s frame ``row`` (decoded once), or the error
        that its bytes gave."""
        if (key, row) not in self._previews:
            try:
                self._previews[key, row] = self.cameras[key].preview(row)
            except CorruptInputError as exc:
                self._previews[key, row] = exc
        return self._previews[key, row]

    def episode_texts(self, episode: int) -> list[str]:
        """The distinct ``key=text`` of episode ``episode`` (its row in the episode table): its
        instruction and its text leaves' strings, sorted."""
        start, n = int(self.starts[episode]), int(self.lengths[episode])
        found = set()
        if self.instructions and self.instructions[episode] is not None:
            found.add(f"language_instruction={self.instructions[episode]}")
        for key, rows in self.text_rows.items():
            table = self.texts.get(key) or self.texts.get(key.rsplit("/", 1)[-1]) or []
            for index in np.unique(rows[start : start + n]).tolist():
                if 0 <= index < len(table):
                    found.add(f"{key}={table[index]}")
        return sorted(found)

    def floats(self, prefix: str) -> list[tuple[str, np.ndarray]]:
        """Floating-point leaves whose key is ``prefix`` or under it."""
        return [
            (k, v)
            for k, v in self.numeric.items()
            if (k == prefix or k.startswith(prefix + "/")) and v.dtype.kind == "f"
        ]
