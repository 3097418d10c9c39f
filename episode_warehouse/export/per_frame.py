"""The plain way to write a LeRobot dataset: ``add_frame`` for every frame, then ``save_episode``.

This is how TorchRL's LeRobot adapter writes, and the reference our export is checked against
(tests compare the two datasets byte for byte) and measured against (``bench.lerobot_export``).
"""

from __future__ import annotations

import os
from pathlib import Path

from episode_warehouse.export.episodes import create_dataset, export_episodes
from episode_warehouse.export.schema import schema_of
from episode_warehouse.storage import Root, parse_root


def write_per_frame(
    repo_id: str, root: Root | str | os.PathLike, rows: list, out: Path, *, video: bool = False
) -> int:
    """Write ``rows`` of the warehouse at ``root`` as a LeRobot dataset at ``out``; frames."""
    episodes = export_episodes(parse_root(root), rows)
    schema = schema_of(episodes[0], video)
    dataset = create_dataset(repo_id, schema, out, video)
    for episode in episodes:
        for frame in schema.frames(episode):
            frame["task"] = episode.task
            dataset.add_frame(frame)
        dataset.save_episode()
    dataset.finalize()
    return sum(e.length for e in episodes)
