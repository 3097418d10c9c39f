"""Materialize one partition through the asset graph, recorded in DAGSTER_HOME's run history."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.atari.games import parse_partition_key
from episode_warehouse.errors import PartitionKeyError, WarehouseError
from episode_warehouse.openx.datasets import check_dataset_id

STAGES = ("raw", "decoded", "ted", "catalog", "lerobot")


def stages_through(stages: dict, through: str | None) -> list:
    """The assets of the stages up to and including ``through`` (default: all)."""
    names = list(stages)
    if through is None:
        return list(stages.values())
    if through not in names:
        raise PartitionKeyError(f"unknown stage (expected one of {names})", subject=repr(through))
    return [stages[n] for n in names[: names.index(through) + 1]]


def _error_names() -> set[str]:
    import episode_warehouse.errors as errors

    return {
        n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, WarehouseError)
    }


def _our_error(error):
    """The warehouse's own error in Dagster's chain of causes, else the innermost one."""
    names = _error_names()
    while error.cls_name not in names and error.cause is not None:
        error = error.cause
    return error


def materialize_partition(
    source: str,
    partition: str,
    through: str | None = None,
    instance: dg.DagsterInstance | None = None,
    video: bool = False,
) -> dg.ExecuteInProcessResult:
    """Run the stages of ``source`` for one partition.

    Raises:
        PartitionKeyError: unknown source, stage or partition key.
        WarehouseError: the run failed; the message is the failing step's error.
    """
    from assets.graph import ALL_ASSETS, ALL_CHECKS, ATARI_STAGES, OPENX_STAGES
    from assets.partitions import openx_datasets
    from resources import build_resources

    instance = instance or dg.DagsterInstance.get()
    if source == "atari":
        parse_partition_key(partition)
        stages = ATARI_STAGES
    elif source == "selection":
        from assets.partitions import lerobot_selections

        if not instance.has_dynamic_partition(lerobot_selections.name, partition):
            instance.add_dynamic_partitions(lerobot_selections.name, [partition])
        from assets.graph import selection_lerobot_export

        stages = {"lerobot": selection_lerobot_export}
    elif source == "openx":
        check_dataset_id(partition)
        if not instance.has_dynamic_partition(openx_datasets.name, partition):
            instance.add_dynamic_partitions(openx_datasets.name, [partition])
        stages = OPENX_STAGES
    else:
        raise PartitionKeyError(
            "unknown source (expected 'atari' or 'openx')", subject=repr(source)
        )
    selected = stages_through(stages, through)
    exports = [a for a in selected if a.key.to_user_string().endswith("lerobot_export")]
    run_config: dict = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    if exports:
        run_config["ops"] = {a.key.to_user_string(): {"config": {"video": video}} for a in exports}
    result = dg.materialize(
        [*ALL_ASSETS, *ALL_CHECKS],
        selection=selected,
        partition_key=partition,
        instance=instance,
        resources=build_resources(),
        raise_on_error=False,
        tags={"warehouse/source": source},
        # the CLI prints the failing step's error itself; full logs are in the run history
        run_config=run_config,
    )
    if not result.success:
        for event in result.all_events:
            if event.is_step_failure and event.step_failure_data.error:
                error = _our_error(event.step_failure_data.error)
                text = error.message.strip().splitlines()[0]
                if ": " in text and "." in text.split(": ", 1)[0]:
                    text = text.split(": ", 1)[1]  # drop "package.module.ErrorClass: "
                raise WarehouseError(text, subject=f"{event.step_key} [{partition}]")
        raise WarehouseError("the run failed", subject=f"{source} {partition}")
    return result
