"""Asset checks, declared (``assets/stage.py`` makes them checks of an asset): TED consistency
(blocking), catalog rows vs TED, LeRobot export loads (with lerobot and with mlcroissant). The
integrity audit's check is the catalog rows stage's own (``assets/catalog.py``)."""

from pathlib import Path

import dagster as dg

from assets.stage import Check, CheckRun
from episode_warehouse.catalog import run_query
from episode_warehouse.export.record import ExportRecord
from episode_warehouse.incremental import checkout, require
from episode_warehouse.ted.record import TedRecord
from episode_warehouse.ted.validate import check_ted


def ted_check(source: str) -> Check:
    def run(check: CheckRun) -> dg.AssetCheckResult:
        layout = check.warehouse.layout()
        folder = layout.ted_dir(source, check.key)
        checkout(layout.root, folder)  # a bucket root: the TED's files, if another machine built it
        report = check_ted(folder)
        return dg.AssetCheckResult(
            passed=report.ok,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "partition": check.key,
                "rows": report.rows,
                "episodes": report.episodes,
                "problems": dg.MetadataValue.json(report.problems),
            },
        )

    return Check(
        "ted_consistency",
        run,
        "Shapes and dtypes, episode boundaries, finite rewards, and row/episode counts equal "
        "episodes.parquet. Blocks downstream on failure.",
        blocking=True,
    )


def rows_check(source: str) -> Check:
    def run(check: CheckRun) -> dg.AssetCheckResult:
        layout = check.warehouse.layout()
        meta = require(layout.root, layout.ted_dir(source, check.key), f"{source}_ted",
                       check.key, TedRecord)  # fmt: skip
        _, rows = run_query(
            layout.root,
            "SELECT count(*), coalesce(sum(length), 0) "
            "FROM episodes WHERE source = ? AND partition = ?",
            [source, check.key],
        )
        episodes, frames = rows[0]
        return dg.AssetCheckResult(
            passed=episodes == meta.episodes and frames == meta.rows,
            metadata={
                "catalog_episodes": episodes,
                "ted_episodes": meta.episodes,
                "catalog_frames": int(frames),
                "ted_frames": meta.rows,
            },  # fmt: skip
        )

    return Check(
        "rows_match_ted",
        run,
        "The catalog holds one row per TED episode and their lengths add up to the TED's rows.",
    )


def _published_export(check: CheckRun, name_of) -> tuple[Path, ExportRecord]:
    """The export a check looks at: its folder and its record (refused when not published)."""
    layout = check.warehouse.layout()
    target = layout.lerobot_dir(name_of(check.context))
    return target, require(layout.root, target, "the LeRobot export", target.name, ExportRecord)


def export_check(name_of) -> Check:
    def run(check: CheckRun) -> dg.AssetCheckResult:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        target, meta = _published_export(check, name_of)
        ds = LeRobotDataset(f"episode-warehouse/{target.name}", root=target)
        return dg.AssetCheckResult(
            passed=ds.meta.total_episodes == meta.episodes and ds.meta.total_frames == meta.frames,
            metadata={
                "episodes": ds.meta.total_episodes,
                "frames": ds.meta.total_frames,
                "codebase_version": ds.meta.info.codebase_version,
            },  # fmt: skip
        )

    return Check(
        "loads_with_lerobot",
        run,
        "LeRobotDataset(repo_id, root) opens the export offline and its episode and frame "
        "counts are those exported.",
    )


def croissant_check(name_of) -> Check:
    def run(check: CheckRun) -> dg.AssetCheckResult:
        from episode_warehouse.export.describe import validate
        from episode_warehouse.export.lerobot import CROISSANT_FILE

        target, meta = _published_export(check, name_of)
        counts = validate(target / CROISSANT_FILE, ("frames", "episodes"))
        frames, episodes = counts["frames"], counts["episodes"]
        return dg.AssetCheckResult(
            passed=frames == meta.frames and episodes == meta.episodes,
            metadata={"frame_records": frames, "episode_records": episodes},
        )

    return Check(
        "croissant_loads",
        run,
        "mlcroissant validates the export's croissant.json and loads as many frame and "
        "episode records as were exported.",
    )
