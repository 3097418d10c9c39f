"""Decoded episodes: one partition's real steps in stream order, source-independent.

Layout of a decoded folder (``<root>/decoded/<source>/<partition>/``)::

    meta.json            # written last: rows, episodes, arrays (shape, dtype, role), lineage
    episodes.parquet     # one row per episode fragment (start, length, flags, instruction, ...)
    arrays/<key>.npy     # one .npy per step key; role "observation" arrays have rows+1 rows,
                         # the extra last row all zeros, so that rows [1, rows] are "next"

Roles: ``observation`` (stored once; TED's ("next", key) is the same file shifted by one),
``reward``, ``terminal`` and ``step`` (any other per-step value, kept at the TED root).
"""

from episode_warehouse.decoded.format import ArraySpec, DecodedEpisodes, open_decoded, open_previous
from episode_warehouse.decoded.writer import DecodedWriter

__all__ = ["ArraySpec", "DecodedEpisodes", "DecodedWriter", "open_decoded", "open_previous"]
