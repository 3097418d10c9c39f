"""The stages after the raw one, each one call of the incremental rule.

Every function here reads its upstream artifact's record (a clear error when it is missing),
states the stage's inputs (the upstream ``version`` and the code version), and calls
:func:`~episode_warehouse.incremental.build_if_changed`. The Dagster assets call exactly one of
these per materialization and return the result's ``version`` as their data version.

    raw (mirror_run / mirror_shards) -> decoded -> ted -> catalog rows -> (LeRobot exports)
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from episode_warehouse.atomic import read_json, reading
from episode_warehouse.errors import CorruptInputError, NotMaterializedError
from episode_warehouse.incremental import RECORD, Built, build_if_changed, checkout
from episode_warehouse.limits import InputLimits
from episode_warehouse.paths import WarehouseLayout

log = logging.getLogger(__name__)


def require(folder: Path, asset: str, key: str, *, here: bool = False) -> dict:
    """The record of an upstream artifact, its files in ``folder`` (pulled from the bucket
    when the root is one; ``here``: the copy already in ``folder``, pulled by the caller).

    Raises:
        NotMaterializedError: it has not been built.
    """
    meta = read_json(folder / RECORD) if here else checkout(folder)
    if not meta.get("version"):
        raise NotMaterializedError(
            "this upstream stage is not materialized",
            subject=str(folder),
            fix=f"materialize {asset} for {key} first",
        )
    return meta


def _lineage(source: str, key: str, raw: dict) -> dict:
    return {
        "source": source,
        "partition": key,
        "source_url": raw["source_url"],
        "source_version": raw["version"],
    }


def _decode_from_raw(
    layout: WarehouseLayout, source: str, key: str, raw_asset: str, code_version: str, make_build
) -> Built:
    """The one shape of every decode stage: hold the raw folder still, require its record, and
    rebuild the decoded folder when the raw version or the code version changed.
    ``make_build(raw_dir, raw_record, lineage)`` returns the build function."""
    from episode_warehouse.decoded.format import FORMAT_ID

    raw_dir = layout.raw_dir(source, key)
    checkout(raw_dir)  # a bucket root: pull first; a pull swaps the folder, never under reading()
    with reading(raw_dir):
        raw = require(raw_dir, raw_asset, key, here=True)
        return build_if_changed(
            layout.decoded_dir(source, key),
            {"raw": raw["version"], "code_version": code_version, "format": FORMAT_ID},
            make_build(raw_dir, raw, _lineage(source, key, raw)),
        )


def decode_atari(
    layout: WarehouseLayout,
    key: str,
    *,
    code_version: str,
    workers: int,
    endpoint: str | None = None,
    limits: InputLimits | None = None,
) -> Built:
    """Decoded episodes of one Atari run from its raw folder (held still while it is read),
    in the layout the raw stage found: Dopamine checkpoints or RL Unplugged TFRecord files
    (``endpoint`` reaches the bucket when the raw stage only listed them: streaming)."""

    def make_build(raw_dir: Path, raw: dict, lineage: dict):
        if raw.get("format") == "atari-rlu-raw":
            return _rlu_build(raw_dir, raw, key, workers, endpoint, limits, lineage)
        from episode_warehouse.sources.atari.decode import decode_run

        def build(tmp: Path) -> dict:
            return decode_run(
                raw_dir / "replay_logs",
                raw["suffixes"],
                tmp,
                workers=workers,
                file_prefix=f"{key}/replay_logs/",
                lineage=lineage,
            )

        return build

    return _decode_from_raw(layout, "atari", key, "atari_replay_files", code_version, make_build)


def _rlu_build(raw_dir, raw, key, workers, endpoint, limits, lineage):
    from episode_warehouse.sources.atari.rlu_decode import RluSource, decode_rlu_run

    names = sorted(raw["files"])
    if raw.get("mode") == "streaming":
        sources = [
            RluSource(
                name,
                store_url=raw["store_url"],
                endpoint=endpoint,
                blob=raw["blobs"][name],
                size=raw["files"][name]["size"],
                generation=raw["files"][name]["generation"],
            )
            for name in names
        ]
    else:
        sources = [RluSource(name, path=str(raw_dir / "rlu" / name)) for name in names]
    max_record = (limits or InputLimits()).max_record_bytes

    def build(tmp: Path) -> dict:
        return decode_rlu_run(
            sources,
            tmp,
            workers=workers,
            file_prefix=f"{key.split('/')[0]}/",
            lineage=lineage,
            max_record_bytes=max_record,
        )

    return build


def decode_openx(
    layout: WarehouseLayout, key: str, *, code_version: str, limits: InputLimits | None = None
) -> Built:
    """Decoded episodes of one OpenX dataset, from its mirrored shards or the source itself."""
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.mirror import manifest_shards

    def make_build(raw_dir: Path, raw: dict, lineage: dict):
        return lambda tmp: decode_shards(
            manifest_shards(raw_dir, raw), tmp, lineage=lineage, limits=limits
        )

    return _decode_from_raw(layout, "openx", key, "openx_shards", code_version, make_build)


def decode_lerobot_stage(layout: WarehouseLayout, key: str, *, code_version: str) -> Built:
    """Decoded episodes of one LeRobot dataset, from its mirrored folder."""
    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot

    def make_build(raw_dir: Path, raw: dict, lineage: dict):
        return lambda tmp: decode_lerobot(open_lerobot_folder(raw_dir), tmp, lineage=lineage)

    return _decode_from_raw(layout, "lerobot", key, "lerobot_files", code_version, make_build)


def build_ted_stage(layout: WarehouseLayout, source: str, key: str, *, code_version: str) -> Built:
    """The TED of one partition, validated in staging before it is published.

    Raises:
        CorruptInputError: the TED built from the decoded episodes fails its consistency check
            (NaN rewards, broken boundaries); nothing is published.
    """
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.report.ted_report import write_ted_report
    from episode_warehouse.ted import build_ted
    from episode_warehouse.ted.layout import FORMAT_ID
    from episode_warehouse.ted.validate import check_ted

    decoded_dir = layout.decoded_dir(source, key)
    decoded = require(decoded_dir, f"{source}_episodes", key)

    def build(tmp: Path) -> dict:
        meta = build_ted(open_decoded(decoded_dir), tmp)
        report = check_ted(tmp)
        if not report.ok:
            raise CorruptInputError(
                "the TED fails its consistency check: " + "; ".join(report.problems[:5]),
                subject=f"{source} {key}",
                fix="the source data is malformed (see the findings); fix or remove it",
            )
        write_ted_report(tmp)
        return meta

    return build_if_changed(
        layout.ted_dir(source, key),
        {"decoded": decoded["version"], "code_version": code_version, "format": FORMAT_ID},
        build,
    )


def publish_catalog_rows(
    layout: WarehouseLayout, source: str, key: str, *, code_version: str, run_id: str
) -> Built:
    """The catalog rows of one partition (episodes and partitions tables) from its TED.

    Rows that describe the same TED are kept, with the lineage (run id, time) of the run that
    wrote them.
    """
    from episode_warehouse.catalog import CatalogStore
    from episode_warehouse.catalog.rows import catalog_rows
    from episode_warehouse.catalog.schema import ROWS_FORMAT

    ted_dir = layout.ted_dir(source, key)
    ted = require(ted_dir, f"{source}_ted", key)
    episodes, partition_row = catalog_rows(
        ted_dir,
        source,
        key,
        code_version=code_version,
        run_id=run_id,
        data_version=ted["version"],
        materialized_at=datetime.now(UTC),
    )
    inputs = {"ted": ted["version"], "code_version": code_version, "format": ROWS_FORMAT}
    return CatalogStore(layout.catalog_dir).publish_partition(
        source, key, episodes, partition_row, inputs
    )
