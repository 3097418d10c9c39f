"""The Dagster results of a mirrored raw stage and of a decoded-episodes stage, the same for
every source that has them."""

import dagster as dg

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.incremental import Built
from episode_warehouse.records import RawRecord
from episode_warehouse.sources.mirror import MirrorReport


def mirrored_result(built: Built[RawRecord], report: MirrorReport, path) -> dg.MaterializeResult:
    """Where the files came from, how many and how large, how many were downloaded this time,
    whether the folder was rebuilt, where it is; the incremental rule's version as the data
    version."""
    return dg.MaterializeResult(
        metadata={
            "source_url": built.meta.source_url,
            "files": len(built.meta.files),
            "bytes": sum(f["size"] for f in built.meta.files.values()),
            "downloaded": len(report.downloaded),
            "rebuilt": built.rebuilt,
            "path": dg.MetadataValue.path(str(path)),
        },
        data_version=dg.DataVersion(built.version),
    )


def decoded_result(built: Built[DecodedRecord], path, **details) -> dg.MaterializeResult:
    """Frames, episodes, the source's own ``details``, whether it was rebuilt, where it is, and
    the incremental rule's version as the data version."""
    return dg.MaterializeResult(
        metadata={
            "frames": built.meta.rows,
            "episodes": built.meta.episodes,
            **details,
            # NaN/inf values kept in keys EPISODE_WAREHOUSE_ALLOW_NONFINITE names, by key
            **(
                {"nonfinite_values": dg.MetadataValue.json(built.meta.extra["nonfinite"])}
                if built.meta.extra.get("nonfinite")
                else {}
            ),
            "rebuilt": built.rebuilt,
            "path": dg.MetadataValue.path(str(path)),
        },
        data_version=dg.DataVersion(built.version),
    )
