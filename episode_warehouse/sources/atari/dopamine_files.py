"""Names of the six gzip files of one Dopamine checkpoint, and parsing them back."""

from __future__ import annotations

import re
from dataclasses import dataclass

STORE_ELEMENTS: tuple[str, ...] = ("observation", "action", "reward", "terminal")
COUNTER_ELEMENTS: tuple[str, ...] = ("add_count", "invalid_range")
ELEMENTS: tuple[str, ...] = STORE_ELEMENTS + COUNTER_ELEMENTS
_NAME_RE = re.compile(r"^(?:\$store\$_)?([a-z_]+)_ckpt\.([0-9]+)\.gz$")


def file_name(element: str, suffix: int) -> str:
    """``$store$_observation_ckpt.3.gz`` for store elements, ``add_count_ckpt.3.gz`` otherwise."""
    prefix = "$store$_" if element in STORE_ELEMENTS else ""
    return f"{prefix}{element}_ckpt.{suffix}.gz"


def parse_file_name(name: str) -> tuple[str, int] | None:
    """``(element, suffix)`` for a checkpoint file name, None for anything else."""
    match = _NAME_RE.match(name.rsplit("/", 1)[-1])
    if not match or match.group(1) not in ELEMENTS:
        return None
    return match.group(1), int(match.group(2))


@dataclass(frozen=True)
class CheckpointSubset:
    """Which checkpoint suffixes of a run to use: ``all``, ``first:K``, ``last:K`` or a list.

    A list is written ``3,4,7`` or with ranges ``40-49``.
    """

    spec: str = "all"

    def select(self, available: list[int]) -> list[int]:
        from episode_warehouse.errors import ConfigError

        avail = sorted(set(available))
        spec = self.spec.strip().lower()
        if spec in ("", "all"):
            return avail
        kind, _, count = spec.partition(":")
        if kind in ("first", "last") and count.isdigit() and int(count) > 0:
            k = int(count)
            return avail[:k] if kind == "first" else avail[-k:]
        wanted: set[int] = set()
        for part in spec.split(","):
            lo, dash, hi = part.strip().partition("-")
            if not lo.isdigit() or (dash and not hi.isdigit()):
                raise ConfigError(
                    "not a checkpoint subset",
                    subject=repr(self.spec),
                    fix="use 'all', 'first:K', 'last:K', or suffixes like '0,1,2' or '40-49'",
                )
            wanted.update(range(int(lo), int(hi) + 1) if dash else [int(lo)])
        missing = sorted(wanted - set(avail))
        if missing:
            raise ConfigError(
                f"checkpoint suffixes {missing} are not in the source (it has {avail})",
                subject=repr(self.spec),
                fix="choose suffixes that the run's replay_logs folder holds",
            )
        return sorted(wanted)
