"""LeRobot datasets as a source: partitions are repo ids, fps and tasks from ``info.json``."""

from episode_warehouse.sources.lerobot.repo_id import check_repo_id
from episode_warehouse.sources.source import Source

DEFAULT_FPS = 30  # only for a TED without a recorded fps; every imported TED records info.json's

SOURCE = Source(
    name="lerobot",
    check_partition=check_repo_id,
    fps=lambda partition: DEFAULT_FPS,
    describe="LeRobot v3.0 datasets (a folder or bucket of <owner>/<name>/), one repo id each",
)
