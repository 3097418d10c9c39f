"""Asset checks: TED consistency (blocking), catalog rows vs TED, LeRobot export loads (with
lerobot and with mlcroissant). The integrity audit's check is curation's (assets/curation.py)."""

from pathlib import Path

import dagster as dg

from episode_warehouse.catalog import run_query
from episode_warehouse.export.record import ExportRecord
from episode_warehouse.incremental import checkout, require
from episode_warehouse.ted.record import TedRecord
from episode_warehouse.ted.validate import check_ted
from resources import WarehouseStorage


def ted_check(source: str, ted: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=ted,
        name="ted_consistency",
        blocking=True,
        description="Shapes and dtypes, episode boundaries, finite rewards, and "
        "row/episode counts equal episodes.parquet. Blocks downstream on failure.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseStorage
    ) -> dg.AssetCheckResult:
        key = context.op_execution_context.partition_key
        layout = warehouse.layout()
        folder = layout.ted_dir(source, key)
        checkout(
            layout.root, folder
        )  # a bucket root: the TED's files, pulled if another machine built it
        report = check_ted(folder)
        return dg.AssetCheckResult(
            passed=report.ok,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "partition": key,
                "rows": report.rows,
                "episodes": report.episodes,
                "problems": dg.MetadataValue.json(report.problems),
            },
        )

    return _check


def rows_check(source: str, rows_asset: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=rows_asset,
        name="rows_match_ted",
        description="The catalog holds one row per TED episode and their lengths "
        "add up to the TED's rows.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseStorage
    ) -> dg.AssetCheckResult:
        key = context.op_execution_context.partition_key
        layout = warehouse.layout()
        meta = require(layout.root, layout.ted_dir(source, key), f"{source}_ted", key, TedRecord)
        _, rows = run_query(
            layout.root,
            "SELECT count(*), coalesce(sum(length), 0) "
            "FROM episodes WHERE source = ? AND partition = ?",
            [source, key],
        )
        episodes, frames = rows[0]
        return dg.AssetCheckResult(
            passed=episodes == meta.episodes and frames == meta.rows,
            metadata={
                "catalog_episodes": episodes,
                "ted_episodes": meta.episodes,
                "catalog_frames": int(frames),
                "ted_frames": meta.rows,
            },
        )

    return _check


def _published_export(context: dg.AssetCheckExecutionContext, warehouse: WarehouseStorage,
                      name_of) -> tuple[Path, ExportRecord]:  # fmt: skip
    """The export a check looks at: its folder and its record (refused when not published)."""
    layout = warehouse.layout()
    target = layout.lerobot_dir(name_of(context.op_execution_context))
    return target, require(layout.root, target, "the LeRobot export", target.name, ExportRecord)


def export_check(export: dg.AssetsDefinition, name_of) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=export,
        name="loads_with_lerobot",
        description="LeRobotDataset(repo_id, root) opens the export offline and "
        "its episode and frame counts are those exported.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseStorage
    ) -> dg.AssetCheckResult:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        target, meta = _published_export(context, warehouse, name_of)
        ds = LeRobotDataset(f"episode-warehouse/{target.name}", root=target)
        return dg.AssetCheckResult(
            passed=ds.meta.total_episodes == meta.episodes and ds.meta.total_frames == meta.frames,
            metadata={
                "episodes": ds.meta.total_episodes,
                "frames": ds.meta.total_frames,
                "codebase_version": ds.meta.info.codebase_version,
            },
        )

    return _check


def croissant_check(export: dg.AssetsDefinition, name_of) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=export,
        name="croissant_loads",
        description="mlcroissant validates the export's croissant.json and loads as many "
        "frame and episode records as were exported.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseStorage
    ) -> dg.AssetCheckResult:
        from episode_warehouse.export.describe import validate
        from episode_warehouse.export.lerobot import CROISSANT_FILE

        target, meta = _published_export(context, warehouse, name_of)
        counts = validate(target / CROISSANT_FILE, ("frames", "episodes"))
        frames, episodes = counts["frames"], counts["episodes"]
        return dg.AssetCheckResult(
            passed=frames == meta.frames and episodes == meta.episodes,
            metadata={"frame_records": frames, "episode_records": episodes},
        )

    return _check
