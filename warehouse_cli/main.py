"""``warehouse``: demo, materialize, export, publish, sql, view, ui, cluster, backfill, drop,
recut, fixtures.

Errors print one line and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from episode_warehouse.errors import ConfigError, WarehouseError
from warehouse_cli.arguments import add_source_arguments, resource_config
from warehouse_cli.environment import (
    PROJECT_ROOT,
    cli_instance,
    dagster_home_base,
)

# top-level modules of the extras (pyproject.toml), for a clear error in a bare install
_EXTRA_OF = {
    **dict.fromkeys(
        (
            "dagster",
            "dagster_webserver",
            "dagster_graphql",
            "cv2",
            "PIL",
            "isal",
            "matplotlib",
            "torchvision",
            "datasets",
            "huggingface_hub",
            "tqdm",
            "google.protobuf",
            "packaging",
            "uvicorn",
            "starlette",
        ),
        "pipeline",
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "dagster_postgres",
            "dagster_celery",
            "dagster_k8s",
            "psycopg2",
            "redis",
            "celery",
            "kubernetes",
        ),
        "cluster",
    ),  # fmt: skip
    "lerobot": "lerobot",
    "gcp_storage_emulator": "testing",
}


def _extra_of(module: str) -> str | None:
    """The extra that installs ``module``: the table above, or a source's own (its ``Source``
    declares ``extra`` and ``modules``)."""
    from episode_warehouse.sources import registry

    sources = {m: s.extra for s in map(registry.get, registry.names()) for m in s.modules}
    return _EXTRA_OF.get(module) or sources.get(module)


def cmd_sql(args: argparse.Namespace) -> int:
    from episode_warehouse.catalog.query import QueryLimits, run_query
    from episode_warehouse.storage import parse_root
    from warehouse_cli.output import print_table

    limits = QueryLimits(
        timeout_s=args.timeout, memory_limit=args.memory_limit, max_rows=args.limit + 1
    )
    columns, rows = run_query(parse_root(args.root), args.query, limits=limits)
    print_table(columns, rows, args.limit)
    return 0


def cmd_materialize(args: argparse.Namespace) -> int:
    from warehouse_cli.runner import materialize_catalog, materialize_partition

    started = time.perf_counter()
    instance = cli_instance(args.root)
    result = materialize_partition(
        args.source,
        args.partition,
        args.through,
        instance=instance,
        video=args.video,
        resources=resource_config(args),
    )
    if args.through in (
        None,
        "catalog",
        "standardized",
        "lerobot",
    ):  # the partition's rows are in: the views
        materialize_catalog(instance=instance, resources=resource_config(args))
    from warehouse_cli.console import partition_line

    print(partition_line(args.source, args.partition, result, time.perf_counter() - started))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from episode_warehouse.catalog.query import check_read_only
    from episode_warehouse.export.request import check_export_name, selection_file
    from episode_warehouse.paths import WarehouseLayout
    from warehouse_cli.runner import materialize_partition

    check_export_name(args.name)
    check_read_only(args.query)
    root = WarehouseLayout.from_root(args.root).root
    rel = selection_file(args.name)
    registered = root.read_text(rel)
    if registered is not None and registered != args.query:
        raise WarehouseError(
            "a selection of this name exists with another query",
            subject=root.location(rel),
            fix="choose another name or delete the file",
        )
    if registered is None:
        root.write_text(rel, args.query, expected=None)
    print(f"exporting {args.name}: the query's episodes as a LeRobot dataset"
          + (" (AV1 video)" if args.video else " (PNG frames)") + " ...", flush=True)  # fmt: skip
    try:
        materialize_partition(
            "selection",
            args.name,
            instance=cli_instance(args.root),
            video=args.video,
            resources=resource_config(args),
        )
    except BaseException:
        if registered is None:  # a refused export leaves no selection behind: the fix can reuse it
            root.write_text(rel, None, expected=args.query)
        raise
    where = root.location(f"lerobot/{args.name}")
    print(f"exported {args.name} to {where}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from episode_warehouse.export.publish import publish_export
    from episode_warehouse.hub.url import HubUrl, parse_hub_url
    from episode_warehouse.paths import WarehouseLayout

    target = parse_hub_url(args.url, setting="URL")
    if target.repo_type != "dataset" or not target.repo_id:
        raise ConfigError(
            "a LeRobot export is published to one dataset repo",
            subject=args.url,
            fix="write hf://datasets/OWNER/NAME",
        )
    if args.revision and target.revision and args.revision != target.revision:
        raise ConfigError(
            f"two branches: @{target.revision} and --revision {args.revision}",
            subject=args.url,
            fix="name the branch once",
        )
    target = HubUrl("dataset", target.repo_id, args.revision or target.revision)
    done = publish_export(
        WarehouseLayout.from_root(args.root), args.name, target, private=args.private,
        license=args.license,
    )  # fmt: skip
    branch = target.revision or "main"
    print(
        f"published {args.name} to {done.url} (branch {branch}): {len(done.uploaded)} file(s) "
        f"uploaded ({done.bytes_uploaded / 1e6:.1f} MB), {done.unchanged} unchanged, "
        f"{len(done.deleted)} deleted"
    )
    load = f'"{target.repo_id}"' + ("" if branch == "main" else f', revision="{branch}"')
    print(f"load it: LeRobotDataset({load})")
    return 0


def cmd_fixtures(args: argparse.Namespace) -> int:
    from episode_warehouse.atomic import ensure_writable_dir

    folder = ensure_writable_dir(Path(args.folder), "fixtures", "the FOLDER argument")
    if args.kind == "droid":
        from warehouse_fixtures.droid import write_droid

        args.shards, args.per_shard = args.shards or 8, args.per_shard or 2
        written, _ = write_droid(folder, args.shards, args.per_shard, keep=False)
        print(
            f"wrote DROID ({args.shards} shards of {args.per_shard} episodes, RLDS 1.0.1) to "
            f"{written}; build it: OPENX_URL={args.folder} ./warehouse materialize openx droid "
            f"(or as ranges: droid@00000-{min(args.shards, 4) - 1:05d}, ...)"
        )
        return 0
    if args.kind == "droid_scale":
        from warehouse_fixtures.droid_scale import write_droid_scale

        per_shard = None if args.per_shard == 0 else (args.per_shard or 1)
        scale = write_droid_scale(folder, shards=args.shards or 2048, per_shard=per_shard)
        print(
            f"wrote DROID at scale: {scale.shards} shards, {scale.episodes} episodes, "
            f"{scale.steps} steps, {scale.bytes / 1e9:.2f} GB in {scale.seconds} s to "
            f"{scale.folder}; list it as ranges: OPENX_URL={args.folder} "
            "OPENX_SHARD_RANGES=droid=32 (docs/droid.md)"
        )
        return 0
    if args.kind == "reaching":
        from warehouse_fixtures.curation_robot import write_reaching_with_copy

        pairs = write_reaching_with_copy(folder, args.episodes, args.planted)
        print(
            f"wrote reach ({args.episodes} episodes + {sum(map(len, pairs.values()))} planted "
            f"duplicates) and reach_copy (its first shard again) to {args.folder}; build them: "
            f"OPENX_URL={args.folder} ./warehouse materialize openx reach (and reach_copy)"
        )
        return 0
    if args.kind == "mt_opt":
        from warehouse_cli.oxe_folders import SAMPLES
        from warehouse_fixtures.mt_opt import write_mt_opt_folder

        samples = Path(args.samples or SAMPLES)
        shard = samples / "rlds" / "mt_opt_rlds"
        if not shard.is_dir():
            raise ConfigError(
                f"no mt_opt sample here (it is the TFDS authors' file, in {shard})",
                subject=str(samples),
                fix="pass --samples PATH naming the samples folder (the project's ../shared/"
                "samples in a clone beside it)",
            )
        written = write_mt_opt_folder(samples, folder)
        print(
            f"wrote {written} (the TFDS authors' mt_opt shard with its builder's features.json); "
            f"build it: OPENX_URL={args.folder} ./warehouse materialize openx mt_opt_rlds"
        )
        return 0
    from warehouse_fixtures.demo import write_demo_fixtures

    summary = write_demo_fixtures(folder)
    print(
        f"wrote fixtures to {args.folder}: Atari runs {sorted(summary['atari'])}, "
        f"OpenX datasets {sorted(summary['openx'])}"
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from warehouse_cli.demo import run_demo

    return run_demo(Path(args.folder).resolve(), bucket=args.bucket)


def cmd_ui(args: argparse.Namespace) -> int:
    from warehouse_cli.ui import run_ui

    return run_ui(
        args.port, Path(args.demo).resolve() if args.demo else None, viewer_port=args.viewer_port
    )


def cmd_view(args: argparse.Namespace) -> int:
    from warehouse_cli.view import run_view

    return run_view(args.root, args.port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="warehouse", description=__doc__)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="every log line (Dagster's, lerobot's, ...)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="build every asset of the embedded fixtures, headless")
    p.add_argument(
        "--folder",
        default=str(PROJECT_ROOT / "demo-data"),
        help="where fixtures and the warehouse go (default: ./demo-data)",
    )
    p.add_argument(
        "--bucket",
        action="store_true",
        help="use gs://demo-warehouse/wh on the demo's GCS emulator as the warehouse root, "
        "then stream a selection from it (docs/object-storage.md)",
    )
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("materialize", help="materialize one partition through the asset graph")
    add_source_arguments(p, "e.g. Pong/5, cmu_stretch or lerobot/pusht")
    p.add_argument("--video", action="store_true", help="LeRobot export as AV1 video (lossy)")
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.set_defaults(func=cmd_materialize)

    p = sub.add_parser("export", help="export a SQL selection of episodes as a LeRobot dataset")
    p.add_argument("name", help="the export's name (a folder under <root>/lerobot/)")
    p.add_argument("query", help="SELECT source, partition, episode, start, length FROM ...")
    p.add_argument("--video", action="store_true", help="AV1 video instead of PNG (lossy)")
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "publish",
        help="push a LeRobot export to a hub dataset repo, with a dataset card (one commit)",
    )
    p.add_argument("name", help="the export's name (a folder under <root>/lerobot/)")
    p.add_argument("url", help="hf://datasets/OWNER/NAME (token: HF_TOKEN or hf auth login)")
    p.add_argument("--private", action="store_true", help="create the repo private")
    p.add_argument("--revision", help="the branch to commit to (default: main; made if new)")
    p.add_argument(
        "--license", help="the sources' license as the hub names it, e.g. cc-by-4.0 (if known)"
    )
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.set_defaults(func=cmd_publish)

    from warehouse_cli import oxe_folders

    oxe_folders.add_parser(sub)

    p = sub.add_parser("sql", help="read-only SQL over the episode catalog")
    p.add_argument("query")
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.add_argument("--limit", type=int, default=50, help="rows to print (and to fetch)")
    p.add_argument(
        "--timeout",
        type=float,
        default=float(os.environ.get("EPISODE_WAREHOUSE_SQL_TIMEOUT_S") or 60),
        help="seconds before the query is stopped (default: $EPISODE_WAREHOUSE_SQL_TIMEOUT_S "
        "or 60)",
    )
    p.add_argument(
        "--memory-limit",
        default=os.environ.get("EPISODE_WAREHOUSE_SQL_MEMORY") or "2GB",
        help="DuckDB memory limit (default: $EPISODE_WAREHOUSE_SQL_MEMORY or 2GB)",
    )
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser("view", help="the episode viewer: a local web app over a warehouse root")
    p.add_argument(
        "--root", help="warehouse root, local or gs:// (default: $EPISODE_WAREHOUSE_ROOT)"
    )
    p.add_argument("--port", type=int, default=8787, help="port on 127.0.0.1 (default: 8787)")
    p.set_defaults(func=cmd_view)

    p = sub.add_parser("ui", help="start the Dagster UI and the episode viewer")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument(
        "--viewer-port",
        type=int,
        default=8787,
        help="the episode viewer's port (default: 8787; 0: no viewer); materializations link to it",
    )
    p.add_argument(
        "--demo",
        nargs="?",
        const=str(PROJECT_ROOT / "demo-data"),
        default=None,
        help="serve the demo fixtures (GCS emulator) and use the demo warehouse",
    )
    p.set_defaults(func=cmd_ui)

    from warehouse_cli.cluster.commands import add_parsers

    add_parsers(sub)  # cluster up|status|down, backfill
    from warehouse_cli import curation, partitions

    partitions.add_parsers(sub)  # drop, recut
    curation.add_parsers(sub)  # curate, describe

    p = sub.add_parser(
        "fixtures",
        help="write fixtures in the real formats: the demo's (Atari bucket, OpenX mirror), "
        "DROID's, or the mt_opt sample as a published RLDS folder",
    )
    p.add_argument("folder")
    p.add_argument(
        "--kind",
        choices=("demo", "droid", "droid_scale", "mt_opt", "reaching"),
        default="demo",
        help="demo (default); droid: DROID's schema, --shards x --per-shard episodes; "
        "droid_scale: DROID's 2,048 shards with 8x8 cameras, --per-shard episodes each "
        "(default 1; 0: DROID's own 46-47, 95,658 in all); mt_opt: "
        "the shared sample's shard with its TFDS builder's features.json; reaching: a robot "
        "dataset with planted duplicates (docs/curation.md)",
    )
    p.add_argument(
        "--shards", type=int, help="droid: TFRecord shards (default 8; droid_scale: 2048)"
    )
    p.add_argument(
        "--per-shard", type=int, help="droid: episodes per shard (default 2; droid_scale: 1)"
    )
    p.add_argument("--samples", help="mt_opt: the samples folder (default: ../shared/samples)")
    p.add_argument("--episodes", type=int, default=300, help="reaching: distinct episodes")
    p.add_argument("--planted", type=int, default=30, help="reaching: planted duplicates")
    p.set_defaults(func=cmd_fixtures)
    return parser


def main(argv: list[str] | None = None) -> int:
    from warehouse_cli.console import crash_report, setup

    args = build_parser().parse_args(argv)
    setup(args.verbose)
    try:
        return args.func(args)
    except WarehouseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:
        extra = _extra_of((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print(
            f"error: {exc.name} is not installed: this command needs the {extra} extra. Fix: "
            "pip install 'episode-warehouse[all]' (./warehouse installs it; a training node "
            "needs only the bare package: episode_warehouse.loading, open_ted, warehouse sql)",
            file=sys.stderr,
        )
        return 2
    except Exception as exc:  # noqa: BLE001 - the one place an unexpected error is reported
        print(crash_report(exc, dagster_home_base() / "logs"), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
