"""LeRobot partition keys: hub repo ids ``owner/name``."""

from __future__ import annotations

import re

from episode_warehouse.errors import PartitionKeyError

_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")


def check_repo_id(key: str) -> str:
    """A LeRobot partition key: a repo id ``owner/name``.

    Raises:
        PartitionKeyError: not of that shape (or ``..`` in it).
    """
    if not _REPO_RE.match(key or "") or ".." in key:
        raise PartitionKeyError(
            "not a LeRobot repo id",
            subject=repr(key),
            fix="use owner/name, e.g. lerobot/pusht (letters, digits, '_', '-', '.')",
        )
    return key
