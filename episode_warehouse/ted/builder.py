"""Lay a decoded-episodes folder out as TED: hard links for the big arrays, small flag files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from episode_warehouse.atomic import link_or_copy
from episode_warehouse.decoded import DecodedEpisodes
from episode_warehouse.decoded.format import FINAL, VIDEOS
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.file_maps import map_bytes
from episode_warehouse.frames.rows import (
    FRAMES_SUFFIX,
    checksums_file,
    frame_checksums,
    offsets_file,
)
from episode_warehouse.records import RECORD
from episode_warehouse.ted.layout import ARRAY, EPISODES, NEXT_OF, UNSQUEEZE, ZEROS
from episode_warehouse.ted.record import TedRecord

log = logging.getLogger(__name__)
# lineage and lookup tables carried over from the decoded meta.json
_CARRIED = (
    "source",
    "partition",
    "source_url",
    "source_version",
    "source_files",
    "tasks",
    "texts",
    "fps",
    "robot_type",
    "feature_names",  # LeRobot: the source's features and their dimension names
    "images",  # the cameras a decoder declares: key -> "chw" or "gray" (export, viewer)
    "suffixes",
    "gaps",
    "capacity",
)


def _save(path: Path, values: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, values, allow_pickle=False)


def _check_truncations(truncated: np.ndarray, done: np.ndarray, folder: Path) -> None:
    """Recorded truncations fall on episodes' last steps only (an episode ends there)."""
    stray = np.flatnonzero(truncated & ~done)
    if len(stray):
        raise CorruptInputError(
            f"{len(stray)} truncations fall inside an episode (first at row {int(stray[0])})",
            subject=str(Path(folder) / EPISODES),
            fix="re-materialize the decoded stage of this partition",
        )


