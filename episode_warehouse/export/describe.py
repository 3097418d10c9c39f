"""``warehouse describe SOURCE PARTITION``: Croissant metadata of a partition's catalog rows,
and its check by MLCommons' own library (``mlcroissant``, the ``curation`` extra)."""

from __future__ import annotations

import logging
from pathlib import Path

from episode_warehouse.catalog import CatalogStore
from episode_warehouse.catalog.records import RowsRecord
from episode_warehouse.catalog.schema import EPISODES
from episode_warehouse.errors import ConfigError, CorruptInputError
from episode_warehouse.export import croissant
from episode_warehouse.incremental import checkout, published, require
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.records import RawRecord

log = logging.getLogger(__name__)


def describe_partition(layout: WarehouseLayout, source: str, partition: str) -> dict:
    """The Croissant document of one partition's catalog rows (its ``episodes`` record set).

    Raises:
        NotMaterializedError: the partition has no catalog rows (naming the asset to build).
    """
    store = CatalogStore(layout.root)
    rows_dir = store.partition_dir(source, partition)
    require(layout.root, rows_dir, f"{source}_catalog_rows", partition, RowsRecord)
    checkout(layout.root, rows_dir)
    raw = published(layout.root, layout.raw_dir(source, partition), RawRecord)
    described = croissant.Described(
        name=f"{source}-{partition}".replace("/", "-"),
        description=f"The episode catalog rows of the {source} partition {partition} "
        "(one record per episode, with its integrity audit, duplicate signatures and quality "
        "signals), as the episode warehouse keeps them.",
        sources=[(source, partition)],
        license=raw.license if raw is not None else None,
    )
    return croissant.rows_document(rows_dir / EPISODES.file_name, described)


def validate(path: Path, record_set: str) -> int:
    """Load the document at ``path`` with ``mlcroissant`` and count the records of
    ``record_set``.

    Raises:
        ConfigError: mlcroissant is not installed.
        CorruptInputError: it refuses the document (its report in the message).
    """
    try:
        import mlcroissant as mlc
    except ImportError as exc:
        raise ConfigError(
            "mlcroissant is not installed", subject="croissant check",
            fix="install the curation extra: pip install 'episode-warehouse[curation]'",
        ) from exc  # fmt: skip
    try:
        dataset = mlc.Dataset(jsonld=str(path))
        return sum(1 for _ in dataset.records(record_set))
    except (mlc.ValidationError, ValueError) as exc:
        raise CorruptInputError(
            f"mlcroissant refuses the document: {exc}", subject=str(path),
            fix="report it: the warehouse wrote a document Croissant does not accept",
        ) from exc  # fmt: skip
