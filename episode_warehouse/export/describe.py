"""``warehouse describe SOURCE PARTITION``: Croissant metadata of a partition's catalog rows,
and its check by MLCommons' own library (``mlcroissant``, the ``curation`` extra)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from episode_warehouse.catalog import CatalogStore
from episode_warehouse.catalog.records import RowsRecord
from episode_warehouse.catalog.schema import EPISODES
from episode_warehouse.errors import ConfigError, CorruptInputError
from episode_warehouse.export import croissant
from episode_warehouse.incremental import checkout, published, require
from episode_warehouse.partition_keys import export_name_of
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
        name=export_name_of(source, partition),
        description=f"The episode catalog rows of the {source} partition {partition} "
        "(one record per episode, with its integrity audit, duplicate signatures and quality "
        "signals), as the episode warehouse keeps them.",
        sources=[(source, partition)],
        license=raw.license if raw is not None else None,
    )
    return croissant.rows_document(rows_dir / EPISODES.file_name, described)


def validate(path: Path, record_sets: tuple[str, ...], timeout_s: float = 600.0) -> dict[str, int]:
    """Load the document at ``path`` with ``mlcroissant`` and count the records of each of
    ``record_sets``, in one child process: mlcroissant logs through absl, whose handler binds the
    stderr of the moment it is imported (a Dagster step's captured stream, closed after the
    step, broke the process's own output), and it loads rdflib and pandas besides.

    Raises:
        ConfigError: mlcroissant is not installed.
        CorruptInputError: it refuses the document (its report in the message).
    """
    done = subprocess.run(
        [sys.executable, "-m", "episode_warehouse.export.describe", str(path), *record_sets],
        capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        answer = {}
    if "records" in answer:
        return {name: int(n) for name, n in answer["records"].items()}
    if answer.get("missing"):
        raise ConfigError(
            "mlcroissant is not installed", subject="croissant check",
            fix="install the curation extra: pip install 'episode-warehouse[curation]'",
        )  # fmt: skip
    problem = answer.get("error") or done.stderr.strip()[-2000:] or f"exit code {done.returncode}"
    raise CorruptInputError(
        f"mlcroissant refuses the document: {problem}", subject=str(path),
        fix="report it: the warehouse wrote a document Croissant does not accept",
    )  # fmt: skip


def _answer(answer: dict) -> None:
    sys.stdout.write(json.dumps(answer, allow_nan=False) + "\n")  # its one line to the parent


def _child(path: str, record_sets: list[str]) -> None:
    try:
        import mlcroissant as mlc
    except ImportError:
        _answer({"missing": True})
        return
    try:
        dataset = mlc.Dataset(jsonld=path)
        _answer({"records": {n: sum(1 for _ in dataset.records(n)) for n in record_sets}})
    except (mlc.ValidationError, ValueError, KeyError, OSError) as exc:
        _answer({"error": str(exc)[:4000]})


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2:])
