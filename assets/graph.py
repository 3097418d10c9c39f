"""The asset graph: every asset of the code location, in pipeline order."""

from assets.atari import atari_episodes, atari_replay_files
from assets.catalog import catalog_rows_asset, episode_catalog
from assets.checks import export_check, recorded_returns_check, rows_check, ted_check
from assets.lerobot import partition_export_asset, selection_lerobot_export
from assets.lerobot_source import lerobot_episodes, lerobot_files
from assets.openx import openx_episodes, openx_shards
from assets.partitions import atari_runs, lerobot_datasets, openx_datasets
from assets.statistics import statistics_asset
from assets.ted import ted_asset

atari_ted = ted_asset("atari", atari_runs, atari_episodes)
openx_ted = ted_asset("openx", openx_datasets, openx_episodes)
lerobot_ted = ted_asset("lerobot", lerobot_datasets, lerobot_episodes, group="lerobot_source")
atari_catalog_rows = catalog_rows_asset("atari", atari_runs, atari_ted)
openx_catalog_rows = catalog_rows_asset("openx", openx_datasets, openx_ted)
lerobot_catalog_rows = catalog_rows_asset("lerobot", lerobot_datasets, lerobot_ted)
atari_statistics = statistics_asset("atari", atari_runs, atari_ted)
openx_statistics = statistics_asset("openx", openx_datasets, openx_ted)
lerobot_statistics = statistics_asset("lerobot", lerobot_datasets, lerobot_ted)

atari_lerobot_export = partition_export_asset("atari", atari_runs, atari_catalog_rows)
openx_lerobot_export = partition_export_asset("openx", openx_datasets, openx_catalog_rows)
lerobot_lerobot_export = partition_export_asset("lerobot", lerobot_datasets, lerobot_catalog_rows)

ATARI_STAGES = {
    "raw": atari_replay_files,
    "decoded": atari_episodes,
    "ted": atari_ted,
    "catalog": atari_catalog_rows,
    "lerobot": atari_lerobot_export,
}
OPENX_STAGES = {
    "raw": openx_shards,
    "decoded": openx_episodes,
    "ted": openx_ted,
    "catalog": openx_catalog_rows,
    "lerobot": openx_lerobot_export,
}
LEROBOT_STAGES = {
    "raw": lerobot_files,
    "decoded": lerobot_episodes,
    "ted": lerobot_ted,
    "catalog": lerobot_catalog_rows,
    "lerobot": lerobot_lerobot_export,  # the round trip: an imported dataset written again
}
ALL_ASSETS = [
    *ATARI_STAGES.values(),
    *OPENX_STAGES.values(),
    *LEROBOT_STAGES.values(),
    atari_statistics,
    openx_statistics,
    lerobot_statistics,
    episode_catalog,
    selection_lerobot_export,
]


def _partition_export_name(source: str):
    def name(context) -> str:
        key = context.partition_key.replace("/", "-")
        video = (
            context.run_config.get("ops", {})
            .get(f"{source}_lerobot_export", {})
            .get("config", {})
            .get("video", False)
        )
        return f"{source}-{key}" + ("-video" if video else "")

    return name


ALL_CHECKS = [
    ted_check("atari", atari_ted),
    ted_check("openx", openx_ted),
    ted_check("lerobot", lerobot_ted),
    rows_check("atari", atari_catalog_rows),
    rows_check("openx", openx_catalog_rows),
    rows_check("lerobot", lerobot_catalog_rows),
    recorded_returns_check(atari_catalog_rows),
    export_check(atari_lerobot_export, _partition_export_name("atari")),
    export_check(openx_lerobot_export, _partition_export_name("openx")),
    export_check(lerobot_lerobot_export, _partition_export_name("lerobot")),
    export_check(selection_lerobot_export, lambda context: context.partition_key),
]
