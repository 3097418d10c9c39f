"""Partitions: Atari game/run (the 300 keys of the DQN Replay Dataset), OpenX datasets and
LeRobot datasets (dynamic), named export selections (dynamic)."""

import dagster as dg

from episode_warehouse.sources.atari.games import PARTITION_KEYS

atari_runs = dg.StaticPartitionsDefinition(list(PARTITION_KEYS))
openx_datasets = dg.DynamicPartitionsDefinition(name="openx_datasets")
lerobot_datasets = dg.DynamicPartitionsDefinition(name="lerobot_datasets")  # repo ids owner/name
lerobot_selections = dg.DynamicPartitionsDefinition(name="lerobot_selections")
