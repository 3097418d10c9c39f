"""Names and constants of the TED folder format."""

from __future__ import annotations

FORMAT = "episode-warehouse-ted"
VERSION = 1
META = "meta.json"
EPISODES = "episodes.parquet"
SOURCES = ("atari", "openx")

# How a TED key is stored (the "kind" of an entry in meta.json "keys"):
ARRAY = "array"  # the file as it is
UNSQUEEZE = "unsqueeze"  # the file with a trailing singleton dim added (N,) -> (N, 1)
NEXT_OF = "next_of"  # rows [1, N] of an observation file, zeros on each episode's last step
ZEROS = "zeros"  # all False / 0, not stored (root done, terminated, truncated)
