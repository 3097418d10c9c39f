"""Build a partition's catalog rows from its TED folder and the lineage of the run."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from episode_warehouse.catalog.episode_facts import episode_fact_columns
from episode_warehouse.catalog.quality import quality_columns
from episode_warehouse.curation.audit import audit_partition
from episode_warehouse.curation.partition_arrays import PartitionArrays
from episode_warehouse.curation.signatures import signature_columns
from episode_warehouse.sources import registry
from episode_warehouse.ted.files import read_meta
from episode_warehouse.ted.layout import EPISODES
from episode_warehouse.ted.open import open_ted_folder


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder``, each inode counted once (hard links)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            st = os.stat(os.path.join(dirpath, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512 if st.st_blocks else st.st_size
    return total


def catalog_rows(
    ted_folder: Path,
    source: str,
    partition: str,
    *,
    code_version: str,
    run_id: str,
    data_version: str,
    materialized_at: datetime,
    curation: bool = True,
) -> tuple[pa.Table, dict]:
    """The ``episodes`` rows and the ``partitions`` row of one TED folder (``curation=False``:
    without the audit and the duplicate signatures, NULL there: ``bench.curation``'s baseline)."""
    meta = read_meta(ted_folder)
    episodes = pq.read_table(Path(ted_folder) / EPISODES)
    n = episodes.num_rows
    dataset = registry.get(source).dataset_of(partition)
    lineage = {
        "source": pa.array([source] * n, pa.string()),
        "partition": pa.array([partition] * n, pa.string()),
        "dataset": pa.array([dataset] * n, pa.string()),
        "source_version": pa.array([meta.source_version] * n, pa.string()),
        "code_version": pa.array([code_version] * n, pa.string()),
        "run_id": pa.array([run_id] * n, pa.string()),
        "materialized_at": pa.array([materialized_at] * n, pa.timestamp("us", tz="UTC")),
    }
    for name, column in lineage.items():
        episodes = episodes.append_column(name, column)
    returns = episodes.column("return").to_numpy(zero_copy_only=False).astype(np.float64)
    td = open_ted_folder(ted_folder)
    quality = quality_columns(
        td,
        episodes.column("start").to_numpy(),
        episodes.column("length").to_numpy(),
        np.where(np.isnan(returns), np.nan, returns),
    )
    facts = episode_fact_columns(td, episodes, meta.extra.get("texts", {}))
    fps = registry.fps(source, partition, meta.fps)
    curated, partition_findings = {}, None
    if curation:
        arrays = PartitionArrays.open(ted_folder)
        found = audit_partition(arrays, fps)
        curated = {**found.columns(), **signature_columns(arrays)}
        partition_findings = found.partition
    for name, column in {**quality, **facts, **curated}.items():
        episodes = episodes.append_column(name, column)

    partition_row = {
        "source": source,
        "partition": partition,
        "dataset": dataset,
        "frames": meta.rows,
        "episodes": n,
        "bytes_on_disk": folder_bytes(Path(ted_folder)),
        "data_version": data_version,
        "code_version": code_version,
        "run_id": run_id,
        "materialized_at": materialized_at,
        "source_url": meta.source_url,
        "fps": fps,
        "robot_type": meta.robot_type,
        "findings": partition_findings,
    }
    return episodes, partition_row
