"""Every Dagster stage of the warehouse, declared as data (:class:`Stage`) and made into an asset
by one factory (:func:`stage_asset`): a source's own raw and decoded stages (``assets/sources``),
the stages generated for every source (TED, catalog rows, statistics, standardized, LeRobot
export, scores) and the warehouse-wide ones (duplicates).

What every stage gets from the factory, once: the partition key checked by the source's rule,
only transient failures retried (``assets/retries.py``), the owners, eager automation unless it
says otherwise, and a :class:`StageRun` with the resources it names. A stage's ``run`` is the
wiring: partition key -> resource -> one domain call -> :func:`~assets.results.built_result`.
"""

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from assets import versions
from assets.retries import only_transient_retries
from episode_warehouse.sources import registry
from resources import RunSettings, WarehouseStorage

OWNERS = ["team:data-platform"]


@dataclass(frozen=True)
class StageRun:
    """What one materialization of a stage gets: the partition key (checked; None for a stage
    of the whole warehouse), the warehouse's storage, the run's settings, the code version, the
    run's id; a source's own stages also get the source's resource, and a stage with a config
    class its run config."""

    key: str
    warehouse: WarehouseStorage
    settings: RunSettings
    code_version: str
    run_id: str = ""
    source: Any = None  # the source's own resource (its raw and decoded stages)
    config: Any = None  # the stage's dg.Config (the exports' video switch)

    def raw_folder(self, source: str) -> tuple[Any, dict[str, Any]]:
        """This partition's raw folder of ``source``, and what every mirror call takes besides
        it: the warehouse's root, the code version, the source's parallel downloads."""
        layout = self.warehouse.layout()
        common = {"root": layout.root, "code_version": self.code_version,
                  "workers": self.source.download_workers}  # fmt: skip
        return layout.raw_dir(source, self.key), common

    def decode_args(self) -> dict[str, Any]:
        """What every decoded stage's call takes besides the layout and the key: the code
        version and the run's limits on what a source declares."""
        return {"code_version": self.code_version, "limits": self.settings.input_limits()}


@dataclass(frozen=True)
class Stage:
    """One stage.

    Attributes:
        name: the asset's name (``atari_replay_files``, ``openx_ted``).
        run: the stage: :class:`StageRun` -> one domain call -> the MaterializeResult.
        description: what the asset is, for the UI.
        kinds: the UI's kind tags.
        code_version: bumped when a byte of its output changes (``assets/versions.py``).
        group: its Dagster group (a source's raw, decoded and TED stages: the source's).
        eager: materialized when what it reads changed (Dagster's eager automation).
        cron: instead, on this schedule (whole-warehouse stages).
        pool: the Dagster pool bounding its concurrent runs (``download``, ``catalog_writer``).
        checks: (name, description) of checks the stage reports itself (no extra step).
        config: its run config's class, if it has one.
        retry_policy: Dagster's step retries (the raw stages': transient source failures).
    """

    name: str
    run: Callable[[StageRun], dg.MaterializeResult]
    description: str
    kinds: frozenset[str] | set[str]
    code_version: str
    group: str = ""
    eager: bool = True
    cron: str | None = None
    pool: str | None = None
    checks: tuple[tuple[str, str], ...] = ()
    config: type[dg.Config] | None = None
    retry_policy: dg.RetryPolicy | None = None


def stage_asset(
    stage: Stage,
    *,
    source: str | None = None,
    partitions: dg.PartitionsDefinition | None = None,
    deps: Sequence[dg.AssetsDefinition] = (),
    resource: tuple[str, type] | None = None,
) -> dg.AssetsDefinition:
    """The asset of ``stage``: of one ``source``'s ``partitions`` (its keys checked by the
    source's rule) or of the whole warehouse (no partitions); ``resource``: (key, type) of the
    source's own resource, passed as :attr:`StageRun.source`."""
    return dg.asset(
        name=stage.name,
        partitions_def=partitions,
        deps=list(deps),
        group_name=stage.group or None,
        kinds=set(stage.kinds),
        code_version=stage.code_version,
        automation_condition=(
            dg.AutomationCondition.on_cron(stage.cron)
            if stage.cron
            else (dg.AutomationCondition.eager() if stage.eager else None)
        ),
        owners=OWNERS,
        pool=stage.pool,
        retry_policy=stage.retry_policy,
        description=stage.description,
        check_specs=[
            dg.AssetCheckSpec(name, asset=stage.name, description=text)
            for name, text in stage.checks
        ],
    )(_body(stage, source, resource))


def _body(stage: Stage, source: str | None, resource: tuple[str, type] | None):
    """The asset function: its signature names the resources (and config) the stage gets, so
    Dagster passes them (and so may a test)."""

    def body(context: dg.AssetExecutionContext, **given) -> dg.MaterializeResult:
        with only_transient_retries(context):
            key = context.partition_key if context.has_partition_key else ""
            if source is not None and key:
                key = registry.check_partition(source, key)
            return stage.run(
                StageRun(
                    key,
                    given["warehouse"],
                    given["run_settings"],
                    versions.of(context),
                    context.run_id,
                    given[resource[0]] if resource else None,
                    given.get("config"),
                )
            )

    p = inspect.Parameter
    params = [p("context", p.POSITIONAL_OR_KEYWORD, annotation=dg.AssetExecutionContext)]
    if stage.config is not None:
        params.append(p("config", p.KEYWORD_ONLY, annotation=stage.config))
    if resource is not None:
        params.append(p(resource[0], p.KEYWORD_ONLY, annotation=resource[1]))
    params += [
        p("warehouse", p.KEYWORD_ONLY, annotation=WarehouseStorage),
        p("run_settings", p.KEYWORD_ONLY, annotation=RunSettings),
    ]
    body.__signature__ = inspect.Signature(params, return_annotation=dg.MaterializeResult)  # type: ignore[attr-defined]
    body.__annotations__ = {q.name: q.annotation for q in params} | {"return": dg.MaterializeResult}
    body.__name__ = body.__qualname__ = stage.name
    body.__doc__ = stage.description
    return body


@dataclass(frozen=True)
class CheckRun:
    """What one evaluation of a check gets: the partition key (``""`` unpartitioned), the
    warehouse's storage and the op's context (what the exports' checks name their folder by)."""

    key: str
    warehouse: WarehouseStorage
    context: dg.OpExecutionContext


@dataclass(frozen=True)
class Check:
    """An asset check, declared: its name, what it checks (for the UI), the check itself, and
    whether a failure blocks what reads the asset."""

    name: str
    run: Callable[[CheckRun], dg.AssetCheckResult]
    description: str
    blocking: bool = False


def check_asset(check: Check, asset: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    """The asset check of ``check`` over ``asset``."""

    @dg.asset_check(asset=asset, name=check.name, blocking=check.blocking,
                    description=check.description)  # fmt: skip
    def _check(
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseStorage
    ) -> dg.AssetCheckResult:
        op = context.op_execution_context
        return check.run(CheckRun(op.partition_key if op.has_partition_key else "", warehouse, op))

    return _check
