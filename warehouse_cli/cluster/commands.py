"""Command line of the cluster: ``warehouse cluster up|status|down``, ``warehouse backfill``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from episode_warehouse.errors import ClusterUnreachableError, ConfigError, PartitionKeyError
from warehouse_cli.arguments import add_source_arguments
from warehouse_cli.cluster.services import DEFAULT_DIR


def _limits(values: list[str]) -> dict[str, int]:
    out = {}
    for value in values:
        source, _, limit = value.partition("=")
        if not limit.isdigit() or int(limit) < 1:
            raise ConfigError(
                "not a run limit", subject=repr(value), fix="--limit SOURCE=N, e.g. atari=2"
            )
        out[source] = int(limit)
    return out


def cmd_up(args: argparse.Namespace) -> int:
    from warehouse_cli.cluster import services

    print(f"starting a cluster with {args.workers} worker(s) in {args.dir} ...", flush=True)
    state = services.up(Path(args.dir), args.workers, _limits(args.limit))
    print(f"cluster up: {len(state['workers'])} workers, Postgres {state['postgres']}")
    print(f"Dagster UI: {state['webserver']}")
    print(f"logs: {state['logs']}   stop it with: warehouse cluster down --dir {args.dir}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from warehouse_cli.cluster import services

    state = services.status(Path(args.dir))
    if state["running"]:
        state["answering"] = services.health(Path(args.dir))
    if args.json:
        print(json.dumps(state, indent=1, allow_nan=False))
        return 0 if state["running"] and all(state["answering"].values()) else 1
    if not state["running"]:
        print(f"no cluster runs in {state['dir']}")
        return 1
    where = {"webserver": state["webserver"], "postgres": state["postgres"]}
    where["redis"] = state["redis"]
    for name, ok in state["answering"].items():
        print(f"{name:<10} {'answers' if ok else 'NOT ANSWERING':<14} {where.get(name, '')}")
    missing = [name for name, ok in state["answering"].items() if not ok]
    if missing:
        print(
            f"{len(missing)} service(s) not answering: `warehouse cluster up --dir {args.dir}` "
            f"starts the missing ones; logs in {state['logs']}"
        )
        return 1
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from warehouse_cli.cluster import services

    state = services.down(Path(args.dir))
    if state["pids"]:
        print(f"processes left: {state['pids']}")
        return 1
    print(f"cluster in {state['dir']} stopped (data kept; `warehouse cluster up` reuses it)")
    return 0


def _partitions(instance, source: str, wanted: list[str], everything: bool) -> list[str]:
    from warehouse_cli.runner import all_partitions, check_key, dynamic_partitions

    if everything:
        dynamic = dynamic_partitions(source)
        if dynamic is not None:  # the datasets the sensors (or earlier commands) added
            return instance.get_dynamic_partitions(dynamic)
        return all_partitions(source)
    if not wanted:
        raise PartitionKeyError("no partition named", subject=source, fix="name some, or --all")
    for key in wanted:
        check_key(source, key)
    return wanted


def cmd_backfill(args: argparse.Namespace) -> int:
    from warehouse_cli.cluster import backfill, services

    state = services.status(Path(args.dir))
    if not state["running"]:
        raise ConfigError(
            "no cluster runs in this folder",
            subject=state["dir"],
            fix=f"warehouse cluster up --dir {args.dir}",
        )
    try:
        return _backfill(args, state)
    except backfill.DATABASE_ERRORS as exc:
        raise ClusterUnreachableError(
            f"lost the cluster's database ({type(exc).__name__}); a submitted backfill goes "
            "on once PostgreSQL is back",
            subject=state["postgres"],
            fix=f"`warehouse cluster status --dir {args.dir}` shows what answers, `warehouse "
            f"cluster up --dir {args.dir}` restarts it; the UI's Backfills page follows it",
        ) from None


def _backfill(args: argparse.Namespace, state: dict) -> int:
    from warehouse_cli.cluster import backfill, services
    from warehouse_cli.runner import stage_assets

    instance = services.open_instance(Path(state["dir"]))
    partitions = _partitions(instance, args.source, args.partitions, args.all)
    assets = stage_assets(args.source, args.through)
    backfill_id = backfill.submit(instance, state["webserver"], args.source, partitions, assets)
    print(f"backfill {backfill_id}: {len(partitions)} partition(s) of {args.source}")
    print(f"  {state['webserver']}/runs/b/{backfill_id}", flush=True)
    if not args.wait:
        return 0
    outcomes = backfill.wait(instance, backfill_id, partitions, lambda line: print("  " + line))
    failed = [o for o in outcomes if o.status != "SUCCESS"]
    for o in failed:
        print(f"failed: {o.partition} ({o.status}, {o.runs} run(s)): {o.error}")
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} partition(s) succeeded")
    return 1 if failed else 0


def add_parsers(sub) -> None:
    cluster = sub.add_parser("cluster", help="a local cluster: Postgres, Redis, Celery workers")
    csub = cluster.add_subparsers(dest="cluster_command", required=True)
    p = csub.add_parser("up", help="start every service; returns when all answer")
    p.add_argument("--workers", type=int, default=2, help="Celery workers (default 2)")
    p.add_argument("--dir", default=str(DEFAULT_DIR), help="cluster folder (default ./.cluster)")
    p.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="SOURCE=N",
        help="at most N runs of SOURCE at once (repeatable)",
    )
    p.set_defaults(func=cmd_up)
    p = csub.add_parser("status", help="addresses, workers and pids")
    p.add_argument("--dir", default=str(DEFAULT_DIR))
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
    p = csub.add_parser("down", help="stop every process of the cluster (data kept)")
    p.add_argument("--dir", default=str(DEFAULT_DIR))
    p.set_defaults(func=cmd_down)

    p = sub.add_parser("backfill", help="one Dagster backfill on a running cluster")
    add_source_arguments(p, "partition keys (or --all)", many=True)
    p.add_argument("--all", action="store_true", help="every known partition of the source")
    p.add_argument("--wait", action="store_true", help="follow it; exit 0 only if all succeed")
    p.add_argument("--dir", default=str(DEFAULT_DIR), help="cluster folder (default ./.cluster)")
    p.set_defaults(func=cmd_backfill)
