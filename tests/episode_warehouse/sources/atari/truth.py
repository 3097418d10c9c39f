"""Expected decoding computed from the writer simulation's ground truth (not from the files)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from warehouse_fixtures.dopamine_writer import GroundTruth


@dataclass
class ExpectedFragment:
    episode: int
    first_step: int
    length: int
    follows_present_row: bool  # the row right before it was recovered (padding present)


def recovered_rows(truth: GroundTruth, capacity: int, suffixes: list[int]) -> np.ndarray:
    """Global rows held by the chosen logs, from the true add_counts the writer knows."""
    rows: set[int] = set()
    for n in suffixes:
        a = truth.log_counts[n]
        rows.update(range(max(0, a - capacity), a if n or a != capacity - 1 else capacity - 1))
    return np.array(sorted(rows), dtype=np.int64)


def expected_fragments(truth: GroundTruth, rows: np.ndarray) -> list[ExpectedFragment]:
    """Maximal runs of recovered real rows that are consecutive and of one episode."""
    present = set(rows.tolist())
    out: list[ExpectedFragment] = []
    prev_g = None
    for g in rows.tolist():
        if truth.padding[g]:
            prev_g = None
            continue
        e, t = truth.episode[g], truth.step[g]
        if prev_g is not None and prev_g == g - 1 and truth.episode[prev_g] == e:
            out[-1].length += 1
        else:
            out.append(ExpectedFragment(e, t, 1, (g - 1) in present))
        prev_g = g
    return out
