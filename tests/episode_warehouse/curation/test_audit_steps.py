"""The audit's checks of numeric leaves, timestamps and lengths (``audit_steps``), on arrays
with each kind planted where the expectation is written by hand: lerobot-doctor's rules where
it has one (docs/curation.md), so the audit finds at least what doctor finds."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from episode_warehouse.curation import audit_steps as steps
from episode_warehouse.curation.findings import Findings
from episode_warehouse.curation.partition_arrays import PartitionArrays
from episode_warehouse.ted.record import TedRecord

LENGTHS = (40, 40, 40, 40, 7, 40)


def _arrays(numeric: dict[str, np.ndarray]) -> PartitionArrays:
    lengths = np.array(LENGTHS)
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    rows = int(lengths.sum())
    meta = TedRecord(format=TedRecord.FORMAT, format_version=TedRecord.FORMAT_VERSION,
                     rows=rows, episodes=len(lengths), keys={})  # fmt: skip
    return PartitionArrays(Path("unused"), meta, starts, lengths, numeric=numeric)


def _found(found: Findings) -> dict[int, list[tuple]]:
    return {e: sorted((f["kind"], f["key"], f["step"], f["steps"]) for f in fs)
            for e, fs in enumerate(found.by_episode) if fs}  # fmt: skip


def test_frozen_actions_jumps_and_short_episodes_where_they_were_planted():
    rng = np.random.default_rng(0)
    rows = sum(LENGTHS)
    action = rng.normal(size=(rows, 3))
    action[40 + 10 : 40 + 16] = action[40 + 10]  # episode 1: 6 identical actions from step 10
    action[80 + 20 :] += 30.0  # episode 2: every dimension jumps at step 20 (stays up after)
    action[120 + 5 : 120 + 8] = action[120 + 5]  # episode 3: 3 identical, under the run
    arrays = _arrays({"action": action, "observation/state": rng.normal(size=(rows, 2))})
    found = Findings(arrays.starts, arrays.lengths)
    steps.check_lengths(arrays, 10.0, found)
    steps.check_actions(arrays, steps.continuous_actions(arrays), found)
    assert _found(found) == {
        1: [("frozen_action", "action", 10, 6)],
        2: [("action_jump", "action", 20, 1)],  # the jump, not the level after it
        4: [("short_episode", "", 0, 7)],  # 0.7 s at 10 Hz
    }


def test_an_episode_recorded_at_another_rate():
    t = np.concatenate([np.arange(n) / 10.0 for n in LENGTHS])
    t[40:80] *= 1.25  # episode 1 at 8 Hz in a 10 Hz partition (no step is a gap)
    arrays = _arrays({"timestamp": t[:, None]})
    found = Findings(arrays.starts, arrays.lengths)
    steps.check_timestamps(arrays, 10.0, found)
    assert _found(found) == {1: [("timestamp_rate", "timestamp", 0, 40)]}


def test_constant_stuck_and_clipped_dimensions_are_findings_of_the_partition():
    rng = np.random.default_rng(1)
    rows = sum(LENGTHS)
    state = rng.normal(size=(rows, 3))
    state[:, 0] = 0.25  # a dead sensor
    for start, n in zip(np.r_[0, np.cumsum(LENGTHS)[:-1]], LENGTHS, strict=True):
        state[start : start + n, 1] = np.where(np.arange(n) < n - 2, 0.5, 0.7)  # stuck
    action = rng.normal(size=(rows, 2))
    action[:, 1] = np.minimum(action[:, 1], -0.3)  # more than half at the maximum
    arrays = _arrays({"observation/state": state, "action": action})
    found = Findings(arrays.starts, arrays.lengths)
    steps.check_dimensions(arrays, steps.continuous_actions(arrays), found)
    assert sorted((f["kind"], f["key"]) for f in found.partition) == [
        ("clipped_dimension", "action[1]"),
        ("constant_dimension", "observation/state[0]"),
        ("stuck_dimension", "observation/state[1]"),
    ]
    assert all(f == [] for f in found.by_episode)  # none of them is one episode's
