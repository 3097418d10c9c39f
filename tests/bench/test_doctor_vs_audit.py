"""The integrity audit beside lerobot-doctor (#71 item 3): on LeRobot datasets written by
lerobot's writer with defects planted at known episodes, the warehouse finds every planted
defect doctor finds, per episode, plus those doctor cannot see (bad frames, bit rot, a frozen
camera), and flags no episode where nothing was planted."""

from __future__ import annotations

import pytest

from bench.doctor_vs_audit import compare, side_doctor

pytestmark = pytest.mark.slow(
    reason="lerobot-doctor in its own environment (installed once), six lerobot datasets"
)
DOCTOR_BLIND = {"bit_rot", "frozen_camera", "bad_frame"}  # doctor reads no frame's pixels


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[dict]:
    return compare(tmp_path_factory.mktemp("doctor"), side_doctor())["rows"]


def test_the_audit_finds_every_planted_defect_doctor_finds_and_more(rows):
    planted = [r for r in rows if not r["kind"].startswith("(")]
    assert {r["kind"] for r in planted} >= {
        "timestamp_gap", "timestamp_order", "timestamp_rate", "non_finite", "frozen_action",
        "action_jump", "clipped_dimension", "stuck_dimension", "constant_dimension",
        "short_episode", "one_step", "schema_change", "frame_count", "duplicate",
    } | DOCTOR_BLIND  # fmt: skip
    for r in planted:
        assert r["warehouse"] == r["planted"], r  # every planted episode, per kind
        assert set(r["doctor"]) <= set(r["warehouse"]), r
    # the comparison can fail: doctor does find the kinds it checks
    assert all(r["doctor"] == r["planted"] for r in planted if r["kind"] not in DOCTOR_BLIND)
    assert all(r["doctor"] == [] for r in planted if r["kind"] in DOCTOR_BLIND)


def test_no_clean_episode_is_flagged_by_the_audit(rows):
    clean = [r for r in rows if r["kind"] == "(clean episodes flagged)"]
    assert len(clean) == 6 and all(r["warehouse"] == [] for r in clean)
