"""Minari partition keys: dataset ids ``namespace/env/name-vN`` (``D4RL/door/human-v2``)."""

from __future__ import annotations

import re

from episode_warehouse.errors import PartitionKeyError

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")
_LAST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*-v\d+$")
MAX_SEGMENTS = 6


def check_dataset_id(key: str) -> str:
    """A Minari dataset id: at least a namespace and ``<name>-v<N>``, each segment of letters,
    digits, ``_``, ``.``, ``-`` (no ``..``, no empty segment), as Minari names them.

    Raises:
        PartitionKeyError: not of that shape (it could name a folder outside its own).
    """
    parts = key.split("/") if isinstance(key, str) else []
    if (
        not 2 <= len(parts) <= MAX_SEGMENTS
        or not all(_SEGMENT.match(p) and ".." not in p for p in parts)
        or not _LAST.match(parts[-1])
    ):
        raise PartitionKeyError(
            "not a Minari dataset id",
            subject=repr(key),
            fix="use namespace/env/name-vN, e.g. D4RL/door/human-v2 or "
            "mujoco/halfcheetah/expert-v0",
        )
    return key


def hub_repo(dataset_id: str) -> tuple[str, str]:
    """(the repo name under the hub organization, the dataset's folder in it): Minari keeps a
    repo per first path component (``D4RL``) holding ``door/human-v2/``."""
    first, _, rest = check_dataset_id(dataset_id).partition("/")
    return first, rest
