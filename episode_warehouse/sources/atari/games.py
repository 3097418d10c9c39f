"""The 60 games x 5 runs of the DQN Replay Dataset, and their partition keys (``Pong/5``)."""

from __future__ import annotations

import re

from episode_warehouse.errors import PartitionKeyError

# batch_rl#33 lists all 60; TorchRL's list lacks the last ten.
GAMES: tuple[str, ...] = (
    "AirRaid", "Alien", "Amidar", "Assault", "Asterix", "Asteroids", "Atlantis", "BankHeist",
    "BattleZone", "BeamRider", "Berzerk", "Bowling", "Boxing", "Breakout", "Carnival",
    "Centipede", "ChopperCommand", "CrazyClimber", "DemonAttack", "DoubleDunk",
    "ElevatorAction", "Enduro", "FishingDerby", "Freeway", "Frostbite", "Gopher", "Gravitar",
    "Hero", "IceHockey", "Jamesbond", "JourneyEscape", "Kangaroo", "Krull", "KungFuMaster",
    "MontezumaRevenge", "MsPacman", "NameThisGame", "Phoenix", "Pitfall", "Pong", "Pooyan",
    "PrivateEye", "Qbert", "Riverraid", "RoadRunner", "Robotank", "Seaquest", "Skiing",
    "Solaris", "SpaceInvaders", "StarGunner", "Tennis", "TimePilot", "Tutankham", "UpNDown",
    "Venture", "VideoPinball", "WizardOfWor", "YarsRevenge", "Zaxxon",
)  # fmt: skip
RUNS: tuple[int, ...] = (1, 2, 3, 4, 5)
PARTITION_KEYS: tuple[str, ...] = tuple(f"{g}/{r}" for g in GAMES for r in RUNS)
_KEY_RE = re.compile(r"^([A-Za-z]+)/([0-9]+)$")


def parse_partition_key(key: str) -> tuple[str, int]:
    """Split ``"Pong/5"`` into ``("Pong", 5)``.

    Raises:
        PartitionKeyError: the key is not one of the 300 game/run partitions.
    """
    match = _KEY_RE.match(key)
    if match and match.group(1) in GAMES and int(match.group(2)) in RUNS:
        return match.group(1), int(match.group(2))
    hint = "keys look like 'Pong/5': a game of the DQN Replay Dataset and a run from 1 to 5"
    if match and match.group(1) not in GAMES:
        close = [g for g in GAMES if g.lower() == match.group(1).lower()]
        if close:
            hint = f"game names are case-sensitive: did you mean '{close[0]}/{match.group(2)}'?"
    raise PartitionKeyError("not an Atari partition", subject=repr(key), fix=hint)
