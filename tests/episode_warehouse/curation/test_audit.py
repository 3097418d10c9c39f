"""The integrity audit (#60) finds every planted defect, once, where it was planted, and
nothing in clean episodes; bit rot in a stored frame is found without decoding."""

from __future__ import annotations

import pickle
import tarfile

import numpy as np
import pyarrow.parquet as pq
import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.curation.audit import FROZEN_RUN, audit_partition
from episode_warehouse.curation.audit_steps import PIN_RUN
from episode_warehouse.curation.partition_arrays import PartitionArrays
from episode_warehouse.paths import WarehouseLayout
from tests.helpers import _publish
from warehouse_fixtures.openx_writer import DatasetSpec, add_member, make_episode

SPEC = DatasetSpec("audit_robot", cameras=("image",), image_size=32, image_format="JPEG")


def _planted(rng) -> list[dict]:
    """Seven episodes: clean, frozen camera, clean (NaN is planted in the TED: the decoders
    refuse it at the source), pinned action, one step, clean, clean; action dimension 0 varies
    (continuous) in every episode, so its bound is meaningful."""
    episodes = [make_episode(rng, SPEC, 50) for _ in range(7)]
    for ep in episodes:  # a continuous action dimension 0 in every episode
        for t, step in enumerate(ep["steps"]):
            step["action"][0] = np.sin(t * 0.37 + rng.random())
    frozen = episodes[1]["steps"]
    for step in frozen[10 : 10 + FROZEN_RUN + 5]:
        step["observation"]["image"] = dict(frozen[10]["observation"]["image"])
    top = 5.0  # above any sin value: the partition's maximum
    for step in episodes[3]["steps"][20 : 20 + PIN_RUN + 2]:
        step["action"][0] = top
    one = make_episode(rng, SPEC, 1)
    one["steps"][0]["action"][0] = 0.0
    episodes[4] = one
    return episodes


