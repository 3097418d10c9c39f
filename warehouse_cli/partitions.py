"""``warehouse drop`` and ``warehouse recut``: remove partitions, or cut a dataset into shard
ranges anew, in one command each.

A drop removes every stage of each partition (catalog rows first: the counts stop at once;
:mod:`episode_warehouse.stages.partitions`) and its key from Dagster's dynamic partitions, then
rebuilds the catalog's views. Either is refused while a run of the instance holds one of the
partitions (queued, starting, running): a drop under a live run would leave half of it.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from episode_warehouse.errors import BusyError, ConfigError, PartitionKeyError
from warehouse_cli.arguments import resource_config
from warehouse_cli.environment import cli_instance

if TYPE_CHECKING:  # the pipeline extra: imported where a command runs (a bare install parses)
    import dagster as dg

# the run states that hold a partition: queued, starting, running, being cancelled
_LIVE = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")
PARTITION_TAG = "dagster/partition"


def check_not_running(instance: dg.DagsterInstance, source: str, keys: list[str]) -> None:
    """Refuse when a live run of ``source`` holds one of ``keys`` (a killed CLI's runs are
    marked failed first, as before any run).

    Raises:
        BusyError: naming the runs and the partitions they hold.
    """
    import dagster as dg

    from warehouse_cli.dead_runs import release_dead_runs

    release_dead_runs(instance)
    wanted = set(keys)
    statuses = [dg.DagsterRunStatus[name] for name in _LIVE]
    held = [
        (run.run_id, run.tags[PARTITION_TAG])
        for run in instance.get_runs(filters=dg.RunsFilter(statuses=statuses))
        if run.tags.get(PARTITION_TAG) in wanted
        and run.tags.get("warehouse/source", source) == source
    ]
    if held:
        raise BusyError(
            "a run holds " + ", ".join(f"{key} (run {run_id[:8]})" for run_id, key in held),
            subject=f"{source} partitions",
            fix="wait for the run to finish (or cancel it in the Dagster UI), then run this again",
        )


def drop(args: argparse.Namespace, keys: list[str] | None = None) -> list[str]:
    """Drop ``keys`` (default: the command's) of ``args.source``; the artifacts removed."""
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources import registry
    from episode_warehouse.stages.partitions import drop_partition
    from warehouse_cli.runner import dynamic_partitions

    keys = list(args.partitions if keys is None else keys)
    for key in keys:
        registry.check_partition(args.source, key)
    instance = cli_instance(args.root)
    check_not_running(instance, args.source, keys)
    root = WarehouseLayout.from_root(args.root).root
    removed = []
    dynamic = dynamic_partitions(args.source)
    for key in keys:
        removed += drop_partition(root, args.source, key)
        if dynamic is not None and instance.has_dynamic_partition(dynamic, key):
            instance.delete_dynamic_partition(dynamic, key)
    from episode_warehouse.catalog.store import CatalogStore

    CatalogStore(root).ensure_database(rebuild=True)  # the views list published files only
    return removed


def cmd_drop(args: argparse.Namespace) -> int:
    removed = drop(args)
    print(
        f"dropped {len(args.partitions)} partition(s) of {args.source}: "
        f"{len(removed)} artifact(s) removed" + ("" if removed else " (none was there)")
    )
    return 0


def cmd_recut(args: argparse.Namespace) -> int:
    from episode_warehouse.partition_keys import SEPARATOR
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.ted.dataset_parts import dataset_partitions
    from warehouse_cli.console import partition_line
    from warehouse_cli.runner import materialize_catalog, materialize_partition

    if args.source != "openx":
        raise ConfigError(
            "shard ranges are partitions of OpenX RLDS datasets",
            subject=args.source,
            fix="warehouse recut openx DATASET SHARDS_PER_RANGE",
        )
    if SEPARATOR in args.dataset:
        raise PartitionKeyError(
            "recut takes a dataset's name, not a range", subject=repr(args.dataset),
            fix=f"warehouse recut openx {args.dataset.split(SEPARATOR)[0]} {args.shards}",
        )  # fmt: skip
    new = [r.key for r in _plan(args.dataset, args.shards)]
    _check_rebuildable(new, args.through)
    root = WarehouseLayout.from_root(args.root).root
    old = [k for k in dataset_partitions(root, "openx", args.dataset) if k not in new]
    instance = cli_instance(args.root)
    check_not_running(instance, "openx", old + new)
    if old:
        drop(args, old)
        print(f"dropped {', '.join(old)}")
    resources = resource_config(args)
    for key in new:
        started = time.perf_counter()
        result = materialize_partition(
            "openx", key, args.through, instance=instance, resources=resources
        )
        print(partition_line("openx", key, result, time.perf_counter() - started))
    if args.through in (None, "catalog", "standardized", "lerobot"):
        materialize_catalog(instance=instance, resources=resources)
    print(f"{args.dataset} is now {len(new)} range(s) of {args.shards} shard(s)")
    return 0


def _check_rebuildable(keys: list[str], through: str | None) -> None:
    """Before anything is dropped: every new range's key, and the name of its export where the
    export is built, is one the stages take (a recut whose export name was refused dropped the
    old ranges and then failed, leaving a quarter of the dataset).

    Raises:
        PartitionKeyError: naming the key or export name that would be refused.
    """
    from episode_warehouse.export.request import partition_export_name
    from episode_warehouse.sources import registry

    for key in keys:
        registry.check_partition("openx", key)
        if through in (None, "lerobot"):
            partition_export_name("openx", key)


def _plan(dataset: str, per_range: int):
    """The ranges of ``dataset``'s version as the OpenX source lists it now (``OPENX_URL``,
    ``OPENX_VERSIONS``)."""
    from warehouse_cli.code_location import load_defs

    load_defs()  # the code location is importable now
    from assets.sources.openx import OpenXSource
    from episode_warehouse.blobstore import open_blob_store
    from episode_warehouse.sources.openx.rlds.listing import list_rlds
    from episode_warehouse.sources.openx.shard_ranges import plan_ranges

    source = OpenXSource()
    listing = list_rlds(
        open_blob_store(source.source_url()), dataset, source.version_pins().get(dataset)
    )
    return plan_ranges(dataset, len(listing.shards), per_range)


def add_parsers(sub) -> None:
    """``drop`` and ``recut``."""
    p = sub.add_parser(
        "drop",
        help="remove partitions: every stage and their catalog rows (refused while a run holds "
        "one)",
    )
    p.add_argument("source", help="atari, openx, lerobot or minari")
    p.add_argument("partitions", nargs="+", metavar="PARTITION")
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.set_defaults(func=cmd_drop)

    p = sub.add_parser(
        "recut",
        help="cut an OpenX RLDS dataset into shard ranges anew: drop its partitions, build "
        "the new ranges",
    )
    p.add_argument("source", help="openx")
    p.add_argument("dataset", help="the dataset's name, e.g. droid")
    p.add_argument("shards", type=int, metavar="SHARDS_PER_RANGE")
    p.add_argument("--through", help="the last stage to build (default: every stage)")
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.set_defaults(func=cmd_recut)
