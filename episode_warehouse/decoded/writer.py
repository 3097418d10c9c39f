"""Write a decoded-episodes folder: preallocated or appended arrays, metadata last.

Every decoder writes through :class:`DecodedWriter`, so the rule on values lives here once:
floating-point actions, states (float observations) and rewards must be finite, or the episode
is refused naming the source, file, episode, step and key; NaN or infinity in any other float
key is refused too unless ``EPISODE_WAREHOUSE_ALLOW_NONFINITE`` names the key, and then it is
counted in the record (``nonfinite``) and shown with the materialization (``nonfinite_values``).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.atomic import copy_range
from episode_warehouse.decoded.format import (
    ARRAYS,
    DEPTH,
    EPISODES,
    FINAL,
    ROLES,
    ArraySpec,
    DecodedEpisodes,
)
from episode_warehouse.decoded.frame_writer import FrameAppender, encode_allocated
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.frames.camera_rows import CameraRows
from episode_warehouse.guards.numbers import check_finite, nonfinite_rows
from episode_warehouse.records import RECORD
from episode_warehouse.settings import ALLOW_NONFINITE_ENV, ENCODED, Settings

_PREAMBLE = 4096  # bytes reserved for the .npy header of appended arrays: one page, so rows of a
# whole number of pages (a 256x320 RGB frame is 60) stay page-aligned and copy_file_range can
# share them (reflink) instead of copying


def _npy_header(dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
    """An .npy v1.0 header padded to exactly ``_PREAMBLE`` bytes."""
    body = repr(
        {
            "descr": np.lib.format.dtype_to_descr(dtype),
            "fortran_order": False,
            "shape": tuple(shape),
        }
    )
    pad = _PREAMBLE - 10 - len(body) - 1
    if pad < 0:
        raise ValueError(f"array header too long: {body}")
    return (
        b"\x93NUMPY\x01\x00"
        + struct.pack("<H", _PREAMBLE - 10)
        + (body + " " * pad + "\n").encode("latin1")
    )


class _Appender:
    """An .npy file that grows row by row; the header is written when it is closed."""

    def __init__(self, path: Path, spec: ArraySpec) -> None:
        self.spec = spec
        self.dtype = np.dtype(spec.dtype)
        self.rows = 0
        self.fh = open(path, "wb")  # noqa: SIM115 - closed in close(), after the last append
        self.fh.write(b"\0" * _PREAMBLE)

    def append(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype)
        if values.shape[1:] != self.spec.row_shape:
            raise ValueError(
                f"{self.spec.key}: rows of shape {values.shape[1:]}, expected {self.spec.row_shape}"
            )
        self.fh.write(values.data)  # the array's own buffer: no intermediate copy
        self.rows += len(values)

    def append_range(self, src: Path, offset: int, rows: int) -> None:
        """Append ``rows`` rows stored at byte ``offset`` of file ``src`` (of this row layout),
        copied by the kernel (``copy_file_range``: no pass through this process's memory; a
        reflink where the file system has them)."""
        nbytes = rows * int(np.prod(self.spec.row_shape)) * self.dtype.itemsize
        self.fh.flush()
        with open(src, "rb") as source:
            copy_range(source.fileno(), self.fh.fileno(), offset, nbytes)
        self.fh.seek(0, os.SEEK_END)
        self.rows += rows

    def close(self) -> int:
        rows = self.rows
        if self.spec.role == "observation":
            self.fh.write(b"\0" * (int(np.prod(self.spec.row_shape)) * self.dtype.itemsize))
            rows += 1
        self.fh.seek(0)
        self.fh.write(_npy_header(self.dtype, (rows, *self.spec.row_shape)))
        self.fh.close()
        return self.rows


# a record is read whole by every reader (guards.json_input refuses documents over 64 MB); the
# later stages' records carry its tables too, and a bucket's adds its list of files
MAX_RECORD_CHARS = 16 << 20


class DecodedWriter:
    """Fill one staging folder with arrays and episodes, then :meth:`finish` writes meta.json.

    Arrays are either preallocated with a known row count (:meth:`allocate`, for writers that
    fill rows out of order or from several workers) or appended (:meth:`append`, for streams of
    unknown length).

    Cameras: a decoder hands a camera's rows over as :class:`~episode_warehouse.frames.
    camera_rows.CameraRows` (or allocates it with ``camera=True``). With ``frames="encoded"``
    (the default, ``EPISODE_WAREHOUSE_FRAMES``) they are stored encoded: the source's bytes
    where it gave them, else compressed once; with ``"decoded"`` as ``.npy`` pixels.
    """

    def __init__(self, folder: Path, frames: str | None = None) -> None:
        self.folder = Path(folder)
        (self.folder / ARRAYS).mkdir(parents=True, exist_ok=True)
        self.specs: dict[str, ArraySpec] = {}
        self.rows: int | None = None
        self.frames = frames or Settings.from_env().frames
        self._appenders: dict[str, _Appender] = {}  # rows as they are
        self._frame_appenders: dict[str, FrameAppender] = {}  # cameras' frames, encoded
        self._to_encode: list[str] = []  # allocated cameras, encoded when finished

    def _register(self, spec: ArraySpec) -> Path:
        if spec.role not in ROLES:
            raise ValueError(f"unknown role {spec.role!r}")
        name = _name(spec)
        if name in self.specs and self.specs[name] != spec:
            raise ValueError(f"{spec.key}: already registered as {self.specs[name]}")
        self.specs[name] = spec
        path = spec.path(self.folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def allocate(self, spec: ArraySpec, rows: int, *, camera: bool = False) -> Path:
        """Create a zero-filled (sparse) array of ``rows`` rows (+1 for observations); a
        ``camera`` is encoded when the folder is finished (frames stored encoded)."""
        path = self._register(spec)
        if camera and self.frames == ENCODED:
            self._to_encode.append(_name(spec))
        total = rows + (1 if spec.role == "observation" else 0)
        arr = np.lib.format.open_memmap(
            path, mode="w+", dtype=np.dtype(spec.dtype), shape=(total, *spec.row_shape)
        )
        del arr
        self._set_rows(rows)
        return path

    def put(self, spec: ArraySpec, values: np.ndarray) -> None:
        """Write a whole array at once (small per-step arrays)."""
        path = self._register(spec)
        values = np.asarray(values, dtype=np.dtype(spec.dtype))
        if spec.role == "observation":
            values = np.concatenate([values, np.zeros((1, *spec.row_shape), values.dtype)])
            self._set_rows(len(values) - 1)
        else:
            self._set_rows(len(values))
        with open(path, "wb") as fh:
            np.lib.format.write_array(fh, values, allow_pickle=False)

    def append(self, spec: ArraySpec, values: np.ndarray | CameraRows) -> None:
        """Append rows to ``spec.key``; all keys must end with the same row count (a ``final``
        array: one row per episode). A camera's rows come as ``CameraRows``."""
        if isinstance(values, CameraRows):
            if self.frames == ENCODED and spec.role != FINAL:
                self._frame_appender(spec).append(values)
                return
            values = values.pixels
        self._appender(spec).append(values)

    def append_from(
        self, spec: ArraySpec, previous: DecodedEpisodes, start: int, rows: int
    ) -> None:
        """Append ``rows`` rows of ``spec.key`` from row ``start`` of the ``previous`` build,
        copied by the kernel (an encoded camera's bytes are copied as they are: nothing is
        decoded or encoded again)."""
        old = previous.arrays[_name(spec)]
        if old.encoding:
            offsets = np.load(old.offsets_path(previous.folder), mmap_mode="r")
            self._frame_appender(spec).append_from(
                old.path(previous.folder), offsets[start : start + rows + 1]
            )
        else:
            self._appender(spec).append_range(*previous.rows_at(_name(spec), start), rows)

    def _appender(self, spec: ArraySpec) -> _Appender:
        name = _name(spec)
        if name in self._frame_appenders:
            raise ValueError(f"{spec.key}: its rows were stored as encoded frames until now")
        if name not in self._appenders:
            self._appenders[name] = _Appender(self._register(spec), spec)
        return self._appenders[name]

    def _frame_appender(self, spec: ArraySpec) -> FrameAppender:
        name = _name(spec)
        if name in self._appenders:
            raise ValueError(f"{spec.key}: its rows were stored as pixels until now")
        if name not in self._frame_appenders:
            encoded = spec.encoded()
            self._register(encoded)
            self._frame_appenders[name] = FrameAppender(self.folder, encoded)
        return self._frame_appenders[name]

    def _set_rows(self, rows: int) -> None:
        if self.rows is not None and self.rows != rows:
            raise ValueError(f"row count {rows} differs from {self.rows}")
        self.rows = rows

    def close_arrays(self) -> None:
        """Close the appended arrays (their headers written): they can be opened from here on."""
        for name, frames in self._frame_appenders.items():
            rows = frames.close()
            self.specs[name] = frames.spec  # it now names its video files
            if frames.spec.role != FINAL:
                self._set_rows(rows)
        for appender in self._appenders.values():
            rows = appender.close()
            if appender.spec.role != FINAL:
                self._set_rows(rows)
        self._appenders.clear()
        self._frame_appenders.clear()

    def finish(self, episodes: pa.Table, meta: dict) -> DecodedRecord:
        """Close appended arrays, check their values, write episodes.parquet, then meta.json
        (the commit marker). ``meta``: the decoder's fields (lineage, tasks, a source's own).

        Raises:
            CorruptInputError: a non-finite action, state or reward, or another float key's
                when ``EPISODE_WAREHOUSE_ALLOW_NONFINITE`` does not name it.
        """
        self.close_arrays()
        if self.rows is None:
            self.rows = 0
        for name in self._to_encode:
            self.specs[name] = encode_allocated(self.folder, self.specs[name])
        for spec in self.specs.values():
            if spec.encoding:
                continue  # cameras: the appender counted their rows
            rows = np.load(spec.path(self.folder), mmap_mode="r").shape[0]
            if spec.role == FINAL and rows != episodes.num_rows:
                raise ValueError(f"{spec.key}: {rows} final rows for {episodes.num_rows} episodes")
        counted = self._check_values(episodes, meta)
        if counted:
            meta = {**meta, "nonfinite": counted}
        pq.write_table(episodes, self.folder / EPISODES)
        full = {
            **DecodedRecord.current(),
            "rows": self.rows,
            "episodes": episodes.num_rows,
            "arrays": {k: s.to_json() for k, s in sorted(self.specs.items())},
            **meta,
        }
        record = DecodedRecord.from_json(full, subject=str(self.folder / RECORD))
        text = json.dumps(record.fields_json(), indent=1, sort_keys=True, allow_nan=False)
        if len(text) > MAX_RECORD_CHARS:  # readers refuse it: never published
            from episode_warehouse.errors import LimitExceededError

            tables = sum(
                len(json.dumps(meta.get(k, {}), allow_nan=False)) for k in ("texts", "tasks")
            )
            raise LimitExceededError(
                f"the decoded record would hold {len(text):,} characters ({tables:,} of them "
                f"its tables of texts), over the {MAX_RECORD_CHARS:,} a reader takes",
                subject=str(self.folder),
                fix="lower the text limits (EPISODE_WAREHOUSE_LIMITS max_text_bytes, max_texts) "
                "or fix the source's texts",
            )
        (self.folder / RECORD).write_text(text)
        return record

    def _check_values(self, episodes: pa.Table, meta: dict) -> dict[str, int]:
        """The finite-values rule (module docstring); returns the allowed keys' counts."""
        subject = f"{meta.get('source', '?')} {meta.get('partition', '?')}"
        starts = episodes.column("start").to_numpy() if episodes.num_rows else np.zeros(0)
        order = np.argsort(starts, kind="stable")
        files = episodes.column("source_files").to_pylist() if episodes.num_rows else []
        ids = episodes.column("episode").to_pylist() if episodes.num_rows else []

        def locate(row: int) -> str:
            if not len(order):
                return f"row {row}"
            at = int(np.searchsorted(starts[order], row, side="right")) - 1
            i = int(order[max(0, at)])
            file = f" of {files[i][0]}" if files[i] else ""
            return f"episode {ids[i]}{file} step {row - int(starts[i])}"

        allowed = Settings.from_env().allow_nonfinite
        images = meta.get("images")
        depth = {k for k, v in images.items() if v == DEPTH} if isinstance(images, dict) else set()
        counted: dict[str, int] = {}
        for key, spec in sorted(self.specs.items()):
            if np.dtype(spec.dtype).kind not in "fc" or spec.encoding:
                continue
            values = np.load(spec.path(self.folder), mmap_mode="r")
            if key in depth:  # a depth camera's NaN or infinity is a missing reading: counted
                count, _ = nonfinite_rows(values, self.rows)
                if count:
                    counted[key] = count
                continue
            if spec.role == FINAL:
                check_finite(
                    values,
                    key=f"{key} (final observation)",
                    subject=subject,
                    locate=lambda e: f"the end of episode {ids[e] if e < len(ids) else e}",
                    fix="the source holds invalid measurements: remove the episode at the source",
                )
                continue
            if _measured(spec):
                check_finite(
                    values,
                    key=key,
                    subject=subject,
                    rows=self.rows,
                    locate=locate,
                    fix="the source holds invalid measurements: remove the episode at the source",
                )
                continue
            count, first = nonfinite_rows(values, self.rows)
            if not count:
                continue
            if key not in allowed and "*" not in allowed:
                raise CorruptInputError(
                    f"{key} has {count} NaN or infinite values (first at {locate(first)})",
                    subject=subject,
                    fix=f"if they mean something in this dataset, allow them: "
                    f"{ALLOW_NONFINITE_ENV}={key}",
                )
            counted[key] = count
        return counted


def _name(spec: ArraySpec) -> str:
    """The spec's name in ``meta.json`` ``arrays``: its key, ``final/<key>`` for a final row."""
    return f"{FINAL}/{spec.key}" if spec.role == FINAL else spec.key


def _measured(spec: ArraySpec) -> bool:
    """Actions, states (float observations) and rewards: never NaN or infinite."""
    head = spec.key.split("/", 1)[0]
    return spec.role in ("reward", "observation") or head in ("action", "reward", "state")
