"""Names and constants of the TED folder format."""

from __future__ import annotations

from episode_warehouse.decoded.format import EPISODES, META

FORMAT = "episode-warehouse-ted"
VERSION = 2
__all__ = ["ARRAY", "EPISODES", "FORMAT", "META", "NEXT_OF", "UNSQUEEZE", "VERSION", "ZEROS"]

# How a TED key is stored (the "kind" of an entry in meta.json "keys"):
ARRAY = "array"  # the file as it is
UNSQUEEZE = "unsqueeze"  # the file with a trailing singleton dim added (N,) -> (N, 1)
NEXT_OF = "next_of"  # rows [1, N] of an observation file; on each episode's last step the
# episode's row of the entry's "final" file when it has one (RL Unplugged), else zeros
ZEROS = "zeros"  # all False / 0, not stored (root done, terminated, truncated)
