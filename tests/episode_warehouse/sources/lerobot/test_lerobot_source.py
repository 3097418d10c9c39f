"""LeRobot v3.0 datasets (written by lerobot's own writer) into decoded episodes and TED,
checked frame by frame against what ``LeRobotDataset`` returns, and bad datasets refused."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from episode_warehouse.decoded import open_decoded
from episode_warehouse.errors import CorruptInputError, FormatVersionError
from episode_warehouse.incremental import build_if_changed
from episode_warehouse.sources.lerobot.dataset import open_lerobot_folder
from episode_warehouse.sources.lerobot.decode import decode_lerobot
from episode_warehouse.storage.local import LocalRoot
from episode_warehouse.ted import build_ted, open_ted_folder
from episode_warehouse.ted.validate import check_ted
from warehouse_fixtures.lerobot_writer import TELEOP, LeRobotSpec, write_lerobot_dataset

SPEC = LeRobotSpec()
# lerobot-record's schema (no reward, no done) with the keys human-in-the-loop recordings add
TELEOP_EXTRAS = replace(TELEOP, repo_id="lab/so101_hil", extras=True)
SCHEMAS = {"rl": SPEC, "teleop": TELEOP_EXTRAS}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_lerobot_dataset(SPEC, tmp_path_factory.mktemp("lerobot"))


@pytest.fixture(scope="module", params=sorted(SCHEMAS))
def any_schema(request, tmp_path_factory) -> tuple[LeRobotSpec, Path]:
    spec = SCHEMAS[request.param]
    return spec, write_lerobot_dataset(spec, tmp_path_factory.mktemp(f"lerobot-{request.param}"))


def _ted(folder: Path, work: Path):
    source = open_lerobot_folder(folder)
    build_if_changed(
        LocalRoot(work), work / "dec", {"t": 1}, lambda tmp: decode_lerobot(source, tmp)
    )
    (work / "ted").mkdir()
    build_ted(open_decoded(work / "dec"), work / "ted")
    return open_ted_folder(work / "ted"), open_decoded(work / "dec")


def test_the_ted_equals_what_lerobot_returns_frame_by_frame(any_schema, tmp_path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    spec, dataset = any_schema
    source = open_lerobot_folder(dataset)
    if spec is SPEC:
        assert len(source.data_files) > 1  # episodes spread over several data files
    td, decoded = _ted(dataset, tmp_path)
    theirs = LeRobotDataset(spec.repo_id, root=dataset)
    assert td.batch_size[0] == len(theirs) == sum(spec.lengths)
    keys = set(td.keys(True, True))
    assert (("next", "reward") in keys) == spec.rewards  # no reward is invented
    if spec.extras:  # carried like any other feature
        assert {("next", "success"), ("complementary_info", "discrete_penalty")} <= keys
    for i in range(len(theirs)):
        frame = theirs[i]
        for cam in spec.cameras:  # LeRobot's float [0, 1] pixels are uint8 / 255
            pixels = (frame[f"observation.images.{cam}"] * 255).round().to(torch.uint8)
            assert torch.equal(td["observation", "image", cam][i], pixels), (i, cam)
        assert torch.equal(td["observation", "state"][i], frame["observation.state"])
        assert torch.equal(td["action"][i], frame["action"])
        assert int(td["frame"][i]) == int(frame["frame_index"])
        assert float(td["timestamp"][i]) == float(frame["timestamp"])
        assert int(td["episode"][i]) == int(frame["episode_index"])
        task = decoded.meta.tasks[int(td["task_index"][i])]
        assert task == frame["task"]
        if spec.rewards:
            assert float(td["next", "reward"][i, 0]) == float(frame["next.reward"])
            assert bool(td["next", "done"][i, 0]) == bool(frame["next.done"])
            assert bool(td["next", "terminated"][i, 0]) == bool(frame["next.done"])
        else:  # a recording that stops: truncated, never terminated
            assert not td["next", "terminated"][i, 0]
        if spec.extras:
            assert bool(td["next", "success"][i, 0]) == bool(frame["next.success"])
            assert float(td["complementary_info", "discrete_penalty"][i]) == float(
                frame["complementary_info.discrete_penalty"]
            )
    # the shifted next observation: the following frame inside an episode
    assert torch.equal(td["next", "observation", "state"][0], td["observation", "state"][1])
    episodes = decoded.episodes().to_pylist()
    assert [e["length"] for e in episodes] == list(spec.lengths)
    assert [e["language_instruction"] for e in episodes] == [
        spec.tasks[e % len(spec.tasks)] for e in range(len(spec.lengths))
    ]
    if spec.rewards:
        want = [sum(t / n for t in range(n)) for n in spec.lengths]
        np.testing.assert_allclose([e["return"] for e in episodes], want, rtol=1e-6)
        assert all(e["terminated"] and not e["truncated"] for e in episodes)
    else:
        assert all(e["return"] is None for e in episodes)
        assert all(e["truncated"] and not e["terminated"] for e in episodes)
    assert decoded.meta.fps == spec.fps and decoded.meta.robot_type == spec.robot_type
    assert check_ted(tmp_path / "ted").ok


def _copy(dataset: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy" / SPEC.repo_id
    shutil.copytree(dataset, out)
    return out


def test_a_missing_info_json_is_named(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    (folder / "meta" / "info.json").unlink()
    with pytest.raises(CorruptInputError, match=r"info.json: not a LeRobot dataset.*LEROBOT_URL"):
        open_lerobot_folder(folder)


def test_an_unread_version_names_the_way_out(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    info = json.loads((folder / "meta" / "info.json").read_text())
    (folder / "meta" / "info.json").write_text(json.dumps({**info, "codebase_version": "v2.0"}))
    with pytest.raises(FormatVersionError, match="v2.0 dataset.*convert_dataset_v20_to_v21"):
        open_lerobot_folder(folder)
    (folder / "meta" / "info.json").write_text(json.dumps({**info, "codebase_version": "v4.0"}))
    with pytest.raises(FormatVersionError, match="v4.0 dataset, newer.*upgrade the warehouse"):
        open_lerobot_folder(folder)
    # a v3.0 dataset whose info.json points its files elsewhere: our layout, or refused
    (folder / "meta" / "info.json").write_text(
        json.dumps({**info, "video_path": "../../{video_key}.mp4"})
    )
    with pytest.raises(CorruptInputError, match="info.json's video_path is '../../"):
        open_lerobot_folder(folder)


def test_a_truncated_data_file_is_named_and_nothing_is_published(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    victim = sorted((folder / "data").rglob("*.parquet"))[1]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    with pytest.raises(CorruptInputError, match=f"{victim.name}: not a readable Parquet file"):
        _ted(folder, tmp_path)
    assert not (tmp_path / "dec").exists()


def test_a_missing_data_file_is_named(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    victim = sorted((folder / "data").rglob("*.parquet"))[-1]
    victim.unlink()
    with pytest.raises(
        CorruptInputError, match=f"{victim.name}: the episodes' data file is missing"
    ):
        open_lerobot_folder(folder)


def test_an_episode_index_gap_is_named(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    meta = next((folder / "meta" / "episodes").rglob("*.parquet"))
    table = pq.read_table(meta)
    index = table.column("episode_index").to_numpy().copy()
    index[2:] += 1  # episode 2 is missing
    table = table.set_column(
        table.schema.get_field_index("episode_index"), "episode_index", [index]
    )
    pq.write_table(table, meta)
    with pytest.raises(CorruptInputError, match="episode 2 is missing or duplicated"):
        open_lerobot_folder(folder)


def test_a_feature_without_a_column_is_named(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    info = json.loads((folder / "meta" / "info.json").read_text())
    info["features"]["observation.gripper"] = {"dtype": "float32", "shape": [1], "names": None}
    (folder / "meta" / "info.json").write_text(json.dumps(info))
    with pytest.raises(CorruptInputError, match="'observation.gripper', which the data file"):
        _ted(folder, tmp_path)


@pytest.fixture(scope="module")
def video_dataset(lerobot_video) -> Path:
    return lerobot_video


@pytest.mark.integration  # the session's AV1 dataset: ~20 s of SVT-AV1 where it is written
def test_video_frames_equal_lerobots_decoded_frames(video_dataset, tmp_path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    td, _ = _ted(video_dataset, tmp_path)
    theirs = LeRobotDataset("owner/clips", root=video_dataset)
    assert theirs.meta.video_keys == [f"observation.images.{cam}" for cam in SPEC.cameras]
    for i in range(len(theirs)):
        frame = theirs[i]
        for cam in SPEC.cameras:
            pixels = (frame[f"observation.images.{cam}"] * 255).round().to(torch.uint8)
            assert torch.equal(td["observation", "image", cam][i], pixels), (i, cam)
        assert torch.equal(td["observation", "state"][i], frame["observation.state"])


@pytest.mark.integration  # (as above)
def test_a_video_feature_named_outside_its_folder_is_refused(video_dataset, tmp_path):
    folder = tmp_path / "copy" / "owner" / "named"
    shutil.copytree(video_dataset, folder)
    info = json.loads((folder / "meta" / "info.json").read_text())
    features = dict(info["features"])
    features["../../escape"] = features.pop("observation.images.wrist")
    (folder / "meta" / "info.json").write_text(json.dumps({**info, "features": features}))
    with pytest.raises(CorruptInputError, match=r"video feature name '../../escape'"):
        open_lerobot_folder(folder)


@pytest.mark.integration  # (as above)
def test_a_missing_video_file_is_named(video_dataset, tmp_path):
    folder = tmp_path / "copy" / "owner" / "videoset"
    shutil.copytree(video_dataset, folder)
    victim = next((folder / "videos" / "observation.images.wrist").rglob("*.mp4"))
    victim.unlink()
    with pytest.raises(CorruptInputError, match=f"{victim.name}: the video file of .* missing"):
        _ted(folder, tmp_path)
    assert not (tmp_path / "dec").exists()


# --- values that the recording cannot have meant: refused, naming the feature ---------------


def _rewrite_column(folder: Path, name: str, change) -> Path:
    """Rewrite column ``name`` of the first data file with ``change(table) -> array``."""
    import pyarrow as pa

    victim = sorted((folder / "data").rglob("*.parquet"))[0]
    table = pq.read_table(victim)
    i = table.schema.get_field_index(name)
    column = change(table)
    field = pa.field(name, column.type)
    pq.write_table(table.set_column(i, field, column), victim)
    return victim


def _float_list(table, name, values):
    import pyarrow as pa

    n, width = len(table), table.schema.field(name).type.list_size
    flat = pa.array(np.asarray(values, np.float64).reshape(-1)[: n * width])
    return pa.FixedSizeListArray.from_arrays(flat, width)


def _refused(folder: Path, tmp_path: Path, match: str):
    with pytest.raises(CorruptInputError, match=match) as err:
        _ted(folder, tmp_path)
    assert "Fix:" in str(err.value)
    assert not (tmp_path / "dec").exists() and not (tmp_path / "ted").exists()
    return str(err.value)


def test_a_declared_dtype_that_would_change_the_values_is_refused(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    info = json.loads((folder / "meta" / "info.json").read_text())
    info["features"]["action"]["dtype"] = "uint8"  # the data is float: 0.943 -> 0, -1.088 -> 255
    (folder / "meta" / "info.json").write_text(json.dumps(info))
    text = _refused(folder, tmp_path, r"action holds float32 values that info.json's dtype 'uint8'")
    assert "would become" in text and "frame 0" in text


@pytest.mark.parametrize("feature", ["action", "observation.state"])
def test_nan_in_actions_or_states_is_refused(dataset, tmp_path, feature):
    folder = _copy(dataset, tmp_path)

    def change(table):
        values = np.stack(table.column(feature).to_numpy(zero_copy_only=False)).astype(np.float64)
        values[3, 1] = np.nan
        return _float_list(table, feature, values.astype(np.float32))

    victim = _rewrite_column(folder, feature, change)
    text = _refused(folder, tmp_path, rf"{feature} is nan at frame 3 \(1 values NaN or infinite")
    assert victim.name in text


def test_a_task_index_outside_the_tasks_table_is_refused(dataset, tmp_path):
    import pyarrow as pa

    folder = _copy(dataset, tmp_path)

    def change(table):
        tasks = table.column("task_index").to_numpy().copy()
        tasks[2] = 7
        return pa.array(tasks)

    _rewrite_column(folder, "task_index", change)
    _refused(folder, tmp_path, r"frame 2 has task_index 7, but meta/tasks.parquet has 2 tasks")


@pytest.mark.parametrize("fps", [0, -10, 29.97, "30", True, None])
def test_an_fps_that_is_not_a_positive_integer_is_refused(dataset, tmp_path, fps):
    folder = _copy(dataset, tmp_path)
    info = json.loads((folder / "meta" / "info.json").read_text())
    info["fps"] = fps
    (folder / "meta" / "info.json").write_text(json.dumps(info))
    with pytest.raises(CorruptInputError, match=r"fps is .*not a positive whole number.*Fix:"):
        open_lerobot_folder(folder)


# --- what the dataset says of itself must be what it holds (#42) -------------------------------


def _set_info(folder: Path, **fields) -> None:
    path = folder / "meta" / "info.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        (
            {"total_frames": 10},
            r"info.json: info.json declares total_frames 10, but there are \d+ frames",
        ),
        (
            {"total_episodes": 1},
            r"info.json: info.json declares total_episodes 1, but there are \d+ episodes",
        ),
        ({"total_tasks": 7}, r"declares total_tasks 7, but there are \d+ tasks"),
    ],
)
def test_declared_totals_must_equal_the_data(dataset, tmp_path, fields, match):
    folder = _copy(dataset, tmp_path)
    _set_info(folder, **fields)
    _refused(folder, tmp_path, match)


def test_per_episode_lengths_must_equal_the_data(dataset, tmp_path):
    """meta/episodes moves one frame from episode 0 to episode 1 and still tiles the frames:
    the data files' episode_index counts say otherwise."""
    import pyarrow as pa

    folder = _copy(dataset, tmp_path)
    meta = next((folder / "meta" / "episodes").rglob("*.parquet"))
    table = pq.read_table(meta)
    length = table.column("length").to_numpy().copy()
    end = table.column("dataset_to_index").to_numpy().copy()
    start = table.column("dataset_from_index").to_numpy().copy()
    length[0] -= 1
    length[1] += 1
    end[0] -= 1
    start[1] -= 1
    for name, values in (
        ("length", length),
        ("dataset_to_index", end),
        ("dataset_from_index", start),
    ):
        i = table.schema.get_field_index(name)
        table = table.set_column(
            i, table.schema.field(name), pa.array(values, table.schema.field(name).type)
        )
    pq.write_table(table, meta)
    _refused(folder, tmp_path, r"meta/episodes says episode 0 has \d+ frames, the data files hold")


