"""The partition-key rules: which keys name usable folders, and the one structured form, the
shard range of a dataset built in parts (``droid@00000-00031``).

A key has one of three forms, told apart by :func:`key_form` from the key alone: a partition
(``Pong/5``, ``cmu_stretch``), a shard range (``droid@00000-00031``), or, for a dataset built as
ranges, the dataset's name (``droid``), which names no folder of its own; which of the last two a
plain name is depends on what is published (:mod:`episode_warehouse.ted.open` asks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.guards.names import MAX_SEGMENT_BYTES, name_problem

# a source folder: a registered source's name (episode_warehouse.sources.registry checks which)
SOURCE_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$", re.ASCII)
# a folder name the warehouse makes from a partition key, with room for the siblings that
# publishing it makes (".staging-<name>-<12 hex>", ".readers-<name>", ".lock-<name>")
MAX_FOLDER_NAME = MAX_SEGMENT_BYTES - 32


def check_source_name(source: str) -> str:
    """``source`` when it can be a source's folder name.

    Raises:
        PartitionKeyError: naming it.
    """
    if not isinstance(source, str) or not SOURCE_RE.fullmatch(source):
        raise PartitionKeyError(
            "not a source name (lowercase letters, digits, '_')", subject=repr(source)
        )
    return source


def export_name_of(source: str, partition: str, *, video: bool = False) -> str:
    """The name of a whole partition's LeRobot export: ``atari-Pong-5``,
    ``openx-droid.00000-00031`` (a range's ``@`` as ``.``: export names are letters, digits,
    ``_ . -``), ``...-video`` for the video export."""
    name = f"{source}-{partition.replace('/', '-').replace(SEPARATOR, '.')}"
    return name + ("-video" if video else "")


def partition_key_problem(source: str, partition: str) -> str | None:
    """Why ``partition`` cannot name every folder the warehouse will make for it (each stage's
    folders, one per segment; the catalog's, the whole key quoted; a LeRobot export's,
    :func:`export_name_of`), or None. Checked where a key enters, so a key is
    never refused after its first stages were published."""
    problem = name_problem(partition)
    if problem is not None:
        return problem
    names = [
        *((seg, "a segment") for seg in partition.split("/")),
        (quote(partition, safe=""), "its catalog folder name (the key quoted)"),
        (export_name_of(source, partition, video=True), "its LeRobot export's name"),
    ]
    for name, what in names:
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > MAX_FOLDER_NAME:
            return f"{what} would be {size} bytes, over the {MAX_FOLDER_NAME} a folder name may be"
    return None


def check_partition_key(source: str, partition: str) -> str:
    """``partition`` when :func:`partition_key_problem` finds none.

    Raises:
        PartitionKeyError: naming the key and the folder name that would not fit.
    """
    problem = partition_key_problem(source, partition)
    if problem is not None:
        raise PartitionKeyError(
            f"not a usable partition key: {problem}",
            subject=repr(partition),
            fix="use a shorter key of plain names (the warehouse makes folders of it)",
        )
    return partition


SEPARATOR = "@"
# ASCII digits only (``\d`` takes any script's): one spelling per range
_KEY_RE = re.compile(r"^([a-z0-9_]+)@([0-9]{5})-([0-9]{5})$", re.ASCII)


@dataclass(frozen=True)
class ShardRange:
    """Shards ``first`` to ``last`` (both included, in ``dataset_info.json``'s order) of
    ``dataset``: the partition ``<dataset>@<first>-<last>``, five digits each."""

    dataset: str
    first: int
    last: int

    @property
    def key(self) -> str:
        return f"{self.dataset}{SEPARATOR}{self.first:05d}-{self.last:05d}"


def dataset_of(key: str) -> str:
    """The dataset a partition key names (``droid`` for ``droid@00000-00031``)."""
    return key.split(SEPARATOR, 1)[0]


def parse_range(key: str) -> ShardRange | None:
    """The shard range a key names, or None for a whole dataset's key.

    Raises:
        PartitionKeyError: a key with ``@`` that is not ``dataset@NNNNN-NNNNN`` (first <= last).
    """
    if SEPARATOR not in key:
        return None
    match = _KEY_RE.fullmatch(key)
    if not match or int(match.group(2)) > int(match.group(3)):
        raise PartitionKeyError(
            "not a shard range key",
            subject=repr(key),
            fix="write DATASET@FIRST-LAST with five-digit shard indices, FIRST <= LAST, "
            "e.g. droid@00000-00031",
        )
    return ShardRange(match.group(1), int(match.group(2)), int(match.group(3)))


def key_form(key: str) -> str:
    """``"range"`` for a shard range's key (checked: :func:`parse_range`), else ``"name"``: a
    partition's key, or the name of a dataset built as ranges (what is published tells which).

    Raises:
        PartitionKeyError: a key with ``@`` that is not a range's.
    """
    return "range" if parse_range(key) is not None else "name"
