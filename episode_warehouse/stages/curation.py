"""The curation stages: a score of one partition, and the warehouse's duplicates (each one call
of the incremental rule; docs/curation.md)."""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.catalog import CatalogStore, run_query
from episode_warehouse.catalog.records import DuplicatesRecord, RowsRecord, ScoresRecord
from episode_warehouse.catalog.schema import DUPLICATES, EPISODES, SCORES
from episode_warehouse.curation import duplicates
from episode_warehouse.curation.scores import Score, ScoreInput
from episode_warehouse.incremental import Built, checkout, require
from episode_warehouse.paths import WarehouseLayout
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
        values = score.values(ScoreInput(episodes, ted_dir))
        n = episodes.num_rows
        return pa.table(
            {
                "score": pa.array([score.name] * n, pa.string()),
                "version": pa.array([score.version] * n, pa.string()),
                "source": episodes.column("source"),
                "partition": episodes.column("partition"),
                "episode": episodes.column("episode"),
                "value": pa.array(values, pa.float64(), mask=values != values),
            }
        )

    return store.publish_scores(score.name, source, key, inputs, compute)


_SIGNATURES = (
    "SELECT source, partition, episode, content_hash, step_minhash "
    f"FROM {EPISODES.name} ORDER BY source, partition, episode"
)


def publish_duplicates(layout: WarehouseLayout) -> Built[DuplicatesRecord]:
    """The duplicates of every catalogued episode, unless every partition's rows are those
    they were found in."""
    store = CatalogStore(layout.root)
    rows = {rel: r.get("version") for rel, r in layout.root.published("catalog/rows", 2).items()}
    inputs = {
        "rows": rows,
        "format": DUPLICATES.format_id,
        "rule": [duplicates.STEP_SHARE, duplicates.BANDS, duplicates.ROWS_PER_BAND],
    }

    def find() -> tuple[pa.Table, DuplicatesRecord]:
        _, found = run_query(layout.root, _SIGNATURES)
        signatures = duplicates.EpisodeSignatures(
            names=[duplicates.episode_name(s, p, e) for s, p, e, *_ in found],
            content_hash=[r[3] for r in found],
            step_minhash=[r[4] for r in found],
        )
        table = duplicates.find_duplicates(signatures)
        keys = [(s, p, e) for s, p, e, *_ in found]
        index = {n: i for i, n in enumerate(signatures.names)}
        listed = [keys[index[n]] for n in table.column("episode_name").to_pylist()]
        out = pa.table(
            {
                "source": pa.array([k[0] for k in listed], pa.string()),
                "partition": pa.array([k[1] for k in listed], pa.string()),
                "episode": pa.array([k[2] for k in listed], pa.int64()),
                "near_duplicate_of": table.column("near_duplicate_of"),
                "duplicate_group": table.column("duplicate_group"),
            }
        )
        groups = len(set(table.column("duplicate_group").to_pylist()))
        return out, DuplicatesRecord(episodes=len(found), listed=len(listed), groups=groups)

    return store.publish_duplicates(inputs, find)
