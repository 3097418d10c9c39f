"""LeRobot partition keys: hub repo ids ``owner/name``."""

from __future__ import annotations

from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.hub.url import is_repo_id


def check_repo_id(key: str) -> str:
    """A LeRobot partition key: a repo id ``owner/name``.

    Raises:
        PartitionKeyError: not of that shape (or ``..`` in it).
    """
    if not is_repo_id(key):
        raise PartitionKeyError(
            "not a LeRobot repo id",
            subject=repr(key),
            fix="use owner/name, e.g. lerobot/pusht (letters, digits, '_', '-', '.')",
        )
    return key
