"""The curation stages: a score of one partition, and the warehouse's duplicates (each one call
of the incremental rule; docs/curation.md)."""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.catalog import CatalogStore, run_query
from episode_warehouse.catalog.records import DuplicatesRecord, RowsRecord, ScoresRecord
from episode_warehouse.catalog.schema import DUPLICATES, EPISODES, SCORES
from episode_warehouse.catalog.store import ROW_VIEW
from episode_warehouse.curation import duplicates
from episode_warehouse.curation.scores import Score, ScoreInput
from episode_warehouse.incremental import Built, checkout, require
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources import registry
from episode_warehouse.ted.record import TedRecord

log = logging.getLogger(__name__)


def publish_episode_scores(
    layout: WarehouseLayout, score: Score, source: str, key: str
) -> Built[ScoresRecord]:
    """``score`` of every episode of one partition, unless it was computed from the same TED,
    catalog rows and score version."""
    store = CatalogStore(layout.root)
    ted_dir = layout.ted_dir(source, key)
    ted = require(layout.root, ted_dir, f"{source}_ted", key, TedRecord)
    rows_dir = store.partition_dir(source, key)
    rows = require(layout.root, rows_dir, f"{source}_catalog_rows", key, RowsRecord)
    inputs = {"ted": ted.version, "rows": rows.version, "score": score.name,
              "version": score.version, "format": SCORES.format_id}  # fmt: skip

    def compute() -> pa.Table:
        checkout(layout.root, rows_dir)
        checkout(layout.root, ted_dir)
        episodes = pq.read_table(rows_dir / EPISODES.file_name)
        given = ScoreInput(episodes, ted_dir, registry.get(source).rewards_are_scores)
        values, reason = score.values(given)
        n = episodes.num_rows
        nulls = values != values
        return pa.table(
            {
                "score": pa.array([score.name] * n, pa.string()),
                "version": pa.array([score.version] * n, pa.string()),
                "source": episodes.column("source"),
                "partition": episodes.column("partition"),
                "episode": episodes.column("episode"),
                "content_hash": episodes.column("content_hash"),
                "value": pa.array(values, pa.float64(), mask=nulls),
                "reason": pa.array(
                    [reason if null else None for null in nulls.tolist()], pa.string()
                ),  # fmt: skip
            }
        )

    upstream = {ted_dir: ted.version, rows_dir: rows.version}
    return store.publish_scores(score.name, source, key, inputs, compute, upstream=upstream)


_SIGNATURES = (
    "SELECT source, partition, episode, content_hash, step_minhash, sample_steps, "
    f"sample_thumbs, text_hash FROM {ROW_VIEW} ORDER BY source, partition, episode"
)


def publish_duplicates(layout: WarehouseLayout) -> Built[DuplicatesRecord]:
    """Every catalogued episode checked for duplicates (:mod:`~episode_warehouse.curation.
    duplicates`), unless every partition's rows are those they were checked in."""
    store = CatalogStore(layout.root)
    rows = {rel: r.get("version") for rel, r in layout.root.published("catalog/rows", 2).items()}
    inputs = {
        "rows": rows,
        "format": DUPLICATES.format_id,
        "rule": [
            duplicates.STEP_SHARE,
            duplicates.BANDS,
            duplicates.ROWS_PER_BAND,
            duplicates.FRAME_TOLERANCE,
            duplicates.BUCKET_CAP,
        ],  # fmt: skip
    }

    def find() -> tuple[pa.Table, DuplicatesRecord]:
        _, found = run_query(layout.root, _SIGNATURES)
        signatures = duplicates.EpisodeSignatures(
            names=[duplicates.episode_name(s, p, e) for s, p, e, *_ in found],
            content_hash=[r[3] for r in found],
            step_minhash=[r[4] for r in found],
            sample_steps=[r[5] for r in found],
            sample_thumbs=[r[6] for r in found],
            text_hash=[r[7] for r in found],
        )
        table = duplicates.find_duplicates(signatures)
        index = {n: i for i, n in enumerate(signatures.names)}
        near = table.column("near_duplicate_of").to_pylist()
        kept = [found[index[n]] if n is not None else None for n in near]
        out = pa.table(
            {
                "source": pa.array([r[0] for r in found], pa.string()),
                "partition": pa.array([r[1] for r in found], pa.string()),
                "episode": pa.array([r[2] for r in found], pa.int64()),
                "content_hash": pa.array([r[3] for r in found], pa.string()),
                "near_duplicate_of": table.column("near_duplicate_of"),
                "duplicate_group": table.column("duplicate_group"),
                "kept_source": pa.array([k[0] if k else None for k in kept], pa.string()),
                "kept_partition": pa.array([k[1] if k else None for k in kept], pa.string()),
                "kept_episode": pa.array([k[2] if k else None for k in kept], pa.int64()),
                "kept_hash": pa.array([k[3] if k else None for k in kept], pa.string()),
            }
        )
        dropped = sum(k is not None for k in kept)
        groups = len({g for g in table.column("duplicate_group").to_pylist() if g is not None})
        return out, DuplicatesRecord(episodes=len(found), dropped=dropped, groups=groups)

    return store.publish_duplicates(inputs, find)
