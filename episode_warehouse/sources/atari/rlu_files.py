"""File names of the RL Unplugged Atari copy: ``<Game>/run_<run>-<index:05d>-of-<count:05d>``.

One file per 1M-step checkpoint of a run (50 per run, some games fewer), in time order; the
copy holds 46 of the 60 games (``RLU_GAMES``, from TFDS's ``atari_utils._GAMES``).
"""

from __future__ import annotations

import re

from episode_warehouse.blobstore import BlobInfo, BlobStore
from episode_warehouse.errors import CorruptInputError

RLU_GAMES: tuple[str, ...] = (
    "Alien", "Amidar", "Assault", "Asterix", "Atlantis", "BankHeist", "BattleZone", "BeamRider",
    "Boxing", "Breakout", "Carnival", "Centipede", "ChopperCommand", "CrazyClimber",
    "DemonAttack", "DoubleDunk", "Enduro", "FishingDerby", "Freeway", "Frostbite", "Gopher",
    "Gravitar", "Hero", "IceHockey", "Jamesbond", "Kangaroo", "Krull", "KungFuMaster",
    "MsPacman", "NameThisGame", "Phoenix", "Pong", "Pooyan", "Qbert", "Riverraid", "RoadRunner",
    "Robotank", "Seaquest", "SpaceInvaders", "StarGunner", "TimePilot", "UpNDown",
    "VideoPinball", "WizardOfWor", "YarsRevenge", "Zaxxon",
)  # fmt: skip
_NAME_RE = re.compile(r"^run_([0-9]+)-([0-9]{5})-of-([0-9]{5})$")


def file_name(run: int, index: int, count: int) -> str:
    return f"run_{run}-{index:05d}-of-{count:05d}"


def parse_file_name(name: str) -> tuple[int, int, int] | None:
    """``(run, index, count)`` of an RLU file name (the last path part), None otherwise."""
    match = _NAME_RE.match(name.rsplit("/", 1)[-1])
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def list_rlu_run(store: BlobStore, game: str, run: int) -> dict[int, BlobInfo]:
    """The run's files by checkpoint index.

    Raises:
        CorruptInputError: files that disagree on the count (``-of-NNNNN``), or two files for
            one index.
    """
    found: dict[int, BlobInfo] = {}
    counts = set()
    for blob in store.list(f"{game}/run_{run}-"):
        parsed = parse_file_name(blob.name)
        if parsed is None or parsed[0] != run:
            continue
        _, index, count = parsed
        counts.add(count)
        if index in found:
            raise CorruptInputError(
                f"two files for checkpoint {index}", subject=f"{store.url}/{game}/"
            )
        found[index] = blob
    if len(counts) > 1:
        raise CorruptInputError(
            f"the run's files disagree on their count: {sorted(counts)}",
            subject=f"{store.url}/{game}/run_{run}-*",
            fix="mirror the files of one release of the run",
        )
    return found
