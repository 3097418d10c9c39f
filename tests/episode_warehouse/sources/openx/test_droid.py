"""DROID as published (RLDS 1.0.1: three JPEG cameras, action_dict, episode_metadata), written
from its schema (``warehouse_fixtures.droid``) over several shards and built through the real
stages: every field reads back as written, the cameras are the published JPEG bytes, the
catalog's facts and openpi's idle filter equal the ground truth, "successful, non-idle steps"
is one query, and the standardized DROID is OpenVLA's."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from episode_warehouse.catalog import run_query
from episode_warehouse.catalog.idle import nonidle_ranges
from episode_warehouse.loading import EpisodeStream, select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.ted.open import open_ted_folder
from tests.helpers import build_openx_stages
from warehouse_fixtures import rlds_writer as w
from warehouse_fixtures.droid import CAMERAS, write_droid

# one worker runs the module: its module fixture is built once, not once a worker
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("droid_source")]
NONIDLE_SUCCESS = (
    "SELECT source, partition, episode, start + r[1] AS start, r[2] - r[1] AS length "
    "FROM episodes, UNNEST(nonidle_ranges) AS u(r) WHERE partition = 'droid' AND success "
    "ORDER BY episode, start"
)

# The steps openpi keeps of each plan of warehouse_fixtures.droid.EPISODE_PLANS (seed % 5),
# worked out by hand from its rule: idle runs of 7+ steps go (the first step is never idle),
# kept runs shorter than 16 go, and each kept run loses its last 10 steps.
OPENPI_BY_PLAN = {
    0: [(0, 14), (33, 43)],  # move 24 | idle 9 (dropped) | move 20
    1: [(8, 29)],  # step 0 + idle 7 dropped; 18 + 3 (short idle kept) + 10 = 31; the last 10 go
    2: [(0, 30)],  # one move of 40
    3: [],  # never moves: one kept step
    4: [(0, 6), (23, 51)],  # 16 | idle 7 (dropped) | 15 + 6 + 17 = 38
}


def openpi_rule(jv: np.ndarray) -> list[tuple[int, int]]:
    """openpi's compute_droid_nonidle_ranges restated step by step (a plain loop, not its
    vectorized code nor ours): the reference the catalog's ranges are compared with."""
    steps = len(jv)
    idle = [False] + [bool(np.all(np.abs(jv[t] - jv[t - 1]) < 1e-3)) for t in range(1, steps)]

    def runs(flags):
        t, out = 0, []
        while t < steps:
            if flags[t]:
                u = t
                while u < steps and flags[u]:
                    u += 1
                out.append((t, u))
                t = u
            else:
                t += 1
        return out

    keep = [True] * steps
    for a, b in runs(idle):
        if b - a >= 7:
            keep[a:b] = [False] * (b - a)
    return [(a, b - 10) for a, b in runs(keep) if b - a >= 16]


