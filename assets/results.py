"""The Dagster result of a decoded-episodes stage, the same for every source."""

import dagster as dg

from episode_warehouse.decoded.record import DecodedRecord
from episode_warehouse.incremental import Built


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
