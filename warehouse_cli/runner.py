"""Materialize one partition through the code location's own asset job, recorded in
DAGSTER_HOME's run history."""

from __future__ import annotations

import dagster as dg

from episode_warehouse.errors import PartitionKeyError, WarehouseError
from episode_warehouse.sources import registry
from warehouse_cli.arguments import OPT_IN, STAGES
from warehouse_cli.code_location import load_defs
from warehouse_cli.dead_runs import process_tags, release_dead_runs

SELECTION = "selection"  # the named-selection exports: partitions are export names
SELECTIONS = "lerobot_selections"


def _graphs():
    load_defs()  # puts the project checkout on sys.path: the code location is importable now
    from assets.graph import GRAPHS

    return GRAPHS


def source_assets(source: str):
    """The ``SourceAssets`` of a registered source (its Dagster part, ``assets/sources``)."""
    return _graphs()[registry.get(source).name].source


def dynamic_partitions(source: str) -> str | None:
    """The name of ``source``'s dynamic partitions, or ``None`` when its keys are fixed."""
    if source == SELECTION:
        return SELECTIONS
    return source_assets(source).dynamic


def all_partitions(source: str) -> list[str]:
    """Every key of a source with fixed keys (Atari's 300 game/runs)."""
    return _graphs()[registry.get(source).name].source.partitions.get_partition_keys()


def stage_assets(source: str, through: str | None) -> list[str]:
    """The asset names of ``source``'s stages up to and including ``through`` (default: all but
    the opt-in ones, which are built only when named)."""
    if source == SELECTION:
        return ["selection_lerobot_export"]
    if through is not None and through not in STAGES:
        raise PartitionKeyError(f"unknown stage (expected one of {STAGES})", subject=repr(through))
    graph = _graphs()[registry.get(source).name]
    last = STAGES.index(through) if through is not None else len(STAGES) - 1
    names = []
    for stage in STAGES[: last + 1]:
        if stage in OPT_IN and stage != through:
            continue
        names.append(graph.stages[stage].key.to_user_string())
        if stage == "catalog":
            names.append(graph.statistics.key.to_user_string())
    return names


def _error_names() -> set[str]:
    import episode_warehouse.errors as errors

    return {
        n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, WarehouseError)
    }


def our_error(error):
    """The warehouse's own error in Dagster's chain of causes, else the innermost one."""
    names = _error_names()
    while error.cls_name not in names and error.cause is not None:
        error = error.cause
    return error


def check_key(source: str, partition: str) -> None:
    """``partition`` checked by ``source``'s own rule (``PartitionKeyError`` naming the shape)."""
    if source != SELECTION:
        registry.check_partition(source, partition)


def materialize_partition(
    source: str,
    partition: str,
    through: str | None = None,
    instance: dg.DagsterInstance | None = None,
    video: bool = False,
    resources: dict[str, dict] | None = None,
    assets: list[str] | None = None,
) -> dg.ExecuteInProcessResult:
    """Run the stages of ``source`` for one partition, with their asset checks (``assets``:
    these asset names of the source instead, e.g. its scores).

    ``resources`` overrides resource config for this run (``{"warehouse": {"root": ...}}``);
    everything else comes from the environment when the run starts.

    Raises:
        PartitionKeyError: unknown source, stage or partition key.
        WarehouseError: the run failed; the message is the failing step's error.
    """
    check_key(source, partition)
    instance = instance or dg.DagsterInstance.get()
    dynamic = dynamic_partitions(source)
    if dynamic is not None and not instance.has_dynamic_partition(dynamic, partition):
        instance.add_dynamic_partitions(dynamic, [partition])
    names = assets if assets is not None else stage_assets(source, through)
    run_config: dict = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    exports = [n for n in names if n.endswith("lerobot_export")]
    if exports:
        run_config["ops"] = {n: {"config": {"video": video}} for n in exports}
    if resources:
        run_config["resources"] = {k: {"config": v} for k, v in resources.items()}
    job = load_defs().resolve_implicit_global_asset_job_def()
    from assets.retries import NO_RETRIES_TAG  # the code location is importable now

    release_dead_runs(instance)  # a killed run's pool slots would block this one for ever

    result = job.execute_in_process(
        run_config=run_config,
        instance=instance,
        partition_key=partition,
        asset_selection=[dg.AssetKey(n) for n in names],
        raise_on_error=False,
        # a command line fails fast: sources are retried inside the step (bounded backoff);
        # Dagster's step retries are for the daemon and the cluster, where nobody waits
        tags={"warehouse/source": source, NO_RETRIES_TAG: "off", **process_tags()},
    )
    if not result.success:
        for evaluation in result.get_asset_check_evaluations():
            # a WARN check (the integrity audit) reports; it is not why a run failed
            if not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR:
                problems = evaluation.metadata.get("problems")
                findings = "; ".join(problems.value) if problems is not None else "failed"
                raise WarehouseError(
                    f"check {evaluation.check_name} failed: {findings}",
                    subject=f"{evaluation.asset_key.to_user_string()} [{partition}]",
                    fix="the data is malformed (see the findings); fix the source and rerun",
                )
        for event in result.all_events:
            if event.is_step_failure and event.step_failure_data.error:
                error = our_error(event.step_failure_data.error)
                text = error.message.strip().splitlines()[0]
                if ": " in text and "." in text.split(": ", 1)[0]:
                    text = text.split(": ", 1)[1]  # drop "package.module.ErrorClass: "
                raise WarehouseError(text, subject=f"{event.step_key} [{partition}]")
        raise WarehouseError("the run failed", subject=f"{source} {partition}")
    return result


def score_assets(source: str) -> list[str]:
    """The asset names of ``source``'s scores (``<source>_score_<name>``)."""
    return [a.key.to_user_string() for a in _graphs()[registry.get(source).name].scores]


def materialize_catalog(
    instance: dg.DagsterInstance | None = None,
    resources: dict[str, dict] | None = None,
    asset: str = "episode_catalog",
) -> None:
    """Run the unpartitioned ``episode_catalog`` asset once (the catalog's views; otherwise its
    cron brings it up to date within 15 minutes, and until then the UI says it was never
    materialized although every partition's rows are in); ``asset``: another unpartitioned
    asset of the catalog (``episode_duplicates``).

    Raises:
        WarehouseError: the run failed.
    """
    from assets.retries import NO_RETRIES_TAG

    run_config: dict = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    if resources:
        run_config["resources"] = {k: {"config": v} for k, v in resources.items()}
    instance = instance or dg.DagsterInstance.get()
    release_dead_runs(instance)
    result = (
        load_defs()
        .resolve_implicit_global_asset_job_def()
        .execute_in_process(
            run_config=run_config,
            instance=instance,
            asset_selection=[dg.AssetKey(asset)],
            raise_on_error=False,
            tags={NO_RETRIES_TAG: "off", **process_tags()},
        )
    )
    if not result.success:
        for event in result.all_events:
            if event.is_step_failure and event.step_failure_data.error:
                text = our_error(event.step_failure_data.error).message.strip().splitlines()[0]
                raise WarehouseError(text, subject=asset)
        raise WarehouseError("the run failed", subject=asset)
