"""An audit's findings: the catalog's ``findings`` and ``defects`` columns, their Arrow type
and the summary the ``integrity_audit`` check reports (no reading here: the catalog's schema
and the asset definitions import this module, so it stays light)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

KINDS = (
    "bad_frame", "frame_shape", "frame_count", "frozen_camera", "timestamp_order",
    "timestamp_gap", "timestamp_rate", "non_finite", "action_at_bound", "frozen_action",
    "action_jump", "one_step", "short_episode",
)  # fmt: skip
PARTITION_KINDS = ("constant_dimension", "stuck_dimension", "clipped_dimension")
FINDING = pa.struct(
    [("kind", pa.string()), ("key", pa.string()), ("step", pa.int64()),
     ("steps", pa.int64()), ("detail", pa.string())]
)  # fmt: skip
COLUMNS = ("findings", "defects")


class Findings:
    """Findings of one partition, collected per episode."""

    def __init__(self, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.starts = starts
        self.ends = starts + lengths
        self.by_episode: list[list[dict]] = [[] for _ in range(len(starts))]
        self.partition: list[dict] = []  # kinds true of a dimension over the whole partition

    def episode_of(self, row: int) -> int:
        return int(np.searchsorted(self.ends, row, side="right"))

    def episode_of_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ends, rows, side="right")

    def add_row(self, kind: str, key: str, row: int, steps: int, detail: str) -> None:
        """A finding at TED row ``row`` (its episode found by the row)."""
        e = self.episode_of(row)
        if e < len(self.starts):
            self.add(e, kind, key, row - int(self.starts[e]), steps, detail)

    def add(self, episode: int, kind: str, key: str, step: int, steps: int, detail: str) -> None:
        self.by_episode[episode].append(
            {"kind": kind, "key": key, "step": int(step), "steps": int(steps), "detail": detail}
        )

    def add_partition(self, kind: str, key: str, detail: str) -> None:
        """A finding about the whole partition (step 0, all its steps)."""
        steps = int(self.ends[-1]) if len(self.ends) else 0
        self.partition.append(
            {"kind": kind, "key": key, "step": 0, "steps": steps, "detail": detail}
        )

    def columns(self) -> dict[str, pa.Array]:
        return {
            "findings": pa.array(self.by_episode, pa.list_(FINDING)),
            "defects": pa.array([len(f) for f in self.by_episode], pa.int64()),
        }


def audit_summary(
    episodes: list[int],
    findings: list[list[dict] | None],
    partition: list[dict] | None = None,
    shown: int = 50,
) -> dict:
    """What the ``integrity_audit`` check reports of a partition's rows: the episodes with
    findings, the count per kind, the first ``shown`` findings as lines, and the findings about
    the whole partition (``partition``: its ``partitions`` row's)."""
    kinds: dict[str, int] = {}
    lines: list[str] = []
    for f in partition or []:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        lines.append(f"partition: {f['kind']} {f['key']} ({f['detail']})")
    flagged = 0
    for episode, found in zip(episodes, findings, strict=True):
        flagged += bool(found)
        for f in found or []:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
            if len(lines) < shown:
                lines.append(f"episode {episode} step {f['step']}: {f['kind']} {f['key']} "
                             f"({f['detail']})")  # fmt: skip
    return {
        "episodes_with_findings": flagged,
        "partition_findings": len(partition or []),
        "findings_by_kind": kinds,
        "first_findings": lines,
    }
