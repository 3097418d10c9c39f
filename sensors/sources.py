"""Source sensors (cursor = last fingerprint per partition; idempotent via run keys)."""

import json

import dagster as dg

from assets.graph import atari_replay_files, lerobot_files, openx_shards
from assets.partitions import lerobot_datasets, openx_datasets
from episode_warehouse.discovery import (
    atari_fingerprints,
    changed,
    lerobot_fingerprints,
    openx_fingerprints,
)
from resources import AtariReplaySource, LeRobotSource, OpenXSource

MAX_ADDS_PER_TICK = 10_000  # Dagster adds dynamic partitions in one SQL IN (...): keep it small


@dg.sensor(
    target=[atari_replay_files],
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Lists ATARI_REPLAY_URL; requests atari_replay_files for each game/run whose "
    "files appeared or changed (generation/crc32c). Automation then rebuilds downstream.",
)
def atari_source_sensor(context: dg.SensorEvaluationContext, atari_replay: AtariReplaySource):
    previous = json.loads(context.cursor or "{}")
    current = atari_fingerprints(atari_replay.store())
    keys = changed(previous, current)
    if not keys:
        return dg.SkipReason(f"no change in {len(current)} Atari partitions")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=k, run_key=f"{k}@{current[k]}") for k in keys],
        cursor=json.dumps(current, sort_keys=True),
    )


@dg.sensor(
    target=[openx_shards],
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Lists OPENX_URL; adds new dataset folders as partitions and requests "
    "openx_shards for each dataset whose shards appeared or changed.",
)
def openx_source_sensor(context: dg.SensorEvaluationContext, openx_source: OpenXSource):
    current = openx_fingerprints(openx_source.source_url())
    return _dynamic_requests(context, current, openx_datasets, "OpenX datasets")


@dg.sensor(
    target=[lerobot_files],
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Lists LEROBOT_URL; adds new <owner>/<name> datasets as partitions and requests "
    "lerobot_files for each dataset whose files appeared or changed.",
)
def lerobot_source_sensor(context: dg.SensorEvaluationContext, lerobot_source: LeRobotSource):
    current = lerobot_fingerprints(lerobot_source.store())
    return _dynamic_requests(context, current, lerobot_datasets, "LeRobot datasets")


def _dynamic_requests(
    context: dg.SensorEvaluationContext,
    current: dict[str, str],
    partitions: dg.DynamicPartitionsDefinition,
    what: str,
):
    """Run requests for the partitions whose fingerprint changed, adding the new ones."""
    previous = json.loads(context.cursor or "{}")
    keys = changed(previous, current)[:MAX_ADDS_PER_TICK]
    if not keys:
        return dg.SkipReason(f"no change in {len(current)} {what}")
    name = partitions.name or ""  # our dynamic partitions are all named (assets/partitions.py)
    new = [k for k in keys if not context.instance.has_dynamic_partition(name, k)]
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=k, run_key=f"{k}@{current[k]}") for k in keys],
        dynamic_partitions_requests=[partitions.build_add_request(new)] if new else [],
        cursor=json.dumps({**previous, **{k: current[k] for k in keys}}, sort_keys=True),
    )


automation_sensor = dg.AutomationConditionSensorDefinition(
    "warehouse_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Evaluates the assets' automation conditions: decoded episodes, TEDs, catalog "
    "rows and exports follow their upstream partition by partition.",
)

SENSORS = [atari_source_sensor, openx_source_sensor, lerobot_source_sensor, automation_sensor]
