"""An RLDS dataset's ``dataset_info.json``: its splits and the shard files each one has.

TFDS writes one entry per split: ``name``, ``shardLengths`` (episodes per shard, as strings) and
``filepathTemplate`` (default ``{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}``, where
``SHARD_X_OF_Y`` is ``00003-of-01024``; ``SHARD_INDEX`` and ``NUM_SHARDS`` are the two halves).
The shard names are computed from it, never taken from the listing, so a shard the info names
that is missing, and a shard file the info does not name, are both found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.names import checked_segment

DEFAULT_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
MAX_SHARDS = 100_000  # per split; DROID, the largest OXE dataset, has 2,048
_TOKEN = re.compile(r"\{([A-Z_]+)\}")
_TOKENS = ("DATASET", "SPLIT", "FILEFORMAT", "SHARD_X_OF_Y", "SHARD_INDEX", "NUM_SHARDS")
_FIX = "dataset_info.json must be the file TFDS wrote for this dataset version"


@dataclass(frozen=True)
class ShardFile:
    """One shard: its file name, split, index in the split and episode count."""

    name: str
    split: str
    index: int
    episodes: int


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    version: str  # the version TFDS recorded (may differ from the folder's name)
    file_format: str
    shards: tuple[ShardFile, ...]

    @property
    def splits(self) -> list[str]:
        return sorted({s.split for s in self.shards})

    @property
    def episodes(self) -> int:
        return sum(s.episodes for s in self.shards)


def _format_name(template: str, values: dict[str, str], subject: str) -> str:
    def token(match: re.Match) -> str:
        if match.group(1) not in _TOKENS:
            raise CorruptInputError(
                f"filepathTemplate {template!r} uses {{{match.group(1)}}}, not one of {_TOKENS}",
                subject=subject,
                fix=_FIX,
            )
        return values[match.group(1)]

    return checked_segment(_TOKEN.sub(token, template), subject=subject, what="shard name")


def parse_dataset_info(doc: object, subject: str, *, dataset: str) -> DatasetInfo:
    """The shards of every split of a parsed ``dataset_info.json``.

    ``dataset`` is the folder's dataset name (``{DATASET}``; the info's ``name`` must agree).

    Raises:
        CorruptInputError: a file format other than TFRecord, a malformed split, a name that is
            not one safe file name, or more than :data:`MAX_SHARDS` shards in a split.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("splits"), list):
        raise CorruptInputError("dataset_info.json has no splits", subject=subject, fix=_FIX)
    name = doc.get("name", dataset)
    if name != dataset:
        raise CorruptInputError(
            f"dataset_info.json names the dataset {name!r}, the folder is {dataset!r}",
            subject=subject,
            fix="the folder holds another dataset's files; mirror it again",
        )
    file_format = str(doc.get("fileFormat") or "tfrecord")
    if file_format != "tfrecord":
        raise CorruptInputError(
            f"the shards are {file_format!r}; TFRecord shards are read",
            subject=subject,
            fix="use the dataset's TFRecord version (the Open X-Embodiment bucket's)",
        )
    shards: list[ShardFile] = []
    for entry in doc["splits"]:
        split = checked_segment(
            entry.get("name") if isinstance(entry, dict) else None, subject=subject, what="split"
        )
        try:
            lengths = [int(n) for n in entry.get("shardLengths", [])]
        except (TypeError, ValueError):
            raise CorruptInputError(
                f"split {split}: shardLengths is not a list of integers", subject=subject
            ) from None
        if len(lengths) > MAX_SHARDS or any(n < 0 for n in lengths):
            raise CorruptInputError(
                f"split {split}: {len(lengths)} shards or a negative length", subject=subject
            )
        template = str(entry.get("filepathTemplate") or DEFAULT_TEMPLATE)
        total = len(lengths)
        for index, episodes in enumerate(lengths):
            values = {
                "DATASET": dataset,
                "SPLIT": split,
                "FILEFORMAT": file_format,
                "SHARD_INDEX": f"{index:05d}",
                "NUM_SHARDS": f"{total:05d}",
                "SHARD_X_OF_Y": f"{index:05d}-of-{total:05d}",
            }
            shards.append(
                ShardFile(_format_name(template, values, subject), split, index, episodes)
            )
    names = [s.name for s in shards]
    if len(set(names)) != len(names):
        raise CorruptInputError("two shards have one file name", subject=subject, fix=_FIX)
    return DatasetInfo(str(name), str(doc.get("version", "")), file_format, tuple(shards))
