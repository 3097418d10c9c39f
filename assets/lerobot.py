"""LeRobot v3 exports: one per partition (factory, per source) and one per named SQL selection."""

import json

import dagster as dg

from assets import versions
from assets.partitions import lerobot_selections
from assets.retries import only_transient_retries
from episode_warehouse.catalog import run_query
from episode_warehouse.errors import ConfigError
from episode_warehouse.export.record import ExportRecord
from episode_warehouse.export.request import ExportRequest, partition_export_name, selection_file
from episode_warehouse.incremental import require
from episode_warehouse.paths import WarehouseLayout
from resources import RunSettings, WarehouseStorage


class ExportConfig(dg.Config):
    """``video``: AV1 video instead of lossless PNG images (smaller, lossy)."""

    video: bool = False


def _export(
    context: dg.AssetExecutionContext,
    run_settings: RunSettings,
    layout: WarehouseLayout,
    request: ExportRequest,
) -> dg.MaterializeResult:
    from episode_warehouse.export.lerobot import export_lerobot  # lerobot: at run time only

    target = layout.lerobot_dir(request.name)
    built = export_lerobot(
        request,
        target,
        root=layout.root,
        workers=run_settings.export_processes(),
        scratch_dir=run_settings.scratch_dir(),
        code_version=versions.of(context),
    )
    return _result(built.meta, target, built.rebuilt)


def _result(meta: ExportRecord, path, rebuilt: bool) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata={
            "rebuilt": rebuilt,
            "episodes": meta.episodes,
            "frames": meta.frames,
            "video": meta.request["video"],
            "path": dg.MetadataValue.path(str(path)),
            "query": meta.request.get("query") or "",
            "episode_list": dg.MetadataValue.json(meta.episode_list[:200]),
            "load_with": dg.MetadataValue.md(
                "```python\nfrom lerobot.datasets.lerobot_dataset import LeRobotDataset\n"
                f"ds = LeRobotDataset({_quoted('episode-warehouse/' + path.name)}, "
                f"root={_quoted(str(path))})\n```"
            ),
        },
        data_version=dg.DataVersion(meta.version),
    )


def partition_export_asset(
    source: str, partitions_def: dg.PartitionsDefinition, rows_asset: dg.AssetsDefinition
) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"{source}_lerobot_export",
        partitions_def=partitions_def,
        deps=[rows_asset],
        group_name="lerobot",
        kinds={"lerobot", "parquet"},
        code_version=versions.LEROBOT_EXPORT,
        automation_condition=dg.AutomationCondition.eager(),
        owners=["team:data-platform"],
        description=f"One {source} partition as a LeRobot v3 dataset (lossless PNG by default), "
        "written with lerobot's own writer; loads offline with LeRobotDataset(repo_id, root).",
    )
    def _partition_export(
        context: dg.AssetExecutionContext,
        config: ExportConfig,
        warehouse: WarehouseStorage,
        run_settings: RunSettings,
    ) -> dg.MaterializeResult:
        # Idempotent: an existing export of the same episodes and mode is kept as it is.
        with only_transient_retries(context):
            key = context.partition_key
            layout = warehouse.layout()
            require(layout.root, layout.ted_dir(source, key), f"{source}_ted", key)
            _, rows = run_query(
                layout.root,
                "SELECT source, partition, episode, start, length FROM episodes "
                "WHERE source = ? AND partition = ? ORDER BY episode",
                [source, key],
            )
            request = ExportRequest(
                partition_export_name(source, key, video=config.video),
                str(layout.folder),
                [tuple(r) for r in rows],
                video=config.video,
            )
            return _export(context, run_settings, layout, request)

    return _partition_export


@dg.asset(
    partitions_def=lerobot_selections,
    group_name="lerobot",
    kinds={"lerobot", "sql"},
    code_version=versions.LEROBOT_EXPORT,
    owners=["team:data-platform"],
)
def selection_lerobot_export(
    context: dg.AssetExecutionContext,
    config: ExportConfig,
    warehouse: WarehouseStorage,
    run_settings: RunSettings,
) -> dg.MaterializeResult:
    """A LeRobot v3 dataset of the episodes a named SQL selection picks (query kept in metadata)."""
    # Idempotent: the same query over the same catalog gives the same episode list and export.
    with only_transient_retries(context):
        name = context.partition_key
        layout = warehouse.layout()
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
                f"the query returns {columns[:5]}",
                subject=sql_file,
                fix=f"select {', '.join(REQUIRED)} first",
            )
        Selection.from_rows(rows, layout)  # every partition it names must have a TED
        request = ExportRequest(
            name, str(layout.folder), [tuple(r[:5]) for r in rows], video=config.video, query=sql
        )
        return _export(context, run_settings, layout, request)


def _quoted(text: str) -> str:
    """``text`` as a Python string literal (JSON's quoting is valid Python for a str)."""
    return json.dumps(text, allow_nan=False)