@pytest.fixture(scope="module")
def droid(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("droid")
    _, by_shard = write_droid(tmp / "src", shards=5, per_shard=2)
    layout = WarehouseLayout.local(tmp / "wh")
    build_openx_stages(layout, tmp / "src", "droid")
    return layout, [e for shard in by_shard for e in shard], tmp / "src" / "droid" / "1.0.1"


def _steps(episodes, get):
    return np.stack([np.asarray(get(s)) for e in episodes for s in e.record["steps"]])


def _wire(values: np.ndarray) -> np.ndarray:
    """float64 as TFDS writes it (a float_list: float32), read back as float64."""
    return values.astype(np.float32).astype(np.float64)


def test_every_published_field_reads_back_as_written(droid):
    layout, episodes, _ = droid
    td = open_ted_folder(layout.ted_dir("openx", "droid"))
    assert td.batch_size[0] == sum(len(e.joint_velocity) for e in episodes)
    action = _wire(_steps(episodes, lambda s: s["action"]))
    np.testing.assert_array_equal(td["action"].numpy(), action)
    for leaf in ("cartesian_position", "cartesian_velocity", "gripper_position",
                 "gripper_velocity", "joint_position", "joint_velocity"):  # fmt: skip
        want = _wire(_steps(episodes, lambda s, k=leaf: s["action_dict"][k]))
        np.testing.assert_array_equal(td["action_dict", leaf].numpy(), want, err_msg=leaf)
    for leaf in ("cartesian_position", "gripper_position", "joint_position"):
        want = _wire(_steps(episodes, lambda s, k=leaf: s["observation"][k]))
        np.testing.assert_array_equal(td["observation", leaf].numpy(), want, err_msg=leaf)
    ends = np.cumsum([len(e.joint_velocity) for e in episodes]) - 1
    assert td["next", "terminated"].squeeze(-1).nonzero().squeeze(-1).tolist() == ends.tolist()
    rewards = _steps(episodes, lambda s: s["reward"])
    np.testing.assert_array_equal(td["next", "reward"].squeeze(-1).numpy(), rewards)


def test_the_three_cameras_are_the_published_jpegs(droid):
    layout, episodes, source = droid
    ted = layout.ted_dir("openx", "droid")
    td = open_ted_folder(ted)
    rng = np.random.default_rng(0)
    rows = [(i, t) for i, e in enumerate(episodes) for t in range(len(e.joint_velocity))]
    starts = np.cumsum([0] + [len(e.joint_velocity) for e in episodes])
    for camera in CAMERAS:
        for k in rng.choice(len(rows), 4, replace=False):
            i, t = rows[k]
            pixels = episodes[i].record["steps"][t]["observation"][camera]
            want = np.asarray(Image.open(io.BytesIO(w.encode_image(pixels, "jpeg"))))
            got = td["observation", camera][int(starts[i] + t)].numpy().transpose(1, 2, 0)
            np.testing.assert_array_equal(got, want, err_msg=f"{camera} episode {i} step {t}")
    # stored once, as published: the frame files are the shards' JPEG bytes plus offsets
    frames = sum((ted / "observation" / f"{c}.frames").stat().st_size for c in CAMERAS)
    offsets = sum((ted / "observation" / f"{c}.offsets.npy").stat().st_size for c in CAMERAS)
    jpeg = sum(len(w.encode_image(s["observation"][c], "jpeg"))
               for e in episodes for s in e.record["steps"] for c in CAMERAS)  # fmt: skip
    assert frames == jpeg
    assert (frames + offsets) / jpeg <= 1.10
    shards = sum(p.stat().st_size for p in source.glob("droid-train.tfrecord-*"))
    assert frames < shards  # the shards hold the numbers and texts too


def test_the_catalog_holds_droids_episode_facts(droid):
    layout, episodes, _ = droid
    columns, rows = run_query(
        layout.root,
        "SELECT success, building, collector_id, CAST(recorded_on AS VARCHAR), instructions, "
        "episode_metadata->>'$.\"episode_metadata/recording_folderpath\"' "
        "FROM episodes WHERE partition = 'droid' ORDER BY episode",
    )
    want = [(e.success, e.building, e.collector_id, e.date, list(e.instructions),
             e.recording_folderpath) for e in episodes]  # fmt: skip
    assert [tuple(r) for r in rows] == want
    assert {r[0] for r in rows} == {True, False}


def test_idle_ranges_are_openpis_on_every_episode(droid):
    layout, episodes, _ = droid
    _, rows = run_query(
        layout.root, "SELECT nonidle_ranges, nonidle_steps FROM episodes ORDER BY episode"
    )
    for e, (ranges, steps) in zip(episodes, rows, strict=True):
        want = OPENPI_BY_PLAN[e.seed % 5]
        assert openpi_rule(e.joint_velocity) == want  # the restatement agrees with the hand count
        assert nonidle_ranges(e.joint_velocity) == want
        assert [tuple(r) for r in ranges] == want, f"episode seed {e.seed}"
        assert steps == sum(b - a for a, b in want)


def test_successful_nonidle_steps_are_one_query_and_load_as_selected(droid):
    layout, episodes, _ = droid
    selection = select_episodes(
        NONIDLE_SUCCESS,
        root=layout.folder,
    )
    starts = np.cumsum([0] + [len(e.joint_velocity) for e in episodes])
    want = [
        (i, int(starts[i]) + a, b - a)
        for i, e in enumerate(episodes)
        if e.success
        for a, b in OPENPI_BY_PLAN[e.seed % 5]
    ]
    got = zip(selection.episode, selection.start, selection.length, strict=True)
    assert [(int(e), int(s), int(n)) for e, s, n in got] == want
    items = [ref.read() for ref in EpisodeStream(selection, shuffle=False)]
    assert len(items) == len(want)
    for item, (i, start, n) in zip(items, want, strict=True):
        a = start - int(starts[i])
        np.testing.assert_array_equal(
            item["action_dict", "joint_velocity"].numpy(),
            _wire(episodes[i].joint_velocity[a : a + n]),
        )


def test_statistics_of_part_episode_rows_count_exactly_their_steps(droid):
    """openpi's selection (parts of episodes, several per episode) from the catalog's stored
    partials: each row counts its own steps, as numpy over exactly those steps says."""
    from episode_warehouse.catalog.statistics import publish_statistics
    from episode_warehouse.loading import selection_stats

    layout, episodes, _ = droid
    publish_statistics(layout, "openx", "droid", code_version="t")
    selection = select_episodes(NONIDLE_SUCCESS, root=layout.folder)
    starts = np.cumsum([0] + [len(e.joint_velocity) for e in episodes])
    truth = np.concatenate([
        _wire(episodes[int(e)].joint_velocity)[a - starts[e] : a - starts[e] + n]
        for e, a, n in zip(selection.episode, selection.start, selection.length, strict=True)
    ])  # fmt: skip
    assert len(truth) == int(selection.length.sum())
    key = ("action_dict", "joint_velocity")
    for use_catalog in (True, False):
        stats = selection_stats(selection, [key], use_catalog=use_catalog)[key]
        assert (np.asarray(stats["count"]) == len(truth)).all(), use_catalog
        np.testing.assert_allclose(stats["mean"], truth.mean(0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(stats["min"], truth.min(0))
        np.testing.assert_allclose(stats["max"], truth.max(0))
    whole = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes WHERE success",
        root=layout.folder,
    )  # whole episodes still come from the stored partials, and agree with a pass
    a = selection_stats(whole, [key])[key]
    b = selection_stats(whole, [key], use_catalog=False)[key]
    assert (np.asarray(a["count"]) == int(whole.length.sum())).all()
    np.testing.assert_allclose(a["mean"], b["mean"], rtol=1e-6)


def test_standardized_as_openvla_defines_droid(droid):
    from episode_warehouse.standardized import open_standardized
    from episode_warehouse.standardized.stage import build_standardized_stage

    layout, episodes, _ = droid
    build_standardized_stage(layout, "openx", "droid", code_version="t")
    td = open_standardized("openx", "droid", root=layout.folder)
    velocity = _steps(episodes, lambda s: s["action_dict"]["cartesian_velocity"])
    gripper = _steps(episodes, lambda s: s["action_dict"]["gripper_position"])
    want = np.c_[_wire(velocity)[:, :6], 1 - _wire(gripper)].astype(np.float32)
    np.testing.assert_allclose(td["action"].numpy(), want, rtol=0, atol=1e-7)
    pose = _steps(episodes, lambda s: s["observation"]["cartesian_position"])
    grip = _steps(episodes, lambda s: s["observation"]["gripper_position"])
    state = np.c_[_wire(pose), _wire(grip)].astype(np.float32)
    np.testing.assert_array_equal(td["observation", "state"].numpy(), state)
    first = next(iter(episodes))
    assert td["language_instruction"][0] == first.instructions[0]


def test_vla_dataset_draws_only_the_selected_steps(droid):
    """openpi's selection feeds VLADataset: every item is a selected step, every selected step
    is drawn, and a chunk never runs past its range (padded there, as at an episode's end)."""
    from episode_warehouse.standardized import VLADataset
    from episode_warehouse.standardized.stage import build_standardized_stage

    layout, _, _ = droid
    build_standardized_stage(layout, "openx", "droid", code_version="t")
    selection = select_episodes(NONIDLE_SUCCESS, root=layout.folder)
    wanted = {
        int(a) + t for a, n in zip(selection.start, selection.length, strict=True)
        for t in range(int(n))
    }  # fmt: skip
    ds = VLADataset([("droid", 1.0)], layout.folder, selection=selection, chunk=4,
                    num_samples=4000, seed=1)  # fmt: skip
    assert ds.parts[0].size == len(wanted)
    ted_row = np.asarray(ds.parts[0].opened.array("ted_row"))
    drawn = [ds.draw(i) for i in range(ds.num_samples)]
    assert {int(ted_row[row]) for _, row in drawn} == wanted
    ends = {int(a) + int(n) - 1 for a, n in zip(selection.start, selection.length, strict=True)}
    for _, row in drawn[:200]:
        item = ds.item(0, row)
        last = ted_row[row] in ends
        assert bool(item["action_is_pad"][0, 1]) == last  # past the range's end: padded


# LeRobot's DROID port, transcribed from huggingface/lerobot examples/port_datasets/port_droid.py
# (DROID_FEATURES; the hub's lerobot/droid_1.0.1): name -> (dtype, shape, axes)
_XYZ = ["x", "y", "z", "roll", "pitch", "yaw"]
_J = [f"joint_{i}" for i in range(7)]
PORT_FEATURES = {
    "is_first": ("bool", [1], None), "is_last": ("bool", [1], None),
    "is_terminal": ("bool", [1], None), "language_instruction": ("string", [1], None),
    "language_instruction_2": ("string", [1], None),
    "language_instruction_3": ("string", [1], None),
    "observation.state.gripper_position": ("float32", [1], ["gripper"]),
    "observation.state.cartesian_position": ("float32", [6], _XYZ),
    "observation.state.joint_position": ("float32", [7], _J),
    "observation.state": ("float32", [8], [*_J, "gripper"]),
    "observation.images.wrist_left": ("video", [180, 320, 3], None),
    "observation.images.exterior_1_left": ("video", [180, 320, 3], None),
    "observation.images.exterior_2_left": ("video", [180, 320, 3], None),
    "action.gripper_position": ("float32", [1], ["gripper"]),
    "action.gripper_velocity": ("float32", [1], ["gripper"]),
    "action.cartesian_position": ("float32", [6], _XYZ),
    "action.cartesian_velocity": ("float32", [6], _XYZ),
    "action.joint_position": ("float32", [7], _J), "action.joint_velocity": ("float32", [7], _J),
    "action.original": ("float32", [7], [*_XYZ, "gripper"]),
    "action": ("float32", [8], [*_J, "gripper"]),
    "discount": ("float32", [1], None), "reward": ("float32", [1], None),
    "task_category": ("string", [1], None), "building": ("string", [1], None),
    "collector_id": ("string", [1], None), "date": ("string", [1], None),
    "camera_extrinsics.wrist_left": ("float32", [6], _XYZ),
    "camera_extrinsics.exterior_1_left": ("float32", [6], _XYZ),
    "camera_extrinsics.exterior_2_left": ("float32", [6], _XYZ),
    "is_episode_successful": ("bool", [1], None),
}  # fmt: skip
PORT_CAMERAS = {"wrist_left": "wrist_image_left", "exterior_1_left": "exterior_image_1_left",
                "exterior_2_left": "exterior_image_2_left"}  # fmt: skip
LEROBOT_OWN = {"timestamp", "frame_index", "episode_index", "index", "task_index"}


def test_a_selection_exports_to_lerobot_v3_as_lerobots_droid_port(droid, tmp_path):
    """Successful, non-idle steps of DROID as a LeRobot v3 dataset with the schema of LeRobot's
    own DROID port (feature names, shapes, dtypes and axes, fps 15, robot_type Franka; the
    derived ``observation.state`` and ``action`` built as the port builds them), its three
    cameras as video (encoded once, from the JPEGs), read back by lerobot's LeRobotDataset.
    Three of the ranges (one episode's two and the next one's): AV1 encoding of three cameras
    costs about two seconds a range here, and three exercise every path of the export."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from episode_warehouse.export import ExportRequest, export_lerobot

    layout, episodes, _ = droid
    selection = select_episodes(
        NONIDLE_SUCCESS.replace("ORDER BY episode, start", "ORDER BY episode, start LIMIT 3"),
        root=layout.folder,
    )
    assert len(set(selection.episode.tolist())) == 2  # ranges of two episodes
    rows = [(s, p, int(e), int(a), int(n)) for s, p, e, a, n in zip(
        selection.source, selection.partition, selection.episode, selection.start,
        selection.length, strict=True)]  # fmt: skip
    request = ExportRequest("droid-nonidle", str(layout.folder), rows, video=True)
    meta = export_lerobot(request, tmp_path / "out", workers=1).meta
    info = json.loads((tmp_path / "out" / "meta" / "info.json").read_text())
    assert (info["fps"], info["robot_type"]) == (15, "Franka")
    got = {
        k: (
            f["dtype"],
            f["shape"],
            (f["names"] or {}).get("axes") if isinstance(f["names"], dict) else None,
        )
        for k, f in info["features"].items()
        if k not in LEROBOT_OWN
    }
    assert got == PORT_FEATURES
    ds = LeRobotDataset(request.repo_id, root=tmp_path / "out")
    assert ds.meta.total_episodes == len(rows) == meta.episodes
    assert ds.meta.total_frames == sum(r[4] for r in rows)
    td = open_ted_folder(layout.ted_dir("openx", "droid"))
    starts = np.cumsum([0] + [len(e.joint_velocity) for e in episodes])
    frame = 0
    for _, _, e, start, length in rows:
        truth, a = episodes[e], start - int(starts[e])
        steps = truth.record["steps"]
        for t in (0, length - 1):
            item, step = ds[frame + t], steps[a + t]
            for port_name, camera in PORT_CAMERAS.items():
                image = item[f"observation.images.{port_name}"] * 255
                pixels = td["observation", camera][start + t].float()
                assert (image - pixels).abs().mean() < 12.0, (start, t, camera)  # AV1, crf 30
            f32 = lambda v: _wire(np.asarray(v, np.float64)).astype(np.float32)  # noqa: E731
            obs, act = step["observation"], step["action_dict"]
            np.testing.assert_array_equal(
                item["observation.state"].numpy(),
                f32(np.concatenate([obs["joint_position"], obs["gripper_position"]])),
            )
            np.testing.assert_array_equal(
                item["action"].numpy(),
                f32(np.concatenate([act["joint_position"], act["gripper_position"]])),
            )
            np.testing.assert_array_equal(item["action.original"].numpy(), f32(step["action"]))
            np.testing.assert_array_equal(
                item["action.joint_velocity"].numpy(), f32(truth.joint_velocity[a + t])
            )
            np.testing.assert_array_equal(
                item["observation.state.cartesian_position"].numpy(), f32(obs["cartesian_position"])
            )
            assert item["task"] == item["language_instruction"] == truth.instructions[0]
            assert item["language_instruction_2"] == truth.instructions[1]
            assert item["language_instruction_3"] == truth.instructions[2]
            assert bool(item["is_first"]) == (a + t == 0) == bool(step["is_first"])
            assert bool(item["is_last"]) == bool(step["is_last"])
            assert bool(item["is_terminal"]) == bool(step["is_terminal"])
            assert float(item["reward"]) == float(step["reward"])
            assert float(item["discount"]) == float(step["discount"])
            assert bool(item["is_episode_successful"]) == truth.success
            assert item["building"] == item["task_category"] == truth.building
            assert (item["collector_id"], item["date"]) == (truth.collector_id, truth.date)
            extrinsics = truth.record["episode_metadata"]["extrinsics_exterior_cam_2"]
            np.testing.assert_array_equal(
                item["camera_extrinsics.exterior_2_left"].numpy(), f32(extrinsics)
            )
        frame += length


def test_the_viewer_shows_the_instructions_as_text(droid):
    """Instructions 2 and 3 are text leaves (indices into the TED's tables): the episode page
    shows their text at each step and plots no number for them (#57 item 16)."""
    from episode_warehouse.viewer.episode import episode_page, step_values
    from episode_warehouse.viewer.partition import PartitionTed

    layout, episodes, _ = droid
    ted = PartitionTed(layout.root, "openx", "droid")
    page = episode_page(ted, 1, str(layout.folder))
    plotted = {s["key"] for s in page["series"]}
    assert not plotted & {"language_instruction_2", "language_instruction_3"}
    texts = {t["key"]: t for t in page["texts"]}
    for n, key in ((1, "language_instruction_2"), (2, "language_instruction_3")):
        shown = texts[key]
        assert [shown["texts"][i] for i in shown["per_step"]] == (
            [episodes[1].instructions[n]] * page["length"]
        )
    assert "language_instruction_2" not in step_values(ted, 1, 0)
