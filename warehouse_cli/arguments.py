"""Command-line arguments shared by ``materialize`` and ``backfill`` (no heavy imports here:
every command parses them)."""

from __future__ import annotations

STAGES = ("raw", "decoded", "ted", "catalog", "standardized", "lerobot")
# built only when asked for (--through standardized, or selected in the UI): an OXE dataset
# Octo has no transform for, or a partition without a mapping, is refused by name
OPT_IN = ("standardized",)


def add_source_arguments(parser, partition_help: str, *, many: bool = False) -> None:
    """The ``SOURCE PARTITION`` arguments (``PARTITION...`` when ``many``) and ``--through``."""
    from episode_warehouse.sources import registry

    parser.add_argument("source", choices=registry.names())
    if many:
        parser.add_argument("partitions", nargs="*", help=partition_help)
    else:
        parser.add_argument("partition", help=partition_help)
    parser.add_argument(
        "--through",
        choices=STAGES,
        default=None,
        help="last stage to build (default: all but standardized, which is built when named)",
    )


def resource_config(args) -> dict[str, dict]:
    """Resource config from command-line options (everything else comes from the environment)."""
    from episode_warehouse.storage import root_setting

    return {"warehouse": {"root": root_setting(args.root)}} if args.root else {}
