"""Where a warehouse's artifacts live, and the work of reading and writing them.

- :mod:`.base`: :class:`Root` (what a root does) and :class:`Artifact` (one published folder).
- :mod:`.local`: a local folder.
- :mod:`.bucket`: ``gs://bucket/prefix`` (only this package imports it).
- :mod:`.parse`: :func:`parse_root`, the one parse of a root setting.
"""

from episode_warehouse.storage.base import Artifact, Root
from episode_warehouse.storage.parse import parse_root, root_setting

__all__ = ["Artifact", "Root", "parse_root", "root_setting"]
