"""The Dagster result of a decoded-episodes stage, the same for every source."""

import dagster as dg


def decoded_result(built, path, **details) -> dg.MaterializeResult:
    """Frames, episodes, the source's own ``details``, whether it was rebuilt, where it is, and
    the incremental rule's version as the data version."""
    return dg.MaterializeResult(
        metadata={
            "frames": built.meta["rows"],
            "episodes": built.meta["episodes"],
            **details,
            "rebuilt": built.rebuilt,
            "path": dg.MetadataValue.path(str(path)),
        },
        data_version=dg.DataVersion(built.version),
    )
