"""LeRobot v3 exports: one per partition (a stage per source) and one per named SQL selection."""

import json

import dagster as dg

from assets import versions
from assets.partitions import lerobot_selections
from assets.results import built_result
from assets.stage import Stage, StageRun, stage_asset
from episode_warehouse.catalog import run_query
from episode_warehouse.errors import ConfigError
from episode_warehouse.export.request import ExportRequest, partition_export_name, selection_file
from episode_warehouse.incremental import require
from episode_warehouse.paths import WarehouseLayout


class ExportConfig(dg.Config):
    """``video``: AV1 video instead of lossless PNG images (smaller, lossy)."""

    video: bool = False


def _export(
    stage: StageRun, layout: WarehouseLayout, request: ExportRequest
) -> dg.MaterializeResult:
    from episode_warehouse.export.lerobot import export_lerobot  # lerobot: at run time only

    target = layout.lerobot_dir(request.name)
    built = export_lerobot(
        request,
        target,
        root=layout.root,
        workers=stage.settings.export_processes(),
        scratch_dir=stage.settings.scratch_dir(),
        code_version=stage.code_version,
    )
    meta = built.meta
    return built_result(
        built,
        target,
        episodes=meta.episodes,
        frames=meta.frames,
        video=meta.request["video"],
        query=meta.request.get("query") or "",
        episode_list=dg.MetadataValue.json(meta.episode_list[:200]),
        load_with=dg.MetadataValue.md(
            "```python\nfrom lerobot.datasets.lerobot_dataset import LeRobotDataset\n"
            f"ds = LeRobotDataset({_quoted('episode-warehouse/' + target.name)}, "
            f"root={_quoted(str(target))})\n```"
        ),
    )


def partition_export_stage(source: str) -> Stage:
    def run(stage: StageRun) -> dg.MaterializeResult:
        # Idempotent: an existing export of the same episodes and mode is kept as it is.
        layout = stage.warehouse.layout()
        require(layout.root, layout.ted_dir(source, stage.key), f"{source}_ted", stage.key)
        _, rows = run_query(
            layout.root,
            "SELECT source, partition, episode, start, length FROM episodes "
            "WHERE source = ? AND partition = ? ORDER BY episode",
            [source, stage.key],
        )
        video = stage.config.video
        name = partition_export_name(source, stage.key, video=video)
        request = ExportRequest(name, str(layout.folder), [tuple(r) for r in rows], video=video)
        return _export(stage, layout, request)

    return Stage(
        f"{source}_lerobot_export",
        run,
        f"One {source} partition as a LeRobot v3 dataset (lossless PNG by default), written "
        "with lerobot's own writer; loads offline with LeRobotDataset(repo_id, root).",
        {"lerobot", "parquet"},
        versions.LEROBOT_EXPORT,
        group="lerobot",
        config=ExportConfig,
    )


def _select(stage: StageRun) -> dg.MaterializeResult:
    """A LeRobot v3 dataset of the episodes a named SQL selection picks (query in metadata)."""
    # Idempotent: the same query over the same catalog gives the same episode list and export.
    name, layout = stage.key, stage.warehouse.layout()
    sql_file = layout.root.location(selection_file(name))
    sql = layout.root.read_text(selection_file(name))
    if sql is None:
        raise ConfigError(
            "no query registered for this selection",
            subject=sql_file,
            fix=f'warehouse export {name} "SELECT source, partition, episode, '
            'start, length FROM episodes WHERE ..."',
        )
    from episode_warehouse.loading.selection import REQUIRED, Selection  # torch: run time

    columns, rows = run_query(layout.root, sql)
    if tuple(columns[:5]) != REQUIRED:
        raise ConfigError(
            f"the query returns {columns[:5]}", subject=sql_file,
            fix=f"select {', '.join(REQUIRED)} first",
        )  # fmt: skip
    Selection.from_rows(rows, layout)  # every partition it names must have a TED
    request = ExportRequest(name, str(layout.folder), [tuple(r[:5]) for r in rows],
                            video=stage.config.video, query=sql)  # fmt: skip
    return _export(stage, layout, request)


SELECTION_EXPORT = Stage(
    "selection_lerobot_export",
    _select,
    "A LeRobot v3 dataset of the episodes a named SQL selection picks (query kept in metadata).",
    {"lerobot", "sql"},
    versions.LEROBOT_EXPORT,
    group="lerobot",
    eager=False,
    config=ExportConfig,
)
selection_lerobot_export = stage_asset(SELECTION_EXPORT, partitions=lerobot_selections)


def _quoted(text: str) -> str:
    """``text`` as a Python string literal (JSON's quoting is valid Python for a str)."""
    return json.dumps(text, allow_nan=False)
