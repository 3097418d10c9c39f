"""Partitions: Atari game/run (the 300 keys of the DQN Replay Dataset) and OpenX datasets."""

import dagster as dg

from episode_warehouse.atari.games import PARTITION_KEYS

atari_runs = dg.StaticPartitionsDefinition(list(PARTITION_KEYS))
openx_datasets = dg.DynamicPartitionsDefinition(name="openx_datasets")
lerobot_selections = dg.DynamicPartitionsDefinition(name="lerobot_selections")
