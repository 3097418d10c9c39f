"""The sources the warehouse reads, one folder each (``atari``, ``openx``, ``lerobot``), and
their registry (:mod:`episode_warehouse.sources.registry`)."""