def build_ted(decoded: DecodedEpisodes, staging: Path, *, fps: float | None = None) -> TedRecord:
    """Write the TED folder of ``decoded`` into ``staging`` and return its record; ``fps``: the
    source's rate where the decoded record has none (Atari, OpenX), so the TED and the catalog
    say the same.

    Per step t: observation keys at the root and, shifted, under "next" (on an episode's last
    step: the source's final observation where it recorded one, ``final/<key>.npy``, one row
    per episode; else zeros: the observation after it is not in the data); reward under
    ("next", "reward"); terminal as ("next", "terminated"); ("next", "done") on each episode's
    last step; ("next", "truncated") as recorded where the source records truncations (role
    ``truncation``: a step may be both terminated and truncated), else done & ~terminated;
    ``is_init`` on first steps; ``episode`` ids
    (int32, as TorchRL's OpenX loader); root done/terminated/truncated all False.
    """
    staging = Path(staging)
    episodes = decoded.episodes()
    rows = decoded.rows
    starts = episodes.column("start").to_numpy()
    lengths = episodes.column("length").to_numpy()
    keys: dict[str, dict] = {}
    for key, spec in decoded.arrays.items():
        src = spec.path(decoded.folder)
        if spec.encoding:  # a camera's frames, encoded: linked as they are, never decoded here
            frames = f"{key}{FRAMES_SUFFIX}"
            link_or_copy(src, staging / frames)
            link_or_copy(spec.offsets_path(decoded.folder), staging / offsets_file(frames))
            if spec.role != "observation":
                raise CorruptInputError(
                    f"{key}: encoded frames of role {spec.role!r} (cameras are observations)",
                    subject=str(decoded.folder / RECORD),
                    fix="re-materialize the decoded stage of this partition",
                )
            sums = checksums_file(frames)  # each frame's CRC-32C: bit rot shows (the audit)
            offsets = np.load(staging / offsets_file(frames), mmap_mode="r")
            _save(staging / sums, frame_checksums(map_bytes(staging / frames), offsets))
            rows_of: dict = {"shape": list(spec.row_shape), "dtype": spec.dtype,
                             "checksums": sums}  # fmt: skip
            if spec.videos:  # a video camera: its files beside the TED, linked
                rows_of["videos"] = [f"{VIDEOS}/{name}" for name in spec.videos]
                for name in spec.videos:
                    link_or_copy(spec.video_path(decoded.folder, name), staging / VIDEOS / name)
            keys[key] = {"file": frames, "kind": ARRAY, "rows_plus_one": True, "frames": rows_of}
            keys[f"next/{key}"] = {"file": frames, "kind": NEXT_OF, "frames": rows_of}
        elif spec.role == "observation":
            link_or_copy(src, staging / f"{key}.npy")
            entry = {"file": f"{key}.npy", "kind": ARRAY, "rows_plus_one": True}
            keys[key] = entry
            keys[f"next/{key}"] = {"file": f"{key}.npy", "kind": NEXT_OF}
        elif spec.role == "reward":
            link_or_copy(src, staging / "next" / "reward.npy")
            keys["next/reward"] = {"file": "next/reward.npy", "kind": UNSQUEEZE}
        elif spec.role == "terminal":
            link_or_copy(src, staging / "next" / "terminated.npy")
            keys["next/terminated"] = {"file": "next/terminated.npy", "kind": UNSQUEEZE}
        elif spec.role == "truncation":
            link_or_copy(src, staging / "next" / "truncated.npy")
        elif spec.role == FINAL:  # named final/<key> in the decoded record
            link_or_copy(src, staging / FINAL / f"{spec.key}.npy")
        elif spec.role == "next":
            link_or_copy(src, staging / "next" / f"{key}.npy")
            keys[f"next/{key}"] = {"file": f"next/{key}.npy", "kind": UNSQUEEZE}
        else:
            link_or_copy(src, staging / f"{key}.npy")
            keys[key] = {"file": f"{key}.npy", "kind": ARRAY}

    for spec in decoded.arrays.values():  # the final rows, where the source has them
        if spec.role == FINAL:
            keys[f"next/{spec.key}"]["final"] = f"{FINAL}/{spec.key}.npy"

    ends = starts + lengths
    if int(lengths.sum()) != rows or (
        len(starts) and (starts[0] != 0 or (starts[1:] != ends[:-1]).any() or (lengths < 1).any())
    ):
        raise CorruptInputError(
            f"the episodes do not tile the {rows} rows (lengths sum to {int(lengths.sum())})",
            subject=str(decoded.folder / EPISODES),
            fix="re-materialize the decoded stage of this partition",
        )
    done = np.zeros(rows, dtype=bool)
    is_init = np.zeros(rows, dtype=bool)
    episode: np.ndarray = np.zeros(rows, dtype=np.int32)
    if len(starts):
        done[starts + lengths - 1] = True
        is_init[starts] = True
        episode = np.repeat(np.arange(len(starts), dtype=np.int32), lengths)
    terminated = (
        np.load(staging / "next" / "terminated.npy")
        if "next/terminated" in keys
        else np.zeros(rows, dtype=bool)
    )
    if "next/terminated" not in keys:
        _save(staging / "next" / "terminated.npy", terminated)
        keys["next/terminated"] = {"file": "next/terminated.npy", "kind": UNSQUEEZE}
    _save(staging / "next" / "done.npy", done)
    recorded = any(spec.role == "truncation" for spec in decoded.arrays.values())
    if recorded:  # as the source recorded them; an episode ends at a done step only
        _check_truncations(np.load(staging / "next" / "truncated.npy"), done, decoded.folder)
    else:
        _save(staging / "next" / "truncated.npy", done & ~terminated)
    _save(staging / "is_init.npy", is_init)
    _save(staging / "episode.npy", episode)
    keys["next/done"] = {"file": "next/done.npy", "kind": UNSQUEEZE}
    keys["next/truncated"] = {"file": "next/truncated.npy", "kind": UNSQUEEZE}
    keys["is_init"] = {"file": "is_init.npy", "kind": ARRAY}
    keys["episode"] = {"file": "episode.npy", "kind": ARRAY}
    for flag in ("done", "terminated", "truncated"):
        keys[flag] = {"kind": ZEROS, "shape": [1], "dtype": "bool"}

    pq.write_table(episodes, staging / EPISODES)
    carried = decoded.meta.to_json()
    record = TedRecord.from_json(
        {
            **TedRecord.current(),
            "rows": rows,
            "episodes": len(starts),
            "keys": dict(sorted(keys.items())),
            **{k: carried[k] for k in _CARRIED if k in carried},
            **({"fps": fps} if fps and not carried.get("fps") else {}),
        },
        subject=str(staging / RECORD),
    )
    (staging / RECORD).write_text(
        json.dumps(record.fields_json(), indent=1, sort_keys=True, allow_nan=False)
    )
    log.info("laid out TED: %d rows, %d episodes, %d keys", rows, len(starts), len(keys))
    return record
