"""Decode the shards of one OpenX dataset into a decoded-episodes folder, one episode at a time.

Memory is bounded by one episode (plus the reader's buffer) whatever the dataset size: each
episode is unpickled (restricted), decoded and appended to the arrays before the next is read
(``episode_sink`` says which key plays which role).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from episode_warehouse.decoded import DecodedEpisodes
from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.incremental import fingerprint
from episode_warehouse.limits import InputLimits
from episode_warehouse.progress import progress
from episode_warehouse.sources.openx.episode_decode import decode_episode
from episode_warehouse.sources.openx.episode_sink import EpisodeRow, EpisodeSink
from episode_warehouse.sources.openx.members import iter_members
from episode_warehouse.sources.openx.restricted_pickle import restricted_loads
from episode_warehouse.sources.openx.shards import Shard
from episode_warehouse.threads import compute_threads

log = logging.getLogger(__name__)


def _add(sink: EpisodeSink, shard: Shard, key: str, payload: bytes, limits, pool) -> None:
    """Decode one member's episode and append it."""
    subject = f"{shard.name}:{key}.data.pickle"
    episode = decode_episode(
        restricted_loads(payload, subject=subject),
        subject,
        member_bytes=len(payload),
        limits=limits,
        pool=pool,
    )
    columns = dict(episode.arrays)
    columns["task_index"] = sink.task_index([episode.instruction or ""] * episode.length, subject)
    row = EpisodeRow(source=shard.name, instruction=episode.instruction)
    sink.add(subject, episode.length, columns.items(), row)


def decode_shards(
    shards: list[Shard],
    staging: Path,
    *,
    lineage: dict | None = None,
    limits: InputLimits | None = None,
    previous: DecodedEpisodes | None = None,
    salt: str = "",
) -> DecodedRecord:
    """Decode every episode of ``shards`` (in order) into ``staging``; return meta.json.

    A shard whose version and ``salt`` (what else the rows depend on: code and format versions)
    the ``previous`` build holds is copied from there, not decoded (``episode_sink``).

    Raises:
        CorruptInputError: a bad shard, member, pickle or episode (named), or no episode at all.
        LimitExceededError: an episode over the input limits (named).
    """
    limits = limits or InputLimits()
    with (
        ThreadPoolExecutor(compute_threads(4), thread_name_prefix="image-decode") as pool,
        progress("decoding episodes", None, "episodes") as bar,
        EpisodeSink(staging, previous, limits=limits) as out,
    ):
        for shard in shards:
            if out.shard(shard.name, fingerprint(shard.version, salt)):
                continue
            for key, payload in iter_members(shard, limits):
                _add(out, shard, key, payload, limits, pool)
                bar.update()
        meta = out.finish(
            lineage or {},
            subject=", ".join(s.location for s in shards) or "(no shards)",
            fix="check that the shards hold *.data.pickle members",
        )
    return meta
