"""``warehouse curate`` (scores, duplicates, the catalog's views) and ``warehouse describe``
(Croissant metadata of a partition): docs/curation.md."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from warehouse_cli.arguments import resource_config
from warehouse_cli.environment import cli_instance


def cmd_curate(args: argparse.Namespace) -> int:
    from episode_warehouse.catalog import CatalogStore
    from episode_warehouse.paths import WarehouseLayout
    from warehouse_cli.runner import materialize_catalog, materialize_partition, score_assets

    layout = WarehouseLayout.from_root(args.root)
    instance = cli_instance(args.root)
    resources = resource_config(args)
    partitions = CatalogStore(layout.root).published()
    for source, partition in partitions:
        materialize_partition(source, partition, instance=instance, resources=resources,
                              assets=score_assets(source))  # fmt: skip
    materialize_catalog(instance=instance, resources=resources, asset="episode_duplicates")
    materialize_catalog(instance=instance, resources=resources)
    print(f"scored {len(partitions)} partitions; duplicates found; catalog views rebuilt")
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    from episode_warehouse.export.croissant import write_document
    from episode_warehouse.export.describe import describe_partition, validate
    from episode_warehouse.paths import WarehouseLayout

    doc = describe_partition(WarehouseLayout.from_root(args.root), args.source, args.partition)
    if args.out:
        write_document(doc, Path(args.out))
    else:
        sys.stdout.write(json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    if args.validate:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(args.out) if args.out else Path(tmp) / "croissant.json"
            if not args.out:
                write_document(doc, path)
            records = validate(path, ("episodes",))["episodes"]
        print(f"mlcroissant: valid, {records} episode records", file=sys.stderr)
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "curate",
        help="compute every score of every catalogued partition, find duplicates, rebuild views",
    )
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.set_defaults(func=cmd_curate)

    p = sub.add_parser("describe", help="Croissant metadata (JSON-LD) of a partition")
    p.add_argument("source")
    p.add_argument("partition")
    p.add_argument("--root", help="warehouse root (default: $EPISODE_WAREHOUSE_ROOT)")
    p.add_argument("--out", help="write the document here (default: standard output)")
    p.add_argument(
        "--validate", action="store_true",
        help="load it with mlcroissant and count its records (the curation extra)",
    )  # fmt: skip
    p.set_defaults(func=cmd_describe)