@pytest.mark.parametrize(
    "robot_type",
    ["x](javascript:alert(1))", "![t](https://tracker.example/p.png)", "so100\n# Fake heading", ""],
)
def test_a_robot_type_that_is_not_an_identifier_is_refused_where_it_enters(
    dataset, tmp_path, robot_type
):
    folder = _copy(dataset, tmp_path)
    _set_info(folder, robot_type=robot_type)
    with pytest.raises(CorruptInputError, match="robot_type .* is not an identifier"):
        open_lerobot_folder(folder)


def test_a_deeply_nested_info_json_is_refused_with_its_name(dataset, tmp_path):
    folder = _copy(dataset, tmp_path)
    (folder / "meta" / "info.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CorruptInputError, match=r"info.json: the JSON document nests deeper than"):
        open_lerobot_folder(folder)


def test_a_corrupt_png_is_named_as_corrupt_not_as_a_shape_mismatch(dataset, tmp_path):
    """#43: a PNG whose header is right and whose data is not was reported as 'declares (3, 24,
    32), info.json says (3, 24, 32)'."""
    import pyarrow as pa

    folder = _copy(dataset, tmp_path)
    name = "observation.images.top"

    def change(table):
        column = table.column(name).combine_chunks()
        data = column.field("bytes").to_pylist()
        data[0] = data[0][:41] + bytes(range(256)) * 4  # signature and IHDR kept, IDAT broken
        return pa.StructArray.from_arrays(
            [pa.array(data, pa.binary()), column.field("path")], names=["bytes", "path"]
        )

    _rewrite_column(folder, name, change)
    text = _refused(folder, tmp_path, "episode 0 step 0: a frame does not decode")
    assert "declares" not in text
