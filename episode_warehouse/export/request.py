"""What an export is asked for, and the names it may take (light: the asset definitions and
the command line import it without the exporter's dependencies)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.partition_keys import export_name_of

__all__ = ["ExportRequest", "check_export_name", "partition_export_name", "selection_file"]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def check_export_name(name: str) -> str:
    """Export names become folder names and partition keys: letters, digits, ``_ . -``.

    Raises:
        PartitionKeyError: any other name.
    """
    if not _NAME_RE.match(name or ""):
        raise PartitionKeyError(
            "not a valid export name",
            subject=repr(name),
            fix="use letters, digits, '_', '.' and '-' (e.g. pong-top10)",
        )
    return name


def partition_export_name(source: str, key: str, *, video: bool = False) -> str:
    """The export of one whole partition (``<source>_lerobot_export``, ``warehouse drop``),
    :func:`~episode_warehouse.partition_keys.export_name_of`, checked like every export name.

    Raises:
        PartitionKeyError: a key whose name would not be an export name.
    """
    return check_export_name(export_name_of(source, key, video=video))


def selection_file(name: str) -> str:
    """Where the root keeps the SQL of the named selection ``name`` (``warehouse export``)."""
    return f"selections/{check_export_name(name)}.sql"


@dataclass(frozen=True)
class ExportRequest:
    """What to export: ``episodes`` rows (source, partition, episode, start, length)."""

    name: str
    root: str  # the folder holding the TEDs (a bucket root's local copy)
    episodes: list[tuple[str, str, int, int, int]]
    video: bool = False
    query: str | None = None

    @property
    def repo_id(self) -> str:
        return f"episode-warehouse/{self.name.replace('/', '_')}"

    def fingerprint(self) -> dict:
        return {
            "episodes": [list(e) for e in self.episodes],
            "video": self.video,
            "query": self.query,
        }
