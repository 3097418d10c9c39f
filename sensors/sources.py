"""Source sensors, one per registered source (cursor = last fingerprint per partition;
idempotent via run keys), and the automation sensor."""

from __future__ import annotations

import json

import dagster as dg

from assets.graph import GRAPHS
from assets.sources.spec import SourceAssets
from episode_warehouse.errors import PartitionKeyError
from episode_warehouse.sources.fingerprints import changed
from episode_warehouse.sources.registry import check_partition

MAX_ADDS_PER_TICK = 10_000  # Dagster adds dynamic partitions in one SQL IN (...): keep it small


def source_sensor(spec: SourceAssets) -> dg.SensorDefinition:
    """A sensor that lists ``spec``'s source and requests its raw asset for each partition whose
    fingerprint changed, adding new partitions when they are dynamic."""

    @dg.sensor(
        name=f"{spec.name}_source_sensor",
        target=[spec.raw],
        minimum_interval_seconds=300,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=spec.sensor_description,
        required_resource_keys={spec.resource_key},
    )
    def _sensor(context: dg.SensorEvaluationContext, **resources):
        # a direct call passes the required resources as keywords, the daemon on the context
        resource = resources.get(spec.resource_key) or getattr(context.resources, spec.resource_key)
        current = spec.listing(resource)
        return _requests(context, current, spec)

    return _sensor


def _requests(context: dg.SensorEvaluationContext, current: dict[str, str], spec: SourceAssets):
    """Run requests for the partitions whose fingerprint changed, adding the new dynamic ones."""
    previous = json.loads(context.cursor or "{}")
    usable = {}
    for key, fingerprint in current.items():  # a listed name is outside input: checked here
        try:
            check_partition(spec.name, key)
        except PartitionKeyError as exc:
            context.log.warning("%s: skipping the listed partition: %s", spec.name, exc)
            continue
        usable[key] = fingerprint
    current = usable
    keys = changed(previous, current)[:MAX_ADDS_PER_TICK]
    if not keys:
        return dg.SkipReason(f"no change in {len(current)} {spec.name} partitions")
    adds = []
    if spec.dynamic is not None:
        new = [k for k in keys if not context.instance.has_dynamic_partition(spec.dynamic, k)]
        if new:
            adds = [dg.DynamicPartitionsDefinition(name=spec.dynamic).build_add_request(new)]
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=k, run_key=f"{k}@{current[k]}") for k in keys],
        dynamic_partitions_requests=adds,
        cursor=json.dumps(
            {**previous, **{k: current[k] for k in keys}}, sort_keys=True, allow_nan=False
        ),
    )


SOURCE_SENSORS = {name: source_sensor(graph.source) for name, graph in GRAPHS.items()}

automation_sensor = dg.AutomationConditionSensorDefinition(
    "warehouse_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Evaluates the assets' automation conditions: decoded episodes, TEDs, catalog "
    "rows and exports follow their upstream partition by partition.",
)

SENSORS = [*SOURCE_SENSORS.values(), automation_sensor]
