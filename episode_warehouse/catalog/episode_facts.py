"""Per-episode facts a robot dataset records, as typed catalog columns (DROID's, first).

Each column is defined once here (and in docs/catalog.md); NULL where a dataset records nothing
of the kind:

- ``success``: DROID files every episode under ``/success/`` or ``/failure/``; success is
  ``"/success/" in episode_metadata/file_path``, as DROID's own policy-learning code
  (robomimic ``rlds_utils``) and lerobot's port read it.
- ``building``, ``collector_id``, ``recorded_on``: ``episode_metadata/building``,
  ``/collector_id`` and ``/date`` (a DATE when it reads as ``YYYY-MM-DD``).
- ``instructions``: every language instruction of the episode's first step, in leaf order
  (``language_instruction``, ``language_instruction_2``, ``_3``: DROID annotates three).
- ``nonidle_ranges``: openpi's idle filter (:mod:`~episode_warehouse.catalog.idle`) over
  ``action_dict/joint_velocity``: ``[start, stop)`` step ranges within the episode.
- ``nonidle_steps``: the steps those ranges hold.
"""

from __future__ import annotations

import json
import re
from datetime import date

import pyarrow as pa
from tensordict import TensorDictBase

from episode_warehouse.catalog.idle import nonidle_ranges

COLUMNS = (
    "success", "building", "collector_id", "recorded_on", "instructions", "nonidle_ranges",
    "nonidle_steps",
)  # fmt: skip
JOINT_VELOCITY = ("action_dict", "joint_velocity")
META = "episode_metadata/"
_EXTRA_INSTRUCTION = re.compile(r"^language_instruction_(\d+)$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def _date(text: object) -> date | None:
    match = _DATE.match(text) if isinstance(text, str) else None
    if not match:
        return None
    try:
        return date(*(int(g) for g in match.groups()))
    except ValueError:
        return None


def _text(metadata: dict, leaf: str) -> str | None:
    value = metadata.get(META + leaf)
    return value if isinstance(value, str) else None


def _extra_instruction_keys(td: TensorDictBase, texts: dict) -> list[str]:
    keys = td.keys()  # a TensorDict iterates over its rows, not its keys
    found = [k for k in keys if isinstance(k, str) and _EXTRA_INSTRUCTION.match(k)]
    return sorted((k for k in found if k in texts), key=lambda k: int(k.rsplit("_", 1)[1]))


def episode_fact_columns(
    td: TensorDictBase, episodes: pa.Table, texts: dict[str, list[str]]
) -> dict[str, pa.Array]:
    """The fact columns of a partition's episodes (``episodes``: its TED episode table;
    ``texts``: the TED's lookup tables of text leaves)."""
    starts = episodes.column("start").to_numpy()
    lengths = episodes.column("length").to_numpy()
    metadata = [json.loads(m) if m else {} for m in episodes.column("episode_metadata").to_pylist()]
    first = episodes.column("language_instruction").to_pylist()
    extra = _extra_instruction_keys(td, texts)
    extra_rows = {k: td.get(k).numpy() for k in extra}
    velocity = td.get(JOINT_VELOCITY).numpy() if JOINT_VELOCITY in td.keys(True, True) else None

    success: list[bool | None] = []
    building: list[str | None] = []
    collector: list[str | None] = []
    recorded: list[date | None] = []
    instructions: list[list[str] | None] = []
    ranges: list[list[list[int]] | None] = []
    kept: list[int | None] = []
    for i, (start, n) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        path = _text(metadata[i], "file_path")
        success.append(None if path is None else "/success/" in path)
        building.append(_text(metadata[i], "building"))
        collector.append(_text(metadata[i], "collector_id"))
        recorded.append(_date(metadata[i].get(META + "date")))
        said = [first[i]] if first[i] is not None else []
        said += [texts[k][int(extra_rows[k][start])] for k in extra if n]
        instructions.append(said or None)
        if velocity is None or not n:
            ranges.append(None)
            kept.append(None)
        else:
            pairs = nonidle_ranges(velocity[start : start + n])
            ranges.append([list(p) for p in pairs])
            kept.append(sum(b - a for a, b in pairs))
    return {
        "success": pa.array(success, pa.bool_()),
        "building": pa.array(building, pa.string()),
        "collector_id": pa.array(collector, pa.string()),
        "recorded_on": pa.array(recorded, pa.date32()),
        "instructions": pa.array(instructions, pa.list_(pa.string())),
        "nonidle_ranges": pa.array(ranges, pa.list_(pa.list_(pa.int64()))),
        "nonidle_steps": pa.array(kept, pa.int64()),
    }
