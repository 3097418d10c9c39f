"""Atari DQN Replay as a source: partitions ``<Game>/<run>``, 15 fps, the game as the task."""

from episode_warehouse.sources.atari.games import parse_partition_key
from episode_warehouse.sources.source import Source

FPS = 15  # 60 Hz emulator, frame skip 4

SOURCE = Source(
    name="atari",
    check_partition=parse_partition_key,
    fps=lambda partition: FPS,
    partition_task=lambda partition: partition.split("/")[0],
    describe="Atari DQN Replay (Dopamine checkpoints or RL Unplugged TFRecords), <Game>/<run>",
    rewards_are_scores=True,  # Dopamine logs the clipped change of the game's score
)
