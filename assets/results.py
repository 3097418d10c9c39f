"""The Dagster result of a stage, one rule for all (:func:`built_result`), and those of a
mirrored raw stage and of a decoded-episodes stage, the same for every source that has them."""

from typing import Any

import dagster as dg

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.incremental import Built
from episode_warehouse.records import RawRecord
from episode_warehouse.sources.mirror import MirrorReport


def built_result(
    built: Built[Any], path=None, *, checks: list[dg.AssetCheckResult] | None = None, **metadata
) -> dg.MaterializeResult:
    """``metadata``, whether the artifact was rebuilt, where it is (``path``), the checks the
    stage reports itself, and the incremental rule's version as the data version (what Dagster
    compares for staleness)."""
    where = {"path": dg.MetadataValue.path(str(path))} if path is not None else {}
    return dg.MaterializeResult(
        metadata={**metadata, "rebuilt": built.rebuilt, **where},
        check_results=checks,
        data_version=dg.DataVersion(built.version),
    )


def mirrored_result(built: Built[RawRecord], report: MirrorReport, path) -> dg.MaterializeResult:
    """Where the files came from, how many and how large, how many were downloaded this time,
    whether the folder was rebuilt, where it is; the incremental rule's version as the data
    version."""
    return built_result(
        built,
        path,
        source_url=built.meta.source_url,
        files=len(built.meta.files),
        bytes=sum(f["size"] for f in built.meta.files.values()),
        downloaded=len(report.downloaded),
    )


def decoded_result(built: Built[DecodedRecord], path, **details) -> dg.MaterializeResult:
    """Frames, episodes, the source's own ``details``, whether it was rebuilt, where it is, and
    the incremental rule's version as the data version."""
    nonfinite = built.meta.extra.get("nonfinite")  # NaN/inf kept in keys allowed to hold them
    if nonfinite:
        details["nonfinite_values"] = dg.MetadataValue.json(nonfinite)
    return built_result(
        built, path, frames=built.meta.rows, episodes=built.meta.episodes, **details
    )
