"""The TED stage: a partition's decoded episodes as a TED, validated in staging, then published
(one call of the incremental rule)."""

from __future__ import annotations

from pathlib import Path

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.errors import CorruptInputError
from episode_warehouse.incremental import Built, build_if_changed, require
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.sources import registry
from episode_warehouse.ted.record import TedRecord


def build_ted_stage(
    layout: WarehouseLayout, source: str, key: str, *, code_version: str
) -> Built[TedRecord]:
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
    decoded = require(layout.root, decoded_dir, f"{source}_episodes", key, DecodedRecord)

    def build(tmp: Path) -> TedRecord:
        opened = open_decoded(decoded_dir)
        meta = build_ted(opened, tmp, fps=registry.fps(source, key, opened.meta.fps))
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
        layout.root,
        layout.ted_dir(source, key),
        {"decoded": decoded.version, "code_version": code_version, "format": FORMAT_ID},
        build,
        record_type=TedRecord,
        upstream={decoded_dir: decoded.version},
    )