def _build(tmp_path, episodes) -> WarehouseLayout:
    src = tmp_path / "src" / SPEC.name
    src.mkdir(parents=True)
    with tarfile.open(src / f"{SPEC.name}_00000.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
        for i, ep in enumerate(episodes):
            add_member(tar, f"{SPEC.name}_{i:06d}.data.pickle", pickle.dumps(ep, protocol=4))
    from episode_warehouse.sources.openx.decode import decode_shards
    from episode_warehouse.sources.openx.shards import list_shards

    layout = WarehouseLayout.local(tmp_path / "wh")
    shards = list_shards(str(tmp_path / "src"), SPEC.name).shards
    _publish(layout, "openx", SPEC.name, lambda dec: decode_shards(shards, dec), 0)
    return layout


def _findings(layout) -> dict[int, list[tuple]]:
    _, rows = run_query(
        layout.root, "SELECT episode, findings, defects FROM episodes ORDER BY episode"
    )
    out = {}
    for episode, findings, defects in rows:
        assert defects == len(findings)
        out[episode] = sorted((f["kind"], f["key"], f["step"], f["steps"]) for f in findings)
    return out


@pytest.mark.integration  # the catalog's query runs in a sandboxed child
def test_every_planted_defect_is_found_where_it_was_planted(tmp_path):
    layout = _build(tmp_path, _planted(np.random.default_rng(0)))
    got = _findings(layout)
    assert got[0] == [] and got[2] == [] and got[5] == [] and got[6] == []
    assert got[1] == [("frozen_camera", "observation/image", 10, FROZEN_RUN + 5)]
    assert got[3] == [("action_at_bound", "action[0]", 20, PIN_RUN + 2)]
    assert got[4] == [("one_step", "", 0, 1)]

    # the viewer flags them and filters on them; a published score is a column it sorts by
    from episode_warehouse.curation.scores import BUILT_IN
    from episode_warehouse.stages.curation import publish_episode_scores
    from episode_warehouse.viewer import listing

    publish_episode_scores(layout, BUILT_IN[0], "openx", SPEC.name)
    listed = listing.episodes(layout.root, "defects > 0", "score_quality", True)
    assert sorted(r["episode"] for r in listed["rows"]) == [1, 3, 4]
    assert "score_quality" in listed["columns"] and "score_quality" in listed["sorts"]
    flags = {r["episode"]: r["flags"] for r in listed["rows"]}
    assert flags[1] == [
        f"frozen_camera observation/image at step 10 ({FROZEN_RUN + 5} steps): "
        f"{FROZEN_RUN + 5} identical consecutive frames"
    ]
    quality = [r["score_quality"] for r in listed["rows"]]
    assert quality[-1] is None and listed["rows"][-1]["episode"] == 4  # one step: no score
    assert quality[0] >= quality[1] > 0


def _ted(layout):
    return layout.ted_dir("openx", SPEC.name)


def test_damaged_frames_are_found_in_the_stored_bytes(tmp_path):
    """Bit rot after publishing: a frame's end marker overwritten (every frame is checked
    without decoding), a frame replaced by a valid JPEG of another size (the decoded sample:
    the frame half way through an episode), NaN and infinity in a state (the decoders refuse
    them at the source; the audit finds them in stored data)."""
    import io

    from PIL import Image

    layout = _build(tmp_path, [make_episode(np.random.default_rng(1), SPEC, 40) for _ in range(3)])
    folder = _ted(layout)
    frames = folder / "observation" / "image.frames"
    offsets = np.load(folder / "observation" / "image.offsets.npy")
    blobs = [frames.read_bytes()[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    blobs[45] = blobs[45][:-2] + b"\x00\x00"  # episode 1, step 5: no EOI
    other = io.BytesIO()
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(other, format="JPEG")
    blobs[100] = other.getvalue()  # episode 2, step 20 (sampled: half way): 16x16 in 32x32
    frames.unlink()  # (a hard link shared with the decoded stage: write a new file)
    frames.write_bytes(b"".join(blobs))
    new_offsets = np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype(np.int64)
    (folder / "observation" / "image.offsets.npy").unlink()
    np.save(folder / "observation" / "image.offsets.npy", new_offsets)

    state_file = folder / "observation" / "state.npy"
    state = np.load(state_file)
    state[7, 1], state[8, 2] = np.nan, np.inf  # episode 0, steps 7 and 8
    state_file.unlink()
    np.save(state_file, state)

    episodes = pq.read_table(folder / "episodes.parquet").to_pylist()
    assert [e["start"] for e in episodes] == [0, 40, 80]
    found = audit_partition(PartitionArrays.open(folder), fps=None).by_episode
    assert [(f["kind"], f["step"]) for f in found[1]] == [("bad_frame", 5)]
    # replaced after the TED was built: its checksum says so, its decode what it is now
    assert sorted((f["kind"], f["step"]) for f in found[2]) == [("bad_frame", 20),
                                                                ("frame_shape", 20)]  # fmt: skip
    assert [(f["kind"], f["key"], f["step"], f["steps"]) for f in found[0]] == [
        ("non_finite", "observation/state", 7, 2)
    ]


@pytest.mark.parametrize("jump", [0.5, -0.1])
def test_timestamps_that_jump_or_go_back(tmp_path, jump):
    from tensordict import TensorDict  # noqa: F401  (the TED below is written by numpy)

    from episode_warehouse.curation.audit_steps import check_timestamps
    from episode_warehouse.curation.findings import Findings

    class Arrays:
        starts = np.array([0, 10])
        lengths = np.array([10, 10])
        numeric = {"timestamp": (np.r_[np.arange(10), np.arange(10)] / 10.0)[:, None].copy()}

    Arrays.numeric["timestamp"][15:, 0] += jump
    found = Findings(Arrays.starts, Arrays.lengths)
    check_timestamps(Arrays, 10.0, found)  # type: ignore[arg-type]
    assert found.by_episode[0] == []
    kind = "timestamp_gap" if jump > 0 else "timestamp_order"
    assert [(f["kind"], f["step"]) for f in found.by_episode[1]] == [(kind, 5)]


@pytest.mark.integration  # lerobot's writer, the catalog's sandboxed query
def test_a_lerobot_recording_with_a_dropped_frame_and_a_clock_step_back(tmp_path):
    """A LeRobot dataset written by lerobot, then its timestamps edited as a recorder that
    dropped a frame (a 2-period jump) and one whose clock stepped back would write them: the
    audit names both, where they are, and nothing else."""
    import pyarrow as pa

    from tests.helpers import _LINEAGE
    from warehouse_fixtures.lerobot_writer import LeRobotSpec, write_lerobot_dataset

    spec = LeRobotSpec(repo_id="lab/clock", lengths=(10,) * 3, cameras={"top": (8, 8)}, fps=10)
    folder = write_lerobot_dataset(spec, tmp_path / "src")
    (data,) = sorted(folder.glob("data/*/*.parquet"))
    table = pq.read_table(data)
    t = table.column("timestamp").to_numpy().copy()
    t[10 + 5 :] += 0.1  # episode 1 from step 5: a frame dropped (0.2 s between two steps)
    t[20 + 3] = t[20 + 2] - 0.05  # episode 2, step 3: before step 2
    column = table.schema.get_field_index("timestamp")
    table = table.set_column(column, "timestamp", pa.array(t, table.schema.field(column).type))
    pq.write_table(table, data)

    from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
    from episode_warehouse.sources.lerobot.decode import decode_lerobot

    layout = WarehouseLayout.local(tmp_path / "wh")
    dataset = open_lerobot_folder(folder)
    _publish(layout, "lerobot", spec.repo_id,
             lambda dec: decode_lerobot(dataset, dec, lineage=_LINEAGE), 0)  # fmt: skip
    got = _findings(layout)
    assert got[0] == []
    assert got[1] == [("timestamp_gap", "timestamp", 5, 1)]
    # the step back, then the step after it jumps 2.5 periods to rejoin the clock
    assert got[2] == [("timestamp_gap", "timestamp", 4, 1), ("timestamp_order", "timestamp", 3, 1)]


@pytest.mark.integration  # a Dagster run
def test_the_catalog_rows_asset_reports_the_audit_as_its_check(tmp_path, monkeypatch):
    """Through the asset graph: the catalog rows asset warns (its own integrity_audit check,
    no extra step) naming each finding; the run succeeds (a warning, not a failure)."""
    import dagster as dg

    from warehouse_cli.runner import materialize_partition

    src = tmp_path / "src" / SPEC.name
    src.mkdir(parents=True)
    with tarfile.open(src / f"{SPEC.name}_00000.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
        for i, ep in enumerate(_planted(np.random.default_rng(0))):
            add_member(tar, f"{SPEC.name}_{i:06d}.data.pickle", pickle.dumps(ep, protocol=4))
    monkeypatch.setenv("OPENX_URL", str(tmp_path / "src"))
    monkeypatch.setenv("EPISODE_WAREHOUSE_ROOT", str(tmp_path / "wh"))
    with dg.instance_for_test() as instance:
        result = materialize_partition("openx", SPEC.name, "catalog", instance=instance)
    (audit,) = [e for e in result.get_asset_check_evaluations()
                if e.check_name == "integrity_audit"]  # fmt: skip
    assert result.success and not audit.passed
    assert audit.severity == dg.AssetCheckSeverity.WARN
    assert audit.metadata["episodes_with_findings"].value == 3
    assert audit.metadata["findings_by_kind"].value == {
        "frozen_camera": 1, "action_at_bound": 1, "one_step": 1,
        "constant_dimension": 1,  # the fixture's discount: 1.0 in every step
    }  # fmt: skip
    assert audit.metadata["partition_findings"].value == 1
    assert "episode 1 step 10: frozen_camera observation/image" in " ".join(
        audit.metadata["first_findings"].value
    )
