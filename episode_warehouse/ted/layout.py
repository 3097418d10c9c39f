"""Names and constants of the TED folder format."""

from __future__ import annotations

from episode_warehouse.decoded.format import EPISODES
from episode_warehouse.ted.record import TedRecord

FORMAT_ID = TedRecord.format_id()  # an input of the TED stage: a new version rebuilds it
__all__ = ["ARRAY", "EPISODES", "FORMAT_ID", "NEXT_OF", "UNSQUEEZE", "ZEROS"]

# How a TED key is stored (the "kind" of an entry in meta.json "keys"):
# Keys that are not measured values, by where they come from (each consumer leaves out the
# groups that are not values to it: the audit all, the export what LeRobot computes itself)
IDS = ("episode", "is_init", "task_index")  # the TED's own, each step's episode and task
END_FLAGS = ("done", "terminated", "truncated")  # how a step ends
SOURCE_IDS = ("episode_index", "index", "frame_index")  # LeRobot's row ids
SOURCE_FLAGS = ("is_first", "is_last", "is_terminal")  # RLDS's step flags
BOOKKEEPING = frozenset(IDS + END_FLAGS + SOURCE_IDS + SOURCE_FLAGS)

ARRAY = "array"  # the file as it is
UNSQUEEZE = "unsqueeze"  # the file with a trailing singleton dim added (N,) -> (N, 1)
NEXT_OF = "next_of"  # rows [1, N] of an observation file, zeros on each episode's last step
ZEROS = "zeros"  # all False / 0, not stored (root done, terminated, truncated)
