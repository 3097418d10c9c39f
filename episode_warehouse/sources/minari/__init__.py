"""Farama Minari datasets (D4RL's successors) as a source: partitions are dataset ids."""
