"""``warehouse write-oxe``: OXE dataset folders for a mixture, offline.

Each dataset is written as TFDS lays it out (``<out>/<name>/<version>/`` with the real
``features.json`` and ``dataset_info.json``, one TFRecord shard) from the TensorFlow Datasets
authors' published ``features.json`` (``../shared/samples/oxe_features/``, or ``--features``):
every feature the published dataset has, of its declared shape and dtype. Its float states and
actions are smooth functions of each episode's phase, so a policy trained on them learns (its
loss falls); images are shaded ramps, instructions one of a few tasks. Point ``OPENX_URL`` at
the folder and the openx source reads it as it reads ``gs://gresearch/robotics``.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from episode_warehouse.errors import ConfigError
from warehouse_cli.environment import PROJECT_ROOT

SAMPLES = PROJECT_ROOT.parent / "shared" / "samples"
DEFAULT_FEATURES = SAMPLES / "oxe_features"
TASKS = ["pick up the block", "open the drawer", "push the cup to the left"]


def available(features: Path) -> dict[str, Path]:
    """Dataset name -> its published features.json under ``features``."""
    return {p.parts[-3]: p for p in sorted(features.glob("*/*/features.json"))}


def write_oxe_folders(
    out: Path, names: list[str], episodes: int, steps: int, features: Path = DEFAULT_FEATURES
) -> list[Path]:
    """Write each of ``names`` (``episodes`` of ``steps`` steps) under ``out``; their folders.

    Raises:
        ConfigError: no features folder, a dataset it does not hold (with the closest names),
            counts below 1.
    """
    from warehouse_fixtures.oxe_from_features import write_from_features

    if episodes < 1 or steps < 2:
        raise ConfigError(f"{episodes} episodes of {steps} steps", subject="write-oxe",
                          fix="write at least 1 episode of at least 2 steps")  # fmt: skip
    known = available(features)
    if not known:
        raise ConfigError(
            "no published features.json here", subject=str(features),
            fix="pass --features DIR holding <dataset>/<version>/features.json",
        )  # fmt: skip
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise ConfigError(f"no features.json of {name!r}", subject=str(features),
                              fix=f"{hint}known: {', '.join(known)}")  # fmt: skip
    return [
        write_from_features(
            out, name, known[name], [steps] * episodes, learnable=True, instructions=TASKS
        )[0]  # fmt: skip
        for name in names
    ]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "write-oxe",
        help="write OXE dataset folders from the published features.json (offline mixtures)",
    )
    p.add_argument("out", help="the folder to write into (then: OPENX_URL=<out>)")
    p.add_argument(
        "--datasets", required=True, help="comma-separated OXE names, e.g. taco_play,viola"
    )
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--steps", type=int, default=40, help="steps per episode")
    p.add_argument(
        "--features",
        type=Path,
        default=DEFAULT_FEATURES,
        help="folder of <dataset>/<version>/features.json (default: the shared samples)",
    )
    p.set_defaults(func=cmd_write_oxe)


def cmd_write_oxe(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    out = Path(args.out).resolve()
    for folder in write_oxe_folders(out, names, args.episodes, args.steps, args.features):
        print(f"wrote {folder} ({args.episodes} episodes of {args.steps} steps)")
    print(f"next: OPENX_URL={out} ./warehouse materialize openx {names[0]} "
          "--through standardized --root <warehouse root>")  # fmt: skip
    return 0
